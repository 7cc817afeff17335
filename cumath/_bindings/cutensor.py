"""ctypes binding of cuTENSOR 2.x (libcutensor.so.2), 1:1 with the C functions cumath's contractions use.

Enum values and signatures were read from ``cutensor.h`` and ``cutensor/types.h`` of the ``cutensor-cu13``
2.8.1 wheel (CUTENSOR_VERSION 20800; the library sits in ``site-packages/cutensor/lib``). Data types are
``cudaDataType_t`` values. The compute descriptors (``CUTENSOR_COMPUTE_DESC_32F`` ...) are exported constants
(pointers) read from the library with :func:`compute_descriptor`.

Nothing is loaded at import time. Handles, descriptors, plans and data are pointers (Python ints). Wrappers
return their outputs instead of taking out-pointers and raise ``CUTENSORError`` on a failure status.
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import POINTER, byref, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p

from ..errors import CUTENSORError
from ._loader import LazyFunctions, load_library
from ._status import make_checker

__all__ = [
    "CUTENSOR_VERSION", "TABLE", "Status", "Operator", "Algo", "WorksizePreference", "OperationDescriptorAttribute",
    "PlanPreferenceAttribute", "AutotuneMode", "JitMode", "CacheMode", "PlanAttribute", "DataType",
    "COMPUTE_DESCRIPTORS", "compute_descriptor", "check", "raw_function",
    "cutensorCreate", "cutensorDestroy", "cutensorHandleResizePlanCache", "cutensorHandleWritePlanCacheToFile",
    "cutensorHandleReadPlanCacheFromFile", "cutensorWriteKernelCacheToFile", "cutensorReadKernelCacheFromFile",
    "cutensorCreateTensorDescriptor", "cutensorDestroyTensorDescriptor", "cutensorCreateContraction",
    "cutensorCreateContractionTrinary", "cutensorCreatePermutation", "cutensorDestroyOperationDescriptor",
    "cutensorOperationDescriptorSetAttribute", "cutensorOperationDescriptorGetAttribute",
    "cutensorCreatePlanPreference", "cutensorDestroyPlanPreference", "cutensorPlanPreferenceSetAttribute",
    "cutensorPlanPreferenceGetAttribute", "cutensorEstimateWorkspaceSize", "cutensorCreatePlan",
    "cutensorDestroyPlan", "cutensorPlanGetAttribute", "cutensorContract", "cutensorContractTrinary",
    "cutensorPermute", "cutensorGetErrorString", "cutensorGetVersion", "cutensorGetCudartVersion",
]

CUTENSOR_VERSION = 20800  # of the header the values below were read from


class Status(enum.IntEnum):
    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 3
    INVALID_VALUE = 7
    ARCH_MISMATCH = 8
    MAPPING_ERROR = 11
    EXECUTION_FAILED = 13
    INTERNAL_ERROR = 14
    NOT_SUPPORTED = 15
    LICENSE_ERROR = 16
    CUBLAS_ERROR = 17
    CUDA_ERROR = 18
    INSUFFICIENT_WORKSPACE = 19
    INSUFFICIENT_DRIVER = 20
    IO_ERROR = 21


class Operator(enum.IntEnum):
    """cutensorOperator_t (unary operators applied on load, and the binary ones)."""

    OP_IDENTITY = 1
    OP_SQRT = 2
    OP_RELU = 8
    OP_CONJ = 9
    OP_RCP = 10
    OP_SIGMOID = 11
    OP_TANH = 12
    OP_EXP = 22
    OP_LOG = 23
    OP_ABS = 24
    OP_NEG = 25
    OP_SIN = 26
    OP_COS = 27
    OP_TAN = 28
    OP_SINH = 29
    OP_COSH = 30
    OP_ASIN = 31
    OP_ACOS = 32
    OP_ATAN = 33
    OP_ASINH = 34
    OP_ACOSH = 35
    OP_ATANH = 36
    OP_CEIL = 37
    OP_FLOOR = 38
    OP_MISH = 39
    OP_SWISH = 40
    OP_SOFT_PLUS = 41
    OP_SOFT_SIGN = 42
    OP_ADD = 3
    OP_MUL = 5
    OP_MAX = 6
    OP_MIN = 7
    OP_UNKNOWN = 126


class Algo(enum.IntEnum):
    DEFAULT_PATIENT = -6
    GETT = -4
    TGETT = -3
    TTGT = -2
    DEFAULT = -1


class WorksizePreference(enum.IntEnum):
    WORKSPACE_MIN = 1
    WORKSPACE_DEFAULT = 2
    WORKSPACE_MAX = 3


class OperationDescriptorAttribute(enum.IntEnum):
    TAG = 0
    SCALAR_TYPE = 1
    FLOPS = 2
    MOVED_BYTES = 3
    PADDING_LEFT = 4
    PADDING_RIGHT = 5
    PADDING_VALUE = 6
    BLOCKSPARSE_REPRODUCIBLE = 14


class PlanPreferenceAttribute(enum.IntEnum):
    AUTOTUNE_MODE = 0
    CACHE_MODE = 1
    INCREMENTAL_COUNT = 2
    ALGO = 3
    KERNEL_RANK = 4
    JIT = 5
    GPU_ARCH = 6


class AutotuneMode(enum.IntEnum):
    NONE = 0
    INCREMENTAL = 1


class JitMode(enum.IntEnum):
    NONE = 0
    DEFAULT = 1


class CacheMode(enum.IntEnum):
    NONE = 0
    PEDANTIC = 1


class PlanAttribute(enum.IntEnum):
    REQUIRED_WORKSPACE = 0


class DataType(enum.IntEnum):
    """The cudaDataType_t values cuTENSOR's contractions take (library_types.h)."""

    R_16F = 2
    C_16F = 6
    R_16BF = 14
    C_16BF = 15
    R_32F = 0
    C_32F = 4
    R_64F = 1
    C_64F = 5


