"""cumath's compiled hot path, with ctypes as the fallback.

``_native`` is a C extension built by the package's build backend (``setup.py``, optional: ``pip install`` on a
machine without a C compiler still works, and then the ctypes functions themselves are called). What it gives
the hot paths:

- :func:`call3`: a callable ``fn(a, b, c)`` over a C function of three pointers (FFTW's and DFTI's execute
  functions), ~0.2-0.4 us a call cheaper than the ctypes function it is made from; the ctypes function itself
  without the extension.
- :func:`call_ippi`: the same for ``int fn(int, void *, void *, int)`` (cuFFT's ``cufftXtExec``).
- :func:`call_words`: the same for ``int fn(...)`` of up to 16 integer-class arguments (``cublasLtMatmul``).
- :func:`launch_words`: a kernel launch (``cuLaunchKernel``) as one call over a word list shaped like another
  library call's: the operand pointers and the stream are read from given positions of the words (the advanced
  matmul's small-GEMM kernel runs from the ``cublasLtMatmul`` argument list); a Python closure over the ctypes
  ``cuLaunchKernel`` without the extension.
- :func:`run_table`: a list of native void calls of up to 16 integer-class arguments each (a table of machine
  words: function address, arguments) run as one call with the GIL released once for all of them (a batch of
  LAPACK calls on worker threads); None without the extension.
- :func:`numpy_fields_reader`: a NumPy array's pointer, shape, element strides and read-only flag in one call
  (what wrapping an operand reads), checked against NumPy on live arrays before it is used.
- ``hot_fft`` / ``hot_table`` / ``hot_put`` / ``hot_attach``: the compiled hit path of the stateless FFT
  functions (``cumath/_core/plan_cache.py`` keeps its tables; see ``hot_remember`` there). ``hot_fft`` is None
  without the extension, and ``hot_table()`` returns None.

``CUMATH_NATIVE=0`` in the environment turns the extension off (the fallback, for tests and comparisons).
``NATIVE`` says whether it is in use.
"""

from __future__ import annotations

import ctypes
import importlib
import os
from typing import Any, Callable, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["NATIVE", "call3", "call_ippi", "call_words", "numpy_fields_reader", "hot_fft", "hot_table",
           "hot_put", "hot_attach", "hot_setup", "hot_runner",
           "dev_runner", "hot_put_gpu", "hot_gpu_type", "native_pointer",
           "hot_mm", "hot_put_mm", "launch_words", "run_table", "fast_execute", "KERNELS"]


