"""GPU bring-up of the distributed context (NVSHMEM for cuFFTMp, NCCL for cuBLASMp and cuSOLVERMp).

The GPU engines are not part of this version: ``initialize`` with a ``device_id`` says so clearly instead of
starting a run that would fail later. CPU-only runs (``device_id=None``) use the CPU engines.
"""

from __future__ import annotations

__all__ = ["bring_up"]


def bring_up(ctx) -> None:
    raise NotImplementedError(
        f"cumath.distributed's GPU engines (cuFFTMp over NVSHMEM, cuBLASMp and cuSOLVERMp over NCCL) are not "
        f"available in this version, so device_id={ctx.device_id} with backends {list(ctx.backends)} cannot be "
        "initialized; initialize with device_id=None to run on the CPU engines (per-rank FFTs with MPI "
        "transposes, MKL ScaLAPACK)")
