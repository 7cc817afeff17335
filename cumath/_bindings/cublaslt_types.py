"""Enums, attribute type tables and structs of cuBLASLt (``cublasLt.h``, ``cublas_api.h``), as data.

Values were read from the headers of the ``nvidia-cublas`` 13.1.2.11 wheel (CUBLAS_VERSION 130102). The
functions are in ``cublaslt.py``, which re-exports everything here (so ``cublaslt.CUBLAS_OP_T`` works).
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import CFUNCTYPE, c_char_p, c_float, c_int, c_int8, c_int32, c_int64, c_size_t, c_uint16, c_uint32, \
    c_uint64, c_void_p, sizeof

CUBLAS_VERSION = 130102  # of the header the values below were read from (13.1.2)
CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH = 13, 1, 2


class ArrayOf:
    """Attribute type marker: the attribute is an array of ``ctype`` (length queried from the library)."""

    __slots__ = ("ctype",)

    def __init__(self, ctype):
        self.ctype = ctype

    def __repr__(self):
        return f"ArrayOf({self.ctype.__name__})"


_CTYPES = {"i8": c_int8, "u16": c_uint16, "i32": c_int32, "u32": c_uint32, "i64": c_int64, "u64": c_uint64,
           "f32": c_float, "ptr": c_void_p, "u32[]": ArrayOf(c_uint32)}


def _numbered(name: str, prefix: str, zero: str, suffixes: str, start: int):
    """An IntEnum whose member ``prefix + zero`` is 0 and whose other members, ``prefix + suffix`` for the
    whitespace-separated ``suffixes`` in the header's order, count up from ``start``."""
    members = [(prefix + zero, 0)] + [(prefix + x, i) for i, x in enumerate(suffixes.split(), start=start)]
    return enum.IntEnum(name, members, module=__name__)


def _enum(name: str, prefix: str, table: str, typed: bool = False):
    """An IntEnum from ``"Suffix value [ctype] Suffix value [ctype] ..."`` (members ``prefix + Suffix``).

    With ``typed``, every member carries a C type (a key of ``_CTYPES``) and the type table is returned too.
    """
    words, step = table.split(), 3 if typed else 2
    rows = [words[i:i + step] for i in range(0, len(words), step)]
    e = enum.IntEnum(name, [(prefix + r[0], int(r[1], 0)) for r in rows], module=__name__)
    if typed:
        return e, {e(int(r[1], 0)): _CTYPES[r[2]] for r in rows}
    return e


# ---------------------------------------------------------------------------------- cublas_api.h enums

cublasStatus_t = _enum("cublasStatus_t", "CUBLAS_STATUS_", """
SUCCESS 0   NOT_INITIALIZED 1   ALLOC_FAILED 3   INVALID_VALUE 7   ARCH_MISMATCH 8   MAPPING_ERROR 11
EXECUTION_FAILED 13   INTERNAL_ERROR 14   NOT_SUPPORTED 15   LICENSE_ERROR 16
""")

cublasComputeType_t = _enum("cublasComputeType_t", "CUBLAS_COMPUTE_", """
16F 64   16F_PEDANTIC 65   32F 68   32F_PEDANTIC 69   32F_FAST_16F 74   32F_FAST_16BF 75   32F_FAST_TF32 77
32F_EMULATED_16BFX9 78   64F 70   64F_PEDANTIC 71   64F_EMULATED_FIXEDPOINT 79   32I 72   32I_PEDANTIC 73
""")

# CUBLAS_OP_HERMITAN is a synonym of CUBLAS_OP_C (an IntEnum alias); CUBLAS_OP_CONJG is a placeholder.
cublasOperation_t = _enum("cublasOperation_t", "CUBLAS_OP_", """
N 0   T 1   C 2   HERMITAN 2   CONJG 3
""")

cublasFillMode_t = _enum("cublasFillMode_t", "CUBLAS_FILL_MODE_", "LOWER 0\nUPPER 1\nFULL 2")
cublasPointerMode_t = _enum("cublasPointerMode_t", "CUBLAS_POINTER_MODE_", "HOST 0\nDEVICE 1")
cublasEmulationStrategy_t = _enum("cublasEmulationStrategy_t", "CUBLAS_EMULATION_STRATEGY_",
                                  "DEFAULT 0\nPERFORMANT 1\nEAGER 2")

# library_types.h (emulation descriptor values)
cudaEmulationMantissaControl = _enum("cudaEmulationMantissaControl", "CUDA_EMULATION_MANTISSA_CONTROL_",
                                     "DYNAMIC 0\nFIXED 1")
