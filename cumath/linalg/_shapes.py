"""The shapes of numpy.matmul, shared by every matmul of cumath (the generic one and cuBLASLt's).

``a @ b (+ c)``: a 1-D ``a`` of shape (K,) is the 1 x K matrix, a 1-D ``b`` the K x 1 one, and the unit axis
they gain is dropped from the result; the axes before the last two are batch axes, broadcast between a and b
as NumPy broadcasts; ``c`` broadcasts to the result (for example (M, 1) is added to every column), and batch
dimensions of ``c`` that a and b lack are batch dimensions of the result (a and b broadcast over them). An operand
may also stand for a diagonal matrix given as the vector of its diagonal (the generic matmul's diagonal
qualifier): its last axis is then both the rows and the columns.

Pure functions of shapes (and strides), returning small frozen dataclasses; ValueErrors name the operands and
dimensions that do not fit. No arrays, no library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MatmulShapes", "matmul_shapes", "broadcast_batch", "format_shape"]


def format_shape(shape) -> str:
    """A shape as NumPy prints it: ``(3,)``, ``(2, 3)``, ``()``."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_batch(x, y, xname: str = "a", yname: str = "b") -> tuple:
    """NumPy broadcasting of two batch shapes (a size-0 dimension broadcasts with 1 to 0). The ValueError
    names the first batch dimension (counted after padding the shorter shape on the left) that differs."""
    n = max(len(x), len(y))
    x = (1,) * (n - len(x)) + tuple(x)
    y = (1,) * (n - len(y)) + tuple(y)
    out = []
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q and p != 1 and q != 1:
            raise ValueError(f"the batch dimensions of {xname} {format_shape(x)} and {yname} {format_shape(y)} do "
                             f"not broadcast at batch axis {i} ({p} vs {q}): batch dimension {i} is {p} in {xname} "
                             f"and {q} in {yname}; each must be equal or 1")
        out.append(q if p == 1 else p)
    return tuple(out)


@dataclass(frozen=True)
class MatmulShapes:
    """The shapes of ``a @ b (+ c)``: the matrices are M x K and K x N, the result ``result_shape`` (batch axes,
    then M and N unless a or b was 1-D). ``a_vec``/``b_vec``: the operand was 1-D and promoted; ``a_diagonal``/
    ``b_diagonal``: the operand is the vector of a diagonal matrix's diagonal."""

    m: int
    n: int
    k: int
    batch_shape: tuple
    result_shape: tuple
    a_shape: tuple
    b_shape: tuple
    c_shape: tuple | None
    a_vec: bool = False
    b_vec: bool = False
    a_diagonal: bool = False
    b_diagonal: bool = False

    @property
    def batch(self) -> int:
        """The number of products (the batch dimensions' product)."""
        return math.prod(self.batch_shape)

    @property
    def matrix_shape(self) -> tuple:
        """The result as a batch of M x N matrices (the promoted unit axes kept)."""
        return self.batch_shape + (self.m, self.n)

    def matrix_strides(self, which: str, strides) -> tuple:
        """The element strides of operand ``which`` ('a', 'b', 'c', or 'd': the result) over the full batch of
        its matrices, ``batch_shape + (rows, cols)`` with (M, K), (K, N) or (M, N) matrices, as NumPy's
        ``broadcast_to`` would give them: 0 on the promoted unit axes, on the axes the operand is broadcast
        along, and on its batch axes of size 1; its own strides elsewhere. ``strides`` are over the operand's
        own axes. A diagonal operand reads as one row (its diagonal) broadcast over the rows."""
        shape = {"a": self.a_shape, "b": self.b_shape, "c": self.c_shape, "d": self.result_shape}[which]
        rows, cols = {"a": (self.m, self.k), "b": (self.k, self.n)}.get(which, (self.m, self.n))
        shape, strides = tuple(shape), tuple(strides)
        nb = len(self.batch_shape)
        if (which == "a" and self.a_diagonal) or (which == "b" and self.b_diagonal):
            shape, strides = shape[:-1] + (1, shape[-1]), strides[:-1] + (0, strides[-1])
        elif which == "a" and self.a_vec:
            shape, strides = (1,) + shape, (0,) + strides
        elif which == "b" and self.b_vec:
            shape, strides = shape + (1,), strides + (0,)
        elif which in ("c", "d"):
            pad = len(self.result_shape) - len(shape)
            shape, strides = (1,) * pad + shape, (0,) * pad + strides
            if self.b_vec:
                shape, strides = shape + (1,), strides + (0,)
            if self.a_vec:
                shape, strides = shape[:nb] + (1,) + shape[nb:], strides[:nb] + (0,) + strides[nb:]
        full = self.batch_shape + (rows, cols)
        pad = len(full) - len(shape)
        shape, strides = (1,) * pad + shape, (0,) * pad + strides
        return tuple(0 if own == 1 and (i < nb or size != 1) else s
                     for i, (own, size, s) in enumerate(zip(shape, full, strides)))


