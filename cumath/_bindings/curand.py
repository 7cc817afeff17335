"""ctypes bindings of cuRAND's host library (libcurand), 1:1 with the C functions cumath uses: the version and the
host tables the device generators need (Sobol direction vectors and scramble constants).

Enum values and signatures were read from ``curand.h`` of the ``nvidia-curand`` 10.4.0.35 wheel (CUDA 13.0).
Nothing is loaded at import time. The table getters return the address of the library's static table (an
int); ``cumath.device.random`` copies from it. A failure status raises ``CURANDError``.
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_int, c_void_p

from ..errors import CURANDError
from ._loader import LazyFunctions
from ._status import make_checker

__all__ = ["TABLE", "check", "curandStatus", "curandDirectionVectorSet", "curandGetVersion", "curandGetProperty",
           "curandGetDirectionVectors32", "curandGetDirectionVectors64", "curandGetScrambleConstants32",
           "curandGetScrambleConstants64", "SOBOL_DIMENSIONS"]

SOBOL_DIMENSIONS = 20000  # dimensions of each direction-vector set and of the scramble-constant tables


class curandStatus(enum.IntEnum):
    CURAND_STATUS_SUCCESS = 0
    CURAND_STATUS_VERSION_MISMATCH = 100
    CURAND_STATUS_NOT_INITIALIZED = 101
    CURAND_STATUS_ALLOCATION_FAILED = 102
    CURAND_STATUS_TYPE_ERROR = 103
    CURAND_STATUS_OUT_OF_RANGE = 104
    CURAND_STATUS_LENGTH_NOT_MULTIPLE = 105
    CURAND_STATUS_DOUBLE_PRECISION_REQUIRED = 106
    CURAND_STATUS_LAUNCH_FAILURE = 201
    CURAND_STATUS_PREEXISTING_FAILURE = 202
    CURAND_STATUS_INITIALIZATION_FAILED = 203
    CURAND_STATUS_ARCH_MISMATCH = 204
    CURAND_STATUS_INTERNAL_ERROR = 999


class curandDirectionVectorSet(enum.IntEnum):
    CURAND_DIRECTION_VECTORS_32_JOEKUO6 = 101
    CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6 = 102
    CURAND_DIRECTION_VECTORS_64_JOEKUO6 = 103
    CURAND_SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6 = 104


_p_int = POINTER(c_int)
_p_ptr = POINTER(c_void_p)

TABLE = {
    "curandGetVersion": (c_int, [_p_int]),
    "curandGetProperty": (c_int, [c_int, _p_int]),
    "curandGetDirectionVectors32": (c_int, [_p_ptr, c_int]),
    "curandGetDirectionVectors64": (c_int, [_p_ptr, c_int]),
    "curandGetScrambleConstants32": (c_int, [_p_ptr]),
    "curandGetScrambleConstants64": (c_int, [_p_ptr]),
}

_L = LazyFunctions("curand", TABLE)
check = make_checker(CURANDError, curandStatus)


def curandGetVersion() -> int:
    v = c_int()
    s = _L.curandGetVersion(byref(v))
    if s:
        check(s)
    return v.value


def curandGetProperty(type: int) -> int:
    """A libraryPropertyType value (0 MAJOR_VERSION, 1 MINOR_VERSION, 2 PATCH_LEVEL)."""
    v = c_int()
    s = _L.curandGetProperty(type, byref(v))
    if s:
        check(s)
    return v.value


def _table(name: str, *args) -> int:
    p = c_void_p()
    s = getattr(_L, name)(byref(p), *args)
    if s:
        check(s)
    return p.value or 0


def curandGetDirectionVectors32(set: int) -> int:
    """Address of the library's table of 32-bit direction vectors (SOBOL_DIMENSIONS x 32 unsigned ints)."""
    return _table("curandGetDirectionVectors32", set)


def curandGetDirectionVectors64(set: int) -> int:
    """Address of the library's table of 64-bit direction vectors (SOBOL_DIMENSIONS x 64 unsigned long longs)."""
    return _table("curandGetDirectionVectors64", set)


def curandGetScrambleConstants32() -> int:
    """Address of the library's SOBOL_DIMENSIONS 32-bit scramble constants."""
    return _table("curandGetScrambleConstants32")


def curandGetScrambleConstants64() -> int:
    """Address of the library's SOBOL_DIMENSIONS 64-bit scramble constants."""
    return _table("curandGetScrambleConstants64")
