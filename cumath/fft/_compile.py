"""compile_prolog / compile_epilog: Python functions to LTO-IR callbacks for cuFFT, through numba-cuda, with a
content-addressed cache in memory and on disk (``cumath.config.cache_dir("ltoir")``).

The cache key is computed without importing numba: the function's bytecode, constants, names, closure
values, the values of the globals it refers to (where they are plain values, arrays, modules or functions,
which are followed), its defaults, the element and user-info dtypes, the compute capability, and the
toolchain (numba-cuda, numba and llvmlite versions, the libnvvm files' identity, the Python version). A
function that refers to an object cumath cannot fingerprint is compiled once per process (memory only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import builtins
import glob
import logging
import os
import sys
import time
import types as pytypes

from .._core.compute_capability import current_compute_capability, parse_compute_capability
from .._core.disk_cache import ContentStore, digest
from .._core.numba_compat import EXTRA_HINT, distribution_version, import_numba_cuda, numba_cuda_version
from ._callbacks import ELEMENT_DTYPES, INDEX, LTOIR, mangled_name, plain_name, register_ltoir

if TYPE_CHECKING:
    from typing import Any
    from .._core.typing import ComputeCapabilityLike, DTypeLike

__all__ = ["compile_prolog", "compile_epilog", "callback_cache_key", "function_fingerprint", "USER_INFO_DTYPES"]

logger = logging.getLogger(__name__)

USER_INFO_DTYPES = ("void", "float16", "float32", "float64", "complex64", "complex128", "int8", "int16",
                    "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_ARITY = {"prolog": 4, "epilog": 5}
_SIGNATURES = {"prolog": "prolog_fn(data_in, offset, user_info, reserved_for_future_use) -> element",
               "epilog": "epilog_fn(data_out, offset, element, user_info, reserved_for_future_use)"}
_KEY_VERSION = 1
_STORE = ContentStore("ltoir", suffix=".ltoir")  # compile key -> LTO-IR
_CO_GENERATOR, _CO_COROUTINE, _CO_ASYNC_GENERATOR, _CO_VARARGS, _CO_VARKEYWORDS = 0x20, 0x80, 0x200, 0x4, 0x8


# ----------------------------------------------------------------------------------------------- checks

def _python_function(fn, kind: str):
    name = f"{kind}_fn"
    py = getattr(fn, "py_func", fn)  # a numba dispatcher: its Python function
    if not isinstance(py, pytypes.FunctionType):
        raise TypeError(f"{name} must be a Python function (def or lambda) with the signature "
                        f"{_SIGNATURES[kind]}, not {type(fn).__name__}")
    code = py.__code__
    if code.co_flags & (_CO_GENERATOR | _CO_COROUTINE | _CO_ASYNC_GENERATOR):
        raise TypeError(f"{name} must be a plain function, not a generator or coroutine function")
    n = _ARITY[kind]
    if (code.co_argcount != n or code.co_kwonlyargcount or code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS)):
        args = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        extra = (" *args" if code.co_flags & _CO_VARARGS else "") + (" **kwargs" if code.co_flags & _CO_VARKEYWORDS
                                                                     else "")
        raise TypeError(f"{name} must take exactly {n} positional arguments, {_SIGNATURES[kind]}; "
                        f"{py.__qualname__} takes ({', '.join(args)}{extra})")
    return py


def _dtype_str(dtype) -> str:
    if isinstance(dtype, str):
        return dtype.strip().lower()
    try:
        import numpy as np

        return np.dtype(dtype).name
    except TypeError:
        from .._core.dtypes import dtype_name

        return dtype_name(dtype)


def _element_dtype(dtype) -> str:
    name = _dtype_str(dtype)
    if name not in ELEMENT_DTYPES:
        raise ValueError(f"element_dtype={dtype!r} is not supported; the allowed values are {list(ELEMENT_DTYPES)}")
    return name


def _is_numba_type(obj) -> bool:
    return type(obj).__module__.startswith("numba")


def _user_info(dtype):
    """(description for keys and messages, the numba type or None)."""
    if dtype is None:
        return "void", None
    if _is_numba_type(dtype):
        return f"numba:{dtype}", dtype
    name = _dtype_str(dtype)
    if name in ("void", "void*", "voidptr"):
        return "void", None
    if name not in USER_INFO_DTYPES:
        raise ValueError(f"user_info_dtype={dtype!r} is not supported; use None or 'void' (an untyped pointer), "
                         f"one of {list(USER_INFO_DTYPES[1:])} (a pointer to such elements), or a numba type")
    return name, None


def normalize_compute_capability(cc) -> tuple[int, int]:
    """(major, minor) from '90', '9.0', 'sm_90', 90 or (9, 0); None: the current GPU's."""
    if cc is None:
        try:
            return current_compute_capability()
        except Exception as exc:
            raise ValueError(f"no CUDA GPU to compile the callback for ({exc}); pass compute_capability= "
                             f"(e.g. '90') to compile without one") from exc
    return parse_compute_capability(cc, what="compute_capability", min_major=5)


