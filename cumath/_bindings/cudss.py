"""ctypes bindings of cuDSS (libcudss), 1:1 with the C functions of ``cudss.h``.

Enum values and signatures were read from ``cudss.h`` and ``cudss_data_types.h`` of the ``nvidia-cudss-cu13``
1.0.0.35 wheel (CUDSS_VERSION 10000). ``cudaDataType`` and ``libraryPropertyType`` come from ``cudart``.

Nothing is loaded at import time: the functions of ``TABLE`` are bound on the first call of any wrapper.
Handles, configs, data objects and matrices are pointers (Python ints); so are array and stream arguments.
Wrappers return their outputs instead of taking out-pointers and raise ``CUDSSError`` on a failure status.
``cudssConfigSet``/``cudssConfigGet`` take the parameter's value as a Python number: the C type of each
parameter is in ``CONFIG_TYPES`` (from the documentation of ``cudssConfigParam_t``).
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import POINTER, byref, c_char_p, c_double, c_int, c_int32, c_int64, c_size_t, c_void_p

from ..errors import CUDSSError
from ._loader import LazyFunctions
from ._status import make_checker
from .cudart import cudaDataType, libraryPropertyType

__all__ = [
    "CUDSS_VERSION", "TABLE", "check", "cudaDataType", "libraryPropertyType",
    "Status", "ConfigParam", "DataParam", "Phase", "MatrixType", "MatrixViewType", "IndexBase", "Layout",
    "ReorderingAlg", "FactorizationAlg", "PivotEpsilonAlg", "SolveAlg", "MatchingAlg", "PivotType",
    "MatrixFormat", "SolveMode", "MemoryEstimateState", "DowncastFactorsMode", "MemoryOptimizationFlags",
    "CONFIG_TYPES", "DATA_TYPES", "MEMORY_ESTIMATES_COUNT",
    "cudssConfigSet", "cudssConfigGet", "cudssDataSet", "cudssDataGet", "cudssExecute", "cudssSetStream",
    "cudssSetThreadingLayer", "cudssSetJitCacheDir", "cudssConfigCreate", "cudssConfigDestroy",
    "cudssDataCreate", "cudssDataDestroy", "cudssCreate", "cudssDestroy", "cudssGetProperty",
    "cudssMatrixCreateDn", "cudssMatrixCreateCsr", "cudssMatrixCreateBatchDn", "cudssMatrixCreateBatchCsr",
    "cudssMatrixDestroy", "cudssMatrixSetValues", "cudssMatrixSetCsrPointers", "cudssMatrixSetBatchValues",
    "cudssMatrixSetBatchCsrPointers", "cudssMatrixGetFormat",
]

CUDSS_VERSION = 10000  # of the header the values below were read from


def _enum(name: str, members: str, flag: bool = False) -> type[enum.IntEnum]:
    """A C enum from its members in the header's order: ``"A B=5 C"`` numbers them as C does (C is 6)."""
    pairs, value = [], 0
    for word in members.split():
        key, _, given = word.partition("=")
        value = int(given, 0) if given else value
        pairs.append((key, value))
        value += 1
    return (enum.IntFlag if flag else enum.IntEnum)(name, pairs, module=__name__)


# cudss_data_types.h, in the header's order (cudssStatus_t, cudssConfigParam_t, ...)
Status = _enum("Status", "SUCCESS NOT_INITIALIZED ALLOC_FAILED INVALID_VALUE NOT_SUPPORTED EXECUTION_FAILED "
                         "INTERNAL_ERROR IR_FAILED")
ConfigParam = _enum("ConfigParam", """
    REORDERING_ALG FACTORIZATION_ALG SOLVE_ALG MATCHING_ALG SOLVE_MODE IR_N_STEPS IR_TOL PIVOT_TYPE PIVOT_THRESHOLD
    PIVOT_EPSILON MAX_LU_NNZ HYBRID_MEMORY_MODE HYBRID_DEVICE_MEMORY_LIMIT USE_CUDA_REGISTER_MEMORY HOST_NTHREADS
    HYBRID_EXECUTE_MODE PIVOT_EPSILON_ALG ND_NLEVELS UBATCH_SIZE UBATCH_INDEX USE_SUPERPANELS DEVICE_COUNT
    DEVICE_INDICES SCHUR_MODE DETERMINISTIC_MODE ND_UBFACTOR EMULATION_MANTISSA_BIT_COUNT FORCE_NONSYMMETRIC_MATCHING
    DOWNCAST_FACTORS MEMORY_OPTIMIZATION_SETTING""")
