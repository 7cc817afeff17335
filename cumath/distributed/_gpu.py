"""GPU bring-up of the distributed context (NVSHMEM for cuFFTMp, NCCL for cuBLASMp and cuSOLVERMp).

NVSHMEM is brought up by ``_nvshmem.bring_up_nvshmem`` (torn down at ``finalize()``). The NCCL engines are not
part of this version: asking for the "nccl" backend says so clearly instead of starting a run that would fail
later; ``backends=("nvshmem",)`` runs the distributed FFT on GPUs.
"""

from __future__ import annotations

__all__ = ["bring_up"]


def bring_up(ctx) -> None:
    if "nccl" in ctx.backends:
        raise NotImplementedError(
            f"cumath.distributed's NCCL engines (cuBLASMp, cuSOLVERMp) are not available in this version, so "
            f"device_id={ctx.device_id} with backends {list(ctx.backends)} cannot be initialized; pass "
            "backends=('nvshmem',) for the distributed FFT on GPUs (cuFFTMp), or device_id=None to run on the "
            "CPU engines (per-rank FFTs with MPI transposes, MKL ScaLAPACK)")
    if "nvshmem" in ctx.backends:
        from ._nvshmem import bring_up_nvshmem

        bring_up_nvshmem(ctx)
