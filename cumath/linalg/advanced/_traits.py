"""Pure plan arithmetic of the cuBLASLt matmul: shapes (numpy.matmul's, from ``linalg/_shapes.py``), layouts ->
cuBLASLt orders, transposes and leading dimensions, the formulations that give the result in a chosen layout, and
the table of supported dtype combinations. No GPU, no NumPy arrays: tested on any machine.

Conventions: a logical matrix ``X`` (rows x cols) is described by its element strides ``(rs, cs)`` (row stride,
column stride) and a batch stride. cuBLASLt computes ``D = op(A) @ op(B)`` on column-major (or ORDER_ROW)
matrices; a row-major ``X`` is the column-major ``X^T`` read with ``op = T``.

Two formulations give the result in either layout without copies:
- ``N`` (direct): cuBLASLt's D is the result, column-major (``ld = M``).
- ``T`` (transposed): cuBLASLt computes ``D^T = B^T @ A^T``; its column-major ``D^T`` is the row-major result.
  Operands swap slots; BGRADA and BGRADB swap; a bias (indexed by the rows of D) cannot be expressed, so
  bias and bias-gradient epilogs use
- ``R``: the direct formulation with every matrix in cuBLASLt's ORDER_ROW layout (when the library has kernels),
  ``Q``: the same with A and B column-major and only C and D in ORDER_ROW. (cuBLASLt 13.1 on an H200 has no
  kernels for either with a bias epilog: the result is then column-major, formulation ``N``.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import UnsupportedDtypeError
from .._shapes import matmul_shapes
from ._options import MatmulComputeType as CT

__all__ = ["Matrix", "Geometry", "Slot", "Formulation", "matmul_geometry", "formulations", "dtype_plan",
           "DtypePlan", "SUPPORTED_DTYPES", "aux_layout", "orientation_of"]

OP_N, OP_T, OP_C = 0, 1, 2
ORDER_COL, ORDER_ROW = 0, 1
NARROW = ("float8_e4m3fn", "float8_e5m2")


# ------------------------------------------------------------------------------------------- geometry

@dataclass(frozen=True)
class Matrix:
    """A logical matrix operand: ``rows x cols`` with element strides ``rs``/``cs`` and ``batch_stride``
    (0 when one matrix serves the whole batch). ``copy``: the batch cannot be described with one stride (or
    the matrix with a unit stride): it is copied to a dense array of the full batch first."""

    rows: int
    cols: int
    rs: int
    cs: int
    batch_stride: int
    copy: bool = False


@dataclass(frozen=True)
class Geometry:
    """Shapes of ``a @ b (+ c)`` with numpy.matmul semantics."""

    m: int
    n: int
    k: int
    batch_shape: tuple
    result_shape: tuple
    a: Matrix
    b: Matrix
    c: Matrix | None
    c_copy: bool  # c is broadcast (or not addressable in place): it is copied into the result first
    a_vec: bool = False  # a was 1-D (promoted to 1 x K)
    b_vec: bool = False  # b was 1-D (promoted to K x 1)

    @property
    def batch(self) -> int:
        return math.prod(self.batch_shape)


def _batch_stride(shape, strides, batch_shape):
    """One stride for the operand's batch dimensions (broadcast against ``batch_shape``), or None."""
    nb = len(batch_shape)
    shape = (1,) * (nb - len(shape)) + tuple(shape)
    strides = (0,) * (nb - len(strides)) + tuple(strides)
    real = [(n, s) for n, s, full in zip(shape, strides, batch_shape) if full != 1]
    if not real:
        return 0
    if all(n == 1 for n, _ in real):  # broadcast over every batch dimension
        return 0
    if any(n == 1 for n, _ in real):  # broadcast over some dimensions only
        return None
    stride = real[-1][1]
    expected = stride * real[-1][0]
    for n, s in reversed(real[:-1]):
        if s != expected:
            return None
        expected *= n
    return stride if stride > 0 else None


