"""ctypes bindings of cuSOLVER's dense API (cusolverDn), 1:1 with the C functions cumath's direct solver uses.

Enum values and signatures were read from ``cusolver_common.h`` and ``cusolverDn.h`` of the
``nvidia-cusolver`` 12.4.1.2 wheel (CUSOLVER_VERSION 12401). The fill modes and operations are cuBLAS's
(``cublasFillMode_t``, ``cublasOperation_t``), data types ``cudaDataType`` (both defined once, elsewhere).

Functions: the handle (``cusolverDnCreate``/``Destroy``/``SetStream``/``GetStream``/``SetDeterministicMode``), the
parameters of the 64-bit API (``cusolverDnCreateParams``/``DestroyParams``), LU (``cusolverDnXgetrf_bufferSize``,
``Xgetrf``, ``Xgetrs``), Cholesky (``cusolverDnXpotrf_bufferSize``, ``Xpotrf``, ``Xpotrs``), the batched Cholesky of
the legacy API (``cusolverDn{S,D,C,Z}potrfBatched``/``potrsBatched``: 32-bit integers, arrays of device pointers in
device memory, and ``nrhs`` must be 1 for potrsBatched, as the header says), and the library's version.

Conventions: nothing is loaded at import time (the functions of ``TABLE`` are bound on the first call of any
wrapper); handles, device pointers, host pointers and streams are Python ints; wrappers return their outputs
instead of taking out-pointers and raise ``CUSOLVERError`` (with the status name) on a failure. ``info`` and
``ipiv`` are device pointers written by the library (``info`` > 0: zero pivot at U(info, info) for getrf,
leading minor of order ``info`` not positive definite for potrf; < 0: argument -info is invalid). ``raw(name)``
gives the bound ctypes function itself for hot paths that check its status inline.
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_int, c_int64, c_size_t, c_void_p

from ..errors import CUSOLVERError
from ._loader import LazyFunctions
from ._status import make_checker
from .cublaslt_types import cublasFillMode_t, cublasOperation_t
from .cudart import cudaDataType, libraryPropertyType

__all__ = [
    "CUSOLVER_VERSION",
    "TABLE",
    "check",
    "raw",
    "cusolverStatus_t",
    "cublasFillMode_t",
    "cublasOperation_t",
    "cudaDataType",
    "libraryPropertyType",
    "cusolverDnCreate",
    "cusolverDnDestroy",
    "cusolverDnSetStream",
    "cusolverDnGetStream",
    "cusolverDnSetDeterministicMode",
    "cusolverDnCreateParams",
    "cusolverDnDestroyParams",
    "cusolverDnXgetrf_bufferSize",
    "cusolverDnXgetrf",
    "cusolverDnXgetrs",
    "cusolverDnXpotrf_bufferSize",
    "cusolverDnXpotrf",
    "cusolverDnXpotrs",
    "cusolverGetProperty",
    "cusolverGetVersion",
]

CUSOLVER_VERSION = 12401  # of the header the values below were read from (12.4.1)


class cusolverStatus_t(enum.IntEnum):
    CUSOLVER_STATUS_SUCCESS = 0
    CUSOLVER_STATUS_NOT_INITIALIZED = 1
    CUSOLVER_STATUS_ALLOC_FAILED = 2
    CUSOLVER_STATUS_INVALID_VALUE = 3
    CUSOLVER_STATUS_ARCH_MISMATCH = 4
    CUSOLVER_STATUS_MAPPING_ERROR = 5
    CUSOLVER_STATUS_EXECUTION_FAILED = 6
    CUSOLVER_STATUS_INTERNAL_ERROR = 7
    CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED = 8
    CUSOLVER_STATUS_NOT_SUPPORTED = 9
    CUSOLVER_STATUS_ZERO_PIVOT = 10
    CUSOLVER_STATUS_INVALID_LICENSE = 11
    CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED = 12
    CUSOLVER_STATUS_IRS_PARAMS_INVALID = 13
    CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC = 14
    CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE = 15
    CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER = 16
    CUSOLVER_STATUS_IRS_INTERNAL_ERROR = 20
    CUSOLVER_STATUS_IRS_NOT_SUPPORTED = 21
    CUSOLVER_STATUS_IRS_OUT_OF_RANGE = 22
    CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES = 23
    CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED = 25
    CUSOLVER_STATUS_IRS_INFOS_NOT_DESTROYED = 26
    CUSOLVER_STATUS_IRS_MATRIX_SINGULAR = 30
    CUSOLVER_STATUS_INVALID_WORKSPACE = 31


_p, _i, _i64, _sz = c_void_p, c_int, c_int64, c_size_t

TABLE = {
    "cusolverDnCreate": (c_int, [POINTER(c_void_p)]),
    "cusolverDnDestroy": (c_int, [_p]),
    "cusolverDnSetStream": (c_int, [_p, _p]),
    "cusolverDnGetStream": (c_int, [_p, POINTER(c_void_p)]),
    # (CUDA 12.2+) mode: CUSOLVER_DETERMINISTIC_RESULTS = 1 (the default), CUSOLVER_ALLOW_NON_DETERMINISTIC_RESULTS = 2
    "cusolverDnSetDeterministicMode": (c_int, [_p, c_int]),
    "cusolverDnCreateParams": (c_int, [POINTER(c_void_p)]),
    "cusolverDnDestroyParams": (c_int, [_p]),
    # handle params m n dataTypeA A lda computeType *workspaceInBytesOnDevice *workspaceInBytesOnHost
    "cusolverDnXgetrf_bufferSize": (c_int, [_p, _p, _i64, _i64, _i, _p, _i64, _i, POINTER(_sz), POINTER(_sz)]),
    # handle params m n dataTypeA A lda ipiv computeType bufferOnDevice sizeOnDevice bufferOnHost sizeOnHost info
    "cusolverDnXgetrf": (c_int, [_p, _p, _i64, _i64, _i, _p, _i64, _p, _i, _p, _sz, _p, _sz, _p]),
    # handle params trans n nrhs dataTypeA A lda ipiv dataTypeB B ldb info
    "cusolverDnXgetrs": (c_int, [_p, _p, _i, _i64, _i64, _i, _p, _i64, _p, _i, _p, _i64, _p]),
    # handle params uplo n dataTypeA A lda computeType *workspaceInBytesOnDevice *workspaceInBytesOnHost
    "cusolverDnXpotrf_bufferSize": (c_int, [_p, _p, _i, _i64, _i, _p, _i64, _i, POINTER(_sz), POINTER(_sz)]),
    # handle params uplo n dataTypeA A lda computeType bufferOnDevice sizeOnDevice bufferOnHost sizeOnHost info
    "cusolverDnXpotrf": (c_int, [_p, _p, _i, _i64, _i, _p, _i64, _i, _p, _sz, _p, _sz, _p]),
    # handle params uplo n nrhs dataTypeA A lda dataTypeB B ldb info
    "cusolverDnXpotrs": (c_int, [_p, _p, _i, _i64, _i64, _i, _p, _i64, _i, _p, _i64, _p]),
    "cusolverGetProperty": (c_int, [_i, POINTER(c_int)]),
    "cusolverGetVersion": (c_int, [POINTER(c_int)]),
}
# batched Cholesky (legacy API): handle uplo n Aarray lda infoArray batchSize / handle uplo n nrhs A lda B ldb
# d_info batchSize
for _prec in "SDCZ":
    TABLE[f"cusolverDn{_prec}potrfBatched"] = (c_int, [_p, _i, _i, _p, _i, _p, _i])
    TABLE[f"cusolverDn{_prec}potrsBatched"] = (c_int, [_p, _i, _i, _i, _p, _i, _p, _i, _p, _i])
    __all__ += [f"cusolverDn{_prec}potrfBatched", f"cusolverDn{_prec}potrsBatched"]

_L = LazyFunctions("cusolver", TABLE)
check = make_checker(CUSOLVERError, cusolverStatus_t)


def raw(name: str):
    """The bound ctypes function ``name`` itself (returns the status; for hot paths that check it inline)."""
    return getattr(_L, name)


def _make_wrapper(cname: str, names: str):
    params = names.split()

    def wrapper(*args) -> None:
        if len(args) != len(params):
            raise TypeError(f"{cname}() takes {len(params)} arguments ({', '.join(params)}), {len(args)} given")
        s = getattr(_L, cname)(*args)
        if s:
            check(s)

    wrapper.__name__ = wrapper.__qualname__ = cname
    wrapper.__doc__ = f"{cname}({', '.join(params)}); raises CUSOLVERError on a failure status."
    return wrapper


# the functions that return nothing but their status: C name -> parameter names (the C header's)
_PLAIN = {
    "cusolverDnDestroy": "handle",
    "cusolverDnSetStream": "handle streamId",
    "cusolverDnSetDeterministicMode": "handle mode",
    "cusolverDnDestroyParams": "params",
    "cusolverDnXgetrf": "handle params m n dataTypeA A lda ipiv computeType bufferOnDevice workspaceInBytesOnDevice "
                        "bufferOnHost workspaceInBytesOnHost info",
    "cusolverDnXgetrs": "handle params trans n nrhs dataTypeA A lda ipiv dataTypeB B ldb info",
    "cusolverDnXpotrf": "handle params uplo n dataTypeA A lda computeType bufferOnDevice workspaceInBytesOnDevice "
                        "bufferOnHost workspaceInBytesOnHost info",
    "cusolverDnXpotrs": "handle params uplo n nrhs dataTypeA A lda dataTypeB B ldb info",
}
for _prec in "SDCZ":
    _PLAIN[f"cusolverDn{_prec}potrfBatched"] = "handle uplo n Aarray lda infoArray batchSize"
    _PLAIN[f"cusolverDn{_prec}potrsBatched"] = "handle uplo n nrhs A lda B ldb d_info batchSize"
for _cname, _names in _PLAIN.items():
    globals()[_cname] = _make_wrapper(_cname, _names)


# ---------------------------------------------------------------------------------------- with outputs


def _out(cname: str, ctype, *args):
    """Call ``cname(*args, &value)`` and return the value."""
    v = ctype()
    s = getattr(_L, cname)(*args, byref(v))
    if s:
        check(s)
    return v.value


def cusolverDnCreate() -> int:
    return _out("cusolverDnCreate", c_void_p) or 0


def cusolverDnGetStream(handle: int) -> int:
    return _out("cusolverDnGetStream", c_void_p, handle) or 0


def cusolverDnCreateParams() -> int:
    return _out("cusolverDnCreateParams", c_void_p) or 0


def _buffer_size(cname: str, *args) -> tuple[int, int]:
    dev, host = c_size_t(), c_size_t()
    s = getattr(_L, cname)(*args, byref(dev), byref(host))
    if s:
        check(s)
    return dev.value, host.value


def cusolverDnXgetrf_bufferSize(handle: int, params: int, m: int, n: int, dataTypeA: int, A: int, lda: int,
                                computeType: int) -> tuple[int, int]:
    """(workspaceInBytesOnDevice, workspaceInBytesOnHost) of cusolverDnXgetrf."""
    return _buffer_size("cusolverDnXgetrf_bufferSize", handle, params, m, n, dataTypeA, A, lda, computeType)


def cusolverDnXpotrf_bufferSize(handle: int, params: int, uplo: int, n: int, dataTypeA: int, A: int, lda: int,
                                computeType: int) -> tuple[int, int]:
    """(workspaceInBytesOnDevice, workspaceInBytesOnHost) of cusolverDnXpotrf."""
    return _buffer_size("cusolverDnXpotrf_bufferSize", handle, params, uplo, n, dataTypeA, A, lda, computeType)


# ------------------------------------------------------------------------------------------------ version


def cusolverGetProperty(type: int) -> int:
    """A libraryPropertyType value (MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL); needs no handle."""
    return _out("cusolverGetProperty", c_int, type)


def cusolverGetVersion() -> int:
    """CUSOLVER_VERSION of the loaded library (major * 1000 + minor * 100 + patch)."""
    return _out("cusolverGetVersion", c_int)
