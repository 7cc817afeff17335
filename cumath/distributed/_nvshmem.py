"""NVSHMEM in the distributed context: bring-up by the unique-id bootstrap, the symmetric heap, tear-down.

``bring_up_nvshmem(ctx)`` (called by the GPU bring-up of ``initialize`` when "nvshmem" is among the backends, or
on first use by the GPU FFT engine) makes the CUDA device of ``ctx`` current, takes NVSHMEM's unique id from
rank 0 to every rank over the process group (MPI or torch.distributed: no MPI plugin of NVSHMEM is involved),
and initializes NVSHMEM's host library with it: one PE per rank, PE number = rank. ``tear_down_nvshmem(ctx)``
(and ``finalize()``) destroys what lives on the symmetric heap (cuFFTMp plans still alive, buffers never freed:
reported as a leak), then finalizes NVSHMEM. Both are idempotent.

Symmetric buffers (``allocate_symmetric_memory`` on GPU runs) are ``nvshmem_malloc`` allocations of the same
size on every rank, handed out as CuPy arrays or PyTorch CUDA tensors over the buffer (``__cuda_array_interface__``,
no copy); the registry maps each buffer's address to its size, so operations can tell a symmetric operand.
"""

from __future__ import annotations

import logging
import math
import threading
import warnings
import weakref

import numpy as np

__all__ = ["bring_up_nvshmem", "tear_down_nvshmem", "nvshmem_state", "NVSHMEMState"]

logger = logging.getLogger(__name__)
_KEY = "nvshmem"
_lock = threading.Lock()
_bring_up_lock = threading.RLock()


class _Buffer:
    """A symmetric allocation as a ``__cuda_array_interface__`` (what CuPy and PyTorch wrap without a copy)."""

    def __init__(self, ptr: int, shape, dtype, strides, state):
        self.ptr = ptr
        self._state = state  # keeps the state (and with it NVSHMEM) referenced while an array is alive
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str,
                                         "data": (ptr, False), "version": 3, "strides": strides}


