"""The sparse direct solver on a real GPU with cuDSS (marked ``gpu``: skipped where there is none).

Run on a GPU machine with ``python -m pytest -q tests/sparse/test_sparse_solver_gpu.py``. It needs cuDSS
(``pip install cumath[cudss]``) and CuPy or a CUDA PyTorch for the GPU operands (tests of a missing package skip).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import cumath.sparse.advanced as S
from cumath.errors import SingularMatrixError
from sparse_cases import DTYPES, TYPES_VIEWS, assert_solution, rng, system, view_of

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning"),
              pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks")]


@pytest.fixture(scope="module")
def cudss_lib(cuda_device):
    from cumath._bindings import cudss
    from cumath.errors import LibraryNotFoundError

    try:
        cudss.cudssGetProperty(0)
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    return cuda_device


def _cupy():
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    return cp, csp


def _host(x):
    get = getattr(x, "get", None)
    if get is not None:
        return get()
    return x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)


def test_the_library_and_its_config_types(cudss_lib):
    from cumath._bindings import cudss

    assert cudss.cudssGetProperty(0) >= 1  # cuDSS 1.x
    cfg = cudss.cudssConfigCreate()
    try:
        for param in cudss.CONFIG_TYPES:  # exact byte sizes, or cuDSS answers INVALID_VALUE
            cudss.cudssConfigGet(cfg, param)
        assert cudss.cudssConfigGet(cfg, cudss.ConfigParam.MATCHING_ALG) == cudss.MatchingAlg.AUTO
    finally:
        cudss.cudssConfigDestroy(cfg)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mtype,view", TYPES_VIEWS)
def test_cupy_operands(cudss_lib, dtype, mtype, view):
    cp, csp = _cupy()
    n = 61
    full = system(n, dtype, mtype, seed=7)
    a = csp.csr_matrix(view_of(full, view))
    b = rng(0).standard_normal((n, 3)).astype(dtype)
    x = S.direct_solver(a, cp.asarray(b, order="F"), options={"sparse_system_type": mtype,
                                                               "sparse_system_view": view})
    assert isinstance(x, cp.ndarray) and x.device.id == a.data.device.id
    assert_solution(_host(x), full, b, dtype)


@pytest.mark.parametrize("layout", ["C", "F", "vector", "strided_vector"])
def test_cupy_right_hand_side_layouts(cudss_lib, layout):
    cp, csp = _cupy()
    n = 40
    full = system(n, "float64", seed=2)
    base = cp.asarray(rng(1).standard_normal((n, 6)))
    b = {"C": cp.ascontiguousarray(base[:, :3]), "F": cp.asfortranarray(base[:, :3]), "vector": base[:, 0].copy(),
         "strided_vector": base[:, 1]}[layout]
    keep = _host(b).copy()
    x = S.direct_solver(csp.csr_matrix(full), b)
    assert_solution(_host(x), full, keep, "float64")
    np.testing.assert_array_equal(_host(b), keep)


def test_random_systems_without_diagonal_dominance(cudss_lib):
    """nvmath-python's report: random n = 100 systems with no diagonal dominance come out wrong with cuDSS's
    default pivoting. cumath's default detects the perturbed pivots and pivots globally."""
    cp, csp = _cupy()
    checked = 0
    for seed in range(10):
        for density in (0.5, 0.2, 0.08):
            a = sp.random_array((100, 100), density=density, format="csr", rng=rng(seed))
            dense = a.toarray()
            if np.linalg.cond(dense) > 1e10:
                continue
            b = rng(seed).standard_normal(100)
            x = _host(S.direct_solver(csp.csr_matrix(sp.csr_matrix(a)), cp.asarray(b)))
            ref = np.linalg.solve(dense, b)
            assert np.abs(x - ref).max() / np.abs(ref).max() < 1e-8, (seed, density)
            checked += 1
    assert checked >= 15


def test_singular_and_not_positive_definite(cudss_lib):
    cp, csp = _cupy()
    a = system(30, "float64", seed=1).tolil()
    a[4, :] = 0
    a = sp.csr_matrix(a.tocsr())
    a.eliminate_zeros()
    with pytest.raises(SingularMatrixError, match="singular"):
        S.direct_solver(csp.csr_matrix(a), cp.ones(30))
    d = rng(0).standard_normal((20, 20))
    with pytest.raises(SingularMatrixError, match="not positive definite"):
        S.direct_solver(csp.csr_matrix(sp.csr_matrix(d + d.T)), cp.ones(20), options={"sparse_system_type": "spd"})


