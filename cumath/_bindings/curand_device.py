"""cuRAND's device API as ``extern "C"`` functions: the C++ shim over ``curand_kernel.h`` and its compilation.

cuRAND's device functions are C++ overloads and inline templates in ``curand_kernel.h``; a numba kernel cannot
call them. This module generates a small shim from one table (``FUNCTIONS``): for every function and generator,
``extern "C" __device__ void cumath_curand_<function>_<generator>(State* state, inputs..., T* out)`` calling the
cuRAND function and storing its result (its components, for vector results) through ``out``. It compiles the shim
with NVRTC to LTO-IR for a compute capability (:func:`compile_shim`), and reads the size and alignment of every
state type from the header itself (:func:`state_layouts`: a table of ``sizeof``/``alignof`` compiled to PTX and
read back). ``cumath.device.random`` caches both and declares the functions to numba.

Headers are looked for (:func:`include_dirs`) in the ``nvidia/cu13/include`` (and ``nvidia/*/include``) folders
of ``sys.path``, then ``$CUDA_HOME``/``$CUDA_PATH`` and ``/usr/local/cuda``: ``curand_kernel.h`` (the nvidia-curand
wheel), ``cuda_runtime.h`` and libcu++ (``cuda/std/...``, under ``cccl/`` in CUDA 13).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import sys

from . import nvrtc

__all__ = ["GENERATORS", "STATE_TYPES", "FUNCTIONS", "Function", "symbol", "shim_source", "layout_source",
           "include_dirs", "header_fingerprint", "compile_shim", "state_layouts", "PSEUDO", "QUASI"]

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


def symbol(function: str, generator: str) -> str:
    return f"cumath_curand_{function}_{generator}"


def shim_source() -> str:
    """The C++ source of the shim (deterministic: it is part of the compile cache key)."""
    lines = ["// generated by cumath._bindings.curand_device: extern \"C\" wrappers of curand_kernel.h",
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

def _candidate_roots() -> list[str]:
    roots = []
    for base in sys.path:
        if base and os.path.isdir(base):
            roots += sorted(glob.glob(os.path.join(base, "nvidia", "cu13", "include")))
            roots += sorted(glob.glob(os.path.join(base, "nvidia", "*", "include")))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.path.join(os.environ[var], "include"))
    roots.append("/usr/local/cuda/include")
    return [r for r in dict.fromkeys(roots) if os.path.isdir(r)]


def include_dirs() -> list[str]:
    """Folders to pass to NVRTC (-I): those holding curand_kernel.h, cuda_runtime.h and cuda/std (libcu++).

    Raises FileNotFoundError naming what is missing and how to get it."""
    roots = _candidate_roots()
    found = {}
    for name, rel in (("curand", "curand_kernel.h"), ("runtime", "cuda_runtime.h"),
                      ("cccl", os.path.join("cuda", "std", "type_traits"))):
        for root in roots:
            for folder in (root, os.path.join(root, "cccl")):
                if os.path.isfile(os.path.join(folder, rel)):
                    found.setdefault(name, folder)
                    break
            if name in found:
                break
    missing = [n for n in ("curand", "runtime", "cccl") if n not in found]
    if missing:
        what = {"curand": "curand_kernel.h (pip install nvidia-curand)",
                "runtime": "cuda_runtime.h (pip install nvidia-cuda-runtime)",
                "cccl": "libcu++'s cuda/std headers (pip install nvidia-cuda-cccl)"}
        raise FileNotFoundError("cuRAND's device API needs the CUDA headers " +
                                ", ".join(what[m] for m in missing) + f"; looked in {roots or ['nothing']}; "
                                "installing cumath[cu13] brings them")
    return list(dict.fromkeys(found[n] for n in ("curand", "runtime", "cccl")))


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

def _compile(source: str, name: str, options: list[str], output: str) -> bytes:
    prog = nvrtc.nvrtcCreateProgram(source, name)
    try:
        nvrtc.nvrtcCompileProgram(prog, options)
        return nvrtc.nvrtcGetLTOIR(prog) if output == "ltoir" else nvrtc.nvrtcGetPTX(prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _options(cc, dirs, *, lto: bool) -> list[str]:
    major, minor = cc
    opts = [f"-arch=compute_{major}{minor}", "-std=c++17", "-default-device"] + [f"-I{d}" for d in dirs]
    return opts + (["-dlto"] if lto else [])


def compile_shim(cc, dirs=None) -> bytes:
    """LTO-IR of the shim for compute capability ``cc`` ((major, minor))."""
    dirs = include_dirs() if dirs is None else dirs
    return _compile(shim_source(), "cumath_curand_shim.cu", _options(cc, dirs, lto=True), "ltoir")


_LAYOUT_RE = re.compile(r"cumath_curand_layout\[(\d+)\]\s*=\s*\{([^}]*)\}")


def state_layouts(cc, dirs=None) -> dict[str, tuple[int, int]]:
    """generator -> (size, alignment) in bytes of its state type, as the header defines them."""
    dirs = include_dirs() if dirs is None else dirs
    ptx = _compile(layout_source(), "cumath_curand_layout.cu", _options(cc, dirs, lto=False), "ptx")
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