def _matrix(shape, name: str, vec: bool, diagonal: bool, left: bool):
    """(rows, cols, batch) of operand ``name`` (a: left, b: right)."""
    if diagonal:
        return shape[-1], shape[-1], shape[:-1]
    if vec:
        return (1, shape[0], ()) if left else (shape[0], 1, ())
    return shape[-2], shape[-1], shape[:-2]


def _describe(name: str, shape, rows: int, cols: int, vec: bool, diagonal: bool) -> tuple:
    """How an operand is named in the contracted-dimension message: (subject, its matrix in words)."""
    if diagonal:
        return f"the diagonal of {name} has", f"{name} is the diagonal of a {rows} x {cols} matrix (shape " \
                                              f"{format_shape(shape)})"
    promoted = ", promoted from 1-D" if vec else ""
    return (f"{name} (1-D) has" if vec else f"{name} has",
            f"{name} is {rows} x {cols} (shape {format_shape(shape)}{promoted})")


def matmul_shapes(a_shape, b_shape, c_shape=None, *, inplace: bool = False,
                  diagonal: tuple = (False, False)) -> MatmulShapes:
    """The shapes of ``a @ b (+ c)`` with numpy.matmul semantics (see the module's docstring).

    ``inplace``: the result is written into ``c``, which must then be given with the result's shape.
    ``diagonal``: (a, b) flags, True where the operand is the vector of a diagonal matrix's diagonal.
    Raises ValueError for a scalar operand, contracted dimensions that differ, batch dimensions that do not
    broadcast, or a ``c`` that does not broadcast to the result (or lacks its shape, in place).
    """
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    for name, shape in (("a", a_shape), ("b", b_shape)):
        if len(shape) == 0:
            raise ValueError(f"{name} is a scalar (shape ()); matmul needs at least one dimension in a and b")
    a_diag, b_diag = bool(diagonal[0]), bool(diagonal[1])
    a_vec, b_vec = len(a_shape) == 1 and not a_diag, len(b_shape) == 1 and not b_diag
    m, k, a_batch = _matrix(a_shape, "a", a_vec, a_diag, True)
    kb, n, b_batch = _matrix(b_shape, "b", b_vec, b_diag, False)
    if k != kb:
        who_a, what_a = _describe("a", a_shape, m, k, a_vec, a_diag)
        who_b, what_b = _describe("b", b_shape, kb, n, b_vec, b_diag)
        raise ValueError(f"the matrices cannot be multiplied: {who_a} K={k} columns but {who_b} K={kb} rows "
                         f"({what_a} and {what_b}); the number of columns of a (K={k}) must equal the number of "
                         f"rows of b (K={kb})")
    batch = broadcast_batch(a_batch, b_batch, "a", "b")
    result = batch + (() if a_vec else (m,)) + (() if b_vec else (n,))
    if c_shape is not None:
        c_shape = tuple(c_shape)
        tail = len(result) - len(batch)
        if len(c_shape) > len(result):  # batch dimensions of c alone: a and b broadcast over them (nvmath-python)
            try:
                wider = broadcast_batch(batch, c_shape[:len(c_shape) - tail], "a @ b", "c")
            except ValueError:
                wider = None  # reported below, as a c that does not broadcast to the result
            # only new leading dimensions: the result's own batch dimensions stay (as a c of the result's rank
            # cannot widen them either)
            if wider is not None and wider[len(wider) - len(batch):] == batch:
                batch, result = wider, wider + result[len(result) - tail:]
        if inplace and c_shape != result:
            raise ValueError(f"inplace=True writes the result into c, so c must have the result's shape "
                             f"{format_shape(result)}; c has shape {format_shape(c_shape)}")
        if len(c_shape) > len(result) or any(p != 1 and p != q for p, q in zip(reversed(c_shape), reversed(result))):
            raise ValueError(f"c of shape {format_shape(c_shape)} does not broadcast to the result's shape "
                             f"{format_shape(result)} (a: {format_shape(a_shape)}, b: {format_shape(b_shape)}); c "
                             f"may be (M, N), or (M, 1) to be added to every column, with optional batch "
                             f"dimensions")
    elif inplace:
        raise ValueError("inplace=True writes the result into c: pass c")
    return MatmulShapes(m, n, k, batch, result, a_shape, b_shape, c_shape, a_vec, b_vec, a_diag, b_diag)
