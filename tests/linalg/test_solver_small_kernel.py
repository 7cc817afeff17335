"""The CUDA source of the small-system LU kernels (cumath/linalg/_solver/_backends/_small_kernels.py), compiled as
C++ for the CPU with the pivot kernels' shim (test_solver_pivot_kernel.SHIM and compile_on_host: each block's threads run at once,
shuffles are exchanges through memory) and run there against NumPy/SciPy in float64: the factors (P a = L U),
the pivot order (LAPACK's getrf's, ties included), getrf's ``info``, the verdict word and the pivot magnitudes,
NaN and inf, the fused and the separate solve, column- and row-major storage, leading dimensions above n,
batches of one and batches whose last warps have no system. Skipped without a C++20 compiler."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

scipy_linalg = pytest.importorskip("scipy.linalg")

from cumath.linalg._solver._backends import _small_kernels as K  # noqa: E402
from test_solver_pivot_kernel import compile_on_host  # noqa: E402

_SUFFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
DTYPES = tuple(_SUFFIX)

LAUNCHER = r"""
struct cumath_small_args {
    const char* s; const long long* s_off; long long s_step, srs, scs;
    char* a; const long long* a_off; long long a_step, rs, cs; int n, count; int* perm; int* info; char* x;
    const long long* x_off; long long x_step, ldx; const char* b; const long long* b_off; long long b_step, brs, bcs;
    int nrhs, solve; double eps; unsigned long long flag;
    double* out; unsigned long long* flagged;
};
#define CUMATH_HOST(T, suffix, N) \
    extern "C" void cumath_host_lu_##suffix##N(int gx, int block, const cumath_small_args* x) \
    { cumath_run([x] { cumath_small_lu<T, N>(x->s, x->s_off, x->s_step, x->srs, x->scs, x->a, x->a_off, \
                                             x->a_step, x->rs, x->cs, x->n, x->count, x->perm, \
                                             x->info, x->x, x->x_off, x->x_step, x->ldx, x->b, x->b_off, x->b_step, \
                                             x->brs, x->bcs, x->nrhs, x->solve, x->eps, \
                                             x->flag, x->out, x->flagged); }, gx, 1, block); } \
    extern "C" void cumath_host_lus_##suffix##N(int gx, int block, const cumath_small_args* x) \
    { cumath_run([x] { cumath_small_lus<T, N>(x->a, x->a_off, x->a_step, x->rs, x->cs, x->n, x->count, x->perm, \
                                              x->x, x->x_off, x->x_step, x->ldx, x->b, x->b_off, x->b_step, x->brs, \
                                              x->bcs, x->nrhs); }, gx, 1, block); }
#define CUMATH_HOST_CHOL(T, suffix, N) \
    extern "C" void cumath_host_chol_##suffix##N(int gx, int block, const cumath_small_args* x) \
    { cumath_run([x] { cumath_small_chol<T, N>(x->s, x->s_off, x->s_step, x->srs, x->scs, x->a, x->a_off, \
                                             x->a_step, x->rs, x->cs, x->n, x->count, x->perm, \
                                             x->info, x->x, x->x_off, x->x_step, x->ldx, x->b, x->b_off, x->b_step, \
                                             x->brs, x->bcs, x->nrhs, x->solve, x->eps, \
                                             x->flag, x->out, x->flagged); }, gx, 1, block); } \
    extern "C" void cumath_host_chols_##suffix##N(int gx, int block, const cumath_small_args* x) \
    { cumath_run([x] { cumath_small_chols<T, N>(x->a, x->a_off, x->a_step, x->rs, x->cs, x->n, x->count, x->perm, \
                                              x->x, x->x_off, x->x_step, x->ldx, x->b, x->b_off, x->b_step, x->brs, \
                                              x->bcs, x->nrhs); }, gx, 1, block); }
#define CUMATH_HOST_ORDERS(T, suffix) \
    CUMATH_HOST(T, suffix, 4) CUMATH_HOST(T, suffix, 8) CUMATH_HOST(T, suffix, 16) CUMATH_HOST(T, suffix, 32) \
    CUMATH_HOST_CHOL(T, suffix, 4) CUMATH_HOST_CHOL(T, suffix, 8) CUMATH_HOST_CHOL(T, suffix, 16) \
    CUMATH_HOST_CHOL(T, suffix, 32)