#: the exported compute descriptors, by their short name
COMPUTE_DESCRIPTORS = ("16F", "16BF", "TF32", "3XTF32", "32F", "64F", "9X16BF", "8XINT8", "4X16F")

# attribute -> the C type of its value
PLAN_PREFERENCE_TYPES = {
    PlanPreferenceAttribute.AUTOTUNE_MODE: c_int32, PlanPreferenceAttribute.CACHE_MODE: c_int32,
    PlanPreferenceAttribute.INCREMENTAL_COUNT: c_int32, PlanPreferenceAttribute.ALGO: c_int32,
    PlanPreferenceAttribute.KERNEL_RANK: c_int32, PlanPreferenceAttribute.JIT: c_int32,
    PlanPreferenceAttribute.GPU_ARCH: c_int32,
}

_S = c_int32  # cutensorStatus_t
_P = c_void_p
TABLE = {
    "cutensorCreate": (_S, [POINTER(c_void_p)]),
    "cutensorDestroy": (_S, [_P]),
    "cutensorHandleResizePlanCache": (_S, [_P, c_uint32]),
    "cutensorHandleWritePlanCacheToFile": (_S, [_P, c_char_p]),
    "cutensorHandleReadPlanCacheFromFile": (_S, [_P, c_char_p, POINTER(c_uint32)]),
    "cutensorWriteKernelCacheToFile": (_S, [_P, c_char_p]),
    "cutensorReadKernelCacheFromFile": (_S, [_P, c_char_p]),
    "cutensorCreateTensorDescriptor": (_S, [_P, POINTER(c_void_p), c_uint32, POINTER(c_int64), POINTER(c_int64),
                                            c_int32, c_uint32]),
    "cutensorDestroyTensorDescriptor": (_S, [_P]),
    "cutensorCreateContraction": (_S, [_P, POINTER(c_void_p), _P, POINTER(c_int32), c_int32, _P, POINTER(c_int32),
                                       c_int32, _P, POINTER(c_int32), c_int32, _P, POINTER(c_int32), _P]),
    "cutensorCreateContractionTrinary": (_S, [_P, POINTER(c_void_p), _P, POINTER(c_int32), c_int32, _P,
                                              POINTER(c_int32), c_int32, _P, POINTER(c_int32), c_int32, _P,
                                              POINTER(c_int32), c_int32, _P, POINTER(c_int32), _P]),
    "cutensorCreatePermutation": (_S, [_P, POINTER(c_void_p), _P, POINTER(c_int32), c_int32, _P, POINTER(c_int32),
                                       _P]),
    "cutensorDestroyOperationDescriptor": (_S, [_P]),
    "cutensorOperationDescriptorSetAttribute": (_S, [_P, _P, c_int32, _P, c_size_t]),
    "cutensorOperationDescriptorGetAttribute": (_S, [_P, _P, c_int32, _P, c_size_t]),
    "cutensorCreatePlanPreference": (_S, [_P, POINTER(c_void_p), c_int32, c_int32]),
    "cutensorDestroyPlanPreference": (_S, [_P]),
    "cutensorPlanPreferenceSetAttribute": (_S, [_P, _P, c_int32, _P, c_size_t]),
    "cutensorPlanPreferenceGetAttribute": (_S, [_P, _P, c_int32, _P, c_size_t]),
    "cutensorEstimateWorkspaceSize": (_S, [_P, _P, _P, c_int32, POINTER(c_uint64)]),
    "cutensorCreatePlan": (_S, [_P, POINTER(c_void_p), _P, _P, c_uint64]),
    "cutensorDestroyPlan": (_S, [_P]),
    "cutensorPlanGetAttribute": (_S, [_P, _P, c_int32, _P, c_size_t]),
    "cutensorContract": (_S, [_P, _P, _P, _P, _P, _P, _P, _P, _P, c_uint64, _P]),
    "cutensorContractTrinary": (_S, [_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, c_uint64, _P]),
    "cutensorPermute": (_S, [_P, _P, _P, _P, _P, _P]),
    "cutensorGetErrorString": (c_char_p, [c_int32]),
    "cutensorGetVersion": (c_size_t, []),
    "cutensorGetCudartVersion": (c_size_t, []),
}

