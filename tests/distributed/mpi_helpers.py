"""Helpers of the distributed tests: reference pieces, gathering on rank 0, errors, a clean environment for
subprocesses (no MPI launcher variables, so a child is a singleton MPI process, not a rank of this run)."""

import os
import shutil

import numpy as np


def clean_env(**extra):
    # a launcher's per-rank state goes; Open MPI's configuration (OMPI_MCA_*, e.g. plm=^rsh without ssh) stays
    env = {k: v for k, v in os.environ.items()
           if k.startswith("OMPI_MCA_")
           or not k.startswith(("PMI_", "PMIX_", "HYDRA_", "OMPI_", "MPI_LOCAL", "PALS_"))}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def mpiexec():
    return shutil.which("mpiexec") or shutil.which("mpirun")


def under_launcher() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK"))


def piece(global_array, dist, rank, nranks):
    """This rank's piece of a global array under ``dist`` (NumPy only: the reference side)."""
    ix = dist.indices(global_array.shape, rank, nranks)
    return global_array[np.ix_(*[np.asarray(i, dtype=np.intp) for i in ix])]


def gather0(world, local, dist, global_shape):
    """The whole array on rank 0 (None elsewhere), through cumath's own redistribution to one Box."""
    from cumath.distributed import redistribute
    from cumath.distributed.distribution import Box

    n = len(global_shape)
    target = Box((0,) * n, tuple(global_shape)) if world.rank == 0 else Box((0,) * n, (0,) * n)
    out = redistribute(np.ascontiguousarray(local), dist, target, global_shape=global_shape)
    return out if world.rank == 0 else None


def rel_err(x, ref):
    ref = np.asarray(ref)
    assert np.shape(x) == ref.shape, (np.shape(x), ref.shape)
    if ref.size == 0:
        return 0.0
    return float(np.linalg.norm(np.asarray(x) - ref) / max(np.linalg.norm(ref), 1e-300))


TOL = {np.dtype(np.float32): 2e-5, np.dtype(np.complex64): 2e-5, np.dtype(np.float64): 1e-12,
       np.dtype(np.complex128): 1e-12}
