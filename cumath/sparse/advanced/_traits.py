"""Pure arithmetic of the sparse direct solver: the problem's geometry, right-hand side layouts, the pattern
transforms the CPU engines need, and the residual check. No library, no pointers (NumPy only).

- :func:`problem` checks ``a`` (one CSR, a batched CSR or a tuple of them) against ``b`` (one array, a batched
  array or a tuple of them) and says how many systems there are, their sizes and where each right-hand side lives.
- :func:`column_major` says whether one right-hand side can be read in place by an engine (column-major, its
  leading dimension ``ld``) or needs a copy.
- :class:`PatternMap` turns a CSR pattern into the one an engine wants (PARDISO: sorted columns, the upper
  triangle of symmetric types with every diagonal entry stored; SuperLU: the full matrix of a triangle) and maps
  the values of each new matrix with one gather.
- :func:`relative_residual`: ``max_j ||b_j - A x_j|| / ||b_j||``, how the solver tells a trustworthy solution from
  one computed with perturbed pivots of a (numerically) singular matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._core.dtypes import is_complex
from .._common import check_dense_beside
from ._options import DirectSolverMatrixType as MT
from ._options import DirectSolverMatrixViewType as MV

__all__ = ["memory_estimates_dtype", "VALUE_DTYPES", "Problem", "Rhs", "problem", "column_major", "result_perm",
           "batch_offsets", "structurally_singular",
           "PatternMap", "pattern_map", "is_canonical", "relative_residual", "residual_tolerance", "pardiso_mtype",
           "symmetric_type", "DiagonalDominance"]

VALUE_DTYPES = ("float32", "float64", "complex64", "complex128")

#: the layout of cuDSS's memory estimates (CUDSS_DATA_MEMORY_ESTIMATES, bytes)
memory_estimates_dtype = np.dtype([
    ("permanent_device_memory", "<u8"), ("peak_device_memory", "<u8"), ("permanent_host_memory", "<u8"),
    ("peak_host_memory", "<u8"), ("hybrid_min_device_memory", "<u8"), ("hybrid_max_device_memory", "<u8"),
    ("reserved", "<u8", (10,)),
])


def symmetric_type(mtype) -> bool:
    return mtype != MT.GENERAL


# -------------------------------------------------------------------------------------------- geometry


@dataclass(frozen=True)
class Rhs:
    """One system's right-hand side inside its operand: ``rows x cols``, at ``offset`` elements from the operand's
    pointer, with element strides ``row_stride`` and ``col_stride``; ``vector``: it is 1-D."""

    rows: int
    cols: int
    offset: int
    row_stride: int
    col_stride: int
    vector: bool


@dataclass(frozen=True)
class Problem:
    """``count`` systems of orders ``sizes`` with ``nnz`` stored entries; the forms of ``a`` and ``b`` ('single',
    'explicit' (a tuple) or 'implicit' (batch dimensions)); one :class:`Rhs` per system, in the operand
    ``rhs_operand[i]`` (always 0 unless ``b`` is a tuple)."""

    count: int
    sizes: tuple
    nnz: tuple
    dtype: str
    index_dtype: str
    lhs_form: str
    rhs_form: str
    rhs: tuple
    rhs_operand: tuple
    rhs_batch_shape: tuple

    @property
    def batched(self) -> bool:
        return self.lhs_form != "single"

    @property
    def nrhs(self) -> int:
        return max(r.cols for r in self.rhs)


def batch_offsets(shape, strides, batch_ndim: int) -> list:
    """The element offsets of the samples of an array whose first ``batch_ndim`` axes are a batch (C order)."""
    return _samples(shape, strides, batch_ndim)[0]


def _samples(shape, strides, batch_ndim: int):
    """(offset, sample shape, sample strides) of every sample of an array whose first ``batch_ndim`` axes are a
    batch, in C order of the batch index."""
    bshape, bstrides = shape[:batch_ndim], strides[:batch_ndim]
    offsets = [0]
    for extent, stride in zip(bshape, bstrides):
        offsets = [o + i * stride for o in offsets for i in range(extent)]
    return offsets, shape[batch_ndim:], strides[batch_ndim:]


def _rhs(shape, strides, offset: int) -> Rhs:
    if len(shape) == 1:
        return Rhs(shape[0], 1, offset, strides[0], shape[0], True)
    return Rhs(shape[0], shape[1], offset, strides[0], strides[1], False)


def problem(a, b) -> Problem:
    """The geometry of solving ``a @ x = b``: ``a`` a CSR or a tuple of CSRs, ``b`` an Operand or a tuple of them.
    Raises TypeError/ValueError naming what does not fit."""
    lhs = a if isinstance(a, tuple) else (a,)
    first = lhs[0]
    if first.dtype not in VALUE_DTYPES:
        raise TypeError(f"a's dtype {first.dtype} is not supported; the supported dtypes are {list(VALUE_DTYPES)}")
    if isinstance(a, tuple):
        lhs_form, sizes, nnz = "explicit", tuple(x.n for x in lhs), tuple(x.nnz for x in lhs)
        for i, x in enumerate(lhs):
            if x.shape[0] != x.shape[1]:
                raise ValueError(f"a[{i}] must be square; its shape is {x.shape}")
    else:
        if first.shape[-1] != first.shape[-2]:
            raise ValueError(f"a must be square (n, n), or (..., n, n) for a batch; its shape is {first.shape}")
        count = math.prod(first.batch_shape) if first.batch_shape else 1
        lhs_form = "implicit" if first.batch_shape else "single"
        sizes, nnz = (first.n,) * count, (first.nnz,) * count
    count = len(sizes)
    rhs_ops = b if isinstance(b, tuple) else (b,)
    for i, op in enumerate(rhs_ops):
        where = f"b[{i}]" if isinstance(b, tuple) else "b"
        if op.dtype != first.dtype:
            raise TypeError(f"{where} has dtype {op.dtype} while a has {first.dtype}; the solver needs one dtype for "
                            f"both (cast one of them)")
        check_dense_beside(where, op, first, f"a {_sparse_name(first.package)} matrix")
    if isinstance(b, tuple):
        rhs_form, batch_shape = "explicit", ()
        items = []
        for i, op in enumerate(b):
            if op.ndim not in (1, 2):
                raise ValueError(f"every right-hand side of an explicitly batched b must be a vector or a matrix; "
                                 f"b[{i}] has shape {op.shape}")
            items.append(_rhs(op.shape, op.strides, 0))
        operands = tuple(range(len(b)))
    else:
        op = b
        if op.ndim in (1, 2):
            rhs_form, batch_shape = "single", ()
            items, operands = [_rhs(op.shape, op.strides, 0)], (0,)
        else:
            rhs_form, batch_shape = "implicit", tuple(op.shape[:-2])
            offsets, sshape, sstrides = _samples(op.shape, op.strides, op.ndim - 2)
            items = [_rhs(sshape, sstrides, o) for o in offsets]
            operands = (0,) * len(items)
            if lhs_form == "implicit" and batch_shape != first.batch_shape:
                raise ValueError(f"the batch shapes of a {first.batch_shape} and b {batch_shape} must be the same")
    if lhs_form == "single" and rhs_form != "single":
        raise ValueError(f"b is a batch of {len(items)} right-hand sides but a is one matrix; for several right-hand "
                         f"sides of one system pass b as an (n, k) matrix")
    if lhs_form != "single" and rhs_form == "single":
        raise ValueError(f"a is a batch of {count} matrices but b is not batched; pass one right-hand side per "
                         f"matrix (a sequence, or an array with the batch dimensions first)")
    if len(items) != count:
        raise ValueError(f"a has {count} matrices but b has {len(items)} right-hand sides; the counts must match")
    for i, (n, r) in enumerate(zip(sizes, items)):
        if r.rows != n:
            which = "" if count == 1 else f" of system {i}"
            raise ValueError(f"the right-hand side{which} has {r.rows} rows but the matrix is {n} x {n}")
    return Problem(count, sizes, nnz, first.dtype, first.index_dtype, lhs_form, rhs_form, tuple(items), operands,
                   batch_shape)


def _sparse_name(package: str) -> str:
    return {"numpy": "SciPy", "cupy": "CuPy (cupyx)", "torch": "PyTorch"}.get(package, package)


def column_major(r: Rhs, exact: bool):
    """The leading dimension with which an engine reads ``r`` in place (column-major), or None when it needs a
    dense copy. ``exact``: the engine wants ``ld == rows`` (PARDISO), else ``ld >= rows`` will do (cuDSS)."""
    if r.rows == 0 or r.cols == 0:
        return max(r.rows, 1)
    if r.row_stride != 1 and r.rows > 1:
        return None
    if r.cols == 1:
        return r.rows
    if r.col_stride < r.rows or (exact and r.col_stride != r.rows):
        return None
    return r.col_stride


def result_perm(ndim: int):
    """The memory order of a solution array of ``ndim`` dimensions: each matrix column-major, batches outermost."""
    if ndim < 2:
        return None
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


# -------------------------------------------------------------------------------------------- patterns


def is_canonical(indptr, indices) -> bool:
    """Column indices strictly increasing within every row (sorted, no duplicates)."""
    if indices.size < 2:
        return True
    d = np.diff(indices)
    starts = indptr[1:-1] - 1  # the last entry of each row but the last one
    starts = starts[(starts >= 0) & (starts < d.size)]
    ok = d > 0
    ok[starts] = True  # a row boundary may decrease
    return bool(ok.all())


def structurally_singular(indptr, indices, n: int, view=MV.FULL) -> str | None:
    """What makes a matrix singular by its pattern alone (an empty row or column: no pivoting or perturbation gives
    it a factorization that solves it), or None. With a LOWER or UPPER ``view`` (a triangle standing for its
    mirror too), line i is empty when neither row i nor column i of the triangle holds an entry."""
    counts = np.diff(np.asarray(indptr, dtype=np.int64))
    cols = np.zeros(n, dtype=np.bool_)
    cols[np.asarray(indices)] = True
    if view != MV.FULL:
        cols |= counts > 0
    rows, lines = np.flatnonzero(counts == 0), np.flatnonzero(~cols)
    return gaps_message((int(rows[0]), rows.size) if rows.size else None,
                        (int(lines[0]), lines.size) if lines.size else None, view)


def _gap(what: str, first: int, count: int) -> str:
    return f"{what} {first} has no stored entry" + (f" ({count} such)" if count > 1 else "")


def gaps_message(rows, lines, view=MV.FULL) -> str | None:
    """``structurally_singular``'s answer from the gaps found elsewhere (the GPU check): ``rows``, ``lines``:
    (first, count) of the empty rows and of the empty columns (lines of a triangle for a LOWER or UPPER
    ``view``), or None."""
    if view != MV.FULL:
        return None if lines is None else _gap("row and column", *lines)
    if rows is not None:
        return _gap("row", *rows)
    return None if lines is None else _gap("column", *lines)


class DiagonalDominance:
    """Whether a general matrix's values are (weakly) row diagonally dominant, 2 |a_ii| >= sum_j |a_ij| in every
    row: LU factors such a matrix stably without pivoting (growth at most 2), so the engines' maximum weight
    matching and scaling, which exist to bring large entries onto the diagonal, can be left out of its analysis.
    Built once per pattern (``usable`` is False where a row does not hold exactly one diagonal entry);
    ``__call__(values)`` reads the values (~3 ms per million entries)."""

    def __init__(self, indptr, indices, n: int):
        indptr = np.asarray(indptr, dtype=np.int64)
        counts = np.diff(indptr)
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        diag = np.flatnonzero(np.asarray(indices) == rows)
        self.usable = bool(diag.size == n and (counts > 0).all() and np.array_equal(rows[diag], np.arange(n)))
        self._diag = diag
        self._starts = indptr[:-1]

    def __call__(self, values) -> bool:
        if not self.usable:
            return False
        mag = np.abs(np.asarray(values))
        with np.errstate(invalid="ignore", over="ignore"):
            rows = np.add.reduceat(mag, self._starts)
            return bool((2 * mag[self._diag] >= rows).all())  # a NaN or inf compares False: not dominant


@dataclass
class PatternMap:
    """A CSR pattern (``indptr``, ``indices``) built from another one, and how to fill its values from the
    original's: ``new[k] = ext[gather[k]]``, ``ext`` being the original values with one zero appended (the value of
    added diagonal entries), then conjugated where ``conj`` says. With duplicate entries in the original, the
    values are summed instead: ``new[dst[i]] += values[src[i]]``."""

    indptr: np.ndarray
    indices: np.ndarray
    gather: np.ndarray | None
    src: np.ndarray | None
    dst: np.ndarray | None
    conj: np.ndarray | None
    nnz: int

    def values(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The new matrix's values from the original ``values`` (into ``out`` when given)."""
        if out is None:
            out = np.empty(self.nnz, dtype=values.dtype)
        if self.gather is None:
            out[...] = 0
            np.add.at(out, self.dst, values[self.src])
        else:
            ext = np.empty(values.size + 1, dtype=values.dtype)
            ext[:-1] = values
            ext[-1] = 0
            np.take(ext, self.gather, out=out)
        if self.conj is not None:
            np.conjugate(out, out=out, where=self.conj)
        return out