def _unit_stride(r, c, rs, cs) -> bool:
    """Whether cuBLASLt can address the matrix: unit stride along one dimension, positive ld along the other."""
    return _col_ld(r, c, rs, cs) is not None or _col_ld(c, r, cs, rs) is not None


def _col_ld(r, c, rs, cs):
    """Leading dimension of an ``r x c`` matrix stored column-major with these strides, or None."""
    if r > 1 and rs != 1:
        return None
    if c <= 1:
        return max(r, 1)
    if cs < max(r, 1):
        return None
    return cs


def _operand(shape, strides, rows, cols, batch_shape) -> Matrix:
    rs, cs = strides[-2], strides[-1]
    bstride = _batch_stride(shape[:-2], strides[:-2], batch_shape)
    copy = bstride is None or not _unit_stride(rows, cols, rs, cs)
    if copy:  # dense row-major copy of the whole (broadcast) batch
        rs, cs, bstride = cols, 1, rows * cols
    return Matrix(rows, cols, rs, cs, bstride, copy)


def matmul_geometry(a_shape, a_strides, b_shape, b_strides, c_shape=None, c_strides=None, inplace=False):
    """Shapes, promotion and batching of ``a @ b (+ c)`` (numpy.matmul semantics, from ``linalg/_shapes.py``;
    ``c`` broadcasts to the result, e.g. ``(M, 1)`` across the columns) and the operands' matrices as cuBLASLt
    reads them. Raises ValueError naming the mismatching dimensions."""
    shapes = matmul_shapes(a_shape, b_shape)  # c is checked below, against the layouts cuBLASLt can read
    m, n, k, batch_shape, result = shapes.m, shapes.n, shapes.k, shapes.batch_shape, shapes.result_shape
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    a_vec, b_vec = shapes.a_vec, shapes.b_vec
    if a_vec:  # (K,) -> (1, K)
        a_shape, a_strides = (1,) + a_shape, (a_shape[0] * a_strides[0] or 1,) + tuple(a_strides)
    if b_vec:  # (K,) -> (K, 1)
        b_shape, b_strides = b_shape + (1,), tuple(b_strides) + (b_shape[0] * b_strides[0] or 1,)
    if 0 in (m, n, k):
        raise ValueError(f"empty matrices are not supported: M={m}, N={n}, K={k}")
    if 0 in batch_shape:
        raise ValueError(f"empty batches are not supported: batch shape {list(batch_shape)}")
    a = _operand(a_shape, a_strides, m, k, batch_shape)
    b = _operand(b_shape, b_strides, k, n, batch_shape)
    c, c_copy = None, False
    if c_shape is not None:
        c, c_copy = _c_operand(tuple(c_shape), tuple(c_strides), result, batch_shape, m, n, a_vec, b_vec)
        if inplace and c_copy:
            raise ValueError(
                f"inplace=True writes the result into c, so c must have the result's shape {list(result)} and a "
                f"layout with a unit stride; got c of shape {list(c_shape)} and strides {list(c_strides)}")
    elif inplace:
        raise ValueError("inplace=True writes the result into c: pass c")
    return Geometry(m, n, k, batch_shape, result, a, b, c, c_copy, a_vec, b_vec)


def _promoted_c(c_shape, c_strides, result, a_vec, b_vec):
    """A c given in the promoted 2-D form of a 1-D operand's product ((1, N) for a of shape (K,), (M, 1) for b of
    shape (K,), (1, 1) for both; batch dimensions in front allowed) as the result's form."""
    c_shape, c_strides = tuple(c_shape), tuple(c_strides)
    if len(c_shape) != len(result) + a_vec + b_vec or not (a_vec or b_vec):
        return c_shape, c_strides
    tail = 2
    if len(c_shape) < tail or (b_vec and c_shape[-1] != 1) or (a_vec and c_shape[-2] != 1):
        return c_shape, c_strides
    keep = [i for i in range(len(c_shape)) if not ((b_vec and i == len(c_shape) - 1) or
                                                   (a_vec and i == len(c_shape) - 2))]
    return tuple(c_shape[i] for i in keep), tuple(c_strides[i] for i in keep)