@pytest.mark.parametrize("matching", [None, "none"])
def test_singular_values_are_found_by_the_pivots(cudss_lib, matching):
    """Singular by its values, not its pattern: a row of stored zeros, and a NaN on the diagonal. cuDSS's
    perturbed pivots or the GPU scan of the pivots for NaN and inf must send the solution to the residual check,
    which raises, whatever the matching."""
    cp, csp = _cupy()
    a = system(30, "float64", seed=1).tolil()
    a[4, :] = 0
    a[4, 4] = 1.0
    a = sp.csr_matrix(a.tocsr())
    a.data[a.indptr[4]:a.indptr[5]] = 0.0  # the row keeps its entries, all zero
    prefs = None if matching is None else {"matching_algorithm": matching}
    with pytest.raises(SingularMatrixError, match="singular"):
        S.direct_solver(csp.csr_matrix(a), cp.ones(30), plan_preferences=prefs)
    nan = system(30, "float64", seed=2).tocsr()
    nan[7, 7] = np.nan
    with pytest.raises(SingularMatrixError, match="singular"):
        S.direct_solver(csp.csr_matrix(nan), cp.ones(30), plan_preferences=prefs)


def test_torch_cuda_tensors_batched_and_int64(cudss_lib):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA PyTorch")
    n = 33
    mats = [system(n, "complex128", seed=s) for s in range(3)]
    pattern = sum(abs(m.toarray()) for m in mats) != 0
    dense = np.stack([np.where(pattern, m.toarray() + 1e-300 * pattern, 0) for m in mats])
    a = torch.tensor(dense, device="cuda").to_sparse_csr()  # int64 indices: converted once per plan
    b = torch.randn(3, 2, n, dtype=torch.complex128, device="cuda").transpose(1, 2)
    x = S.direct_solver(a, b)
    assert x.is_cuda and x.shape == b.shape
    for i in range(3):
        assert_solution(_host(x[i]), sp.csr_array(dense[i]), _host(b[i]), "complex128")
    xs = S.direct_solver([torch.tensor(m.toarray(), device="cuda").to_sparse_csr() for m in mats],
                         [b[i] for i in range(3)])
    for i in range(3):
        assert_solution(_host(xs[i]), mats[i], _host(b[i]), "complex128")


def test_host_operands_on_the_gpu_and_hybrid(cudss_lib):
    n = 50
    full = system(n, "float64", seed=4)
    b = rng(2).standard_normal((n, 2))
    x = S.direct_solver(full, b, execution="cuda")
    assert isinstance(x, np.ndarray)
    assert_solution(x, full, b, "float64")
    xh = S.direct_solver(full, b[:, 0].copy(), execution=S.ExecutionHybrid())
    assert_solution(xh, full, b[:, 0], "float64")
    ex = S.ExecutionCUDA(hybrid_memory_mode_options={"hybrid_memory_mode": True, "hybrid_device_memory_limit": "1GiB"})
    assert_solution(S.direct_solver(full, b, execution=ex), full, b, "float64")


def test_stateful_refactorization_streams_and_infos(cudss_lib):
    cp, csp = _cupy()
    n = 64
    full = system(n, "float64", seed=5)
    a = csp.csr_matrix(full)
    b = cp.asarray(rng(0).standard_normal(n))
    stream = cp.cuda.Stream(non_blocking=True)
    with S.DirectSolver(a, b, stream=stream) as s:
        s.plan_config.reordering_algorithm = "amd"
        info = s.plan()
        est = info.memory_estimates
        assert est.peak_device_memory > 0
        assert sorted(info.row_permutation.tolist()) == list(range(n))
        f = s.factorize()
        assert f.lu_nnz >= full.nnz and f.info == 0
        x = s.solve()
        stream.synchronize()
        assert_solution(_host(x), full, _host(b), "float64")
        a.data *= 3  # new values, same pattern: factorize again, no plan
        s.factorize()
        x = s.solve()
        stream.synchronize()
        assert_solution(_host(x), full * 3, _host(b), "float64")
        assert s.engine == "cudss"
        assert s._executor.solver.threading is not None  # the threading layer shipped with cuDSS is loaded


