"""Distributed matmul and LU solver (ScaLAPACK) against NumPy on every rank's block and gathered on rank 0."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath.distributed.distribution import BlockCyclic, BlockNonCyclic, ProcessGrid, Slab
from mpi_helpers import TOL, gather0, piece, rel_err

DTYPES = [np.float64, np.float32, np.complex128, np.complex64]


def _grid(p, transposed=False):
    if p == 4:
        return ProcessGrid(shape=(2, 2), layout="F" if transposed else "C")
    return ProcessGrid(shape=(p, 1) if transposed else (1, p))


def _rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk", [(13, 11, 7), (17, 5, 19), (1, 3, 2)])
@pytest.mark.parametrize("kind", ["cyclic", "noncyclic", "cyclic-F"])
def test_matmul(world, dtype, mnk, kind):
    from cumath.distributed.linalg.advanced import Matmul

    r, p = world.rank, world.nranks
    m, n, k = mnk
    grid = _grid(p, kind.endswith("F"))
    dist = BlockNonCyclic(grid) if kind == "noncyclic" else BlockCyclic(grid, (3, 2))
    A, B, C = _rand((m, k), dtype, 1), _rand((k, n), dtype, 2), _rand((m, n), dtype, 3)
    c_local = piece(C, dist, r, p)
    c_before = c_local.copy()
    with Matmul(piece(A, dist, r, p), piece(B, dist, r, p), c_local, distributions=[dist] * 3, alpha=1.5,
                beta=-0.5) as mm:
        mm.plan()
        out = mm.execute()
        ref = 1.5 * A.astype(np.complex128) @ B - 0.5 * C
        tol = 50 * TOL[np.dtype(dtype)]
        assert out.dtype == dtype and rel_err(out, piece(ref, dist, r, p)) < tol
        np.testing.assert_array_equal(c_local, c_before)  # c is read, never written
        mm.reset_operands(a=piece(2 * A, dist, r, p), alpha=1.0, beta=0.0)
        assert rel_err(mm.execute(), piece(2 * A.astype(np.complex128) @ B, dist, r, p)) < tol
    full = gather0(world, out, dist, (m, n))
    if r == 0:
        assert rel_err(full, ref) < tol


@pytest.mark.parametrize("qa, qb", [((True, False), (False, False)), ((False, False), (True, True)),
                                    ((True, True), (False, True))])
def test_matmul_qualifiers(world, qa, qb):
    from cumath.distributed.linalg.advanced import matmul, matrix_qualifiers_dtype

    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (2, 2))
    A, B = _rand((9, 6), np.complex128, 4), _rand((6, 8), np.complex128, 5)
    q = np.zeros(2, dtype=matrix_qualifiers_dtype)
    q[0] = qa
    q[1] = qb

    def stored(X, t, c):
        X = np.conj(X) if c else X
        return np.ascontiguousarray(X.T) if t else X

    out = matmul(piece(stored(A, *qa), dist, r, p), piece(stored(B, *qb), dist, r, p), distributions=[dist] * 3,
                 qualifiers=q)
    assert rel_err(out, piece(A @ B, dist, r, p)) < 1e-12


@pytest.mark.parametrize("mode", ["auto", "pgemm"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_matmul_on_one_process_row_gathers_a_or_runs_pgemm(world, monkeypatch, mode, dtype):
    """On a grid of one process row the product gathers A and multiplies locally (unless CUMATH_DIST_MATMUL=pgemm);
    both paths give NumPy's result, with c, alpha and beta, uneven blocks and a first process that is not 0."""
    from cumath.distributed.linalg.advanced import Matmul

    monkeypatch.setenv("CUMATH_DIST_MATMUL", mode)
    r, p = world.rank, world.nranks
    grid = ProcessGrid(shape=(1, p))
    dist = BlockCyclic(grid, (4, 3), first_process=(0, p - 1))
    m, n, k = 23, 17, 29
    A, B, C = _rand((m, k), dtype, 11), _rand((k, n), dtype, 12), _rand((m, n), dtype, 13)
    with Matmul(piece(A, dist, r, p), piece(B, dist, r, p), piece(C, dist, r, p), distributions=[dist] * 3,
                alpha=0.75, beta=2.0) as mm:
        mm.plan()
        assert (mm._gathered is not None) == (mode == "auto")
        out = mm.execute()
        assert out.flags.f_contiguous and out.dtype == dtype
        ref = 0.75 * A.astype(np.complex128) @ B + 2.0 * C
        assert rel_err(out, piece(ref, dist, r, p)) < 50 * TOL[np.dtype(dtype)]
        mm.reset_operands(b=piece(-B, dist, r, p))
        assert rel_err(mm.execute(), piece(-0.75 * A.astype(np.complex128) @ B + 2.0 * C, dist, r, p)) < \
            50 * TOL[np.dtype(dtype)]