cudaEmulationSpecialValuesSupport = _enum(
    "cudaEmulationSpecialValuesSupport", "CUDA_EMULATION_SPECIAL_VALUES_SUPPORT_",
    "DEFAULT 0xFFFF\nNONE 0\nINFINITY 1\nNAN 2",
)

# ------------------------------------------------------------------------------------ cublasLt.h enums

# cublasLtMatmulTile_t: values 1, 2, ... in the order of the header (contiguous up to 634), after UNDEFINED = 0;
# CUBLASLT_MATMUL_TILE_END (635) is left out.
_TILES = """
8x8 8x16 16x8 8x32 16x16 32x8 8x64 16x32 32x16 64x8 32x32 32x64 64x32 32x128 64x64 128x32 64x128 128x64
64x256 128x128 256x64 64x512 128x256 256x128 512x64 64x96 96x64 96x128 128x160 160x128 192x128 128x192 128x96
32x256 256x32 8x128 8x192 8x256 8x320 8x384 8x448 8x512 8x576 8x640 8x704 8x768 16x64 16x128 16x192 16x256
16x320 16x384 16x448 16x512 16x576 16x640 16x704 16x768 24x64 24x128 24x192 24x256 24x320 24x384 24x448
24x512 24x576 24x640 24x704 24x768 32x192 32x320 32x384 32x448 32x512 32x576 32x640 32x704 32x768 40x64
40x128 40x192 40x256 40x320 40x384 40x448 40x512 40x576 40x640 40x704 40x768 48x64 48x128 48x192 48x256
48x320 48x384 48x448 48x512 48x576 48x640 48x704 48x768 56x64 56x128 56x192 56x256 56x320 56x384 56x448
56x512 56x576 56x640 56x704 56x768 64x192 64x320 64x384 64x448 64x576 64x640 64x704 64x768 72x64 72x128
72x192 72x256 72x320 72x384 72x448 72x512 72x576 72x640 80x64 80x128 80x192 80x256 80x320 80x384 80x448
80x512 80x576 88x64 88x128 88x192 88x256 88x320 88x384 88x448 88x512 96x192 96x256 96x320 96x384 96x448
96x512 104x64 104x128 104x192 104x256 104x320 104x384 104x448 112x64 112x128 112x192 112x256 112x320 112x384
120x64 120x128 120x192 120x256 120x320 120x384 128x320 128x384 136x64 136x128 136x192 136x256 136x320 144x64
144x128 144x192 144x256 144x320 152x64 152x128 152x192 152x256 152x320 160x64 160x192 160x256 168x64 168x128
168x192 168x256 176x64 176x128 176x192 176x256 184x64 184x128 184x192 184x256 192x64 192x192 192x256 200x64
200x128 200x192 208x64 208x128 208x192 216x64 216x128 216x192 224x64 224x128 224x192 232x64 232x128 232x192
240x64 240x128 240x192 248x64 248x128 248x192 256x192 264x64 264x128 272x64 272x128 280x64 280x128 288x64
288x128 296x64 296x128 304x64 304x128 312x64 312x128 320x64 320x128 328x64 328x128 336x64 336x128 344x64
344x128 352x64 352x128 360x64 360x128 368x64 368x128 376x64 376x128 384x64 384x128 392x64 400x64 408x64
416x64 424x64 432x64 440x64 448x64 456x64 464x64 472x64 480x64 488x64 496x64 504x64 520x64 528x64 536x64
544x64 552x64 560x64 568x64 576x64 584x64 592x64 600x64 608x64 616x64 624x64 632x64 640x64 648x64 656x64
664x64 672x64 680x64 688x64 696x64 704x64 712x64 720x64 728x64 736x64 744x64 752x64 760x64 768x64 64x16 64x24
64x40 64x48 64x56 64x72 64x80 64x88 64x104 64x112 64x120 64x136 64x144 64x152 64x160 64x168 64x176 64x184
64x200 64x208 64x216 64x224 64x232 64x240 64x248 64x264 64x272 64x280 64x288 64x296 64x304 64x312 64x328
64x336 64x344 64x352 64x360 64x368 64x376 64x392 64x400 64x408 64x416 64x424 64x432 64x440 64x456 64x464
64x472 64x480 64x488 64x496 64x504 64x520 64x528 64x536 64x544 64x552 64x560 64x568 64x584 64x592 64x600
64x608 64x616 64x624 64x632 64x648 64x656 64x664 64x672 64x680 64x688 64x696 64x712 64x720 64x728 64x736
64x744 64x752 64x760 128x8 128x16 128x24 128x40 128x48 128x56 128x72 128x80 128x88 128x104 128x112 128x120
128x136 128x144 128x152 128x168 128x176 128x184 128x200 128x208 128x216 128x224 128x232 128x240 128x248
128x264 128x272 128x280 128x288 128x296 128x304 128x312 128x328 128x336 128x344 128x352 128x360 128x368
128x376 128x392 128x400 128x408 128x416 128x424 128x432 128x440 128x448 128x456 128x464 128x472 128x480
128x488 128x496 128x504 128x512 192x8 192x16 192x24 192x32 192x40 192x48 192x56 192x72 192x80 192x88 192x96
192x104 192x112 192x120 192x136 192x144 192x152 192x160 192x168 192x176 192x184 192x200 192x208 192x216
192x224 192x232 192x240 192x248 192x264 192x272 192x280 192x288 192x296 192x304 192x312 192x320 192x328
192x336 256x8 256x16 256x24 256x40 256x48 256x56 256x72 256x80 256x88 256x96 256x104 256x112 256x120 256x136
256x144 256x152 256x160 256x168 256x176 256x184 256x200 256x208 256x216 256x224 256x232 256x240 256x248
256x256 320x8 320x16 320x24 320x32 320x40 320x48 320x56 320x72 320x80 320x88 320x96 320x104 320x112 320x120
320x136 320x144 320x152 320x160 320x168 320x176 320x184 320x192 320x200 384x8 384x16 384x24 384x32 384x40
384x48 384x56 384x72 384x80 384x88 384x96 384x104 384x112 384x120 384x136 384x144 384x152 384x160 384x168
448x8 448x16 448x24 448x32 448x40 448x48 448x56 448x72 448x80 448x88 448x96 448x104 448x112 448x120 448x128
448x136 448x144 512x8 512x16 512x24 512x32 512x40 512x48 512x56 512x72 512x80 512x88 512x96 512x104 512x112
512x120 512x128 576x8 576x16 576x24 576x32 576x40 576x48 576x56 576x72 576x80 576x88 576x96 576x104 576x112
640x8 640x16 640x24 640x32 640x40 640x48 640x56 640x72 640x80 640x88 640x96 704x8 704x16 704x24 704x32 704x40
704x48 704x56 704x72 704x80 704x88 768x8 768x16 768x24 768x32 768x40 768x48 768x56 768x72 768x80 256x512
256x1024 512x512 512x1024
"""
cublasLtMatmulTile_t = _numbered("cublasLtMatmulTile_t", "CUBLASLT_MATMUL_TILE_", "UNDEFINED", _TILES, 1)

