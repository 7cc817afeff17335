"""ctypes bindings of NVSHMEM 3.x's host library (``libnvshmem_host.so.3``): the unique-id bootstrap and the
symmetric heap.

Facts from the nvidia-nvshmem-cu13 wheel's headers (``host/nvshmem_api.h``, ``host/nvshmemx_api.h``,
``device_host/nvshmem_types.h``, ``bootstrap_device_host/nvshmem_uniqueid.h``):

* ``nvshmemx_init_attr`` is a ``static inline`` of the header that calls ``nvshmemi_init_thread`` from the static
  device library; a process without that library (Python) initializes the host library itself:
  ``int nvshmemx_hostlib_init_attr(unsigned flags, nvshmemx_init_attr_t *attr)`` and
  ``void nvshmemx_hostlib_finalize(void)``.
* The unique-id bootstrap: rank 0 calls ``int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *)`` (128 bytes: an
  ``int version`` of ``(1 << 16) + 128``, then 124 opaque bytes), the bytes go to every rank over the process
  group, each rank calls ``int nvshmemx_set_attr_uniqueid_args(int myrank, int nranks,
  const nvshmemx_uniqueid_t *, nvshmemx_init_attr_t *)`` and initializes with flag
  ``NVSHMEMX_INIT_WITH_UNIQUEID = 1 << 3``. No MPI plugin is involved.
* ``nvshmemx_init_attr_t`` (v1, 144 bytes): ``int version`` (``(1 << 16) + 144``), ``void *mpi_comm``, then
  ``nvshmemx_init_args_t`` (128 bytes: ``int version`` (``(1 << 16) + 128``), ``nvshmemx_uniqueid_args_t``
  (24 bytes: ``int version`` (``(1 << 16) + 24``), ``nvshmemx_uniqueid_t *id``, ``int myrank``, ``int nranks``),
  padding). The v1 layout is the one every NVSHMEM 3.x accepts.
* ``void *nvshmem_malloc(size_t)``, ``void nvshmem_free(void *)`` (collective), ``int nvshmem_my_pe(void)``,
  ``int nvshmem_n_pes(void)``, ``void nvshmem_barrier_all(void)``, ``int nvshmemx_init_status(void)``,
  ``void nvshmemx_vendor_get_version_info(int *, int *, int *)``, ``void nvshmemx_sync_all_on_stream(cudaStream_t)``.

NVSHMEM uses the CUDA device current on the calling thread at initialization. Nothing is loaded at import time.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, Structure, byref, c_char, c_int, c_size_t, c_uint, c_void_p

from ..errors import LibraryNotFoundError
from ._loader import LazyFunctions, find_library

__all__ = ["UniqueId", "InitAttr", "INIT_WITH_UNIQUEID", "available", "version", "get_uniqueid",
           "init_with_uniqueid", "finalize", "init_status", "my_pe", "n_pes", "malloc", "free", "barrier_all",
           "sync_all_on_stream"]

INIT_WITH_UNIQUEID = 1 << 3
#: nvshmemx_init_status(): NVSHMEM_STATUS_NOT_INITIALIZED = 0, NVSHMEM_STATUS_IS_BOOTSTRAPPED = 1, then the
#: initialized states (NVSHMEM_STATUS_IS_INITIALIZED = 2, limited / full MPG)
STATUS_NOT_INITIALIZED = 0
STATUS_BOOTSTRAPPED = 1
_UID_BYTES = 128
_V1 = 1 << 16


class UniqueId(Structure):
    """``nvshmemx_uniqueid_v1``: what rank 0 makes and every rank receives."""

    _fields_ = [("version", c_int), ("internal", c_char * (_UID_BYTES - 4))]


class _UniqueIdArgs(Structure):
    _fields_ = [("version", c_int), ("id", POINTER(UniqueId)), ("myrank", c_int), ("nranks", c_int)]


class _InitArgs(Structure):
    _fields_ = [("version", c_int), ("uid_args", _UniqueIdArgs), ("content", c_char * (128 - 8 - 24))]


class InitAttr(Structure):
    """``nvshmemx_init_attr_v1``."""

    _fields_ = [("version", c_int), ("mpi_comm", c_void_p), ("args", _InitArgs)]


assert ctypes.sizeof(UniqueId) == 128 and ctypes.sizeof(_UniqueIdArgs) == 24
assert ctypes.sizeof(_InitArgs) == 128 and ctypes.sizeof(InitAttr) == 144

TABLE = {
    "nvshmemx_hostlib_init_attr": (c_int, [c_uint, POINTER(InitAttr)]),
    "nvshmemx_hostlib_finalize": (None, []),
    "nvshmemx_get_uniqueid": (c_int, [POINTER(UniqueId)]),
    "nvshmemx_set_attr_uniqueid_args": (c_int, [c_int, c_int, POINTER(UniqueId), POINTER(InitAttr)]),
    "nvshmemx_init_status": (c_int, []),
    "nvshmemx_vendor_get_version_info": (None, [POINTER(c_int)] * 3),
    "nvshmem_my_pe": (c_int, []),
    "nvshmem_n_pes": (c_int, []),
    "nvshmem_malloc": (c_void_p, [c_size_t]),
    "nvshmem_free": (None, [c_void_p]),
    "nvshmem_barrier_all": (None, []),
    "nvshmemx_sync_all_on_stream": (None, [c_void_p]),
}

_L = LazyFunctions("nvshmem_host", TABLE)
_lock = threading.Lock()


class NVSHMEMError(RuntimeError):
    """An NVSHMEM host call returned an error status."""


def _check(status: int, what: str) -> None:
    if status:
        raise NVSHMEMError(f"{what} failed with status {status}; NVSHMEM_DEBUG=INFO in the environment makes "
                           "NVSHMEM say why")


def available() -> bool:
    """Whether libnvshmem_host.so.3 can be loaded (loads it)."""
    try:
        return _L.has("nvshmemx_hostlib_init_attr")
    except (OSError, LibraryNotFoundError):
        return False


def version() -> tuple[int, int, int]:
    v = [c_int() for _ in range(3)]
    _L.nvshmemx_vendor_get_version_info(*(byref(x) for x in v))
    return tuple(x.value for x in v)


def get_uniqueid() -> bytes:
    """``nvshmemx_get_uniqueid`` (rank 0 only): the 128 bytes to hand to every rank."""
    uid = UniqueId()
    uid.version = _V1 + _UID_BYTES
    _check(_L.nvshmemx_get_uniqueid(byref(uid)), "nvshmemx_get_uniqueid")
    return ctypes.string_at(byref(uid), _UID_BYTES)


def _point_at_uid_plugin() -> None:
    # The unique-id bootstrap is a plugin (nvshmem_bootstrap_uid.so.3) that NVSHMEM opens by name; point at the
    # copy beside the host library so that a wheel installed off the loader's path still finds it.
    if "NVSHMEM_BOOTSTRAP_UID_PLUGIN" in os.environ:
        return
    path = find_library("nvshmem_host")
    if path and os.path.isabs(path):
        plugin = os.path.join(os.path.dirname(path), "nvshmem_bootstrap_uid.so.3")
        if os.path.exists(plugin):
            os.environ["NVSHMEM_BOOTSTRAP_UID_PLUGIN"] = plugin


def init_with_uniqueid(uid: bytes, rank: int, nranks: int) -> None:
    """Initialize NVSHMEM on this rank (collective over the ``nranks`` ranks holding ``uid``)."""
    if len(uid) != _UID_BYTES:
        raise ValueError(f"an NVSHMEM unique id is {_UID_BYTES} bytes, got {len(uid)}")
    with _lock:
        _point_at_uid_plugin()
        id_ = UniqueId.from_buffer_copy(uid)
        attr = InitAttr()
        attr.version = _V1 + ctypes.sizeof(InitAttr)
        attr.args.version = _V1 + ctypes.sizeof(_InitArgs)
        attr.args.uid_args.version = _V1 + ctypes.sizeof(_UniqueIdArgs)
        _check(_L.nvshmemx_set_attr_uniqueid_args(rank, nranks, byref(id_), byref(attr)),
               "nvshmemx_set_attr_uniqueid_args")
        _check(_L.nvshmemx_hostlib_init_attr(INIT_WITH_UNIQUEID, byref(attr)),
               f"nvshmemx_hostlib_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, rank {rank} of {nranks})")


def finalize() -> None:
    _L.nvshmemx_hostlib_finalize()


def init_status() -> int:
    return _L.nvshmemx_init_status()


def my_pe() -> int:
    return _L.nvshmem_my_pe()


def n_pes() -> int:
    return _L.nvshmem_n_pes()


def malloc(nbytes: int) -> int:
    """``nvshmem_malloc`` (collective: every PE asks for the same size); raises MemoryError on NULL."""
    ptr = _L.nvshmem_malloc(max(int(nbytes), 1))
    if not ptr:
        raise MemoryError(f"nvshmem_malloc({nbytes}) returned NULL: the symmetric heap is exhausted; raise "
                          "NVSHMEM_SYMMETRIC_SIZE (bytes per GPU) before initialize()")
    return ptr


def free(ptr: int) -> None:
    """``nvshmem_free`` (collective)."""
    _L.nvshmem_free(ptr)


def barrier_all() -> None:
    _L.nvshmem_barrier_all()


def sync_all_on_stream(stream: int) -> None:
    """``nvshmemx_sync_all_on_stream``: on ``stream``, wait until every PE's earlier stores to symmetric memory
    are complete and visible (collective)."""
    _L.nvshmemx_sync_all_on_stream(stream or None)
