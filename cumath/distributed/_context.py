"""The distributed context of a process: ``initialize``, ``finalize``, ``get_context``.

``initialize(device_id, communicator_or_process_group, backends=("nvshmem", "nccl"))`` is called once by every
rank. A CPU-only run passes ``device_id=None`` and needs no GPU backend (``backends`` defaults to none then).
GPU runs bring up the backends named (NVSHMEM for cuFFTMp, NCCL for cuBLASMp/cuSOLVERMp) on device ``device_id``:
one process per GPU. Native resources the context owns (BLACS grids, NCCL communicators) are released by
``finalize()``, in reverse order of creation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import threading
from dataclasses import dataclass, field

from ..errors import InvalidStateError
from ._group import DEFAULT_TIMEOUT, MPIProcessGroup, ProcessGroup

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["initialize", "finalize", "get_context", "DistributedContext"]

logger = logging.getLogger(__name__)
_lock = threading.RLock()  # re-entered: the GPU bring-up inside initialize() makes context resources
_context = None
_BACKENDS = ("nvshmem", "nccl")


@dataclass
class DistributedContext:
    """What ``initialize`` set up: the device (None on CPU-only runs), the process group, the backends."""

    device_id: int | None
    process_group: ProcessGroup
    backends: tuple
    #: native resources to release at finalize(): name -> callable
    _resources: dict = field(default_factory=dict, repr=False)

    @property
    def communicator(self) -> Any:
        """The mpi4py communicator (None for a torch.distributed group)."""
        return getattr(self.process_group, "communicator", None)

    def release_resources(self) -> None:
        """Release the native resources, newest first; each failure is logged and the others still go."""
        for key, (obj, release) in reversed(list(self._resources.items())):
            try:
                release(obj)
            except Exception as exc:  # everything that can be released is
                logger.warning("releasing %s failed: %s", key, exc)
        self._resources.clear()

    def resource(self, key: Any, make: Callable[[], Any], release: Callable[[Any], None]) -> Any:
        """A native resource made once per context (``make()``), released by finalize() (``release(obj)``)."""
        with _lock:
            entry = self._resources.get(key)
            if entry is None:
                obj = make()
                self._resources[key] = entry = (obj, release)
            return entry[0]


def initialize(device_id: int | None = None, communicator_or_process_group: Any = None, backends: Any = None, *,
               timeout: float | None = None) -> DistributedContext:
    """Set up distributed execution on this rank; every rank calls it once, with its own device.

    Args:
        device_id: the CUDA device of this process (one process per GPU), or None for a CPU-only run.
        communicator_or_process_group: a mpi4py communicator or a :class:`ProcessGroup`
            (``MPIProcessGroup``, ``TorchProcessGroup``); None means ``MPI.COMM_WORLD``.
        backends: the GPU communication backends to bring up, from ``("nvshmem", "nccl")``: NVSHMEM for the
            distributed FFT, NCCL for matmul and the solver. Default: both on GPU runs, none on CPU-only runs.
        timeout: seconds a rank waits for the others at a collective call before raising CollectiveError
            (default 60, or CUMATH_DISTRIBUTED_TIMEOUT). A cumath extension.

    Raises InvalidStateError when called twice without ``finalize()``, ValueError for GPU backends on a
    CPU-only run or unknown backend names.
    """
    global _context
    with _lock:
        if _context is not None:
            raise InvalidStateError("cumath.distributed is already initialized; call finalize() first")
        if backends is None:
            backends = () if device_id is None else _BACKENDS
        backends = tuple(str(b).lower() for b in ((backends,) if isinstance(backends, str) else backends))
        unknown = [b for b in backends if b not in _BACKENDS]
        if unknown:
            raise ValueError(f"unknown distributed backends {unknown}; the backends are {list(_BACKENDS)}")
        if device_id is None and backends:
            raise ValueError(f"backends {list(backends)} need a GPU: pass device_id (one process per GPU), or "
                             "backends=() for a CPU-only run")
        if device_id is not None and (not isinstance(device_id, int) or device_id < 0):
            raise ValueError(f"device_id must be a non-negative int (the CUDA device of this process), got "
                             f"{device_id!r}")
        pg = communicator_or_process_group
        if pg is None:
            from mpi4py import MPI

            pg = MPI.COMM_WORLD
        if not isinstance(pg, ProcessGroup):
            pg = MPIProcessGroup(pg)
        pg.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        ctx = DistributedContext(device_id, pg, backends)
        if device_id is not None:
            from . import _gpu

            _gpu.bring_up(ctx)
        _context = ctx
        logger.info("cumath.distributed initialized: rank %d of %d, %s, backends %s", pg.rank, pg.nranks,
                    "CPU only" if device_id is None else f"device {device_id}", list(backends) or "none")
        return ctx


def finalize() -> None:
    """Release what ``initialize`` and the operations made (BLACS grids, NCCL communicators, NVSHMEM)."""
    global _context
    with _lock:
        ctx, _context = _context, None
    if ctx is None:
        return
    ctx.release_resources()


def get_context() -> DistributedContext | None:
    """The context set up by ``initialize``, or None before it (and after ``finalize``)."""
    return _context


def require_context() -> DistributedContext:
    ctx = _context
    if ctx is None:
        raise InvalidStateError("cumath.distributed is not initialized: call "
                                "cumath.distributed.initialize(device_id, communicator) on every rank first")
    return ctx
