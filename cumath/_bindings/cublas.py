"""ctypes bindings of cuBLAS (libcublas, the v2 API), 1:1 with the C functions cumath's generic matmul uses.

Enum values and signatures were read from ``cublas_api.h`` of the ``nvidia-cublas`` 13.1.2.11 wheel
(CUBLAS_VERSION 130102). ``libraryPropertyType`` comes from ``library_types.h`` and lives in ``cudart``.

Conventions: nothing is loaded at import time (the functions of ``TABLE`` are bound on the first call of any
wrapper); handles, device pointers, host pointers and streams are Python ints; wrappers return their outputs
instead of taking out-pointers and raise ``CUBLASError`` (with the status name) on a failure.

The level-3 routines are bound through their 64-bit-integer entry points (``cublasSgemm_v2_64`` ...,
cuBLAS 12 and newer). Their wrappers are generated from ``ROUTINES`` (one row per routine, one function per
precision S/D/C/Z): every scalar (``alpha``, ``beta``) is the int address of a value in host memory (pointer
mode HOST, the default) or device memory (pointer mode DEVICE), as in C.

Pointer-array routines (``cublas{p}gemmBatched_64``, ``cublas{p}gemmGroupedBatched_64``): ``Aarray``, ``Barray``
and ``Carray`` are device memory holding one device pointer per problem; in the grouped routine every other
array (``transa_array`` ... ``ldc_array``, ``alpha_array``, ``beta_array``, ``group_size``: one entry per group,
enums as 32-bit ints, dimensions as int64) is host memory, read during the call; the grouped routine refuses
pointer mode DEVICE (CUBLAS_STATUS_NOT_SUPPORTED), per the cuBLAS documentation of cublas<t>gemmGroupedBatched.
The header has grouped-batched for S and D only (cuBLAS 12.5+; no C or Z entry points).
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_char_p, c_int, c_int64, c_size_t, c_void_p

from ..errors import CUBLASError
from ._loader import LazyFunctions
from ._status import make_checker
from .cudart import libraryPropertyType
# The enums cuBLAS shares with cuBLASLt (cublas_api.h) are defined once, from the header tables there.
from .cublaslt import cublasFillMode_t, cublasOperation_t, cublasPointerMode_t, cublasStatus_t

__all__ = [
    "CUBLAS_VERSION",
    "TABLE",
    "ROUTINES",
    "check",
    "cublasStatus_t",
    "cublasFillMode_t",
    "cublasDiagType_t",
    "cublasSideMode_t",
    "cublasOperation_t",
    "cublasPointerMode_t",
    "libraryPropertyType",
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetStream_v2",
    "cublasGetStream_v2",
    "cublasSetPointerMode_v2",
    "cublasGetPointerMode_v2",
    "cublasSetWorkspace_v2",
    "cublasGetVersion_v2",
    "cublasGetProperty",
    "cublasGetStatusName",
    "cublasGetStatusString",
]

CUBLAS_VERSION = 130102  # of the header the values below were read from (13.1.2)


class cublasDiagType_t(enum.IntEnum):
    CUBLAS_DIAG_NON_UNIT = 0
    CUBLAS_DIAG_UNIT = 1


class cublasSideMode_t(enum.IntEnum):
    CUBLAS_SIDE_LEFT = 0
    CUBLAS_SIDE_RIGHT = 1


_p = c_void_p
_i64 = c_int64

# routine -> (precisions, C name pattern with {p}, argument types after the handle, parameter names)
ROUTINES = {
    "gemm": ("SDCZ", "cublas{p}gemm_v2_64", [c_int, c_int, _i64, _i64, _i64, _p, _p, _i64, _p, _i64, _p, _p, _i64],
             "transa transb m n k alpha A lda B ldb beta C ldc"),
    "gemmStridedBatched": (
        "SDCZ", "cublas{p}gemmStridedBatched_64",
        [c_int, c_int, _i64, _i64, _i64, _p, _p, _i64, _i64, _p, _i64, _i64, _p, _p, _i64, _i64, _i64],
        "transa transb m n k alpha A lda strideA B ldb strideB beta C ldc strideC batchCount"),
    "gemmBatched": (
        "SDCZ", "cublas{p}gemmBatched_64", [c_int, c_int, _i64, _i64, _i64, _p, _p, _i64, _p, _i64, _p, _p, _i64, _i64],
        "transa transb m n k alpha Aarray lda Barray ldb beta Carray ldc batchCount"),
    "gemmGroupedBatched": (
        "SD", "cublas{p}gemmGroupedBatched_64", [_p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _i64, _p],
        "transa_array transb_array m_array n_array k_array alpha_array Aarray lda_array Barray ldb_array "
        "beta_array Carray ldc_array group_count group_size"),
    "symm": ("SDCZ", "cublas{p}symm_v2_64", [c_int, c_int, _i64, _i64, _p, _p, _i64, _p, _i64, _p, _p, _i64],
             "side uplo m n alpha A lda B ldb beta C ldc"),
    "hemm": ("CZ", "cublas{p}hemm_v2_64", [c_int, c_int, _i64, _i64, _p, _p, _i64, _p, _i64, _p, _p, _i64],
             "side uplo m n alpha A lda B ldb beta C ldc"),
    "trmm": ("SDCZ", "cublas{p}trmm_v2_64",
             [c_int, c_int, c_int, c_int, _i64, _i64, _p, _p, _i64, _p, _i64, _p, _i64],
             "side uplo trans diag m n alpha A lda B ldb C ldc"),
    "trsm": ("SDCZ", "cublas{p}trsm_v2_64", [c_int, c_int, c_int, c_int, _i64, _i64, _p, _p, _i64, _p, _i64],
             "side uplo trans diag m n alpha A lda B ldb"),
    "geam": ("SDCZ", "cublas{p}geam_64", [c_int, c_int, _i64, _i64, _p, _p, _i64, _p, _p, _i64, _p, _i64],
             "transa transb m n alpha A lda beta B ldb C ldc"),
    "dgmm": ("SDCZ", "cublas{p}dgmm_64", [c_int, _i64, _i64, _p, _i64, _p, _i64, _p, _i64],
             "mode m n A lda x incx C ldc"),
}

TABLE = {
    "cublasCreate_v2": (c_int, [POINTER(c_void_p)]),
    "cublasDestroy_v2": (c_int, [c_void_p]),
    "cublasSetStream_v2": (c_int, [c_void_p, c_void_p]),
    "cublasGetStream_v2": (c_int, [c_void_p, POINTER(c_void_p)]),
    "cublasSetPointerMode_v2": (c_int, [c_void_p, c_int]),
    "cublasGetPointerMode_v2": (c_int, [c_void_p, POINTER(c_int)]),
    "cublasSetWorkspace_v2": (c_int, [c_void_p, c_void_p, c_size_t]),
    "cublasGetVersion_v2": (c_int, [c_void_p, POINTER(c_int)]),
    "cublasGetProperty": (c_int, [c_int, POINTER(c_int)]),
    "cublasGetStatusName": (c_char_p, [c_int]),
    "cublasGetStatusString": (c_char_p, [c_int]),
}
for _routine, (_precisions, _pattern, _args, _names) in ROUTINES.items():
    for _prec in _precisions:
        TABLE[_pattern.format(p=_prec)] = (c_int, [c_void_p] + list(_args))

_L = LazyFunctions("cublas", TABLE)
check = make_checker(CUBLASError, cublasStatus_t)


# ------------------------------------------------------------------------------------------------ handles


def cublasCreate_v2() -> int:
    h = c_void_p()
    s = _L.cublasCreate_v2(byref(h))
    if s:
        check(s)
    return h.value or 0


def cublasDestroy_v2(handle: int) -> None:
    s = _L.cublasDestroy_v2(handle)
    if s:
        check(s)


def cublasSetStream_v2(handle: int, streamId: int) -> None:
    s = _L.cublasSetStream_v2(handle, streamId)
    if s:
        check(s)


def cublasGetStream_v2(handle: int) -> int:
    v = c_void_p()
    s = _L.cublasGetStream_v2(handle, byref(v))
    if s:
        check(s)
    return v.value or 0


def cublasSetPointerMode_v2(handle: int, mode: int) -> None:
    s = _L.cublasSetPointerMode_v2(handle, mode)
    if s:
        check(s)


def cublasGetPointerMode_v2(handle: int) -> int:
    v = c_int()
    s = _L.cublasGetPointerMode_v2(handle, byref(v))
    if s:
        check(s)
    return v.value


def cublasSetWorkspace_v2(handle: int, workspace: int, workspaceSizeInBytes: int) -> None:
    s = _L.cublasSetWorkspace_v2(handle, workspace, workspaceSizeInBytes)
    if s:
        check(s)


def cublasGetVersion_v2(handle: int) -> int:
    """CUBLAS_VERSION of the loaded library (major * 10000 + minor * 100 + patch)."""
    v = c_int()
    s = _L.cublasGetVersion_v2(handle, byref(v))
    if s:
        check(s)
    return v.value


def cublasGetProperty(type: int) -> int:
    """A libraryPropertyType value (MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL); needs no handle."""
    v = c_int()
    s = _L.cublasGetProperty(type, byref(v))
    if s:
        check(s)
    return v.value


def cublasGetStatusName(status: int) -> str:
    value = _L.cublasGetStatusName(status)
    return value.decode() if value else ""


def cublasGetStatusString(status: int) -> str:
    value = _L.cublasGetStatusString(status)
    return value.decode() if value else ""


# ------------------------------------------------------------------------------- level-3 and extensions


def _make_wrapper(cname: str, names: str):
    params = names.split()

    def wrapper(handle: int, *args) -> None:
        if len(args) != len(params):
            raise TypeError(f"{cname}() takes handle and {len(params)} arguments ({', '.join(params)}), "
                            f"{len(args)} given")
        s = getattr(_L, cname)(handle, *args)
        if s:
            check(s)

    wrapper.__name__ = wrapper.__qualname__ = cname
    wrapper.__doc__ = f"{cname}(handle, {', '.join(params)}); raises CUBLASError on a failure status."
    return wrapper


for _routine, (_precisions, _pattern, _args, _names) in ROUTINES.items():
    for _prec in _precisions:
        _cname = _pattern.format(p=_prec)
        globals()[_cname] = _make_wrapper(_cname, _names)
        __all__.append(_cname)


def raw(name: str):
    """The bound ctypes function ``name`` itself (returns the status; for hot paths that check it inline)."""
    return getattr(_L, name)


# ------------------------------------------------------------------------------------------ batched LU
# cublas<t>getrfBatched / cublas<t>getrsBatched (cublas_api.h of the nvidia-cublas 13.10.0.20 wheel; 32-bit
# integers only, no _64 entry points). Aarray/Barray: device memory holding one device pointer per problem;
# PivotArray (getrf: P) and infoArray: device int arrays (n per problem, one per problem); getrs's ``info`` is
# host memory (one int: -i when argument i is invalid).
BATCHED_LU = {
    "getrfBatched": ("SDCZ", "cublas{p}getrfBatched", [c_int, _p, c_int, _p, _p, c_int],
                     "n Aarray lda PivotArray infoArray batchSize"),
    "getrsBatched": ("SDCZ", "cublas{p}getrsBatched", [c_int, c_int, c_int, _p, c_int, _p, _p, c_int, _p, c_int],
                     "trans n nrhs Aarray lda devIpiv Barray ldb info batchSize"),
}
for _routine, (_precisions, _pattern, _args, _names) in BATCHED_LU.items():
    for _prec in _precisions:
        _cname = _pattern.format(p=_prec)
        TABLE[_cname] = (c_int, [c_void_p] + list(_args))
        globals()[_cname] = _make_wrapper(_cname, _names)
        __all__.append(_cname)
