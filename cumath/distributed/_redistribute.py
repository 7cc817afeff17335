"""Moving a distributed array from one distribution to another: one plan, one all-to-all per execution.

Every distribution says, per axis, which global indices a rank holds (``Distribution.indices``). The plan
intersects, for each pair of ranks, the source's and the destination's index sets axis by axis; the
intersection is a product set, packed on the sender as one contiguous piece (slices where the indices are
ranges, index arrays otherwise) and unpacked on the receiver into its local array. The pieces travel in one
``alltoallv``. The planning is pure (``plan_exchange``) and is tested without MPI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._distributions import Box, Distribution, Slab, SlabPartition

__all__ = ["plan_exchange", "Exchange", "check_cover", "all_indices"]


def _intersect(a, b):
    """(positions in a, positions in b) of the common indices of two sorted index sets (range or array)."""
    if isinstance(a, range) and isinstance(b, range):
        lo, hi = max(a.start, b.start), min(a.stop, b.stop)
        if hi <= lo:
            return None
        return slice(lo - a.start, hi - a.start), slice(lo - b.start, hi - b.start)
    common, ia, ib = np.intersect1d(np.asarray(a), np.asarray(b), assume_unique=True, return_indices=True)
    if not common.size:
        return None
    return _compact(ia), _compact(ib)


def _compact(pos: np.ndarray):
    if pos[-1] - pos[0] + 1 == pos.size:
        return slice(int(pos[0]), int(pos[-1]) + 1)
    return pos


def _size(sel) -> int:
    return sel.stop - sel.start if isinstance(sel, slice) else len(sel)


def _index(sels):
    if all(isinstance(s, slice) for s in sels):
        return tuple(sels)
    return np.ix_(*[np.arange(s.start, s.stop) if isinstance(s, slice) else s for s in sels])


def all_indices(dist, global_shape, nranks: int, boxes=None) -> list:
    """Per rank, the index sets of ``dist``; ``boxes`` are every rank's Box (gathered) when ``dist`` is a Box."""
    if isinstance(dist, Box):
        if boxes is None:
            raise ValueError("a Box distribution needs every rank's box (gathered)")
        return [b.indices(global_shape) for b in boxes]
    return [dist.indices(global_shape, r, nranks) for r in range(nranks)]


def check_cover(indices: list, global_shape, what: str) -> None:
    """The pieces must cover the global array exactly once (ValueError otherwise)."""
    total = sum(math.prod(len(ix) for ix in per_rank) for per_rank in indices)
    n = math.prod(global_shape)
    overlap = 0
    for i in range(len(indices)):
        for j in range(i + 1, len(indices)):
            common = [_intersect(a, b) for a, b in zip(indices[i], indices[j])]
            if all(c is not None for c in common):
                overlap += math.prod(_size(c[0]) for c in common)
    if total - overlap != n or overlap:
        raise ValueError(f"the {what} distribution does not cover the global array of shape {tuple(global_shape)} "
                         f"exactly once: its pieces hold {total} elements ({overlap} of them twice) for {n}; give "
                         "every element to exactly one rank")


