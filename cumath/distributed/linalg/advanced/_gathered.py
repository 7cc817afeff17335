"""The CPU matmul of a grid with one process row, as an all-gather of A and one local product per rank.

On a 1 x P grid every rank holds all rows of its columns of A, B and C. ScaLAPACK's p?gemm then broadcasts A's
column panels one block at a time and multiplies panel by panel (rank-nb updates of each rank's C, on MKL's
sequential GEMM); here the ranks instead gather A whole (its local pieces side by side, in rank order, then its
column blocks copied into global order) and make one product each with the BLAS cumath's generic matmul uses,
on the cores the node gives each rank. Measured on 2 ranks of the 2-core
machine (2048^2 f64, 128 x 128 blocks): benchmarks/NOTES.md, "the gathered CPU matmul".

Taken when the three operands share a grid of one process row, B's and C's columns are distributed alike, A and
B are neither transposed nor conjugated, the process group is MPI's, and the gathered A fits ``MAX_BYTES``;
``CUMATH_DIST_MATMUL=pgemm`` keeps ScaLAPACK (``gather`` insists where it applies). Every rank decides from the
same agreed distributions and shapes, so all take the same path.
"""

from __future__ import annotations

import os

import numpy as np

from .._blocks import index_runs

__all__ = ["Gathered", "gathered_plan", "MAX_BYTES"]

#: the largest gathered A (bytes, per rank) this path takes; larger products stay with p?gemm
MAX_BYTES = 1 << 30

ENV = "CUMATH_DIST_MATMUL"


def _mode() -> str:
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "pgemm", "gather"):
        raise ValueError(f"{ENV}={value!r} is not supported; use auto, pgemm or gather")
    return value


def _col_key(dist, shape) -> tuple:
    return dist.block_sizes_for(shape)[1], dist.first_process[1]


def gathered_plan(mm, group, dists, log):
    """A :class:`Gathered` for the Matmul ``mm`` where this path applies (see the module's docstring), else
    None."""
    mode = _mode()
    if mode == "pgemm":
        return None
    m, n, k = mm.mnk
    da, db, dc = dists
    why = None
    if da.process_grid.shape[0] != 1:
        why = f"the grid {da.process_grid.shape} has more than one process row"
    elif any(any(f) for f in mm._flags[:2]):
        why = "a or b is transposed or conjugated"
    elif _col_key(db, (k, n)) != _col_key(dc, (m, n)):
        why = "B's and C's columns are distributed differently"
    elif not hasattr(group, "communicator"):
        why = "the process group is not MPI's"
    elif m * k * mm.dtype.itemsize > MAX_BYTES:
        why = f"the gathered A would take {m * k * mm.dtype.itemsize} bytes per rank"
    if why is not None:
        log.info("distributed matmul on ScaLAPACK p?gemm: %s", why)
        return None
    return Gathered(mm, group, da)


class Gathered:
    """The gathered product of one Matmul: the gather's counts, the column runs that put A in global order,
    buffers."""

    def __init__(self, mm, group, da):
        from mpi4py import MPI

        from ...._core.execution import ExecutionCPU, available_cpus

        m, n, k = mm.mnk
        self.comm, self.dtype = group.communicator, mm.dtype
        ranks = group.nranks
        cols = [np.asarray(da.indices((m, k), r, ranks)[1], dtype=np.intp) for r in range(ranks)]
        perm = np.concatenate(cols) if cols else np.zeros(0, np.intp)  # the global column of each gathered one
        item = self.dtype.itemsize
        counts = np.array([m * c.size * item for c in cols], dtype=np.int64)
        self.counts, self.displs = counts, np.concatenate(([0], np.cumsum(counts)[:-1]))
        self.nbytes = m * k * item
        # A's columns in global order: runs of consecutive columns (the blocks) copied whole, column-major; none
        # where the gathered order is the global one already
        self.runs = [] if np.array_equal(perm, np.arange(k)) else index_runs(perm)
        self.gathered = np.empty((m, k), dtype=self.dtype, order="F") if ranks > 1 else None
        self.ordered = np.empty((m, k), dtype=self.dtype, order="F") if self.runs else None
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)  # collective: every rank plans
        try:
            per_node = node.Get_size()
        finally:
            node.Free()
        self.threads = max(1, available_cpus() // per_node)
        self.execution = ExecutionCPU(num_threads=self.threads)

    def describe(self) -> str:
        return (f"A gathered on every rank ({self.nbytes} bytes), one local product each on {self.threads} "
                f"thread(s)")

    def product(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None, alpha, beta) -> np.ndarray:
        """This rank's block of ``alpha A B + beta C``, column-major (``a``, ``b``, ``c``: this rank's pieces,
        column-major, of the product's dtype)."""
        from mpi4py import MPI

        from .... import linalg

        g = a
        if self.gathered is not None:
            self.comm.Allgatherv([a, MPI.BYTE], [self.gathered, (self.counts, self.displs), MPI.BYTE])
            g = self.gathered
        if self.runs:  # (NumPy's take along either axis is 4-14x slower than these block copies)
            for src, dst, count in self.runs:
                self.ordered[:, dst:dst + count] = g[:, src:src + count]
            g = self.ordered
        # (alpha A B + beta C) transposed = alpha B^T A^T + beta C^T: C-ordered operands, a C-ordered result that
        # is the column-major block
        ct = None if c is None else c.T
        out = linalg.matmul(b.T, g.T, ct, alpha=alpha, beta=None if c is None else beta, execution=self.execution)
        return out.T
