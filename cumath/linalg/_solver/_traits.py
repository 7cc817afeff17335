"""Pure plan arithmetic of the dense direct solver: shapes, where the factorization runs and in which layout,
how the right-hand sides are read, how batches run, and what a failed factorization means.

LAPACK and cuSOLVER read column-major matrices. A row-major matrix is the column-major view of its transpose,
so the plans avoid transposing copies: the LU factors of ``a^T`` solve ``a x = b`` with ``getrs``'s
``trans='T'``; a Hermitian ``a`` read through its transpose is ``conj(a)``, whose Cholesky factors solve
``a x = b`` for ``conj(x)`` from ``conj(b)``, or which becomes ``a`` again when it is conjugated while copied.
The plans read only the lower triangle of ``a`` for Cholesky, whatever the layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import errors
from ..._core.layout import dense_strides
from ..._core.overlap import self_overlapping as overlapping  # (the solvers' name for it)
from ._options import DirectSolverMatrixType

__all__ = ["DTYPES", "Geometry", "geometry", "matrix_order", "FactorLayout", "factor_layout", "RhsLayout",
           "rhs_layout", "x_perm", "staging_perm", "batch_offsets", "overlapping", "BATCHED_UP_TO", "KERNEL_UP_TO",
           "choose_batch_method", "THREADS_FROM", "cpu_threads", "SingularMatrixError", "IllConditionedWarning",
           "problem_label", "check_infos", "ill_conditioned"]

DTYPES = ("float32", "float64", "complex64", "complex128")


# ----------------------------------------------------------------------------------------------- shapes
@dataclass(frozen=True)
class Geometry:
    """One problem set: ``count`` systems (``batch_shape``) of order ``n`` with ``nrhs`` right-hand sides each;
    ``vector``: b (and x) hold one vector per system (shape ``(*batch, n)``) rather than a matrix
    ``(*batch, n, nrhs)``; ``kind``: 'lu' or 'cholesky'."""

    n: int
    nrhs: int
    batch_shape: tuple
    vector: bool
    dtype: str
    kind: str

    @property
    def count(self) -> int:
        return math.prod(self.batch_shape)

    @property
    def x_shape(self) -> tuple:
        return self.batch_shape + ((self.n,) if self.vector else (self.n, self.nrhs))

    @property
    def empty(self) -> bool:
        """Nothing to compute: no system, or systems of order 0, or no right-hand side."""
        return self.count == 0 or self.n == 0 or self.nrhs == 0

    @property
    def complex(self) -> bool:
        return self.dtype.startswith("complex")


def geometry(a_shape, a_dtype: str, b_shape, b_dtype: str, matrix_type=DirectSolverMatrixType.GENERAL) -> Geometry:
    """The problem set of ``a @ x = b`` (a: ``(*batch, n, n)``; b: ``(*batch, n)`` or ``(*batch, n, k)``, the
    batch shapes equal); ValueError/TypeError naming what is wrong."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if len(a_shape) < 2 or a_shape[-1] != a_shape[-2]:
        raise ValueError(f"a must be a square matrix (n, n) or a batch of them (*batch, n, n); got shape {a_shape}")
    if a_dtype not in DTYPES:
        raise TypeError(f"a has dtype {a_dtype}; the direct solver supports {', '.join(DTYPES)}")
    if b_dtype != a_dtype:
        raise TypeError(f"b has dtype {b_dtype} but a has {a_dtype}; pass a and b of one dtype")
    n, batch = a_shape[-1], a_shape[:-2]
    if b_shape == batch + (n,):
        vector, nrhs = True, 1
    elif len(b_shape) == len(batch) + 2 and b_shape[:-1] == batch + (n,):
        vector, nrhs = False, b_shape[-1]
    else:
        raise ValueError(
            f"b of shape {b_shape} does not fit a of shape {a_shape}: b must have shape {batch + (n,)} (one vector "
            f"per system) or {batch + (n, 'k')} (k right-hand sides per system)")
    mt = matrix_type
    if mt == DirectSolverMatrixType.SPD and a_dtype.startswith("complex"):
        raise ValueError("matrix_type='spd' is for real matrices; a complex positive definite matrix is Hermitian: "
                         "use matrix_type='hpd'")
    kind = "lu" if mt == DirectSolverMatrixType.GENERAL else "cholesky"
    return Geometry(n, nrhs, batch, vector, a_dtype, kind)


