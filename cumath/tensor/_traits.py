"""Pure plan arithmetic of tensor contractions: the einsum expression, the modes and extents of the operands, the
pairing of a ternary contraction, and the GEMM geometry of one pairwise step.

Nothing here touches memory: the functions take shapes, strides (in elements) and mode labels and return small
frozen dataclasses that both engines read (the CPU engine turns a step into BLAS calls, the GPU engine into
cuTENSOR descriptors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Expression", "parse_expression", "Problem", "make_problem", "Step", "pairwise_steps", "pairing_cost",
           "MatrixView", "GemmGeometry", "gemm_geometry", "merge_group"]

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True)
class Expression:
    """The modes of each input (ellipses expanded to modes of their own, named ``'...0'``, ``'...1'``, ...) and
    of the output. A mode is a string."""

    inputs: tuple
    output: tuple
    text: str


def _split_term(term: str, what: str, expr: str) -> tuple:
    """The labels of one term: letters and at most one ellipsis (kept as the token '...')."""
    labels = []
    i = 0
    while i < len(term):
        if term.startswith("...", i):
            if "..." in labels:
                raise ValueError(f"{what} of the expression {expr!r} has more than one ellipsis ('...')")
            labels.append("...")
            i += 3
            continue
        ch = term[i]
        if ch not in _LETTERS:
            raise ValueError(f"{what} of the expression {expr!r} has the character {ch!r}; modes are the letters "
                             f"a-z and A-Z, with at most one ellipsis ('...') per operand")
        labels.append(ch)
        i += 1
    return tuple(labels)


def parse_expression(expr: str, ndims) -> Expression:
    """Parse an einsum expression for operands with ``ndims`` dimensions.

    Explicit (``'ij,jk->ik'``) and implicit (``'ij,jk'``: the output is the modes that appear once, in
    alphabetical order, after the ellipsis modes) forms are accepted, with ellipses. A mode repeated within an
    input takes that operand's diagonal; an output mode may not repeat.
    """
    if not isinstance(expr, str):
        raise TypeError(f"the expression must be a str such as 'ij,jk->ik', not {type(expr).__name__}")
    text = expr.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    if "->" in rhs:
        raise ValueError(f"the expression {expr!r} has more than one '->'")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"the expression {expr!r} names {len(terms)} operand(s), but {len(ndims)} were given; "
                         f"write one comma-separated term per operand")
    parsed = [_split_term(t, f"operand {i}", expr) for i, t in enumerate(terms)]
    ell = 0
    for i, (labels, nd) in enumerate(zip(parsed, ndims)):
        explicit = len(labels) - (1 if "..." in labels else 0)
        if "..." in labels:
            if explicit > nd:
                raise ValueError(f"operand {i} has {nd} dimension(s) but its term {terms[i]!r} names {explicit} "
                                 f"mode(s)")
            ell = max(ell, nd - explicit)
        elif explicit != nd:
            raise ValueError(f"operand {i} has {nd} dimension(s) but its term {terms[i]!r} names {explicit} mode(s); "
                             f"give one mode per dimension (or an ellipsis)")
    inputs = []
    for labels, nd in zip(parsed, ndims):
        if "..." in labels:
            n = nd - (len(labels) - 1)
            pos = labels.index("...")
            # ellipsis dimensions are aligned on the right, as in numpy.einsum
            modes = labels[:pos] + tuple(f"...{ell - n + j}" for j in range(n)) + labels[pos + 1:]
        else:
            modes = labels
        inputs.append(tuple(modes))
    ellipsis_modes = tuple(f"...{j}" for j in range(ell))
    if arrow:
        out_labels = _split_term(rhs, "the output", expr)
        seen = set()
        for m in out_labels:
            if m in seen:
                raise ValueError(f"the output of the expression {expr!r} repeats the mode {m!r}; output modes must "
                                 f"be distinct")
            seen.add(m)
        if "..." in out_labels:
            pos = out_labels.index("...")
            output = out_labels[:pos] + ellipsis_modes + out_labels[pos + 1:]
        else:  # ellipsis dimensions missing from an explicit output are summed over
            output = out_labels
        present = {m for ins in inputs for m in ins}
        for m in output:
            if m not in present:
                raise ValueError(f"the output mode {m!r} of the expression {expr!r} appears in no input")
    else:
        counts: dict = {}
        for ins in inputs:
            for m in ins:
                counts[m] = counts.get(m, 0) + 1
        once = sorted(m for m, n in counts.items() if n == 1 and not m.startswith("..."))
        output = ellipsis_modes + tuple(once)
    return Expression(tuple(inputs), tuple(output), text)


@dataclass(frozen=True)
class Problem:
    """The operands as the contraction sees them: per operand its distinct modes and, for each, the extent and
    the stride (a mode repeated in one operand becomes one mode whose stride is the sum: its diagonal)."""

    inputs: tuple          # per input: tuple of distinct modes
    strides: tuple         # per input: tuple of strides (elements), same order
    output: tuple          # output modes
    extents: dict          # mode -> extent

    def size(self, modes) -> int:
        return math.prod(self.extents[m] for m in modes)


def make_problem(expression: Expression, shapes, strides) -> Problem:
    """Check the extents (a mode has one extent everywhere) and fold repeated modes into diagonals."""
    extents: dict = {}
    where: dict = {}
    ins, sts = [], []
    for i, (modes, shape, stride) in enumerate(zip(expression.inputs, shapes, strides)):
        seen: dict = {}
        for m, n, s in zip(modes, shape, stride):
            if m in extents and extents[m] != n:
                label = "an ellipsis dimension" if m.startswith("...") else f"mode {m!r}"
                raise ValueError(f"{label} has extent {n} in operand {i} but {extents[m]} in operand {where[m]}; "
                                 f"the extents of a mode must match (broadcasting is not supported)")
            extents.setdefault(m, n)
            where.setdefault(m, i)
            seen[m] = seen.get(m, 0) + s
        ins.append(tuple(seen))
        sts.append(tuple(seen.values()))
    return Problem(tuple(ins), tuple(sts), expression.output, extents)


# ---------------------------------------------------------------------------------------------- pairing


@dataclass(frozen=True)
class Step:
    """One pairwise contraction: inputs ``x`` and ``y`` (indices of operands, or 'T' for the intermediate)
    into the modes ``z`` (the final output when ``final``)."""

    x: object
    y: object
    x_modes: tuple
    y_modes: tuple
    z_modes: tuple
    final: bool
    flops: int


def pairing_cost(extents: dict, x: tuple, y: tuple, keep: set) -> tuple:
    """(multiply-adds, modes of the result) of contracting x with y, keeping the modes in ``keep``."""
    union = tuple(dict.fromkeys(x + y))
    z = tuple(m for m in union if m in keep)
    return math.prod(extents[m] for m in union), z


def pairwise_steps(problem: Problem, order: tuple | None = None) -> tuple:
    """The steps of the contraction: one for two inputs; for three, the pairing of least cost (multiply-adds of
    both steps, then the size of the intermediate), or the pair given as ``order`` (two input indices)."""
    ins, out = problem.inputs, problem.output
    ext = problem.extents
    if len(ins) == 2:
        flops, _ = pairing_cost(ext, ins[0], ins[1], set(out))
        return (Step(0, 1, ins[0], ins[1], out, True, flops),)
    candidates = [order] if order is not None else [(0, 1), (0, 2), (1, 2)]
    best = None
    for i, j in candidates:
        k = 3 - i - j
        keep = set(ins[k]) | set(out)
        f1, t = pairing_cost(ext, ins[i], ins[j], keep)
        f2, _ = pairing_cost(ext, t, ins[k], set(out))
        key = (f1 + f2, math.prod(ext[m] for m in t), (i, j))
        if best is None or key < best[0]:
            best = (key, (Step(i, j, ins[i], ins[j], t, False, f1), Step("T", k, t, ins[k], out, True, f2)))
    return best[1]


# ------------------------------------------------------------------------------------------ GEMM geometry


def merge_group(modes, stride_of: dict, extents: dict):
    """(extent, innermost stride) of ``modes`` (outermost first) seen as one dimension, or None when their
    strides do not nest (extent-1 modes are ignored; a group of nothing is (1, 1))."""
    live = [m for m in modes if extents[m] != 1]
    if not live:
        return 1, 1
    for outer, inner in zip(live, live[1:]):
        if stride_of[outer] != stride_of[inner] * extents[inner]:
            return None
    inner = stride_of[live[-1]]
    if inner <= 0:
        return None
    return math.prod(extents[m] for m in live), inner


@dataclass(frozen=True)
class MatrixView:
    """A matrix of ``rows`` x ``cols`` read at strides (``srow``, ``scol``) for row-major CBLAS: ``trans``
    'N' (unit column stride, leading dimension ``ld`` = srow) or 'T' (unit row stride, ``ld`` = scol)."""

    rows: int
    cols: int
    trans: str
    ld: int


def matrix_view(rows: int, cols: int, srow: int, scol: int) -> MatrixView | None:
    if (cols == 1 or scol == 1) and (rows == 1 or srow >= max(1, cols)):
        return MatrixView(rows, cols, "N", srow if rows > 1 else max(1, cols))
    if (rows == 1 or srow == 1) and (cols == 1 or scol >= max(1, rows)):
        return MatrixView(rows, cols, "T", scol if cols > 1 else max(1, rows))
    return None


@dataclass(frozen=True)
class GemmGeometry:
    """A pairwise step as batched GEMMs: Z[b] (M x N) = X[b] (M x K) @ Y[b] (K x N), row-major.

    ``batch``, ``m``, ``n``, ``k``: the modes of each group in memory order (outermost first); ``x``, ``y``,
    ``z``: the matrix views (None: that operand must first be copied into the dense order [batch, m, k] /
    [batch, k, n] / [batch, m, n]); ``x_sum`` / ``y_sum``: modes of one input only, summed out before the
    product; ``swap``: the product is computed as Z^T = Y^T X^T (Z has a unit row stride).
    """

    batch: tuple
    m: tuple
    n: tuple
    k: tuple
    x_sum: tuple
    y_sum: tuple
    x: MatrixView | None
    y: MatrixView | None
    z: MatrixView | None
    swap: bool
    M: int
    N: int
    K: int
    B: int


def _by_stride(modes, stride_of):
    return tuple(sorted(modes, key=lambda m: -abs(stride_of[m])))


def gemm_geometry(x_modes, x_strides, y_modes, y_strides, z_modes, z_strides, extents) -> GemmGeometry:
    """Classify the modes of one step and find, where the strides allow, matrix views of the operands themselves
    (so that no copy is made). ``z_strides`` None: Z is ours to lay out (dense in [batch, m, n])."""
    xs = dict(zip(x_modes, x_strides))
    ys = dict(zip(y_modes, y_strides))
    zset, xset, yset = set(z_modes), set(x_modes), set(y_modes)
    batch = tuple(m for m in z_modes if m in xset and m in yset)
    k = tuple(m for m in x_modes if m in yset and m not in zset)
    m_ = tuple(m for m in z_modes if m in xset and m not in yset)
    n_ = tuple(m for m in z_modes if m in yset and m not in xset)
    x_sum = tuple(m for m in x_modes if m not in yset and m not in zset)
    y_sum = tuple(m for m in y_modes if m not in xset and m not in zset)
    M, N, K = (math.prod(extents[q] for q in g) for g in (m_, n_, k))
    B = math.prod(extents[q] for q in batch)
    zs = dict(zip(z_modes, z_strides)) if z_strides is not None else None
    if x_sum or y_sum:  # the reduced copies are dense: views are decided on them
        xs = ys = None
    # orders: K from X (else Y), M and N from Z when Z is given, else from X and Y
    k_order = _by_stride(k, xs) if xs is not None else k
    if xs is not None and ys is not None and merge_group(k_order, xs, extents) is None:
        k_order = _by_stride(k, ys)
    if zs is not None:
        m_order, n_order = _by_stride(m_, zs), _by_stride(n_, zs)
    else:
        m_order = _by_stride(m_, xs) if xs is not None else m_
        n_order = _by_stride(n_, ys) if ys is not None else n_
    batch_order = _by_stride(batch, zs) if zs is not None else batch

    def view(stride_of, rows, cols, rows_modes, cols_modes):
        if stride_of is None:
            return None
        r = merge_group(rows_modes, stride_of, extents)
        c = merge_group(cols_modes, stride_of, extents)
        if r is None or c is None:
            return None
        return matrix_view(rows, cols, r[1], c[1])

    xv = view(xs, M, K, m_order, k_order)
    yv = view(ys, K, N, k_order, n_order)
    swap = False
    if zs is None:
        zv = MatrixView(M, N, "N", max(1, N))
    else:
        zv = view(zs, M, N, m_order, n_order)
        if zv is not None and zv.trans == "T" and not (M == 1 or N == 1):
            swap = True
    return GemmGeometry(batch_order, m_order, n_order, k_order, x_sum, y_sum, xv, yv, zv, swap, M, N, K, B)


def batch_offsets(modes, stride_of: dict, extents: dict) -> list:
    """Element offsets of every batch index (``modes`` outermost first), in row-major order of the batch."""
    offsets = [0]
    for m in modes:
        s, n = stride_of[m], extents[m]
        offsets = [o + i * s for o in offsets for i in range(n)]
    return offsets
