"""ctypes bindings of libmathdx (cuFFTDx, cuBLASDx, cuSOLVERDx and cuRANDDx code generation), 1:1 with its C API.

Enum values and signatures were read from ``libmathdx.h``, ``libcommondx.h``, ``libcufftdx.h``, ``libcublasdx.h``,
``libcusolverdx.h`` and ``libcuranddx.h`` of the ``nvidia-libmathdx-cu13`` 0.4.2.37 wheel (libmathdx 0.4.2:
cuFFTDx 1.8.0, cuBLASDx 0.8.0, cuSOLVERDx 0.6.0, cuRANDDx 0.2.5).

Both tables are data: ``ENUM_TABLE`` holds every C enum as its member names in declaration order, with C's
numbering (a member without ``=value`` is one more than the one before it, the first is 0), and becomes
``enum.IntEnum`` classes whose members are also module constants (``CUFFTDX_OPERATOR_SIZE``...);
``TABLE`` holds every C function with a short signature from which both the ctypes prototype and the Python
wrapper are made (see ``_CODES``). Descriptors, tensors, pipelines, device functions and code handles are
Python ints. Outputs are returned instead of taken as out-pointers; C strings come back as ``str``, code
buffers as ``bytes``, and buffers whose size C asks for first (``...StrSize``/``...LTOIRSize``) are sized by
the wrapper. A failure status raises ``MathDxError`` whose message carries libmathdx's last error text
(``commondxGetLastErrorStr``: the NVRTC log of a failed code generation).

Nothing is loaded at import time. libmathdx calls NVRTC (``libnvrtc.so.13``, which loads
``libnvrtc-builtins``), so the NVRTC library of the ``cu13`` extra is loaded first, globally.
"""

from __future__ import annotations

import enum
from ctypes import (POINTER, byref, c_char_p, c_int, c_longlong, c_size_t, c_void_p, cast,
                    create_string_buffer)

from ..errors import MathDxError
from ._loader import LazyFunctions, load_library

__all__ = ["TABLE", "ENUM_TABLE", "ENUMS", "LIBMATHDX_RUNTIME", "LIBMATHDX_MAX_PIPELINE_DEPTH", "LIBMATHDX_NONE",
           "check", "load", "commondxGetCodeLTOIRs", "commondxGetLastErrorStr"]

#: header version the tables were read from (1000 * major + 100 * minor + patch)
LIBMATHDX_VERSION = 402
#: sentinels of libcublasdx.h
LIBMATHDX_RUNTIME = -(2 ** 63)  # LLONG_MIN: a shape or stride given at run time
LIBMATHDX_MAX_PIPELINE_DEPTH = 0
LIBMATHDX_NONE = -(2 ** 63)  # LLONG_MIN: no descriptor

# ------------------------------------------------------------------------------------------------ enums