class _Functions(LazyFunctions):
    """libcutensor needs libcublasLt.so.13, which its RUNPATH finds only when both wheels share one
    site-packages folder: cuBLASLt is loaded first (globally) from wherever cumath's loader finds it."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        _preload_dependencies()
        return super().__getattr__(name)


def _preload_dependencies() -> None:
    try:
        load_library("cublasLt")
    except Exception:  # the library may still find it itself (RUNPATH, LD_LIBRARY_PATH)
        pass


_L = _Functions("cutensor", TABLE)
check = make_checker(CUTENSORError, Status)


def raw_function(name: str):
    """The typed ctypes function ``name`` of the table itself (it returns its status; ``check`` raises for it),
    for hot paths that build a faster caller over it (``cumath._core._fast.call_words``)."""
    return getattr(_L, name)


def _check(status: int, what: str | None = None) -> None:
    if status:
        check(status, what)


def _ints(ctype, values):
    values = list(values)
    return (ctype * max(1, len(values)))(*values)


def compute_descriptor(name: str) -> int:
    """The value of the exported constant ``CUTENSOR_COMPUTE_DESC_<name>`` (a pointer)."""
    if name not in COMPUTE_DESCRIPTORS:
        raise ValueError(f"compute descriptor {name!r} is not supported; the allowed values are "
                         f"{list(COMPUTE_DESCRIPTORS)}")
    _preload_dependencies()
    lib = load_library("cutensor")
    return c_void_p.in_dll(lib, f"CUTENSOR_COMPUTE_DESC_{name}").value or 0


# ---------------------------------------------------------------------------------------------- handle


def cutensorCreate() -> int:
    h = c_void_p()
    _check(_L.cutensorCreate(byref(h)))
    return h.value or 0


def cutensorDestroy(handle: int) -> None:
    _check(_L.cutensorDestroy(handle))


def cutensorHandleResizePlanCache(handle: int, num_entries: int) -> None:
    _check(_L.cutensorHandleResizePlanCache(handle, num_entries))


def cutensorHandleWritePlanCacheToFile(handle: int, filename: str) -> None:
    _check(_L.cutensorHandleWritePlanCacheToFile(handle, filename.encode()), f"writing {filename}")


def cutensorHandleReadPlanCacheFromFile(handle: int, filename: str) -> int:
    """Returns the number of cache lines read."""
    n = c_uint32()
    _check(_L.cutensorHandleReadPlanCacheFromFile(handle, filename.encode(), byref(n)), f"reading {filename}")
    return n.value


def cutensorWriteKernelCacheToFile(handle: int, filename: str) -> None:
    _check(_L.cutensorWriteKernelCacheToFile(handle, filename.encode()), f"writing {filename}")


def cutensorReadKernelCacheFromFile(handle: int, filename: str) -> None:
    _check(_L.cutensorReadKernelCacheFromFile(handle, filename.encode()), f"reading {filename}")


# ----------------------------------------------------------------------------------------- descriptors


def cutensorCreateTensorDescriptor(handle: int, extents, strides, data_type: int, alignment: int) -> int:
    d = c_void_p()
    n = len(extents)
    _check(_L.cutensorCreateTensorDescriptor(handle, byref(d), n, _ints(c_int64, extents), _ints(c_int64, strides),
                                             data_type, alignment))
    return d.value or 0


def cutensorDestroyTensorDescriptor(desc: int) -> None:
    _check(_L.cutensorDestroyTensorDescriptor(desc))


def cutensorCreateContraction(handle: int, desc_a: int, modes_a, op_a: int, desc_b: int, modes_b, op_b: int,
                              desc_c: int, modes_c, op_c: int, desc_d: int, modes_d, compute: int) -> int:
    d = c_void_p()
    _check(_L.cutensorCreateContraction(handle, byref(d), desc_a, _ints(c_int32, modes_a), op_a, desc_b,
                                        _ints(c_int32, modes_b), op_b, desc_c, _ints(c_int32, modes_c), op_c,
                                        desc_d, _ints(c_int32, modes_d), compute))
    return d.value or 0


def cutensorCreateContractionTrinary(handle: int, desc_a: int, modes_a, op_a: int, desc_b: int, modes_b, op_b: int,
                                     desc_c: int, modes_c, op_c: int, desc_d: int, modes_d, op_d: int, desc_e: int,
                                     modes_e, compute: int) -> int:
    d = c_void_p()
    _check(_L.cutensorCreateContractionTrinary(
        handle, byref(d), desc_a, _ints(c_int32, modes_a), op_a, desc_b, _ints(c_int32, modes_b), op_b, desc_c,
        _ints(c_int32, modes_c), op_c, desc_d, _ints(c_int32, modes_d), op_d, desc_e, _ints(c_int32, modes_e),
        compute))
    return d.value or 0


def cutensorCreatePermutation(handle: int, desc_a: int, modes_a, op_a: int, desc_b: int, modes_b,
                              compute: int) -> int:
    """The descriptor of ``B = alpha * op_a(A)`` with B's modes in any order (cutensorPermute runs it)."""
    d = c_void_p()
    _check(_L.cutensorCreatePermutation(handle, byref(d), desc_a, _ints(c_int32, modes_a), op_a, desc_b,
                                        _ints(c_int32, modes_b), compute))
    return d.value or 0