def _load():
    if os.environ.get("CUMATH_NATIVE", "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    try:
        return importlib.import_module(f"{__name__}._native")
    except ImportError:  # not built (no compiler at install time, or a source checkout): ctypes it is
        return None


_native = _load()

NATIVE = _native is not None

#: hot_fft(operand, kind, sign, *optional_arguments) -> the result of a cached plan, or None (the Python path
#: then runs); None itself without the extension
hot_fft = getattr(_native, "hot_fft", None)
hot_put = getattr(_native, "hot_put", None)
hot_attach = getattr(_native, "hot_attach", None)
hot_setup = getattr(_native, "hot_setup", None)
#: hot_runner(execs, mask, elem_mask, any, alloc, alloc_args, slow) -> runner(op, sign, stream=None): a host
#: executor's execute as one C call (``slow``, the Python execute, for operands it declines)
hot_runner = getattr(_native, "hot_runner", None)
#: dev_runner(plan, new_out, pointer, exec_fn, misaligned_mask, slow) -> runner(op, sign, stream): a GPU FFT
#: executor's execute for its plain case as one C call (``slow`` for everything else)
dev_runner = getattr(_native, "dev_runner", None)
hot_put_gpu = getattr(_native, "hot_put_gpu", None)
#: hot_mm(a, b, *optional_arguments) -> the cached advanced matmul's result, or None; None without the extension
hot_mm = getattr(_native, "hot_mm", None)
#: run_table(address, rows, width, lo, hi): rows lo..hi-1 of a C-contiguous table of ``rows`` x ``width`` machine
#: words (function address, then its arguments) called in order, the GIL released; None without the extension
run_table = getattr(_native, "run_table", None)
hot_put_mm = getattr(_native, "hot_put_mm", None)
_exec_method = getattr(_native, "exec_method", None)
#: {name: address} of the extension's plain C functions (for run_table rows); empty without the extension
KERNELS: dict = _native.kernel_addresses() if hasattr(_native, "kernel_addresses") else {}


def fast_execute(operand: str, sign: str) -> Callable[[_F], _F]:
    """Decorator of an operation's ``execute`` method: a call without arguments runs the planned executor's
    runner from C, ``executor.execute(ops[operand], getattr(self, sign), stream)`` as the method's own fast branch
    does, without its Python frame (``_method.c`` says which state it reads); every other call, and any state the
    compiled path does not recognise, runs the method itself. The method is returned unchanged without the
    extension (or with ``CUMATH_NATIVE=0``)."""

    def wrap(fn: _F) -> _F:  # typed as the method itself: the descriptor takes the same calls
        return fn if _exec_method is None else _exec_method(fn, operand, sign)

    return wrap

_READERS: dict = {}  # type -> (reader kind, current-stream function), as given to the extension


def hot_gpu_type(cls, package: str) -> bool:
    """Let ``hot_fft`` read operands of exactly the type ``cls`` of ``package`` ('torch': torch.Tensor, 'cupy':
    cupy.ndarray) with the package's own accessors; False for any other type or without the extension."""
    if hot_put_gpu is None:
        return False
    if cls in _READERS:
        return True
    if package == "torch":
        import torch

        if cls is not torch.Tensor:
            return False
        from ..frameworks import torch as adapter

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        reader = (1, raw if raw is not None else adapter.current_stream)  # the adapter's own stream function
    elif package == "cupy":
        try:
            import cupy
        except ImportError:
            return False

        if cls is not cupy.ndarray:
            return False
        from ..frameworks import cupy as adapter

        reader = (2, adapter.current_stream)
    else:
        return False
    _READERS[cls] = reader
    _native.hot_setup_gpu(_READERS)
    return True


def native_pointer(package: str, fallback):
    """A C-level callable ``f(array) -> address`` for results of ``package`` (torch: ``Tensor.data_ptr``, cupy:
    ``attrgetter('data.ptr')``), else ``fallback`` (the adapter's pointer function)."""
    if package == "torch":
        import torch

        return torch.Tensor.data_ptr
    if package == "cupy":
        import operator

        return operator.attrgetter("data.ptr")
    return fallback


def hot_table():
    """A new, empty table of the compiled hit path (one per thread's plan cache), or None without it."""
    return _native.HotTable() if hot_fft is not None else None


def call_ippi(cfn, on_error=None):
    """A fast callable of the ctypes function ``cfn`` of C type ``int fn(int, void *, void *, int)`` returning
    a status (cuFFT's ``cufftXtExec(handle, in, out, direction)``); ``cfn`` itself without the extension.
    ``on_error(status)`` runs for a non-zero status where given (both paths)."""
    if not isinstance(cfn, ctypes._CFuncPtr):
        return cfn
    if _native is not None:
        return _native.Call3(ctypes.cast(cfn, ctypes.c_void_p).value, True, on_error, "ippi")
    return _with_errcheck(cfn, on_error) if on_error is not None else cfn


def numpy_fields_reader():
    """``read(array, itemsize) -> (pointer, shape, element strides, readonly)`` (None where a stride is not a
    whole number of elements) for NumPy arrays, or None without the extension or where NumPy's array struct is not
    the one it reads (checked here on live arrays: contiguous, sliced, negative-stride, read-only, 0-d)."""
    if _native is None:
        return None
    import numpy as np

    read = _native.numpy_fields
    base = np.arange(24, dtype=np.complex128).reshape(2, 3, 4)
    ro = base[:, ::-1, 1::2]
    ro.flags.writeable = False
    for a in (base, base[1], ro, base.T, np.zeros(()), np.empty((0, 5), dtype=np.float32)):
        expect = (a.__array_interface__["data"][0], a.shape, tuple(s // a.itemsize for s in a.strides),
                  not a.flags.writeable)
        if read(a, a.itemsize) != expect:
            return None
    return read


def call_words(cfn, on_error=None):
    """A fast callable of the ctypes function ``cfn`` whose arguments are all integer-class (pointers, sizes,
    ints; at most 16) and which returns an int status (``cublasLtMatmul``). Every argument is given as an int
    (None: NULL), pointer-to-struct arguments as the struct's address. Without the extension: a ctypes function at
    the same address whose pointer argument types are ``c_void_p`` (so it takes the same ints). ``on_error(status)``
    runs for a non-zero status where given (both paths)."""
    if not isinstance(cfn, ctypes._CFuncPtr):
        return cfn
    argtypes = list(cfn.argtypes or ())
    address = ctypes.cast(cfn, ctypes.c_void_p).value
    if _native is not None and 0 < len(argtypes) <= 16:
        return _native.Call3(address, True, on_error, f"w{len(argtypes)}")
    plain = [ctypes.c_void_p if isinstance(t, type(ctypes.POINTER(ctypes.c_int))) else t for t in argtypes]
    fn = ctypes.CFUNCTYPE(cfn.restype, *plain)(address)
    return _with_errcheck(fn, on_error) if on_error is not None else fn


_LAUNCH = []  # the ctypes cuLaunchKernel of libcuda, loaded on first use


def _cu_launch_kernel():
    if not _LAUNCH:
        from ..._bindings._loader import load_library

        fn = load_library("cuda").cuLaunchKernel
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        _LAUNCH.append(fn)
    return _LAUNCH[0]


def launch_words(function: int, grid, block, shared: int, params, word_map, stream_word: int, nwords: int,
                 on_error=None):
    """``f(*words) -> status``: ``cuLaunchKernel(function, grid, block, shared, words[stream_word], params', NULL)``
    where ``params`` is the kernelParams template (the address of each argument's value; None for the mapped
    ones) and, per call, parameter ``p`` of each ``(w, p)`` in ``word_map`` takes the value ``words[w]`` (a
    pointer given as an int, None for NULL). ``f`` takes exactly ``nwords`` words; the memory the template points
    at stays the caller's to keep alive. A non-zero status goes to ``on_error(status)`` where given."""
    launch = _cu_launch_kernel()
    gx, gy, gz = grid
    bx, by, bz = block
    word_map = tuple((int(w), int(p)) for w, p in word_map)
    params = tuple(params)
    if _native is not None:
        return _native.launch_words(ctypes.cast(launch, ctypes.c_void_p).value, function, gx, gy, gz, bx, by, bz,
                                    shared, params, word_map, stream_word, nwords, on_error)
    import threading

    values = (ctypes.c_void_p * max(1, len(word_map)))()
    base = ctypes.addressof(values)
    array = (ctypes.c_void_p * len(params))(*params)
    for j, (_w, p) in enumerate(word_map):
        array[p] = base + j * ctypes.sizeof(ctypes.c_void_p)
    lock = threading.Lock()

    def launch_fallback(*words):
        if len(words) != nwords:
            raise TypeError(f"this launcher takes {nwords} positional arguments (ints), got {len(words)}")
        with lock:  # the values buffer is shared; the driver copies the values during the call
            for j, (w, _p) in enumerate(word_map):
                values[j] = words[w]
            status = launch(function, gx, gy, gz, bx, by, bz, shared, words[stream_word], array, None)
        if status and on_error is not None:
            on_error(status)
        return status

    launch_fallback.keep = (values, array)
    return launch_fallback


def call3(cfn, *, status: bool = False, on_error=None):
    """A fast callable of the ctypes function ``cfn`` (a C function of three pointers, given as ints).

    ``status``: ``cfn`` returns a C ``long`` status; a non-zero one goes to ``on_error(status)`` (which should
    raise). Without the extension: ``cfn`` itself, with ``on_error`` as its ``errcheck`` where given (so both
    paths check the status). Anything but a ctypes function is returned as it is.
    """
    if not isinstance(cfn, ctypes._CFuncPtr):  # a Python callable (a stub, a wrapper): called as it is
        return cfn
    if _native is not None:
        return _native.Call3(ctypes.cast(cfn, ctypes.c_void_p).value, status, on_error)
    if on_error is None:
        return cfn
    return _with_errcheck(cfn, on_error)


def _with_errcheck(cfn, on_error):
    fn = type(cfn)(ctypes.cast(cfn, ctypes.c_void_p).value)  # a copy: errcheck is per function object
    fn.restype, fn.argtypes = cfn.restype, cfn.argtypes

    def errcheck(result, _fn, _args):
        if result:
            on_error(result)
        return result

    fn.errcheck = errcheck
    return fn