ENUM_TABLE = {
    # libcommondx.h
    "commondxValueType": (
        "COMMONDX_R_8F_E5M2 COMMONDX_C_8F_E5M2 COMMONDX_R_8F_E4M3 COMMONDX_C_8F_E4M3 COMMONDX_R_16BF "
        "COMMONDX_C_16BF COMMONDX_R_16F2 COMMONDX_R_16F COMMONDX_C_16F COMMONDX_C_16F2 COMMONDX_R_32TF "
        "COMMONDX_C_32TF COMMONDX_R_32F COMMONDX_C_32F COMMONDX_R_64F COMMONDX_C_64F COMMONDX_R_8I COMMONDX_C_8I "
        "COMMONDX_R_16I COMMONDX_C_16I COMMONDX_R_32I COMMONDX_C_32I COMMONDX_R_64I COMMONDX_C_64I COMMONDX_R_8UI "
        "COMMONDX_C_8UI COMMONDX_R_16UI COMMONDX_C_16UI COMMONDX_R_32UI COMMONDX_C_32UI COMMONDX_R_64UI "
        "COMMONDX_C_64UI"
    ),
    "commondxStatusType": (
        "COMMONDX_SUCCESS COMMONDX_INVALID_VALUE COMMONDX_INTERNAL_ERROR COMMONDX_COMPILATION_ERROR "
        "COMMONDX_CUFFT_ERROR COMMONDX_FILE_ERROR"
    ),
    "commondxPrecision": (
        "COMMONDX_PRECISION_F8_E5M2 COMMONDX_PRECISION_F8_E4M3 COMMONDX_PRECISION_BF16 COMMONDX_PRECISION_F16 "
        "COMMONDX_PRECISION_TF32 COMMONDX_PRECISION_F32 COMMONDX_PRECISION_F64 COMMONDX_PRECISION_I8 "
        "COMMONDX_PRECISION_I16 COMMONDX_PRECISION_I32 COMMONDX_PRECISION_I64 COMMONDX_PRECISION_UI8 "
        "COMMONDX_PRECISION_UI16 COMMONDX_PRECISION_UI32 COMMONDX_PRECISION_UI64"
    ),
    "commondxArchModifier": (
        "COMMONDX_ARCH_MODIFIER_GENERIC COMMONDX_ARCH_MODIFIER_ARCH_SPECIFIC "
        "COMMONDX_ARCH_MODIFIER_FAMILY_SPECIFIC"
    ),
    "commondxOption": (
        "COMMONDX_OPTION_SYMBOL_NAME COMMONDX_OPTION_TARGET_SM COMMONDX_OPTION_CODE_CONTAINER "
        "COMMONDX_OPTION_CODE_ISA COMMONDX_OPTION_EXTRA_NVRTC_ARGS COMMONDX_OPTION_TARGET_CODE"
    ),
    "commondxExecution": "COMMONDX_EXECUTION_THREAD COMMONDX_EXECUTION_BLOCK COMMONDX_EXECUTION_WARP",
    "commondxFunctionAbi": "COMMONDX_FUNCTION_ABI_NATIVE COMMONDX_FUNCTION_ABI_TILE",
    "commondxCodeType": "COMMONDX_CODE_TYPE_LTO COMMONDX_CODE_TYPE_PTX",
    "commondxCodeContainer": "COMMONDX_CODE_CONTAINER_LTOIR COMMONDX_CODE_CONTAINER_FATBIN COMMONDX_CODE_CONTAINER_PTX",
    # libcufftdx.h
    "cufftdxDeviceFunctionType": (
        "CUFFTDX_DEVICE_FUNCTION_EXECUTE=1 CUFFTDX_DEVICE_FUNCTION_FFT_ID CUFFTDX_DEVICE_FUNCTION_BATCH_ID=4 "
        "CUFFTDX_DEVICE_FUNCTION_IS_THREAD_ACTIVE=8"
    ),
    "cufftdxApi": "CUFFTDX_API_LMEM CUFFTDX_API_SMEM",
    "cufftdxType": "CUFFTDX_TYPE_C2C CUFFTDX_TYPE_R2C CUFFTDX_TYPE_C2R",
    "cufftdxDirection": "CUFFTDX_DIRECTION_FORWARD CUFFTDX_DIRECTION_INVERSE",
    "cufftdxComplexLayout": "CUFFTDX_COMPLEX_LAYOUT_NATURAL CUFFTDX_COMPLEX_LAYOUT_PACKED CUFFTDX_COMPLEX_LAYOUT_FULL",
    "cufftdxRealMode": "CUFFTDX_REAL_MODE_NORMAL CUFFTDX_REAL_MODE_FOLDED",
    "cufftdxCodeType": "CUFFTDX_CODE_TYPE_PTX CUFFTDX_CODE_TYPE_LTOIR",
    "cufftdxThreadLinearization": "CUFFTDX_THREAD_LINEARIZATION_DISABLED CUFFTDX_THREAD_LINEARIZATION_ENABLED",
    "cufftdxTransposition": (
        "CUFFTDX_TRANSPOSITION_ANY CUFFTDX_TRANSPOSITION_NONE CUFFTDX_TRANSPOSITION_BY_COMPONENT "
        "CUFFTDX_TRANSPOSITION_BY_COMPLEX CUFFTDX_TRANSPOSITION_BY_COMPONENT_PADDED"
    ),
    "cufftdxThreadLayout": "CUFFTDX_THREAD_LAYOUT_REGULAR CUFFTDX_THREAD_LAYOUT_TRANSPOSED",
    "cufftdxOperatorType": (
        "CUFFTDX_OPERATOR_SIZE CUFFTDX_OPERATOR_DIRECTION CUFFTDX_OPERATOR_TYPE CUFFTDX_OPERATOR_PRECISION "
        "CUFFTDX_OPERATOR_SM CUFFTDX_OPERATOR_EXECUTION CUFFTDX_OPERATOR_FFTS_PER_BLOCK "
        "CUFFTDX_OPERATOR_ELEMENTS_PER_THREAD CUFFTDX_OPERATOR_BLOCK_DIM CUFFTDX_OPERATOR_REAL_FFT_OPTIONS "
        "CUFFTDX_OPERATOR_API CUFFTDX_OPERATOR_CODE_TYPE CUFFTDX_OPERATOR_FUNCTION_ABI "
        "CUFFTDX_OPERATOR_THREAD_LINEARIZATION CUFFTDX_OPERATOR_TRANSPOSITION CUFFTDX_OPERATOR_THREAD_LAYOUT "
        "CUFFTDX_OPERATOR_DEVICE_FUNCTION"
    ),
    "cufftdxKnobType": "CUFFTDX_KNOB_ELEMENTS_PER_THREAD CUFFTDX_KNOB_FFTS_PER_BLOCK CUFFTDX_KNOB_TRANSPOSITION",
    "cufftdxTraitType": (
        "CUFFTDX_TRAIT_VALUE_TYPE CUFFTDX_TRAIT_INPUT_TYPE CUFFTDX_TRAIT_OUTPUT_TYPE "
        "CUFFTDX_TRAIT_IMPLICIT_TYPE_BATCHING CUFFTDX_TRAIT_ELEMENTS_PER_THREAD CUFFTDX_TRAIT_STORAGE_SIZE "
        "CUFFTDX_TRAIT_STRIDE CUFFTDX_TRAIT_BLOCK_DIM CUFFTDX_TRAIT_SHARED_MEMORY_SIZE "
        "CUFFTDX_TRAIT_FFTS_PER_BLOCK CUFFTDX_TRAIT_SYMBOL_NAME CUFFTDX_TRAIT_INPUT_LENGTH "
        "CUFFTDX_TRAIT_OUTPUT_LENGTH CUFFTDX_TRAIT_INPUT_ELEMENTS_PER_THREAD "
        "CUFFTDX_TRAIT_OUTPUT_ELEMENTS_PER_THREAD CUFFTDX_TRAIT_SUGGESTED_FFTS_PER_BLOCK "
        "CUFFTDX_TRAIT_SYMBOL_EXECUTE_NAME CUFFTDX_TRAIT_SYMBOL_FFT_ID_NAME CUFFTDX_TRAIT_SYMBOL_BATCH_ID_NAME "
        "CUFFTDX_TRAIT_SYMBOL_IS_THREAD_ACTIVE_NAME"
    ),
    # libcublasdx.h
    "cublasdxApi": "CUBLASDX_API_SMEM CUBLASDX_API_SMEM_DYNAMIC_LD CUBLASDX_API_TENSORS",
    "cublasdxDevicePipelineType": "CUBLASDX_DEVICE_PIPELINE_SUGGESTED",
    "cublasdxTilePipelineType": "CUBLASDX_TILE_PIPELINE_DEFAULT",
    "cublasdxBlockSizeStrategy": "CUBLASDX_BLOCK_SIZE_STRATEGY_HEURISTIC CUBLASDX_BLOCK_SIZE_STRATEGY_FIXED",
    "cublasdxType": "CUBLASDX_TYPE_REAL CUBLASDX_TYPE_COMPLEX",
    "cublasdxMemorySpace": (
        "CUBLASDX_MEMORY_SPACE_RMEM CUBLASDX_MEMORY_SPACE_SMEM CUBLASDX_MEMORY_SPACE_GMEM "
        "CUBLASDX_MEMORY_SPACE_ANY"
    ),
    "cublasdxTransposeMode": (
        "CUBLASDX_TRANSPOSE_MODE_NON_TRANSPOSED CUBLASDX_TRANSPOSE_MODE_TRANSPOSED "
        "CUBLASDX_TRANSPOSE_MODE_CONJ_TRANSPOSED"
    ),
    "cublasdxArrangement": "CUBLASDX_ARRANGEMENT_COL_MAJOR CUBLASDX_ARRANGEMENT_ROW_MAJOR",
    "cublasdxFunction": "CUBLASDX_FUNCTION_MM CUBLASDX_FUNCTION_TRSM",
    "cublasdxFillMode": "CUBLASDX_FILL_MODE_UPPER CUBLASDX_FILL_MODE_LOWER",
    "cublasdxSide": "CUBLASDX_SIDE_LEFT CUBLASDX_SIDE_RIGHT",
    "cublasdxDiag": "CUBLASDX_DIAG_UNIT CUBLASDX_DIAG_NON_UNIT",
    "cublasdxStaticBlockDim": "CUBLASDX_STATIC_BLOCK_DIM_DISABLED CUBLASDX_STATIC_BLOCK_DIM_ENABLED",
    "cublasdxInputStreaming": "CUBLASDX_INPUT_STREAMING_DISABLED CUBLASDX_INPUT_STREAMING_ENABLED",
    "cublasdxWithPipeline": "CUBLASDX_WITH_PIPELINE_DISABLED CUBLASDX_WITH_PIPELINE_ENABLED",
    "cublasdxOperatorType": (
        "CUBLASDX_OPERATOR_FUNCTION CUBLASDX_OPERATOR_SIZE CUBLASDX_OPERATOR_TYPE CUBLASDX_OPERATOR_PRECISION "
        "CUBLASDX_OPERATOR_SM CUBLASDX_OPERATOR_EXECUTION CUBLASDX_OPERATOR_BLOCK_DIM "
        "CUBLASDX_OPERATOR_LEADING_DIMENSION CUBLASDX_OPERATOR_TRANSPOSE_MODE CUBLASDX_OPERATOR_API "
        "CUBLASDX_OPERATOR_ARRANGEMENT CUBLASDX_OPERATOR_ALIGNMENT CUBLASDX_OPERATOR_STATIC_BLOCK_DIM "
        "CUBLASDX_OPERATOR_ENABLE_INPUT_STREAMING CUBLASDX_OPERATOR_WITH_PIPELINE CUBLASDX_OPERATOR_SIDE "
        "CUBLASDX_OPERATOR_FILL_MODE CUBLASDX_OPERATOR_DIAG"
    ),
    "cublasdxTraitType": (
        "CUBLASDX_TRAIT_VALUE_TYPE CUBLASDX_TRAIT_SIZE CUBLASDX_TRAIT_BLOCK_SIZE CUBLASDX_TRAIT_BLOCK_DIM "
        "CUBLASDX_TRAIT_LEADING_DIMENSION CUBLASDX_TRAIT_SYMBOL_NAME CUBLASDX_TRAIT_ARRANGEMENT "
        "CUBLASDX_TRAIT_ALIGNMENT CUBLASDX_TRAIT_SUGGESTED_LEADING_DIMENSION CUBLASDX_TRAIT_SUGGESTED_BLOCK_DIM "
        "CUBLASDX_TRAIT_MAX_THREADS_PER_BLOCK"
    ),
    "cublasdxTensorType": (
        "CUBLASDX_TENSOR_SMEM_A CUBLASDX_TENSOR_SMEM_B CUBLASDX_TENSOR_SMEM_C CUBLASDX_TENSOR_SUGGESTED_SMEM_A "
        "CUBLASDX_TENSOR_SUGGESTED_SMEM_B CUBLASDX_TENSOR_SUGGESTED_SMEM_C CUBLASDX_TENSOR_SUGGESTED_RMEM_C "
        "CUBLASDX_TENSOR_GMEM_A CUBLASDX_TENSOR_GMEM_B CUBLASDX_TENSOR_GMEM_C "
        "CUBLASDX_TENSOR_SUGGESTED_ACCUMULATOR_C CUBLASDX_TENSOR_RMEM_C CUBLASDX_TENSOR_ACCUMULATOR_C"
    ),
    "cublasdxTensorOption": "CUBLASDX_TENSOR_OPTION_ALIGNMENT_BYTES",
    "cublasdxTensorTrait": (
        "CUBLASDX_TENSOR_TRAIT_STORAGE_BYTES CUBLASDX_TENSOR_TRAIT_ALIGNMENT_BYTES CUBLASDX_TENSOR_TRAIT_UID "
        "CUBLASDX_TENSOR_TRAIT_OPAQUE_NAME=4 CUBLASDX_TENSOR_TRAIT_LOGICAL_SIZE "
        "CUBLASDX_TENSOR_TRAIT_MEMORY_SPACE"
    ),
    "cublasdxPipelineTrait": (
        "CUBLASDX_PIPELINE_TRAIT_STORAGE_BYTES CUBLASDX_PIPELINE_TRAIT_STORAGE_ALIGNMENT_BYTES "
        "CUBLASDX_PIPELINE_TRAIT_BUFFER_SIZE CUBLASDX_PIPELINE_TRAIT_BUFFER_ALIGNMENT_BYTES "
        "CUBLASDX_PIPELINE_TRAIT_OPAQUE_NAME CUBLASDX_PIPELINE_TRAIT_BLOCK_DIM"
    ),
    "cublasdxDeviceFunctionTrait": "CUBLASDX_DEVICE_FUNCTION_TRAIT_SYMBOL=1",
    "cublasdxDeviceFunctionOption": (
        "CUBLASDX_DEVICE_FUNCTION_OPTION_SYMBOL_NAME CUBLASDX_DEVICE_FUNCTION_OPTION_COPY_ALIGNMENT "
        "CUBLASDX_DEVICE_FUNCTION_OPTION_CALLBACK CUBLASDX_DEVICE_FUNCTION_OPTION_NUM_THREADS"
    ),
    "cublasdxDeviceFunctionType": (
        "CUBLASDX_DEVICE_FUNCTION_EXECUTE CUBLASDX_DEVICE_FUNCTION_COPY CUBLASDX_DEVICE_FUNCTION_COPY_WAIT "
        "CUBLASDX_DEVICE_FUNCTION_CLEAR CUBLASDX_DEVICE_FUNCTION_AXPBY CUBLASDX_DEVICE_FUNCTION_MAP_IDX2CRD "
        "CUBLASDX_DEVICE_FUNCTION_MAP_IDX2CRD_PARTITIONER CUBLASDX_DEVICE_FUNCTION_MAP_CRD2IDX "
        "CUBLASDX_DEVICE_FUNCTION_IS_THREAD_ACTIVE CUBLASDX_DEVICE_FUNCTION_IS_PREDICATED "
        "CUBLASDX_DEVICE_FUNCTION_IS_INDEX_IN_BOUNDS CUBLASDX_DEVICE_FUNCTION_CREATE "
        "CUBLASDX_DEVICE_FUNCTION_DESTROY CUBLASDX_DEVICE_FUNCTION_RESET CUBLASDX_DEVICE_FUNCTION_EPILOGUE "
        "CUBLASDX_DEVICE_FUNCTION_FINISH_ACCUMULATION"
    ),
    # libcusolverdx.h
    "cusolverdxApi": "CUSOLVERDX_API_SMEM CUSOLVERDX_API_SMEM_DYNAMIC_LD",
    "cusolverdxType": "CUSOLVERDX_TYPE_REAL CUSOLVERDX_TYPE_COMPLEX",
    "cusolverdxFunction": (
        "CUSOLVERDX_FUNCTION_GETRF_NO_PIVOT CUSOLVERDX_FUNCTION_GETRS_NO_PIVOT CUSOLVERDX_FUNCTION_POTRF "
        "CUSOLVERDX_FUNCTION_POTRS CUSOLVERDX_FUNCTION_TRSM CUSOLVERDX_FUNCTION_GETRF_PARTIAL_PIVOT "
        "CUSOLVERDX_FUNCTION_GETRS_PARTIAL_PIVOT CUSOLVERDX_FUNCTION_GEQRF CUSOLVERDX_FUNCTION_UNMQR "
        "CUSOLVERDX_FUNCTION_GELQF CUSOLVERDX_FUNCTION_UNMLQ CUSOLVERDX_FUNCTION_POSV "
        "CUSOLVERDX_FUNCTION_GESV_NO_PIVOT CUSOLVERDX_FUNCTION_GESV_PARTIAL_PIVOT CUSOLVERDX_FUNCTION_GELS "
        "CUSOLVERDX_FUNCTION_UNGQR CUSOLVERDX_FUNCTION_UNGLQ CUSOLVERDX_FUNCTION_GTSV_NO_PIVOT "
        "CUSOLVERDX_FUNCTION_HTEV CUSOLVERDX_FUNCTION_HEEV CUSOLVERDX_FUNCTION_MODIFIED_LU "
        "CUSOLVERDX_FUNCTION_BDSVD CUSOLVERDX_FUNCTION_GESVD CUSOLVERDX_FUNCTION_HEGST CUSOLVERDX_FUNCTION_HEGV"
    ),
    "cusolverdxArrangement": "CUSOLVERDX_ARRANGEMENT_COL_MAJOR CUSOLVERDX_ARRANGEMENT_ROW_MAJOR",
    "cusolverdxTransposeMode": (
        "CUSOLVERDX_TRANSPOSE_MODE_NON_TRANSPOSED CUSOLVERDX_TRANSPOSE_MODE_TRANSPOSED "
        "CUSOLVERDX_TRANSPOSE_MODE_CONJ_TRANSPOSED"
    ),
    "cusolverdxFillMode": "CUSOLVERDX_FILL_MODE_UPPER CUSOLVERDX_FILL_MODE_LOWER",
    "cusolverdxSide": "CUSOLVERDX_SIDE_LEFT CUSOLVERDX_SIDE_RIGHT",
    "cusolverdxDiag": "CUSOLVERDX_DIAG_UNIT CUSOLVERDX_DIAG_NON_UNIT",
    "cusolverdxJob": (
        "CUSOLVERDX_JOB_NO_VECTORS CUSOLVERDX_JOB_ALL_VECTORS CUSOLVERDX_JOB_MULTIPLY_VECTORS "
        "CUSOLVERDX_JOB_OVERWRITE_VECTORS CUSOLVERDX_JOB_SOME_VECTORS"
    ),
    "cusolverdxOperatorType": (
        "CUSOLVERDX_OPERATOR_SIZE CUSOLVERDX_OPERATOR_TYPE CUSOLVERDX_OPERATOR_PRECISION CUSOLVERDX_OPERATOR_SM "
        "CUSOLVERDX_OPERATOR_EXECUTION CUSOLVERDX_OPERATOR_BLOCK_DIM CUSOLVERDX_OPERATOR_API "
        "CUSOLVERDX_OPERATOR_FUNCTION CUSOLVERDX_OPERATOR_ARRANGEMENT CUSOLVERDX_OPERATOR_FILL_MODE "
        "CUSOLVERDX_OPERATOR_SIDE CUSOLVERDX_OPERATOR_DIAG CUSOLVERDX_OPERATOR_TRANSPOSE_MODE "
        "CUSOLVERDX_OPERATOR_LEADING_DIMENSION CUSOLVERDX_OPERATOR_BATCHES_PER_BLOCK CUSOLVERDX_OPERATOR_JOB "
        "CUSOLVERDX_OPERATOR_FUNCTION_ABI CUSOLVERDX_OPERATOR_EIG_TYPE"
    ),
    "cusolverdxTraitType": (
        "CUSOLVERDX_TRAIT_SYMBOL_NAME=2 CUSOLVERDX_TRAIT_BLOCK_DIM CUSOLVERDX_TRAIT_SUGGESTED_BLOCK_DIM=5 "
        "CUSOLVERDX_TRAIT_SUGGESTED_BATCHES_PER_BLOCK CUSOLVERDX_TRAIT_WORKSPACE_SIZE=12"
    ),
    # libcuranddx.h
    "curanddxDistribution": (
        "CURANDDX_DISTRIBUTION_UNIFORM_BITS CURANDDX_DISTRIBUTION_UNIFORM CURANDDX_DISTRIBUTION_NORMAL "
        "CURANDDX_DISTRIBUTION_LOG_NORMAL CURANDDX_DISTRIBUTION_POISSON"
    ),
    "curanddxNormalMethod": "CURANDDX_NORMAL_METHOD_ICDF CURANDDX_NORMAL_METHOD_BOX_MULLER",
    "curanddxGenerateMethod": (
        "CURANDDX_GENERATE_METHOD_SINGLE CURANDDX_GENERATE_METHOD_PAIR CURANDDX_GENERATE_METHOD_QUAD"
    ),
    "curanddxGenerator": (
        "CURANDDX_GENERATOR_XORWOW CURANDDX_GENERATOR_MRG32K3A CURANDDX_GENERATOR_PHILOX4_32 "
        "CURANDDX_GENERATOR_PCG CURANDDX_GENERATOR_SOBOL32 CURANDDX_GENERATOR_SCRAMBLED_SOBOL32 "
        "CURANDDX_GENERATOR_SOBOL64 CURANDDX_GENERATOR_SCRAMBLED_SOBOL64"
    ),
    "curanddxOperatorType": (
        "CURANDDX_OPERATOR_GENERATOR CURANDDX_OPERATOR_PHILOX_ROUNDS CURANDDX_OPERATOR_SM "
        "CURANDDX_OPERATOR_EXECUTION CURANDDX_OPERATOR_DISTRIBUTION CURANDDX_OPERATOR_OUTPUT_TYPE "
        "CURANDDX_OPERATOR_GENERATE_METHOD CURANDDX_OPERATOR_NORMAL_METHOD CURANDDX_OPERATOR_DEVICE_FUNCTIONS"
    ),
    "curanddxDeviceFunctionType": (
        "CURANDDX_DEVICE_FUNCTION_GENERATE=2 CURANDDX_DEVICE_FUNCTION_INIT_STATE=4 "
        "CURANDDX_DEVICE_FUNCTION_DESTROY_STATE=8 CURANDDX_DEVICE_FUNCTION_SKIP_OFFSET=16 "
        "CURANDDX_DEVICE_FUNCTION_SKIP_SUBSEQUENCE=32 CURANDDX_DEVICE_FUNCTION_SKIP_SEQUENCE=64"
    ),
    "curanddxTraitType": (
        "CURANDDX_TRAIT_SYMBOL_GENERATE_NAME CURANDDX_TRAIT_SYMBOL_INIT_STATE_NAME "
        "CURANDDX_TRAIT_SYMBOL_DESTROY_STATE_NAME CURANDDX_TRAIT_SYMBOL_SKIP_OFFSET_NAME "
        "CURANDDX_TRAIT_SYMBOL_SKIP_SUBSEQUENCE_NAME CURANDDX_TRAIT_SYMBOL_SKIP_SEQUENCE_NAME "
        "CURANDDX_TRAIT_STATE_SIZE CURANDDX_TRAIT_STATE_ALIGNMENT"
    ),
}


