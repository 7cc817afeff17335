"""ctypes bindings of oneMKL's DFTI (``mkl_dfti.h``, through ``libmkl_rt``), 1:1 with its C functions.

Facts from Intel's oneMKL Developer Reference (C), "FFT Functions", and ``mkl_dfti.h`` (mkl-include 2026.2):
``DftiCreateDescriptor(&desc, precision, domain, dimension, length)`` (``length`` is an ``MKL_LONG`` for one
dimension and an ``MKL_LONG*`` array otherwise), ``DftiSetValue(desc, param, value)``, ``DftiCommitDescriptor``,
``DftiComputeForward(desc, in[, out])``, ``DftiComputeBackward``, ``DftiFreeDescriptor(&desc)``,
``DftiErrorClass`` and ``DftiErrorMessage``. ``MKL_LONG`` is a C ``long`` (64 bits on Linux).

``DftiCreateDescriptor``, ``DftiSetValue`` and the compute functions are variadic: their trailing arguments are
passed as explicitly typed ctypes values (an ``MKL_LONG``, a pointer), which is how C passes them too. The
compute functions take ``(descriptor, in, out)`` whatever the placement: an in-place descriptor ignores ``out``.
Nothing is loaded at import time.
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_char_p, c_int, c_long, c_void_p

from ..errors import DFTIError
from ._loader import LazyFunctions

__all__ = ["Param", "Value", "ErrorClass", "TABLE", "check", "create_descriptor", "set_value", "set_strides",
           "commit_descriptor", "free_descriptor", "compute_forward", "compute_backward", "error_message",
           "available"]


class Param(enum.IntEnum):
    """``enum DFTI_CONFIG_PARAM``: the descriptor settings cumath uses."""

    FORWARD_DOMAIN = 0
    DIMENSION = 1
    LENGTHS = 2
    PRECISION = 3
    FORWARD_SCALE = 4
    BACKWARD_SCALE = 5
    NUMBER_OF_TRANSFORMS = 7
    COMPLEX_STORAGE = 8
    REAL_STORAGE = 9
    CONJUGATE_EVEN_STORAGE = 10
    PLACEMENT = 11
    WORKSPACE = 17
    ORDERING = 18
    TRANSPOSE = 19
    PACKED_FORMAT = 21
    COMMIT_STATUS = 22
    VERSION = 23
    NUMBER_OF_USER_THREADS = 26
    THREAD_LIMIT = 27
    DESTROY_INPUT = 28
    FWD_DISTANCE = 58
    BWD_DISTANCE = 59
    FWD_STRIDES = 60
    BWD_STRIDES = 61


class Value(enum.IntEnum):
    """``enum DFTI_CONFIG_VALUE``."""

    COMMITTED = 30
    UNCOMMITTED = 31
    COMPLEX = 32
    REAL = 33
    SINGLE = 35
    DOUBLE = 36
    COMPLEX_COMPLEX = 39
    COMPLEX_REAL = 40
    REAL_COMPLEX = 41
    REAL_REAL = 42
    INPLACE = 43
    NOT_INPLACE = 44
    ORDERED = 48
    BACKWARD_SCRAMBLED = 49
    ALLOW = 51
    AVOID = 52
    NONE = 53
    CCS_FORMAT = 54
    PACK_FORMAT = 55
    PERM_FORMAT = 56
    CCE_FORMAT = 57


class ErrorClass(enum.IntEnum):
    """The error classes of ``mkl_dfti.h`` (``DftiErrorClass(status, cls)`` says whether a status is one)."""

    NO_ERROR = 0
    MEMORY_ERROR = 1
    INVALID_CONFIGURATION = 2
    INCONSISTENT_CONFIGURATION = 3
    MULTITHREADED_ERROR = 4
    BAD_DESCRIPTOR = 5
    UNIMPLEMENTED = 6
    MKL_INTERNAL_ERROR = 7
    NUMBER_OF_THREADS_ERROR = 8
    LENGTH_EXCEEDS_INT32 = 9
    NO_WORKSPACE = 11


_p = c_void_p
TABLE = {
    # variadic: only the fixed arguments are typed
    "DftiCreateDescriptor": (c_long, [POINTER(c_void_p), c_int, c_int, c_long]),
    "DftiSetValue": (c_long, [_p, c_int]),
    "DftiCommitDescriptor": (c_long, [_p]),
    "DftiFreeDescriptor": (c_long, [POINTER(c_void_p)]),
    # the hot path: (descriptor, in, out), typed so that a call converts three ints and nothing else
    "DftiComputeForward": (c_long, [_p, _p, _p]),
    "DftiComputeBackward": (c_long, [_p, _p, _p]),
    "DftiErrorClass": (c_long, [c_long, c_long]),
    "DftiErrorMessage": (c_char_p, [c_long]),
}

_L = LazyFunctions("mkl_rt", TABLE)


def available() -> bool:
    """Whether oneMKL (with DFTI) can be loaded; loads it."""
    try:
        return _L.has("DftiCreateDescriptor")
    except OSError:  # LibraryNotFoundError
        return False


def error_message(status: int) -> str:
    msg = _L.DftiErrorMessage(status)
    return msg.decode(errors="replace") if msg else ""


def _class_name(status: int) -> str | None:
    for cls in ErrorClass:
        if cls and _L.DftiErrorClass(status, int(cls)):
            return cls.name
    return None


def check(status: int, detail: str | None = None) -> None:
    """Raise DFTIError for a non-zero status (its class's name, and MKL's message in the detail)."""
    if status:
        msg = error_message(status)
        raise DFTIError(status, _class_name(status), f"{detail}: {msg}" if detail else msg)


def create_descriptor(precision: int, domain: int, lengths) -> int:
    """``DftiCreateDescriptor`` for ``lengths`` (a sequence of ints); returns the handle (an int)."""
    handle = c_void_p()
    dims = len(lengths)
    if dims == 1:
        status = _L.DftiCreateDescriptor(byref(handle), precision, domain, dims, c_long(lengths[0]))
    else:
        arr = (c_long * dims)(*lengths)
        status = _L.DftiCreateDescriptor(byref(handle), precision, domain, dims, arr)
    check(status, f"DftiCreateDescriptor(lengths={list(lengths)})")
    return handle.value


def set_value(desc: int, param: int, value: int) -> None:
    """``DftiSetValue`` of an integer (``MKL_LONG``) or enum-valued setting."""
    check(_L.DftiSetValue(desc, param, c_long(value)), f"DftiSetValue({Param(param).name}={value})")


def set_strides(desc: int, param: int, offset: int, strides) -> None:
    """``DftiSetValue`` of FWD_STRIDES / BWD_STRIDES: ``[offset, s1, ..., sd]`` in elements."""
    arr = (c_long * (1 + len(strides)))(offset, *strides)
    check(_L.DftiSetValue(desc, param, arr), f"DftiSetValue({Param(param).name}={[offset, *strides]})")


def commit_descriptor(desc: int) -> None:
    check(_L.DftiCommitDescriptor(desc), "DftiCommitDescriptor")


def free_descriptor(desc: int) -> None:
    """``DftiFreeDescriptor`` (ignores 0)."""
    if desc:
        check(_L.DftiFreeDescriptor(byref(c_void_p(desc))), "DftiFreeDescriptor")


def compute_forward(desc: int, in_ptr: int, out_ptr: int) -> None:
    check(_L.DftiComputeForward(desc, in_ptr, out_ptr), "DftiComputeForward")


def compute_backward(desc: int, in_ptr: int, out_ptr: int) -> None:
    check(_L.DftiComputeBackward(desc, in_ptr, out_ptr), "DftiComputeBackward")


def raw_compute(sign: int):
    """The raw typed ctypes function computing direction ``sign`` (-1 forward, +1 backward): returns the status
    (0 on success) instead of raising, for hot paths that check it themselves."""
    return _L.DftiComputeForward if sign < 0 else _L.DftiComputeBackward
