"""Pure storage arithmetic of the Universal Sparse Tensor (NumPy, host): building the positions, coordinates and
values of any format from the coordinates of the stored elements, and reading them back.

A level of ``n`` parent positions stores, by its format:

- DENSE / BATCH: nothing; position ``p * size + c`` for every coordinate ``c`` of the level;
- COMPRESSED: ``pos`` (``n + 1`` offsets) and ``crd`` (the coordinates); one position per entry;
- SINGLETON: ``crd`` (one coordinate per parent position);
- RANGE: nothing; the coordinates its parent's coordinates admit (a contiguous range, as the entries of one
  diagonal of DIA), one position each;
- DELTA: as COMPRESSED, but ``crd`` holds each coordinate's difference from the previous one of its parent (the
  first: the coordinate itself);
- STRUCTURED (N:M, on ``x % M``): ``crd`` only, exactly N ordered coordinates per parent position; a block with
  fewer elements is padded with the smallest unused coordinates, whose values are zero.

Building sorts the elements by their level coordinates; a unique level sums duplicates. Reading gives every
stored position (dense fill included) with its dimension coordinates, dropping positions outside the extents.
"""

from __future__ import annotations

import numpy as np

from ._dsl import LevelFormat as F, TensorFormat

__all__ = ["build", "read", "level_sizes"]


def level_sizes(fmt: TensorFormat, extents) -> list:
    return fmt.dim2lvl(list(extents), as_size=True) if fmt.num_dimensions else []


def _range_bounds(fmt: TensorFormat, extents, level: int, table: list, size: int):
    """(lo, hi) per parent position of the RANGE level ``level`` whose earlier level coordinates are ``table``."""
    nparents = table[0].size if table else 1
    cand = np.arange(size, dtype=np.int64)
    lv = [np.repeat(t, size).reshape(nparents, size) for t in table]
    lv.append(np.broadcast_to(cand, (nparents, size)))
    lv += [np.zeros((nparents, size), np.int64)] * (fmt.num_levels - level - 1)
    try:
        dims = fmt.lvl2dim(lv)
    except KeyError:
        raise ValueError(f"the RANGE level {level} of {fmt.name} needs its dimensions determined by the levels up to "
                         f"it") from None
    ok = np.ones((nparents, size), bool)
    for d, ext in zip(dims, extents):
        ok &= (d >= 0) & (d < ext)
    any_ok = ok.any(axis=1)
    lo = np.where(any_ok, ok.argmax(axis=1), 0)
    hi = np.where(any_ok, size - ok[:, ::-1].argmax(axis=1), 0)
    return lo.astype(np.int64), hi.astype(np.int64)


def _first_of_group(parent: np.ndarray) -> np.ndarray:
    """Per element of sorted ``parent``: the index of the first element with the same parent."""
    start = np.ones(parent.size, bool)
    start[1:] = parent[1:] != parent[:-1]
    return np.maximum.accumulate(np.where(start, np.arange(parent.size), 0)) if parent.size else parent


def _structured(fmt, level, parent, c, nparents, n):
    """(crd, slot of every element) of the STRUCTURED level ``level``: ``n`` ordered coordinates per parent, the
    elements' own and, where a block has fewer, the smallest unused ones (their values stay zero)."""
    m = fmt.level_exprs[level].divisor
    rank = np.arange(c.size) - _first_of_group(parent)
    if c.size and rank.max() >= n:
        raise ValueError(f"{fmt.name} holds {n} of every {m} elements of level {level}, but a block holds "
                         f"{int(rank.max()) + 1}; prune the tensor to {n}:{m} first")
    # candidates: every element, then 0..n-1 of every parent (enough to fill a block); keep the elements
    cand_p = np.concatenate([parent, np.repeat(np.arange(nparents, dtype=np.int64), n)])
    cand_c = np.concatenate([c, np.tile(np.arange(n, dtype=np.int64), nparents)])
    real = np.concatenate([np.arange(c.size), np.full(nparents * n, -1)])
    order = np.lexsort((-real, cand_c, cand_p))  # per (parent, coordinate) the element first
    cand_p, cand_c, real = cand_p[order], cand_c[order], real[order]
    first = np.ones(cand_p.size, bool)
    first[1:] = (cand_p[1:] != cand_p[:-1]) | (cand_c[1:] != cand_c[:-1])
    cand_p, cand_c, real = cand_p[first], cand_c[first], real[first]
    # per parent: its elements, then padding coordinates in increasing order, n in all; then sorted by coordinate
    order = np.lexsort((cand_c, real < 0, cand_p))
    cand_p, cand_c, real = cand_p[order], cand_c[order], real[order]
    keep = (np.arange(cand_p.size) - _first_of_group(cand_p)) < n
    cand_p, cand_c, real = cand_p[keep], cand_c[keep], real[keep]
    order = np.lexsort((cand_c, cand_p))
    cand_c, real = cand_c[order], real[order]
    slot = np.empty(c.size, np.int64)
    is_real = real >= 0
    slot[real[is_real]] = np.nonzero(is_real)[0]
    return cand_c, slot