cublasLtMatmulStages_t = _enum("cublasLtMatmulStages_t", "CUBLASLT_MATMUL_STAGES_", """
UNDEFINED 0   16x1 1   16x2 2   16x3 3   16x4 4   16x5 5   16x6 6   32x1 7   32x2 8   32x3 9   32x4 10   32x5 11
32x6 12   64x1 13   64x2 14   64x3 15   64x4 16   64x5 17   64x6 18   128x1 19   128x2 20   128x3 21   128x4 22
128x5 23   128x6 24   32x10 25   8x4 26   16x10 27   8x5 28   8x3 31   8xAUTO 32   16xAUTO 33   32xAUTO 34
64xAUTO 35   128xAUTO 36   256xAUTO 37   768xAUTO 38
""")

# cublasLtClusterShape_t: AUTO = 0, then the shapes below from 2 on (CUBLASLT_CLUSTER_SHAPE_END left out).
_CLUSTERS = """
1x1x1 2x1x1 4x1x1 1x2x1 2x2x1 4x2x1 1x4x1 2x4x1 4x4x1 8x1x1 1x8x1 8x2x1 2x8x1 16x1x1 1x16x1 3x1x1 5x1x1 6x1x1
7x1x1 9x1x1 10x1x1 11x1x1 12x1x1 13x1x1 14x1x1 15x1x1 3x2x1 5x2x1 6x2x1 7x2x1 1x3x1 2x3x1 3x3x1 4x3x1 5x3x1
3x4x1 1x5x1 2x5x1 3x5x1 1x6x1 2x6x1 1x7x1 2x7x1 1x9x1 1x10x1 1x11x1 1x12x1 1x13x1 1x14x1 1x15x1
"""
cublasLtClusterShape_t = _numbered("cublasLtClusterShape_t", "CUBLASLT_CLUSTER_SHAPE_", "AUTO", _CLUSTERS, 2)

