"""Pure plan arithmetic of the generic matmul: shapes, batching, layouts and the BLAS calls that compute
D = alpha * op_a(a) @ op_b(b) + beta * c. No side effects, no library, no GPU.

Strides are in elements. BLAS (CPU CBLAS and cuBLAS alike) is driven in column-major terms: a row-major
matrix is the transpose of a column-major one with the same leading dimension, so a row-major result D is
computed as D^T = B^T A^T ("the transpose trick") and no operand is copied for being row-major.

The result of planning is a ``MatmulLayout``: what each operand needs before the engine reads it (nothing,
a dense copy, or a conjugated dense copy), how the result is allocated, and a list of ``Step``s, each a
backend-neutral routine name with arguments in which pointers are ``Ptr(name, offset)`` placeholders and
scalars are the names 'alpha', 'beta', 'one', 'zero'.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import NamedTuple

from ..._core.layout import dense_strides
from ...errors import UnsupportedDtypeError
from ..._core.overlap import self_overlapping
from .._shapes import MatmulShapes, format_shape, matmul_shapes

__all__ = ["SUPPORTED_DTYPES", "Geometry", "geometry", "Caps", "OperandPrep", "Ptr", "Step", "MatmulLayout",
           "plan_layout", "describe", "orient_perm"]

SUPPORTED_DTYPES = ("float32", "float64", "complex64", "complex128")
_KIND = {"ge": "gemm", "sy": "symm", "he": "hemm", "tr": "trmm", "dg": "dgmm"}
_FLIP = {"L": "U", "U": "L"}
_SIDE_FLIP = {"L": "R", "R": "L"}
_UPLO = {0: "L", 1: "U"}


@dataclass(frozen=True)
class Geometry:
    """What is computed, independent of memory layouts (the shapes are numpy.matmul's: ``shapes``)."""

    kind: str  # gemm, symm, hemm, trmm, dgmm
    dtype: str
    shapes: MatmulShapes
    structured: int | None  # 0 (a) or 1 (b): the operand with a non-general qualifier
    qualifiers: tuple  # three (abbreviation, conjugate, uplo, diag, incx)

    @property
    def M(self) -> int:
        """M: a's matrices are M x K, the result's M x N."""
        return self.shapes.m

    @property
    def N(self) -> int:
        """N: b's matrices are K x N, the result's M x N."""
        return self.shapes.n

    @property
    def K(self) -> int:
        """K: the contracted extent (columns of a, rows of b)."""
        return self.shapes.k

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The broadcast batch dimensions."""
        return self.shapes.batch_shape

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The result's shape (numpy.matmul's)."""
        return self.shapes.result_shape

    @property
    def a_shape(self) -> tuple[int, ...]:
        """a's shape as given."""
        return self.shapes.a_shape

    @property
    def b_shape(self) -> tuple[int, ...]:
        """b's shape as given."""
        return self.shapes.b_shape

    @property
    def c_shape(self) -> tuple[int, ...] | None:
        """c's shape as given (None without c)."""
        return self.shapes.c_shape

    @property
    def a_vec(self) -> bool:
        """a was 1-D and promoted to (1, K)."""
        return self.shapes.a_vec

    @property
    def b_vec(self) -> bool:
        """b was 1-D and promoted to (K, 1)."""
        return self.shapes.b_vec

    @property
    def is_complex(self) -> bool:
        return self.dtype.startswith("complex")


def geometry(a_shape, b_shape, c_shape, dtypes, qualifiers, inplace: bool) -> Geometry:
    """Check shapes and dtypes (ValueError/TypeError naming the culprits) and return the problem geometry."""
    names = ("a", "b", "c")
    for name, dt in zip(names, dtypes):
        if dt is not None and dt not in SUPPORTED_DTYPES:
            raise UnsupportedDtypeError(f"{name} has dtype {dt}; the supported dtypes are {', '.join(SUPPORTED_DTYPES)}")
    present = [(n, d) for n, d in zip(names, dtypes) if d is not None]
    if len({d for _, d in present}) > 1:
        raise UnsupportedDtypeError("a, b and c must have one dtype; got " + ", ".join(f"{n}: {d}" for n, d in present) +
                        f" (the supported dtypes are {', '.join(SUPPORTED_DTYPES)})")
    qa, qb = qualifiers[0][0], qualifiers[1][0]
    shapes = matmul_shapes(a_shape, b_shape, c_shape, inplace=inplace, diagonal=(qa == "dg", qb == "dg"))
    for name, abbr, shape, vec in (("a", qa, shapes.a_shape, shapes.a_vec), ("b", qb, shapes.b_shape, shapes.b_vec)):
        if abbr in ("sy", "he", "tr") and (vec or shape[-1] != shape[-2]):
            raise ValueError(f"{name} has the {_KIND[abbr][:4]} qualifier '{abbr}' and must be square, but its "
                             f"matrices are {'1-D' if vec else f'{shape[-2]} x {shape[-1]}'} (shape "
                             f"{format_shape(shape)})")
    structured = 0 if qa != "ge" else (1 if qb != "ge" else None)
    abbr = "ge" if structured is None else (qa, qb)[structured]
    kind = _KIND[abbr]
    if kind == "hemm" and not dtypes[0].startswith("complex"):
        kind = "symm"  # a real Hermitian matrix is symmetric
    return Geometry(kind, dtypes[0], shapes, structured, tuple(qualifiers))


# ------------------------------------------------------------------------------------------------ layouts

def describe(rows: int, cols: int, rs: int, cs: int, prefer: str = "R"):
    """How BLAS can read a rows x cols matrix with strides (rs, cs): ('R', ld) row-major, ('C', ld)
    column-major, or None (negative, zero or non-unit strides in both directions: it needs a copy)."""
    row_ok = (cols <= 1 or cs == 1) and (rows <= 1 or rs >= max(1, cols))
    col_ok = (rows <= 1 or rs == 1) and (cols <= 1 or cs >= max(1, rows))
    if row_ok and (prefer == "R" or not col_ok):
        return "R", (rs if rows > 1 else max(1, cols))
    if col_ok:
        return "C", (cs if cols > 1 else max(1, rows))
    return None


def orient_perm(ndim: int, order: str) -> tuple:
    """Memory order (outermost first) of a dense array whose matrices are row- ('R') or column- ('C') major."""
    perm = list(range(ndim))
    if order == "C" and ndim >= 2:
        perm[-2], perm[-1] = perm[-1], perm[-2]
    return tuple(perm)


@dataclass(frozen=True)
class Caps:
    """What the engine can do: CblasConjNoTrans in gemm/trmm, strided-batched gemm, the largest integer."""

    conj_no_trans: bool = False
    strided_batched: bool = True
    max_int: int = (1 << 63) - 1


@dataclass(frozen=True)
class OperandPrep:
    """What an operand needs before the engine reads it: 'direct' (its own memory), 'dense' (a dense copy
    with axes ``perm`` outermost first) or 'dense_conj' (a conjugated dense copy); 'skip': not read."""

    mode: str
    perm: tuple | None
    strides: tuple  # element strides the engine reads, over the operand's own axes
    why: str = ""


class Ptr(NamedTuple):
    name: str  # 'A', 'B', 'D' (the result, or C for in-place), 'W' (workspace), 'X' (diagonal: the a or b one)
    offset: int = 0


@dataclass(frozen=True)
class Step:
    """One routine called once per entry of ``offsets`` (a tuple of element offsets per Ptr of ``args``)."""

    routine: str
    args: tuple
    offsets: tuple = ((),)

    def pointer_slots(self) -> tuple:
        return tuple(i for i, a in enumerate(self.args) if isinstance(a, Ptr))


@dataclass(frozen=True)
class MatmulLayout:
    preps: dict  # 'a', 'b', 'c' -> OperandPrep (c: only when it is the result, in place)
    d_perm: tuple  # memory order of a newly allocated result
    d_strides: tuple
    d_is_c: bool  # the result is written into c itself (inplace)
    copy_back: bool  # inplace, but c cannot be described: computed in a new array and copied into c
    c_into_d: bool  # c is copied into the result before the engine runs (beta * c then accumulates)
    steps: tuple
    workspace: int = 0  # elements of the 'W' buffer
    notes: tuple = field(default_factory=tuple)


class _View(NamedTuple):
    rows: int
    cols: int
    rs: int
    cs: int
    batch: tuple  # strides aligned to the problem's batch shape (0 where broadcast)


def _view(g: Geometry, which: str, strides) -> _View:
    """The matrices of operand a, b or the result ('d', or c in place) as BLAS sees them: promoted vectors get
    a unit axis of stride 0, a diagonal is one row of stride 0 (its column stride is the vector's)."""
    full = g.shapes.matrix_strides(which, strides)
    rows, cols = {"a": (g.M, g.K), "b": (g.K, g.N)}.get(which, (g.M, g.N))
    return _View(rows, cols, full[-2], full[-1], full[:-2])


def _self_overlaps(shape, strides) -> bool:
    return self_overlapping(shape, strides)


def _fits(view: _View, order: str) -> bool:
    d = describe(*view[:4], prefer=order)
    return d is not None and d[0] == order


def plan_layout(g: Geometry, a_strides, b_strides, c_strides, inplace: bool, caps: Caps) -> MatmulLayout:
    """Decide copies, the result layout and the BLAS steps for geometry ``g`` and the operands' strides."""
    notes = []
    preps = {}
    shapes = {"a": g.a_shape, "b": g.b_shape}
    own = {"a": tuple(a_strides), "b": tuple(b_strides)}
    views = {"a": _view(g, "a", own["a"]), "b": _view(g, "b", own["b"])}
    is_diag = {n: g.qualifiers[i][0] == "dg" for i, n in enumerate("ab")}
    conj = {n: g.is_complex and bool(g.qualifiers[i][1]) for i, n in enumerate("ab")}

    def use(name, mode, order, why):
        perm = tuple(range(len(shapes[name]))) if is_diag[name] else orient_perm(len(shapes[name]), order)
        preps[name] = OperandPrep(mode, perm, dense_strides(shapes[name], perm), why)
        views[name] = _view(g, name, preps[name].strides)
        notes.append(f"{name}: {why}")

    for name in "ab":
        preps[name] = OperandPrep("direct", None, own[name])
        v = views[name]
        if is_diag[name]:
            if v.cs == 0 and v.rows > 1:
                use(name, "dense", "R", "a diagonal with a zero stride (a dense copy is read)")
        elif describe(*v[:4]) is None:
            use(name, "dense", "R", f"strides {own[name]} cannot be described to BLAS (a dense copy is read)")

    # ---- the result
    result_ndim = len(g.result_shape)
    copy_back = d_is_c = False
    d_order = None
    if inplace:
        if _self_overlaps(g.result_shape, c_strides):
            raise ValueError(f"c overlaps itself (strides {tuple(c_strides)}: a zero-stride or "
                             f"overlapping view), so it cannot receive the result in place; pass a dense c or "
                             f"inplace=False")
        d = describe(*_view(g, "d", c_strides)[:4])
        if d is None:
            copy_back = True
            notes.append(f"c: strides {tuple(c_strides)} cannot be described to BLAS (the result is computed in a "
                         f"dense array and copied into c)")
        else:
            d_is_c, d_order = True, d[0]
    if g.kind == "gemm":
        if d_order is None:
            d_order = _gemm_result_order(views, conj, caps)
        for name in "ab":
            if conj[name] and not caps.conj_no_trans and not _fits(views[name], _other(d_order)):
                use(name, "dense_conj", "R", "conjugated without transposition: BLAS reads a conjugated copy")
                conj[name] = False
    else:
        s, gname = "ab"[g.structured], "ba"[g.structured]
        if d_order is None:
            d_order = "R" if _fits(views[gname], "R") else "C"
        if not _fits(views[gname], d_order) or conj[gname]:
            use(gname, "dense_conj" if conj[gname] else "dense", d_order,
                "the general operand of a structured product is read in the result's layout" if not conj[gname]
                else "conjugated general operand of a structured product (a conjugated copy is read)")
            conj[gname] = False
        if is_diag[s]:
            if conj[s]:
                use(s, "dense_conj", "R", "conjugated diagonal (a conjugated copy is read)")
                conj[s] = False
        elif g.kind == "symm" and conj[s]:
            use(s, "dense_conj", d_order, "conjugated symmetric matrix (a conjugated copy is read)")
            conj[s] = False
        elif g.kind == "hemm":
            # a Hermitian matrix read in the other layout is its conjugate: copy when that is the wrong one
            matches = _fits(views[s], d_order)
            if conj[s] == matches:
                use(s, "dense_conj" if conj[s] else "dense", d_order,
                    "Hermitian matrix in a layout that would read its conjugate (a copy is read)")
            conj[s] = False  # else: read in the other layout, which conjugates it
        elif g.kind == "trmm" and conj[s] and not caps.conj_no_trans and not _fits(views[s], _other(d_order)):
            use(s, "dense_conj", d_order, "conjugated triangular matrix (a conjugated copy is read)")
            conj[s] = False
    if d_is_c:
        d_perm, d_strides = None, tuple(c_strides)
        preps["c"] = OperandPrep("direct", None, tuple(c_strides))
    else:
        d_perm = orient_perm(result_ndim, d_order) if not (g.a_vec or g.b_vec) else tuple(range(result_ndim))
        d_strides = dense_strides(g.result_shape, d_perm)
    dv = _view(g, "d", d_strides)
    d_order, ldd = describe(*dv[:4], prefer=d_order)
    c_into_d = g.c_shape is not None and not d_is_c

    if math.prod(g.result_shape) == 0:
        steps = ()
    elif g.K == 0:
        for name in "ab":
            preps[name] = OperandPrep("skip", None, own[name])
        m, n = (g.M, g.N) if d_order == "C" else (g.N, g.M)
        if g.c_shape is None:  # a fresh, dense result of zeros
            steps = (Step("zero", (math.prod(g.result_shape), Ptr("D"))),)
        else:  # D holds c: D = beta * D
            steps = (Step("geam", ("N", "N", m, n, "beta", Ptr("D"), ldd, "zero", Ptr("D"), ldd, Ptr("D"), ldd),
                          _offsets(g.batch_shape, [dv.batch] * 3)),)
    elif g.kind == "gemm":
        steps = _gemm_steps(g, views, conj, dv, d_order, ldd, caps)
    else:
        steps = _structured_steps(g, views, conj, dv, d_order, ldd)
    workspace = 0
    if g.kind in ("trmm", "dgmm") and g.c_shape is not None and steps and g.K:
        workspace = g.M * g.N
    layout = MatmulLayout(preps, d_perm, d_strides, d_is_c, copy_back, c_into_d, tuple(steps), workspace,
                          tuple(notes))
    _check_ints(layout, caps)
    return layout


def _other(order: str) -> str:
    return "C" if order == "R" else "R"


def _gemm_result_order(views, conj, caps) -> str:
    """Row-major, unless column-major needs fewer conjugated copies (conjugation without transposition)."""
    if caps.conj_no_trans:
        return "R"

    def copies(order):
        return sum(1 for n in "ab" if conj[n] and not _fits(views[n], _other(order)))
    return "R" if copies("R") <= copies("C") else "C"


def _read(view: _View, d_order: str, conj: bool):
    """(op, ld) to read an operand: untransposed when it has the result's layout, transposed otherwise (a
    conjugated operand prefers the transposed read, which BLAS can conjugate)."""
    prefer = _other(d_order) if conj and _fits(view, _other(d_order)) else d_order
    order, ld = describe(*view[:4], prefer=prefer)
    op = "N" if order == d_order else "T"
    if conj:
        op = "CN" if op == "N" else "C"
    return op, ld, order


def _gemm_steps(g, views, conj, dv, d_order, ldd, caps):
    opa, lda, _ = _read(views["a"], d_order, conj["a"])
    opb, ldb, _ = _read(views["b"], d_order, conj["b"])
    if d_order == "C":  # D = op(A) op(B)
        first, second = ("A", opa, lda, views["a"].batch), ("B", opb, ldb, views["b"].batch)
        m, n = g.M, g.N
    else:  # D^T = op(B)^T op(A)^T, read from the same memory
        first, second = ("B", opb, ldb, views["b"].batch), ("A", opa, lda, views["a"].batch)
        m, n = g.N, g.M
    k = g.K
    dims = _collapse(g.batch_shape, [first[3], second[3], dv.batch])
    # fold the batch into n when the first operand is shared and the second and the result stack along n
    if len(dims) == 1 and dims[0][1][0] == 0 and second[1] == "N":
        count, (_, s2, sd) = dims[0]
        if s2 == n * second[2] and sd == n * ldd:
            n, dims = n * count, []
    args = [first[1], second[1], m, n, k, "alpha", Ptr(first[0]), first[2], Ptr(second[0]), second[2], "beta",
            Ptr("D"), ldd]
    if dims and caps.strided_batched and _separate(dims[-1][1], (
            _extent(first[1], first[2], m, k), _extent(second[1], second[2], k, n), ldd * n)):
        count, strides = dims[-1]
        bargs = args[:8] + [strides[0]] + args[8:10] + [strides[1]] + args[10:] + [strides[2], count]
        return (Step("gemm_batched", tuple(bargs), _offsets_dims(dims[:-1])),)
    return (Step("gemm", tuple(args), _offsets_dims(dims)),)


def _extent(op: str, ld: int, rows: int, cols: int) -> int:
    """Elements spanned by a column-major matrix read with ``op`` as rows x cols (ld per column)."""
    return ld * (cols if op[-1] == "N" else rows)


def _separate(strides, extents) -> bool:
    """Whether batch strides step over whole matrices (strided-batched APIs refuse negative or interleaved
    batches; a shared operand has stride 0). Otherwise the batch is looped."""
    return all(s == 0 or s >= e for s, e in zip(strides, extents)) and strides[2] > 0


def _structured_steps(g, views, conj, dv, d_order, ldd):
    s, gname = "ab"[g.structured], "ba"[g.structured]
    q = g.qualifiers[g.structured]
    side = ("L", "R")[g.structured]
    if d_order == "R":
        side = _SIDE_FLIP[side]
    m, n = (g.M, g.N) if d_order == "C" else (g.N, g.M)
    ldg = describe(*views[gname][:4], prefer=d_order)[1]
    gp = Ptr(gname.upper())
    nb = len(g.batch_shape)
    out = Ptr("W") if (g.c_shape is not None and g.kind in ("trmm", "dgmm")) else Ptr("D")
    ldo, out_batch = (m, (0,) * nb) if out.name == "W" else (ldd, dv.batch)
    v = views[s]
    if g.kind == "dgmm":
        nx, stride = (g.M if g.structured == 0 else g.N), v.cs
        start, inc = ((nx - 1) * stride, -stride) if q[4] == -1 else (0, stride)
        if inc < 0:  # BLAS convention: with a negative increment the pointer is the lowest address
            start += (nx - 1) * inc
        args = ("dgmm", side, m, n, "alpha", gp, ldg, Ptr("X", start), inc, out, ldo)
        batch = {gp.name: views[gname].batch, "X": v.batch}
    else:
        op, lds, stored = _read(v, d_order, conj[s])
        uplo = _UPLO[int(q[2])]
        if stored == "R":  # a row-major triangle is the other triangle of the column-major view
            uplo = _FLIP[uplo]
        sp = Ptr(s.upper())
        if g.kind in ("symm", "hemm"):
            args = (g.kind, side, uplo, m, n, "alpha", sp, lds, gp, ldg, "beta", out, ldo)
        else:
            diag = "U" if int(q[3]) == 1 else "N"
            args = ("trmm", side, uplo, op, diag, m, n, "alpha", sp, lds, gp, ldg, out, ldo)
        batch = {sp.name: v.batch, gp.name: views[gname].batch}
    batch[out.name] = out_batch
    ptrs = [a.name for a in args[1:] if isinstance(a, Ptr)]
    step = Step(args[0], args[1:], _offsets(g.batch_shape, [batch[p] for p in ptrs]))
    if out.name == "W":
        combine = Step("geam", ("N", "N", m, n, "one", Ptr("W"), m, "beta", Ptr("D"), ldd, Ptr("D"), ldd),
                       _offsets(g.batch_shape, [(0,) * nb, dv.batch, dv.batch]))
        return _interleave(step, combine)
    return (step,)


def _interleave(first: Step, second: Step) -> tuple:
    """Run ``first`` then ``second`` for each batch member (they share the one-matrix workspace)."""
    if len(first.offsets) == 1:
        return (first, second)
    return tuple(s for pair in zip(*[[Step(st.routine, st.args, (o,)) for o in st.offsets] for st in (first, second)])
                 for s in pair)


def _collapse(batch_shape, stride_lists):
    """Batch dims (size, (strides...)) with size-1 dims dropped and contiguous neighbours merged."""
    out = []
    for i, size in enumerate(batch_shape):
        if size == 1:
            continue
        ss = tuple(s[i] for s in stride_lists)
        if out:
            psize, pss = out[-1]
            if all(p == q * size for p, q in zip(pss, ss)):
                out[-1] = (psize * size, ss)
                continue
        out.append((size, ss))
    return out


def _offsets_dims(dims) -> tuple:
    if not dims:
        return ((0, 0, 0),)
    ranges = [range(size) for size, _ in dims]
    out = []
    for idx in itertools.product(*ranges):
        out.append(tuple(sum(i * ss[j] for i, (_, ss) in zip(idx, dims)) for j in range(3)))
    return tuple(out)


def _offsets(batch_shape, stride_lists) -> tuple:
    """The batch offsets of a step's three pointers (one stride list each), size-1 dims dropped, none merged."""
    return _offsets_dims([(n, tuple(s[i] for s in stride_lists)) for i, n in enumerate(batch_shape) if n != 1])


def _check_ints(layout: MatmulLayout, caps: Caps) -> None:
    for step in layout.steps:
        for a in step.args:
            if isinstance(a, int) and not isinstance(a, bool) and abs(a) > caps.max_int:
                raise ValueError(f"a dimension or leading dimension ({a}) exceeds the {caps.max_int} the BLAS "
                                 f"library accepts (32-bit integers); use a 64-bit-integer BLAS (NumPy's "
                                 f"OpenBLAS or MKL) or smaller operands")
