"""ctypes bindings of cuSPARSE's generic API (libcusparse), 1:1 with the C functions of ``cusparse.h``.

Enum values and signatures were read from ``cusparse.h`` of the ``nvidia-cusparse`` wheel (CUSPARSE_VERSION
12.9.4, in ``nvidia/cu13/include``); the generic API used here is the same in the cuSPARSE 12.6 of CUDA 13.
``cudaDataType`` comes from ``cudart``. Descriptors, handles, buffers and streams are pointers (Python ints);
wrappers return what the C function writes through its out-pointer and raise ``CUSPARSEError`` on a failure
status. Nothing is loaded at import time.
"""

from __future__ import annotations

import enum
from ctypes import byref, c_int, c_int64, c_size_t, c_void_p

from ..errors import CUSPARSEError
from ._loader import LazyFunctions
from ._status import make_checker
from .cudart import cudaDataType

__all__ = ["Status", "Operation", "IndexType", "IndexBase", "Order", "SpMMAlg", "SpMVAlg", "PointerMode", "TABLE",
           "check", "cudaDataType", "INDEX_TYPES", "cusparseCreate", "cusparseDestroy", "cusparseSetStream",
           "cusparseGetVersion", "cusparseCreateCsr", "cusparseCreateCsc", "cusparseCreateCoo", "cusparseCreateBsr",
           "cusparseDestroySpMat", "cusparseCreateDnMat", "cusparseDestroyDnMat", "cusparseCreateDnVec",
           "cusparseDestroyDnVec", "cusparseSpMatSetValues", "cusparseDnMatSetValues", "cusparseDnVecSetValues",
           "cusparseCsrSetStridedBatch", "cusparseDnMatSetStridedBatch", "cusparseSpMM_bufferSize",
           "cusparseSpMM_preprocess", "cusparseSpMM", "cusparseSpMV_bufferSize", "cusparseSpMV"]


class Status(enum.IntEnum):
    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 2
    INVALID_VALUE = 3
    ARCH_MISMATCH = 4
    MAPPING_ERROR = 5
    EXECUTION_FAILED = 6
    INTERNAL_ERROR = 7
    MATRIX_TYPE_NOT_SUPPORTED = 8
    ZERO_PIVOT = 9
    NOT_SUPPORTED = 10
    INSUFFICIENT_RESOURCES = 11


class PointerMode(enum.IntEnum):
    HOST = 0
    DEVICE = 1


class IndexBase(enum.IntEnum):
    ZERO = 0
    ONE = 1


class Operation(enum.IntEnum):
    NON_TRANSPOSE = 0
    TRANSPOSE = 1
    CONJUGATE_TRANSPOSE = 2


class Order(enum.IntEnum):
    COL = 1
    ROW = 2


class IndexType(enum.IntEnum):
    INDEX_16U = 1
    INDEX_32I = 2
    INDEX_64I = 3


class SpMVAlg(enum.IntEnum):
    DEFAULT = 0
    COO_ALG1 = 1
    CSR_ALG1 = 2
    CSR_ALG2 = 3
    COO_ALG2 = 4
    SELL_ALG1 = 5
    BSR_ALG1 = 6


class SpMMAlg(enum.IntEnum):
    DEFAULT = 0
    COO_ALG1 = 1
    COO_ALG2 = 2
    COO_ALG3 = 3
    CSR_ALG1 = 4
    COO_ALG4 = 5
    CSR_ALG2 = 6
    CSR_ALG3 = 12
    BLOCKED_ELL_ALG1 = 13
    BSR_ALG1 = 14


INDEX_TYPES = {"int32": IndexType.INDEX_32I, "int64": IndexType.INDEX_64I}