def cutensorDestroyOperationDescriptor(desc: int) -> None:
    _check(_L.cutensorDestroyOperationDescriptor(desc))


def cutensorOperationDescriptorSetAttribute(handle: int, desc: int, attr: int, value, ctype=c_int32) -> None:
    v = ctype(value)
    _check(_L.cutensorOperationDescriptorSetAttribute(handle, desc, attr, byref(v), ctypes.sizeof(v)))


def cutensorOperationDescriptorGetAttribute(handle: int, desc: int, attr: int, ctype=c_int32):
    v = ctype()
    _check(_L.cutensorOperationDescriptorGetAttribute(handle, desc, attr, byref(v), ctypes.sizeof(v)))
    return v.value


# ------------------------------------------------------------------------------------ plan preference


def cutensorCreatePlanPreference(handle: int, algo: int, jit_mode: int) -> int:
    p = c_void_p()
    _check(_L.cutensorCreatePlanPreference(handle, byref(p), algo, jit_mode))
    return p.value or 0


def cutensorDestroyPlanPreference(pref: int) -> None:
    _check(_L.cutensorDestroyPlanPreference(pref))


def cutensorPlanPreferenceSetAttribute(handle: int, pref: int, attr: int, value) -> None:
    v = PLAN_PREFERENCE_TYPES[PlanPreferenceAttribute(attr)](int(value))
    _check(_L.cutensorPlanPreferenceSetAttribute(handle, pref, attr, byref(v), ctypes.sizeof(v)),
           f"setting {PlanPreferenceAttribute(attr).name} to {value!r}")


