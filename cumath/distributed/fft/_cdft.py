"""The MKL Cluster DFT engine of the distributed FFT (CPU-only runs over MPI).

oneMKL's Cluster DFT computes a whole C2C transform of an array split in rows of its first axis (a Slab.X
partition that the library picks: ``CDFT_LOCAL_X_START`` / ``CDFT_LOCAL_NX``), transposes included, in one
collective call. The plan moves the operand into the library's partition (nothing to move when the ranks hold
it already, as with balanced Slab.X pieces), computes in a buffer of ``CDFT_LOCAL_SIZE`` elements, and moves the
result into the requested output distribution (again nothing for Slab.X with ``redistribute=True``).

The library's transposed output (``DFTI_TRANSPOSE = DFTI_ALLOW``, which saves its last transpose: measured 30 ms
against 46 ms at 128^3 complex128 on 2 ranks) is not used: its rows are stored as (axis 1, axes 2.., axis 0) and
its backward transform then takes that layout as input, so one descriptor cannot serve both directions of one
plan; a Slab.Y result moves from the library's Slab.X rows instead.

It needs an MPI communicator (an ``MPIProcessGroup``), a C2C transform of complex64 / complex128 data, and at
least as many rows as ranks on the first two axes (the library's internal transpose splits the second axis).
``engine='auto'`` would pick it for Slab.X input in the library's partition (``AUTO``), but it did not measure
faster than per-rank plans with all-to-all transposes on the machine measured (benchmarks/NOTES.md, distributed
FFT), so 'auto' keeps the transposes and the Cluster DFT runs with ``engine='mkl'``.
"""

from __future__ import annotations

import logging

import numpy as np

from .._distributions import SlabPartition

__all__ = ["ClusterDFT", "unsupported_reason", "AUTO"]

#: whether engine="auto" takes the Cluster DFT where it applies (set from the measurements in benchmarks/NOTES.md)
AUTO = False

logger = logging.getLogger(__name__)


def unsupported_reason(group, global_shape, dtype, fft_type) -> str | None:
    """Why the Cluster DFT cannot run this problem (None: it can). Decided from global facts only, so every
    rank answers the same."""
    if getattr(group, "communicator", None) is None:
        return "it needs an MPI communicator (an MPIProcessGroup), not a torch.distributed group"
    if fft_type != "C2C":
        return f"it runs C2C transforms here, not {fft_type}"
    if np.dtype(dtype) not in (np.dtype(np.complex64), np.dtype(np.complex128)):
        return f"it takes complex64 or complex128 data, not {np.dtype(dtype)}"
    if group.nranks > min(global_shape[0], global_shape[1]):
        return (f"{group.nranks} ranks are more than the rows of the first two axes {tuple(global_shape[:2])} "
                "that it splits")
    return None


def available() -> bool:
    from ..._bindings import mkl_cdft

    return mkl_cdft.available()


class ClusterDFT:
    """One committed Cluster DFT descriptor of ``global_shape`` on the group's communicator (collective)."""

    def __init__(self, group, global_shape, dtype):
        from ..._bindings import mkl_cdft, mpi
        from ..._bindings.mkl_dfti import Value

        self._lib = mkl_cdft
        self.dtype = np.dtype(dtype)
        precision = Value.SINGLE if self.dtype == np.complex64 else Value.DOUBLE
        self._handle = mkl_cdft.create(mpi.comm_handle(group.communicator), int(precision), int(Value.COMPLEX),
                                       global_shape)
        try:
            P = mkl_cdft.Param
            self.local_size = mkl_cdft.get_long(self._handle, P.LOCAL_SIZE)
            start = mkl_cdft.get_long(self._handle, P.LOCAL_X_START)
            rows = mkl_cdft.get_long(self._handle, P.LOCAL_NX)
            mkl_cdft.commit(self._handle)
        except BaseException:
            self.free()
            raise
        self.local_shape = (rows, *global_shape[1:])
        self.count = int(np.prod(self.local_shape))
        self.partition = SlabPartition(0, tuple(group.allgather(rows)))
        logger.info("MKL Cluster DFT %s %s: rows %d..%d on rank %d, buffer %d elements", tuple(global_shape),
                    self.dtype, start, start + rows, group.rank, self.local_size)

    def execute(self, x: np.ndarray, forward: bool) -> np.ndarray:
        """The transform of this rank's rows ``x``: a new array (a view of the library's working buffer)."""
        buf = np.empty(max(self.local_size, 1), dtype=self.dtype)
        buf[:self.count].reshape(self.local_shape)[...] = x
        self._lib.compute(self._handle, buf.ctypes.data, forward)
        return buf[:self.count].reshape(self.local_shape)

    def free(self) -> None:
        handle, self._handle = getattr(self, "_handle", 0), 0
        if handle:
            self._lib.free(handle)