def _c_operand(c_shape, c_strides, result, batch_shape, m, n, a_vec, b_vec):
    c_shape, c_strides = _promoted_c(c_shape, c_strides, result, a_vec, b_vec)
    if len(c_shape) > len(result) or any(
            cd != rd and cd != 1 for cd, rd in zip(reversed(c_shape), reversed(result))):
        raise ValueError(
            f"c of shape {list(c_shape)} does not broadcast to the result's shape {list(result)} "
            f"(c may be (M, N), or (M, 1) to be added to every column, with optional batch dimensions; for a 1-D "
            f"a or b also the promoted 2-D form, (1, N) or (M, 1))")
    # back to the matrix view (batch..., M, N), inserting the promoted dimensions
    full = (1,) * (len(result) - len(c_shape)) + c_shape
    fstr = (0,) * (len(result) - len(c_strides)) + c_strides
    if b_vec:
        full, fstr = full + (1,), fstr + (0,)
    nb = len(batch_shape)
    if a_vec:
        full, fstr = full[:nb] + (1,) + full[nb:], fstr[:nb] + (0,) + fstr[nb:]
    rows, cols = full[-2:]
    rs, cs = fstr[-2:]
    if rows == 1 and m > 1 or cols == 1 and n > 1:
        rs, cs = (rs if rows == m else 0), (cs if cols == n else 0)
        return Matrix(m, n, rs, cs, 0, True), True
    bstride = _batch_stride(full[:-2], fstr[:-2], batch_shape)
    batch_broadcast = bstride == 0 and math.prod(batch_shape) > 1
    if bstride is None or batch_broadcast or not _unit_stride(m, n, rs, cs):
        return Matrix(m, n, rs, cs, 0 if bstride is None else bstride, True), True
    return Matrix(m, n, rs, cs, bstride), False


# --------------------------------------------------------------------------------------- formulations

@dataclass(frozen=True)
class Slot:
    """One cuBLASLt matrix layout: stored ``rows x cols`` in ``order`` with ``ld``, read through ``op``."""

    rows: int
    cols: int
    ld: int
    order: int
    op: int
    batch_stride: int


@dataclass(frozen=True)
class Formulation:
    """How cuBLASLt computes the product: the layouts of its A, B, C and D, and the result's strides.

    ``kind``: 'N' (direct, column-major result), 'T' (D^T = B^T A^T: row-major result), 'R' or 'Q' (direct with
    an ORDER_ROW result). ``d_order``: 'row' or 'col' (of each result matrix); ``d_strides``: the result's element
    strides (numpy.matmul shape); ``d_perm``: its axes from outermost to innermost; ``lt_m``/``lt_n``: the
    shape of cuBLASLt's D; ``c_in_d``: c is copied into the result, which cuBLASLt then updates in place.
    """

    kind: str
    a: Slot
    b: Slot
    c: Slot
    d: Slot
    lt_m: int
    lt_n: int
    d_order: str
    d_strides: tuple
    d_perm: tuple
    c_in_d: bool

    @property
    def transposed(self) -> bool:
        return self.kind == "T"

    def signature(self) -> tuple:
        """What the kernel choice depends on (for autotuning keys)."""
        return (self.kind, self.a, self.b, self.c, self.d)


def _slot_of(r, c, rs, cs, bstride, order, want_t=False):
    """The slot of logical matrix ``r x c`` read as op(X) in ``order``: op N if stored in that order, else op T
    on the transposed storage. ``want_t`` prefers op T where both work (vectors). None when impossible."""
    if order == ORDER_COL:
        direct, trans = _col_ld(r, c, rs, cs), _col_ld(c, r, cs, rs)
    else:
        direct, trans = _col_ld(c, r, cs, rs), _col_ld(r, c, rs, cs)
    if direct is not None and not (want_t and trans is not None):
        return Slot(r, c, direct, order, OP_N, bstride)
    if trans is not None:
        return Slot(c, r, trans, order, OP_T, bstride)
    return None