class _Fingerprinter:
    """Plain-value description of a function and what it refers to; ``persistent`` turns False when some
    value could only be identified by its address (then the key is good for this process only)."""

    def __init__(self):
        self.persistent = True
        self._active: set = set()

    def function(self, fn) -> tuple:
        if id(fn) in self._active:  # recursion (a function referring to itself)
            return ("recursive", fn.__qualname__)
        self._active.add(id(fn))
        try:
            code = fn.__code__
            names = self._names(code)
            glb = fn.__globals__
            refs = []
            for name in sorted(names):
                if name in glb:
                    refs.append((name, self.value(glb[name])))
                elif hasattr(builtins, name):
                    refs.append((name, "builtin"))
            closure = tuple(self.value(_cell(c)) for c in (fn.__closure__ or ()))
            return ("function", self.code(code), tuple(refs), closure, self.value(fn.__defaults__),
                    self.value(fn.__kwdefaults__))
        finally:
            self._active.discard(id(fn))

    def _names(self, code) -> set:
        names = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, pytypes.CodeType):
                names |= self._names(c)
        return names

    def code(self, code) -> tuple:
        consts = tuple(self.code(c) if isinstance(c, pytypes.CodeType) else self.value(c) for c in code.co_consts)
        return ("code", code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                code.co_flags & 0xFFFF,  # without the __future__ flags of the defining module
                getattr(code, "co_exceptiontable", b""))

    def value(self, v):
        t = type(v)
        if v is None or t in (bool, int, float, complex, str, bytes):
            return v
        if t in (tuple, list, set, frozenset):
            items = [self.value(x) for x in v]
            if t in (set, frozenset):
                items.sort(key=repr)
            return (t.__name__, tuple(items))
        if t is dict:
            return ("dict", tuple(sorted(((repr(k), self.value(x)) for k, x in v.items()), key=lambda p: p[0])))
        if isinstance(v, pytypes.ModuleType):
            return ("module", v.__name__)
        if isinstance(v, pytypes.FunctionType):
            return self.function(v)
        if isinstance(v, pytypes.BuiltinFunctionType):
            return ("builtin", getattr(v, "__module__", None) or "", v.__qualname__)
        if isinstance(v, pytypes.CodeType):
            return self.code(v)
        if isinstance(v, type):
            return ("type", v.__module__, v.__qualname__)
        py = getattr(v, "py_func", None)
        if isinstance(py, pytypes.FunctionType):  # a numba dispatcher (e.g. a cuda.jit device function)
            return ("dispatcher", type(v).__module__, type(v).__qualname__, self.function(py))
        mod = t.__module__
        if mod == "numpy" or mod.startswith("numpy."):
            import numpy as np

            if isinstance(v, np.ndarray):
                return ("ndarray", v.dtype.str, v.shape, np.ascontiguousarray(v).tobytes())
            if isinstance(v, np.generic):
                return ("npscalar", v.dtype.str, v.tobytes())
            if isinstance(v, np.dtype):
                return ("dtype", v.str)
            if isinstance(v, np.ufunc):
                return ("ufunc", v.__name__)
        if mod.startswith("numba"):
            r = repr(v)
            if " at 0x" not in r:
                return ("numba", t.__qualname__, r)
        self.persistent = False
        return ("object", mod, t.__qualname__, id(v))


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return ("empty-cell",)


def function_fingerprint(fn) -> tuple[tuple, bool]:
    """(a plain-value description of ``fn``, whether it is valid across processes)."""
    fp = _Fingerprinter()
    parts = fp.function(getattr(fn, "py_func", fn))
    return parts, fp.persistent


# ------------------------------------------------------------------------------------------ toolchain