@pytest.mark.parametrize("alg", list(S.DirectSolverReorderingAlg))
def test_every_reordering(cudss_lib, alg):
    cp, csp = _cupy()
    m = 20
    t = sp.diags([-np.ones(m - 1), 4 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    poisson = sp.csr_matrix(sp.kron(sp.eye(m), t) + sp.kron(sp.diags([-np.ones(m - 1), -np.ones(m - 1)], [-1, 1]),
                                                             sp.eye(m)))
    b = rng(0).standard_normal(m * m)
    x = S.direct_solver(csp.csr_matrix(poisson), cp.asarray(b), plan_preferences={"reordering_algorithm": alg})
    assert_solution(_host(x), sp.csr_array(poisson), b, "float64")


def test_a_user_handle_is_left_alone(cudss_lib):
    from cumath._bindings import cudss

    cp, csp = _cupy()
    handle = cudss.cudssCreate()
    try:
        full = system(12, "float64", seed=3)
        with S.DirectSolver(csp.csr_matrix(full), cp.ones(12), options={"handle": handle}) as s:
            s.plan()
            s.factorize()
            s.solve()
        cudss.cudssSetStream(handle, 0)  # still alive
    finally:
        cudss.cudssDestroy(handle)


def test_lifetimes_under_stress(cudss_lib):
    """Solvers made on streams that are destroyed afterwards, freed in random order, dropped without free(),
    collected, the shared handles released: nothing crashes, the survivors still solve."""
    import gc
    import random

    from cumath.sparse.advanced._backends import _cudss_lifetime as lifetime

    cp, csp = _cupy()
    order = random.Random(3)
    full = system(300, "float64", seed=4)
    a = csp.csr_matrix(full)
    b = cp.asarray(rng(1).standard_normal(300))
    solvers = []
    for i in range(30):
        stream = cp.cuda.Stream(non_blocking=bool(i % 2))
        s = S.DirectSolver(a, b, stream=stream)
        s.plan()
        s.factorize()
        x = s.solve()
        solvers.append((s, x))
        del stream  # the solver's last stream goes while the solver lives
        if order.random() < 0.3:
            gc.collect()
    order.shuffle(solvers)
    for k, (s, x) in enumerate(solvers[:20]):
        if k % 3 == 0:
            s.free()
        elif k % 3 == 1:
            with s:
                pass
        if order.random() < 0.4:
            gc.collect()
    del solvers[:20], s, x
    gc.collect()
    lifetime.release_shared_handles()
    for s, _ in solvers:
        s.reset_operands(b=b * 2, stream=cp.cuda.get_current_stream())
        assert_solution(_host(s.solve()), full, 2 * _host(b), "float64")
    solvers.clear()
    gc.collect()
    lifetime.release_shared_handles()
    cp.cuda.Device().synchronize()


_SPIN = r"""extern "C" __global__ void cumath_test_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}"""


@pytest.mark.parametrize("phase", ["solve", "factorize"])
def test_phases_on_another_stream_than_the_analysis(cudss_lib, phase):
    """What test_lifetimes_under_stress exposed, made deterministic: cuDSS keeps working on the stream a solver was
    analysed on. A new b written on another non-blocking stream behind a ~20 ms kernel, then a solve (or a
    factorization and a solve) there, x read on that stream: right only when that stream and the analysis stream
    are joined both ways."""
    cp, csp = _cupy()
    n = 300
    full = system(n, "float64", seed=4)
    a = csp.csr_matrix(full)
    b = cp.asarray(rng(1).standard_normal(n))
    spin = cp.RawKernel(_SPIN, "cumath_test_spin")
    home, other = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with S.DirectSolver(a, b, stream=home) as s:
        s.plan()
        s.factorize()
        # read on the stream the solve was queued on: a copy on the legacy default stream does not wait for a
        # non-blocking stream (the solve returns once its work is queued)
        assert_solution(s.solve().get(stream=home), full, _host(b), "float64")
        home.synchronize()
        for k in range(3):
            with other:
                spin((1,), (1,), (np.int64(40_000_000),))  # the new b is written ~20 ms from now
                b2 = b * (k + 2)
            s.reset_operands(b=b2, stream=other)
            if phase == "factorize":
                s.factorize()
            x = s.solve()
            got = x.get(stream=other)  # read on the stream the solve was queued on
            assert_solution(got, full, (k + 2) * _host(b), "float64")


def test_a_process_exiting_with_live_solvers(cudss_lib):
    import subprocess
    import sys
    import textwrap

    _cupy()
    script = textwrap.dedent("""
        import cupy as cp, cupyx.scipy.sparse as csp, numpy as np, scipy.sparse as sp
        import cumath.sparse.advanced as S
        n = 200
        a = sp.random(n, n, density=0.05, random_state=1, format="csr") + sp.identity(n, format="csr") * n
        keep = []
        for i in range(8):
            st = cp.cuda.Stream()
            s = S.DirectSolver(csp.csr_matrix(a), cp.ones(n), stream=st)
            s.plan(); s.factorize(); s.solve()
            keep.append((s, st))
        S.direct_solver(csp.csr_matrix(a), cp.ones(n))  # a cached plan too
        dropped = S.DirectSolver(csp.csr_matrix(a), cp.ones(n))
        dropped.plan()
        del dropped
        print("OK", flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "OK" in r.stdout and "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr


def test_plan_steps_and_cudss_config_on_cudss(cudss_lib, caplog):
    """On cuDSS itself: DirectSolver.timings names every host-side step of the plan (cudssExecute(ANALYSIS) among
    them) and the DEBUG lines appear; DirectSolverOptions.cudss_config reaches cuDSS's config (read back from it)
    and the solution is still right; the threading layer cuDSS was given is the one of its own major version."""
    import logging
    import os

    from cumath._bindings import cudss
    from cumath.sparse.advanced._backends.cudss import bundled_threading_layer

    cp, csp = _cupy()
    a = system(300, "float64", seed=11)
    b = rng(2).standard_normal(300)
    ga, gb = csp.csr_matrix(a), cp.asarray(b)
    with caplog.at_level(logging.DEBUG, logger="cumath.sparse.advanced"):
        with S.DirectSolver(ga, gb, options={"cudss_config": {"host_nthreads": 2, "nd_nlevels": 3}}) as s:
            s.plan()
            s.factorize()
            x = s.solve()
            solver = s._executor.solver
            assert solver.config_get(cudss.ConfigParam.ND_NLEVELS) == 3
            if solver.threading:  # (HOST_NTHREADS matters only with a threading layer)
                assert solver.config_get(cudss.ConfigParam.HOST_NTHREADS) == 2
                layer = os.path.basename(solver.threading)
                assert layer.startswith("libcudss_mtlayer_gomp.so"), layer
            t = s.timings
    assert_solution(_host(x), a, b, "float64")
    assert "cudssExecute(ANALYSIS)" in t["plan"] and "cudssExecute(FACTORIZATION)" in t["factorize"]
    assert t["plan"]["total"] >= t["plan"]["cudssExecute(ANALYSIS)"] > 0
    assert "plan step cudssExecute(ANALYSIS): " in caplog.text
    layer = bundled_threading_layer()
    if layer is not None:
        from cumath._bindings._loader import find_library

        lib = os.path.basename(find_library("cudss"))
        assert os.path.basename(layer).split(".so.")[1][:1] == lib.split(".so.")[1][:1], (lib, layer)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_dominant_matrix_is_analysed_without_matching_on_cudss(cudss_lib, dtype, caplog):
    """The GPU dominance kernel: a 2-D Poisson matrix (weakly dominant) is analysed with matching off; new values
    that are not dominant are found at their factorization and analysed again with cuDSS's matching; an element
    of a that breaks dominance in one row is found too; the solutions are right throughout."""
    import logging

    cp, csp = _cupy()
    m = 13
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    full = sp.csr_matrix((sp.kron(sp.eye(m), t) + sp.kron(t, sp.eye(m))).astype(dtype))
    n = full.shape[0]
    b = cp.asarray(rng(3).standard_normal(n).astype(dtype))
    a = csp.csr_matrix(full)
    with caplog.at_level(logging.INFO, logger="cumath"):
        with S.DirectSolver(a, b) as s:
            s.plan()
            solver = s._executor.solver
            assert solver.matching_off and s.plan_config.matching_algorithm is S.DirectSolverMatchingAlg.NONE
            assert "a is diagonally dominant: cuDSS analyses it without matching" in caplog.text
            s.factorize()
            assert_solution(_host(s.solve()), full, _host(b), dtype)
            one_row = full.tolil()
            one_row[7, 8] = 5.0  # row 7 alone is not dominant now (same pattern: that entry is stored)
            one_row = sp.csr_matrix(one_row)
            a.data[...] = cp.asarray(one_row.data)
            s.factorize()
            assert not solver.matching_off
            assert "new values of a are not diagonally dominant: cuDSS analyses and factorizes again" in caplog.text
            assert_solution(_host(s.solve()), one_row, _host(b), dtype)
    near = full.copy()
    near.setdiag(near.diagonal() * 0.999)  # interior rows lose their weak dominance
    with S.DirectSolver(csp.csr_matrix(near), b) as s:
        s.plan()
        assert not s._executor.solver.matching_off
        s.factorize()
        assert_solution(_host(s.solve()), near, _host(b), dtype)


@pytest.mark.parametrize("index_dtypes", [("int32", "int32"), ("int32", "int64"), ("int64", "int32"),
                                          ("int64", "int64")])
def test_the_pattern_kernels_agree_with_the_host_check(cudss_lib, index_dtypes):
    """The GPU gap scan against ``structurally_singular`` on random patterns with empty rows and columns (none,
    one, many; prime orders), for both views: same first gap, same count."""
    from cumath.sparse.advanced import DirectSolverMatrixViewType as MV
    from cumath.sparse.advanced._backends._cudss_checks import launch_pattern
    from cumath.sparse.advanced._traits import gaps_message, structurally_singular

    cp, _ = _cupy()
    r = rng(11)
    stream = cp.cuda.get_current_stream()
    checked = 0
    for n in (1, 7, 131, 4099):
        for holes in (0, 1, 5):
            a = sp.random(n, n, density=min(1.0, 3.0 / n), random_state=r, format="lil")
            a.setdiag(1.0)
            for i in r.choice(n, size=min(holes, n), replace=False):
                a[int(i), :] = 0
            for j in r.choice(n, size=min(holes, n), replace=False) if n > 1 else ():
                a[:, int(j)] = 0
            full = sp.csr_matrix(a.tocsr())
            full.eliminate_zeros()
            for view, m in ((MV.FULL, full), (MV.LOWER, sp.tril(full, format="csr"))):
                indptr = cp.asarray(m.indptr.astype(index_dtypes[0]))
                indices = cp.asarray(m.indices.astype(index_dtypes[1]))
                seen, words = cp.zeros(n, cp.uint8), cp.zeros(4, cp.uint64)
                assert launch_pattern(*index_dtypes, cudss_lib, indptr.data.ptr, indices.data.ptr, n,
                                      view != MV.FULL, seen.data.ptr, words.data.ptr, stream.ptr)
                stream.synchronize()
                r0, rc, c0, cc = (int(w) for w in words.get())
                got = gaps_message((n - r0, rc) if rc else None, (n - c0, cc) if cc else None, view)
                assert got == structurally_singular(m.indptr, m.indices, n, view), (n, holes, view)
                checked += got is not None
    assert checked >= 8


def test_empty_rows_and_columns_of_gpu_patterns_raise(cudss_lib):
    """End to end: an empty column of one system of an explicit CuPy batch, and an empty row of a single system,
    raise before cuDSS sees them, with the host check's words."""
    cp, csp = _cupy()
    good = system(23, "float64", seed=4).tocsr()
    hole = good.tolil()
    hole[:, 11] = 0
    hole = sp.csr_matrix(hole.tocsr())
    hole.eliminate_zeros()
    b = cp.asarray(rng(5).standard_normal(23))
    with pytest.raises(SingularMatrixError, match=r"a \(system 1\) is singular .*column 11 has no stored entry"):
        S.direct_solver([csp.csr_matrix(good), csp.csr_matrix(hole)], [b, b.copy()])
    row = good.tolil()
    row[16, :] = 0
    row = sp.csr_matrix(row.tocsr())
    row.eliminate_zeros()
    with pytest.raises(SingularMatrixError, match="row 16 has no stored entry"):
        S.direct_solver(csp.csr_matrix(row), b)
    assert_solution(_host(S.direct_solver(csp.csr_matrix(good), b)), good, _host(b), "float64")
