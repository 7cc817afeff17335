"""Pure plan arithmetic of the distributed FFT: which axes each rank transforms locally, and between which
layouts the array moves (the transposes), for slab and pencil decompositions.

The problem itself (dtypes, the fft_type rules, the C2R result length) is checked by the single-process
``cumath.fft._traits.fft_geometry`` on the global shape. A plan is a list of steps: ``Local(axes, kind)`` (a
per-rank FFT of axes that are whole on every rank; ``kind`` is 'C2C', 'R2C' (the last axis, first) or 'C2R' (the
last axis, last)) and ``Move(layout)`` (an all-to-all into another layout). Layouts are :class:`Split`: some axes
cut in balanced pieces over a row-major grid of ranks (one axis: a slab, two: a pencil). The steps come from one
greedy rule: transform every pending axis that is whole now, else move to the layout where most pending axes are
whole. Slab X input gives: FFT(Y, Z), X -> Y, FFT(X): one transpose; pencils: FFT(Z), two transposes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...fft._traits import fft_geometry
from .._distributions import Distribution, balanced_range

__all__ = ["Split", "Local", "Move", "plan_steps", "pencil_grid", "candidate_layouts", "problem"]


@dataclass(frozen=True)
class Split(Distribution):
    """Axes ``axes`` cut over a row-major grid ``grid`` of ranks (balanced pieces); the other axes whole."""

    axes: tuple
    grid: tuple

    def indices(self, global_shape, rank: int, nranks: int) -> tuple:
        coords = np.unravel_index(rank, self.grid) if self.grid else ()
        out = [range(n) for n in global_shape]
        for a, p, c in zip(self.axes, self.grid, coords):
            out[a] = balanced_range(global_shape[a], int(c), p)
        return tuple(out)


@dataclass(frozen=True)
class Local:
    axes: tuple
    kind: str  # 'C2C', 'R2C', 'C2R'


@dataclass(frozen=True)
class Move:
    layout: Split


def pencil_grid(nranks: int) -> tuple:
    """The most square p1 x p2 = nranks (p1 >= p2)."""
    p2 = int(math.isqrt(nranks))
    while nranks % p2:
        p2 -= 1
    return (nranks // p2, p2)


def candidate_layouts(ndim: int, nranks: int, decomposition: str) -> list:
    if nranks == 1:
        return [Split((), ())]
    if decomposition == "pencil" and ndim == 3:
        g = pencil_grid(nranks)
        if g[1] > 1:
            return [Split((0, 1), g), Split((0, 2), g), Split((1, 2), g)]
    return [Split((a,), (nranks,)) for a in range(min(ndim, 2))]


def problem(global_shape, dtype: str, fft_type, last_axis_parity):
    """The single-process FFT geometry of the whole array (checks dtypes, fft_type, the C2R length)."""
    return fft_geometry(tuple(global_shape), _c_strides(global_shape), dtype, None, fft_type, last_axis_parity)


def _c_strides(shape) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _doable(pending: set, whole: set, fft_type: str, last: int) -> tuple:
    can = pending & whole
    if fft_type == "R2C" and last in pending and last not in can:
        return ()
    if fft_type == "C2R" and last in can and pending - can:
        can = can - {last}
    return tuple(sorted(can))


def plan_steps(ndim: int, fft_type: str, start_whole: set, layouts: list) -> list:
    """The steps from a start layout whose whole axes are ``start_whole`` (None: must move first)."""
    last = ndim - 1
    pending = set(range(ndim))
    steps, whole, current = [], (set(start_whole) if start_whole is not None else None), None
    guard = 0
    while pending:
        guard += 1
        if guard > 8:  # pragma: no cover - the rule always ends within three layouts
            raise RuntimeError("distributed FFT planning did not converge")
        can = _doable(pending, whole, fft_type, last) if whole is not None else ()
        if can:
            kind = fft_type if last in can and fft_type != "C2C" else "C2C"
            steps.append(Local(can, kind))
            pending -= set(can)
            continue
        best = max((lay for lay in layouts if lay != current),
                   key=lambda lay: len(_doable(pending, set(range(ndim)) - set(lay.axes), fft_type, last)))
        steps.append(Move(best))
        current, whole = best, set(range(ndim)) - set(best.axes)
    return steps