CUMATH_HOST_ORDERS(float, s)
CUMATH_HOST_ORDERS(double, d)
CUMATH_HOST_ORDERS(cumath_c32, c)
CUMATH_HOST_ORDERS(cumath_c64, z)
"""


class _Args(ctypes.Structure):
    _fields_ = [("s", ctypes.c_void_p), ("s_off", ctypes.c_void_p), ("s_step", ctypes.c_longlong),
                ("srs", ctypes.c_longlong), ("scs", ctypes.c_longlong), ("a", ctypes.c_void_p), ("a_off", ctypes.c_void_p), ("a_step", ctypes.c_longlong),
                ("rs", ctypes.c_longlong), ("cs", ctypes.c_longlong), ("n", ctypes.c_int), ("count", ctypes.c_int),
                ("perm", ctypes.c_void_p), ("info", ctypes.c_void_p), ("x", ctypes.c_void_p),
                ("x_off", ctypes.c_void_p), ("x_step", ctypes.c_longlong), ("ldx", ctypes.c_longlong),
                ("b", ctypes.c_void_p), ("b_off", ctypes.c_void_p), ("b_step", ctypes.c_longlong),
                ("brs", ctypes.c_longlong), ("bcs", ctypes.c_longlong), ("nrhs", ctypes.c_int), ("solve", ctypes.c_int), ("eps", ctypes.c_double),
                ("flag", ctypes.c_ulonglong), ("out", ctypes.c_void_p), ("flagged", ctypes.c_void_p)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return compile_on_host(tmp_path_factory, "small_lu", K.SMALL_SOURCE + LAUNCHER, "the small-system kernels' source",
                           "-O1")


class Run:
    """One launch on ``mats`` (count, n, n) stored column-major ('F') or row-major ('C', the kernel reads the
    transpose's storage as a) with leading dimension ``ld``, and right-hand sides ``b`` (count, n, k) in x
    (column-major, leading dimension ``ldx``): the kernels' outputs as NumPy arrays."""

    def __init__(self, lib, mats, b=None, *, order="F", ld=None, ldx=None, solve=True, block=128, spread=False,
                 source=None, b_source=None, kind="lu"):
        count, n = mats.shape[0], mats.shape[1]
        dtype = mats.dtype
        self.lib, self.n, self.count, self.dtype, self.order, self.block = lib, n, count, dtype, order, block
        self.stem = "lu" if kind == "lu" else "chol"
        self.ld = ld = n if ld is None else ld
        # spread: system p at slot count - p (an offsets array) rather than at slot p (a step)
        slots = np.arange(count, 0, -1) if spread else np.arange(count)
        self.store = np.zeros((count + 1 if spread else count, n, ld), dtype)  # [slot, major, minor]
        self.store[slots, :, :n] = np.swapaxes(mats, 1, 2) if order == "F" else mats
        self.rs, self.cs = (1, ld) if order == "F" else (ld, 1)
        self.a_offsets = slots.astype(np.int64) * (n * ld * dtype.itemsize)
        self.b = np.zeros((count, n, 1), dtype) if b is None else b
        k = self.b.shape[2]
        self.ldx = ldx = n if ldx is None else ldx
        self.xs = np.zeros((count, k, ldx), dtype)  # [p, column, row]
        self.xs[:, :, :n] = np.swapaxes(self.b, 1, 2)
        self.perm = np.full((count, n), -1, np.int32)
        self.info = np.full(count, -7, np.int32)
        self.out = np.full((count, 2), -1.0)
        self.flagged = np.zeros(1, np.uint64)
        self._keep = []
        # source: a separate array (count, n, n) of any strides that the kernel reads a from (else the storage)
        self.source, self.b_source = source, b_source
        if b_source is not None:
            self.xs[:] = np.nan  # every entry of x must be written
        if source is not None:
            self.store[:] = np.nan  # every entry of the factors must be written

        args = self.args(solve)
        fn = getattr(lib, f"cumath_host_{self.stem}_{_SUFFIX[str(dtype)]}{K.padded_order(n)}")
        fn(self.grid, block, ctypes.byref(args))

    @property
    def grid(self):
        return -(-self.count // (self.block // 32))

    def args(self, solve):
        a_off = 0
        if not np.array_equal(self.a_offsets, np.arange(self.count) * self.n * self.ld * self.dtype.itemsize):
            a_off = self.a_offsets.ctypes.data
        step = self.n * self.ld * self.dtype.itemsize if not a_off else 0
        src = (self.store.ctypes.data, a_off, step, self.rs, self.cs)
        if self.source is not None:
            item = self.dtype.itemsize
            st = [v // item for v in self.source.strides]
            offs = np.arange(self.count, dtype=np.int64) * self.source.strides[0]
            self._keep.append(offs)
            src = (self.source.ctypes.data, offs.ctypes.data, 0, st[1], st[2])
        args = _Args(*src, self.store.ctypes.data, a_off, step, self.rs, self.cs, self.n, self.count, self.perm.ctypes.data,
                     self.info.ctypes.data, self.xs.ctypes.data, 0, self.xs[0].nbytes, self.ldx, *self.b_args(),
                     self.xs.shape[1], int(solve), float(np.finfo(self.dtype).eps), K.FLAG, self.out.ctypes.data,
                     self.flagged.ctypes.data)
        self._keep.append(args)
        return args

    def b_args(self):
        """(b, b_off, b_step, brs, bcs): x itself, or the separate array ``b_source`` of its own strides."""
        if self.b_source is None:
            return self.xs.ctypes.data, 0, self.xs[0].nbytes, 1, self.ldx
        st = [v // self.dtype.itemsize for v in self.b_source.strides]
        offs = np.arange(self.count, dtype=np.int64) * self.b_source.strides[0]
        self._keep.append(offs)
        return self.b_source.ctypes.data, offs.ctypes.data, 0, st[1], st[2] if len(st) > 2 else 0

    def solve_again(self, b, separate=False):
        """The separate solve kernel on the kept factors, for new right-hand sides ``b`` (count, n, k): copied
        into x, or (``separate``) read where they are."""
        assert b.shape[2] == self.xs.shape[1]
        if separate:
            self.b_source = b
            self.xs[:] = np.nan
        else:
            self.b_source = None
            self.xs[:, :, :self.n] = np.swapaxes(b, 1, 2)
        fn = getattr(self.lib, f"cumath_host_{self.stem}s_{_SUFFIX[str(self.dtype)]}{K.padded_order(self.n)}")
        fn(self.grid, self.block, ctypes.byref(self.args(False)))
        return self.x

    @property
    def x(self):
        return np.swapaxes(self.xs[:, :, :self.n], 1, 2)

    def factors(self, p):
        """(L, U) of system p, as a matrix in a's orientation."""
        base = int(self.a_offsets[p]) // (self.n * self.ld * self.dtype.itemsize)
        m = self.store[base][:, :self.n]
        f = m.T if self.order == "F" else m
        return np.tril(f, -1) + np.eye(self.n), np.triu(f)


def random_system(rng, count, n, dtype, k=1):
    a = rng.standard_normal((count, n, n))
    b = rng.standard_normal((count, n, k))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((count, n, n))
        b = b + 1j * rng.standard_normal((count, n, k))
    return a.astype(dtype), b.astype(dtype)


def assert_solved(a, b, x):
    """x solves a x = b to the dtype's precision (the bound grows with n and a's condition number)."""
    a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    ref = np.linalg.solve(a64, b.astype(a64.dtype))
    eps = np.finfo(a.dtype).eps
    for p in range(a.shape[0]):
        err = np.linalg.norm(x[p] - ref[p]) / np.linalg.norm(ref[p])
        assert err <= 20 * a.shape[1] * eps * np.linalg.cond(a64[p]), (p, err)


def lapack_perm(a64):
    """The row order of P a = L U by LAPACK's getrf (its swaps applied in turn)."""
    n = a64.shape[0]
    _, piv, info = (scipy_linalg.lapack.zgetrf if a64.dtype.kind == "c" else scipy_linalg.lapack.dgetrf)(a64)
    order = np.arange(n)
    for k, pk in enumerate(piv):
        order[[k, pk]] = order[[pk, k]]
    return order, info


def check_factors(run, a):
    eps = np.finfo(a.dtype).eps
    for p in range(a.shape[0]):
        L, U = run.factors(p)
        a64 = a[p].astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        assert sorted(run.perm[p]) == list(range(run.n)), run.perm[p]
        resid = np.linalg.norm(a64[run.perm[p]] - L @ U) / np.linalg.norm(a64)
        assert resid <= 10 * run.n * eps, (p, resid)


# ------------------------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 16, 31, 32])
@pytest.mark.parametrize("dtype", DTYPES)
def test_factorize_and_solve(lib, dtype, n):
    """Random systems (pivoting on nearly every step): the factors, LAPACK's row order, x, a clear verdict."""
    rng = np.random.default_rng(n * 10 + DTYPES.index(dtype))
    count = 3
    a, b = random_system(rng, count, n, dtype)
    run = Run(lib, a, b)
    check_factors(run, a)
    assert_solved(a, b, run.x)
    assert list(run.info) == [0] * count
    for p in range(count):
        a64 = a[p].astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        if dtype in ("float64", "complex128"):
            assert list(run.perm[p]) == list(lapack_perm(a64)[0]), p
        d = np.abs(np.diagonal(run.factors(p)[1]))
        np.testing.assert_allclose(run.out[p], [d.min(), d.max()], rtol=1e-6)
    ill = [float(np.min(o) / np.max(o)) < np.finfo(dtype).eps for o in run.out]
    assert int(run.flagged[0]) == (K.FLAG if any(ill) else 0)


@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_layouts_leading_dimensions_and_separate_solves(lib, dtype, order):
    """Row-major storage (read as a through the transpose's storage), ld and ldx above n, several right-hand
    sides; then the solve kernel alone on the kept factors for new right-hand sides, twice."""
    rng = np.random.default_rng(11)
    n, count, k = 13, 4, 3
    a, b = random_system(rng, count, n, dtype, k)
    run = Run(lib, a, b, order=order, ld=n + 3, ldx=n + 2)
    check_factors(run, a)
    assert_solved(a, b, run.x)
    for seed in (1, 2):
        b2 = random_system(np.random.default_rng(seed), count, n, dtype, k)[1]
        assert_solved(a, b2, run.solve_again(b2))


def test_factorize_alone_leaves_x_and_solve_follows(lib):
    rng = np.random.default_rng(12)
    a, b = random_system(rng, 2, 9, "float64", 2)
    run = Run(lib, a, b, solve=False)
    np.testing.assert_array_equal(run.x, b)  # not written by a factorization alone
    assert_solved(a, b, run.solve_again(b))


@pytest.mark.parametrize("count,block", [(1, 32), (1, 128), (5, 64), (6, 128)])
def test_batches_and_warps_past_the_batch(lib, count, block):
    """A batch of one; blocks whose last warps have no system; systems at uneven offsets (an offsets array)."""
    rng = np.random.default_rng(count)
    a, b = random_system(rng, count, 6, "complex64", 2)
    run = Run(lib, a, b, block=block, spread=count > 1)
    check_factors(run, a)
    assert_solved(a, b, run.x)
    assert list(run.info) == [0] * count


def test_zero_leading_entry_needs_pivoting(lib):
    a = np.array([[[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 5.0]]])
    b = np.array([[[1.0], [2.0], [3.0]]])
    run = Run(lib, a, b)
    assert_solved(a, b, run.x)
    assert list(run.perm[0]) == list(lapack_perm(a[0])[0])
    assert run.info[0] == 0 and int(run.flagged[0]) == 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,col", [(1, 0), (3, 0), (7, 4), (32, 31), (32, 0)])
def test_zero_column_reports_getrf_info(lib, dtype, n, col):
    """A zero column j: the first zero pivot is step j (info j + 1, as getrf says); the other systems of the
    batch are unaffected; the verdict is set."""
    rng = np.random.default_rng(n + col)
    a, b = random_system(rng, 3, n, dtype)
    a[1, :, col] = 0
    run = Run(lib, a, b)
    assert list(run.info) == [0, col + 1, 0]
    assert lapack_perm(a[1].astype(np.complex128))[1] == col + 1
    assert int(run.flagged[0]) == K.FLAG
    assert run.out[1, 0] == 0.0
    assert_solved(a[[0, 2]], b[[0, 2]], run.x[[0, 2]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_duplicated_rows_are_singular_or_flagged(lib, dtype):
    """Rank deficient by two equal rows: getrf's info or a pivot ratio below the precision, always flagged."""
    rng = np.random.default_rng(4)
    n = 10
    a, b = random_system(rng, 2, n, dtype)
    a[0, 7] = a[0, 2]
    run = Run(lib, a, b)
    ratio = run.out[0, 0] / run.out[0, 1]
    assert run.info[0] > 0 or ratio < np.finfo(dtype).eps
    assert int(run.flagged[0]) == K.FLAG and run.info[1] == 0


def test_near_singular_is_flagged_not_failed(lib):
    rng = np.random.default_rng(5)
    n = 8
    a, b = random_system(rng, 2, n, "float64")
    u, s, vt = np.linalg.svd(a[1])
    s[-1] = s[0] * 1e-18
    a[1] = (u * s) @ vt
    run = Run(lib, a, b)
    assert list(run.info) == [0, 0]
    assert int(run.flagged[0]) == K.FLAG
    assert run.out[1, 0] / run.out[1, 1] < np.finfo(np.float64).eps
    assert_solved(a[:1], b[:1], run.x[:1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("n,i,j", [(1, 0, 0), (5, 4, 0), (5, 0, 4), (32, 31, 31), (32, 17, 3)])
def test_non_finite_entries_are_flagged(lib, dtype, value, n, i, j):
    """NaN or inf anywhere in a: that system's magnitudes are NaN, the verdict is set, the others are fine."""
    rng = np.random.default_rng(n + i + j)
    a, b = random_system(rng, 3, n, dtype)
    a[2, i, j] = value
    run = Run(lib, a, b)
    assert int(run.flagged[0]) == K.FLAG
    assert np.isnan(run.out[2]).all()
    assert np.isfinite(run.out[:2]).all()
    assert_solved(a[:2], b[:2], run.x[:2])


def test_ties_follow_lapacks_order(lib):
    """Equal magnitudes in a pivot column: the first row in LAPACK's order (after its swaps) is the pivot."""
    a = np.array([[[1.0, 2.0, 3.0, 4.0], [-4.0, 1.0, 0.0, 2.0], [4.0, 3.0, 1.0, 1.0], [-4.0, 0.5, 2.0, 1.0]]])
    b = np.ones((1, 4, 1))
    run = Run(lib, a, b)
    assert list(run.perm[0]) == list(lapack_perm(a[0])[0])
    assert_solved(a, b, run.x)


def test_orders_the_kernels_take():
    assert [K.padded_order(n) for n in (1, 4, 5, 8, 9, 16, 17, 32)] == [4, 4, 8, 8, 16, 16, 32, 32]
    with pytest.raises(ValueError, match="orders up to 32, not 33"):
        K.padded_order(33)
    assert K.kernel_names("complex128", 20) == ("cumath_small_lu<cumath_c64, 32>", "cumath_small_lus<cumath_c64, 32>")
    assert K.kernel_names("float32", 3, "cholesky") == ("cumath_small_chol<float, 4>", "cumath_small_chols<float, 4>")
    assert K.grid(1) == 1 and K.grid(4) == 1 and K.grid(5) == 2


@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_factorize_from_the_callers_matrix(lib, dtype, order):
    """a read from a separate array of its own strides (row-major, column-major, a strided view) and the factors
    written into the plan's storage: every entry of the storage written, the source untouched."""
    rng = np.random.default_rng(21)
    n, count = 11, 3
    a, b = random_system(rng, count, n, dtype, 2)
    for source in (a.copy(), np.swapaxes(np.swapaxes(a, 1, 2).copy(), 1, 2),
                   np.pad(a, ((0, 0), (0, 2), (0, 5)))[:, :n, :n]):
        keep = source.copy()
        run = Run(lib, a, b, order=order, ld=n + 1, source=source)
        np.testing.assert_array_equal(source, keep)
        assert np.isfinite(run.store[:, :, :n]).all()
        check_factors(run, a)
        assert_solved(a, b, run.x)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_right_hand_sides_read_where_they_are(lib, dtype):
    """b read from separate arrays of their own strides (row-major, a vector per system: column stride 0 with one
    column, a strided view) by the fused and the solve kernels; x written in full, b untouched."""
    rng = np.random.default_rng(31)
    n, count = 9, 3
    a, b = random_system(rng, count, n, dtype, 2)
    for source in (b.copy(), np.pad(b, ((0, 0), (0, 3), (0, 1)))[:, :n, :2], np.swapaxes(np.swapaxes(b, 1, 2).copy(),
                                                                                           1, 2)):
        keep = source.copy()
        run = Run(lib, a, b, b_source=source, ldx=n + 1)
        np.testing.assert_array_equal(source, keep)
        assert_solved(a, b, run.x)
        assert_solved(a, b, run.solve_again(source, separate=True))
    vec = rng.standard_normal((count, n)).astype(dtype)
    run = Run(lib, a, vec[:, :, None], b_source=vec[:, :, None])
    assert_solved(a, vec[:, :, None], run.x)


# ------------------------------------------------------------------------------------------------ Cholesky
def spd_system(rng, count, n, dtype, k=1):
    m, b = random_system(rng, count, n, dtype, k)
    a = m @ np.conj(np.swapaxes(m, 1, 2)) + n * np.eye(n)
    return a.astype(dtype), b


def lower_factor(run, p):
    base = int(run.a_offsets[p]) // (run.n * run.ld * run.dtype.itemsize)
    m = run.store[base][:, :run.n]
    return np.tril(m.T if run.order == "F" else m)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 31, 32])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(lib, dtype, n):
    """Positive definite systems: L L^H = a, x, L's diagonal magnitudes, a clear verdict; the upper triangle of
    a is never read (NaN there changes nothing)."""
    rng = np.random.default_rng(n * 7 + DTYPES.index(dtype))
    a, b = spd_system(rng, 3, n, dtype, 2)
    poisoned = a.copy()
    poisoned[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = np.nan
    run = Run(lib, poisoned, b, kind="cholesky", ld=n + 1)
    eps = np.finfo(dtype).eps
    for p in range(3):
        low = lower_factor(run, p)
        a64 = a[p].astype(np.complex128)
        assert np.linalg.norm(low @ np.conj(low.T) - a64) / np.linalg.norm(a64) <= 10 * n * eps
        d = np.abs(np.diagonal(low))
        np.testing.assert_allclose(run.out[p], [d.min(), d.max()], rtol=1e-6)
    assert list(run.info) == [0, 0, 0] and int(run.flagged[0]) == 0
    assert_solved(a, b, run.x)
    b2 = random_system(np.random.default_rng(1), 3, n, dtype, 2)[1]
    assert_solved(a, b2, run.solve_again(b2))


@pytest.mark.parametrize("order", ["F", "C"])
def test_cholesky_layouts_and_sources(lib, order):
    rng = np.random.default_rng(3)
    n = 10
    a, b = spd_system(rng, 2, n, "complex64", 3)
    run = Run(lib, a, b, kind="cholesky", order=order, source=np.swapaxes(np.swapaxes(a, 1, 2).copy(), 1, 2),
              b_source=b.copy())
    assert_solved(a, b, run.x)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("n,k", [(1, 0), (5, 0), (5, 3), (32, 31)])
def test_cholesky_not_positive_definite(lib, dtype, n, k):
    """A leading minor of order k + 1 that is not positive: potrf's info k + 1, the verdict set."""
    rng = np.random.default_rng(n + k)
    a, b = spd_system(rng, 3, n, dtype)
    sub = a[1, :k, :k].astype(np.complex128)
    v = a[1, k, :k].astype(np.complex128)
    schur = np.real(v @ np.linalg.solve(sub, v.conj())) if k else 0.0
    a[1, k, k] = schur - 1.0  # the pivot of step k becomes -1
    run = Run(lib, a, b, kind="cholesky")
    assert list(run.info) == [0, k + 1, 0]
    assert int(run.flagged[0]) == K.FLAG
    assert_solved(a[[0, 2]], b[[0, 2]], run.x[[0, 2]])


@pytest.mark.parametrize("place", [(4, 4), (6, 2), (0, 0)])
def test_cholesky_non_finite(lib, place):
    rng = np.random.default_rng(9)
    a, b = spd_system(rng, 2, 7, "float64")
    a[0][place] = np.nan
    run = Run(lib, a, b, kind="cholesky")
    assert int(run.flagged[0]) == K.FLAG and np.isnan(run.out[0]).all()
    assert run.info[0] > 0  # (potrf stops at a NaN pivot; the host reports it as non-finite)
