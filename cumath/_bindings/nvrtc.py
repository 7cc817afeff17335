"""ctypes bindings of NVRTC (libnvrtc), 1:1 with the C functions cumath uses.

Enum values and signatures were read from ``nvrtc.h`` of the ``nvidia-cuda-nvrtc`` 13.0.88 wheel.

Nothing is loaded at import time: the functions of ``TABLE`` are bound on the first call of any wrapper.
Programs (``nvrtcProgram``) are Python ints. Every wrapper returns its outputs instead of taking
out-pointers and raises ``NVRTCError`` on a failure status; a failed ``nvrtcCompileProgram`` carries the
program log in the message and in the exception's ``log`` attribute.
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_void_p, create_string_buffer

from ..errors import NVRTCError
from ._loader import LazyFunctions
from ._status import make_checker

__all__ = [
    "TABLE",
    "check",
    "nvrtcResult",
    "nvrtcGetErrorString",
    "nvrtcVersion",
    "nvrtcGetNumSupportedArchs",
    "nvrtcGetSupportedArchs",
    "nvrtcCreateProgram",
    "nvrtcDestroyProgram",
    "nvrtcCompileProgram",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetLTOIRSize",
    "nvrtcGetLTOIR",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcAddNameExpression",
    "nvrtcGetLoweredName",
]


class nvrtcResult(enum.IntEnum):
    NVRTC_SUCCESS = 0
    NVRTC_ERROR_OUT_OF_MEMORY = 1
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2
    NVRTC_ERROR_INVALID_INPUT = 3
    NVRTC_ERROR_INVALID_PROGRAM = 4
    NVRTC_ERROR_INVALID_OPTION = 5
    NVRTC_ERROR_COMPILATION = 6
    NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7
    NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION = 8
    NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION = 9
    NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID = 10
    NVRTC_ERROR_INTERNAL_ERROR = 11
    NVRTC_ERROR_TIME_FILE_WRITE_FAILED = 12
    NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED = 13
    NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED = 14
    NVRTC_ERROR_PCH_CREATE = 15
    NVRTC_ERROR_CANCELLED = 16
    NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED = 17


_p_int = POINTER(c_int)
_p_size = POINTER(c_size_t)
_p_ptr = POINTER(c_void_p)
_p_str = POINTER(c_char_p)

TABLE = {
    "nvrtcGetErrorString": (c_char_p, [c_int]),
    "nvrtcVersion": (c_int, [_p_int, _p_int]),
    "nvrtcGetNumSupportedArchs": (c_int, [_p_int]),
    "nvrtcGetSupportedArchs": (c_int, [_p_int]),
    # prog, src, name, numHeaders, headers, includeNames
    "nvrtcCreateProgram": (c_int, [_p_ptr, c_char_p, c_char_p, c_int, _p_str, _p_str]),
    "nvrtcDestroyProgram": (c_int, [_p_ptr]),
    "nvrtcCompileProgram": (c_int, [c_void_p, c_int, _p_str]),
    "nvrtcGetPTXSize": (c_int, [c_void_p, _p_size]),
    "nvrtcGetPTX": (c_int, [c_void_p, c_char_p]),
    "nvrtcGetCUBINSize": (c_int, [c_void_p, _p_size]),
    "nvrtcGetCUBIN": (c_int, [c_void_p, c_char_p]),
    "nvrtcGetLTOIRSize": (c_int, [c_void_p, _p_size]),
    "nvrtcGetLTOIR": (c_int, [c_void_p, c_char_p]),
    "nvrtcGetProgramLogSize": (c_int, [c_void_p, _p_size]),
    "nvrtcGetProgramLog": (c_int, [c_void_p, c_char_p]),
    "nvrtcAddNameExpression": (c_int, [c_void_p, c_char_p]),
    "nvrtcGetLoweredName": (c_int, [c_void_p, c_char_p, _p_str]),
}

_L = LazyFunctions("nvrtc", TABLE)
check = make_checker(NVRTCError, nvrtcResult)


def _bytes(s: str | bytes) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def _str_array(items) -> tuple:
    """A ``const char *[]`` (or NULL for an empty sequence) and the bytes objects that keep it alive."""
    encoded = [_bytes(x) for x in items]
    if not encoded:
        return None, encoded
    return (c_char_p * len(encoded))(*encoded), encoded


def nvrtcGetErrorString(result: int) -> str:
    return _L.nvrtcGetErrorString(result).decode()


def nvrtcVersion() -> tuple[int, int]:
    """(major, minor) of the loaded NVRTC."""
    major, minor = c_int(), c_int()
    s = _L.nvrtcVersion(byref(major), byref(minor))
    if s:
        check(s)
    return major.value, minor.value


def nvrtcGetNumSupportedArchs() -> int:
    n = c_int()
    s = _L.nvrtcGetNumSupportedArchs(byref(n))
    if s:
        check(s)
    return n.value


def nvrtcGetSupportedArchs() -> list[int]:
    """The SM versions this NVRTC compiles for (e.g. [75, 80, ..., 90, 100, ...])."""
    n = nvrtcGetNumSupportedArchs()
    arr = (c_int * max(n, 1))()
    s = _L.nvrtcGetSupportedArchs(arr)
    if s:
        check(s)
    return list(arr[:n])


def nvrtcCreateProgram(src: str | bytes, name: str | bytes = "default_program", headers=(),
                       include_names=()) -> int:
    """Create a program from CUDA C++ source; ``headers``/``include_names`` are parallel sequences."""
    if len(headers) != len(include_names):
        raise ValueError(f"headers ({len(headers)}) and include_names ({len(include_names)}) differ in length")
    prog = c_void_p()
    h, keep_h = _str_array(headers)
    n, keep_n = _str_array(include_names)
    s = _L.nvrtcCreateProgram(byref(prog), _bytes(src), _bytes(name), len(keep_h), h, n)
    if s:
        check(s)
    return prog.value or 0


def nvrtcDestroyProgram(prog: int) -> None:
    p = c_void_p(prog)
    s = _L.nvrtcDestroyProgram(byref(p))
    if s:
        check(s)


def nvrtcGetProgramLogSize(prog: int) -> int:
    n = c_size_t()
    s = _L.nvrtcGetProgramLogSize(prog, byref(n))
    if s:
        check(s)
    return n.value


def nvrtcGetProgramLog(prog: int) -> str:
    size = nvrtcGetProgramLogSize(prog)
    buf = create_string_buffer(max(size, 1))
    s = _L.nvrtcGetProgramLog(prog, buf)
    if s:
        check(s)
    return buf.value.decode(errors="replace")


def nvrtcCompileProgram(prog: int, options=()) -> None:
    """Compile; on failure raise ``NVRTCError`` whose message and ``log`` attribute hold the program log."""
    opts, keep = _str_array(options)
    s = _L.nvrtcCompileProgram(prog, len(keep), opts)
    if s:
        try:
            log = nvrtcGetProgramLog(prog)
        except Exception:  # the log itself could not be read: report the status alone
            log = ""
        try:
            check(s, log.strip() or None)
        except NVRTCError as exc:
            exc.log = log
            raise


def _get_blob(size_fn, get_fn, prog: int) -> bytes:
    size = c_size_t()
    s = size_fn(prog, byref(size))
    if s:
        check(s)
    buf = create_string_buffer(max(size.value, 1))
    s = get_fn(prog, buf)
    if s:
        check(s)
    return buf.raw[: size.value]


def nvrtcGetPTXSize(prog: int) -> int:
    n = c_size_t()
    s = _L.nvrtcGetPTXSize(prog, byref(n))
    if s:
        check(s)
    return n.value


def nvrtcGetPTX(prog: int) -> bytes:
    """The PTX (NUL-terminated text, the NUL included as NVRTC counts it)."""
    return _get_blob(_L.nvrtcGetPTXSize, _L.nvrtcGetPTX, prog)


def nvrtcGetCUBINSize(prog: int) -> int:
    n = c_size_t()
    s = _L.nvrtcGetCUBINSize(prog, byref(n))
    if s:
        check(s)
    return n.value


def nvrtcGetCUBIN(prog: int) -> bytes:
    """The CUBIN of a program compiled for a real architecture (``-arch=sm_XX``)."""
    return _get_blob(_L.nvrtcGetCUBINSize, _L.nvrtcGetCUBIN, prog)


def nvrtcGetLTOIRSize(prog: int) -> int:
    n = c_size_t()
    s = _L.nvrtcGetLTOIRSize(prog, byref(n))
    if s:
        check(s)
    return n.value


def nvrtcGetLTOIR(prog: int) -> bytes:
    """The LTO-IR of a program compiled with ``-dlto``."""
    return _get_blob(_L.nvrtcGetLTOIRSize, _L.nvrtcGetLTOIR, prog)


def nvrtcAddNameExpression(prog: int, name_expression: str | bytes) -> None:
    s = _L.nvrtcAddNameExpression(prog, _bytes(name_expression))
    if s:
        check(s)


def nvrtcGetLoweredName(prog: int, name_expression: str | bytes) -> str:
    """The mangled name of a ``__global__`` function or variable added with nvrtcAddNameExpression."""
    out = c_char_p()
    s = _L.nvrtcGetLoweredName(prog, _bytes(name_expression), byref(out))
    if s:
        check(s)
    return out.value.decode()
