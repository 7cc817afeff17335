"""ctypes bindings of cuBLASMp (libcublasmp), 1:1 with the C functions cumath uses.

Signatures and enum values were read from ``cublasmp.h`` of the ``nvidia-cublasmp-cu13`` 0.10.0 wheel
(CUBLASMP_VERSION 1000). Grids are made from an NCCL communicator (``ncclComm_t``, an int here); matrices are
ScaLAPACK-style 2-D block-cyclic descriptors of each rank's column-major local part. ``cublasOperation_t``,
``cublasComputeType_t`` and ``cudaDataType_t`` are the cuBLAS / CUDA runtime enums (``cublaslt_types``,
``cudart``).

Nothing is loaded at import time. Handles, grids, descriptors, pointers and streams are Python ints; scalars
(``alpha``, ``beta``) are host addresses of values of the scale type. Wrappers return their outputs and raise
``CUBLASMpError`` on a failure status.
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint32, c_void_p, sizeof

from ..errors import CUBLASMpError
from . import nccl
from ._loader import LazyFunctions

__all__ = ["CUBLASMP_VERSION", "TABLE", "Status", "GridLayout", "MatmulDescriptorAttribute", "MatmulAlgoType",
           "MatmulEpilogue", "ATTRIBUTE_TYPES", "check", "cublasMpCreate", "cublasMpDestroy", "cublasMpSetStream",
           "cublasMpGetVersion", "cublasMpGridCreate", "cublasMpGridDestroy", "cublasMpBufferRegister",
           "cublasMpBufferDeregister", "cublasMpMatrixDescriptorCreate",
           "cublasMpMatrixDescriptorDestroy", "cublasMpMatmulDescriptorCreate", "cublasMpMatmulDescriptorDestroy",
           "cublasMpMatmulDescriptorSetAttribute", "cublasMpMatmul_bufferSize", "cublasMpMatmul",
           "cublasMpGemm_bufferSize", "cublasMpGemm", "cublasMpNumroc", "cublasMpGetStatusString"]

CUBLASMP_VERSION = 1000  # of the header the values below were read from (0.10.0)


class Status(enum.IntEnum):
    """cublasMpStatus_t."""

    CUBLASMP_STATUS_SUCCESS = 0
    CUBLASMP_STATUS_NOT_INITIALIZED = 1
    CUBLASMP_STATUS_ALLOCATION_FAILED = 2
    CUBLASMP_STATUS_INVALID_VALUE = 3
    CUBLASMP_STATUS_ARCHITECTURE_MISMATCH = 4
    CUBLASMP_STATUS_EXECUTION_FAILED = 5
    CUBLASMP_STATUS_INTERNAL_ERROR = 6
    CUBLASMP_STATUS_NOT_SUPPORTED = 7


class GridLayout(enum.IntEnum):
    """cublasMpGridLayout_t: how ranks are numbered on the grid."""

    COL_MAJOR = 0
    ROW_MAJOR = 1


class MatmulDescriptorAttribute(enum.IntEnum):
    """cublasMpMatmulDescriptorAttribute_t (the first ones; the scale and FP8 attributes are not used)."""

    TRANSA = 0
    TRANSB = 1
    COMPUTE_TYPE = 2
    ALGO_TYPE = 3
    COMMUNICATION_SM_COUNT = 4
    EPILOGUE = 5
    BIAS_POINTER = 6
    BIAS_BATCH_STRIDE = 7
    BIAS_DATA_TYPE = 8
    EPILOGUE_AUX_POINTER = 9
    EPILOGUE_AUX_LD = 10
    EPILOGUE_AUX_BATCH_STRIDE = 11
    EPILOGUE_AUX_DATA_TYPE = 12
    COMMUNICATION_TYPE = 27
    BIAS_RESULT_SCHEME = 28


#: the C type of each attribute's value (enums are C ints)
ATTRIBUTE_TYPES = {
    MatmulDescriptorAttribute.TRANSA: c_int32, MatmulDescriptorAttribute.TRANSB: c_int32,
    MatmulDescriptorAttribute.COMPUTE_TYPE: c_int32, MatmulDescriptorAttribute.ALGO_TYPE: c_int32,
    MatmulDescriptorAttribute.COMMUNICATION_SM_COUNT: c_int32, MatmulDescriptorAttribute.EPILOGUE: c_int32,
    MatmulDescriptorAttribute.BIAS_POINTER: c_void_p, MatmulDescriptorAttribute.BIAS_BATCH_STRIDE: c_int64,
    MatmulDescriptorAttribute.BIAS_DATA_TYPE: c_int32, MatmulDescriptorAttribute.EPILOGUE_AUX_POINTER: c_void_p,
    MatmulDescriptorAttribute.EPILOGUE_AUX_LD: c_int64, MatmulDescriptorAttribute.EPILOGUE_AUX_BATCH_STRIDE: c_int64,
    MatmulDescriptorAttribute.EPILOGUE_AUX_DATA_TYPE: c_int32, MatmulDescriptorAttribute.COMMUNICATION_TYPE: c_int32,
    MatmulDescriptorAttribute.BIAS_RESULT_SCHEME: c_int32,
}


class MatmulAlgoType(enum.IntEnum):
    """cublasMpMatmulAlgoType_t (a hint: cuBLASMp falls back to DEFAULT where it cannot)."""

    DEFAULT = 0
    SPLIT_P2P = 1
    SPLIT_MULTICAST = 2
    ATOMIC_P2P = 3
    ATOMIC_MULTICAST = 4
    NO_OVERLAP = 5
    FUSED = 6


class MatmulEpilogue(enum.IntEnum):
    """cublasMpMatmulEpilogue_t."""

    DEFAULT = 0
    ALLREDUCE = 1
    RELU = 2
    RELU_AUX = 2 | 128
    BIAS = 4
    RELU_BIAS = 2 | 4
    RELU_AUX_BIAS = 2 | 128 | 4
    DRELU = 8 | 128
    DRELU_BGRAD = 8 | 128 | 16
    GELU = 32
    GELU_AUX = 32 | 128
    GELU_BIAS = 32 | 4
    GELU_AUX_BIAS = 32 | 128 | 4
    DGELU = 64 | 128
    DGELU_BGRAD = 64 | 128 | 16
    BGRADA = 256
    BGRADB = 512


_p_void = POINTER(c_void_p)
_p_size = POINTER(c_size_t)
_i64 = c_int64

# the (pointer, ia, ja, desc) quadruple of one matrix operand
_MAT = [c_void_p, _i64, _i64, c_void_p]

TABLE = {
    "cublasMpCreate": (c_int, [_p_void, c_void_p]),
    "cublasMpDestroy": (c_int, [c_void_p]),
    "cublasMpSetStream": (c_int, [c_void_p, c_void_p]),
    "cublasMpGetVersion": (c_int, [POINTER(c_int)]),
    # nprow, npcol, layout, comm, grid
    "cublasMpGridCreate": (c_int, [_i64, _i64, c_int, c_void_p, _p_void]),
    "cublasMpGridDestroy": (c_int, [c_void_p]),
    # grid, ptr, size (a buffer of ncclMemAlloc or the CUDA VMM APIs)
    "cublasMpBufferRegister": (c_int, [c_void_p, c_void_p, c_size_t]),
    "cublasMpBufferDeregister": (c_int, [c_void_p, c_void_p]),
    # m, n, mb, nb, rsrc, csrc, lld, type, grid, desc
    "cublasMpMatrixDescriptorCreate": (c_int, [_i64, _i64, _i64, _i64, _i64, _i64, _i64, c_int, c_void_p, _p_void]),
    "cublasMpMatrixDescriptorDestroy": (c_int, [c_void_p]),
    "cublasMpMatmulDescriptorCreate": (c_int, [_p_void, c_int]),
    "cublasMpMatmulDescriptorDestroy": (c_int, [c_void_p]),
    "cublasMpMatmulDescriptorSetAttribute": (c_int, [c_void_p, c_int, c_void_p, c_size_t]),
    # handle, matmulDesc, m, n, k, alpha, A..., B..., beta, C..., D..., dwork size out, hwork size out
    "cublasMpMatmul_bufferSize": (c_int, [c_void_p, c_void_p, _i64, _i64, _i64, c_void_p, *_MAT, *_MAT, c_void_p,
                                          *_MAT, *_MAT, _p_size, _p_size]),
    # ..., d_work, dwork size, h_work, hwork size
    "cublasMpMatmul": (c_int, [c_void_p, c_void_p, _i64, _i64, _i64, c_void_p, *_MAT, *_MAT, c_void_p, *_MAT,
                               *_MAT, c_void_p, c_size_t, c_void_p, c_size_t]),
    # handle, transA, transB, m, n, k, alpha, A..., B..., beta, C..., computeType, sizes out
    "cublasMpGemm_bufferSize": (c_int, [c_void_p, c_int, c_int, _i64, _i64, _i64, c_void_p, *_MAT, *_MAT, c_void_p,
                                        *_MAT, c_int, _p_size, _p_size]),
    "cublasMpGemm": (c_int, [c_void_p, c_int, c_int, _i64, _i64, _i64, c_void_p, *_MAT, *_MAT, c_void_p, *_MAT,
                             c_int, c_void_p, c_size_t, c_void_p, c_size_t]),
    "cublasMpNumroc": (_i64, [_i64, _i64, c_uint32, c_uint32, c_uint32]),
    "cublasMpGetStatusString": (c_char_p, [c_int]),
}

# libcublasmp needs cuBLAS, cuBLASLt and NCCL: loaded first (its RPATH only covers wheels in one site folder)
_L = LazyFunctions("cublasmp", TABLE, depends=("cudart", "cublasLt", "cublas", "nccl"),
                   check=lambda: nccl.require("cuBLASMp"))
_NAMES = {int(m): m.name for m in Status}


def check(status: int, detail: str | None = None) -> None:
    if status == 0:
        return
    words = [detail] if detail else []
    try:
        text = _L.cublasMpGetStatusString(status)
        if text:
            words.insert(0, text.decode(errors="replace"))
    except (AttributeError, OSError):
        pass
    raise CUBLASMpError(status, _NAMES.get(int(status)), "; ".join(words) or None)


def _out(fn, *args) -> int:
    obj = c_void_p()
    check(fn(*args, byref(obj)))
    return obj.value or 0


def cublasMpCreate(stream: int) -> int:
    obj = c_void_p()
    check(_L.cublasMpCreate(byref(obj), stream))
    return obj.value or 0


def cublasMpDestroy(handle: int) -> None:
    check(_L.cublasMpDestroy(handle))


def cublasMpSetStream(handle: int, stream: int) -> None:
    check(_L.cublasMpSetStream(handle, stream))


def cublasMpGetVersion() -> int:
    v = c_int(0)
    check(_L.cublasMpGetVersion(byref(v)))
    return v.value


def cublasMpGridCreate(nprow: int, npcol: int, layout: int, comm: int) -> int:
    """A process grid of ``nprow x npcol`` ranks of NCCL communicator ``comm`` (collective)."""
    return _out(_L.cublasMpGridCreate, nprow, npcol, int(layout), comm)


def cublasMpGridDestroy(grid: int) -> None:
    check(_L.cublasMpGridDestroy(grid))


def cublasMpBufferRegister(grid: int, ptr: int, size: int) -> None:
    """Register a workspace with the grid's NCCL symmetric memory (collective): what the overlapping
    AllGather+GEMM, GEMM+ReduceScatter and GEMM+AllReduce algorithms need."""
    check(_L.cublasMpBufferRegister(grid, ptr, size), f"registering a {size}-byte workspace")


def cublasMpBufferDeregister(grid: int, ptr: int) -> None:
    check(_L.cublasMpBufferDeregister(grid, ptr))


def cublasMpMatrixDescriptorCreate(m: int, n: int, mb: int, nb: int, rsrc: int, csrc: int, lld: int, dtype: int,
                                   grid: int) -> int:
    return _out(_L.cublasMpMatrixDescriptorCreate, m, n, mb, nb, rsrc, csrc, lld, int(dtype), grid)


def cublasMpMatrixDescriptorDestroy(desc: int) -> None:
    check(_L.cublasMpMatrixDescriptorDestroy(desc))


def cublasMpMatmulDescriptorCreate(compute_type: int) -> int:
    obj = c_void_p()
    check(_L.cublasMpMatmulDescriptorCreate(byref(obj), int(compute_type)))
    return obj.value or 0


def cublasMpMatmulDescriptorDestroy(desc: int) -> None:
    check(_L.cublasMpMatmulDescriptorDestroy(desc))


def cublasMpMatmulDescriptorSetAttribute(desc: int, attr: int, value) -> None:
    """Set ``attr`` to ``value`` (a Python number or pointer), typed from ``ATTRIBUTE_TYPES``."""
    ctype = ATTRIBUTE_TYPES[MatmulDescriptorAttribute(attr)]
    v = ctype(int(value))
    check(_L.cublasMpMatmulDescriptorSetAttribute(desc, int(attr), byref(v), sizeof(v)),
          f"setting {MatmulDescriptorAttribute(attr).name} to {value}")


def _mats(*mats):
    """Flatten (ptr, ia, ja, desc) quadruples into the argument list."""
    args = []
    for mat in mats:
        args.extend(mat)
    return args


def cublasMpMatmul_bufferSize(handle: int, desc: int, m: int, n: int, k: int, alpha: int, a, b, beta: int, c,
                              d) -> tuple[int, int]:
    """(device bytes, host bytes) of the workspace of ``cublasMpMatmul``; ``a``..``d`` are (ptr, i, j, desc)."""
    dev, host = c_size_t(0), c_size_t(0)
    check(_L.cublasMpMatmul_bufferSize(handle, desc, m, n, k, alpha, *_mats(a, b), beta, *_mats(c, d), byref(dev),
                                       byref(host)), f"workspace query of a {m}x{n}x{k} product")
    return dev.value, host.value


def cublasMpMatmul(handle: int, desc: int, m: int, n: int, k: int, alpha: int, a, b, beta: int, c, d,
                   d_work: int, d_size: int, h_work: int, h_size: int) -> None:
    """D = epilogue(alpha op(A) op(B) + beta C), stream-ordered on the handle's stream."""
    check(_L.cublasMpMatmul(handle, desc, m, n, k, alpha, *_mats(a, b), beta, *_mats(c, d), d_work, d_size, h_work,
                            h_size), f"a {m}x{n}x{k} product")