DataParam = _enum("DataParam", """
    INFO LU_NNZ NPIVOTS INERTIA PERM_REORDER_ROW PERM_REORDER_COL PERM_ROW PERM_COL DIAG USER_PERM
    HYBRID_DEVICE_MEMORY_MIN COMM_DEVICE COMM_HOST MEMORY_ESTIMATES PERM_MATCHING SCALE_ROW SCALE_COL NSUPERPANELS
    USER_SCHUR_INDICES SCHUR_SHAPE SCHUR_MATRIX USER_ND_PARTITION_TREE ND_PARTITION_TREE USER_HOST_INTERRUPT
    IR_N_STEPS UBATCH_MASK FLOPS""")
Phase = _enum("Phase", "REORDERING=1 SYMBOLIC_FACTORIZATION=2 ANALYSIS=3 FACTORIZATION=4 REFACTORIZATION=8 "
                       "SOLVE_FWD_PERM=0x10 SOLVE_FWD=0x20 SOLVE_DIAG=0x40 SOLVE_BWD=0x80 SOLVE_BWD_PERM=0x100 "
                       "SOLVE_REFINEMENT=0x200 SOLVE=0x3F0")
MatrixType = _enum("MatrixType", "GENERAL SYMMETRIC HERMITIAN SPD HPD")
MatrixViewType = _enum("MatrixViewType", "FULL LOWER UPPER")
IndexBase = _enum("IndexBase", "ZERO ONE")
Layout = _enum("Layout", "COL_MAJOR ROW_MAJOR")
# NONE: the natural order when no user permutation is given
ReorderingAlg = _enum("ReorderingAlg", "DEFAULT BTF_COLAMD COLAMD AMD NESTED_DISSECTION NONE")
FactorizationAlg = _enum("FactorizationAlg", "DEFAULT MULTIBLOCK GENERAL")
PivotEpsilonAlg = _enum("PivotEpsilonAlg", "DEFAULT SCALED STATIC")
SolveAlg = _enum("SolveAlg", "DEFAULT GENERAL")
# NONE disables matching; AUTO (the default) is the library's choice
MatchingAlg = _enum("MatchingAlg", "NONE MAX_DIAG_COUNT MAX_MIN_DIAG MAX_MIN_DIAG_ALT MAX_DIAG_SUM MAX_DIAG_PRODUCT AUTO")
# AUTO (the default) resolves from the algorithm and the matrix type; GLOBAL_* go with the BTF_COLAMD and COLAMD
# reorderings, DIAGONAL (symmetric indefinite) and LOCAL_BLOCK (general) with AMD and NESTED_DISSECTION
PivotType = _enum("PivotType", "AUTO NONE GLOBAL_COL GLOBAL_ROW DIAGONAL LOCAL_BLOCK BUNCH_KAUFMAN")
MatrixFormat = _enum("MatrixFormat", "DENSE=1 CSR=2 BATCH=4 DISTRIBUTED=8", flag=True)
SolveMode = _enum("SolveMode", "NORMAL TRANSPOSE CONJUGATE_TRANSPOSE")
MemoryEstimateState = _enum("MemoryEstimateState", "NONE FILL_KNOWN FINAL")
DowncastFactorsMode = _enum("DowncastFactorsMode", "DISABLED KEEP_BLOCK_DIAGONAL KEEP_STRICT_DIAGONAL")
MemoryOptimizationFlags = _enum("MemoryOptimizationFlags", "DEFAULT=0 SOLVE_ONLY=1", flag=True)