def _make_enum(name: str, spec) -> type[enum.IntEnum]:
    members, value = [], 0
    for token in "".join(spec).split():
        key, _, explicit = token.partition("=")
        if explicit:
            value = int(explicit)
        members.append((key, value))
        value += 1
    return enum.IntEnum(name, members, module=__name__)


ENUMS = tuple(_make_enum(_name, _spec) for _name, _spec in ENUM_TABLE.items())
for _e in ENUMS:
    globals()[_e.__name__] = _e
    for _member_name, _member in _e.__members__.items():
        globals()[_member_name] = _member
__all__ += [_e.__name__ for _e in ENUMS] + [m for _e in ENUMS for m in _e.__members__]
del _e, _member_name, _member

# -------------------------------------------------------------------------------------------- functions
# Signature codes, one per Python-level parameter or result, in C order:
#   inputs   h long long (a handle or a value)   e enum (int)   z size_t   s const char*   p void* (int or None)
#            S size_t count + const char**       Q size_t count + long long*   E size_t count + enum*
#            * long long* (a sequence whose length another argument gives)
#   outputs  >i int*   >h long long*   >z size_t*   >e enum*   >s const char** (a string owned by the library)
#            >Q >E >Z  size_t count (an input) + an array of that many long long / enum / size_t (a list)
#            >B >S     size_t size + a buffer of that size (bytes / str): the size comes from the function named
#                      second in the entry, called with the same leading arguments
# Every function returns commondxStatusType.

