"""The NVRTC functions cumath calls, over cuda-bindings' ``cuda.bindings.nvrtc``.

One Python function per C function, named after it. Programs (``nvrtcProgram``) are Python ints; outputs are
returned instead of taken as out-pointers (blobs as ``bytes``, names as ``str``); a failure status raises
``NVRTCError``, and a failed ``nvrtcCompileProgram`` carries the program log in the message and in the exception's
``log`` attribute. ``nvrtcResult`` is cuda-bindings' enum, read on first use.

Nothing is imported or loaded at import time; the first call loads libnvrtc with cumath's loader (its CUDA 12 /
13 choice, libnvrtc-builtins beside it, an error naming the extra when it is missing), then imports cuda-bindings,
which finds the library loaded.
"""

from __future__ import annotations

from ..errors import NVRTCError
from ._cuda_bindings import LazyModule, lazy_attributes, status_checker

__all__ = [
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

_nv = LazyModule("cuda.bindings.nvrtc", library="nvrtc", what="NVRTC")
_types = LazyModule("cuda.bindings.nvrtc", what="NVRTC's enums")  # no libnvrtc needed for these


__getattr__ = lazy_attributes(__name__, {"nvrtcResult": lambda: _types.nvrtcResult})

check = status_checker(NVRTCError, _types, "nvrtcResult")
check.__doc__ = "Raise ``NVRTCError(status, name, detail)`` unless ``status`` (an int or an ``nvrtcResult``) is 0."
_name = check.name


def _bytes(s: str | bytes) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def _prog(prog: int):
    return _nv.nvrtcProgram(prog)


def nvrtcGetErrorString(result: int) -> str:
    err, text = _nv.nvrtcGetErrorString(result)
    return text.decode()


def nvrtcVersion() -> tuple[int, int]:
    """(major, minor) of the loaded NVRTC."""
    err, major, minor = _nv.nvrtcVersion()
    if err:
        check(err)
    return major, minor


def nvrtcGetNumSupportedArchs() -> int:
    err, n = _nv.nvrtcGetNumSupportedArchs()
    if err:
        check(err)
    return n


def nvrtcGetSupportedArchs() -> list[int]:
    """The SM versions this NVRTC compiles for (e.g. [75, 80, ..., 90, 100, ...])."""
    err, archs = _nv.nvrtcGetSupportedArchs()
    if err:
        check(err)
    return list(archs)


def nvrtcCreateProgram(src: str | bytes, name: str | bytes = "default_program", headers=(),
                       include_names=()) -> int:
    """Create a program from CUDA C++ source; ``headers``/``include_names`` are parallel sequences."""
    if len(headers) != len(include_names):
        raise ValueError(f"headers ({len(headers)}) and include_names ({len(include_names)}) differ in length")
    err, prog = _nv.nvrtcCreateProgram(_bytes(src), _bytes(name), len(headers), [_bytes(h) for h in headers],
                                       [_bytes(n) for n in include_names])
    if err:
        check(err)
    return int(prog)


def nvrtcDestroyProgram(prog: int) -> None:
    err, = _nv.nvrtcDestroyProgram(_prog(prog))
    if err:
        check(err)


def nvrtcGetProgramLogSize(prog: int) -> int:
    err, n = _nv.nvrtcGetProgramLogSize(_prog(prog))
    if err:
        check(err)
    return n


def nvrtcGetProgramLog(prog: int) -> str:
    return _blob("ProgramLog", prog).split(b"\0", 1)[0].decode(errors="replace")


def nvrtcCompileProgram(prog: int, options=()) -> None:
    """Compile; on failure raise ``NVRTCError`` whose message and ``log`` attribute hold the program log."""
    opts = [_bytes(o) for o in options]
    err, = _nv.nvrtcCompileProgram(_prog(prog), len(opts), opts)
    if err:
        try:
            log = nvrtcGetProgramLog(prog)
        except Exception:  # the log itself could not be read: report the status alone
            log = ""
        exc = NVRTCError(int(err), _name(err), log.strip() or None)
        exc.log = log
        raise exc


def _blob(what: str, prog: int) -> bytes:
    """``nvrtcGet<what>Size`` then ``nvrtcGet<what>`` into a buffer of that size."""
    p = _prog(prog)
    err, size = getattr(_nv, f"nvrtcGet{what}Size")(p)
    if err:
        check(err)
    buf = bytearray(max(size, 1))  # written by NVRTC: never an immutable (possibly shared) bytes object
    err, = getattr(_nv, f"nvrtcGet{what}")(p, buf)
    if err:
        check(err)
    return bytes(buf[:size])


def nvrtcGetPTXSize(prog: int) -> int:
    err, n = _nv.nvrtcGetPTXSize(_prog(prog))
    if err:
        check(err)
    return n


def nvrtcGetPTX(prog: int) -> bytes:
    """The PTX (NUL-terminated text, the NUL included as NVRTC counts it)."""
    return _blob("PTX", prog)


def nvrtcGetCUBINSize(prog: int) -> int:
    err, n = _nv.nvrtcGetCUBINSize(_prog(prog))
    if err:
        check(err)
    return n


def nvrtcGetCUBIN(prog: int) -> bytes:
    """The CUBIN of a program compiled for a real architecture (``-arch=sm_XX``)."""
    return _blob("CUBIN", prog)


def nvrtcGetLTOIRSize(prog: int) -> int:
    err, n = _nv.nvrtcGetLTOIRSize(_prog(prog))
    if err:
        check(err)
    return n


def nvrtcGetLTOIR(prog: int) -> bytes:
    """The LTO-IR of a program compiled with ``-dlto``."""
    return _blob("LTOIR", prog)


def nvrtcAddNameExpression(prog: int, name_expression: str | bytes) -> None:
    err, = _nv.nvrtcAddNameExpression(_prog(prog), _bytes(name_expression))
    if err:
        check(err)


def nvrtcGetLoweredName(prog: int, name_expression: str | bytes) -> str:
    """The mangled name of a ``__global__`` function or variable added with nvrtcAddNameExpression."""
    err, lowered = _nv.nvrtcGetLoweredName(_prog(prog), _bytes(name_expression))
    if err:
        check(err)
    return lowered.decode()
