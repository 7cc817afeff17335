"""Memory overlap of operands, from their pointers, shapes and strides (``numpy.shares_memory``-style bounds
checks, pure arithmetic: no array is read).

- :func:`self_overlapping`: whether two elements of one array share memory (zero strides, sliding windows,
  ``as_strided`` views). Nothing may be written into such an array element by element: an in-place result
  written over it depends on the order of the writes.
- :func:`byte_extent` / :func:`extents_overlap`: the bytes an array can touch, and whether two arrays' spans
  meet. Spans that meet may still not share an element (two interleaved column views); callers that write
  treat a meeting as an overlap and compute through a copy, as ``numpy.matmul(out=)`` does.
"""

from __future__ import annotations

__all__ = ["self_overlapping", "byte_extent", "extents_overlap", "has_negative_stride"]


def self_overlapping(shape, strides) -> bool:
    """Whether distinct indices of an array of ``shape`` and ``strides`` (in elements) can address the same
    element. Exact for the layouts arrays have (each stride at least the span of the smaller ones); a layout
    that interleaves axes (strides (3, 2) over shape (2, 3)) is reported as overlapping, which is safe."""
    dims = sorted((abs(s), n) for n, s in zip(shape, strides) if n != 1)
    span = 1  # elements covered by the smaller axes
    for s, n in dims:
        if s < span:
            return True
        span = s * (n - 1) + span
    return False


def has_negative_stride(shape, strides) -> bool:
    return any(s < 0 and n != 1 for n, s in zip(shape, strides))


def byte_extent(ptr: int, shape, strides, itemsize: int) -> tuple:
    """``(first, end)``: the bytes ``[first, end)`` an array can touch (``(ptr, ptr)`` when it is empty)."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n == 0:
            return ptr, ptr
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return ptr + lo * itemsize, ptr + (hi + 1) * itemsize


def extents_overlap(a, b) -> bool:
    """Whether two operands (anything with ``ptr``, ``shape``, ``strides`` in elements and ``itemsize``) on one
    device have spans that meet."""
    if a is None or b is None or a.ptr == 0 or b.ptr == 0:
        return False
    a0, a1 = byte_extent(a.ptr, a.shape, a.strides, a.itemsize)
    b0, b1 = byte_extent(b.ptr, b.shape, b.strides, b.itemsize)
    return a0 < b1 and b0 < a1 and a0 < a1 and b0 < b1