_FAMILY = {  # functions every descriptor library has, by the library's prefix
    "GetVersion": ">i >i >i",
    "CreateDescriptor": ">h",
    "DestroyDescriptor": "h",
    "SetOptionStr": "h e s",
    "SetOptionStrs": "h e S",
    "SetOperatorInt64": "h e h",
    "SetOperatorInt64s": "h e Q",
    "GetTraitStrSize": "h e >z",
    "GetTraitStr": (">S", "GetTraitStrSize"),
    "GetTraitInt64": "h e >h",
    "GetTraitInt64s": "h e >Q",
    "FinalizeCode": "h h",
    "FinalizeCodes": "h Q",
    "GetLTOIRSize": "h >z",
    "GetLTOIR": (">B", "GetLTOIRSize"),
}
_FAMILIES = {
    "cufftdx": tuple(_FAMILY),
    "cublasdx": tuple(_FAMILY),
    "cusolverdx": tuple(_FAMILY),
    "curanddx": tuple(k for k in _FAMILY if k not in ("SetOperatorInt64s", "GetTraitInt64s", "GetLTOIRSize",
                                                    "GetLTOIR")),
}

SIGNATURES: dict[str, str | tuple[str, str]] = {
    "mathdxGetVersion": ">i",
    "mathdxGetVersionEx": ">i >i >i",
    "mathdxGetPackageVersion": ">i >i >i",
    "mathdxGetCommit": ">s",
    "commondxCreateCode": ">h",
    "commondxDestroyCode": "h",
    "commondxSetCodeOptionInt64": "h e h",
    "commondxSetCodeOptionInt64s": "h e Q",
    "commondxSetCodeOptionStr": "h e s",
    "commondxSetCodeOptionStrs": "h e S",
    "commondxGetCodeOptionInt64": "h e >h",
    "commondxGetCodeOptionsInt64s": "h e >Q",
    "commondxGetCodeLTOIRSize": "h >z",
    "commondxGetCodeLTOIR": ("h >B", "commondxGetCodeLTOIRSize"),
    "commondxGetCodePTXSize": "h >z",
    "commondxGetCodePTX": ("h >S", "commondxGetCodePTXSize"),
    "commondxGetCodeNumLTOIRs": "h >z",
    "commondxGetCodeLTOIRSizes": "h >Z",
    "commondxGetLastErrorStrSize": ">z",
    "cufftdxIsSupported": "h >i",
    "cufftdxGetKnobInt64Size": "h E >z",
    "cufftdxGetKnobInt64s": "h E >Q",
    "cufftdxGetTraitCommondxDataType": "h e >e",
    "cublasdxCreateTensor": "h e >h",
    "cublasdxCreateTensorStrided": "e e p h * * >h",
    "cublasdxMakeTensorLike": "h e >h",
    "cublasdxDestroyTensor": "h",
    "cublasdxDestroyPipeline": "h",
    "cublasdxCreateDevicePipeline": "h e h e h h >h",
    "cublasdxCreateTilePipeline": "h e h >h",
    "cublasdxSetTensorOptionInt64": "h e h",
    "cublasdxSetTensorOptionStr": "h e s",
    "cublasdxSetTensorOptionStrs": "h e S",
    "cublasdxSetPipelineOptionStr": "h e s",
    "cublasdxSetPipelineOptionStrs": "h e S",
    "cublasdxFinalizeTensors": "Q",
    "cublasdxFinalizePipelines": "Q",
    "cublasdxFinalize": "Q Q",
    "cublasdxGetTensorTraitInt64": "h e >h",
    "cublasdxGetTensorTraitStrSize": "h e >z",
    "cublasdxGetTensorTraitStr": ("h e >S", "cublasdxGetTensorTraitStrSize"),
    "cublasdxGetPipelineTraitInt64": "h e >h",
    "cublasdxGetPipelineTraitInt64s": "h e >Q",
    "cublasdxGetPipelineTraitStrSize": "h e >z",
    "cublasdxGetPipelineTraitStr": ("h e >S", "cublasdxGetPipelineTraitStrSize"),
    "cublasdxCreateDeviceFunction": "h e Q >h",
    "cublasdxCreateDeviceFunctionWithPipelines": "h e Q Q >h",
    "cublasdxDestroyDeviceFunction": "h",
    "cublasdxFinalizeDeviceFunctions": "h Q",
    "cublasdxGetDeviceFunctionTraitStrSize": "h e >z",
    "cublasdxGetDeviceFunctionTraitStr": ("h e >S", "cublasdxGetDeviceFunctionTraitStrSize"),
    "cublasdxSetDeviceFunctionOptionInt64": "h e h",
    "cublasdxSetDeviceFunctionOptionStr": "h e s",
    "cublasdxGetUniversalFATBINSize": "h >z",
    "cublasdxGetUniversalFATBIN": ("h >B", "cublasdxGetUniversalFATBINSize"),
    "cublasdxGetTraitCommondxDataTypes": "h e >E",
    "cusolverdxGetUniversalFATBINSize": "h >z",
    "cusolverdxGetUniversalFATBIN": ("h >B", "cusolverdxGetUniversalFATBINSize"),
}
for _prefix, _names in _FAMILIES.items():
    for _suffix in _names:
        _sig = _FAMILY[_suffix]
        if isinstance(_sig, tuple):  # the leading inputs of a sized getter are those of its size function
            _sig = (_FAMILY[_sig[1]].rsplit(" ", 1)[0] + " " + _sig[0], _prefix + _sig[1])
        SIGNATURES[_prefix + _suffix] = _sig
