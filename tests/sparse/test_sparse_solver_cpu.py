"""The sparse direct solver on the CPU engines (MKL PARDISO, SciPy SuperLU) against dense NumPy float64 solves."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cumath.sparse.advanced as S
from cumath.errors import SingularMatrixError
from sparse_cases import DTYPES, TYPES_VIEWS, assert_solution, random_sparse, reference, rng, system, view_of

ENGINES = ["superlu"]
try:
    from cumath._bindings import mkl_pardiso

    mkl_pardiso.mkl_int_bits()
    ENGINES.insert(0, "pardiso")
except Exception:  # noqa: BLE001 - no oneMKL here
    pass

pytestmark = [pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning"),
              pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks")]


def solve(a, b, engine, **options):
    return S.direct_solver(a, b, options={"cpu_engine": engine, **options})


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mtype,view", TYPES_VIEWS)
def test_every_type_view_and_dtype(engine, dtype, mtype, view):
    n = 37
    full = system(n, dtype, mtype, seed=hash((mtype, view, dtype)) % 1000)
    b = rng(1).standard_normal((n, 3)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        b = b + 1j * rng(2).standard_normal((n, 3)).astype(dtype)
    x = solve(view_of(full, view), b, engine, sparse_system_type=mtype, sparse_system_view=view)
    assert_solution(x, full, b, dtype)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("n", [1, 2, 13, 101])
def test_odd_and_prime_sizes(engine, n):
    full = system(n, "float64", seed=n)
    b = rng(n).standard_normal(n)
    assert_solution(solve(full, b, engine), full, b, "float64")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("layout", ["C", "F", "kn_T", "strided", "negative", "vector_strided", "vector_negative"])
def test_right_hand_side_layouts(engine, layout):
    n, k = 29, 4
    full = system(n, "complex128", seed=3)
    base = rng(4).standard_normal((n, 2 * k)) + 1j * rng(5).standard_normal((n, 2 * k))
    b = {"C": np.ascontiguousarray(base[:, :k]), "F": np.asfortranarray(base[:, :k]),
         "kn_T": np.ascontiguousarray(base[:, :k].T).T, "strided": base[:, ::2], "negative": base[::-1, :k],
         "vector_strided": base[:, 1], "vector_negative": base[::-1, 0]}[layout]
    keep = b.copy()
    x = solve(full, b, engine)
    assert_solution(x, full, keep, "complex128")
    np.testing.assert_array_equal(b, keep)  # b is never written
    assert x.ndim == 1 or x.flags.f_contiguous  # each matrix column-major


@pytest.mark.parametrize("engine", ENGINES)
def test_nothing_diagonally_dominant(engine):
    """Random sparse systems with no diagonal dominance (nvmath-python's report, n = 100): pivoting gives the
    answer of a dense solve."""
    worst, solved = 0.0, 0
    for seed in range(12):
        for density in (0.5, 0.2, 0.08):
            a = sp.csr_array(sp.random_array((100, 100), density=density, format="csr", rng=rng(seed)) - 0.3 *
                             (sp.random_array((100, 100), density=density, format="csr", rng=rng(seed + 50)) != 0))
            dense = a.toarray()
            if np.linalg.cond(dense) > 1e10:
                continue
            b = rng(seed).standard_normal(100)
            x = solve(a, b, engine)
            ref = np.linalg.solve(dense, b)
            worst = max(worst, np.abs(x - ref).max() / np.abs(ref).max())
            solved += 1
    assert solved >= 20
    assert worst < 1e-8


@pytest.mark.parametrize("engine", ENGINES)
def test_indefinite_symmetric_without_dominance(engine):
    n = 80
    m = random_sparse(n, "float64", 0.1, seed=7)
    full = sp.csr_array(m + m.T)  # zero-ish diagonal, indefinite
    if np.linalg.cond(full.toarray()) > 1e10:
        pytest.skip("singular draw")
    b = rng(8).standard_normal(n)
    for view in ("full", "upper", "lower"):
        x = solve(view_of(full, view), b, engine, sparse_system_type="symmetric", sparse_system_view=view)
        assert_solution(x, full, b, "float64")


@pytest.mark.parametrize("engine", ENGINES)
def test_singular_matrices_raise(engine):
    a = random_sparse(40, "float64", 0.3, seed=2, diag=1.0).tolil()
    a[7, :] = 0
    a = sp.csr_array(a.tocsr())
    a.eliminate_zeros()
    with pytest.raises(SingularMatrixError, match="singular"):
        solve(a, np.ones(40), engine)
    with pytest.raises(SingularMatrixError, match="singular"):
        solve(sp.csr_array((1, 1)), np.ones(1), engine)  # no stored entry at all
    d = rng(0).standard_normal((30, 30))
    d[5] = d[3]  # numerically singular: two equal rows
    with pytest.raises(SingularMatrixError, match="singular"):
        solve(sp.csr_array(d), np.arange(30.0), engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_positive_definite_type_of_an_indefinite_matrix_raises(engine):
    d = rng(0).standard_normal((30, 30))
    a = sp.csr_array(d + d.T)
    with pytest.raises(SingularMatrixError, match="not positive definite"):
        solve(a, np.ones(30), engine, sparse_system_type="spd")


@pytest.mark.parametrize("engine", ENGINES)
def test_ill_conditioned_but_regular_is_solved(engine):
    n = 60
    full = system(n, "float64", seed=11)
    scale = sp.diags_array(np.logspace(0, 8, n))
    a = sp.csr_array(full @ scale)
    b = rng(3).standard_normal(n)
    x = solve(a, b, engine)
    assert np.abs(a @ x - b).max() / np.abs(b).max() < 1e-8


@pytest.mark.parametrize("engine", ENGINES)
def test_explicit_and_implicit_batches(engine):
    torch = pytest.importorskip("torch")
    n = 17
    mats = [system(n, "float64", seed=s) for s in range(3)]
    bs = [rng(s).standard_normal(n) if s % 2 else rng(s).standard_normal((n, 2)) for s in range(3)]
    xs = solve(mats, bs, engine)
    assert isinstance(xs, list) and len(xs) == 3
    for x, m, b in zip(xs, mats, bs):
        assert_solution(x, m, b, "float64")
    # explicit a, implicit b; implicit a (a batched PyTorch CSR tensor), implicit and explicit b
    same = [sp.csr_array(m.toarray() * 0 + m.toarray()) for m in mats]
    b3 = rng(9).standard_normal((3, n, 2))
    x3 = solve(same, b3, engine)
    for i in range(3):
        assert_solution(x3[i], mats[i], b3[i], "float64")
    pattern = sum(abs(m.toarray()) for m in mats) != 0
    dense = np.stack([np.where(pattern, m.toarray() + 1e-300 * pattern, 0) for m in mats])
    ta = torch.tensor(dense).to_sparse_csr()
    tb = torch.tensor(b3)
    tx = solve(ta, tb, engine)
    assert isinstance(tx, torch.Tensor) and tx.shape == tb.shape
    for i in range(3):
        assert_solution(tx[i].numpy(), sp.csr_array(dense[i]), b3[i], "float64")
    lx = solve(ta, [tb[i] for i in range(3)], engine)
    for i in range(3):
        assert_solution(lx[i].numpy(), sp.csr_array(dense[i]), b3[i], "float64")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("index", ["int32", "int64"])
def test_torch_cpu_and_index_dtypes(engine, index):
    torch = pytest.importorskip("torch")
    full = system(23, "complex64", seed=5)
    t = torch.tensor(full.toarray()).to_sparse_csr()
    ti = torch.sparse_csr_tensor(t.crow_indices().to(getattr(torch, index)), t.col_indices().to(getattr(torch, index)),
                                 t.values(), size=t.shape)
    b = torch.randn(23, 2, dtype=torch.complex64)
    x = solve(ti, b, engine)
    assert isinstance(x, torch.Tensor) and x.dtype == torch.complex64
    assert_solution(x.numpy(), full, b.numpy(), "complex64")
    a64 = full.copy()
    a64.indptr, a64.indices = full.indptr.astype(index), full.indices.astype(index)
    assert_solution(solve(a64, b.numpy(), engine), full, b.numpy(), "complex64")


@pytest.mark.parametrize("engine", ENGINES)
def test_unsorted_and_duplicate_entries(engine):
    n = 12
    full = system(n, "float64", seed=2)
    coo = full.tocoo()
    order = rng(0).permutation(coo.nnz)
    rows, cols, vals = coo.row[order], coo.col[order], coo.data[order]
    # split every value in two stored entries: duplicates, unsorted
    rows2, cols2 = np.concatenate([rows, rows]), np.concatenate([cols, cols])
    vals2 = np.concatenate([vals * 0.25, vals * 0.75])
    indptr = np.zeros(n + 1, dtype=np.int32)
    np.add.at(indptr, rows2 + 1, 1)
    indptr = np.cumsum(indptr).astype(np.int32)
    place = np.argsort(rows2, kind="stable")
    a = sp.csr_array((vals2[place], cols2[place].astype(np.int32), indptr), shape=(n, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not a.has_canonical_format
    b = rng(1).standard_normal(n)
    assert_solution(solve(a, b, engine), full, b, "float64")


@pytest.mark.parametrize("engine", ENGINES)
def test_results_are_owned_and_fresh(engine):
    full = system(15, "float64", seed=4)
    b = rng(0).standard_normal(15)
    x1 = solve(full, b, engine)
    x2 = solve(full, b, engine)
    assert x1 is not x2 and not np.shares_memory(x1, x2) and not np.shares_memory(x1, b)
    np.testing.assert_allclose(x1, x2)


def test_engine_choice_option_and_environment(monkeypatch, caplog):
    full = system(10, "float64", seed=1)
    b = np.ones(10)
    with S.DirectSolver(full, b, options={"cpu_engine": "superlu"}) as s:
        s.plan()
        assert s.engine == "superlu"
    monkeypatch.setenv("CUMATH_SPARSE_SOLVER_CPU_ENGINE", "superlu")
    with caplog.at_level("INFO", logger="cumath"):
        with S.DirectSolver(full, b) as s:
            s.plan()
            assert s.engine == "superlu"
    assert "sparse direct solver CPU engine: superlu (CUMATH_SPARSE_SOLVER_CPU_ENGINE=superlu)" in caplog.text
    monkeypatch.setenv("CUMATH_SPARSE_SOLVER_CPU_ENGINE", "magic")
    with pytest.raises(ValueError, match="CUMATH_SPARSE_SOLVER_CPU_ENGINE='magic' is not supported; use auto, "
                                         "pardiso or superlu"):
        S.direct_solver(full, b)
    monkeypatch.delenv("CUMATH_SPARSE_SOLVER_CPU_ENGINE")
    with S.DirectSolver(full, b) as s:
        s.plan()
        assert s.engine == ENGINES[0]


@pytest.mark.skipif("pardiso" not in ENGINES, reason="no oneMKL")
def test_pardiso_info_and_refactorization_reanalyses_when_needed(caplog):
    n = 50
    full = system(n, "float64", seed=9)
    b = rng(0).standard_normal(n)
    with S.DirectSolver(full, b) as s:
        s.plan()
        assert s.plan_info.row_permutation.shape == (n,)
        assert s.plan_info.memory_estimates.permanent_host_memory > 0
        f = s.factorize()
        assert f.lu_nnz >= full.nnz and f.npivots == 0 and f.info == 0
        assert f.diag.shape == (n,) and np.all(np.isfinite(f.diag))
        assert_solution(s.solve(), full, b, "float64")
        # new values that need pivots the analysed matching did not foresee: zero the diagonal
        a2 = full.copy()
        a2.setdiag(0)
        a2 = sp.csr_array(a2)
        if np.linalg.cond(a2.toarray()) < 1e10 and a2.nnz == full.nnz:
            s.reset_operands(a=a2)
            s.factorize()
            assert_solution(s.solve(), a2, b, "float64")


def _poisson(m: int, dtype="float64"):
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(m, m))
    eye = sp.identity(m)
    a = sp.csr_array(sp.kron(eye, t) + sp.kron(t, eye)).astype(dtype)
    a.sort_indices()
    return a


@pytest.mark.skipif("pardiso" not in ENGINES, reason="no oneMKL")
@pytest.mark.parametrize("dtype", DTYPES)
def test_pardiso_analyses_a_dominant_matrix_without_matching(dtype, caplog):
    """A diagonally dominant general matrix (2-D Poisson) is analysed without matching and scaling; new values
    that are not dominant bring them back (analysing again), and the solutions stay right throughout."""
    from cumath.sparse.advanced._backends.pardiso import _I

    a = _poisson(23, dtype)  # n = 529
    n = a.shape[0]
    b = rng(1).standard_normal(n).astype(dtype)
    with caplog.at_level("INFO", logger="cumath"), S.DirectSolver(a, b) as s:
        s.plan()
        plan = s._executor.plans[0]
        assert plan.dominant and plan.iparm[_I.MATCHING] == 0 and plan.iparm[_I.SCALING] == 0
        assert "a is diagonally dominant: PARDISO analyses it without matching and scaling" in caplog.text
        s.factorize()
        assert_solution(s.solve(), a, b, dtype)
        a2 = a.copy()  # dominant still: the analysis stays
        a2.data = a2.data * (1 + rng(2).random(a2.nnz)).astype(a2.data.dtype)
        a2.setdiag(a2.diagonal() * 4)
        s.reset_operands(a=a2)
        s.factorize()
        assert plan.dominant
        assert_solution(s.solve(), a2, b, dtype)
        a3 = a.copy()  # no longer dominant: small diagonal entries
        a3.setdiag(a3.diagonal() * rng(3).uniform(0.01, 0.2, n).astype(a3.data.dtype))
        caplog.clear()
        s.reset_operands(a=a3)
        s.factorize()
        assert not plan.dominant and plan.iparm[_I.MATCHING] == 1
        assert "the new values of a are not diagonally dominant: PARDISO analyses again" in caplog.text
        assert_solution(s.solve(), a3, b, dtype)


@pytest.mark.skipif("pardiso" not in ENGINES, reason="no oneMKL")
def test_pardiso_keeps_matching_where_it_was_asked_for_or_the_matrix_is_not_dominant():
    from cumath.sparse.advanced._backends.pardiso import _I

    a = _poisson(9)
    b = rng(4).standard_normal(a.shape[0])
    for plan_config, expect in (({"matching_algorithm": S.DirectSolverMatchingAlg.MAX_DIAG_PRODUCT}, 1), ({}, 0)):
        with S.DirectSolver(a, b) as s:
            for k, v in plan_config.items():
                setattr(s.plan_config, k, v)
            s.plan()
            assert s._executor.plans[0].iparm[_I.MATCHING] == expect
            s.factorize()
            assert_solution(s.solve(), a, b, "float64")
    not_dominant = a.copy()
    not_dominant.setdiag(0.5)
    with S.DirectSolver(sp.csr_array(not_dominant), b) as s:
        s.plan()
        assert not s._executor.plans[0].dominant and s._executor.plans[0].iparm[_I.MATCHING] == 1
    with S.DirectSolver(a, b, options={"sparse_system_type": S.DirectSolverMatrixType.SPD}) as s:
        s.plan()  # symmetric types keep PARDISO's own settings
        assert not s._executor.plans[0].dominant


@pytest.mark.skipif("pardiso" not in ENGINES, reason="no oneMKL")
def test_pardiso_recovers_where_its_perturbed_solution_fails_the_check(caplog):
    """A symmetric indefinite matrix with small diagonal entries (condition number ~1.3e3) analysed as GENERAL:
    with matching, 9 pivots are perturbed and refinement cannot fix the solution; the plan analyses again without
    matching and solves it as a dense solve does, and keeps that setting for later factorizations."""
    from cumath.sparse.advanced._backends.pardiso import _I

    a = _poisson(23)
    n = a.shape[0]
    a.setdiag(a.diagonal() * rng(3).uniform(0.01, 0.2, n))
    b = rng(1).standard_normal(n)
    ref = np.linalg.solve(a.toarray(), b)
    with caplog.at_level("INFO", logger="cumath"), S.DirectSolver(a, b) as s:
        s.plan()
        s.factorize()
        x = s.solve()
        assert np.abs(x - ref).max() / np.abs(ref).max() < 1e-10
        assert "failed its residual check" in caplog.text and "with matching and scaling off" in caplog.text
        assert s._executor.plans[0].iparm[_I.MATCHING] == 0
        s.reset_operands(b=2 * b)
        assert np.abs(s.solve() - 2 * ref).max() / np.abs(ref).max() < 1e-10
    x = S.direct_solver(a, b)  # the stateless call too
    assert np.abs(x - ref).max() / np.abs(ref).max() < 1e-10


@pytest.mark.skipif("pardiso" not in ENGINES, reason="no oneMKL")
def test_a_singular_matrix_still_raises_after_the_recovery_attempts(caplog):
    a = _poisson(6).tolil()
    a[5, :] = a[4, :]  # two equal rows: singular whatever the settings
    a = sp.csr_array(a)
    b = rng(2).standard_normal(a.shape[0])
    with caplog.at_level("INFO", logger="cumath"), pytest.raises(SingularMatrixError, match="singular"):
        S.direct_solver(a, b, options={"cpu_engine": "pardiso"})


def test_diagonal_dominance_test():
    from cumath.sparse.advanced._traits import DiagonalDominance

    a = _poisson(7)
    d = DiagonalDominance(a.indptr, a.indices, a.shape[0])
    assert d.usable and d(a.data) and d(-a.data)
    v = a.data.copy()
    v[3] *= 3  # an off-diagonal entry grows past the diagonal
    assert not d(v)
    v = a.data.copy()
    v[0] = np.nan
    assert not d(v)
    c = a.astype(np.complex128)
    assert d(c.data * 1j)
    holes = sp.csr_array(np.array([[1.0, 0.1], [0.1, 0.0]]))  # no diagonal entry in row 1
    holes.eliminate_zeros()
    assert not DiagonalDominance(holes.indptr, holes.indices, 2).usable
    dup = sp.csr_array((np.array([1.0, 1.0, 1.0]), np.array([0, 0, 1]), np.array([0, 2, 3])), shape=(2, 2))
    assert not DiagonalDominance(dup.indptr, dup.indices, 2).usable  # a repeated diagonal entry: not read


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 40), density=st.floats(0.02, 0.6), dtype=st.sampled_from(DTYPES),
       k=st.integers(0, 3), seed=st.integers(0, 2 ** 16), engine=st.sampled_from(ENGINES),
       fortran=st.booleans())
def test_property_direct_solver(n, density, dtype, k, seed, engine, fortran):
    full = sp.csr_array(random_sparse(n, dtype, density, seed) + (n * density + 2) * sp.eye_array(n, dtype=dtype))
    shape = (n,) if k == 0 else (n, k)
    b = rng(seed).standard_normal(shape).astype(dtype)
    if fortran and k:
        b = np.asfortranarray(b)
    x = S.direct_solver(full, b, options={"cpu_engine": engine})
    assert_solution(x, full, b, dtype)


def test_reference_helper_is_exact():
    full = system(5, "float64")
    b = np.ones(5)
    np.testing.assert_allclose(full @ reference(full, b).real, b)


@pytest.mark.parametrize("engine", ENGINES)
def test_inertia_of_symmetric_indefinite_systems(engine):
    m = random_sparse(30, "float64", 0.2, 1)
    full = sp.csr_array(m + m.T + 0.5 * sp.eye_array(30))
    with S.DirectSolver(full, np.ones(30), options={"sparse_system_type": "symmetric", "cpu_engine": engine}) as s:
        s.plan()
        f = s.factorize()
        eig = np.linalg.eigvalsh(full.toarray())
        if engine == "pardiso":
            assert f.inertia.tolist() == [int((eig > 0).sum()), int((eig < 0).sum())]
        assert f.inertia.sum() <= 30
        assert_solution(s.solve(), full, np.ones(30), "float64")


@pytest.mark.skipif("pardiso" not in ENGINES, reason="no oneMKL")
def test_pardiso_handles_are_reused_by_fresh_plans():
    from cumath.config import plan_cache
    from cumath.sparse.advanced._backends import pardiso as backend

    backend.release_pooled_handles()
    plan_cache.enabled = False
    try:
        for k, n in enumerate([30, 31, 5, 30, 64, 1, 30]):
            full = system(n, "float64", seed=k)
            b = rng(k).standard_normal(n)
            with S.DirectSolver(full, b) as s:
                s.plan()
                assert s._executor.plans[0].reused == (k > 0)
                s.factorize()
                assert_solution(s.solve(), full, b, "float64")
    finally:
        plan_cache.enabled = True
    assert backend._pool()
    backend.release_pooled_handles()
    assert not backend._pool()


_GOMP_LATE = """
import sys, numpy as np, scipy.sparse as sp
import cumath.sparse.advanced as S
m = 150
t = sp.diags_array([-np.ones(m - 1), 4.0 * np.ones(m), -np.ones(m - 1)], offsets=[-1, 0, 1])
s = sp.diags_array([-np.ones(m - 1), -np.ones(m - 1)], offsets=[-1, 1])
a = sp.csr_array(sp.kron(sp.eye_array(m), t) + sp.kron(s, sp.eye_array(m)))
b = np.ones(a.shape[0])
with S.DirectSolver(a, b) as solver:
    solver.plan()
    two_level = int(solver._executor.plans[0].iparm[23])
    solver.factorize()
    x = solver.solve()
    import torch  # brings GNU OpenMP (libgomp) into the process
    a.data *= 2
    solver.factorize()
    x2 = solver.solve()
print(two_level, int(solver._executor is None), float(abs(a @ x2 - b).max()), float(abs(a @ x - 2 * b).max()))
"""


@pytest.mark.skipif("pardiso" not in ENGINES, reason="no oneMKL")
def test_pardiso_two_level_factorization_and_gnu_openmp():
    """oneMKL's improved two-level factorization crashes once libgomp is loaded: a plan made before (with it)
    switches to the classic factorization when libgomp appears."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    root = __file__.rsplit("/tests/", 1)[0]
    out = subprocess.run([sys.executable, "-c", _GOMP_LATE], capture_output=True, text=True, timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    two_level, _, res2, res1 = out.stdout.split()
    assert two_level == "10" and float(res2) < 1e-10 and float(res1) < 1e-10


def test_cpu_phases_are_timed():
    """DirectSolver.timings on the CPU engines: the arrays the engine reads and its own phase."""
    a = system(15, "float64", seed=4)
    with S.DirectSolver(a, np.ones(15), options={"cpu_engine": "superlu"}) as s:
        s.plan()
        s.factorize()
        s.solve()
        t = s.timings
    assert list(t["plan"]) == ["arrays", "superlu analysis", "total"]
    assert list(t["factorize"]) == ["arrays", "superlu factorization", "total"]
    assert all(v >= 0 for phase in t.values() for v in phase.values())


_SETTABLE = ["REORDERING_ALG", "HOST_NTHREADS", "ND_NLEVELS", "ND_UBFACTOR", "DETERMINISTIC_MODE", "IR_N_STEPS",
             "MAX_LU_NNZ", "USE_SUPERPANELS"]


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(_SETTABLE), st.integers(0, 5), max_size=len(_SETTABLE)), st.booleans())
def test_cudss_config_normalizes_any_form(config, lower):
    """Any dict of settable parameters (names in any case) gives sorted (ConfigParam, int) pairs; the same
    settings as pairs in another order give equal, equally hashed options; the CPU engines ignore them."""
    from cumath._bindings import cudss as C

    given_ = {(k.lower() if lower else k): v for k, v in config.items()}
    o = S.DirectSolverOptions(cudss_config=given_)
    assert o.cudss_config == tuple(sorted((C.ConfigParam[k], v) for k, v in config.items()))
    again = S.DirectSolverOptions(cudss_config=list(reversed(list(config.items()))))
    assert o == again and hash(o) == hash(again)
    a = system(6, "float64", seed=len(config))
    assert_solution(S.direct_solver(a, np.ones(6), options=o), a, np.ones(6), "float64")
