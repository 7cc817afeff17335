"""Pure plan arithmetic of the sparse matmul: shapes, batches and the per-batch problems (no pointers)."""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Geometry", "geometry"]

_DTYPES = ("float16", "float32", "float64", "complex64", "complex128")


@dataclasses.dataclass(frozen=True)
class Geometry:
    """The product ``op(a) @ op(b)``: ``m x k`` times ``k x n`` (``n`` is None for a vector ``b``), the batch
    shape of the result, the batch index of ``a`` and ``b`` of each result batch, and the result's shape."""

    m: int
    k: int
    n: int | None
    batch_shape: tuple
    a_batches: tuple  # per result batch: the flat batch index of a
    b_batches: tuple
    result_shape: tuple
    dtype: str
    transpose_a: bool
    conjugate_a: bool
    transpose_b: bool
    conjugate_b: bool

    @property
    def count(self) -> int:
        return len(self.a_batches)


def _broadcast_index(shape: tuple, out: tuple) -> tuple:
    """For each flat index of ``out``, the flat index of the broadcast operand of batch shape ``shape``."""
    if not out:
        return (0,)
    full = (1,) * (len(out) - len(shape)) + tuple(shape)
    idx = np.arange(int(np.prod(shape, dtype=np.int64)) or 1).reshape(full or (1,))
    return tuple(int(i) for i in np.broadcast_to(idx, out).ravel())


def geometry(a_shape: tuple, b_shape: tuple, c_shape, dtypes: tuple, quals: tuple) -> Geometry:
    """Check the operands of ``alpha op(a) @ op(b) + beta c`` and describe the product (ValueError/TypeError
    naming what is wrong and what to do)."""
    (ta, ca), (tb, cb) = quals
    dt = dtypes[0]
    for name, d in zip("abc", dtypes):
        if d is not None and d != dt:
            raise TypeError(f"{name} has dtype {d} while a has {dt}; every operand must have the same dtype (convert "
                            f"{name} with .astype)")
    if dt not in _DTYPES:
        raise TypeError(f"dtype {dt} is not supported; use one of {', '.join(_DTYPES)}")
    if len(b_shape) == 0:
        raise ValueError("b must be a vector or a matrix (or a batch of matrices), not a scalar")
    m, k = a_shape[-2:]
    if ta:
        m, k = k, m
    vector = len(b_shape) == 1
    if vector:
        if tb:
            raise ValueError("a vector b cannot be transposed; drop b's is_transpose qualifier")
        kb, n, b_batch = b_shape[0], None, ()
    else:
        kb, n = b_shape[-2:]
        if tb:
            kb, n = n, kb
        b_batch = tuple(b_shape[:-2])
    if kb != k:
        raise ValueError(f"the inner dimensions do not match: op(a) is {m} x {k} and op(b) has {kb} rows; a has shape "
                         f"{tuple(a_shape)}, b has shape {tuple(b_shape)} (check the is_transpose qualifiers)")
    a_batch = tuple(a_shape[:-2])
    try:
        batch = tuple(np.broadcast_shapes(a_batch, b_batch))
    except ValueError:
        raise ValueError(f"the batch shapes of a {a_batch} and b {b_batch} do not broadcast") from None
    result = batch + ((m,) if vector else (m, n))
    if c_shape is not None and tuple(c_shape) != result:
        raise ValueError(f"c has shape {tuple(c_shape)}, but the result has shape {result}; c receives the result, "
                         f"so give it that shape")
    return Geometry(m, k, n, batch, _broadcast_index(a_batch, batch), _broadcast_index(b_batch, batch), result, dt,
                    ta, ca and dt.startswith("complex"), tb, cb and dt.startswith("complex"))