del _prefix, _names, _suffix, _sig

# `const char* XToStr(enum)`: a name of an enum value (they all take one enum and return a static string)
TO_STR = (
    "commondxStatusToStr commondxPrecisionToStr commondxValueTypeToStr commondxOptionToStr commondxExecutionToStr "
    "commondxFunctionAbiToStr commondxCodeContainerToStr commondxCodeTypeToStr commondxArchModifierToStr "
    "cufftdxDeviceFunctionTypeToStr cufftdxOperatorTypeToStr cufftdxTraitTypeToStr cufftdxApiToStr cufftdxTypeToStr "
    "cufftdxDirectionToStr cufftdxComplexLayoutToStr cufftdxRealModeToStr cufftdxKnobTypeToStr "
    "cufftdxCodeTypeToStr cufftdxTranspositionToStr cufftdxThreadLayoutToStr cublasdxOperatorTypeToStr "
    "cublasdxTraitTypeToStr cublasdxApiToStr cublasdxTypeToStr cublasdxTransposeModeToStr cublasdxArrangementToStr "
    "cublasdxFunctionToStr cublasdxFillModeToStr cublasdxSideToStr cublasdxDiagToStr cublasdxTensorTypeToStr "
    "cublasdxBlockSizeStrategyToStr cublasdxDevicePipelineTypeToStr cublasdxTilePipelineTypeToStr "
    "cublasdxTensorOptionToStr cublasdxTensorTraitToStr cublasdxPipelineTraitToStr "
    "cublasdxDeviceFunctionTraitToStr cublasdxDeviceFunctionOptionToStr cublasdxDeviceFunctionTypeToStr "
    "cublasdxMemorySpaceToStr cusolverdxOperatorTypeToStr cusolverdxTraitTypeToStr cusolverdxDiagToStr "
    "cusolverdxSideToStr cusolverdxApiToStr cusolverdxTypeToStr cusolverdxFunctionToStr cusolverdxArrangementToStr "
    "cusolverdxFillModeToStr cusolverdxTransposeModeToStr cusolverdxJobToStr curanddxOperatorTypeToStr "
    "curanddxDistributionToStr curanddxGeneratorToStr curanddxGenerateMethodToStr curanddxNormalMethodToStr "
    "curanddxTraitTypeToStr"
).split()