def test_matmul_keeps_pgemm_where_the_gather_does_not_apply(world, monkeypatch):
    from cumath.distributed.linalg.advanced import Matmul, matrix_qualifiers_dtype

    r, p = world.rank, world.nranks
    grid = ProcessGrid(shape=(1, p))
    d = BlockCyclic(grid, (2, 2))
    other = BlockCyclic(grid, (2, 3))  # C's columns in blocks of 3, B's of 2
    A, B = _rand((6, 8), np.float64, 1), _rand((8, 10), np.float64, 2)
    with Matmul(piece(A, d, r, p), piece(B, d, r, p), distributions=[d, d, other]) as mm:
        mm.plan()
        assert mm._gathered is None
        assert rel_err(mm.execute(), piece(A @ B, other, r, p)) < 1e-12
    q = np.zeros(2, dtype=matrix_qualifiers_dtype)
    q[0]["is_transpose"] = True
    with Matmul(piece(A.T.copy(), d, r, p), piece(B, d, r, p), distributions=[d] * 3, qualifiers=q) as mm:
        mm.plan()
        assert mm._gathered is None
    monkeypatch.setenv("CUMATH_DIST_MATMUL", "fastest")
    with Matmul(piece(A, d, r, p), piece(B, d, r, p), distributions=[d] * 3) as mm:
        with pytest.raises(ValueError, match="CUMATH_DIST_MATMUL='fastest' is not supported; use auto, pgemm"):
            mm.plan()


@pytest.mark.parametrize("epilog", ["RELU", "GELU", "BIAS", "RELU_BIAS"])
def test_matmul_epilogs(world, epilog):
    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul

    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (3, 3))
    A, B = _rand((10, 7), np.float64, 6), _rand((7, 9), np.float64, 7)
    bias = _rand((10,), np.float64, 8)
    rows = np.asarray(dist.indices((10, 9), r, p)[0], dtype=np.intp)
    ref = A @ B
    if "BIAS" in epilog:
        ref = ref + bias[:, None]
    if "RELU" in epilog:
        ref = np.maximum(ref, 0)
    if epilog == "GELU":
        ref = 0.5 * ref * (1 + np.tanh(np.sqrt(2 / np.pi) * (ref + 0.044715 * ref ** 3)))
    out = matmul(piece(A, dist, r, p), piece(B, dist, r, p), distributions=[dist] * 3,
                 epilog=MatmulEpilog[epilog], epilog_inputs={"bias": bias[rows]} if "BIAS" in epilog else None)
    assert rel_err(out, piece(ref, dist, r, p)) < 1e-12


def test_matmul_errors(world):
    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul

    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (2, 2))
    A = piece(_rand((4, 5), np.float64, 1), dist, r, p)
    B = piece(_rand((4, 5), np.float64, 2), dist, r, p)
    with pytest.raises(ValueError, match="do not multiply"):
        matmul(A, B, distributions=[dist] * 3)
    with pytest.raises(ValueError, match="distributions must be"):
        matmul(A, B, distributions=[dist])
    with pytest.raises(TypeError, match="BlockCyclic or BlockNonCyclic"):
        matmul(A, B, distributions=[Slab.X] * 3)
    with pytest.raises(ValueError, match="one ProcessGrid"):
        matmul(A, B, distributions=[dist, BlockCyclic(ProcessGrid(shape=(p, 1), layout="F"), (2, 2)), dist])
    Bt = piece(_rand((5, 4), np.float64, 2), dist, r, p)
    with pytest.raises(NotImplementedError, match="not supported by the CPU engine"):
        matmul(A, Bt, distributions=[dist] * 3, epilog=MatmulEpilog.DRELU)
    with pytest.raises(ValueError, match="needs epilog_inputs"):
        matmul(A, Bt, distributions=[dist] * 3, epilog=MatmulEpilog.BIAS)
    with pytest.raises(ValueError, match="beta was given without c"):
        matmul(A, Bt, distributions=[dist] * 3, beta=1.0)
    with pytest.raises(TypeError, match="supported dtypes"):
        matmul(A.astype(np.int32), Bt, distributions=[dist] * 3)