#: the C type of each configuration parameter's value (enums are C ints)
CONFIG_TYPES = {
    ConfigParam.REORDERING_ALG: c_int32, ConfigParam.FACTORIZATION_ALG: c_int32, ConfigParam.SOLVE_ALG: c_int32,
    ConfigParam.MATCHING_ALG: c_int32, ConfigParam.SOLVE_MODE: c_int32, ConfigParam.IR_N_STEPS: c_int32,
    ConfigParam.IR_TOL: c_double, ConfigParam.PIVOT_TYPE: c_int32, ConfigParam.PIVOT_THRESHOLD: c_double,
    ConfigParam.PIVOT_EPSILON: c_double, ConfigParam.MAX_LU_NNZ: c_int64, ConfigParam.HYBRID_MEMORY_MODE: c_int32,
    ConfigParam.HYBRID_DEVICE_MEMORY_LIMIT: c_int64, ConfigParam.USE_CUDA_REGISTER_MEMORY: c_int32,
    ConfigParam.HOST_NTHREADS: c_int32, ConfigParam.HYBRID_EXECUTE_MODE: c_int32,
    ConfigParam.PIVOT_EPSILON_ALG: c_int32, ConfigParam.ND_NLEVELS: c_int32, ConfigParam.UBATCH_SIZE: c_int32,
    ConfigParam.UBATCH_INDEX: c_int32, ConfigParam.USE_SUPERPANELS: c_int32, ConfigParam.DEVICE_COUNT: c_int32,
    ConfigParam.SCHUR_MODE: c_int32, ConfigParam.DETERMINISTIC_MODE: c_int32, ConfigParam.ND_UBFACTOR: c_int32,
    ConfigParam.EMULATION_MANTISSA_BIT_COUNT: c_int32, ConfigParam.FORCE_NONSYMMETRIC_MATCHING: c_int32,
    ConfigParam.DOWNCAST_FACTORS: c_int32, ConfigParam.MEMORY_OPTIMIZATION_SETTING: c_int32,
}

#: the element type of the scalar and integer-array data parameters (the permutations are int32 for int32
#: indices; DIAG and SCALE_* have the matrix's value type, read by the caller into an array of that type)
DATA_TYPES = {
    DataParam.INFO: c_int32, DataParam.LU_NNZ: c_int64, DataParam.NPIVOTS: c_int32, DataParam.INERTIA: c_int32,
    DataParam.PERM_REORDER_ROW: c_int32, DataParam.PERM_REORDER_COL: c_int32, DataParam.PERM_ROW: c_int32,
    DataParam.PERM_COL: c_int32, DataParam.USER_PERM: c_int32, DataParam.HYBRID_DEVICE_MEMORY_MIN: c_int64,
    DataParam.MEMORY_ESTIMATES: c_int64, DataParam.PERM_MATCHING: c_int32, DataParam.NSUPERPANELS: c_int32,
    DataParam.IR_N_STEPS: c_int32,
}
MEMORY_ESTIMATES_COUNT = 16  # int64_t[16]: permanent/peak device, permanent/peak host, hybrid min/max, reserved

_p_void = POINTER(c_void_p)
_p_size = POINTER(c_size_t)
_p_int = POINTER(c_int)