class NVSHMEMState:
    """What NVSHMEM holds for one context: the live symmetric buffers and the cuFFTMp plans made over it."""

    def __init__(self, ctx):
        from .._bindings import cudart, nvshmem  # noqa: F401 - cudart: the runtime loaded before NVSHMEM
        from .._core import cuda

        self._lib = nvshmem
        self.device_id = ctx.device_id
        group = ctx.process_group
        if not nvshmem.available():
            from .._bindings._loader import install_hint

            raise RuntimeError(f"NVSHMEM's host library (libnvshmem_host.so.3) cannot be loaded; "
                               f"{install_hint('nvshmem_host')}")
        cuda.set_device(ctx.device_id)  # idempotent: the bring-up has set it already
        uid = nvshmem.get_uniqueid() if group.rank == 0 else b""
        uid = group.allgather(uid)[0]
        nvshmem.init_with_uniqueid(uid, group.rank, group.nranks)
        pe, npes = nvshmem.my_pe(), nvshmem.n_pes()
        if (pe, npes) != (group.rank, group.nranks):
            nvshmem.finalize()
            raise RuntimeError(f"NVSHMEM came up as PE {pe} of {npes}, but this is rank {group.rank} of "
                               f"{group.nranks}: every rank of the process group must call initialize()")
        self.alive = True
        self.buffers: dict[int, int] = {}  # address -> bytes
        self.plans = weakref.WeakSet()  # objects with release_native(): destroyed before NVSHMEM goes
        self._held = None  # (handle, destroy) of a library plan kept for the state's life: see hold_plan
        logger.info("NVSHMEM %s up: PE %d of %d on device %d", ".".join(map(str, nvshmem.version())), pe, npes,
                    ctx.device_id)

    # -- the symmetric heap
    def malloc(self, nbytes: int) -> int:
        ptr = self._lib.malloc(nbytes)
        self.buffers[ptr] = int(nbytes)
        return ptr

    def free(self, ptr: int) -> None:
        if self.buffers.pop(ptr, None) is None:
            raise ValueError("free_symmetric_memory: this buffer was not allocated by allocate_symmetric_memory "
                             "(or was freed already)")
        self._lib.free(ptr)

    def sync_all_on_stream(self, stream: int) -> None:
        """Every PE's earlier stores to symmetric memory complete and visible, ordered on ``stream``."""
        self._lib.sync_all_on_stream(stream)

    def size_at(self, ptr: int) -> int | None:
        """The bytes of the symmetric allocation starting at ``ptr`` (None: not a symmetric buffer's start)."""
        return self.buffers.get(ptr)

    def array(self, ptr: int, shape, dtype, package: str, axis_order: str = "C"):
        """A CuPy array or PyTorch CUDA tensor of ``shape`` over the symmetric buffer at ``ptr``."""
        dtype = np.dtype(dtype)
        strides = None
        if axis_order == "F" and len(shape) > 1:
            acc, strides = dtype.itemsize, []
            for n in shape:
                strides.append(acc)
                acc *= n
            strides = tuple(strides)
        buf = _Buffer(ptr, shape, dtype, strides, self)
        if package == "torch":
            import torch

            return torch.as_tensor(buf, device=f"cuda:{self.device_id}")
        import cupy

        return cupy.asarray(buf)

    def hold_plan(self, make, destroy) -> None:
        """Keep one plan of a library that initializes NVSHMEM's device side itself (cuFFTMp) alive until
        tear-down (collective: every rank calls it at the same point).

        cuFFTMp finalizes NVSHMEM when its last plan is destroyed (its documentation's advice: keep a plan alive
        for the application's lifetime and destroy it right before the last NVSHMEM finalize); without a plan
        held here, freeing an FFT would take NVSHMEM down under the symmetric buffers still in use.
        """
        if self._held is not None:
            return
        try:
            self._held = (make(), destroy)
        except Exception as exc:  # the FFT's own plans will raise what matters; this one only guards tear-down
            logger.warning("could not make the cuFFTMp plan kept for NVSHMEM's lifetime: %s", exc)
            self._held = (None, None)

    # -- tear-down
    def tear_down(self) -> None:
        with _lock:
            if not self.alive:
                return
            self.alive = False
        for plan in list(self.plans):
            try:
                plan.release_native()
            except Exception as exc:  # tear-down releases what it can
                logger.warning("releasing a cuFFTMp plan at finalize failed: %s", exc)
        if self.buffers:
            n = sum(self.buffers.values())
            warnings.warn(f"cumath.distributed.finalize(): {len(self.buffers)} symmetric buffer(s) ({n} bytes) were "
                          "never freed; call free_symmetric_memory() on each before finalize()", ResourceWarning,
                          stacklevel=4)
            for ptr in list(self.buffers):
                self._lib.free(ptr)
            self.buffers.clear()
        handle, destroy = self._held or (None, None)
        self._held = None
        if handle is not None:
            try:
                destroy(handle)  # the last cuFFTMp plan: after the buffers, right before the finalize
            except Exception as exc:
                logger.warning("destroying the cuFFTMp plan kept for NVSHMEM's lifetime failed: %s", exc)
        if self._lib.init_status() > self._lib.STATUS_BOOTSTRAPPED:
            self._lib.finalize()
            logger.info("NVSHMEM finalized")
        else:  # cuFFTMp finalized it with its last plan
            logger.info("NVSHMEM was finalized by cuFFTMp with its last plan")


def bring_up_nvshmem(ctx) -> NVSHMEMState:
    """Initialize NVSHMEM for ``ctx`` (collective; once per context: later calls return the same state)."""
    if ctx.device_id is None:
        raise ValueError("NVSHMEM needs a GPU: initialize cumath.distributed with a device_id")
    # Not ctx.resource(): initialize() calls this while holding the context module's lock.
    with _bring_up_lock:
        entry = ctx._resources.get(_KEY)
        if entry is None:
            entry = ctx._resources[_KEY] = (NVSHMEMState(ctx), lambda s: s.tear_down())
        return entry[0]


def nvshmem_state(ctx) -> NVSHMEMState | None:
    """The NVSHMEM state of ``ctx`` if it was brought up (None otherwise); brings nothing up."""
    entry = ctx._resources.get(_KEY)
    return entry[0] if entry else None


def tear_down_nvshmem(ctx) -> None:
    """Destroy what lives on the symmetric heap and finalize NVSHMEM (idempotent; collective)."""
    entry = ctx._resources.pop(_KEY, None)
    if entry is not None:
        entry[0].tear_down()


def nbytes_of(shape, dtype) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize
