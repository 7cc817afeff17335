"""Distributions of a global array over the ranks of a process group: pure data, shared by every operation
(public as ``cumath.distributed.distribution``, with ``Redistribute`` built on it).

* :class:`ProcessGrid` arranges the ranks in an N-D grid (``layout`` 'C': row-major rank order, 'F': column-major,
  or an explicit ``process_array``).
* :class:`Slab` (``Slab.X``, ``Slab.Y``, ``Slab.Z``) splits one axis in contiguous pieces, one per rank. Pieces may be
  uneven: the partition is what the ranks hold (gathered from their local shapes), or, when a distribution is
  made for a result, the balanced one (the first ``n % p`` ranks get one more).
* :class:`Box` is this rank's ``[lower, upper)`` corner pair of the global array.
* :class:`BlockCyclic` (``process_grid``, ``block_sizes``, ``first_process``) is ScaLAPACK's 2-D block-cyclic layout;
  :class:`BlockNonCyclic` is its one-block-per-process special case (blocks of ``ceil(n / p)``).

Every distribution answers ``indices(global_shape, rank, nranks)``: per axis, the global indices this rank holds,
as a ``range`` where they are contiguous and as a sorted integer array otherwise. Redistribution and the checks
(coverage, shapes) are written once against that answer. Local arrays of ``Slab``/``Box`` hold their piece in
the global order; local matrices of ``BlockCyclic`` hold their blocks packed, in the global order of their rows
and columns (ScaLAPACK's local storage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import enum
import math
from dataclasses import dataclass

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["Distribution", "ProcessGrid", "Slab", "Box", "BlockCyclic", "BlockNonCyclic", "SlabPartition",
           "balanced_range"]


def balanced_range(n: int, rank: int, nranks: int) -> range:
    """The piece of an ``n``-long axis that rank ``rank`` of ``nranks`` holds (first ``n % p`` ranks one more)."""
    q, r = divmod(n, nranks)
    start = rank * q + min(rank, r)
    return range(start, start + q + (1 if rank < r else 0))


class Distribution:
    """Base class of distributions. ``indices(global_shape, rank, nranks)`` is what every subclass answers."""

    ndim: int | None = None

    def indices(self, global_shape: Sequence[int], rank: int, nranks: int) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def local_shape(self, global_shape: Sequence[int], rank: int, nranks: int) -> tuple:
        return tuple(len(ix) for ix in self.indices(global_shape, rank, nranks))

    def to(self, kind: Any, global_shape: Sequence[int], rank: int, nranks: int) -> "Distribution":
        """The same distribution of this rank's piece as an object of class ``kind`` (``Box`` from a Slab, a
        BlockNonCyclic or any contiguous layout); ValueError where ``kind`` cannot express it."""
        if kind is type(self) or isinstance(self, kind):
            return self
        if kind is Box:
            ix = self.indices(global_shape, rank, nranks)
            if not all(isinstance(r, range) for r in ix):
                raise ValueError(f"{self!r} is not contiguous on rank {rank}: it cannot be written as a Box; "
                                 "redistribute to a Box instead")
            return Box(tuple(r.start for r in ix), tuple(r.stop for r in ix))
        raise ValueError(f"cannot convert {type(self).__name__} to {getattr(kind, '__name__', kind)}; "
                         "the conversions are to Box from Slab, Box and BlockNonCyclic")


@dataclass(frozen=True)
class ProcessGrid(Distribution):
    """An arrangement of ``prod(shape)`` ranks in a grid.

    ``layout`` 'C' numbers the ranks row-major (rank = i * shape[1] + j), 'F' column-major; ``process_array``
    (an integer array of the grid's shape) gives each position's rank explicitly and overrides ``layout``.
    """

    shape: tuple = None
    layout: str = "C"
    process_array: object = None

    def __init__(self, shape: Sequence[int] | None = None, layout: Any = "C", process_array: Any = None) -> None:
        if process_array is not None:
            arr = np.asarray(process_array)
            if arr.dtype.kind not in "iu":
                raise TypeError("ProcessGrid(process_array=) must be an integer array of ranks")
            if shape is not None and tuple(shape) != arr.shape:
                raise ValueError(f"ProcessGrid: shape {tuple(shape)} differs from process_array's {arr.shape}")
            if sorted(arr.ravel().tolist()) != list(range(arr.size)):
                raise ValueError("ProcessGrid(process_array=) must hold each rank 0..n-1 exactly once")
            shape = arr.shape
            object.__setattr__(self, "process_array", tuple(map(tuple, arr.reshape(arr.shape[0], -1).tolist())))
        if shape is None:
            raise ValueError("ProcessGrid needs shape= (the number of processes along each grid axis) or "
                             "process_array=")
        shape = tuple(int(s) for s in shape)
        if not shape or any(s < 1 for s in shape):
            raise ValueError(f"ProcessGrid: shape must be positive integers, got {shape}")
        layout = str(layout).upper()
        if layout not in ("C", "F"):
            raise ValueError(f"ProcessGrid: layout must be 'C' (row-major ranks) or 'F' (column-major), got {layout!r}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "layout", layout)

    @property
    def nranks(self) -> int:
        """How many ranks the grid has (the product of its shape)."""
        return math.prod(self.shape)

    def coords(self, rank: int) -> tuple:
        """This rank's position in the grid."""
        if self.process_array is not None:
            arr = np.asarray(self.process_array).reshape(self.shape)
            return tuple(int(i) for i in np.argwhere(arr == rank)[0])
        return tuple(int(i) for i in np.unravel_index(rank, self.shape, order=self.layout))

    def rank_at(self, coords: Any) -> int:
        if self.process_array is not None:
            return int(np.asarray(self.process_array).reshape(self.shape)[tuple(coords)])
        return int(np.ravel_multi_index(tuple(coords), self.shape, order=self.layout))

    def check(self, nranks: int) -> None:
        if self.nranks != nranks:
            raise ValueError(f"ProcessGrid{self.shape} has {self.nranks} positions but the process group has "
                             f"{nranks} ranks; make the grid's shape multiply to the number of ranks")


class Slab(Distribution, enum.Enum):
    """Split one axis (X = 0, Y = 1, Z = 2) in contiguous pieces, one per rank, in rank order."""

    X = 0
    Y = 1
    Z = 2

    @property
    def axis(self) -> int:
        """The axis that is split (0, 1 or 2)."""
        return self.value

    def indices(self, global_shape, rank: int, nranks: int, partition=None) -> tuple:
        if self.axis >= len(global_shape):
            raise ValueError(f"Slab.{self.name} splits axis {self.axis}, but the array has {len(global_shape)} axes")
        if partition is None:
            piece = balanced_range(global_shape[self.axis], rank, nranks)
        else:
            start = sum(partition[:rank])
            piece = range(start, start + partition[rank])
        return tuple(piece if a == self.axis else range(n) for a, n in enumerate(global_shape))

    def __repr__(self):
        return f"Slab.{self.name}"


@dataclass(frozen=True)
class SlabPartition(Distribution):
    """A slab with explicit (possibly uneven) piece sizes, one per rank: what ranks that hold a Slab do hold."""

    axis: int
    sizes: tuple

    def indices(self, global_shape: Sequence[int], rank: int, nranks: int) -> tuple:
        start = sum(self.sizes[:rank])
        piece = range(start, start + self.sizes[rank])
        return tuple(piece if a == self.axis else range(n) for a, n in enumerate(global_shape))


@dataclass(frozen=True)
class Box(Distribution):
    """This rank's piece of the global array: the corners ``lower`` (inclusive) and ``upper`` (exclusive)."""

    lower: tuple
    upper: tuple

    def __init__(self, lower: Any, upper: Any) -> None:
        lower, upper = tuple(int(v) for v in lower), tuple(int(v) for v in upper)
        if len(lower) != len(upper):
            raise ValueError(f"Box: lower {lower} and upper {upper} have different lengths")
        if any(lo < 0 or up < lo for lo, up in zip(lower, upper)):
            raise ValueError(f"Box: need 0 <= lower <= upper on every axis, got lower {lower}, upper {upper}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def shape(self) -> tuple[int, ...]:
        """The box's extents (upper - lower on each axis)."""
        return tuple(u - lo for lo, u in zip(self.lower, self.upper))

    def indices(self, global_shape: Sequence[int], rank: int = 0, nranks: int = 1) -> tuple:
        if len(global_shape) != len(self.lower):
            raise ValueError(f"Box{self.lower}-{self.upper} has {len(self.lower)} axes, the array {len(global_shape)}")
        if any(u > n for u, n in zip(self.upper, global_shape)):
            raise ValueError(f"Box{self.lower}-{self.upper} lies outside the global shape {tuple(global_shape)}")
        return tuple(range(lo, u) for lo, u in zip(self.lower, self.upper))


@dataclass(frozen=True)
class BlockCyclic(Distribution):
    """ScaLAPACK's block-cyclic layout of a matrix on a 2-D ``process_grid``: blocks of ``block_sizes`` dealt
    round-robin along each grid axis, starting at grid position ``first_process``."""

    process_grid: ProcessGrid
    block_sizes: tuple
    first_process: tuple = (0, 0)

    def __init__(self, process_grid: Any, block_sizes: Any, first_process: Any = (0, 0)) -> None:
        if not isinstance(process_grid, ProcessGrid):
            raise TypeError(f"BlockCyclic: process_grid must be a ProcessGrid, got {type(process_grid).__name__}")
        block_sizes = tuple(int(b) for b in block_sizes)
        if len(block_sizes) != len(process_grid.shape) or any(b < 1 for b in block_sizes):
            raise ValueError(f"BlockCyclic: block_sizes {block_sizes} must be positive, one per grid axis "
                             f"(grid {process_grid.shape})")
        first_process = tuple(int(f) for f in first_process)
        if len(first_process) != len(process_grid.shape) or any(
                not 0 <= f < p for f, p in zip(first_process, process_grid.shape)):
            raise ValueError(f"BlockCyclic: first_process {first_process} is not a position of grid "
                             f"{process_grid.shape}")
        object.__setattr__(self, "process_grid", process_grid)
        object.__setattr__(self, "block_sizes", block_sizes)
        object.__setattr__(self, "first_process", first_process)

    def _blocks(self, global_shape) -> tuple:
        return self.block_sizes

    def block_sizes_for(self, global_shape: Sequence[int]) -> tuple:
        """The block sizes of an array of ``global_shape`` (``block_sizes`` here; BlockNonCyclic's depend on it)."""
        return self._blocks(global_shape)

    def indices(self, global_shape: Sequence[int], rank: int, nranks: int) -> tuple:
        grid = self.process_grid
        grid.check(nranks)
        if len(global_shape) != len(grid.shape):
            raise ValueError(f"{type(self).__name__} on grid {grid.shape} describes {len(grid.shape)}-D arrays, "
                             f"the array has shape {tuple(global_shape)}")
        coords = grid.coords(rank)
        out = []
        for n, nb, p, c, f in zip(global_shape, self._blocks(global_shape), grid.shape, coords, self.first_process):
            owner = (np.arange(n) // nb + f) % p
            idx = np.flatnonzero(owner == c)
            if idx.size and idx[-1] - idx[0] + 1 == idx.size:
                out.append(range(int(idx[0]), int(idx[-1]) + 1))
            elif not idx.size:
                out.append(range(0))
            else:
                out.append(idx)
        return tuple(out)


@dataclass(frozen=True)
class BlockNonCyclic(BlockCyclic):
    """One block per process along each grid axis (blocks of ``ceil(n / p)``; the last ones may be short)."""

    def __init__(self, process_grid: Any, first_process: Any = (0, 0)) -> None:
        BlockCyclic.__init__(self, process_grid, (1,) * len(getattr(process_grid, "shape", (1, 1))), first_process)

    def _blocks(self, global_shape) -> tuple:
        return tuple(max(1, -(-n // p)) for n, p in zip(global_shape, self.process_grid.shape))