cublasLtMatmulInnerShape_t = _enum("cublasLtMatmulInnerShape_t", "CUBLASLT_MATMUL_INNER_SHAPE_", """
UNDEFINED 0   MMA884 1   MMA1684 2   MMA1688 3   MMA16816 4
""")

cublasLtMatmulMatrixScale_t = _enum("cublasLtMatmulMatrixScale_t", "CUBLASLT_MATMUL_MATRIX_SCALE_", """
SCALAR_32F 0   VEC16_UE4M3 1   VEC32_UE8M0 2   OUTER_VEC_32F 3   VEC128_32F 4   BLK128x128_32F 5
""")

cublasLtPointerMode_t = _enum("cublasLtPointerMode_t", "CUBLASLT_POINTER_MODE_", """
HOST 0   DEVICE 1   DEVICE_VECTOR 2   ALPHA_DEVICE_VECTOR_BETA_ZERO 3   ALPHA_DEVICE_VECTOR_BETA_HOST 4
""")

cublasLtPointerModeMask_t = _enum("cublasLtPointerModeMask_t", "CUBLASLT_POINTER_MODE_MASK_", """
HOST 1   DEVICE 2   DEVICE_VECTOR 4   ALPHA_DEVICE_VECTOR_BETA_ZERO 8   ALPHA_DEVICE_VECTOR_BETA_HOST 16
""")

# cublasLtNumericalImplFlags_t is a uint64_t with #define'd bits: an IntFlag here.
cublasLtNumericalImplFlags_t = enum.IntFlag(
    "cublasLtNumericalImplFlags_t",
    [
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA", 0x01), ("CUBLASLT_NUMERICAL_IMPL_FLAGS_HMMA", 0x02),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_IMMA", 0x04), ("CUBLASLT_NUMERICAL_IMPL_FLAGS_DMMA", 0x08),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK", 0xFE), ("CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_TYPE_MASK", 0xFF),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_16F", 0x01 << 8),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F", 0x02 << 8),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_64F", 0x04 << 8),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32I", 0x08 << 8),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_TYPE_MASK", 0xFF << 8),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F", 0x01 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF", 0x02 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32", 0x04 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_32F", 0x08 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_64F", 0x10 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8I", 0x20 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E4M3", 0x40 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E5M2", 0x80 << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_INPUT_TYPE_MASK", 0xFF << 16),
        ("CUBLASLT_NUMERICAL_IMPL_FLAGS_GAUSSIAN", 0x01 << 32),
    ],
    module=__name__,
)

cublasLtOrder_t = _enum("cublasLtOrder_t", "CUBLASLT_ORDER_", """
COL 0   ROW 1   COL32 2   COL4_4R2_8C 3   COL32_2R_4R4 4
""")

cublasLtBatchMode_t = _enum("cublasLtBatchMode_t", "CUBLASLT_BATCH_MODE_", "STRIDED 0\nPOINTER_ARRAY 1")

cublasLtReductionScheme_t = _enum("cublasLtReductionScheme_t", "CUBLASLT_REDUCTION_SCHEME_", """
NONE 0   INPLACE 1   COMPUTE_TYPE 2   OUTPUT_TYPE 4   MASK 0x7
""")

cublasLtEpilogue_t = _enum("cublasLtEpilogue_t", "CUBLASLT_EPILOGUE_", """
DEFAULT 1   RELU 2   RELU_AUX 130   BIAS 4   RELU_BIAS 6   RELU_AUX_BIAS 134   DRELU 136   DRELU_BGRAD 152
GELU 32   GELU_AUX 160   GELU_BIAS 36   GELU_AUX_BIAS 164   DGELU 192   DGELU_BGRAD 208   BGRADA 256   BGRADB 512
""")

cublasLtMatmulSearch_t = _enum("cublasLtMatmulSearch_t", "CUBLASLT_SEARCH_", "BEST_FIT 0\nLIMITED_BY_ALGO_ID 1\n"
                               + "\n".join(f"RESERVED_{i:02d} {i}" for i in range(2, 10)))

# ------------------------------------------------------------- attribute enums with their C types (data)