_p, _i, _i64 = c_void_p, c_int, c_int64
TABLE = {
    "cusparseCreate": (_i, [_p]),
    "cusparseDestroy": (_i, [_p]),
    "cusparseSetStream": (_i, [_p, _p]),
    "cusparseGetVersion": (_i, [_p, _p]),
    "cusparseSetPointerMode": (_i, [_p, _i]),
    # descr*, rows, cols, nnz, offsets, ind, values, offsetsType, indType, base, valueType
    "cusparseCreateCsr": (_i, [_p, _i64, _i64, _i64, _p, _p, _p, _i, _i, _i, _i]),
    "cusparseCreateCsc": (_i, [_p, _i64, _i64, _i64, _p, _p, _p, _i, _i, _i, _i]),
    # descr*, rows, cols, nnz, rowInd, colInd, values, idxType, base, valueType
    "cusparseCreateCoo": (_i, [_p, _i64, _i64, _i64, _p, _p, _p, _i, _i, _i]),
    # descr*, brows, bcols, bnnz, rowBlockSize, colBlockSize, offsets, colInd, values, offType, indType, base,
    # valueType, order
    "cusparseCreateBsr": (_i, [_p, _i64, _i64, _i64, _i64, _i64, _p, _p, _p, _i, _i, _i, _i, _i]),
    "cusparseDestroySpMat": (_i, [_p]),
    "cusparseSpMatSetValues": (_i, [_p, _p]),
    "cusparseCsrSetStridedBatch": (_i, [_p, _i, _i64, _i64]),
    # descr*, rows, cols, ld, values, valueType, order
    "cusparseCreateDnMat": (_i, [_p, _i64, _i64, _i64, _p, _i, _i]),
    "cusparseDestroyDnMat": (_i, [_p]),
    "cusparseDnMatSetValues": (_i, [_p, _p]),
    "cusparseDnMatSetStridedBatch": (_i, [_p, _i, _i64]),
    # descr*, size, values, valueType
    "cusparseCreateDnVec": (_i, [_p, _i64, _p, _i]),
    "cusparseDestroyDnVec": (_i, [_p]),
    "cusparseDnVecSetValues": (_i, [_p, _p]),
    # handle, opA, opB, alpha*, matA, matB, beta*, matC, computeType, alg, bufferSize* | buffer
    "cusparseSpMM_bufferSize": (_i, [_p, _i, _i, _p, _p, _p, _p, _p, _i, _i, _p]),
    "cusparseSpMM_preprocess": (_i, [_p, _i, _i, _p, _p, _p, _p, _p, _i, _i, _p]),
    "cusparseSpMM": (_i, [_p, _i, _i, _p, _p, _p, _p, _p, _i, _i, _p]),
    # handle, opA, alpha*, matA, vecX, beta*, vecY, computeType, alg, bufferSize* | buffer
    "cusparseSpMV_bufferSize": (_i, [_p, _i, _p, _p, _p, _p, _p, _i, _i, _p]),
    "cusparseSpMV": (_i, [_p, _i, _p, _p, _p, _p, _p, _i, _i, _p]),
}

_L = LazyFunctions("cusparse", TABLE)
check = make_checker(CUSPARSEError, Status)


def _out(fn, name, *args) -> int:
    h = c_void_p()
    check(fn(byref(h), *args), name)
    return h.value


def cusparseCreate() -> int:
    return _out(_L.cusparseCreate, "cusparseCreate")


def cusparseDestroy(handle: int) -> None:
    check(_L.cusparseDestroy(handle), "cusparseDestroy")


def cusparseSetStream(handle: int, stream: int) -> None:
    check(_L.cusparseSetStream(handle, stream), "cusparseSetStream")


def cusparseGetVersion(handle: int) -> int:
    v = c_int()
    check(_L.cusparseGetVersion(handle, byref(v)), "cusparseGetVersion")
    return v.value


def cusparseCreateCsr(rows, cols, nnz, offsets, ind, values, offsets_type, ind_type, base, value_type) -> int:
    return _out(_L.cusparseCreateCsr, "cusparseCreateCsr", rows, cols, nnz, offsets, ind, values, offsets_type,
                ind_type, base, value_type)


