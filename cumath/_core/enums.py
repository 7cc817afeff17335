"""Library-independent CUDA enums at the top of the package (``cumath.CudaDataType``, ``cumath.ComputeType``,
``cumath.LibraryPropertyType``), as nvmath-python offers them.

``CudaDataType`` and ``LibraryPropertyType`` are ``cudaDataType_t`` and ``libraryPropertyType_t`` of
``library_types.h`` (the binding's enums: one definition). ``ComputeType`` is the compute type of the cuQuantum
and cuTENSOR family of libraries (bit flags, ``custatevecComputeType_t``/``cutensornetComputeType_t``); the
compute type of cuBLAS and cuBLASLt is ``cumath.linalg.ComputeType``. Nothing here loads a native library.
"""

from __future__ import annotations

import enum

from .._bindings.cudart import cudaDataType as CudaDataType
from .._bindings.cudart import libraryPropertyType as LibraryPropertyType

__all__ = ["CudaDataType", "ComputeType", "LibraryPropertyType"]


class ComputeType(enum.IntEnum):
    """Compute types of the cuQuantum/cuTENSOR family (one bit each)."""

    COMPUTE_DEFAULT = 0
    COMPUTE_16F = 1 << 0
    COMPUTE_32F = 1 << 2
    COMPUTE_64F = 1 << 4
    COMPUTE_8U = 1 << 6
    COMPUTE_32U = 1 << 7
    COMPUTE_8I = 1 << 8
    COMPUTE_32I = 1 << 9
    COMPUTE_16BF = 1 << 10
    COMPUTE_TF32 = 1 << 12
