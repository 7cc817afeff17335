"""cuRAND's device API as ``extern "C"`` functions: the C++ shim over ``curand_kernel.h``, generated from one table.

cuRAND's device functions are C++ overloads and inline templates in ``curand_kernel.h``; a numba kernel cannot
call them. The shim is generated from one table (``FUNCTIONS``): for every function and generator,
``extern "C" __device__ void cumath_curand_<function>_<generator>(State* state, inputs..., T* out)`` calling the
cuRAND function and storing its result (its components, for vector results) through ``out``.
:func:`compile_shim` compiles it to LTO-IR for a compute capability, and :func:`state_layouts` reads the size and
alignment of every state type from the header itself (a table of ``sizeof``/``alignof`` compiled to PTX and read
back), both through :mod:`cumath._core.jit` into the device-code cache (``cache_dir("device")``), keyed by the
source, the headers' content, NVRTC's version and the compute capability.

Headers are looked for (:func:`include_dirs`) in the ``nvidia/cu13/include`` (and ``nvidia/*/include``) folders
of ``sys.path``, then ``$CUDA_HOME``/``$CUDA_PATH`` and ``/usr/local/cuda``: ``curand_kernel.h`` (the nvidia-curand
wheel), ``cuda_runtime.h`` and libcu++ (``cuda/std/...``, under ``cccl/`` in CUDA 13).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re

from ..._core import jit
from .._codegen import STORE, memory_cache

__all__ = ["GENERATORS", "STATE_TYPES", "FUNCTIONS", "Function", "STATE_POSITION", "symbol", "shim_source",
           "layout_source", "include_dirs", "header_fingerprint", "compile_shim", "state_layouts", "parse_layouts",
           "OPTIONS", "LAYOUT_CC", "PSEUDO", "QUASI"]

# generator -> C state type
STATE_TYPES = {
    "xorwow": "curandStateXORWOW_t", "philox": "curandStatePhilox4_32_10_t", "mrg": "curandStateMRG32k3a_t",
    "sobol32": "curandStateSobol32_t", "scrambled_sobol32": "curandStateScrambledSobol32_t",
    "sobol64": "curandStateSobol64_t", "scrambled_sobol64": "curandStateScrambledSobol64_t",
}
GENERATORS = tuple(STATE_TYPES)
PSEUDO = ("xorwow", "philox", "mrg")
SOBOL32 = ("sobol32", "scrambled_sobol32")
SOBOL64 = ("sobol64", "scrambled_sobol64")
QUASI = SOBOL32 + SOBOL64
ALL = PSEUDO + QUASI

_U32, _U64, _F32, _F64 = "unsigned int", "unsigned long long", "float", "double"


class Function:
    """One shim function family: ``name`` for ``generators``, scalar ``inputs`` [(name, C type)], an output of
    ``out_count`` values of C type ``out`` (None: no output), and the C++ expression (``s`` is the state)."""

    __slots__ = ("name", "generators", "inputs", "out", "out_count", "expr")

    def __init__(self, name, generators, inputs, out, out_count, expr):
        self.name, self.generators, self.inputs = name, tuple(generators), tuple(inputs)
        self.out, self.out_count, self.expr = out, out_count, expr


_M = (("mean", _F32), ("stddev", _F32))
_MD = (("mean", _F64), ("stddev", _F64))
_SEQ = (("seed", _U64), ("subsequence", _U64), ("offset", _U64))
FUNCTIONS = (
    Function("init", PSEUDO, _SEQ, None, 0, "curand_init(seed, subsequence, offset, s)"),
    Function("init", ("sobol32",), (("direction_vectors", _U32 + "*"), ("offset", _U32)), None, 0,
             "curand_init(direction_vectors, offset, s)"),
    Function("init", ("scrambled_sobol32",), (("direction_vectors", _U32 + "*"), ("scramble_c", _U32),
                                              ("offset", _U32)), None, 0,
             "curand_init(direction_vectors, scramble_c, offset, s)"),
    Function("init", ("sobol64",), (("direction_vectors", _U64 + "*"), ("offset", _U64)), None, 0,
             "curand_init(direction_vectors, offset, s)"),
    Function("init", ("scrambled_sobol64",), (("direction_vectors", _U64 + "*"), ("scramble_c", _U64),
                                              ("offset", _U64)), None, 0,
             "curand_init(direction_vectors, scramble_c, offset, s)"),
    Function("rand", PSEUDO + SOBOL32, (), _U32, 1, "curand(s)"),
    Function("rand", SOBOL64, (), _U64, 1, "curand(s)"),
    Function("rand4", ("philox",), (), _U32, 4, "curand4(s)"),
    Function("uniform", ALL, (), _F32, 1, "curand_uniform(s)"),
    Function("uniform_double", ALL, (), _F64, 1, "curand_uniform_double(s)"),
    Function("uniform2_double", ("philox",), (), _F64, 2, "curand_uniform2_double(s)"),
    Function("uniform4", ("philox",), (), _F32, 4, "curand_uniform4(s)"),
    Function("uniform4_double", ("philox",), (), _F64, 4, "curand_uniform4_double(s)"),
    Function("normal", ALL, (), _F32, 1, "curand_normal(s)"),
    Function("normal_double", ALL, (), _F64, 1, "curand_normal_double(s)"),
    Function("normal2", PSEUDO, (), _F32, 2, "curand_normal2(s)"),
    Function("normal2_double", PSEUDO, (), _F64, 2, "curand_normal2_double(s)"),
    Function("normal4", ("philox",), (), _F32, 4, "curand_normal4(s)"),
    Function("normal4_double", ("philox",), (), _F64, 4, "curand_normal4_double(s)"),
    Function("log_normal", ALL, _M, _F32, 1, "curand_log_normal(s, mean, stddev)"),
    Function("log_normal_double", ALL, _MD, _F64, 1, "curand_log_normal_double(s, mean, stddev)"),
    Function("log_normal2", PSEUDO, _M, _F32, 2, "curand_log_normal2(s, mean, stddev)"),
    Function("log_normal2_double", PSEUDO, _MD, _F64, 2, "curand_log_normal2_double(s, mean, stddev)"),
    Function("log_normal4", ("philox",), _M, _F32, 4, "curand_log_normal4(s, mean, stddev)"),
    Function("log_normal4_double", ("philox",), _MD, _F64, 4, "curand_log_normal4_double(s, mean, stddev)"),
    Function("poisson", ALL, (("Lambda", _F64),), _U32, 1, "curand_poisson(s, Lambda)"),
    Function("poisson4", ("philox",), (("Lambda", _F64),), _U32, 4, "curand_poisson4(s, Lambda)"),
    Function("skipahead", PSEUDO + SOBOL64, (("n", _U64),), None, 0, "skipahead(n, s)"),
    Function("skipahead", SOBOL32, (("n", _U32),), None, 0, "skipahead(n, s)"),
    Function("skipahead_sequence", PSEUDO, (("n", _U64),), None, 0, "skipahead_sequence(n, s)"),
    Function("skipahead_subsequence", ("mrg",), (("n", _U64),), None, 0, "skipahead_subsequence(n, s)"),
)
_COMPONENTS = "xyzw"

# where the state argument is in cuRAND's own signatures (and so in cumath.device.random's): last for init and the
# skip-aheads, first otherwise (the shim functions always take it first)
STATE_POSITION = {"init": -1, "skipahead": -1, "skipahead_sequence": -1, "skipahead_subsequence": -1}


def symbol(function: str, generator: str) -> str:
    return f"cumath_curand_{function}_{generator}"


def shim_source() -> str:
    """The C++ source of the shim (deterministic: it is part of the compile cache key)."""
    lines = ["// generated by cumath.device.random._shim: extern \"C\" wrappers of curand_kernel.h",
             "#include <curand_kernel.h>", ""]
    for f in FUNCTIONS:
        for g in f.generators:
            params = [f"{STATE_TYPES[g]}* s"] + [f"{t} {n}" for n, t in f.inputs]
            if f.out is not None:
                params.append(f"{f.out}* out")
            body = f"{f.expr};"
            if f.out is not None:
                if f.out_count == 1:
                    body = f"out[0] = {f.expr};"
                else:
                    stores = " ".join(f"out[{i}] = r.{_COMPONENTS[i]};" for i in range(f.out_count))
                    body = f"auto r = {f.expr}; {stores}"
            lines.append(f"extern \"C\" __device__ void {symbol(f.name, g)}({', '.join(params)}) {{ {body} }}")
    return "\n".join(lines) + "\n"


def layout_source() -> str:
    """A table of (sizeof, alignof) of every state type, in GENERATORS order."""
    items = ", ".join(f"sizeof({STATE_TYPES[g]}), alignof({STATE_TYPES[g]})" for g in GENERATORS)
    return ("#include <curand_kernel.h>\n"
            f"extern \"C\" __device__ unsigned long long cumath_curand_layout[{2 * len(GENERATORS)}] = {{{items}}};\n")


# ------------------------------------------------------------------------------------------------ headers

_HEADERS = (("curand", "curand_kernel.h", "curand_kernel.h (pip install nvidia-curand)"),
            ("runtime", "cuda_runtime.h", "cuda_runtime.h (pip install nvidia-cuda-runtime)"),
            ("cccl", os.path.join("cuda", "std", "type_traits"),
             "libcu++'s cuda/std headers (pip install nvidia-cuda-cccl)"))


def include_dirs() -> list[str]:
    """Folders to pass to NVRTC (-I): those holding curand_kernel.h, cuda_runtime.h and cuda/std (libcu++).

    Raises FileNotFoundError naming what is missing and how to get it."""
    roots = jit.include_roots()
    found = {name: jit.find_include(rel, roots) for name, rel, _ in _HEADERS}
    missing = [hint for name, _, hint in _HEADERS if found[name] is None]
    if missing:
        raise FileNotFoundError("cuRAND's device API needs the CUDA headers " + ", ".join(missing) +
                                f"; looked in {roots or ['nothing']}; `pip install \"cumath[dx]\"` brings them "
                                f"(from a checkout: pip install \".[dx]\")")
    return list(dict.fromkeys(found[name] for name, _, _ in _HEADERS))


def header_fingerprint(dirs=None) -> str:
    """SHA-256 of cuRAND's device headers (their content is what the shim's code depends on)."""
    dirs = include_dirs() if dirs is None else dirs
    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(dirs[0], "curand*.h"))):
        h.update(os.path.basename(path).encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------ compile

OPTIONS = ("-default-device",)
LAYOUT_CC = (7, 5)  # state layouts do not depend on the target; read them once, compiled for this one
_fingerprints: dict = memory_cache()  # include folders -> header digest (emptied by cumath.device.clear_cache)
_layouts: dict = memory_cache()  # (cc, include folders) -> layouts


def _headers(dirs) -> tuple[list[str], str]:
    dirs = include_dirs() if dirs is None else list(dirs)
    fp = _fingerprints.get(tuple(dirs))
    if fp is None:
        fp = _fingerprints[tuple(dirs)] = header_fingerprint(dirs)
    return dirs, fp


def compile_shim(cc, dirs=None) -> jit.Artifact:
    """The shim's LTO-IR for compute capability ``cc`` ((major, minor), 90...), compiled once and cached."""
    dirs, fp = _headers(dirs)
    return jit.compile_source(shim_source(), cc=cc, output="ltoir", options=OPTIONS, include_dirs=dirs,
                              depends=("curand headers", fp), name="cumath_curand_shim.cu",
                              what="the cuRAND device shim", store=STORE)


