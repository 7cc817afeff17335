"""Enums of ``library_types.h`` (CUDA 13.5): the data types and library properties that cuFFT, cuBLAS/cuBLASLt,
cuSOLVER, cuSPARSE and cuDSS take. They are part of no binding cumath imports (these libraries are bound with
ctypes), so they are written here, from the header of the ``nvidia-cuda-runtime`` 13.5.37 wheel.
"""

from __future__ import annotations

import enum

__all__ = ["cudaDataType", "cudaDataType_t", "libraryPropertyType"]


def _compact_enum(name: str, prefix: str, table: str) -> type[enum.IntEnum]:
    """An IntEnum from ``"value Suffix value Suffix ..."``; member names are ``prefix + Suffix``."""
    words = table.split()
    return enum.IntEnum(name, [(prefix + words[i + 1], int(words[i])) for i in range(0, len(words), 2)],
                        module=__name__)


# enum cudaDataType_t (library_types.h); CUDA_R_8F_UE4M3 is an alias of CUDA_R_8F_E4M3 there and here.
cudaDataType = _compact_enum(
    "cudaDataType",
    "CUDA_",
    """
    2 R_16F 6 C_16F 14 R_16BF 15 C_16BF 0 R_32F 4 C_32F 1 R_64F 5 C_64F 16 R_4I 17 C_4I 18 R_4U 19 C_4U
    3 R_8I 7 C_8I 8 R_8U 9 C_8U 20 R_16I 21 C_16I 22 R_16U 23 C_16U 10 R_32I 11 C_32I 12 R_32U 13 C_32U
    24 R_64I 25 C_64I 26 R_64U 27 C_64U 28 R_8F_E4M3 28 R_8F_UE4M3 29 R_8F_E5M2 30 R_8F_UE8M0 31 R_6F_E2M3
    32 R_6F_E3M2 33 R_4F_E2M1 34 R_8F_UE5M3
    """,
)
cudaDataType_t = cudaDataType


class libraryPropertyType(enum.IntEnum):
    """library_types.h; cuFFT's cufftGetProperty takes it too."""

    MAJOR_VERSION = 0
    MINOR_VERSION = 1
    PATCH_LEVEL = 2