cublasLtMatrixLayoutAttribute_t, MATRIX_LAYOUT_ATTRIBUTE_TYPES = _enum(
    "cublasLtMatrixLayoutAttribute_t", "CUBLASLT_MATRIX_LAYOUT_", """
TYPE 0 u32   ORDER 1 i32   ROWS 2 u64   COLS 3 u64   LD 4 i64   BATCH_COUNT 5 i32   STRIDED_BATCH_OFFSET 6 i64
PLANE_OFFSET 7 i64   BATCH_MODE 8 u32
""", typed=True)

cublasLtMatmulDescAttributes_t, MATMUL_DESC_ATTRIBUTE_TYPES = _enum(
    "cublasLtMatmulDescAttributes_t", "CUBLASLT_MATMUL_DESC_", """
COMPUTE_TYPE 0 i32   SCALE_TYPE 1 i32   POINTER_MODE 2 i32   TRANSA 3 i32   TRANSB 4 i32   TRANSC 5 i32
FILL_MODE 6 i32   EPILOGUE 7 u32   BIAS_POINTER 8 ptr   BIAS_BATCH_STRIDE 10 i64   EPILOGUE_AUX_POINTER 11 ptr
EPILOGUE_AUX_LD 12 i64   EPILOGUE_AUX_BATCH_STRIDE 13 i64   ALPHA_VECTOR_BATCH_STRIDE 14 i64
SM_COUNT_TARGET 15 i32   A_SCALE_POINTER 17 ptr   B_SCALE_POINTER 18 ptr   C_SCALE_POINTER 19 ptr
D_SCALE_POINTER 20 ptr   AMAX_D_POINTER 21 ptr   EPILOGUE_AUX_DATA_TYPE 22 i32   EPILOGUE_AUX_SCALE_POINTER 23 ptr
EPILOGUE_AUX_AMAX_POINTER 24 ptr   FAST_ACCUM 25 i8   BIAS_DATA_TYPE 26 i32   A_SCALE_MODE 31 i32
B_SCALE_MODE 32 i32   C_SCALE_MODE 33 i32   D_SCALE_MODE 34 i32   EPILOGUE_AUX_SCALE_MODE 35 i32
D_OUT_SCALE_POINTER 36 ptr   D_OUT_SCALE_MODE 37 i32   EMULATION_DESCRIPTOR 38 ptr
""", typed=True)

cublasLtMatrixTransformDescAttributes_t, MATRIX_TRANSFORM_DESC_ATTRIBUTE_TYPES = _enum(
    "cublasLtMatrixTransformDescAttributes_t", "CUBLASLT_MATRIX_TRANSFORM_DESC_", """
SCALE_TYPE 0 i32   POINTER_MODE 1 i32   TRANSA 2 i32   TRANSB 3 i32
""", typed=True)

cublasLtEmulationDescAttributes_t, EMULATION_DESC_ATTRIBUTE_TYPES = _enum(
    "cublasLtEmulationDescAttributes_t", "CUBLASLT_EMULATION_DESC_", """
STRATEGY 0 i32   SPECIAL_VALUES_SUPPORT 1 i32   FIXEDPOINT_MANTISSA_CONTROL 2 i32
FIXEDPOINT_MAX_MANTISSA_BIT_COUNT 3 i32   FIXEDPOINT_MANTISSA_BIT_OFFSET 4 i32
FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER 5 ptr
""", typed=True)

cublasLtMatmulPreferenceAttributes_t, MATMUL_PREFERENCE_ATTRIBUTE_TYPES = _enum(
    "cublasLtMatmulPreferenceAttributes_t", "CUBLASLT_MATMUL_PREF_", """
SEARCH_MODE 0 u32   MAX_WORKSPACE_BYTES 1 u64   REDUCTION_SCHEME_MASK 3 u32   MIN_ALIGNMENT_A_BYTES 5 u32
MIN_ALIGNMENT_B_BYTES 6 u32   MIN_ALIGNMENT_C_BYTES 7 u32   MIN_ALIGNMENT_D_BYTES 8 u32   MAX_WAVES_COUNT 9 f32
IMPL_MASK 12 u64
""", typed=True)