def cusparseCreateCsc(rows, cols, nnz, offsets, ind, values, offsets_type, ind_type, base, value_type) -> int:
    return _out(_L.cusparseCreateCsc, "cusparseCreateCsc", rows, cols, nnz, offsets, ind, values, offsets_type,
                ind_type, base, value_type)


def cusparseCreateCoo(rows, cols, nnz, row_ind, col_ind, values, idx_type, base, value_type) -> int:
    return _out(_L.cusparseCreateCoo, "cusparseCreateCoo", rows, cols, nnz, row_ind, col_ind, values, idx_type,
                base, value_type)


def cusparseCreateBsr(brows, bcols, bnnz, row_block, col_block, offsets, ind, values, offsets_type, ind_type, base,
                      value_type, order) -> int:
    return _out(_L.cusparseCreateBsr, "cusparseCreateBsr", brows, bcols, bnnz, row_block, col_block, offsets, ind,
                values, offsets_type, ind_type, base, value_type, order)


def cusparseDestroySpMat(descr: int) -> None:
    check(_L.cusparseDestroySpMat(descr), "cusparseDestroySpMat")


def cusparseSpMatSetValues(descr: int, values: int) -> None:
    check(_L.cusparseSpMatSetValues(descr, values), "cusparseSpMatSetValues")


def cusparseCsrSetStridedBatch(descr: int, count: int, offsets_stride: int, values_stride: int) -> None:
    check(_L.cusparseCsrSetStridedBatch(descr, count, offsets_stride, values_stride), "cusparseCsrSetStridedBatch")


def cusparseCreateDnMat(rows, cols, ld, values, value_type, order) -> int:
    return _out(_L.cusparseCreateDnMat, "cusparseCreateDnMat", rows, cols, ld, values, value_type, order)


def cusparseDestroyDnMat(descr: int) -> None:
    check(_L.cusparseDestroyDnMat(descr), "cusparseDestroyDnMat")


def cusparseDnMatSetValues(descr: int, values: int) -> None:
    check(_L.cusparseDnMatSetValues(descr, values), "cusparseDnMatSetValues")


def cusparseDnMatSetStridedBatch(descr: int, count: int, stride: int) -> None:
    check(_L.cusparseDnMatSetStridedBatch(descr, count, stride), "cusparseDnMatSetStridedBatch")


def cusparseCreateDnVec(size, values, value_type) -> int:
    return _out(_L.cusparseCreateDnVec, "cusparseCreateDnVec", size, values, value_type)


def cusparseDestroyDnVec(descr: int) -> None:
    check(_L.cusparseDestroyDnVec(descr), "cusparseDestroyDnVec")


def cusparseDnVecSetValues(descr: int, values: int) -> None:
    check(_L.cusparseDnVecSetValues(descr, values), "cusparseDnVecSetValues")


def cusparseSpMM_bufferSize(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg) -> int:
    size = c_size_t()
    check(_L.cusparseSpMM_bufferSize(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg, byref(size)),
          "cusparseSpMM_bufferSize")
    return size.value


def cusparseSpMM_preprocess(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg, buffer) -> None:
    check(_L.cusparseSpMM_preprocess(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg, buffer),
          "cusparseSpMM_preprocess")


def cusparseSpMM(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg, buffer) -> None:
    check(_L.cusparseSpMM(handle, op_a, op_b, alpha, a, b, beta, c, compute_type, alg, buffer), "cusparseSpMM")


def cusparseSpMV_bufferSize(handle, op_a, alpha, a, x, beta, y, compute_type, alg) -> int:
    size = c_size_t()
    check(_L.cusparseSpMV_bufferSize(handle, op_a, alpha, a, x, beta, y, compute_type, alg, byref(size)),
          "cusparseSpMV_bufferSize")
    return size.value


def cusparseSpMV(handle, op_a, alpha, a, x, beta, y, compute_type, alg, buffer) -> None:
    check(_L.cusparseSpMV(handle, op_a, alpha, a, x, beta, y, compute_type, alg, buffer), "cusparseSpMV")