# ------------------------------------------------------------------------------------------------ layout
def matrix_order(rows: int, cols: int, s_row: int, s_col: int):
    """('F', ld) when a rows x cols matrix with element strides (s_row, s_col) is column-major for LAPACK (its
    column stride is the leading dimension), ('C', ld) when it is row-major (the column-major view of its
    transpose, leading dimension its row stride), else None (it needs a copy first)."""
    if (rows <= 1 or s_row == 1) and (cols <= 1 or s_col >= max(1, rows)):
        return "F", (s_col if cols > 1 else max(1, rows))
    if (cols <= 1 or s_col == 1) and (rows <= 1 or s_row >= max(1, cols)):
        return "C", (s_row if rows > 1 else max(1, cols))
    return None


def batch_offsets(batch_shape, batch_strides) -> np.ndarray:
    """Element offsets of each system's matrix, in C order of the batch indices (problem p is
    ``np.unravel_index(p, batch_shape)``)."""
    offs = np.zeros(batch_shape, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(batch_shape, batch_strides)):
        shape = [1] * len(batch_shape)
        shape[axis] = size
        offs = offs + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return offs.reshape(-1)


def x_perm(geom: Geometry) -> tuple:
    """The memory order of x (and of b's staging copies): batch axes outermost, each matrix column-major."""
    nb = len(geom.batch_shape)
    return tuple(range(nb + 1)) if geom.vector else tuple(range(nb)) + (nb + 1, nb)


@dataclass(frozen=True)
class FactorLayout:
    """Where and how a plan factorizes.

    ``in_place``: in the matrices it is given (the caller's ``a`` with inplace_a, or a staging copy the plan
    owns); else in a factor buffer of the plan, dense, whose matrices have memory order ``order`` ('F': the
    matrix itself; 'C': LAPACK sees its transpose), filled from ``a`` before each factorization (conjugated when
    ``conj_in``) and, with ``copy_back`` (inplace_a through the buffer), copied into ``a`` after it. ``ld``: the
    leading dimension LAPACK reads. ``trans``: getrs's 'N' or 'T'; ``uplo``: potrf/potrs's 'L' or 'U';
    ``conj_rhs``: solve for conj(x) from conj(b) (a complex Cholesky of the transpose, in place).
    ``note``: the copies, for the log."""

    in_place: bool
    order: str
    ld: int
    trans: str = "N"
    uplo: str = "L"
    conj_in: bool = False
    copy_back: bool = False
    conj_rhs: bool = False
    note: str = ""


def _natural(s_row: int, s_col: int) -> str:
    return "F" if abs(s_row) < abs(s_col) else "C"


def factor_layout(geom: Geometry, a_strides, inplace_a: bool, can_conj: bool, scratch: bool = False) -> FactorLayout:
    """The factorization layout for an ``a`` of element strides ``a_strides``. ``can_conj``: the engine's side
    can conjugate while copying (the host; GPU plans use a transposing copy instead). ``scratch``: ``a`` is a
    dense copy the plan owns (a staging mirror): factorize it where it is."""
    n, lu, cplx = geom.n, geom.kind == "lu", geom.complex
    found = matrix_order(n, n, a_strides[-2], a_strides[-1])
    order = found[0] if found else None

    def transposed(in_place: bool, ld: int, conj_in: bool = False, note: str = "") -> FactorLayout:
        # LAPACK sees a^T: LU factors of a^T (getrs 'T'), or the Cholesky of conj(a) through its upper triangle
        if lu:
            return FactorLayout(in_place, "C", ld, trans="T", note=note)
        return FactorLayout(in_place, "C", ld, uplo="U", conj_in=conj_in, conj_rhs=cplx and not conj_in, note=note)

    if scratch:
        if order == "F":
            return FactorLayout(True, "F", found[1])
        return transposed(True, found[1])
    if inplace_a:
        if order == "F":
            return FactorLayout(True, "F", found[1])
        if order == "C" and not lu and (can_conj or not cplx):
            return transposed(True, found[1])
        return FactorLayout(False, "F", max(1, n), copy_back=True, note=(
            "inplace_a: a is factorized in a column-major copy (a transposing copy: its layout is not "
            "column-major) and the factors are copied back into a"))
    own = order or _natural(a_strides[-2], a_strides[-1])
    kept = "a is copied into the plan's factor buffer (it is never written without inplace_a)"
    if own == "F":
        return FactorLayout(False, "F", max(1, n), note=kept)
    if lu or not cplx:
        return transposed(False, max(1, n), note=kept)
    if can_conj:
        return transposed(False, max(1, n), conj_in=True, note=kept + ", conjugated (a Hermitian matrix read "
                                                                        "through its row-major transpose)")
    return FactorLayout(False, "F", max(1, n), note="a is copied into a column-major factor buffer (a transposing "
                                                    "copy: the Hermitian matrix is not column-major)")