_p_ll, _p_size, _p_int = POINTER(c_longlong), POINTER(c_size_t), POINTER(c_int)
_CTYPES = {  # code -> the C parameters it stands for
    "h": [c_longlong], "e": [c_int], "z": [c_size_t], "s": [c_char_p], "p": [c_void_p],
    "S": [c_size_t, POINTER(c_char_p)], "Q": [c_size_t, _p_ll], "E": [c_size_t, _p_int], "*": [_p_ll],
    ">i": [_p_int], ">h": [_p_ll], ">z": [_p_size], ">e": [_p_int], ">s": [POINTER(c_char_p)],
    ">Q": [c_size_t, _p_ll], ">E": [c_size_t, _p_int], ">Z": [c_size_t, _p_size],
    ">B": [c_size_t, c_void_p], ">S": [c_size_t, c_char_p],
}


def _codes(name: str) -> list[str]:
    sig = SIGNATURES[name]
    return (sig[0] if isinstance(sig, tuple) else sig).split()


TABLE = {name: (c_int, [t for code in _codes(name) for t in _CTYPES[code]]) for name in SIGNATURES}
TABLE.update({name: (c_char_p, [c_int]) for name in TO_STR})
TABLE["commondxGetCodeLTOIRs"] = (c_int, [c_longlong, c_size_t, POINTER(c_void_p)])
TABLE["commondxGetLastErrorStr"] = (c_int, [_p_int, c_size_t, c_char_p])