TABLE = {
    "cudssConfigSet": (c_int, [c_void_p, c_int, c_void_p, c_size_t]),
    "cudssConfigGet": (c_int, [c_void_p, c_int, c_void_p, c_size_t, _p_size]),
    "cudssDataSet": (c_int, [c_void_p, c_void_p, c_int, c_void_p, c_size_t]),
    "cudssDataGet": (c_int, [c_void_p, c_void_p, c_int, c_void_p, c_size_t, _p_size]),
    # handle, phase, config, data, inputMatrix, solution, rhs
    "cudssExecute": (c_int, [c_void_p, c_int, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "cudssSetStream": (c_int, [c_void_p, c_void_p]),
    "cudssSetThreadingLayer": (c_int, [c_void_p, c_char_p]),
    "cudssSetJitCacheDir": (c_int, [c_void_p, c_char_p]),
    "cudssConfigCreate": (c_int, [_p_void]),
    "cudssConfigDestroy": (c_int, [c_void_p]),
    "cudssDataCreate": (c_int, [c_void_p, _p_void]),
    "cudssDataDestroy": (c_int, [c_void_p, c_void_p]),
    "cudssCreate": (c_int, [_p_void]),
    "cudssDestroy": (c_int, [c_void_p]),
    "cudssGetProperty": (c_int, [c_int, _p_int]),
    # matrix, nrows, ncols, ld, values, valueType, layout
    "cudssMatrixCreateDn": (c_int, [_p_void, c_int64, c_int64, c_int64, c_void_p, c_int, c_int]),
    # matrix, nrows, ncols, nnz, rowStart, rowEnd, colIndices, values, offsetType, indexType, valueType, mtype,
    # mview, indexBase
    "cudssMatrixCreateCsr": (c_int, [_p_void, c_int64, c_int64, c_int64, c_void_p, c_void_p, c_void_p, c_void_p,
                                     c_int, c_int, c_int, c_int, c_int, c_int]),
    # matrix, batchCount, nrows, ncols, ld, values, integerType, valueType, layout
    "cudssMatrixCreateBatchDn": (c_int, [_p_void, c_int64, c_void_p, c_void_p, c_void_p, c_void_p, c_int, c_int,
                                         c_int]),
    # matrix, batchCount, nrows, ncols, nnz, rowStart, rowEnd, colIndices, values, offsetType, indexType,
    # valueType, mtype, mview, indexBase
    "cudssMatrixCreateBatchCsr": (c_int, [_p_void, c_int64, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p,
                                          c_void_p, c_void_p, c_int, c_int, c_int, c_int, c_int, c_int]),
    "cudssMatrixDestroy": (c_int, [c_void_p]),
    "cudssMatrixSetValues": (c_int, [c_void_p, c_void_p]),
    "cudssMatrixSetCsrPointers": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "cudssMatrixSetBatchValues": (c_int, [c_void_p, c_void_p]),
    "cudssMatrixSetBatchCsrPointers": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "cudssMatrixGetFormat": (c_int, [c_void_p, _p_int]),
}

_L = LazyFunctions("cudss", TABLE)
check = make_checker(CUDSSError, Status)


def _out(fn, *args) -> int:
    """Call a creator ``fn(&out, *args)`` and return the object it made."""
    obj = c_void_p()
    s = fn(byref(obj), *args)
    if s:
        check(s)
    return obj.value or 0


# ---------------------------------------------------------------------------------------------- handles


def cudssCreate() -> int:
    return _out(_L.cudssCreate)


def cudssDestroy(handle: int) -> None:
    s = _L.cudssDestroy(handle)
    if s:
        check(s)


def cudssSetStream(handle: int, stream: int) -> None:
    s = _L.cudssSetStream(handle, stream)
    if s:
        check(s)


def cudssSetThreadingLayer(handle: int, path: str | None) -> None:
    """``path`` is the threading layer library (None: cuDSS reads CUDSS_THREADING_LIB)."""
    s = _L.cudssSetThreadingLayer(handle, None if path is None else path.encode())
    if s:
        check(s, f"the threading layer {path!r} could not be loaded")


def cudssSetJitCacheDir(handle: int, path: str | None) -> None:
    """``path``: the on-disk cache of runtime-compiled kernels (None: CUDSS_JIT_CACHE_DIR; "": none)."""
    s = _L.cudssSetJitCacheDir(handle, None if path is None else path.encode())
    if s:
        check(s)


def cudssGetProperty(prop: int) -> int:
    v = c_int()
    s = _L.cudssGetProperty(prop, byref(v))
    if s:
        check(s)
    return v.value


# --------------------------------------------------------------------------------------- config, data


def cudssConfigCreate() -> int:
    return _out(_L.cudssConfigCreate)


def cudssConfigDestroy(config: int) -> None:
    s = _L.cudssConfigDestroy(config)
    if s:
        check(s)


def cudssConfigSet(config: int, param: int, value) -> None:
    ctype = CONFIG_TYPES[param]
    v = ctype(value)
    s = _L.cudssConfigSet(config, param, byref(v), ctypes.sizeof(v))
    if s:
        check(s, f"setting {ConfigParam(param).name} to {value!r}")


def cudssConfigGet(config: int, param: int):
    v = CONFIG_TYPES[param]()
    written = c_size_t()
    s = _L.cudssConfigGet(config, param, byref(v), ctypes.sizeof(v), byref(written))
    if s:
        check(s, f"reading {ConfigParam(param).name}")
    return v.value


def cudssDataCreate(handle: int) -> int:
    obj = c_void_p()
    s = _L.cudssDataCreate(handle, byref(obj))
    if s:
        check(s)
    return obj.value or 0


def cudssDataDestroy(handle: int, data: int) -> None:
    s = _L.cudssDataDestroy(handle, data)
    if s:
        check(s)


def cudssDataSet(handle: int, data: int, param: int, value_ptr: int, nbytes: int) -> None:
    s = _L.cudssDataSet(handle, data, param, value_ptr, nbytes)
    if s:
        check(s, f"setting {DataParam(param).name}")


def cudssDataGet(handle: int, data: int, param: int, value_ptr: int, nbytes: int) -> int:
    """Read ``param`` into the ``nbytes`` at ``value_ptr``; returns the number of bytes cuDSS wrote."""
    written = c_size_t()
    s = _L.cudssDataGet(handle, data, param, value_ptr, nbytes, byref(written))
    if s:
        check(s, f"reading {DataParam(param).name}")
    return written.value


def cudssExecute(handle: int, phase: int, config: int, data: int, matrix: int, solution: int, rhs: int) -> None:
    s = _L.cudssExecute(handle, phase, config, data, matrix, solution, rhs)
    if s:
        check(s, f"in phase {Phase(phase).name if phase in Phase._value2member_map_ else phase}")


# -------------------------------------------------------------------------------------------- matrices


def cudssMatrixCreateDn(nrows: int, ncols: int, ld: int, values: int, value_type: int, layout: int) -> int:
    return _out(_L.cudssMatrixCreateDn, nrows, ncols, ld, values, value_type, layout)


def cudssMatrixCreateCsr(nrows: int, ncols: int, nnz: int, row_start: int, row_end: int, col_indices: int,
                         values: int, offset_type: int, index_type: int, value_type: int, mtype: int, mview: int,
                         index_base: int) -> int:
    return _out(_L.cudssMatrixCreateCsr, nrows, ncols, nnz, row_start, row_end, col_indices, values, offset_type,
                index_type, value_type, mtype, mview, index_base)


def cudssMatrixCreateBatchDn(batch_count: int, nrows: int, ncols: int, ld: int, values: int, integer_type: int,
                             value_type: int, layout: int) -> int:
    """``nrows``, ``ncols``, ``ld``: host arrays of ``integer_type``; ``values``: a device array of pointers."""
    return _out(_L.cudssMatrixCreateBatchDn, batch_count, nrows, ncols, ld, values, integer_type, value_type, layout)


def cudssMatrixCreateBatchCsr(batch_count: int, nrows: int, ncols: int, nnz: int, row_start: int, row_end: int,
                              col_indices: int, values: int, offset_type: int, index_type: int, value_type: int,
                              mtype: int, mview: int, index_base: int) -> int:
    """``nrows``, ``ncols``, ``nnz``: host arrays; ``row_start``, ``col_indices``, ``values``: device arrays of
    pointers (``row_end`` 0: NULL)."""
    return _out(_L.cudssMatrixCreateBatchCsr, batch_count, nrows, ncols, nnz, row_start, row_end, col_indices,
                values, offset_type, index_type, value_type, mtype, mview, index_base)


def cudssMatrixDestroy(matrix: int) -> None:
    s = _L.cudssMatrixDestroy(matrix)
    if s:
        check(s)


def cudssMatrixSetValues(matrix: int, values: int) -> None:
    s = _L.cudssMatrixSetValues(matrix, values)
    if s:
        check(s)


def cudssMatrixSetCsrPointers(matrix: int, row_start: int, row_end: int, col_indices: int, values: int) -> None:
    s = _L.cudssMatrixSetCsrPointers(matrix, row_start, row_end, col_indices, values)
    if s:
        check(s)


def cudssMatrixSetBatchValues(matrix: int, values: int) -> None:
    s = _L.cudssMatrixSetBatchValues(matrix, values)
    if s:
        check(s)


def cudssMatrixSetBatchCsrPointers(matrix: int, row_start: int, row_end: int, col_indices: int,
                                   values: int) -> None:
    s = _L.cudssMatrixSetBatchCsrPointers(matrix, row_start, row_end, col_indices, values)
    if s:
        check(s)


def cudssMatrixGetFormat(matrix: int) -> int:
    v = c_int()
    s = _L.cudssMatrixGetFormat(matrix, byref(v))
    if s:
        check(s)
    return v.value