@pytest.mark.parametrize("mode", ["scalapack", "gather"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, nrhs, nb", [(17, 3, 4), (31, 1, 5), (8, 8, 8)])
def test_direct_solver(world, monkeypatch, mode, dtype, n, nrhs, nb):
    """ScaLAPACK's p?getrf/p?getrs and the solve gathered on rank 0 (the ranks share a node here) alike."""
    from cumath.distributed.linalg import DirectSolver

    monkeypatch.setenv("CUMATH_DIST_SOLVE", mode)
    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (nb, nb))
    M = _rand((n, n), dtype, 9) + n * np.eye(n, dtype=dtype)
    R = _rand((n, nrhs), dtype, 10)
    a_local = piece(M, dist, r, p)
    a_before = a_local.copy()
    with DirectSolver(a_local, piece(R, dist, r, p), distributions=[dist, dist]) as s:
        s.plan()
        assert (s._gathered is not None) == (mode == "gather")
        s.factorize()
        x = s.solve()
        ref = np.linalg.solve(M.astype(np.complex128), R)
        assert rel_err(x, piece(ref, dist, r, p)) < 100 * TOL[np.dtype(dtype)]
        s.reset_operands(b=piece(2 * R, dist, r, p))
        assert rel_err(s.solve(), piece(2 * ref, dist, r, p)) < 100 * TOL[np.dtype(dtype)]
    np.testing.assert_array_equal(a_local, a_before)
    full = gather0(world, x, dist, (n, nrhs))
    if r == 0:
        assert rel_err(full, ref) < 100 * TOL[np.dtype(dtype)]


@pytest.mark.parametrize("mode", ["scalapack", "gather"])
@pytest.mark.parametrize("trans", ["T", "C"])
@pytest.mark.parametrize("dtype", [np.complex128, np.float32])
def test_direct_solver_transposed(world, monkeypatch, mode, trans, dtype):
    """op(A) X = B with transpose 'T' or 'C', a vector b (a one-column b on 2 x 2 grids), uneven blocks and a new
    A factorized again."""
    from cumath.distributed.linalg import DirectSolver

    monkeypatch.setenv("CUMATH_DIST_SOLVE", mode)
    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p, transposed=True), (3, 3))
    n = 19
    M = _rand((n, n), dtype, 21) + n * np.eye(n, dtype=dtype)
    R = _rand((n,), dtype, 22)

    def op(X):
        return X.T if trans == "T" else X.conj().T

    vector = dist.process_grid.shape[1] == 1  # (a vector b needs every rank in the one process column)
    b_local = piece(R[:, None], dist, r, p)
    b_local = b_local.reshape(-1) if vector else b_local
    with DirectSolver(piece(M, dist, r, p), b_local, distributions=[dist, dist],
                      options={"transpose": trans}) as s:
        s.plan()
        s.factorize()
        x = s.solve()
        assert x.shape == b_local.shape and x.dtype == dtype
        ref = np.linalg.solve(op(M.astype(np.complex128)), R)
        assert rel_err(x, piece(ref[:, None], dist, r, p).reshape(b_local.shape)) < 100 * TOL[np.dtype(dtype)]
        M2 = M + 2 * np.eye(n, dtype=dtype)
        s.reset_operands(a=piece(M2, dist, r, p))
        s.factorize()
        ref2 = np.linalg.solve(op(M2.astype(np.complex128)), R)
        assert rel_err(s.solve(), piece(ref2[:, None], dist, r, p).reshape(b_local.shape)) < \
            100 * TOL[np.dtype(dtype)]


@pytest.mark.parametrize("mode", ["scalapack", "gather"])
def test_direct_solver_singular_on_every_rank(world, monkeypatch, mode):
    """An exactly singular matrix raises SingularMatrixError on every rank, whichever engine factorizes."""
    from cumath.distributed.linalg import direct_solver
    from cumath.errors import SingularMatrixError

    monkeypatch.setenv("CUMATH_DIST_SOLVE", mode)
    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (3, 3))
    M = _rand((10, 10), np.complex64, 31)
    M[:, 4] = 0  # a zero column: U(5, 5) is exactly zero
    with pytest.raises(SingularMatrixError, match="singular"):
        direct_solver(piece(M, dist, r, p), piece(_rand((10, 2), np.complex64, 32), dist, r, p),
                      distributions=[dist, dist])


