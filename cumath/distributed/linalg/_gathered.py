"""The CPU direct solver of ranks that share one node, as a gather to rank 0 and one threaded LAPACK solve there.

ScaLAPACK's ``p?getrf`` factorizes panel by panel: each panel's pivot search and broadcast is serial work that
the other ranks wait for, and each rank runs MKL's sequential BLAS. When every rank is on one node, rank 0 can
instead gather A (each piece's blocks copied into global order), factorize and solve it with cumath's dense
solver on the node's cores while the other ranks sleep, and scatter X back: on 2 ranks of the 2-core machine
(order 2048 f64) the distributed solve then costs about what the single-process call does
(benchmarks/NOTES.md, "the gathered CPU solve").

Taken when the process group is MPI's, all its ranks run on one node, rank 0 may use at least as many cores as
there are ranks (a launcher that binds each rank to one core leaves rank 0 one core: ScaLAPACK then), and A
fits ``MAX_BYTES``. ``CUMATH_DIST_SOLVE=scalapack`` keeps ScaLAPACK (``gather`` insists where the ranks share a
node). Every rank decides from the same agreed facts, so all take the same path.

Ranks other than 0 wait for rank 0's work on a non-blocking broadcast of its status, polled with short sleeps:
a blocking MPI wait spins and would take a core from rank 0's threads. An error on rank 0 (a singular matrix)
reaches every rank through that status and is raised on all of them alike.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ...errors import SingularMatrixError
from ._blocks import index_runs

__all__ = ["GatheredLU", "gathered_solver", "MAX_BYTES"]

#: the largest A (bytes) this path gathers on rank 0; larger systems stay with ScaLAPACK
MAX_BYTES = 1 << 30

ENV = "CUMATH_DIST_SOLVE"
_STATUS_BYTES = 1024  # a status code (1 byte), then the message of rank 0's error (UTF-8)
_OK, _SINGULAR, _FAILED = 0, 1, 2


def solve_mode() -> str:
    """``CUMATH_DIST_SOLVE``: 'auto', 'scalapack' (the distributed library: ScaLAPACK, cuSOLVERMp on GPU runs) or
    'gather'."""
    value = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "scalapack", "gather"):
        raise ValueError(f"{ENV}={value!r} is not supported; use auto, scalapack or gather")
    return value


def gathered_solver(solver, group, log):
    """A :class:`GatheredLU` for the distributed DirectSolver ``solver`` where this path applies (see the
    module's docstring), else None. Collective: every rank calls it from plan()."""
    mode = solve_mode()
    if mode == "scalapack":
        return None
    if not hasattr(group, "communicator"):
        log.info("distributed LU solve on ScaLAPACK: the process group is not MPI's")
        return None
    from mpi4py import MPI

    from ..._core.execution import available_cpus

    comm = group.communicator
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        one_node = node.Get_size() == comm.Get_size()
    finally:
        node.Free()
    cpus = comm.bcast(available_cpus(), root=0)
    n = solver._a.global_shape[0]
    why = None
    if not one_node:
        why = "the ranks run on more than one node"
    elif mode == "auto" and cpus < comm.Get_size():
        why = f"rank 0 may use {cpus} core(s) for {comm.Get_size()} ranks"
    elif n * n * solver.dtype.itemsize > MAX_BYTES:
        why = f"A would take {n * n * solver.dtype.itemsize} bytes on rank 0"
    if why is not None:
        log.info("distributed LU solve on ScaLAPACK: %s", why)
        return None
    return GatheredLU(solver, comm, max(1, cpus))


class _Layout:
    """Where each rank's piece of one ``shape`` matrix lies in it: the piece's shape and row and column runs
    (local start, global start, length), and on rank 0 an MPI datatype per other rank that scatters its packed
    column-major piece into the column-major global matrix (whole blocks per run; a grid of one process row
    gives one contiguous run per column block), so that messages land in global order with no second copy."""

    def __init__(self, dist, shape, nranks: int, rank: int, root: int, item: int):
        from mpi4py import MPI

        self.shapes, self.rows, self.cols, self.types = [], [], [], {}
        for r in range(nranks):
            ix = dist.indices(shape, r, nranks)
            self.shapes.append((len(ix[0]), len(ix[1])))
            self.rows.append(index_runs(ix[0]))
            self.cols.append(index_runs(ix[1]))
            if rank != root or r == root or not len(ix[0]) * len(ix[1]):
                continue
            # one (offset, length) per row run of every local column, in the piece's column-major order, then
            # adjacent ones merged
            run_start = np.array([g for _, g, _ in self.rows[r]], dtype=np.int64)
            run_len = np.array([k for _, _, k in self.rows[r]], dtype=np.int64)
            cols = np.asarray(ix[1], dtype=np.int64)
            disp = (cols[:, None] * shape[0] + run_start[None, :]).ravel()
            lens = np.broadcast_to(run_len, (cols.size, run_len.size)).ravel()
            starts = np.concatenate(([0], np.flatnonzero(disp[1:] != disp[:-1] + lens[:-1]) + 1))
            lens = np.add.reduceat(lens, starts)
            t = MPI.BYTE.Create_indexed((lens * item).tolist(), (disp[starts] * item).tolist())
            t.Commit()
            self.types[r] = t

    def place(self, full: np.ndarray, r: int, piece: np.ndarray) -> None:
        """Copy rank ``r``'s piece into ``full`` (global order)."""
        for lr, gr, nr in self.rows[r]:
            for lc, gc, nc in self.cols[r]:
                full[gr:gr + nr, gc:gc + nc] = piece[lr:lr + nr, lc:lc + nc]

    def take(self, full: np.ndarray, r: int, piece: np.ndarray) -> None:
        """Copy rank ``r``'s part of ``full`` into ``piece`` (its local order)."""
        for lr, gr, nr in self.rows[r]:
            for lc, gc, nc in self.cols[r]:
                piece[lr:lr + nr, lc:lc + nc] = full[gr:gr + nr, gc:gc + nc]

    def free(self) -> None:
        for t in self.types.values():
            t.Free()
        self.types = {}


class GatheredLU:
    """The gathered solve of one distributed DirectSolver: A and B gathered on rank 0 into global order, one
    cumath dense solver there (factorizing and solving in place, on ``threads`` threads), X scattered back."""

    root = 0
    _TAG = 0x6C75  # the point-to-point messages of the gather and scatter

    def __init__(self, solver, comm, threads: int):
        from ... import linalg
        from ..._core.execution import ExecutionCPU

        self.comm, self.dtype, self.threads = comm, solver.dtype, threads
        self.transpose = solver.options.transpose
        ranks, rank = comm.Get_size(), comm.Get_rank()
        self.rank = rank
        n, nrhs = solver._b.global_shape
        item = self.dtype.itemsize
        self.a_layout = _Layout(solver._a.dist, (n, n), ranks, rank, self.root, item)
        self.b_layout = _Layout(solver._b.dist, (n, nrhs), ranks, rank, self.root, item)
        self._solver = None
        if rank != self.root:
            return
        self.a_full = np.empty((n, n), dtype=self.dtype, order="F")
        self.b_full = np.empty((n, nrhs), dtype=self.dtype, order="F")
        # op(A) X = B: LAPACK reads a_full's transpose (a row-major view) as trans='T'; 'C' conjugates a_full
        # after each gather
        op_a = self.a_full if self.transpose == "N" else self.a_full.T
        self._solver = linalg.DirectSolver(op_a, self.b_full, options={"inplace_a": True, "inplace_b": True},
                                           execution=ExecutionCPU(num_threads=threads))
        self._solver.plan()

    def describe(self) -> str:
        return (f"the system gathered on rank 0, one LAPACK solve there on {self.threads} thread(s), X "
                "scattered back")

    # ------------------------------------------------------------------------------------ the moves
    def _gather(self, layout: _Layout, local: np.ndarray, full) -> None:
        from mpi4py import MPI

        mine = np.asfortranarray(local, dtype=self.dtype)
        if self.rank != self.root:
            if mine.size:
                self.comm.Send([mine, MPI.BYTE], dest=self.root, tag=self._TAG)
            return
        requests = [self.comm.Irecv([full, 1, t], source=r, tag=self._TAG) for r, t in layout.types.items()]
        layout.place(full, self.root, mine)  # while the others' pieces arrive
        MPI.Request.Waitall(requests)

    def _scatter(self, layout: _Layout, full) -> np.ndarray:
        from mpi4py import MPI

        x = np.empty(layout.shapes[self.rank], dtype=self.dtype, order="F")
        if self.rank != self.root:
            if x.size:
                self.comm.Recv([x, MPI.BYTE], source=self.root, tag=self._TAG)
            return x
        requests = [self.comm.Isend([full, 1, t], dest=r, tag=self._TAG) for r, t in layout.types.items()]
        layout.take(full, self.root, x)
        MPI.Request.Waitall(requests)
        return x

    def _status(self, error: BaseException | None = None) -> None:
        """Rank 0's outcome, broadcast; the other ranks sleep between polls. Raises the same error on every
        rank where rank 0 failed."""
        buf = np.zeros(_STATUS_BYTES, dtype=np.uint8)
        if self.rank == self.root and error is not None:
            code = _SINGULAR if isinstance(error, SingularMatrixError) else _FAILED
            text = (str(error) if code == _SINGULAR else f"{type(error).__name__}: {error}").encode()
            text = text[:_STATUS_BYTES - 1]
            buf[0] = code
            buf[1:1 + len(text)] = np.frombuffer(text, dtype=np.uint8)
        request = self.comm.Ibcast(buf, root=self.root)
        if self.rank == self.root:
            request.Wait()
        else:
            while not request.Test():
                time.sleep(0.0002)
        code = int(buf[0])
        if code == _OK:
            return
        if self.rank == self.root:
            raise error  # type: ignore[misc]
        message = bytes(buf[1:]).rstrip(b"\0").decode(errors="replace")
        if code == _SINGULAR:
            raise SingularMatrixError(message)
        raise RuntimeError(f"the distributed solve failed on rank 0: {message}")

    # ----------------------------------------------------------------------------------- operations
    def factorize(self, a_local: np.ndarray) -> None:
        root = self.rank == self.root
        self._gather(self.a_layout, a_local, self.a_full if root else None)
        error = None
        if root:
            try:
                if self.transpose == "C" and self.dtype.kind == "c":
                    np.conjugate(self.a_full, out=self.a_full)
                self._solver.factorize()
            except Exception as exc:  # every rank must hear of it
                error = exc
        self._status(error)

    def solve(self, b_local: np.ndarray) -> np.ndarray:
        """This rank's block of X, column-major (a new array)."""
        root = self.rank == self.root
        self._gather(self.b_layout, b_local, self.b_full if root else None)
        error = None
        if root:
            try:
                self._solver.solve()  # writes b_full
            except Exception as exc:
                error = exc
        self._status(error)
        return self._scatter(self.b_layout, self.b_full if root else None)

    def free(self) -> None:
        if self._solver is not None:
            self._solver.free()
            self._solver = None
        self.a_layout.free()
        self.b_layout.free()