def _d_strides(geom: Geometry, order: str):
    """Element strides and memory perm (axes outermost first) of a dense result in ``order`` (batch outermost),
    in numpy.matmul's shape, and (rs, cs) of each result matrix."""
    m, n = geom.m, geom.n
    rs, cs = (n, 1) if order == "row" else (1, m)
    nb = len(geom.batch_shape)
    strides, step = [], m * n
    for size in reversed(geom.batch_shape):
        strides.append(step)
        step *= size
    strides.reverse()
    ntail = len(geom.result_shape) - nb
    if ntail == 2:
        return tuple(strides) + (rs, cs), tuple(range(nb)) + ((nb, nb + 1) if order == "row" else (nb + 1, nb)), rs, cs
    return tuple(strides) + (1,) * ntail, tuple(range(nb + ntail)), rs, cs


def formulations(geom: Geometry, *, target: str, epilog_rows_bound: bool = False, row_order_epilog: bool = True,
                 aux_kind: str | None = None, conj=(False, False), narrow_tn: bool = False, inplace: bool = False,
                 epilog_cols_bound: bool = False):
    """Candidate formulations, best first: the result in ``target`` order ('row' or 'col') first.

    ``epilog_rows_bound``: a bias or bias gradient indexed by the result's rows (no 'T').
    ``row_order_epilog``: whether 'R'/'Q' may carry this epilog (they are tried for rows-bound epilogs only). ``aux_kind``: 'N' or 'T' when an auxiliary input
    fixes the formulation. ``conj``: conjugate a / b (needs op T on them: op C). ``narrow_tn``: FP8 on SM 9.x
    needs cuBLASLt's A transposed and B not. ``inplace``: the result is c (same layout). ``epilog_cols_bound``:
    a bias indexed by the result's columns (only 'T', where they are the rows of cuBLASLt's D).
    """
    kinds = ["T", "R", "Q", "N"] if target == "row" else ["N", "T", "R", "Q"]
    if aux_kind is not None:
        kinds = [aux_kind]
    if epilog_cols_bound:
        kinds, epilog_rows_bound = [k for k in kinds if k == "T"], False
    out = []
    for kind in kinds:
        if kind == "T" and epilog_rows_bound:
            continue
        if kind in ("R", "Q") and (not epilog_rows_bound or not row_order_epilog or aux_kind is not None):
            continue
        f = _formulation(geom, kind, conj, narrow_tn, inplace)
        if f is not None:
            out.append(f)
    return out