def cutensorPlanPreferenceGetAttribute(handle: int, pref: int, attr: int) -> int:
    v = PLAN_PREFERENCE_TYPES[PlanPreferenceAttribute(attr)]()
    _check(_L.cutensorPlanPreferenceGetAttribute(handle, pref, attr, byref(v), ctypes.sizeof(v)))
    return v.value


# ------------------------------------------------------------------------------------------------ plans


def cutensorEstimateWorkspaceSize(handle: int, desc: int, pref: int, workspace_pref: int) -> int:
    n = c_uint64()
    _check(_L.cutensorEstimateWorkspaceSize(handle, desc, pref, workspace_pref, byref(n)))
    return n.value


def cutensorCreatePlan(handle: int, desc: int, pref: int, workspace_limit: int) -> int:
    p = c_void_p()
    _check(_L.cutensorCreatePlan(handle, byref(p), desc, pref, workspace_limit))
    return p.value or 0


def cutensorDestroyPlan(plan: int) -> None:
    _check(_L.cutensorDestroyPlan(plan))


def cutensorPlanGetAttribute(handle: int, plan: int, attr: int) -> int:
    v = c_uint64()
    _check(_L.cutensorPlanGetAttribute(handle, plan, attr, byref(v), ctypes.sizeof(v)))
    return v.value


def cutensorContract(handle: int, plan: int, alpha: int, a: int, b: int, beta: int, c: int, d: int,
                     workspace: int, workspace_size: int, stream: int) -> None:
    _check(_L.cutensorContract(handle, plan, alpha, a, b, beta, c, d, workspace, workspace_size, stream))


def cutensorContractTrinary(handle: int, plan: int, alpha: int, a: int, b: int, c: int, beta: int, d: int, e: int,
                            workspace: int, workspace_size: int, stream: int) -> None:
    _check(_L.cutensorContractTrinary(handle, plan, alpha, a, b, c, beta, d, e, workspace, workspace_size, stream))


def cutensorPermute(handle: int, plan: int, alpha: int, a: int, b: int, stream: int) -> None:
    """``B = alpha * op_a(A)``: ``alpha`` a host pointer of the descriptor's scalar type; no workspace."""
    _check(_L.cutensorPermute(handle, plan, alpha, a, b, stream))


# ---------------------------------------------------------------------------------------------- version


def cutensorGetErrorString(status: int) -> str:
    s = _L.cutensorGetErrorString(status)
    return s.decode(errors="replace") if s else ""


def cutensorGetVersion() -> int:
    return int(_L.cutensorGetVersion())


def cutensorGetCudartVersion() -> int:
    return int(_L.cutensorGetCudartVersion())
