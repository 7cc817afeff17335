"""ctypes bindings of NCCL (libnccl), 1:1 with the C functions cumath uses.

Signatures and enum values were read from ``nccl.h`` of the ``nvidia-nccl-cu13`` 2.32.3 wheel (NCCL_MAJOR 2,
NCCL_MINOR 32); every function bound here exists since NCCL 2.19 (``ncclMemAlloc``/``ncclMemFree``,
``ncclCommRegister``), so the NCCL 2.28 that the CUDA 13 GPU machines carry loads too.

Nothing is loaded at import time: the functions of ``TABLE`` are bound on the first call of any wrapper.
Communicators and buffers are Python ints; ``ncclUniqueId`` travels between ranks as its 128 bytes. Wrappers
return their outputs and raise ``NCCLError`` on a failure status, with the library's last error text when it
has one.
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import POINTER, byref, c_char, c_char_p, c_int, c_size_t, c_void_p

from ..errors import NCCLError
from ._loader import LazyFunctions

__all__ = ["NCCL_UNIQUE_ID_BYTES", "TABLE", "Result", "ncclUniqueId", "check", "ncclGetVersion",
           "ncclGetUniqueId", "ncclCommInitRank", "ncclCommFinalize", "ncclCommDestroy", "ncclCommAbort",
           "ncclCommCount", "ncclCommUserRank", "ncclCommCuDevice", "ncclCommGetAsyncError", "ncclGetErrorString",
           "ncclGetLastError", "ncclMemAlloc", "ncclMemFree", "ncclCommRegister", "ncclCommDeregister",
           "version_string", "require", "MP_NCCL_MIN", "MP_NCCL_SYMBOLS"]

NCCL_UNIQUE_ID_BYTES = 128


class ncclUniqueId(ctypes.Structure):
    """``typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;`` (passed by value)."""

    _fields_ = [("internal", c_char * NCCL_UNIQUE_ID_BYTES)]


class Result(enum.IntEnum):
    """ncclResult_t."""

    ncclSuccess = 0
    ncclUnhandledCudaError = 1
    ncclSystemError = 2
    ncclInternalError = 3
    ncclInvalidArgument = 4
    ncclInvalidUsage = 5
    ncclRemoteError = 6
    ncclInProgress = 7
    ncclTimeout = 8


_p_void = POINTER(c_void_p)
_p_int = POINTER(c_int)

TABLE = {
    "ncclGetVersion": (c_int, [_p_int]),
    "ncclGetUniqueId": (c_int, [POINTER(ncclUniqueId)]),
    # comm, nranks, commId (by value), rank
    "ncclCommInitRank": (c_int, [_p_void, c_int, ncclUniqueId, c_int]),
    "ncclCommFinalize": (c_int, [c_void_p]),
    "ncclCommDestroy": (c_int, [c_void_p]),
    "ncclCommAbort": (c_int, [c_void_p]),
    "ncclCommCount": (c_int, [c_void_p, _p_int]),
    "ncclCommUserRank": (c_int, [c_void_p, _p_int]),
    "ncclCommCuDevice": (c_int, [c_void_p, _p_int]),
    "ncclCommGetAsyncError": (c_int, [c_void_p, _p_int]),
    "ncclGetErrorString": (c_char_p, [c_int]),
    "ncclGetLastError": (c_char_p, [c_void_p]),
    "ncclMemAlloc": (c_int, [_p_void, c_size_t]),
    "ncclMemFree": (c_int, [c_void_p]),
    # comm, buff, size, handle
    "ncclCommRegister": (c_int, [c_void_p, c_void_p, c_size_t, _p_void]),
    "ncclCommDeregister": (c_int, [c_void_p, c_void_p]),
}

_L = LazyFunctions("nccl", TABLE)
_NAMES = {int(m): m.name for m in Result}


def check(status: int, comm: int | None = None, detail: str | None = None) -> None:
    """Raise NCCLError for a failure status, with NCCL's own words for it (and its last error, when any)."""
    if status == 0:
        return
    words = []
    try:
        text = _L.ncclGetErrorString(status)
        if text:
            words.append(text.decode(errors="replace"))
        last = _L.ncclGetLastError(comm)
        if last:
            words.append(last.decode(errors="replace"))
    except (AttributeError, OSError):
        pass
    if detail:
        words.append(detail)
    raise NCCLError(status, _NAMES.get(int(status)), "; ".join(w for w in words if w) or None)


def ncclGetVersion() -> int:
    """NCCL_VERSION_CODE of the loaded library (e.g. 22803 for 2.28.3)."""
    v = c_int(0)
    check(_L.ncclGetVersion(byref(v)))
    return v.value


