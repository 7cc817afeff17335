"""What the distributed matrix operations share: BLACS grids from ProcessGrids, ScaLAPACK descriptors from
BlockCyclic distributions, and this rank's local matrix in ScaLAPACK's column-major storage."""

from __future__ import annotations

import logging

import numpy as np

from .._operands import gather_layout, host_view
from ..distribution import BlockCyclic, ProcessGrid

__all__ = ["MatrixOperand", "blacs_context", "grid_order", "index_runs", "SUPPORTED_DTYPES"]

logger = logging.getLogger(__name__)
SUPPORTED_DTYPES = ("float32", "float64", "complex64", "complex128")


def blacs_context(ctx, grid: ProcessGrid) -> int:
    """The BLACS context of ``grid`` on the context's communicator (made once, released by finalize())."""
    from ..._bindings import blacs, mpi

    comm = ctx.communicator
    if comm is None:
        raise TypeError("the ScaLAPACK engine needs an MPI communicator: initialize with a mpi4py communicator "
                        "or an MPIProcessGroup")
    order = grid_order(grid)

    def make():
        handle = blacs.sys2blacs_handle(mpi.comm_handle(comm))
        context = blacs.gridinit(handle, order, grid.shape[0], grid.shape[1])
        logger.info("BLACS grid %dx%d (%s-major) made: context %d", grid.shape[0], grid.shape[1],
                    "row" if order == "R" else "column", context)
        return handle, context

    def release(entry):
        blacs.gridexit(entry[1])
        blacs.free_blacs_handle(entry[0])

    return ctx.resource(("blacs", grid.shape, order), make, release)[1]


def index_runs(positions) -> list:
    """``(start, target, length)`` of each run of consecutive values in ``positions`` (the global index of each
    local row or column, in local order): ``positions[start:start + length] == range(target, target + length)``.
    A block-cyclic piece is one run per block, so a piece moves to or from global order in whole-block copies."""
    pos = np.asarray(positions, dtype=np.intp)
    if pos.size == 0:
        return []
    starts = np.flatnonzero(np.diff(pos, prepend=pos[0] - 2) != 1)
    ends = np.append(starts[1:], pos.size)
    return [(int(s), int(pos[s]), int(e - s)) for s, e in zip(starts, ends)]


def grid_order(grid: ProcessGrid) -> str:
    """'R' when the grid numbers its ranks row-major, 'C' when column-major (what ScaLAPACK, cuBLASMp and
    cuSOLVERMp grids can be); ValueError for another numbering or a grid that is not 2-D."""
    if len(grid.shape) != 2:
        raise ValueError(f"distributed matrices need a 2-D ProcessGrid, got shape {grid.shape}")
    if grid.process_array is not None:
        arr = np.asarray(grid.process_array).reshape(grid.shape)
        if np.array_equal(arr, np.arange(arr.size).reshape(grid.shape)):
            return "R"
        if np.array_equal(arr, np.arange(arr.size).reshape(grid.shape, order="F")):
            return "C"
        raise ValueError("distributed matrix grids number the ranks row- or column-major; this ProcessGrid's "
                         "process_array is neither: use layout='C' or 'F'")
    return "R" if grid.layout == "C" else "C"


class MatrixOperand:
    """One rank's block-cyclic piece of a distributed matrix: its global shape, ScaLAPACK descriptor and
    column-major local copy (a copy only where the caller's array is not already Fortran-ordered)."""

    def __init__(self, ctx, x, dist, name: str, global_shape=None):
        if not isinstance(dist, BlockCyclic):
            raise TypeError(f"the distribution of {name} must be BlockCyclic or BlockNonCyclic, got "
                            f"{type(dist).__name__}")
        self.array, self.package = host_view(x, name)
        if self.array.ndim != 2:
            raise ValueError(f"{name} must be a matrix (2-D); this rank's piece has {self.array.ndim} axes")
        if self.array.dtype.name not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} has dtype {self.array.dtype}; the supported dtypes are {list(SUPPORTED_DTYPES)}")
        group = ctx.process_group
        self.dist, self.name = dist, name
        self.global_shape, _ = gather_layout(group, self.array.shape, dist, name, global_shape)
        grid = dist.process_grid
        self.context = blacs_context(ctx, grid)
        blocks = dist.block_sizes_for(self.global_shape)
        from ..._bindings import scalapack

        lld = max(1, self.array.shape[0])
        self.desc = scalapack.descinit(self.global_shape[0], self.global_shape[1], blocks[0], blocks[1],
                                       dist.first_process[0], dist.first_process[1], self.context, lld)
        self.local = None

    @property
    def dtype(self):
        return self.array.dtype

    def fortran(self, dtype, *, copy: bool) -> np.ndarray:
        """This rank's piece, column-major, of ``dtype``; a fresh copy when ``copy`` (the routine writes it)."""
        a = self.array
        if not copy and a.dtype == dtype and a.flags.f_contiguous and a.ctypes.data % 16 == 0:
            self.local = a
        else:
            self.local = np.asfortranarray(a, dtype=dtype) if not copy else np.array(a, dtype=dtype, order="F")
            if self.local is a:
                self.local = a.copy(order="F")
        return self.local
