"""ctypes bindings of nvJitLink (libnvJitLink), 1:1 with the C functions cumath uses.

Enum values and signatures were read from ``nvJitLink.h`` of the ``nvidia-nvjitlink`` 13.0.88 wheel.

The header maps ``nvJitLinkCreate`` and friends to versioned symbols (``__nvJitLinkCreate_13_0``, ...), so a
program built against 13.0 keeps the 13.0 behaviour under a newer library. This binding does what such a
program would do with the newest header the loaded library supports: it asks ``nvJitLinkVersion`` (not
versioned) for the library's (major, minor) and binds, per function, the newest ``__<name>_<major>_<m>``
the library exports for m = minor down to 0; a library that exports none of them gets the plain name.
:func:`select_symbols` is that choice, pure (tested with a fake library object).

Nothing is loaded at import time. Handles are Python ints. Every wrapper returns its outputs instead of
taking out-pointers and raises ``NVJitLinkError``; a failed ``nvJitLinkComplete`` (or ``nvJitLinkAddData``)
carries the linker's error log in the message and in the exception's ``log`` attribute.
"""

from __future__ import annotations

import enum
import threading
from ctypes import POINTER, byref, c_char_p, c_size_t, c_uint, c_uint32, c_void_p, create_string_buffer

from ..errors import NVJitLinkError
from ._status import make_checker