@dataclass
class Exchange:
    """The planned redistribution of one rank: what it sends to and receives from every rank."""

    send: list  # per destination rank: index into the source local array, or None
    recv: list  # per source rank: (index into the destination local array, shape), or None
    send_counts: np.ndarray  # elements
    recv_counts: np.ndarray
    out_shape: tuple
    rank: int
    uniform: bool = False  # every pair of ranks exchanges the same number of elements (the same on every rank)

    def execute(self, group, local: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Move ``local`` (the source piece) and return this rank's destination piece (C order)."""
        itemsize = local.dtype.itemsize
        if out is None:
            out = np.empty(self.out_shape, dtype=local.dtype)
        if group.nranks == 1:
            if self.send[0] is not None:
                out[self.recv[0][0]] = local[self.send[0]].reshape(self.recv[0][1])
            return out
        total = int(self.send_counts.sum())
        sendbuf = self._buffer(local.dtype, total)
        pos = 0
        for dest, sel in enumerate(self.send):
            if sel is not None:
                n = int(self.send_counts[dest])
                sendbuf[pos:pos + n].reshape(self.send_shapes[dest])[...] = local[sel]
                pos += n
        direct = self.recv_direct
        recvbuf = out.reshape(-1) if direct else np.empty(int(self.recv_counts.sum()), dtype=local.dtype)
        group.alltoallv(sendbuf, self.send_counts * itemsize, recvbuf, self.recv_counts * itemsize, self.uniform)
        if not direct:
            pos = 0
            for src, entry in enumerate(self.recv):
                if entry is not None:
                    sel, shape = entry
                    n = int(self.recv_counts[src])
                    out[sel] = recvbuf[pos:pos + n].reshape(shape)
                    pos += n
        return out

    def _buffer(self, dtype, n: int) -> np.ndarray:
        """The send buffer, kept between executions (a new one costs its page faults every time)."""
        buf = getattr(self, "_sendbuf", None)
        if buf is None or buf.dtype != dtype or buf.size < n:
            buf = self._sendbuf = np.empty(n, dtype=dtype)
        return buf[:n]

    @property
    def send_shapes(self) -> list:
        shapes = getattr(self, "_send_shapes", None)
        if shapes is None:
            shapes = self._send_shapes = [None if s is None else _shape_of(s) for s in self.send]
        return shapes

    @property
    def recv_direct(self) -> bool:
        """Whether the pieces received, in rank order, are consecutive runs of the result in C order (then the
        result itself is the receive buffer: no unpacking)."""
        direct = getattr(self, "_recv_direct", None)
        if direct is None:
            direct, nxt = True, 0
            for entry in self.recv:
                if entry is None:
                    continue
                sel, shape = entry
                if not all(isinstance(s, slice) for s in sel) or any(
                        s.start != 0 or s.stop != n for s, n in zip(sel[1:], self.out_shape[1:])) or sel[0].start != nxt:
                    direct = False
                    break
                nxt = sel[0].stop
            self._recv_direct = direct
        return direct


def _shape_of(sel) -> tuple:
    if all(isinstance(s, slice) for s in sel):
        return tuple(s.stop - s.start for s in sel)
    return tuple(np.broadcast_shapes(*[np.shape(s) for s in sel]))


def plan_exchange(src: list, dst: list, rank: int) -> Exchange:
    """Plan rank ``rank``'s part of moving from index sets ``src`` (per rank) to ``dst`` (per rank)."""
    nranks = len(src)
    send, recv = [None] * nranks, [None] * nranks
    send_counts = np.zeros(nranks, dtype=np.int64)
    recv_counts = np.zeros(nranks, dtype=np.int64)
    for peer in range(nranks):
        common = [_intersect(a, b) for a, b in zip(src[rank], dst[peer])]
        if all(c is not None for c in common):
            send[peer] = _index([c[0] for c in common])
            send_counts[peer] = math.prod(_size(c[0]) for c in common)
        common = [_intersect(a, b) for a, b in zip(src[peer], dst[rank])]
        if all(c is not None for c in common):
            shape = tuple(_size(c[1]) for c in common)
            recv[peer] = (_index([c[1] for c in common]), shape)
            recv_counts[peer] = math.prod(shape)
    out_shape = tuple(len(ix) for ix in dst[rank])
    return Exchange(send, recv, send_counts, recv_counts, out_shape, rank, _uniform(src, dst))


def _uniform(src: list, dst: list) -> bool:
    """Whether all pairs of ranks exchange equally many elements: computed from every rank's index sets, so every
    rank reaches the same answer (the choice of MPI collective must be the same everywhere)."""
    if not all(isinstance(i, range) for per in src + dst for i in per):
        return False
    first = None
    for a in src:
        for b in dst:
            n = 1
            for x, y in zip(a, b):
                n *= max(0, min(x.stop, y.stop) - max(x.start, y.start))
            if first is None:
                first = n
            elif n != first:
                return False
    return True


def slab_partition(slab: Slab, local_shapes: list) -> SlabPartition:
    """The (possibly uneven) slab the ranks hold, from their local shapes."""
    return SlabPartition(slab.axis, tuple(int(s[slab.axis]) for s in local_shapes))


def resolve(dist: Distribution, local_shapes: list, what: str):
    """The global shape and the per-rank index sets of a distribution the ranks hold, from their local shapes.

    ``dist`` is a Slab (the partition comes from the local shapes), or this rank's Box (``local_shapes`` are then
    every rank's ``(box, local_shape)``), or a BlockCyclic/ProcessGrid-based layout given with its global shape.
    Raises ValueError for shapes that do not fit the distribution.
    """
    nranks = len(local_shapes)
    ndims = {len(s) for s in local_shapes}
    if len(ndims) != 1:
        raise ValueError(f"the {what} operands have different numbers of axes on different ranks: {local_shapes}")
    if isinstance(dist, Slab):
        axis = dist.axis
        others = {tuple(s[a] for a in range(len(s)) if a != axis) for s in local_shapes}
        if len(others) != 1:
            raise ValueError(f"the {what} operands' shapes differ across ranks outside the slab axis {axis} of "
                             f"{dist!r}: {local_shapes}; every rank must hold the same extents on the other axes")
        part = slab_partition(dist, local_shapes)
        shape = list(local_shapes[0])
        shape[axis] = sum(part.sizes)
        shape = tuple(shape)
        return shape, part, [part.indices(shape, r, nranks) for r in range(nranks)]
    raise TypeError(f"resolve: unsupported distribution {dist!r}")  # pragma: no cover