_toolchain_cache = None


def _nvvm_files() -> tuple:
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")] + ["/usr/local/cuda"]
    for p in sys.path:
        if p and os.path.isdir(os.path.join(p, "nvidia")):
            roots += [os.path.join(p, "nvidia", sub) for sub in ("cu13", "cu12", "cuda_nvcc")]
    found = set()
    for root in filter(None, roots):
        for pattern in ("nvvm/lib64/libnvvm.so*", "nvvm/lib/libnvvm.so*", "nvvm/bin/nvvm*.dll"):
            for path in glob.glob(os.path.join(root, pattern)):
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                found.add((os.path.realpath(path), st.st_size, int(st.st_mtime)))
    return tuple(sorted(found))


def toolchain() -> tuple:
    """What the compiled IR depends on besides the function: versions and the libnvvm files."""
    global _toolchain_cache
    if _toolchain_cache is None:
        _toolchain_cache = (("numba-cuda", numba_cuda_version()), ("numba", distribution_version("numba")),
                            ("llvmlite", distribution_version("llvmlite")), ("nvvm", _nvvm_files()),
                            ("python", tuple(sys.version_info[:2])))
    return _toolchain_cache


def callback_cache_key(kind, fn, element_dtype, user_info_dtype, compute_capability) -> tuple[str, bool]:
    """(hex key, persistent) of a callback compilation; checks the arguments, imports nothing heavy."""
    py = _python_function(fn, kind)
    elem = _element_dtype(element_dtype)
    uinfo, _ = _user_info(user_info_dtype)
    cc = normalize_compute_capability(compute_capability)
    parts, persistent = function_fingerprint(py)
    key = digest("cumath.fft callback", _KEY_VERSION, kind, elem, uinfo, cc, toolchain(), parts)
    return key, persistent


# ------------------------------------------------------------------------------------------ compiling

def _numba_signature(kind, elem, uinfo_name, uinfo_type):
    from numba import types

    scalar = {"float16": types.float16, "float32": types.float32, "float64": types.float64,
              "complex64": types.complex64, "complex128": types.complex128, "int8": types.int8,
              "int16": types.int16, "int32": types.int32, "int64": types.int64, "uint8": types.uint8,
              "uint16": types.uint16, "uint32": types.uint32, "uint64": types.uint64}
    el = scalar[elem]
    if uinfo_type is not None:
        user = uinfo_type if isinstance(uinfo_type, (types.CPointer, types.RawPointer)) else types.CPointer(uinfo_type)
    elif uinfo_name == "void":
        user = types.voidptr
    else:
        user = types.CPointer(scalar[uinfo_name])
    if kind == "prolog":
        return el(types.CPointer(el), types.uint64, user, types.voidptr)
    return types.void(types.CPointer(el), types.uint64, el, user, types.voidptr)