__all__ = [
    "TABLE",
    "VERSIONED",
    "check",
    "select_symbols",
    "bound_symbols",
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


class nvJitLinkResult(enum.IntEnum):
    NVJITLINK_SUCCESS = 0
    NVJITLINK_ERROR_UNRECOGNIZED_OPTION = 1
    NVJITLINK_ERROR_MISSING_ARCH = 2
    NVJITLINK_ERROR_INVALID_INPUT = 3
    NVJITLINK_ERROR_PTX_COMPILE = 4
    NVJITLINK_ERROR_NVVM_COMPILE = 5
    NVJITLINK_ERROR_INTERNAL = 6
    NVJITLINK_ERROR_THREADPOOL = 7
    NVJITLINK_ERROR_UNRECOGNIZED_INPUT = 8
    NVJITLINK_ERROR_FINALIZE = 9
    NVJITLINK_ERROR_NULL_INPUT = 10
    NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS = 11
    NVJITLINK_ERROR_INCORRECT_INPUT_TYPE = 12
    NVJITLINK_ERROR_ARCH_MISMATCH = 13
    NVJITLINK_ERROR_OUTDATED_LIBRARY = 14
    NVJITLINK_ERROR_MISSING_FATBIN = 15
    NVJITLINK_ERROR_UNRECOGNIZED_ARCH = 16
    NVJITLINK_ERROR_UNSUPPORTED_ARCH = 17
    NVJITLINK_ERROR_LTO_NOT_ENABLED = 18


class nvJitLinkInputType(enum.IntEnum):
    NVJITLINK_INPUT_NONE = 0
    NVJITLINK_INPUT_CUBIN = 1
    NVJITLINK_INPUT_PTX = 2
    NVJITLINK_INPUT_LTOIR = 3
    NVJITLINK_INPUT_FATBIN = 4
    NVJITLINK_INPUT_OBJECT = 5
    NVJITLINK_INPUT_LIBRARY = 6
    NVJITLINK_INPUT_INDEX = 7
    NVJITLINK_INPUT_ANY = 10


_p_ptr = POINTER(c_void_p)
_p_size = POINTER(c_size_t)
_p_uint = POINTER(c_uint)

# C name -> (restype, argtypes). Every one but nvJitLinkVersion is exported under versioned names.
TABLE = {
    "nvJitLinkVersion": (c_uint, [_p_uint, _p_uint]),
    "nvJitLinkCreate": (c_uint, [_p_ptr, c_uint32, POINTER(c_char_p)]),
    "nvJitLinkDestroy": (c_uint, [_p_ptr]),
    # handle, inputType, data, size, name
    "nvJitLinkAddData": (c_uint, [c_void_p, c_uint, c_char_p, c_size_t, c_char_p]),
    "nvJitLinkAddFile": (c_uint, [c_void_p, c_uint, c_char_p]),
    "nvJitLinkComplete": (c_uint, [c_void_p]),
    "nvJitLinkGetLinkedCubinSize": (c_uint, [c_void_p, _p_size]),
    "nvJitLinkGetLinkedCubin": (c_uint, [c_void_p, c_char_p]),
    "nvJitLinkGetLinkedPtxSize": (c_uint, [c_void_p, _p_size]),
    "nvJitLinkGetLinkedPtx": (c_uint, [c_void_p, c_char_p]),
    "nvJitLinkGetErrorLogSize": (c_uint, [c_void_p, _p_size]),
    "nvJitLinkGetErrorLog": (c_uint, [c_void_p, c_char_p]),
    "nvJitLinkGetInfoLogSize": (c_uint, [c_void_p, _p_size]),
    "nvJitLinkGetInfoLog": (c_uint, [c_void_p, c_char_p]),
}
VERSIONED = tuple(n for n in TABLE if n != "nvJitLinkVersion")

check = make_checker(NVJitLinkError, nvJitLinkResult)


def select_symbols(lib, version: tuple[int, int]) -> dict[str, str]:
    """For each C function of ``TABLE``: the symbol to bind in ``lib`` (anything answering ``getattr`` with
    the exported names, like a ``ctypes.CDLL``), given the library's ``version`` (major, minor): the newest
    ``__<name>_<major>_<m>`` with m from minor down to 0, else the plain name. Functions the library lacks
    under every name are left out."""
    major, minor = version
    chosen = {}
    for name in TABLE:
        candidates = [f"__{name}_{major}_{m}" for m in range(minor, -1, -1)] if name in VERSIONED else []
        for symbol in candidates + [name]:
            try:
                getattr(lib, symbol)
            except AttributeError:
                continue
            chosen[name] = symbol
            break
    return chosen


class _Functions:
    """The bound functions, resolved on first use (the library loaded, its version asked, symbols chosen)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.symbols: dict[str, str] | None = None

    def __getattr__(self, name: str):
        if name.startswith("_") or name == "symbols":
            raise AttributeError(name)
        with self._lock:
            if self.symbols is None:
                self._bind()
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"{name} is not available in the loaded nvJitLink library") from None

    def _bind(self):
        from ._loader import load_library

        lib = load_library("nvJitLink")
        version_fn = lib.nvJitLinkVersion
        version_fn.restype, version_fn.argtypes = TABLE["nvJitLinkVersion"]
        major, minor = c_uint(), c_uint()
        s = version_fn(byref(major), byref(minor))
        if s:
            check(s)
        symbols = select_symbols(lib, (major.value, minor.value))
        for name, symbol in symbols.items():
            fn = getattr(lib, symbol)
            fn.restype, fn.argtypes = TABLE[name]
            self.__dict__[name] = fn
        self.__dict__["version"] = (major.value, minor.value)
        self.symbols = symbols


_L = _Functions()


def bound_symbols() -> dict[str, str]:
    """C function name -> the library symbol bound for it (loads the library)."""
    _L.nvJitLinkVersion  # noqa: B018 (binds everything)
    return dict(_L.symbols)


def _bytes(s: str | bytes) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def nvJitLinkVersion() -> tuple[int, int]:
    """(major, minor) of the loaded nvJitLink."""
    major, minor = c_uint(), c_uint()
    s = _L.nvJitLinkVersion(byref(major), byref(minor))
    if s:
        check(s)
    return major.value, minor.value


def nvJitLinkCreate(options=()) -> int:
    """A link handle for ``options`` (e.g. ``["-arch=sm_90", "-lto"]``; ``-arch`` is required)."""
    encoded = [_bytes(o) for o in options]
    arr = (c_char_p * max(len(encoded), 1))(*encoded)
    handle = c_void_p()
    s = _L.nvJitLinkCreate(byref(handle), len(encoded), arr)
    if s:
        check(s)
    return handle.value or 0


def nvJitLinkDestroy(handle: int) -> None:
    h = c_void_p(handle)
    s = _L.nvJitLinkDestroy(byref(h))
    if s:
        check(s)


def _fail(handle: int, status: int) -> None:
    """Raise NVJitLinkError for ``status`` with the error log of ``handle`` (when it can be read)."""
    try:
        log = nvJitLinkGetErrorLog(handle)
    except Exception:
        log = ""
    try:
        check(status, log.strip() or None)
    except NVJitLinkError as exc:
        exc.log = log
        raise


def nvJitLinkAddData(handle: int, input_type: int, data: bytes, name: str | bytes = "input") -> None:
    """Add an input (LTO-IR, PTX, CUBIN, ...) held in memory."""
    data = bytes(data)
    s = _L.nvJitLinkAddData(handle, int(input_type), data, len(data), _bytes(name))
    if s:
        _fail(handle, s)


def nvJitLinkAddFile(handle: int, input_type: int, file_name: str | bytes) -> None:
    s = _L.nvJitLinkAddFile(handle, int(input_type), _bytes(file_name))
    if s:
        _fail(handle, s)


def nvJitLinkComplete(handle: int) -> None:
    """Link; on failure raise ``NVJitLinkError`` whose message and ``log`` attribute hold the error log."""
    s = _L.nvJitLinkComplete(handle)
    if s:
        _fail(handle, s)


def _size(fn, handle: int) -> int:
    n = c_size_t()
    s = fn(handle, byref(n))
    if s:
        check(s)
    return n.value


def _blob(size_fn, get_fn, handle: int) -> bytes:
    size = _size(size_fn, handle)
    buf = create_string_buffer(max(size, 1))
    s = get_fn(handle, buf)
    if s:
        check(s)
    return buf.raw[:size]


def nvJitLinkGetLinkedCubinSize(handle: int) -> int:
    return _size(_L.nvJitLinkGetLinkedCubinSize, handle)


def nvJitLinkGetLinkedCubin(handle: int) -> bytes:
    return _blob(_L.nvJitLinkGetLinkedCubinSize, _L.nvJitLinkGetLinkedCubin, handle)


def nvJitLinkGetLinkedPtxSize(handle: int) -> int:
    return _size(_L.nvJitLinkGetLinkedPtxSize, handle)


def nvJitLinkGetLinkedPtx(handle: int) -> bytes:
    """The linked PTX (with ``-ptx``), NUL included as nvJitLink counts it."""
    return _blob(_L.nvJitLinkGetLinkedPtxSize, _L.nvJitLinkGetLinkedPtx, handle)


def nvJitLinkGetErrorLogSize(handle: int) -> int:
    return _size(_L.nvJitLinkGetErrorLogSize, handle)


def nvJitLinkGetErrorLog(handle: int) -> str:
    return _blob(_L.nvJitLinkGetErrorLogSize, _L.nvJitLinkGetErrorLog, handle).rstrip(b"\0").decode(
        errors="replace")


def nvJitLinkGetInfoLogSize(handle: int) -> int:
    return _size(_L.nvJitLinkGetInfoLogSize, handle)


def nvJitLinkGetInfoLog(handle: int) -> str:
    return _blob(_L.nvJitLinkGetInfoLogSize, _L.nvJitLinkGetInfoLog, handle).rstrip(b"\0").decode(
        errors="replace")