@dataclass(frozen=True)
class RhsLayout:
    """Where the solve runs: ``in_place`` in the matrices it is given (the caller's ``b`` with inplace_b, or a
    staging copy the plan owns), else in x, a new array of memory order ``x_perm`` that b is copied into (and,
    with ``copy_back``, copied into b after the solve). ``ld``: LAPACK's leading dimension of b/x."""

    in_place: bool
    ld: int
    copy_back: bool = False
    note: str = ""


def rhs_layout(geom: Geometry, b_strides, inplace_b: bool, scratch: bool = False) -> RhsLayout:
    """The layout of the solve for a ``b`` of element strides ``b_strides``."""
    n = geom.n
    if geom.vector:
        found = ("F", max(1, n)) if (n <= 1 or b_strides[-1] == 1) else None
    else:
        found = matrix_order(n, geom.nrhs, b_strides[-2], b_strides[-1])
    column_major = found is not None and found[0] == "F"
    if scratch or (inplace_b and column_major):
        return RhsLayout(True, found[1])
    if inplace_b:
        return RhsLayout(False, max(1, n), copy_back=True, note=(
            "inplace_b: b is solved in a column-major copy (its layout is not column-major) and the solution is "
            "copied back into b"))
    return RhsLayout(False, max(1, n))


def staging_perm(geom: Geometry, a_strides, inplace_a: bool) -> tuple:
    """The memory order of a's staging copy across the bus: a's own (C or F matrices, so the copy is one block)
    unless the factors must come back as LU factors of a itself (inplace_a) or the matrix is complex Hermitian
    (neither may be read through its transpose without a conjugation): then column-major."""
    nb = len(geom.batch_shape)
    c_order = tuple(range(nb + 2))
    f_order = tuple(range(nb)) + (nb + 1, nb)
    found = matrix_order(geom.n, geom.n, a_strides[-2], a_strides[-1])
    order = found[0] if found else _natural(a_strides[-2], a_strides[-1])
    if order == "F" or (inplace_a and geom.kind == "lu") or (geom.kind == "cholesky" and geom.complex):
        return f_order
    return c_order


def dense_offsets(geom: Geometry, per_problem: int) -> np.ndarray:
    """Element offsets of the problems of a dense batch whose matrices hold ``per_problem`` elements each."""
    return np.arange(geom.count, dtype=np.int64) * per_problem


def dense_x_strides(geom: Geometry) -> tuple:
    return dense_strides(geom.x_shape, x_perm(geom))


# ---------------------------------------------------------------------------------------- how batches run
#: GPU: the largest order n for which a batch (count >= 2) runs the pointer-array batched routines (cuBLAS
#: getrfBatched/getrsBatched for LU, cuSOLVER potrfBatched/potrsBatched for Cholesky) rather than one 64-bit
#: cuSOLVER call per problem. H200, 2026-12-01 (`dense/gpu-batch-method`, quick sweep to n = 128): batched was
#: 48x-2540x faster than the loop at every order measured, LU and Cholesky; the full sweep goes to 256.
BATCHED_UP_TO = {"lu": 128, "cholesky": 128}


#: GPU: the largest order n for which 'auto' runs cumath's own kernels (``_backends/small_lu.py``: a warp per system,
#: a row per lane, so 32 at most; LU and Cholesky), for one system or a batch. Expected on the H200 for 16,384 systems of order 32
#: in float32: one read and one write of the factors (~35 us at ~4 TB/s, plus the copy of a into the plan's
#: buffer) and ~900 shuffles per system (~50 us on 132 SMs), against ~480 us for cuBLAS's batched routines and the
#: separate check pass; orders 33-64 would need two rows per lane (128-512 registers for complex128) or shared
#: memory, and stay on the libraries until measured.
KERNEL_UP_TO = {"lu": 32, "cholesky": 32}


def choose_batch_method(kind: str, n: int, count: int, requested: str = "auto", kernel: bool = False) -> str:
    """'kernel', 'loop' or 'batched' for a GPU problem set (``requested``: the option; 'auto' reads KERNEL_UP_TO
    where ``kernel`` allows the kernels (the environment variable CUMATH_SOLVER_KERNEL), then BATCHED_UP_TO)."""
    if requested != "auto":
        return requested
    if kernel and n <= KERNEL_UP_TO[kind]:
        return "kernel"
    return "batched" if count >= 2 and n <= BATCHED_UP_TO[kind] else "loop"