def test_direct_solver_engine_choice(world, monkeypatch):
    """auto gathers on rank 0 when it may use a core per rank (all ranks share this machine); a bad
    CUMATH_DIST_SOLVE is refused by name."""
    from cumath._core.execution import available_cpus
    from cumath.distributed.linalg import DirectSolver

    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (2, 2))
    M, R = _rand((6, 6), np.float64, 41) + 6 * np.eye(6), _rand((6, 1), np.float64, 42)
    with DirectSolver(piece(M, dist, r, p), piece(R, dist, r, p), distributions=[dist, dist]) as s:
        s.plan()
        cpus = world.communicator.bcast(available_cpus())
        assert (s._gathered is not None) == (cpus >= p)
        s.factorize()
        assert rel_err(s.solve(), piece(np.linalg.solve(M, R), dist, r, p)) < 1e-12
    monkeypatch.setenv("CUMATH_DIST_SOLVE", "fastest")
    with DirectSolver(piece(M, dist, r, p), piece(R, dist, r, p), distributions=[dist, dist]) as s:
        with pytest.raises(ValueError, match="CUMATH_DIST_SOLVE='fastest' is not supported; use auto, scalapack"):
            s.plan()


def test_direct_solver_errors(world):
    from cumath.distributed.linalg import DirectSolver, direct_solver
    from cumath.errors import InvalidStateError, SingularMatrixError

    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (2, 2))
    M = _rand((6, 6), np.float64, 1)
    M[3] = 0  # exactly singular: a zero row gives an exactly zero pivot
    R = _rand((6, 2), np.float64, 2)
    with pytest.raises(SingularMatrixError, match="singular"):
        direct_solver(piece(M, dist, r, p), piece(R, dist, r, p), distributions=[dist, dist])
    with pytest.raises(ValueError, match="must be square"):
        direct_solver(piece(M[:, :4], dist, r, p), piece(R, dist, r, p), distributions=[dist, dist])
    with pytest.raises(ValueError, match="square blocks"):
        d2 = BlockCyclic(_grid(p), (2, 3))
        direct_solver(piece(M, d2, r, p), piece(R, d2, r, p), distributions=[d2, d2])
    s = DirectSolver(piece(M + 6 * np.eye(6), dist, r, p), piece(R, dist, r, p), distributions=[dist, dist])
    s.plan()
    with pytest.raises(InvalidStateError, match="factorize"):
        s.solve()
    s.free()


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 12), st.integers(1, 4), st.integers(1, 4))
def test_matmul_property(world, m, n, k, mb, nb):
    from cumath.distributed.linalg.advanced import matmul

    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (mb, nb))
    A, B = _rand((m, k), np.float64, m), _rand((k, n), np.float64, n)
    out = matmul(piece(A, dist, r, p), piece(B, dist, r, p), distributions=[dist] * 3)
    assert rel_err(out, piece(A @ B, dist, r, p)) < 1e-12


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.integers(1, 14), st.integers(1, 3), st.integers(1, 5), st.sampled_from(["scalapack", "gather"]))
def test_direct_solver_property(world, n, nrhs, nb, mode):
    import os

    from cumath.distributed.linalg import direct_solver

    r, p = world.rank, world.nranks
    dist = BlockCyclic(_grid(p), (nb, nb))
    M, R = _rand((n, n), np.float64, n) + n * np.eye(n), _rand((n, nrhs), np.float64, nrhs)
    os.environ["CUMATH_DIST_SOLVE"] = mode
    try:
        x = direct_solver(piece(M, dist, r, p), piece(R, dist, r, p), distributions=[dist, dist])
    finally:
        del os.environ["CUMATH_DIST_SOLVE"]
    assert rel_err(x, piece(np.linalg.solve(M, R), dist, r, p)) < 1e-11


def test_symmetric_memory(world):
    import cumath.distributed as dist

    a = dist.allocate_symmetric_memory((3, 4), "numpy", dtype=np.float64)
    assert a.shape == (3, 4)
    dist.free_symmetric_memory(a)
    with pytest.raises(ValueError, match="not allocated by allocate_symmetric_memory"):
        dist.free_symmetric_memory(a)