class _MathDx(LazyFunctions):
    """libmathdx's functions, after NVRTC (which it links against) is loaded globally."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        load_library("nvrtc")
        return super().__getattr__(name)


_L = _MathDx("mathdx", TABLE)


def load():
    """Load libmathdx (and NVRTC) now; raises LibraryNotFoundError naming the extra that brings it."""
    load_library("nvrtc")
    return load_library("mathdx")


# ---------------------------------------------------------------------------------------------- errors

def commondxGetLastErrorStr() -> tuple[int, str] | None:
    """(status, text) of the last error of this thread, or None when libmathdx has none to report."""
    size = c_size_t()
    if _L.commondxGetLastErrorStrSize(byref(size)) or not size.value:
        return None
    code = c_int()
    buf = create_string_buffer(size.value)
    if _L.commondxGetLastErrorStr(byref(code), size.value, buf):
        return None
    return code.value, buf.value.decode(errors="replace")


_STATUS_NAMES = {int(m): m.name for m in globals()["commondxStatusType"]}


def check(status: int, function: str | None = None) -> None:
    """Raise ``MathDxError`` for a failure status, with libmathdx's last error text when it has one."""
    if not status:
        return
    detail = None
    try:
        last = commondxGetLastErrorStr()
    except Exception:  # the error text is a courtesy; the status is what matters
        last = None
    if last and last[1].strip():
        detail = last[1].strip()
    else:
        try:
            detail = globals()["commondxStatusToStr"](status) or None
        except Exception:
            detail = None
    if function:
        detail = f"{function}: {detail}" if detail else function
    raise MathDxError(status, _STATUS_NAMES.get(int(status)), detail)