def pattern_map(indptr, indices, n: int, *, keep: str, mirror: bool = False, hermitian: bool = False,
                diagonal: bool = False, index_dtype=None) -> PatternMap:
    """The pattern an engine wants, as a :class:`PatternMap`.

    ``keep``: 'all' entries, the 'upper' triangle (``j >= i``) or the 'lower' one. ``mirror``: add the transpose
    of the kept strict triangle (a full matrix from a triangle; conjugated for ``hermitian``). ``keep='lower'``
    without ``mirror`` stores the lower triangle transposed, as an upper one (conjugated for ``hermitian``).
    ``diagonal``: store every diagonal entry (zeros where ``a`` has none). Columns end up sorted within rows and
    duplicate entries summed.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    nnz = indices.size
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    cols = indices
    src = np.arange(nnz, dtype=np.int64)
    if keep in ("upper", "lower"):
        sel = cols >= rows if keep == "upper" else cols <= rows
        rows, cols, src = rows[sel], cols[sel], src[sel]
    conj = np.zeros(rows.size, dtype=bool) if hermitian else None
    if mirror:
        strict = rows != cols
        rows, cols = np.concatenate([rows, cols[strict]]), np.concatenate([cols, rows[strict]])
        src = np.concatenate([src, src[strict]])
        if conj is not None:
            conj = np.concatenate([conj, np.ones(int(strict.sum()), dtype=bool)])
    elif keep == "lower":
        rows, cols = cols, rows  # the lower triangle, transposed: an upper one
        if conj is not None:
            conj[:] = True
    if diagonal:
        has = np.zeros(n, dtype=bool)
        has[rows[rows == cols]] = True
        missing = np.flatnonzero(~has)
        if missing.size:
            rows, cols = np.concatenate([rows, missing]), np.concatenate([cols, missing])
            src = np.concatenate([src, np.full(missing.size, nnz, dtype=np.int64)])
            if conj is not None:
                conj = np.concatenate([conj, np.zeros(missing.size, dtype=bool)])
    order = np.lexsort((cols, rows))
    rows, cols, src = rows[order], cols[order], src[order]
    if conj is not None:
        conj = conj[order]
    first = np.ones(rows.size, dtype=bool)
    if rows.size > 1:
        first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    idx = np.dtype(index_dtype or np.int64)
    new_ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(new_ptr, rows[first] + 1, 1)
    new_ptr = np.cumsum(new_ptr).astype(idx)
    if first.all():
        return PatternMap(new_ptr, cols.astype(idx), src, None, None, conj, int(rows.size))
    slot = np.cumsum(first) - 1  # the new position of every entry; duplicates share their first one's
    real = src < nnz  # added diagonal entries have no source: their slot stays zero
    if conj is not None and (conj != conj[np.flatnonzero(first)][slot]).any():
        raise ValueError("a Hermitian matrix has duplicate entries on both sides of its diagonal; sum them first "
                         "(scipy: a.sum_duplicates())")
    return PatternMap(new_ptr, cols[first].astype(idx), None, src[real], slot[real],
                      None if conj is None else conj[first], int(first.sum()))


# ------------------------------------------------------------------------------------------ checking


def residual_tolerance(dtype: str) -> float:
    """The relative residual above which a solution computed with perturbed pivots is rejected: eps ** (1/4)
    (1.2e-4 in double, 1.9e-2 in single precision): a backward-stable solution of a matrix with condition number up
    to about eps ** (-3/4) stays below it, while perturbed pivots of a singular matrix leave residuals of order
    one."""
    return float(np.finfo(np.dtype(dtype)).eps) ** 0.25


def _spmm(indptr, indices, values, x, n, mtype, view):
    """``A @ x`` for the matrix that ``(indptr, indices, values)`` holds in ``view`` (a triangle of a symmetric or
    Hermitian matrix is mirrored), ``x`` of shape (n, k)."""
    rows = np.repeat(np.arange(n), np.diff(np.asarray(indptr, dtype=np.int64)))
    cols = np.asarray(indices, dtype=np.int64)
    vals = np.asarray(values)
    if symmetric_type(mtype) and view != MV.FULL:
        sel = cols >= rows if view == MV.UPPER else cols <= rows
        rows, cols, vals = rows[sel], cols[sel], vals[sel]
        strict = rows != cols
        herm = mtype in (MT.HERMITIAN, MT.HPD) or (mtype == MT.SPD and is_complex(vals.dtype.name))
        mirrored = np.conj(vals[strict]) if herm else vals[strict]
        rows, cols = np.concatenate([rows, cols[strict]]), np.concatenate([cols, rows[strict]])
        vals = np.concatenate([vals, mirrored])
    out = np.zeros((n, x.shape[1]), dtype=np.result_type(vals, x))
    for j in range(x.shape[1]):  # a weighted histogram per column: the fastest scatter-add NumPy has
        prod = vals * x[cols, j]
        if np.iscomplexobj(out):
            out[:, j] = (np.bincount(rows, weights=prod.real, minlength=n)
                         + 1j * np.bincount(rows, weights=np.imag(prod), minlength=n))
        else:
            out[:, j] = np.bincount(rows, weights=prod, minlength=n)
    return out


def relative_residual(indptr, indices, values, x, b, mtype=MT.GENERAL, view=MV.FULL) -> float:
    """``max_j ||b_j - A x_j||_inf / ||b_j||_inf`` over the columns of ``b`` (0 for a zero column solved exactly);
    inf or nan results (a failed solve) count as infinite."""
    n = b.shape[0]
    x2 = x.reshape(n, -1)
    b2 = b.reshape(n, -1)
    if not np.isfinite(x2).all():
        return math.inf
    r = b2 - _spmm(indptr, indices, values, x2.astype(np.complex128 if is_complex(x2.dtype.name) else np.float64),
                   n, mtype, view)
    num = np.abs(r).max(axis=0) if n else np.zeros(b2.shape[1])
    den = np.abs(b2).max(axis=0) if n else np.zeros(b2.shape[1])
    worst = 0.0
    for nu, de in zip(num, den):
        worst = max(worst, float(nu / de) if de > 0 else (0.0 if nu == 0 else math.inf))
    return worst


def pardiso_mtype(mtype, dtype: str) -> int:
    """PARDISO's matrix type for a system type and dtype."""
    complex_ = is_complex(dtype)
    if mtype == MT.GENERAL:
        return 13 if complex_ else 11
    if mtype == MT.SYMMETRIC:
        return 6 if complex_ else -2
    if mtype == MT.HERMITIAN:
        return -4 if complex_ else -2
    return 4 if complex_ else 2  # SPD, HPD