#: CPU: which batches split across threads, each calling LAPACK with one thread (the calling thread takes parts
#: too); others run in the calling thread (one system: on LAPACK's own threads). With the compiled extension a
#: part is one native call (``run_table``: the GIL released once per part): factorizations of order at least
#: ``table_min_n`` whose batch does at least ``table_work`` = count n^3, solves alone at least ``solve_work`` =
#: count n^2 nrhs. Measured on the 2-core VM, quiet (2 threads / the calling thread, float64, one right-hand
#: side, interleaved medians of 15 rounds): factor+solve order 8: 1.3-2.1 (memory-bound, never), order 16: 1.26
#: (x32), 0.85 (x256), 0.63 (x2048); order 32: 1.04 (x32), 0.76 (x256); order 64: 0.86 (x32), 0.63 (x2048).
#: Solves alone: 0.5M count n^2: 1.06-1.15, 1M: 0.66-0.83, 2M and up: 0.55-0.72; under 0.3M: 1.5-7 (the ~0.2 ms
#: of handing parts to a worker). Without the extension every call takes the GIL back (``min_n``, ``min_count``:
#: order 8 and 16 ran 1.5-1.7 slower on threads, order 32 0.72-0.87, 64 and up 0.58-0.73; solves alone only where
#: one system's n^2 nrhs reaches min_n^3). On the H200 host (16 cores, 16 threads against the calling thread,
#: batches of 2e8 / n^3 systems) order 8 ran 2.29x slower, 16 1.18x slower, 32 0.56x, 48-256 0.32-0.40x: order 16
#: gains on 2 threads and loses on 16, so the table rule starts at 32 like the other. When another process
#: holds a core the threads lose their gain.
THREADS_FROM = {"min_n": 32, "min_count": 16, "table_min_n": 32, "table_work": 1 << 21, "solve_work": 1 << 20}


def cpu_threads(n: int, count: int, cpus: int, named: int | None = None, nrhs: int | None = None,
                table: bool = False) -> int:
    """Worker threads for a CPU batch of ``count`` systems of order ``n`` (1: the calling thread only): for their
    factorizations, or with ``nrhs`` for their solves alone; ``table``: the calls run as one native call per
    part (``run_table``), so the batch's total work decides (see THREADS_FROM). ``named``: the caller's
    ExecutionCPU(num_threads=...), honoured for batches."""
    if count < 2:
        return 1
    if named is not None:
        return max(1, min(named, count))
    t = THREADS_FROM
    if table:
        if nrhs is None:
            go = n >= t["table_min_n"] and count * n ** 3 >= t["table_work"]
        else:
            go = count * n * n * nrhs >= t["solve_work"]
    else:
        work = n ** 3 if nrhs is None else n * n * nrhs
        go = count >= t["min_count"] and work >= t["min_n"] ** 3
    return max(1, min(cpus, count)) if go else 1


# ------------------------------------------------------------------------------------------ failures
class SingularMatrixError(errors.SingularMatrixError, np.linalg.LinAlgError):
    """The factorization of a system failed: a zero pivot (LU: ``a`` is singular) or a leading minor that is not
    positive (Cholesky: ``a`` is not positive definite). It is both a :class:`cumath.errors.SingularMatrixError`
    and a ``numpy.linalg.LinAlgError`` (what NumPy and SciPy raise), so code written for either catches it.

    Attributes: ``problem`` (the system's batch index: a tuple for implicit batches, an int for explicit ones,
    None for a single system), ``info`` (the library's ``info``, 1-based), ``pivot`` (the 0-based diagonal
    position: ``info - 1``), ``count`` (how many systems of the batch failed)."""

    def __init__(self, message: str, problem=None, info: int = 0, count: int = 1):
        super().__init__(message)
        self.problem, self.info, self.pivot, self.count = problem, info, info - 1, count


class IllConditionedWarning(RuntimeWarning):
    """A factorization succeeded but its pivots are so uneven that the system is singular to working precision:
    the smallest pivot of its LU factorization is below the dtype's precision times the largest (the squares of
    the Cholesky pivots), or the system is not finite: a NaN or inf anywhere in ``a`` or in the part of its
    factor the factorization wrote (checked alike on the CPU and the GPU; such a system warns rather than raising
    SingularMatrixError even where the library stopped at the NaN). The solution may be inaccurate."""


def problem_label(problem) -> str:
    """How a message names one system: 'a' (no batch), 'a[2, 1]' (implicit batch), 'a[3]' (explicit batch)."""
    if problem is None or problem == ():
        return "a"
    if isinstance(problem, tuple):
        return f"a[{', '.join(str(i) for i in problem)}]"
    return f"a[{problem}]"