def _delta_encode(parent: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Coordinates (sorted per parent) as differences from the previous one of the same parent."""
    d = c.copy()
    if c.size > 1:
        same = parent[1:] == parent[:-1]
        d[1:][same] -= c[:-1][same]
    return d


def _delta_decode(p: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """The coordinates of a DELTA level from its positions ``p`` and stored differences."""
    run = np.concatenate([[0], np.cumsum(deltas, dtype=np.int64)])
    owner = np.repeat(np.arange(p.size - 1, dtype=np.int64), np.diff(p))
    return run[1:] - run[p[owner]]


def build(fmt: TensorFormat, extents, coords: np.ndarray, values: np.ndarray, dtype, index_dtype):
    """(pos, crd, val) of ``fmt`` holding ``values`` at dimension ``coords`` (shape (nse, ndim))."""
    nl = fmt.num_levels
    sizes = level_sizes(fmt, extents)
    if nl == 0:
        return [], [], np.asarray(values, dtype=dtype).reshape(1)[:1] if values.size else np.zeros(1, dtype)
    lv = fmt.dim2lvl([coords[:, d].astype(np.int64) for d in range(coords.shape[1])])
    lv = [np.asarray(x, np.int64) for x in lv]
    order = np.lexsort(lv[::-1]) if coords.shape[0] else np.zeros(0, np.int64)
    lv = [x[order] for x in lv]
    vals = np.asarray(values)[order]
    parent = np.zeros(vals.size, np.int64)
    nparents = 1
    table: list = []  # per position of the current level: the level coordinates so far
    pos, crd = [None] * nl, [None] * nl
    unique_all = True
    for level, (kind, c) in enumerate(zip(fmt.level_formats, lv)):
        size = sizes[level]
        if kind in (F.DENSE, F.BATCH):
            if c.size and (c.min() < 0 or c.max() >= size):
                raise ValueError(f"level {level} of {fmt.name} is dense but its coordinates fall outside [0, {size}); "
                                 f"use a compressed level for {fmt.level_exprs[level]!r}")
            parent = parent * size + c
            table = [np.repeat(t, size) for t in table] + [np.tile(np.arange(size, dtype=np.int64), nparents)]
            nparents *= size
        elif kind in (F.COMPRESSED, F.DELTA):
            unique = fmt.level_unique(level)
            unique_all &= unique
            if unique:
                new = np.ones(c.size, bool)
                new[1:] = (parent[1:] != parent[:-1]) | (c[1:] != c[:-1])
            else:
                new = np.ones(c.size, bool)
            entry = np.cumsum(new) - 1
            counts = np.bincount(parent[new], minlength=nparents)
            pos[level] = np.concatenate([[0], np.cumsum(counts)]).astype(index_dtype)
            kept = c[new]
            crd[level] = (_delta_encode(parent[new], kept) if kind == F.DELTA else kept).astype(index_dtype)
            table = [t[parent[new]] for t in table] + [kept]
            parent, nparents = entry, int(new.sum())
        elif kind == F.STRUCTURED:
            n = fmt.level_param(level)
            if c.size and (c.min() < 0 or c.max() >= size):  # pragma: no cover - x % M is in range
                raise ValueError(f"coordinates outside the blocks of level {level} of {fmt.name}")
            coords_l, slot = _structured(fmt, level, parent, c, nparents, n)
            crd[level] = coords_l.astype(index_dtype)
            table = [np.repeat(t, n) for t in table] + [coords_l]
            parent, nparents = slot, nparents * n
        elif kind == F.SINGLETON:
            if c.size and np.unique(parent).size != parent.size:
                raise ValueError(f"{fmt.name} cannot hold these elements: the SINGLETON level {level} needs one "
                                 f"element per parent position (make the parent level NONUNIQUE)")
            full = np.zeros(nparents, np.int64)
            full[parent] = c
            crd[level] = full.astype(index_dtype)
            table = table + [full]
        elif kind == F.RANGE:
            lo, hi = _range_bounds(fmt, extents, level, table, size)
            offsets = np.concatenate([[0], np.cumsum(hi - lo)])
            if c.size and ((c < lo[parent]) | (c >= hi[parent])).any():  # pragma: no cover - valid coordinates
                raise ValueError(f"coordinates outside the range of level {level} of {fmt.name}")
            parent = offsets[parent] + (c - lo[parent])
            rep = hi - lo
            table = [np.repeat(t, rep) for t in table] + [np.concatenate(
                [np.arange(a, b, dtype=np.int64) for a, b in zip(lo, hi)]) if rep.size else np.zeros(0, np.int64)]
            nparents = int(offsets[-1])
    val = np.zeros(nparents, dtype=dtype)
    if unique_all:
        np.add.at(val, parent, vals.astype(dtype, copy=False))
    else:
        val[parent] = vals
    return pos, crd, val


def read(fmt: TensorFormat, extents, pos, crd, val: np.ndarray):
    """(coords (nse, ndim) int64, values) of every stored position inside the extents."""
    nl = fmt.num_levels
    if nl == 0:
        return np.zeros((1, 0), np.int64), np.asarray(val).reshape(-1)[:1]
    sizes = level_sizes(fmt, extents)
    table: list = []
    nparents = 1
    for level, kind in enumerate(fmt.level_formats):
        size = sizes[level]
        if kind in (F.DENSE, F.BATCH):
            table = [np.repeat(t, size) for t in table] + [np.tile(np.arange(size, dtype=np.int64), nparents)]
            nparents *= size
        elif kind in (F.COMPRESSED, F.DELTA):
            p = np.asarray(pos[level], np.int64)
            counts = np.diff(p)
            owner = np.repeat(np.arange(nparents, dtype=np.int64), counts)
            c = np.asarray(crd[level], np.int64)[: p[-1]]
            table = [t[owner] for t in table] + [_delta_decode(p, c) if kind == F.DELTA else c]
            nparents = int(p[-1])
        elif kind == F.STRUCTURED:
            n = fmt.level_param(level)
            table = [np.repeat(t, n) for t in table] + [np.asarray(crd[level], np.int64)[: nparents * n]]
            nparents *= n
        elif kind == F.SINGLETON:
            table = table + [np.asarray(crd[level], np.int64)[:nparents]]
        elif kind == F.RANGE:
            lo, hi = _range_bounds(fmt, extents, level, table, size)
            rep = hi - lo
            table = [np.repeat(t, rep) for t in table] + [np.concatenate(
                [np.arange(a, b, dtype=np.int64) for a, b in zip(lo, hi)]) if rep.size else np.zeros(0, np.int64)]
            nparents = int(rep.sum())
    dims = fmt.lvl2dim(table)
    coords = np.stack([np.asarray(d, np.int64) for d in dims], axis=1) if dims else np.zeros((nparents, 0), np.int64)
    values = np.asarray(val).reshape(-1)[:nparents]
    inside = np.ones(nparents, bool)
    for d, ext in enumerate(extents):
        inside &= (coords[:, d] >= 0) & (coords[:, d] < ext)
    return coords[inside], values[inside]
