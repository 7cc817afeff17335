"""GPU engine of the distributed direct solver: cuSOLVERMp's ``cusolverMpGetrf`` / ``cusolverMpGetrs`` over NCCL.

The factors live on the device in a copy of A (the caller's A is never written), the pivots (``int64``) and
``info`` beside them; each ``solve()`` works on a new copy of B, which becomes X. The cuSOLVERMp handle and
grid are context resources; the descriptors and device buffers belong to the solver.

Singular matrices: cuSOLVERMp 0.9 returns ``info = 0`` from ``cusolverMpGetrf`` for a matrix with an exactly
zero column (seen on the H200, one rank), so ``info`` alone does not find them. After the factorization each rank
reads the diagonal of U it owns (one strided ``cudaMemcpy2DAsync`` per run of its diagonal blocks that lie on one
local diagonal: a single copy on square grids) and the first exact zero over all ranks is reported as LAPACK's
``info`` would be. A positive ``info`` from the library is used as is.
"""

from __future__ import annotations

import logging

import numpy as np

from ..._core import cuda
from ...errors import SingularMatrixError
from ._device import (CUDA_TYPE, Descriptors, Workspace, device_buffer, grid_shape_order, operation_allocator,
                      require_live, resolve_stream)

__all__ = ["CuSOLVERMpLU", "cusolvermp_handle", "cusolvermp_grid", "diagonal_runs"]

logger = logging.getLogger(__name__)

_TRANS = {"N": 0, "T": 1, "C": 2}  # cublasOperation_t


def cusolvermp_handle(ctx) -> int:
    from ..._bindings import cusolvermp

    def make():
        h = cusolvermp.cusolverMpCreate(ctx.device_id, 0)
        logger.info("cuSOLVERMp handle made on device %d", ctx.device_id)
        return h

    return ctx.resource(("cusolvermp-handle", ctx.device_id), make, cusolvermp.cusolverMpDestroy)


def cusolvermp_grid(ctx, dist) -> tuple[int, Descriptors]:
    from ..._bindings import cusolvermp
    from .._gpu import nccl_comm

    nprow, npcol, order = grid_shape_order(dist)
    if nprow * npcol != ctx.process_group.nranks:
        raise ValueError(f"the ProcessGrid {nprow}x{npcol} does not hold the {ctx.process_group.nranks} ranks of "
                         "the run")
    comm = nccl_comm(ctx)
    handle = cusolvermp_handle(ctx)
    mapping = cusolvermp.GridMapping.ROW_MAJOR if order == "R" else cusolvermp.GridMapping.COL_MAJOR
    key = ("cusolvermp-grid", nprow, npcol, order)
    grid = ctx.resource(key, lambda: cusolvermp.cusolverMpCreateDeviceGrid(handle, comm, nprow, npcol, mapping),
                        cusolvermp.cusolverMpDestroyGrid)
    descs = ctx.resource(key + ("descriptors",), lambda: Descriptors(cusolvermp.cusolverMpDestroyMatrixDesc),
                         Descriptors.release)
    return grid, descs