def version_string(code: int) -> str:
    """``"2.29.7"`` for NCCL_VERSION_CODE 22907 (``major * 10000 + minor * 100 + patch`` since NCCL 2.9; the
    older ``major * 1000 + minor * 100 + patch`` below 10000)."""
    major, rest = divmod(code, 10000) if code >= 10000 else divmod(code, 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _code(version: tuple) -> int:
    major, minor, patch = (tuple(version) + (0, 0))[:3]
    return major * 10000 + minor * 100 + patch


#: NCCL functions that cuBLASMp 0.10 and cuSOLVERMp 0.9 call (read from the undefined symbols of libcublasmp.so.0
#: and libcusolverMp.so.0 of their cu13 wheels); their wheels require nvidia-nccl-cu13 >= 2.29.2
MP_NCCL_SYMBOLS = (
    "ncclAllGather", "ncclAllReduce", "ncclBcast", "ncclCommCount", "ncclCommDestroy", "ncclCommFinalize",
    "ncclCommQueryProperties", "ncclCommSplit", "ncclCommUserRank", "ncclCommWindowDeregister",
    "ncclCommWindowRegister", "ncclDevCommCreate", "ncclDevCommDestroy", "ncclGetErrorString",
    "ncclGetLsaDevicePointer", "ncclGetLsaMultimemDevicePointer", "ncclGroupEnd", "ncclGroupStart", "ncclMemAlloc",
    "ncclMemFree", "ncclPutSignal", "ncclRecv", "ncclReduce", "ncclReduceScatter", "ncclSend", "ncclWaitSignal")
MP_NCCL_MIN = (2, 29, 2)
_checked: dict = {}


def require(user: str, min_version: tuple = MP_NCCL_MIN, symbols: tuple = MP_NCCL_SYMBOLS) -> str:
    """Check that the NCCL of this process is new enough for ``user`` (a library linking libnccl.so.2) before that
    library loads; returns the version (``"2.29.7"``) and logs it with the library's path once.

    The libraries bind NCCL's functions lazily: with an older NCCL they load, and the first call of a missing
    function ends the process ("symbol lookup error"). So the symbols are looked up here first, and a missing
    one raises LibraryNotFoundError naming the loaded version, its file, the version needed and the wheel.
    """
    from ..errors import LibraryNotFoundError
    from ._loader import find_library, load_library

    lib = load_library("nccl")
    path = find_library("nccl") or "libnccl.so.2"
    try:
        have = version_string(ncclGetVersion())
    except (AttributeError, NCCLError):
        have = "of unknown version"
    missing = [name for name in symbols if not hasattr(lib, name)]
    key = (user, path)
    if key not in _checked:
        _checked[key] = have
        import logging

        logging.getLogger(__name__).info("NCCL %s loaded from %s (%s needs >= %s)", have, path, user,
                                         ".".join(map(str, min_version)))
    need = ".".join(map(str, min_version))
    too_old = have[:1].isdigit() and _code(tuple(int(p) for p in have.split("."))) < _code(min_version)
    if missing or too_old:
        lacks = f" and lacks {', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''}" if missing else ""
        raise LibraryNotFoundError(
            f"{user} needs NCCL >= {need}, but the libnccl.so.2 loaded in this process is NCCL {have} ({path})"
            f"{lacks}. Install it with `pip install \"nvidia-nccl-cu13>={need}\"` (the cu13-distributed extra "
            "brings it), and make sure that copy is the one loaded: a package imported before cumath (PyTorch "
            "brings its own NCCL) may have loaded an older libnccl.so.2 first; start Python with "
            "LD_PRELOAD=<site-packages>/nvidia/nccl/lib/libnccl.so.2, or import cumath.distributed first")
    return have


def ncclGetUniqueId() -> bytes:
    """A new unique id (made on one rank, handed to every rank of the communicator)."""
    uid = ncclUniqueId()
    check(_L.ncclGetUniqueId(byref(uid)))
    return ctypes.string_at(ctypes.addressof(uid), NCCL_UNIQUE_ID_BYTES)


def ncclCommInitRank(nranks: int, unique_id: bytes, rank: int) -> int:
    """The communicator of ``rank`` among ``nranks`` for ``unique_id`` (on the current CUDA device). Collective."""
    if len(unique_id) != NCCL_UNIQUE_ID_BYTES:
        raise ValueError(f"an NCCL unique id has {NCCL_UNIQUE_ID_BYTES} bytes, got {len(unique_id)}")
    uid = ncclUniqueId.from_buffer_copy(unique_id)
    comm = c_void_p()
    check(_L.ncclCommInitRank(byref(comm), nranks, uid, rank))
    return comm.value or 0


def ncclCommFinalize(comm: int) -> None:
    check(_L.ncclCommFinalize(comm), comm)


def ncclCommDestroy(comm: int) -> None:
    check(_L.ncclCommDestroy(comm), comm)


def ncclCommAbort(comm: int) -> None:
    check(_L.ncclCommAbort(comm), comm)


def _int_query(fn, comm: int) -> int:
    out = c_int(0)
    check(fn(comm, byref(out)), comm)
    return out.value


def ncclCommCount(comm: int) -> int:
    return _int_query(_L.ncclCommCount, comm)


def ncclCommUserRank(comm: int) -> int:
    return _int_query(_L.ncclCommUserRank, comm)


def ncclCommCuDevice(comm: int) -> int:
    return _int_query(_L.ncclCommCuDevice, comm)


def ncclCommGetAsyncError(comm: int) -> int:
    """The communicator's asynchronous error (a ``Result`` value; 0 when none)."""
    return _int_query(_L.ncclCommGetAsyncError, comm)


def ncclGetErrorString(status: int) -> str:
    text = _L.ncclGetErrorString(status)
    return text.decode(errors="replace") if text else ""


def ncclGetLastError(comm: int | None = None) -> str:
    text = _L.ncclGetLastError(comm)
    return text.decode(errors="replace") if text else ""


def ncclMemAlloc(size: int) -> int:
    """Device memory that NCCL (and cuBLASMp/cuSOLVERMp) can register; freed with ``ncclMemFree``."""
    ptr = c_void_p()
    check(_L.ncclMemAlloc(byref(ptr), size), detail=f"allocating {size} bytes")
    return ptr.value or 0


def ncclMemFree(ptr: int) -> None:
    check(_L.ncclMemFree(ptr))


def ncclCommRegister(comm: int, ptr: int, size: int) -> int:
    """Register ``size`` bytes at ``ptr`` with ``comm``; returns the registration handle."""
    handle = c_void_p()
    check(_L.ncclCommRegister(comm, ptr, size, byref(handle)), comm)
    return handle.value or 0


def ncclCommDeregister(comm: int, handle: int) -> None:
    check(_L.ncclCommDeregister(comm, handle), comm)
