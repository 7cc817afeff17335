"""The nvJitLink functions cumath calls, over cuda-bindings' ``cuda.bindings.nvjitlink``.

One Python function per C function, named after it (cuda-bindings binds the library's plain exports,
``nvJitLinkCreate`` and friends, which behave as the loaded library's newest version; the library also exports
``__nvJitLinkCreate_13_0``-style names for programs built against an older header). Handles are Python ints; outputs are
returned instead of taken as out-pointers; a failure raises ``NVJitLinkError`` with the C name of the status
(``NVJITLINK_ERROR_NVVM_COMPILE``), and a failed ``nvJitLinkAddData``/``nvJitLinkAddFile``/``nvJitLinkComplete``
carries the linker's error log in the message and in the exception's ``log`` attribute.

``nvJitLinkResult`` and ``nvJitLinkInputType`` are IntEnums with the C names, made on first use from
cuda-bindings' ``Result`` and ``InputType`` (which drop the ``NVJITLINK_`` prefix).

Nothing is imported or loaded at import time; the first call loads libnvJitLink with cumath's loader (its CUDA
12 / 13 choice, an error naming the extra when it is missing), then imports cuda-bindings.
"""

from __future__ import annotations

import enum

from ..errors import NVJitLinkError
from ._cuda_bindings import LazyModule, lazy_attributes, status_checker

__all__ = [
    "check",
    "nvJitLinkResult",
    "nvJitLinkInputType",
    "nvJitLinkVersion",
    "nvJitLinkCreate",
    "nvJitLinkDestroy",
    "nvJitLinkAddData",
    "nvJitLinkAddFile",
    "nvJitLinkComplete",
    "nvJitLinkGetLinkedCubinSize",
    "nvJitLinkGetLinkedCubin",
    "nvJitLinkGetLinkedPtxSize",
    "nvJitLinkGetLinkedPtx",
    "nvJitLinkGetErrorLogSize",
    "nvJitLinkGetErrorLog",
    "nvJitLinkGetInfoLogSize",
    "nvJitLinkGetInfoLog",
]

_nj = LazyModule("cuda.bindings.nvjitlink", library="nvJitLink", what="nvJitLink")
_types = LazyModule("cuda.bindings.nvjitlink", what="nvJitLink's enums")  # no libnvJitLink needed for these



def _c_named(name: str, source: str, prefix: str):
    """An IntEnum ``name`` with the C names (``prefix`` + the member's name) of cuda-bindings' ``source`` enum."""
    return enum.IntEnum(name, [(prefix + m.name, int(m)) for m in getattr(_types, source)], module=__name__)


__getattr__ = lazy_attributes(__name__, {
    "nvJitLinkResult": lambda: _c_named("nvJitLinkResult", "Result", "NVJITLINK_"),
    "nvJitLinkInputType": lambda: _c_named("nvJitLinkInputType", "InputType", "NVJITLINK_INPUT_")})

check = status_checker(NVJitLinkError, _types, "Result", prefix="NVJITLINK_")
check.__doc__ = "Raise ``NVJitLinkError(status, name, detail)`` unless ``status`` is 0 (NVJITLINK_SUCCESS)."
_name = check.name


def _call(fn, *args, handle: int | None = None):
    """``fn(*args)``, its ``nvJitLinkError`` raised as cumath's, with ``handle``'s error log when one is given."""
    try:
        return fn(*args)
    except _nj.nvJitLinkError as exc:
        status = exc.status
    log = ""
    if handle is not None:
        try:
            log = nvJitLinkGetErrorLog(handle)
        except Exception:  # the log itself could not be read: report the status alone
            log = ""
    error = NVJitLinkError(int(status), _name(status), log.strip() or None)
    if handle is not None:
        error.log = log
    raise error


def _bytes(s: str | bytes) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def _str(s: str | bytes) -> str:
    return s.decode() if isinstance(s, (bytes, bytearray)) else str(s)


def nvJitLinkVersion() -> tuple[int, int]:
    """(major, minor) of the loaded nvJitLink."""
    major, minor = _call(_nj.version)
    return int(major), int(minor)


def nvJitLinkCreate(options=()) -> int:
    """A link handle for ``options`` (e.g. ``["-arch=sm_90", "-lto"]``; ``-arch`` is required)."""
    opts = [_str(o) for o in options]
    return int(_call(_nj.create, len(opts), opts))


def nvJitLinkDestroy(handle: int) -> None:
    _call(_nj.destroy, handle)


def nvJitLinkAddData(handle: int, input_type: int, data: bytes, name: str | bytes = "input") -> None:
    """Add an input (LTO-IR, PTX, CUBIN, ...) held in memory."""
    data = bytes(data)
    _call(_nj.add_data, handle, int(input_type), data, len(data), _str(name), handle=handle)


def nvJitLinkAddFile(handle: int, input_type: int, file_name: str | bytes) -> None:
    _call(_nj.add_file, handle, int(input_type), _str(file_name), handle=handle)


def nvJitLinkComplete(handle: int) -> None:
    """Link; on failure raise ``NVJitLinkError`` whose message and ``log`` attribute hold the error log."""
    _call(_nj.complete, handle, handle=handle)


def _blob(what: str, handle: int) -> bytes:
    """``get_<what>_size`` then ``get_<what>`` into a buffer of that size."""
    size = int(_call(getattr(_nj, f"get_{what}_size"), handle))
    buf = bytearray(max(size, 1))  # written by nvJitLink: never an immutable (possibly shared) bytes object
    _call(getattr(_nj, f"get_{what}"), handle, buf)
    return bytes(buf[:size])


def nvJitLinkGetLinkedCubinSize(handle: int) -> int:
    return int(_call(_nj.get_linked_cubin_size, handle))


def nvJitLinkGetLinkedCubin(handle: int) -> bytes:
    return _blob("linked_cubin", handle)


def nvJitLinkGetLinkedPtxSize(handle: int) -> int:
    return int(_call(_nj.get_linked_ptx_size, handle))


def nvJitLinkGetLinkedPtx(handle: int) -> bytes:
    """The linked PTX (with ``-ptx``), NUL included as nvJitLink counts it."""
    return _blob("linked_ptx", handle)


def nvJitLinkGetErrorLogSize(handle: int) -> int:
    return int(_call(_nj.get_error_log_size, handle))


def nvJitLinkGetErrorLog(handle: int) -> str:
    return _blob("error_log", handle).rstrip(b"\0").decode(errors="replace")


def nvJitLinkGetInfoLogSize(handle: int) -> int:
    return int(_call(_nj.get_info_log_size, handle))


def nvJitLinkGetInfoLog(handle: int) -> str:
    return _blob("info_log", handle).rstrip(b"\0").decode(errors="replace")