def state_layouts(cc=LAYOUT_CC, dirs=None) -> dict[str, tuple[int, int]]:
    """generator -> (size, alignment) in bytes of its state type, as the installed header defines them."""
    memo_key = (tuple(cc) if isinstance(cc, (tuple, list)) else cc, None if dirs is None else tuple(dirs))
    layouts = _layouts.get(memo_key)
    if layouts is None:
        dirs, fp = _headers(dirs)
        ptx = jit.compile_source(layout_source(), cc=cc, output="ptx", options=OPTIONS, include_dirs=dirs,
                                 depends=("curand headers", fp), name="cumath_curand_layout.cu",
                                 what="the cuRAND state layouts", store=STORE)
        layouts = _layouts[memo_key] = parse_layouts(ptx.data)
    return layouts


_LAYOUT_RE = re.compile(r"cumath_curand_layout\[(\d+)\]\s*=\s*\{([^}]*)\}")


def parse_layouts(ptx: bytes) -> dict[str, tuple[int, int]]:
    """The table of :func:`layout_source` read back from its PTX."""
    text = ptx.decode(errors="replace")
    m = _LAYOUT_RE.search(text)
    if m is None:
        raise RuntimeError("could not read the cuRAND state layouts from NVRTC's PTX")
    values = [int(v) for v in m.group(2).replace(" ", "").split(",") if v]
    if ".b8" in text[max(0, m.start() - 48): m.start()]:  # declared as bytes; trailing zeros are left out
        count = int(m.group(1))
        data = bytes(values) + bytes(count - len(values))
        numbers = [int.from_bytes(data[i:i + 8], "little") for i in range(0, count, 8)]
    else:
        numbers = values + [0] * (int(m.group(1)) - len(values))
    return {g: (numbers[2 * i], numbers[2 * i + 1]) for i, g in enumerate(GENERATORS)}
