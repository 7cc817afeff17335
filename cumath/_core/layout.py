"""Pure layout arithmetic shared by every domain. A "perm" lists axes from outermost to innermost."""

from __future__ import annotations

__all__ = ["inverse_perm", "is_identity", "dense_strides", "natural_perm", "element_strides"]


def inverse_perm(perm) -> list:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def is_identity(perm) -> bool:
    return perm is None or all(i == p for i, p in enumerate(perm))


def dense_strides(shape, perm) -> tuple:
    """Strides (in elements) of a dense array of ``shape`` laid out in ``perm`` order."""
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(perm):
        strides[axis] = step
        step *= shape[axis]
    return tuple(strides)


def natural_perm(strides) -> tuple:
    """An array's own memory order: axes by decreasing |stride| (ties keep the axis order)."""
    return tuple(sorted(range(len(strides)), key=lambda a: -abs(strides[a])))


_ELEMENT_STRIDES: dict = {}  # (byte strides, itemsize) -> element strides: wrapping an array is on hot paths
_ELEMENT_STRIDES_MAX = 4096


def element_strides(byte_strides, itemsize: int) -> tuple:
    """Byte strides as element strides; raises UnsupportedLayoutError when they are not whole elements."""
    key = (byte_strides if type(byte_strides) is tuple else tuple(byte_strides), itemsize)
    known = _ELEMENT_STRIDES.get(key)
    if known is not None:
        return known
    for s in byte_strides:
        if s % itemsize:
            from ..errors import UnsupportedLayoutError

            raise UnsupportedLayoutError(
                f"the array's strides {tuple(byte_strides)} are not multiples of its item size {itemsize}; "
                f"pass a copy"
            )
    strides = tuple(s // itemsize for s in byte_strides)
    if len(_ELEMENT_STRIDES) >= _ELEMENT_STRIDES_MAX:
        _ELEMENT_STRIDES.clear()
    _ELEMENT_STRIDES[key] = strides
    return strides
