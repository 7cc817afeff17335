"""The matrix qualifiers of the sparse matmul: transpose and conjugate flags per operand."""

from __future__ import annotations

import numpy as np

__all__ = ["matmul_matrix_qualifiers_dtype", "check_qualifiers"]

#: NumPy dtype of the qualifiers (nvmath-python's ``nvmath.sparse.matmul_matrix_qualifiers_dtype``)
matmul_matrix_qualifiers_dtype = np.dtype([("is_transpose", "<i4"), ("is_conjugate", "<i4")])


def check_qualifiers(qualifiers, has_c: bool) -> tuple:
    """((transpose_a, conjugate_a), (transpose_b, conjugate_b)) from an array of the qualifiers dtype with an
    entry per operand (a, b and, when given, c: c accepts no qualifier)."""
    if qualifiers is None:
        return (False, False), (False, False)
    q = np.asarray(qualifiers)
    if q.dtype != matmul_matrix_qualifiers_dtype:
        raise TypeError(f"qualifiers must be a NumPy array of dtype cumath.sparse.matmul_matrix_qualifiers_dtype "
                        f"({matmul_matrix_qualifiers_dtype}); got dtype {q.dtype}")
    if q.ndim != 1 or q.shape[0] not in (2, 3):
        raise ValueError(f"qualifiers must have one entry per operand (a, b[, c]); got shape {q.shape}")
    if q.shape[0] == 3 and (q[2]["is_transpose"] or q[2]["is_conjugate"]):
        raise ValueError("c cannot be transposed or conjugated; give it in the layout of the result")
    return tuple((bool(q[i]["is_transpose"]), bool(q[i]["is_conjugate"])) for i in range(2))
