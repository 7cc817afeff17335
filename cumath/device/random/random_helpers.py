"""Host helpers for the quasi-random generators: Sobol direction vectors and scramble constants, copied from
cuRAND's host library tables (libcurand; no GPU needed).

    vectors = get_direction_vectors64(DirectionVectorSet.SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6, n)  # (n, 64)
    constants = get_scramble_constants64(n)                                                           # (n,)

Row ``d`` of the vectors (and constant ``d``) initialises the state of dimension ``d``:
``random.init(vectors[d], constants[d], offset, states[i])`` inside a kernel.
"""

from __future__ import annotations

import ctypes
import enum

__all__ = ["DirectionVectorSet", "get_direction_vectors32", "get_direction_vectors64", "get_scramble_constants32",
           "get_scramble_constants64", "MAX_DIMENSIONS"]

MAX_DIMENSIONS = 20000


class DirectionVectorSet(enum.IntEnum):
    """cuRAND's direction-vector sets (curandDirectionVectorSet)."""

    DIRECTION_VECTORS_32_JOEKUO6 = 101
    SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6 = 102
    DIRECTION_VECTORS_64_JOEKUO6 = 103
    SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6 = 104


_BITS = {DirectionVectorSet.DIRECTION_VECTORS_32_JOEKUO6: 32,
         DirectionVectorSet.SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6: 32,
         DirectionVectorSet.DIRECTION_VECTORS_64_JOEKUO6: 64,
         DirectionVectorSet.SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6: 64}


def _count(n, what="n") -> int:
    from .._common import positive_int

    n = positive_int(n, what)
    if n > MAX_DIMENSIONS:
        raise ValueError(f"{what}={n}: cuRAND's tables have {MAX_DIMENSIONS} dimensions")
    return n


def _copy(address: int, dtype: str, count: int):
    import numpy as np

    ctype = ctypes.c_uint32 if dtype == "uint32" else ctypes.c_uint64
    buf = (ctype * count).from_address(address)
    return np.ctypeslib.as_array(buf).copy()


def _vectors(set_, n, bits: int):
    from ..._bindings import curand

    try:
        set_ = DirectionVectorSet(set_)
    except ValueError:
        raise ValueError(f"set={set_!r} is not a direction-vector set; use a DirectionVectorSet member") from None
    if _BITS[set_] != bits:
        raise ValueError(f"{set_.name} holds {_BITS[set_]}-bit vectors; use get_direction_vectors{_BITS[set_]}()")
    n = _count(n)
    getter = curand.curandGetDirectionVectors32 if bits == 32 else curand.curandGetDirectionVectors64
    data = _copy(getter(int(set_)), f"uint{bits}", n * bits)
    return data.reshape(n, bits)


def get_direction_vectors32(set_, n):
    """``(n, 32)`` uint32 direction vectors of a 32-bit set, one row per dimension."""
    return _vectors(set_, n, 32)


def get_direction_vectors64(set_, n):
    """``(n, 64)`` uint64 direction vectors of a 64-bit set, one row per dimension."""
    return _vectors(set_, n, 64)


def get_scramble_constants32(n):
    """``n`` uint32 scramble constants (for the scrambled Sobol32 generator)."""
    from ..._bindings import curand

    n = _count(n)
    return _copy(curand.curandGetScrambleConstants32(), "uint32", n)


def get_scramble_constants64(n):
    """``n`` uint64 scramble constants (for the scrambled Sobol64 generator)."""
    from ..._bindings import curand

    n = _count(n)
    return _copy(curand.curandGetScrambleConstants64(), "uint64", n)