def _formulation(geom: Geometry, kind: str, conj, narrow_tn, inplace):
    a, b, c = geom.a, geom.b, geom.c
    conj_a, conj_b = conj
    if kind == "T":
        # cuBLASLt's A is b^T (N x K), its B is a^T (K x M)
        sa = _slot_of(geom.n, geom.k, b.cs, b.rs, b.batch_stride, ORDER_COL, want_t=conj_b or narrow_tn)
        sb = _slot_of(geom.k, geom.m, a.cs, a.rs, a.batch_stride, ORDER_COL, want_t=conj_a and not narrow_tn)
        conj_sa, conj_sb = conj_b, conj_a
        order, d_order, lt_m, lt_n = ORDER_COL, "row", geom.n, geom.m
    else:  # 'N', 'R' (A, B, C, D in ORDER_ROW) or 'Q' (A and B column-major, C and D in ORDER_ROW)
        order = ORDER_ROW if kind == "R" else ORDER_COL
        sa = _slot_of(geom.m, geom.k, a.rs, a.cs, a.batch_stride, order, want_t=conj_a or narrow_tn)
        sb = _slot_of(geom.k, geom.n, b.rs, b.cs, b.batch_stride, order, want_t=conj_b and not narrow_tn)
        conj_sa, conj_sb = conj_a, conj_b
        d_order, lt_m, lt_n = ("col" if kind == "N" else "row"), geom.m, geom.n
    if sa is None or sb is None:
        return None
    if narrow_tn and (sa.op != OP_T or sb.op != OP_N):
        return None
    if conj_sa:
        if sa.op != OP_T:
            return None
        sa = Slot(sa.rows, sa.cols, sa.ld, sa.order, OP_C, sa.batch_stride)
    if conj_sb:
        if sb.op != OP_T:
            return None
        sb = Slot(sb.rows, sb.cols, sb.ld, sb.order, OP_C, sb.batch_stride)
    d_strides, d_perm, drs, dcs = _d_strides(geom, d_order)
    dstride = geom.m * geom.n
    c_in_d = c is not None and geom.c_copy
    if c is not None and not geom.c_copy:
        cs_ = _result_slot(kind, geom, c.rs, c.cs, c.batch_stride)
        if cs_ is None:  # c's layout does not fit this formulation: copy it into the result
            if inplace:
                return None
            c_in_d = True
    if inplace:
        # the result is c itself: its strides, its batch stride
        ds = _result_slot(kind, geom, c.rs, c.cs, c.batch_stride)
        d_strides = _c_result_strides(geom, c)
        d_perm = None
        cs_ = ds
    else:
        ds = _result_slot(kind, geom, drs, dcs, dstride)
        if c is None or c_in_d:
            cs_ = ds
    return Formulation(kind, sa, sb, cs_, ds, lt_m, lt_n, d_order, d_strides, d_perm, c_in_d)


def _result_slot(kind, geom, rs, cs, bstride):
    """The slot of an (M x N) result-shaped matrix (c or d) in this formulation (op N only), or None."""
    if kind == "T":
        ld = _col_ld(geom.n, geom.m, cs, rs)
        return None if ld is None else Slot(geom.n, geom.m, ld, ORDER_COL, OP_N, bstride)
    if kind in ("R", "Q"):
        ld = _col_ld(geom.n, geom.m, cs, rs)
        return None if ld is None else Slot(geom.m, geom.n, ld, ORDER_ROW, OP_N, bstride)
    ld = _col_ld(geom.m, geom.n, rs, cs)
    return None if ld is None else Slot(geom.m, geom.n, ld, ORDER_COL, OP_N, bstride)


def _c_result_strides(geom, c):
    nb = len(geom.batch_shape)
    strides, step = [], c.batch_stride
    for size in reversed(geom.batch_shape):
        strides.append(step)
        step *= size
    strides.reverse()
    ntail = len(geom.result_shape) - nb
    tail = [c.rs, c.cs] if ntail == 2 else ([c.cs] if geom.a_vec else [c.rs]) if ntail == 1 else []
    return tuple(strides + tail)


def target_order(geom: Geometry, a_strides, c_strides=None) -> str:
    """The result's layout: that of c when c is read in place, else that of a (row-major when a is ambiguous)."""
    if geom.c is not None and not geom.c_copy:
        x = geom.c
        rows, cols = geom.m, geom.n
    else:
        x = geom.a
        rows, cols = geom.m, geom.k
    if x.copy:
        return "row"
    if rows > 1 and cols > 1:
        return "row" if x.cs == 1 else "col"
    if x is geom.a and geom.k > 1 and geom.m == 1:  # a row vector: follow b
        b = geom.b
        if geom.n > 1 and b.rs == 1 and b.cs != 1:
            return "col"
    return "row"


# ---------------------------------------------------------------------------------------------- aux

