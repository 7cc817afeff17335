"""ctypes bindings of MKL's ScaLAPACK and PBLAS (``mkl_scalapack.h``, ``mkl_pblas.h``), LP64 interface.

One Python function per routine cumath uses: ``numroc``, ``descinit``, ``p?gemm``, ``p?getrf``, ``p?getrs``
(``?`` in s, d, c, z). The Fortran-style entry points take every argument by reference; here the scalars are
Python values and the arrays are pointers (ints). ``check(info, routine)`` raises ``ScaLAPACKError`` for a
negative ``info``. Loading this library loads BLACS (``blacs.load()``) first. Nothing is loaded at import time.
"""

from __future__ import annotations

import threading
from ctypes import POINTER, byref, c_char_p, c_double, c_float, c_int, c_void_p

import numpy as np

from ..errors import ScaLAPACKError
from . import blacs

__all__ = ["load", "numroc", "descinit", "gemm", "getrf", "getrs", "check", "PREFIX"]

PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
          np.dtype(np.complex128): "z"}
_SCALAR = {"s": c_float, "d": c_double, "c": c_float * 2, "z": c_double * 2}
_lock = threading.Lock()
_lib: dict = {}
_PI = POINTER(c_int)


def load():
    with _lock:
        lib = _lib.get("lib")
        if lib is None:
            blacs.load()
            lib = blacs.mkl_library("libmkl_scalapack_lp64")
            lib.numroc_.restype = c_int
            lib.numroc_.argtypes = [_PI] * 5
            lib.descinit_.restype = None
            lib.descinit_.argtypes = [c_void_p] + [_PI] * 8 + [_PI]
            for p in "sdcz":
                f = getattr(lib, f"p{p}gemm_")
                f.restype = None
                f.argtypes = [c_char_p, c_char_p, _PI, _PI, _PI, c_void_p, c_void_p, _PI, _PI, c_void_p,
                              c_void_p, _PI, _PI, c_void_p, c_void_p, c_void_p, _PI, _PI, c_void_p]
                f = getattr(lib, f"p{p}getrf_")
                f.restype = None
                f.argtypes = [_PI, _PI, c_void_p, _PI, _PI, c_void_p, c_void_p, _PI]
                f = getattr(lib, f"p{p}getrs_")
                f.restype = None
                f.argtypes = [c_char_p, _PI, _PI, c_void_p, _PI, _PI, c_void_p, c_void_p, c_void_p, _PI, _PI,
                              c_void_p, _PI]
            _lib["lib"] = lib
        return lib


def _i(v: int):
    return byref(c_int(int(v)))


def _scalar(prefix: str, value):
    t = _SCALAR[prefix]
    if prefix in "cz":
        value = complex(value)
        return t(value.real, value.imag)
    return t(float(value))


def check(info: int, routine: str) -> None:
    if info < 0:
        raise ScaLAPACKError(info, f"ILLEGAL_ARGUMENT_{-info}", f"{routine}: argument {-info} had an illegal value")


def numroc(n: int, nb: int, iproc: int, isrcproc: int, nprocs: int) -> int:
    """How many rows (or columns) of an ``n``-long block-cyclic axis process ``iproc`` holds."""
    return load().numroc_(_i(n), _i(nb), _i(iproc), _i(isrcproc), _i(nprocs))


def descinit(m: int, n: int, mb: int, nb: int, irsrc: int, icsrc: int, ictxt: int, lld: int) -> np.ndarray:
    """An array descriptor (9 ints) for an ``m x n`` matrix in ``mb x nb`` blocks on context ``ictxt``."""
    desc = np.zeros(9, dtype=np.int32)
    info = c_int()
    load().descinit_(desc.ctypes.data, _i(m), _i(n), _i(mb), _i(nb), _i(irsrc), _i(icsrc), _i(ictxt),
                     _i(max(1, lld)), byref(info))
    check(info.value, "descinit")
    return desc


def gemm(prefix, transa, transb, m, n, k, alpha, a, desca, b, descb, beta, c, descc) -> None:
    """``p?gemm``: C = alpha op(A) op(B) + beta C on the distributed matrices (pointers, descriptors as arrays)."""
    f = getattr(load(), f"p{prefix}gemm_")
    one = _i(1)
    f(transa.encode(), transb.encode(), _i(m), _i(n), _i(k), byref(_scalar(prefix, alpha)), a, one, one,
      desca.ctypes.data, b, _i(1), _i(1), descb.ctypes.data, byref(_scalar(prefix, beta)), c, _i(1), _i(1),
      descc.ctypes.data)


def getrf(prefix, m, n, a, desca, ipiv) -> int:
    """``p?getrf``: LU with partial pivoting in place; returns ``info`` (> 0: U(info, info) is exactly zero)."""
    info = c_int()
    getattr(load(), f"p{prefix}getrf_")(_i(m), _i(n), a, _i(1), _i(1), desca.ctypes.data, ipiv, byref(info))
    check(info.value, f"p{prefix}getrf")
    return info.value


def getrs(prefix, trans, n, nrhs, a, desca, ipiv, b, descb) -> None:
    """``p?getrs``: solve op(A) X = B with the factors of ``p?getrf`` (B overwritten by X)."""
    info = c_int()
    getattr(load(), f"p{prefix}getrs_")(trans.encode(), _i(n), _i(nrhs), a, _i(1), _i(1), desca.ctypes.data, ipiv,
                                         b, _i(1), _i(1), descb.ctypes.data, byref(info))
    check(info.value, f"p{prefix}getrs")