# ------------------------------------------------------------------------------------------- wrappers

def _to_bytes(s) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def _make_wrapper(name: str):
    codes = _codes(name)
    sig = SIGNATURES[name]
    size_fn = sig[1] if isinstance(sig, tuple) else None
    n_in = sum(1 for c in codes if not c.startswith(">")) + sum(1 for c in codes if c in (">Q", ">E", ">Z"))

    def wrapper(*args):
        if len(args) != n_in:
            raise TypeError(f"{name}() takes {n_in} argument{'s' if n_in != 1 else ''} ({' '.join(codes)}), "
                            f"{len(args)} given")
        it = iter(args)
        c_args, outs, keep = [], [], []
        inputs = []
        for code in codes:
            if code in ("h", "e", "z"):
                v = int(next(it))
                c_args.append(v)
                inputs.append(v)
            elif code == "s":
                b = _to_bytes(next(it))
                keep.append(b)
                c_args.append(b)
                inputs.append(b)
            elif code == "p":
                v = next(it)
                c_args.append(None if v is None else int(v))
            elif code in ("S", "Q", "E", "*"):
                seq = list(next(it))
                if code == "S":
                    items = [_to_bytes(x) for x in seq]
                    keep.append(items)
                    arr = (c_char_p * max(len(items), 1))(*items)
                else:
                    arr = ((c_int if code == "E" else c_longlong) * max(len(seq), 1))(*[int(x) for x in seq])
                keep.append(arr)
                if code != "*":
                    c_args.append(len(seq))
                c_args.append(arr)
            elif code in (">i", ">e"):
                v = c_int()
                outs.append(v)
                c_args.append(byref(v))
            elif code == ">h":
                v = c_longlong()
                outs.append(v)
                c_args.append(byref(v))
            elif code == ">z":
                v = c_size_t()
                outs.append(v)
                c_args.append(byref(v))
            elif code == ">s":
                v = c_char_p()
                outs.append(v)
                c_args.append(byref(v))
            elif code in (">Q", ">E", ">Z"):
                n = int(next(it))
                arr = ({">Q": c_longlong, ">E": c_int, ">Z": c_size_t}[code] * max(n, 1))()
                outs.append((arr, n))
                c_args += [n, arr]
            elif code in (">B", ">S"):
                n = globals()[size_fn](*inputs)
                buf = create_string_buffer(max(n, 1))
                outs.append((buf, n, code))
                c_args += [n, buf]
        status = getattr(_L, name)(*c_args)
        if status:
            check(status, name)
        results = []
        for out in outs:
            if isinstance(out, tuple) and len(out) == 2:
                results.append(list(out[0][:out[1]]))
            elif isinstance(out, tuple):
                buf, n, code = out
                results.append(buf.raw[:n] if code == ">B" else buf.value.decode(errors="replace"))
            elif isinstance(out, c_char_p):
                results.append(out.value.decode() if out.value is not None else None)
            else:
                results.append(out.value)
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"{name}: signature codes {' '.join(codes)} (see the module's _CODES notes)."
    return wrapper


def _make_to_str(name: str):
    def wrapper(value: int) -> str:
        out = getattr(_L, name)(int(value))
        return out.decode() if out else ""

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"{name}(value) -> the C name of an enum value."
    return wrapper


for _name in SIGNATURES:
    globals()[_name] = _make_wrapper(_name)
for _name in TO_STR:
    globals()[_name] = _make_to_str(_name)
__all__ += list(SIGNATURES) + TO_STR
del _name


def commondxGetCodeLTOIRs(code: int) -> list[bytes]:
    """Every LTO-IR chunk of a finalized code handle (some code comes as more than one)."""
    n = globals()["commondxGetCodeNumLTOIRs"](code)
    sizes = globals()["commondxGetCodeLTOIRSizes"](code, n)
    bufs = [create_string_buffer(max(s, 1)) for s in sizes]
    ptrs = (c_void_p * max(n, 1))(*[cast(b, c_void_p).value for b in bufs])
    status = _L.commondxGetCodeLTOIRs(code, n, ptrs)
    if status:
        check(status, "commondxGetCodeLTOIRs")
    return [b.raw[:s] for b, s in zip(bufs, sizes)]