def diagonal_runs(n: int, nb: int, grid_shape, coords, first_process):
    """The diagonal entries of an ``n x n`` block-cyclic matrix (square ``nb`` blocks) that the rank at ``coords``
    of a ``grid_shape`` grid owns: ``(runs, index)``, ``runs`` a list of ``(local_row, local_col, count)`` that
    each lie on one local diagonal (consecutive entries ``lld + 1`` elements apart in column-major storage), and
    ``index`` the global diagonal index of every entry of the runs, in order."""
    (nprow, npcol), (prow, pcol), (rsrc, csrc) = grid_shape, coords, first_process
    runs: list[list[int]] = []
    index: list[int] = []
    for k in range(-(-n // nb)):
        if (k + rsrc) % nprow != prow or (k + csrc) % npcol != pcol:
            continue
        lr, lc, count = (k // nprow) * nb, (k // npcol) * nb, min(nb, n - k * nb)
        index.extend(range(k * nb, k * nb + count))
        last = runs[-1] if runs else None
        if last is not None and last[0] + last[2] == lr and last[1] + last[2] == lc:
            last[2] += count  # the next owned block continues the same local diagonal
        else:
            runs.append([lr, lc, count])
    return [tuple(r) for r in runs], np.asarray(index, dtype=np.int64)


class CuSOLVERMpLU:
    """LU with partial pivoting of a distributed A on cuSOLVERMp, and solves with it."""

    def __init__(self, solver):
        from ..._bindings import cusolvermp

        self.solver = solver
        ctx = self.ctx = solver._ctx
        a, b = solver._a, solver._b
        self.dtype = solver.dtype.name
        self.handle = cusolvermp_handle(ctx)
        self.grid, self.descs = cusolvermp_grid(ctx, a.dist)
        ctype = CUDA_TYPE[self.dtype]

        def desc(op):
            (gm, gn), (mb, nb), (rs, cs) = op.global_shape, op.blocks, op.dist.first_process
            return self.descs.add(cusolvermp.cusolverMpCreateMatrixDesc(self.grid, ctype, gm, gn, mb, nb, rs, cs,
                                                                        op.lld))

        self.desc_a = desc(a)
        try:
            self.desc_b = desc(b)
        except BaseException:  # a failed plan leaves nothing behind
            self.descs.drop(self.desc_a)
            raise
        self.workspace = Workspace(ctx, operation_allocator(ctx, a))
        self.lu = self._lu_keep = None
        self.ipiv = None
        self.info = None
        self.info_host = np.zeros(1, dtype=np.int32)
        logger.info("distributed LU solve n=%d, nrhs=%d (%s) planned on cuSOLVERMp getrf/getrs, grid %s",
                    a.global_shape[0], b.global_shape[1], self.dtype, a.dist.process_grid.shape)

    def _stream(self) -> int:
        require_live(self.ctx)
        a = self.solver._a
        return resolve_stream(self.solver._stream, a.package if not a.staged else "numpy", self.ctx.device_id)

    def _read_info(self, stream: int) -> int:
        cuda.copy(self.info_host.ctypes.data, self.info.device_ptr, 4, cuda.D2H, stream, "info")
        cuda.synchronize(stream)
        return int(self.info_host[0])

    def factorize(self) -> None:
        from ..._bindings import cusolvermp

        a = self.solver._a
        s = self._stream()
        cusolvermp.cusolverMpSetStream(self.handle, s)
        n = a.global_shape[0]
        self.lu = a.device_pointer(self.dtype, s, copy=True)
        self._lu_keep = a._copy  # the factors: kept while the solver lives
        if self.ipiv is None:
            self.ipiv = device_buffer(self.ctx, 8 * (a.local_shape[0] + a.blocks[0]), s)
            self.info = device_buffer(self.ctx, 4, s)
        ctype = CUDA_TYPE[self.dtype]
        dsize, hsize = cusolvermp.cusolverMpGetrf_bufferSize(self.handle, n, n, self.lu, 1, 1, self.desc_a,
                                                             self.ipiv.device_ptr, ctype)
        dwork, hwork = self.workspace.get(dsize, hsize, s)
        cuda.memset(self.info.device_ptr, 0, 4, s)
        cusolvermp.cusolverMpGetrf(self.handle, n, n, self.lu, 1, 1, self.desc_a, self.ipiv.device_ptr, ctype,
                                   dwork, dsize, hwork, hsize, self.info.device_ptr)
        info = self._read_info(s)
        if info == 0:
            info = self._zero_pivot(s)
        infos = [i for i in self.ctx.process_group.allgather(info) if i]
        if any(i < 0 for i in infos):
            raise ValueError(f"cuSOLVERMp getrf refused argument {-min(infos)} (info {min(infos)})")
        if infos:
            first = min(infos)
            raise SingularMatrixError(f"the matrix is singular: U({first}, {first}) is exactly zero after LU with "
                                      "partial pivoting; check the matrix or regularize it")

    def _zero_pivot(self, stream: int) -> int:
        """1-based global index of the first exactly zero U(j, j) this rank owns (0: none), read from the
        factors on the device after the stream completes."""
        from ..._bindings import cudart

        a = self.solver._a
        grid = a.dist.process_grid
        runs, index = diagonal_runs(a.global_shape[0], a.blocks[0], grid.shape,
                                    grid.coords(self.ctx.process_group.rank), a.dist.first_process)
        if not runs:
            return 0
        item = np.dtype(self.dtype).itemsize
        diag = np.empty(index.size, dtype=self.dtype)
        at = 0
        for lr, lc, count in runs:
            cudart.cudaMemcpy2DAsync(diag.ctypes.data + at * item, item, self.lu + (lr + lc * a.lld) * item,
                                     (a.lld + 1) * item, item, count, cuda.D2H, stream)
            at += count
        cuda.synchronize(stream)
        zero = index[diag == 0]
        return int(zero.min()) + 1 if zero.size else 0

    def solve(self, transpose: str):
        from ..._bindings import cusolvermp

        b = self.solver._b
        s = self._stream()
        cusolvermp.cusolverMpSetStream(self.handle, s)
        n, nrhs = b.global_shape
        x = b.device_pointer(self.dtype, s, copy=True)
        ctype = CUDA_TYPE[self.dtype]
        trans = _TRANS[transpose]
        args = (self.handle, trans, n, nrhs, self.lu, 1, 1, self.desc_a, self.ipiv.device_ptr, x, 1, 1, self.desc_b,
                ctype)
        try:
            dsize, hsize = cusolvermp.cusolverMpGetrs_bufferSize(*args)
        except Exception as exc:
            if transpose != "N":
                raise NotImplementedError(f"cuSOLVERMp's getrs refused transpose={transpose!r} ({exc}); solve with "
                                          "transpose='N' on the transposed matrix instead") from exc
            raise
        dwork, hwork = self.workspace.get(dsize, hsize, s)
        cusolvermp.cusolverMpGetrs(*args, dwork, dsize, hwork, hsize, self.info.device_ptr)
        info = self._read_info(s)
        if info < 0:
            raise ValueError(f"cuSOLVERMp getrs refused argument {-info} (info {info})")
        return b.copy_out(s)

    def free(self) -> None:
        for d in (self.desc_a, self.desc_b):
            self.descs.drop(d)
        self.workspace.free()
        for buf in (self.ipiv, self.info):
            if buf is not None:
                buf.free()
        self.ipiv = self.info = self.lu = self._lu_keep = None
