"""GPU bring-up of the distributed context: NCCL for cuBLASMp and cuSOLVERMp, NVSHMEM for cuFFTMp.

``bring_up(ctx)`` runs inside ``initialize(device_id, ...)`` on every rank (one process per GPU):

- the device: ``device_id`` must be a visible GPU; it becomes the current device of the process;
- ``"nccl"`` in ``ctx.backends``: rank 0 makes an NCCL unique id, the process group hands it to every rank
  (its all-gather, so MPI and torch.distributed groups both work), and every rank makes its communicator on
  its device with ``ncclCommInitRank``. The communicator is a context resource: ``finalize()`` destroys it
  after everything made on it (grids, handles); ``nccl_comm(ctx)`` returns it;
- ``"nvshmem"`` in ``ctx.backends``: ``cumath.distributed._nvshmem.bring_up_nvshmem(ctx)`` when that module
  is there (and ``tear_down_nvshmem(ctx)`` at finalize), else a NotImplementedError that names the backend and
  says to initialize with ``backends=("nccl",)``.

A failure part way releases what was already brought up, so a failed ``initialize`` leaks nothing.
"""

from __future__ import annotations

import importlib
import logging

__all__ = ["bring_up", "bring_up_nccl", "nccl_comm"]

logger = logging.getLogger(__name__)

_NCCL_KEY = "nccl-communicator"


def _require_device(device_id: int) -> None:
    from .._core import cuda
    from ..errors import CUDAUnavailableError

    try:
        cuda.require_device(device_id)
    except CUDAUnavailableError as exc:
        raise CUDAUnavailableError(
            f"cumath.distributed.initialize(device_id={device_id}): {str(exc).split('; run on the CPU')[0]}; for a "
            "CPU-only run initialize with device_id=None (the CPU engines: per-rank FFTs with MPI transposes, MKL "
            "ScaLAPACK)") from exc
    cuda.set_device(device_id)


def bring_up_nccl(ctx) -> int:
    """Make this rank's NCCL communicator on ``ctx.device_id`` (collective); returns it."""
    from .._bindings import nccl

    group = ctx.process_group
    # every rank takes part in the exchange, even when making the id failed on rank 0: nobody hangs
    uid, error = b"", None
    if group.rank == 0:
        try:
            uid = nccl.ncclGetUniqueId()
        except Exception as exc:  # LibraryNotFoundError, NCCLError
            error = f"{type(exc).__name__}: {exc}"
    uid, error = group.allgather((uid, error) if group.rank == 0 else None)[0]
    if error is not None:
        raise RuntimeError(f"cumath.distributed: rank 0 could not make the NCCL unique id ({error}); install NCCL "
                           "with `pip install \"cumath[cu13-distributed]\"` or initialize with backends=() on CPU")

    def make():
        comm = nccl.ncclCommInitRank(group.nranks, uid, group.rank)
        logger.info("NCCL %s communicator: rank %d of %d on device %d", _version(nccl), group.rank, group.nranks,
                    ctx.device_id)
        return comm

    return ctx.resource(_NCCL_KEY, make, _destroy_comm)


def _version(nccl) -> str:
    try:
        return nccl.version_string(nccl.ncclGetVersion())
    except Exception:
        return "?"


def _destroy_comm(comm: int) -> None:
    from .._bindings import nccl

    try:
        nccl.ncclCommFinalize(comm)  # flushes what was queued on it, then the resources go
    except Exception as exc:
        logger.warning("ncclCommFinalize failed (%s): aborting the communicator", exc)
        nccl.ncclCommAbort(comm)
        return
    nccl.ncclCommDestroy(comm)


def nccl_comm(ctx) -> int:
    """The context's NCCL communicator; a clear error when the context has none."""
    from ..errors import InvalidStateError

    entry = ctx._resources.get(_NCCL_KEY)
    if entry is None:
        raise InvalidStateError(
            "the GPU matmul and solver run over NCCL: initialize with a device_id and 'nccl' in backends "
            f"(this context: device {ctx.device_id}, backends {list(ctx.backends)})")
    return entry[0]


def _nvshmem_module():
    try:
        return importlib.import_module("cumath.distributed._nvshmem")
    except ModuleNotFoundError as exc:
        if exc.name != "cumath.distributed._nvshmem":
            raise
        return None


def bring_up(ctx) -> None:
    """The device and the backends named in ``ctx.backends``, in a fixed order (NCCL, then NVSHMEM)."""
    _require_device(ctx.device_id)
    done = []
    try:
        if "nccl" in ctx.backends:
            bring_up_nccl(ctx)
            done.append("nccl")
        if "nvshmem" in ctx.backends:
            mod = _nvshmem_module()
            if mod is None or not hasattr(mod, "bring_up_nvshmem"):
                raise NotImplementedError(
                    "the NVSHMEM backend (cuFFTMp, the distributed FFT on GPUs) is not available in this version; "
                    "initialize with backends=('nccl',) for the GPU matmul and solver, or device_id=None for the "
                    "CPU engines")
            mod.bring_up_nvshmem(ctx)
            teardown = getattr(mod, "tear_down_nvshmem", None)
            if teardown is not None:
                ctx.resource("nvshmem", lambda: ctx, teardown)
    except BaseException:
        ctx.release_resources()  # a failed initialize leaks nothing
        raise