def _more(bad: int, count: int, verb: str) -> str:
    """The tail of a message about the first of ``bad`` systems of a batch of ``count``."""
    return f" ({bad} of the {count} systems of the batch{verb} this is the first)" if bad > 1 else ""


def _index(batch_shape, p: int):
    return tuple(int(i) for i in np.unravel_index(p, batch_shape)) if batch_shape else None


def check_infos(infos, geom: Geometry, routine: str, library_error=errors.LAPACKError, problem=None,
                pivots=None, input_finite=None) -> None:
    """Raise for the first system whose ``info`` (an int array, one per system) is not 0: SingularMatrixError
    for a failed factorization, ``library_error`` for a refused argument (a bug of the plan). ``problem``:
    the index an explicit batch gives its single system (None: from the batch shape). ``pivots`` (as
    ``ill_conditioned`` takes them): a system whose factor is not finite is not reported as singular here, but by
    ``ill_conditioned`` as non-finite, on every engine alike (LAPACK's potrf stops at a NaN pivot with info > 0
    where a GPU library may go on: the NaN, not the stop, is what the caller needs to hear about).
    ``input_finite()``: one bool per system, whether ``a`` itself was finite; asked only when a failed system's
    factor is not finite, because a failed factorization can write NaN itself (cuSOLVER's Cholesky takes the
    square root of the negative pivot of a matrix that is not positive definite): such a system is reported as
    not positive definite / singular, not as non-finite."""
    infos = np.asarray(infos).reshape(-1)
    if pivots is not None:
        nonfinite = ~np.isfinite(np.asarray(pivots).reshape(geom.count, -1)).all(axis=1)
        suppress = nonfinite & (infos > 0)
        if suppress.any() and input_finite is not None:
            suppress &= ~np.asarray(input_finite(), dtype=bool).reshape(-1)
        if suppress.any():
            infos = np.where(suppress, 0, infos)
    bad = np.flatnonzero(infos)
    if bad.size == 0:
        return
    first = int(bad[0])
    info = int(infos[first])
    where = problem if problem is not None else _index(geom.batch_shape, first)
    if info < 0:
        raise library_error(info, f"argument {-info} of {routine} is invalid",
                            f"{problem_label(where)} of order {geom.n}, {geom.nrhs} right-hand side(s)")
    label = problem_label(where)
    if geom.kind == "lu":
        msg = (f"{label} is singular: U[{info - 1}, {info - 1}] of its LU factorization (P a = L U) is exactly zero "
               f"({routine} info {info}); the system has no unique solution")
    else:
        msg = (f"{label} is not positive definite: its leading minor of order {info} is not positive ({routine} "
               f"info {info}); use matrix_type='general' (LU) for matrices that are not positive definite")
    raise SingularMatrixError(msg + _more(bad.size, infos.size, " failed;"), where, info, int(bad.size))


def ill_conditioned(pivots, geom: Geometry, problem=None) -> str | None:
    """The warning for factorizations whose pivots (``pivots``: magnitudes of the factors' diagonals, one row
    per system, or just the smallest and largest of each) are uneven beyond the dtype's precision or not finite;
    None when all are fine."""
    pivots = np.asarray(pivots).reshape(geom.count, -1)
    if pivots.size == 0:
        return None
    power = 2 if geom.kind == "cholesky" else 1  # the pivots of a = L L^H are the squares of L's diagonal
    eps = float(np.finfo(geom.dtype).eps)
    low, high = float(pivots.min()), float(pivots.max())
    if np.isfinite(high) and high > 0 and (low / high) ** power >= eps:  # every system's ratio is at least this
        return None
    lo, hi = pivots.min(axis=1), pivots.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (lo / hi) ** power
    flagged = np.flatnonzero(~(ratio >= eps) | ~np.isfinite(hi))
    if flagged.size == 0:
        return None
    first = int(flagged[0])
    label = problem_label(problem if problem is not None else _index(geom.batch_shape, first))
    if not np.isfinite(hi[first]) or not np.isfinite(lo[first]):
        msg = (f"{label} has non-finite pivots (inf or NaN entries in a or its factors, or an overflow during the "
               f"factorization); the solution is not meaningful")
    else:
        msg = (f"{label} is numerically singular: the smallest pivot of its factorization is {ratio[first]:.1e} of "
               f"the largest, below the {geom.dtype} precision {eps:.1e}; the solution may be inaccurate")
    return msg + _more(flagged.size, geom.count, ";")