cublasLtMatmulAlgoCapAttributes_t, MATMUL_ALGO_CAP_ATTRIBUTE_TYPES = _enum(
    "cublasLtMatmulAlgoCapAttributes_t", "CUBLASLT_ALGO_CAP_", """
SPLITK_SUPPORT 0 i32   REDUCTION_SCHEME_MASK 1 u32   CTA_SWIZZLING_SUPPORT 2 u32   STRIDED_BATCH_SUPPORT 3 i32
OUT_OF_PLACE_RESULT_SUPPORT 4 i32   UPLO_SUPPORT 5 i32   TILE_IDS 6 u32[]   CUSTOM_OPTION_MAX 7 i32
CUSTOM_MEMORY_ORDER 10 i32   POINTER_MODE_MASK 11 u32   EPILOGUE_MASK 12 u32   STAGES_IDS 13 u32[]
LD_NEGATIVE 14 i32   NUMERICAL_IMPL_FLAGS 15 u64   MIN_ALIGNMENT_A_BYTES 16 u32   MIN_ALIGNMENT_B_BYTES 17 u32
MIN_ALIGNMENT_C_BYTES 18 u32   MIN_ALIGNMENT_D_BYTES 19 u32   POINTER_ARRAY_BATCH_SUPPORT 21 i32
FLOATING_POINT_EMULATION_SUPPORT 22 i32
""", typed=True)

cublasLtMatmulAlgoConfigAttributes_t, MATMUL_ALGO_CONFIG_ATTRIBUTE_TYPES = _enum(
    "cublasLtMatmulAlgoConfigAttributes_t", "CUBLASLT_ALGO_CONFIG_", """
ID 0 i32   TILE_ID 1 u32   SPLITK_NUM 2 i32   REDUCTION_SCHEME 3 u32   CTA_SWIZZLING 4 u32   CUSTOM_OPTION 5 u32
STAGES_ID 6 u32   INNER_SHAPE_ID 7 u16   CLUSTER_SHAPE_ID 8 u16
""", typed=True)

# Every enum of this module, and its members as module constants (CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLAS_OP_T...).
ENUMS = (
    cublasStatus_t, cublasComputeType_t, cublasOperation_t, cublasFillMode_t, cublasPointerMode_t,
    cublasEmulationStrategy_t, cudaEmulationMantissaControl, cudaEmulationSpecialValuesSupport,
    cublasLtMatmulTile_t, cublasLtMatmulStages_t, cublasLtClusterShape_t, cublasLtMatmulInnerShape_t,
    cublasLtMatmulMatrixScale_t, cublasLtPointerMode_t, cublasLtPointerModeMask_t, cublasLtNumericalImplFlags_t,
    cublasLtOrder_t, cublasLtBatchMode_t, cublasLtReductionScheme_t, cublasLtEpilogue_t, cublasLtMatmulSearch_t,
    cublasLtMatrixLayoutAttribute_t, cublasLtMatmulDescAttributes_t, cublasLtMatrixTransformDescAttributes_t,
    cublasLtEmulationDescAttributes_t, cublasLtMatmulPreferenceAttributes_t, cublasLtMatmulAlgoCapAttributes_t,
    cublasLtMatmulAlgoConfigAttributes_t,
)
for _e in ENUMS:
    for _name, _member in _e.__members__.items():
        globals()[_name] = _member
del _e, _name, _member

# ------------------------------------------------------------------------------------------- structs


class cublasLtMatmulAlgo_t(ctypes.Structure):
    """Semi-opaque algorithm descriptor: ``uint64_t data[8]`` (64 bytes); serialisable for the same library."""

    _fields_ = [("data", c_uint64 * 8)]

    @classmethod
    def from_bytes(cls, raw: bytes) -> "cublasLtMatmulAlgo_t":
        if len(raw) != sizeof(cls):
            raise ValueError(f"a cublasLtMatmulAlgo_t is {sizeof(cls)} bytes, got {len(raw)}")
        return cls.from_buffer_copy(raw)

    def to_bytes(self) -> bytes:
        return bytes(self)


class cublasLtMatmulHeuristicResult_t(ctypes.Structure):
    """Result of cublasLtMatmulAlgoGetHeuristic / cublasLtMatmulAlgoCheck (96 bytes on 64-bit Linux)."""

    _fields_ = [
        ("algo", cublasLtMatmulAlgo_t),
        ("workspaceSize", c_size_t),
        ("state", c_int),  # cublasStatus_t; the other fields are valid only when it is CUBLAS_STATUS_SUCCESS
        ("wavesCount", c_float),
        ("reserved", c_int * 4),
    ]


# Logger callback: void (*)(int logLevel, const char *functionName, const char *message). Keep the object alive.
cublasLtLoggerCallback_t = CFUNCTYPE(None, c_int, c_char_p, c_char_p)