def cublasMpGemm_bufferSize(handle: int, trans_a: int, trans_b: int, m: int, n: int, k: int, alpha: int, a, b,
                            beta: int, c, compute_type: int) -> tuple[int, int]:
    dev, host = c_size_t(0), c_size_t(0)
    check(_L.cublasMpGemm_bufferSize(handle, int(trans_a), int(trans_b), m, n, k, alpha, *_mats(a, b), beta,
                                     *_mats(c), int(compute_type), byref(dev), byref(host)))
    return dev.value, host.value


def cublasMpGemm(handle: int, trans_a: int, trans_b: int, m: int, n: int, k: int, alpha: int, a, b, beta: int, c,
                 compute_type: int, d_work: int, d_size: int, h_work: int, h_size: int) -> None:
    """C = alpha op(A) op(B) + beta C (C written in place)."""
    check(_L.cublasMpGemm(handle, int(trans_a), int(trans_b), m, n, k, alpha, *_mats(a, b), beta, *_mats(c),
                          int(compute_type), d_work, d_size, h_work, h_size), f"a {m}x{n}x{k} GEMM")


def cublasMpNumroc(n: int, nb: int, iproc: int, isrcproc: int, nprocs: int) -> int:
    return int(_L.cublasMpNumroc(n, nb, iproc, isrcproc, nprocs))


def cublasMpGetStatusString(status: int) -> str:
    text = _L.cublasMpGetStatusString(status)
    return text.decode(errors="replace") if text else ""