def _compile(kind, fn, element_dtype, user_info_dtype, compute_capability):
    t0 = time.perf_counter()
    py = _python_function(fn, kind)
    elem = _element_dtype(element_dtype)
    uinfo, uinfo_type = _user_info(user_info_dtype)
    if numba_cuda_version() is None:
        raise ImportError(f"compile_{kind} needs numba-cuda, which is not installed; install it with "
                          f"{EXTRA_HINT}")
    cc = normalize_compute_capability(compute_capability)
    parts, persistent = function_fingerprint(py)
    key = digest("cumath.fft callback", _KEY_VERSION, kind, elem, uinfo, cc, toolchain(), parts)
    symbol = plain_name(kind, elem, key)

    def make():
        cuda = import_numba_cuda(feature=f"compile_{kind}")
        sig = _numba_signature(kind, elem, uinfo, uinfo_type)
        t1 = time.perf_counter()
        try:
            code, _ = cuda.compile(py, sig, device=True, abi="c",
                                   abi_info={"abi_name": mangled_name(symbol, kind, elem)}, output="ltoir", cc=cc)
        except Exception as exc:
            msg = (f"compile_{kind}: numba-cuda could not compile {py.__qualname__} as a {kind} for {elem} elements "
                   f"with user_info {uinfo}{'' if uinfo.startswith('numba') or uinfo == 'void' else '*'} "
                   f"({_SIGNATURES[kind]}): {type(exc).__name__}: {exc}")
            if "Typing" in type(exc).__name__ or "Unsupported" in type(exc).__name__:
                raise TypeError(msg) from exc
            raise RuntimeError(msg) from exc
        ir = LTOIR(bytes(code), kind=kind, element_dtype=elem, user_info_dtype=uinfo, symbol=symbol, key=key)
        register_ltoir(ir, disk=persistent)
        logger.info("compiled %s %s for %s elements (user_info %s) to %d bytes of LTO-IR for sm_%d%d in %.2f s%s",
                    kind, py.__qualname__, elem, uinfo, len(ir), cc[0], cc[1], time.perf_counter() - t0,
                    "" if persistent else " (it refers to objects without a stable identity: cached in memory only)")
        return ir, {"kind": kind, "element_dtype": elem, "user_info_dtype": uinfo, "symbol": symbol,
                    "function": f"{py.__module__}.{py.__qualname__}", "compute_capability": list(cc),
                    "compile_seconds": round(time.perf_counter() - t1, 4)}

    entry = _STORE.get_or_make(key, make, disk=persistent)
    if type(entry.data) is LTOIR:  # compiled in this process
        return entry.data
    ir = LTOIR(entry.data, kind=kind, element_dtype=elem, user_info_dtype=uinfo, symbol=symbol, key=key)
    _STORE.put(key, ir, entry.meta, disk=False)
    register_ltoir(ir, disk=False)
    logger.info("%s %s loaded from the disk cache (%d bytes of LTO-IR) in %.1f ms", kind, py.__qualname__,
                len(ir), 1e3 * (time.perf_counter() - t0))
    return ir


def compile_prolog(prolog_fn: Any, element_dtype: DTypeLike, user_info_dtype: DTypeLike, *,
                   compute_capability: ComputeCapabilityLike | None = None) -> LTOIR:
    """Compile a Python function to LTO-IR for use as ``prolog=`` (cuFFT load callback) of :func:`fft`,
    :func:`ifft`, :func:`rfft`, :func:`irfft` and :meth:`FFT.plan`.

    ``prolog_fn(data_in, offset, user_info, reserved_for_future_use)`` returns the element the FFT reads
    at ``offset``, usually derived from ``data_in[offset]``. ``offset`` counts elements from the start of
    the array cuFFT reads (its layout: :meth:`FFT.get_input_layout`). ``element_dtype``: the FFT input's
    dtype, one of 'float32', 'float64' (R2C), 'complex64', 'complex128' (C2C, C2R). ``user_info_dtype``:
    the elements ``user_info`` points to ('float32', 'complex64', ..., or None/'void' for an untyped
    pointer, or a numba type); the pointer is the ``data`` of a :class:`DeviceCallable`.
    ``compute_capability``: e.g. '90' (default: the current GPU's).

    Returns the LTO-IR (``bytes``). Compilations are cached in memory and on disk (a second process loads
    them without compiling). Needs numba-cuda (``pip install "cumath[dx]"``).

    Example (CuPy)::

        def scale(data_in, offset, user_info, unused):
            return data_in[offset] * user_info[offset]

        ir = cumath.fft.compile_prolog(scale, "complex64", "float32")
        y = cumath.fft.fft(x, prolog={"ltoir": ir, "data": weights.data.ptr})
    """
    return _compile("prolog", prolog_fn, element_dtype, user_info_dtype, compute_capability)


def compile_epilog(epilog_fn: Any, element_dtype: DTypeLike, user_info_dtype: DTypeLike, *,
                   compute_capability: ComputeCapabilityLike | None = None) -> LTOIR:
    """Compile a Python function to LTO-IR for use as ``epilog=`` (cuFFT store callback).

    ``epilog_fn(data_out, offset, element, user_info, reserved_for_future_use)`` stores (usually a
    transformed) ``element`` into ``data_out[offset]``. ``offset`` counts elements from the start of the
    result cuFFT writes (its layout: :meth:`FFT.get_output_layout`). ``element_dtype``: the FFT result's
    dtype ('complex64'/'complex128' for C2C and R2C, 'float32'/'float64' for C2R). Other arguments as in
    :func:`compile_prolog`.
    """
    return _compile("epilog", epilog_fn, element_dtype, user_info_dtype, compute_capability)


def clear_memory_cache() -> None:
    """Forget compiled callbacks held in memory (the disk cache stays)."""
    _STORE.clear_memory()
    INDEX.clear_memory()