def aux_layout(kind: str, geom: Geometry, which: str, dtype: str):
    """Shape, strides (elements of ``dtype``), cuBLASLt ld and batch stride of an epilog's auxiliary matrix.

    ReLU: a bit-mask (uint8 bytes) over cuBLASLt's D, ``ld`` in bits rounded up to 128; GELU: the epilog's input,
    of the result dtype, ``ld`` rounded up to 8. The array shows cuBLASLt's padding: formulation 'N' gives
    ``(*batch, ld_bytes_or_ld, N)`` column-major matrices, 'T' gives ``(*batch, M, ld)`` row-major ones.
    """
    lt_m, lt_n = (geom.n, geom.m) if kind == "T" else (geom.m, geom.n)
    if which == "relu":
        ld = -(-lt_m // 128) * 128  # bits
        per_col = ld // 8
    else:
        ld = -(-lt_m // 8) * 8
        per_col = ld
    matrix = per_col * lt_n
    bstrides, step = [], matrix
    for size in reversed(geom.batch_shape):
        bstrides.append(step)
        step *= size
    bstrides.reverse()
    if kind == "T":
        shape = geom.batch_shape + (geom.m, per_col)
        strides = tuple(bstrides) + (per_col, 1)
    else:
        shape = geom.batch_shape + (per_col, geom.n)
        strides = tuple(bstrides) + (1, per_col)
    return shape, strides, ld, ld * lt_n


def orientation_of(shape, strides, geom: Geometry, which: str, dtype: str) -> str | None:
    """'N' or 'T': the formulation whose auxiliary layout an aux input has; None when it fits neither."""
    for kind in ("N", "T"):
        s, st, _, _ = aux_layout(kind, geom, which, dtype)
        if tuple(shape) == s and all(x == y for x, y, n in zip(strides, st, s) if n > 1):
            return kind
    return None


# ---------------------------------------------------------------------------------------------- dtypes

@dataclass(frozen=True)
class DtypePlan:
    """The types of one product: of A, B, C, D, the compute type and the scale type (dtype names)."""

    a: str
    b: str
    c: str
    d: str
    compute: int
    scale: str
    narrow: bool


_F32_FAST = (CT.COMPUTE_32F, CT.COMPUTE_32F_PEDANTIC, CT.COMPUTE_32F_FAST_16F, CT.COMPUTE_32F_FAST_16BF,
             CT.COMPUTE_32F_FAST_TF32, CT.COMPUTE_32F_EMULATED_16BFX9)
# (a/b dtype) -> (allowed c/d dtypes, allowed compute types, the default compute type)
SUPPORTED_DTYPES = {
    "float16": (("float16", "float32"), (CT.COMPUTE_32F, CT.COMPUTE_32F_PEDANTIC, CT.COMPUTE_16F,
                                         CT.COMPUTE_16F_PEDANTIC), CT.COMPUTE_32F),
    "bfloat16": (("bfloat16", "float32"), (CT.COMPUTE_32F, CT.COMPUTE_32F_PEDANTIC), CT.COMPUTE_32F),
    "float32": (("float32",), _F32_FAST, CT.COMPUTE_32F),
    "float64": (("float64",), (CT.COMPUTE_64F, CT.COMPUTE_64F_PEDANTIC, CT.COMPUTE_64F_EMULATED_FIXEDPOINT),
                CT.COMPUTE_64F),
    "complex64": (("complex64",), _F32_FAST[:5], CT.COMPUTE_32F),
    "complex128": (("complex128",), (CT.COMPUTE_64F, CT.COMPUTE_64F_PEDANTIC), CT.COMPUTE_64F),
}
# FP8 (SM 8.9+): a x b in {e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3}; (c dtype, d dtype) pairs
NARROW_CD = {
    ("bfloat16", "bfloat16"), ("bfloat16", "float8_e4m3fn"), ("float16", "float8_e4m3fn"),
    ("float16", "float16"), ("float32", "float32"),
}
NARROW_CD_MIXED = NARROW_CD | {("bfloat16", "float8_e5m2"), ("float16", "float8_e5m2")}


def _scale_of(compute, dtype):
    if compute in (CT.COMPUTE_16F, CT.COMPUTE_16F_PEDANTIC):
        return "float16"
    if compute in (CT.COMPUTE_64F, CT.COMPUTE_64F_PEDANTIC, CT.COMPUTE_64F_EMULATED_FIXEDPOINT):
        return "complex128" if dtype.startswith("complex") else "float64"
    return "complex64" if dtype.startswith("complex") else "float32"


def _supported_list() -> str:
    rows = [f"{ab} x {ab} -> {'/'.join(cd)}" for ab, (cd, _, _) in SUPPORTED_DTYPES.items()]
    rows.append("float8_e4m3fn/float8_e5m2 (not both e5m2) -> c/d (bfloat16, bfloat16|float8), "
                "(float16, float16|float8), (float32, float32)")
    return "; ".join(rows)


def dtype_plan(a: str, b: str, c: str | None, *, result_type=None, compute_type=None, scale_type=None) -> DtypePlan:
    """Check the dtype combination and fill in the defaults; TypeError/ValueError lists what is supported."""
    narrow = a in NARROW or b in NARROW
    if narrow:
        if a not in NARROW or b not in NARROW:
            raise TypeError(f"a is {a} and b is {b}: FP8 products need both operands in FP8 "
                            f"(float8_e4m3fn or float8_e5m2); supported: {_supported_list()}")
        if a == b == "float8_e5m2":
            raise TypeError(f"cuBLASLt has no float8_e5m2 x float8_e5m2 product; make a or b float8_e4m3fn. "
                            f"Supported: {_supported_list()}")
        if c is None:
            d = result_type or a
            c = {"float8_e4m3fn": "bfloat16", "float8_e5m2": "bfloat16"}.get(d, d)
        else:
            d = result_type or c
        table = NARROW_CD if a == b else NARROW_CD_MIXED
        if (c, d) not in table:
            raise TypeError(f"FP8 product {a} x {b} with c {c} and result {d} is not supported; the (c, result) "
                            f"pairs are {sorted(table)}")
        compute = CT(compute_type) if compute_type is not None else CT.COMPUTE_32F
        if compute != CT.COMPUTE_32F:
            raise ValueError(f"FP8 products compute in COMPUTE_32F, not {compute.name}")
        scale = "float32"
    else:
        if a != b:
            raise UnsupportedDtypeError(f"a is {a} and b is {b}: the operands must have one dtype; supported: "
                            f"{_supported_list()}")
        entry = SUPPORTED_DTYPES.get(a)
        if entry is None:
            raise UnsupportedDtypeError(f"dtype {a} is not supported by cuBLASLt matmul; supported: {_supported_list()}")
        cds, computes, default = entry
        d = result_type or c or a
        if c is not None and c != d:
            raise UnsupportedDtypeError(f"c is {c} but the result would be {d}: c and the result must have one dtype")
        if d not in cds:
            what = "c" if c is not None else "result_type"
            raise TypeError(f"{what} {d} with {a} operands is not supported; {a} x {a} gives {' or '.join(cds)}")
        if result_type is not None and result_type != a and c is None and a not in ("float16", "bfloat16"):
            raise UnsupportedDtypeError(f"result_type {result_type} differs from the operands' {a}; only narrow-precision "
                            f"products choose their result type")
        c = d
        compute = CT(compute_type) if compute_type is not None else default
        if compute not in computes:
            raise ValueError(f"compute_type {compute.name} is not supported for {a} operands; the allowed values "
                             f"are {[x.name for x in computes]}")
        scale = _scale_of(compute, a)
    if scale_type is not None and scale_type != scale:
        raise ValueError(f"scale_type {scale_type} does not match compute type {CT(compute).name} with {a} "
                         f"operands; it must be {scale}")
    return DtypePlan(a, b, c, d, int(compute), scale, narrow)
