"""The cuDSS engine and its executors run on the CPU against ``fake_cudss`` (cuDSS's calls in NumPy, CUDA copies as
memmoves, "device" operands that are NumPy arrays tagged with GPU 0): argument order, matrix objects, phases,
staging copies, batches, settings, the pivoting fallback and the checks. The GPU tests run the same paths on the
real library."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import scipy.sparse as sp

import cumath.sparse.advanced as S
from cumath._bindings import cudss as C
from cumath.errors import CUDSSError, SingularMatrixError
from fake_cudss import HostAllocator, device, device_csr
from sparse_cases import DTYPES, TYPES_VIEWS, assert_solution, rng, system, view_of

pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")


def _opts(fake, **kw):
    return {"allocator": HostAllocator(fake), **kw}


def _phases(fake):
    return [c[0] for c in fake.calls]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mtype,view", TYPES_VIEWS)
def test_device_operands(emulated, dtype, mtype, view):
    n = 19
    full = system(n, dtype, mtype, seed=5)
    a = view_of(full, view)
    b = np.asfortranarray(rng(1).standard_normal((n, 2)).astype(dtype))
    x = S.direct_solver(device_csr(a), device(b), options=_opts(emulated, sparse_system_type=mtype,
                                                                   sparse_system_view=view))
    assert_solution(x, full, b, dtype)
    assert _phases(emulated) == ["ANALYSIS", "FACTORIZATION", "SOLVE"]
    # the caller's arrays are read in place; the stateless call reads the pattern to find its plan; the pivots'
    # NaN/inf check brings back one 8-byte word per factorization, the dominance check (general full matrices) one
    # per analysis, the pattern check (empty rows and columns) four per analysis
    assert {c[0] for c in emulated.copies} <= {"sparse index array", "the pivot check's word",
                                               "the dominance check's word", "the pattern check's words"}
    assert [n for what, _, n in emulated.copies if what == "the pivot check's word"] == [8]
    assert [n for what, _, n in emulated.copies if what == "the pattern check's words"] == [32]
    assert emulated.pattern_checks == [n]


@pytest.mark.parametrize("layout", ["C", "F", "vector", "strided_vector"])
def test_host_operands_staged_to_the_gpu(emulated, layout, caplog):
    n = 23
    full = system(n, "complex128", seed=2)
    base = rng(0).standard_normal((n, 6)) + 1j
    b = {"C": np.ascontiguousarray(base[:, :3]), "F": np.asfortranarray(base[:, :3]), "vector": base[:, 0].copy(),
         "strided_vector": base[:, 1]}[layout]
    with caplog.at_level(logging.INFO, logger="cumath"):
        x = S.direct_solver(full, b, execution="cuda", options=_opts(emulated))
    assert isinstance(x, np.ndarray)
    assert_solution(x, full, b, "complex128")
    kinds = {(what, kind) for what, kind, _ in emulated.copies}
    assert ("values0", 1) in kinds and ("b0", 1) in kinds and ("x0", 2) in kinds
    if layout in ("C", "strided_vector"):
        assert "host copy of the b0 into the staging layout" in caplog.text
    # a second call with new values: the pattern is not uploaded again
    emulated.copies.clear()
    a2 = sp.csr_array((full.data * 2, full.indices, full.indptr), shape=full.shape)
    assert_solution(S.direct_solver(a2, b, execution="cuda", options=_opts(emulated)), a2, b, "complex128")
    assert not [c for c in emulated.copies if c[0].startswith(("indptr", "indices"))]


def test_column_major_copies_of_device_right_hand_sides(emulated, caplog):
    n = 11
    full = system(n, "float64", seed=1)
    b = rng(2).standard_normal((n, 3))  # C order: cuDSS reads a column-major copy
    with caplog.at_level(logging.INFO, logger="cumath"):
        x = S.direct_solver(device_csr(full), device(b), options=_opts(emulated))
    assert "b is not column-major: cuDSS reads a column-major copy" in caplog.text
    assert_solution(x, full, b, "float64")
    assert x.flags.f_contiguous
    bt = rng(3).standard_normal((3, n)).T  # the (k, n).T form: read in place
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cumath"):
        assert_solution(S.direct_solver(device_csr(full), device(bt), options=_opts(emulated)), full, bt, "float64")
    assert "column-major copy" not in caplog.text


@pytest.mark.parametrize("layout", ["C", "F", "vector", "strided_vector", "negative_vector"])
def test_device_right_hand_side_layouts(emulated, layout):
    n = 17
    full = system(n, "float64", seed=2)
    base = rng(1).standard_normal((n, 6))
    b = {"C": np.ascontiguousarray(base[:, :3]), "F": np.asfortranarray(base[:, :3]), "vector": base[:, 0].copy(),
         "strided_vector": base[:, 1], "negative_vector": base[::-1, 2]}[layout]
    keep = b.copy()
    x = S.direct_solver(device_csr(full), device(b), options=_opts(emulated))
    assert_solution(x, full, keep, "float64")
    np.testing.assert_array_equal(b, keep)  # the caller's b is not written


def test_int64_indices_are_converted_once(emulated, caplog):
    n = 15
    full = system(n, "float32", seed=3)
    a64 = sp.csr_array((full.data, full.indices.astype(np.int64), full.indptr.astype(np.int64)), shape=full.shape)
    b = np.asfortranarray(rng(0).standard_normal((n, 1)).astype(np.float32))
    with caplog.at_level(logging.INFO, logger="cumath"):
        with S.DirectSolver(device_csr(a64), device(b), options=_opts(emulated)) as s:
            s.plan()
            for k in range(3):
                s.factorize()
                assert_solution(s.solve(), full, b, "float32")
    assert caplog.text.count("cuDSS reads int32 indices") == 1
    x = S.direct_solver(a64, b, execution="cuda", options=_opts(emulated))
    assert_solution(x, full, b, "float32")


def test_hybrid_execution(emulated):
    n = 13
    full = system(n, "float64", seed=4)
    b = rng(0).standard_normal(n)
    x = S.direct_solver(full, b, execution=S.ExecutionHybrid(num_threads=3), options=_opts(emulated))
    assert_solution(x, full, b, "float64")
    cfg = emulated.calls[0][1]
    assert cfg[C.ConfigParam.HYBRID_EXECUTE_MODE] == 1
    assert not [c for c in emulated.copies if c[1] == 1]  # host operands are read where they are
    with pytest.raises(ValueError, match="hybrid execution solves one system with one right-hand side"):
        S.direct_solver(full, np.ones((n, 2)), execution="hybrid", options=_opts(emulated))


def test_hybrid_memory_mode(emulated, monkeypatch):
    from cumath._bindings import cudart

    monkeypatch.setattr(cudart, "cudaMemGetInfo", lambda: (1 << 30, 8 << 30))
    full = system(9, "float64", seed=4)
    ex = S.ExecutionCUDA(hybrid_memory_mode_options={"hybrid_memory_mode": True,
                                                     "hybrid_device_memory_limit": "25%",
                                                     "register_cuda_memory": False})
    x = S.direct_solver(device_csr(full), device(np.ones(9)), execution=ex, options=_opts(emulated))
    assert_solution(x, full, np.ones(9), "float64")
    cfg = emulated.calls[0][1]
    assert cfg[C.ConfigParam.HYBRID_MEMORY_MODE] == 1
    assert cfg[C.ConfigParam.HYBRID_DEVICE_MEMORY_LIMIT] == 2 << 30
    assert cfg[C.ConfigParam.USE_CUDA_REGISTER_MEMORY] == 0


def test_batches(emulated):
    n = 12
    mats = [system(n, "complex64", seed=s) for s in range(3)]
    bs = [np.asfortranarray(rng(s).standard_normal((n, s + 1)).astype(np.complex64)) for s in range(3)]
    xs = S.direct_solver([device_csr(m) for m in mats], [device(b) for b in bs], options=_opts(emulated))
    for x, m, b in zip(xs, mats, bs):
        assert_solution(x, m, b, "complex64")
    # one pattern, several values: the implicit batch of a (*batch, n, n) CSR and a (*batch, n, k) b
    same = [sp.csr_array((mats[0].data * (i + 1), mats[0].indices, mats[0].indptr), shape=(n, n)) for i in range(4)]
    b3 = rng(7).standard_normal((4, 2, n)).astype(np.complex64).swapaxes(1, 2)  # each matrix column-major
    x3 = S.direct_solver(device_csr(None, batch=same), device(b3), options=_opts(emulated))
    assert x3.shape == (4, n, 2)
    for i in range(4):
        assert_solution(x3[i], same[i], b3[i], "complex64")
    x4 = S.direct_solver(same, np.ascontiguousarray(b3), execution="cuda", options=_opts(emulated))
    for i in range(4):
        assert_solution(x4[i], same[i], b3[i], "complex64")
    with S.DirectSolver([device_csr(m) for m in mats], [device(b) for b in bs], options=_opts(emulated)) as s:
        s.plan()
        with pytest.raises(RuntimeError, match="row_permutation is not available for batched systems"):
            s.plan_info.row_permutation
        s.factorize()
        assert s.factorization_info.lu_nnz > 0


def test_perturbed_pivots_switch_to_global_pivoting(emulated, caplog):
    a = sp.csr_array(np.array([[0.0, 1, 0, 0], [1, 0, 2, 0], [0, 3, 1, 1], [0, 0, 1, 0]]))
    b = np.array([1.0, 2, 3, 4])
    with caplog.at_level(logging.INFO, logger="cumath"):
        x = S.direct_solver(device_csr(a), device(b), options=_opts(emulated))
    assert_solution(x, a, b, "float64")
    assert "the solution failed its check: analysing and factorizing again with global pivoting" in caplog.text
    assert _phases(emulated) == ["ANALYSIS", "FACTORIZATION", "SOLVE", "ANALYSIS", "FACTORIZATION", "SOLVE"]
    assert emulated.calls[-1][1][C.ConfigParam.REORDERING_ALG] == C.ReorderingAlg.BTF_COLAMD
    # the caller's own reordering is kept: the perturbed solution is checked and rejected
    emulated.calls.clear()
    with pytest.raises(SingularMatrixError, match="had 3 perturbed or tiny pivot"):
        S.direct_solver(device_csr(a), device(b), options=_opts(emulated),
                        plan_preferences={"reordering_algorithm": "nested_dissection"})
    assert "ANALYSIS" not in _phases(emulated)[1:]


def test_singular_and_not_positive_definite(emulated):
    a = system(10, "float64", seed=1).tolil()
    a[4, :] = 0
    a = sp.csr_array(a.tocsr())
    a.eliminate_zeros()
    with pytest.raises(SingularMatrixError, match="singular or numerically singular"):
        S.direct_solver(device_csr(a), device(np.ones(10)), options=_opts(emulated))
    with pytest.raises(SingularMatrixError, match="singular"):
        S.direct_solver(a, np.ones(10), execution="cuda", options=_opts(emulated))
    d = rng(0).standard_normal((8, 8))
    ind = sp.csr_array(d + d.T)
    with pytest.raises(SingularMatrixError, match="not positive definite .cuDSS reports info 1"):
        S.direct_solver(device_csr(ind), device(np.ones(8)), options=_opts(emulated, sparse_system_type="spd"))


def _zero_row(n, seed=1, row=4, stored=False):
    a = system(n, "float64", seed=seed).tolil()
    a[row, :] = 0
    a = sp.csr_array(a.tocsr())
    if stored:  # the row keeps its entries, all zero
        a[row, row] = 1.0
        a = sp.csr_array(a)
        a.data[a.indptr[row]:a.indptr[row + 1]] = 0.0
    else:
        a.eliminate_zeros()
    return a


@pytest.mark.parametrize("empty_rows", ["perturbed", "nan"])
def test_structurally_singular_systems_raise_whatever_came_before(emulated, empty_rows):
    """The state the GPU file's run leaves on the shared handle before its singular test: a solver that pivoted
    globally, one with matching off and static pivot perturbation, a caller's pivot epsilon of 0, cached plans;
    and a cuDSS whose empty-row pivot may be NaN and uncounted ("nan"). An empty row or column raises
    SingularMatrixError before cuDSS's analysis, every time; a row stored as explicit zeros is found by the
    perturbed pivots and the solution check."""
    emulated.empty_rows = empty_rows
    perturbed = sp.csr_array(np.array([[0.0, 1, 0, 0], [1, 0, 2, 0], [0, 3, 1, 1], [0, 0, 1, 0]]))
    S.direct_solver(device_csr(perturbed), device(np.arange(1.0, 5)), options=_opts(emulated))  # pivots globally
    ok = system(12, "float64", seed=3)
    S.direct_solver(device_csr(ok), device(np.ones(12)), options=_opts(emulated, cudss_config={"pivot_epsilon": 0.0}),
                    plan_preferences={"matching_algorithm": "none"}, factorization_preferences={"pivot_eps_algorithm":
                                                                                              "static"})
    for k, a in enumerate([_zero_row(30), _zero_row(30, row=0), sp.csr_array(_zero_row(30, row=7).T),
                           _zero_row(30, row=29)]):
        emulated.calls.clear()
        with pytest.raises(SingularMatrixError, match="singular or numerically singular: it is structurally "
                                                      r"singular \((row|column) (4|0|7|29) has no stored entry\)"):
            S.direct_solver(device_csr(a), device(np.ones(30)), options=_opts(emulated))
        assert "ANALYSIS" not in _phases(emulated)  # cuDSS never saw it
        with pytest.raises(SingularMatrixError, match="structurally singular"):
            with S.DirectSolver(device_csr(a), device(np.ones(30)), options=_opts(emulated)) as s:
                s.plan()
    stored = _zero_row(30, stored=True)
    assert stored.nnz > _zero_row(30).nnz
    with pytest.raises(SingularMatrixError, match="perturbed or tiny pivot"):
        S.direct_solver(device_csr(stored), device(np.ones(30)), options=_opts(emulated))
    # a triangle of a symmetric matrix: line i is empty only when row i and column i both are
    sym = system(9, "float64", "symmetric", seed=2).toarray()
    sym[3, :] = sym[:, 3] = 0
    lower = sp.csr_array(np.tril(sym))
    lower.eliminate_zeros()
    with pytest.raises(SingularMatrixError, match=r"row and column 3 has no stored entry"):
        S.direct_solver(device_csr(lower), device(np.ones(9)), options=_opts(
            emulated, sparse_system_type="symmetric", sparse_system_view="lower"))
    assert not emulated.violations


def test_gpu_patterns_are_checked_for_empty_rows_and_columns_on_the_gpu(emulated, monkeypatch):
    """GPU patterns are checked by the pattern kernels (one scan per system, four words back, no copy of a's
    indices), int32 and int64 ones, explicit batches naming the system; where the kernels cannot be built the
    host check reads copies and says the same."""
    from cumath.sparse.advanced._backends import _cudss_checks as checks

    ok, bad = system(30, "float64", seed=3), sp.csr_array(_zero_row(30, row=11).T)
    with pytest.raises(SingularMatrixError, match=r"a \(system 1\) is singular .* \(column 11 has no stored entry\)"):
        with S.DirectSolver([device_csr(ok), device_csr(bad)], [device(np.ones(30))] * 2,
                            options=_opts(emulated)) as s:
            s.plan()
    assert emulated.pattern_checks == [30, 30]
    assert "a's pattern (structure check)" not in {c[0] for c in emulated.copies}
    wide = _zero_row(17, row=16)
    wide = sp.csr_array((wide.data, wide.indices.astype(np.int64), wide.indptr.astype(np.int64)), shape=wide.shape)
    with pytest.raises(SingularMatrixError, match=r"\(row 16 has no stored entry\)"):
        with S.DirectSolver(device_csr(wide), device(np.ones(17)), options=_opts(emulated)) as s:
            s.plan()
    assert emulated.pattern_checks[-1] == 17
    emulated.copies.clear()
    monkeypatch.setattr(checks, "launch_pattern", lambda *args: False)
    for a, why in ((bad, "column 11"), (wide, "row 16")):
        with pytest.raises(SingularMatrixError, match=rf"\({why} has no stored entry\)"):
            with S.DirectSolver(device_csr(a), device(np.ones(a.shape[0])), options=_opts(emulated)) as s:
                s.plan()
    assert "a's pattern (structure check)" in {c[0] for c in emulated.copies}
    x = S.direct_solver(device_csr(ok), device(np.ones(30)), options=_opts(emulated))  # (and a regular one solves)
    assert_solution(x, ok, np.ones(30), "float64")
    assert not emulated.violations


@pytest.mark.parametrize("dtype,bits,per", [("float32", 32, 1), ("float64", 64, 1), ("complex64", 32, 2),
                                             ("complex128", 64, 2)])
def test_every_factorization_of_one_system_has_its_pivots_scanned(emulated, dtype, bits, per):
    """The NaN/inf scan of the pivots: once per factorization of a single system, over the whole diagonal (complex
    values as pairs of words), into a buffer of the solver's; none for batches."""
    n = 11
    full = system(n, dtype, seed=5)
    b = rng(1).standard_normal(n).astype(dtype)
    with S.DirectSolver(device_csr(full), device(b), options=_opts(emulated)) as s:
        s.plan()
        for _ in range(2):
            s.factorize()
            assert_solution(s.solve(), full, b, dtype)
    assert [(w, k) for _, w, k in emulated.scans] == [(per * n, bits)] * 2
    emulated.scans.clear()
    mats = [system(n, dtype, seed=k) for k in range(3)]
    xs = S.direct_solver([device_csr(m) for m in mats], [device(b) for _ in mats], options=_opts(emulated))
    for x, m in zip(xs, mats):
        assert_solution(x, m, b, dtype)
    assert not emulated.scans


def test_settings_reach_the_config(emulated):
    full = system(10, "float64", seed=2)
    b = np.ones(10)
    with S.DirectSolver(device_csr(full), device(b), options=_opts(emulated)) as s:
        s.plan_config.reordering_algorithm = "amd"
        s.plan_config.use_superpanels = False
        s.plan_config.host_nthreads = 3
        s.factorization_config.pivot_eps = 1e-10
        s.solution_config.ir_num_steps = 2
        assert s.plan_config.nd_min_levels is None  # cuDSS's default, not read before plan()
        s.plan()
        assert s.plan_config.nd_min_levels == 10  # read from cuDSS's config once planned
        # read back as cuDSS was configured: this matrix is diagonally dominant, so analysed without matching
        assert s.plan_config.matching_algorithm is S.DirectSolverMatchingAlg.NONE
        s.solution_config.ir_num_steps = 3  # after plan(): applied to the config at once
        s.factorize()
        s.solve()
        cfg = emulated.calls[-1][1]
        assert cfg[C.ConfigParam.REORDERING_ALG] == C.ReorderingAlg.AMD and cfg[C.ConfigParam.USE_SUPERPANELS] == 0
        assert cfg[C.ConfigParam.HOST_NTHREADS] == 3 and cfg[C.ConfigParam.PIVOT_EPSILON] == 1e-10
        assert cfg[C.ConfigParam.IR_N_STEPS] == 3
        assert s.engine == "cudss"


def test_infos(emulated):
    n = 9
    full = system(n, "complex128", seed=6)
    with S.DirectSolver(device_csr(full), device(np.ones(n, dtype=complex)), options=_opts(emulated)) as s:
        info = s.plan()
        est = info.memory_estimates
        assert est.peak_device_memory == 1024 and est.permanent_device_memory == 0 and est.reserved[-1] == 15 * 1024
        assert list(info.row_permutation) == list(range(n))[::-1]
        assert list(info.col_permutation) == list(range(n))[::-1]
        assert info.num_superpanels == 3
        f = s.factorize()
        assert f.info == 0 and f.npivots == 0 and f.lu_nnz == full.nnz
        assert list(f.row_permutation) == list(range(n)) and f.inertia.tolist() == [0, 0]
        np.testing.assert_allclose(f.diag, full.diagonal())
        assert f.row_scale_factors.dtype == np.float64 and f.col_scale_factors.shape == (n,)
        assert list(info.matching_col_permutation) == list(range(n))


def test_threading_layer_and_kernel_cache(emulated, monkeypatch, tmp_path, caplog):
    from cumath._core.execution import available_cpus
    from cumath.config import plan_cache
    from cumath.sparse.advanced._backends.cudss import release_shared_handles
    from cumath.sparse.advanced._backends import cudss as backend

    lib = tmp_path / "libcudss.so.1"
    lib.write_bytes(b"")
    mt = tmp_path / "libcudss_mtlayer_gomp.so.1"
    mt.write_bytes(b"")
    monkeypatch.setattr(backend, "find_library", lambda name: str(lib))
    monkeypatch.delenv("CUDSS_JIT_CACHE_DIR", raising=False)
    full = system(6, "float64", seed=1)
    with caplog.at_level(logging.INFO, logger="cumath"):
        S.direct_solver(device_csr(full), device(np.ones(6)), options=_opts(emulated))
    assert list(emulated.threading.values()) == [str(mt)]
    assert emulated.calls[0][1][C.ConfigParam.HOST_NTHREADS] == available_cpus()
    assert "shipped with cuDSS" in caplog.text
    assert list(emulated.jit_dirs.values())[0].endswith("cudss-jit")
    other = tmp_path / "libmine.so"
    other.write_bytes(b"")
    emulated.threading.clear()
    S.direct_solver(device_csr(full), device(np.ones(6)), options=_opts(emulated, multithreading_lib=str(other)))
    assert list(emulated.threading.values()) == [str(other)]
    plan_cache.clear()
    release_shared_handles()  # a new shared handle: the layer is loaded once per handle
    emulated.fail_threading = True
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cumath"):
        x = S.direct_solver(device_csr(full), device(np.full(6, 2.0)), options=_opts(emulated))
    assert "could not load the threading layer" in caplog.text
    assert_solution(x, full, np.full(6, 2.0), "float64")
    monkeypatch.setenv("CUDSS_JIT_CACHE_DIR", str(tmp_path))
    plan_cache.clear()
    emulated.jit_dirs.clear()
    emulated.calls.clear()
    S.direct_solver(device_csr(full), device(np.full(6, 3.0)), options=_opts(emulated))
    assert emulated.calls and not emulated.jit_dirs  # cuDSS reads CUDSS_JIT_CACHE_DIR itself


def test_handles_objects_and_streams(emulated, monkeypatch):
    import contextlib

    from cumath._core.frameworks import numpy as numpy_adapter

    # "device" NumPy operands: the caller's stream needs a (no-op) stream context
    monkeypatch.setattr(numpy_adapter, "stream_context", lambda device, stream: contextlib.nullcontext(),
                        raising=False)
    full = system(7, "float64", seed=1)
    user = emulated.cudssCreate()
    with S.DirectSolver(device_csr(full), device(np.ones(7)), options=_opts(emulated, handle=user),
                        stream=1234) as s:
        s.plan()
        s.factorize()
        s.solve()
        assert emulated.streams[user] == 1234
    assert user in emulated.handles  # the caller's handle is the caller's
    assert not emulated.configs and not emulated.datas and not emulated.matrices
    with S.DirectSolver(device_csr(full), device(np.ones(7)), options=_opts(emulated)) as s:
        s.plan()
        first = s._executor.solver.handle
    with S.DirectSolver(device_csr(full), device(np.ones(7)), options=_opts(emulated)) as s2:
        s2.plan()
        assert s2._executor.solver.handle == first  # this thread's solvers share one
    assert len(emulated.handles) == 2  # the caller's and the shared one
    from cumath.sparse.advanced._backends.cudss import release_shared_handles

    release_shared_handles()
    import gc

    gc.collect()
    assert list(emulated.handles) == [user]


def test_device_operands_on_the_cpu(emulated):
    n = 14
    full = system(n, "float64", seed=8)
    b = rng(0).standard_normal((n, 2))
    x = S.direct_solver(device_csr(full), device(b), execution="cpu")
    assert_solution(x, full, b, "float64")
    assert not emulated.calls  # no cuDSS
    whats = [c[0] for c in emulated.copies]
    assert "sparsity pattern" in whats and "a's values" in whats and "solution" in whats


def test_stateless_device_calls_fingerprint_the_pattern(emulated):
    from cumath.config import plan_cache

    n = 10
    full = system(n, "float64", seed=8)
    plan_cache.reset_stats()
    for k in range(3):
        ak = sp.csr_array((full.data * (k + 1), full.indices.copy(), full.indptr.copy()), shape=full.shape)
        assert_solution(S.direct_solver(device_csr(ak), device(np.ones(n)), options=_opts(emulated)), ak,
                        np.ones(n), "float64")
    assert plan_cache.stats()["hits"] == 2
    assert [c[0] for c in emulated.copies].count("sparse index array") == 6
    assert _phases(emulated).count("ANALYSIS") == 1


def test_cudss_errors_are_typed(emulated, monkeypatch):
    def fail(*args):
        raise CUDSSError(C.Status.ALLOC_FAILED, "ALLOC_FAILED", "in phase ANALYSIS")

    monkeypatch.setattr(C, "cudssExecute", fail)
    full = system(5, "float64", seed=1)
    with pytest.raises(CUDSSError, match="cuDSS failed with ALLOC_FAILED"):
        S.direct_solver(device_csr(full), device(np.ones(5)), options=_opts(emulated))
    assert not emulated.configs  # what the failed plan made is freed


@pytest.mark.parametrize("where", ["device", "upload", "staged_cpu"])
def test_another_pattern_is_planned_again(emulated, where):
    n = 12
    full = system(n, "float64", seed=3)
    t = sp.csr_array(full.T)
    assert not np.array_equal(t.indices, full.indices)
    wide = lambda m: sp.csr_array((m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64)), shape=m.shape)
    if where == "device":
        a, a2, b, kw = device_csr(wide(full)), device_csr(wide(t)), device(np.ones(n)), {}
    elif where == "upload":
        a, a2, b, kw = full, t, np.ones(n), {"execution": "cuda"}
    else:
        a, a2, b, kw = device_csr(full), device_csr(t), device(np.ones(n)), {"execution": "cpu"}
    with S.DirectSolver(a, b, options=_opts(emulated), **kw) as s:
        s.plan()
        s.factorize()
        assert_solution(s.solve(), full, np.ones(n), "float64")
        s.reset_operands(a=a2)
        s.plan()
        s.factorize()
        assert_solution(s.solve(), t, np.ones(n), "float64")


# ------------------------------------------------------------------------------------ planning: steps, cuDSS config
PLAN_STEPS = ["handle", "config and data objects", "threading layer and settings",
              "structure check (empty rows and columns)",
              "pattern (int32 copies where a's indices are not)", "a's matrix object", "b's matrix object",
              "diagonal dominance check", "stream",
              "cudssExecute(ANALYSIS)", "events", "total"]


def test_the_steps_of_a_plan_are_timed_and_logged(emulated, caplog):
    """Every host-side step of a new plan, of a factorization and of a solve has its perf_counter duration in
    DirectSolver.timings; at DEBUG each is logged (after a wait for the stream) and the stateless call logs its
    fingerprint and the solver's construction."""
    full = system(12, "float64", seed=3)
    b = np.ones(12)
    with S.DirectSolver(device_csr(full), device(b), options=_opts(emulated)) as s:
        assert s.timings == {}
        s.plan()
        s.factorize()
        s.solve()
        t = s.timings
        assert list(t["plan"]) == PLAN_STEPS
        assert list(t["factorize"]) == ["a's values", "stream", "cudssExecute(FACTORIZATION)", "events",
                                        "status (info, npivots, NaN/inf pivots: waits for the factorization)", "total"]
        assert list(t["solve"])[:3] == ["b's and x's matrix objects (and the result's allocation)", "stream",
                                        "cudssExecute(SOLVE)"]
        for phase in t.values():
            assert all(v >= 0 for v in phase.values())
            assert phase["total"] >= sum(v for k, v in phase.items() if k != "total") - 1e-6
        s.plan()  # planning again: the steps of the analysis alone
        assert list(s.timings["plan"]) == PLAN_STEPS[3:]
    with caplog.at_level(logging.DEBUG, logger="cumath.sparse.advanced"):
        S.direct_solver(device_csr(full), device(b), options=_opts(emulated))
    text = caplog.text
    for line in ("stateless call: the sparsity pattern's fingerprint in ", "the solver made in ",
                 "plan step cudssExecute(ANALYSIS): ", "plan step handle: ", "factorize step a's values: ",
                 "solve step cudssExecute(SOLVE): ", "plan: ", " ms in all (handle "):
        assert line in text, line


def test_cudss_config_reaches_the_config_last(emulated, caplog):
    """DirectSolverOptions.cudss_config: set after cumath's own settings (the threading layer's thread count,
    the configs' fields), logged, part of the plan cache's key; a reordering named there is kept (no switch to
    global pivoting)."""
    full = system(10, "float64", seed=2)
    opts = _opts(emulated, cudss_config={"host_nthreads": 3, "nd_ubfactor": 7, "pivot_threshold": 0.25,
                                         "ReOrDeRiNg_AlG": "amd"})
    with caplog.at_level(logging.INFO, logger="cumath"):
        x = S.direct_solver(device_csr(full), device(np.ones(10)), options=opts,
                            plan_preferences={"host_nthreads": 2})
    assert_solution(x, full, np.ones(10), "float64")
    cfg = emulated.calls[0][1]
    assert cfg[C.ConfigParam.HOST_NTHREADS] == 3 and cfg[C.ConfigParam.ND_UBFACTOR] == 7
    assert cfg[C.ConfigParam.PIVOT_THRESHOLD] == 0.25 and cfg[C.ConfigParam.REORDERING_ALG] == C.ReorderingAlg.AMD
    assert "cuDSS config ND_UBFACTOR = 7 (DirectSolverOptions.cudss_config)" in caplog.text
    emulated.calls.clear()
    S.direct_solver(device_csr(full), device(np.ones(10)), options=_opts(emulated, cudss_config={"nd_ubfactor": 9}))
    assert emulated.calls[0][0] == "ANALYSIS" and emulated.calls[0][1][C.ConfigParam.ND_UBFACTOR] == 9  # a new plan
    a = sp.csr_array(np.array([[0.0, 1, 0, 0], [1, 0, 2, 0], [0, 3, 1, 1], [0, 0, 1, 0]]))
    emulated.calls.clear()
    with pytest.raises(SingularMatrixError, match="perturbed or tiny pivot"):
        S.direct_solver(device_csr(a), device(np.array([1.0, 2, 3, 4])),
                        options=_opts(emulated, cudss_config={"reordering_alg": "nested_dissection"}))
    assert "ANALYSIS" not in _phases(emulated)[1:]


@pytest.mark.parametrize("config,error,match", [
    ({"hybrid_memory_mode": 1}, ValueError, r"cannot set HYBRID_MEMORY_MODE: cumath sets it from other options; "
                                            r"use execution=ExecutionCUDA\(hybrid_memory_mode_options"),
    ({"ubatch_size": 2}, ValueError, "cannot set UBATCH_SIZE.*an explicit batch"),
    ({"device_indices": 0}, ValueError, "cannot set DEVICE_INDICES"),
    ({"no_such": 1}, ValueError, r"cudss_config parameter='no_such' is not supported; the allowed values are "
                                 r"\['ConfigParam.REORDERING_ALG'"),
    ({"host_nthreads": "many"}, TypeError, r"cudss_config\[HOST_NTHREADS\] must be an int"),
    ({"host_nthreads": None}, TypeError, r"must be a number, not None \(leave the parameter out"),
    ({"pivot_threshold": "x"}, TypeError, r"cudss_config\[PIVOT_THRESHOLD\] must be a number"),
    ({"reordering_alg": "best"}, ValueError, r"cudss_config\[REORDERING_ALG\]='best' is not supported"),
    (5, TypeError, "cudss_config must be a dict of cuDSS config parameters"),
    ([("host_nthreads",)], TypeError, "cudss_config must be a dict"),
])
def test_cudss_config_errors(config, error, match):
    with pytest.raises(error, match=match):
        S.DirectSolverOptions(cudss_config=config)


def test_cudss_config_forms_are_one_key():
    a = S.DirectSolverOptions(cudss_config={"HOST_NTHREADS": 4, C.ConfigParam.ND_NLEVELS: 2})
    b = S.DirectSolverOptions(cudss_config=[(C.ConfigParam.ND_NLEVELS, 2), ("host_nthreads", 4)])
    assert a == b and hash(a) == hash(b)
    assert a.cudss_config == ((C.ConfigParam.HOST_NTHREADS, 4), (C.ConfigParam.ND_NLEVELS, 2))
    assert S.DirectSolverOptions(cudss_config=None).cudss_config == ()


def test_the_threading_layer_of_the_loaded_cudss_version(monkeypatch, tmp_path):
    """cuDSS 0.x (another library's) may sit beside 1.0 in one folder: the layer of libcudss.so.1 is .so.1."""
    from cumath.sparse.advanced._backends import cudss as backend

    for name in ("libcudss.so.0", "libcudss.so.1", "libcudss_mtlayer_gomp.so.0", "libcudss_mtlayer_gomp.so.1"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setattr(backend, "find_library", lambda name: str(tmp_path / "libcudss.so.1"))
    assert backend.bundled_threading_layer() == str(tmp_path / "libcudss_mtlayer_gomp.so.1")
    monkeypatch.setattr(backend, "find_library", lambda name: str(tmp_path / "libcudss.so.0"))
    assert backend.bundled_threading_layer() == str(tmp_path / "libcudss_mtlayer_gomp.so.0")
    other = tmp_path / "only"
    other.mkdir()
    (other / "libcudss.so.1").write_bytes(b"")
    (other / "libcudss_mtlayer_gomp.so.0").write_bytes(b"")
    monkeypatch.setattr(backend, "find_library", lambda name: str(other / "libcudss.so.1"))
    assert backend.bundled_threading_layer() == str(other / "libcudss_mtlayer_gomp.so.0")  # any, if no match
    monkeypatch.setattr(backend, "find_library", lambda name: None)
    assert backend.bundled_threading_layer() is None


def test_size_class_defaults_and_the_split_analysis(emulated, monkeypatch, caplog):
    """PLAN_DEFAULTS (one constant) gives the planning settings of a size class where the caller set none: the
    class the order reaches applies, a plan_config setting or a cudss_config entry of the caller's wins; with
    ANALYSIS_PHASES split, the plan runs REORDERING then SYMBOLIC_FACTORIZATION and times each."""
    from cumath.sparse.advanced._backends import _cudss_checks as checks
    from cumath.sparse.advanced._backends import cudss as backend

    monkeypatch.setattr(checks, "launch_dominance", lambda *args: False)  # (these systems are dominant)
    monkeypatch.setattr(backend, "PLAN_DEFAULTS", ((0, {"reordering_algorithm": C.ReorderingAlg.AMD}),
                                                   (20, {"matching_algorithm": C.MatchingAlg.NONE,
                                                         C.ConfigParam.ND_UBFACTOR: 7})))
    R, M, U = C.ConfigParam.REORDERING_ALG, C.ConfigParam.MATCHING_ALG, C.ConfigParam.ND_UBFACTOR
    small, large = system(12, "float64", seed=1), system(25, "float64", seed=2)
    for full, want in ((small, {R: C.ReorderingAlg.AMD, M: C.MatchingAlg.AUTO}),
                       (large, {R: C.ReorderingAlg.DEFAULT, M: C.MatchingAlg.NONE, U: 7})):
        emulated.calls.clear()
        b = np.ones(full.shape[0])
        with caplog.at_level(logging.INFO, logger="cumath"):
            assert_solution(S.direct_solver(device_csr(full), device(b), options=_opts(emulated)), full, b, "float64")
        cfg = emulated.calls[0][1]
        assert {k: cfg.get(k) for k in want} == want
    assert "cuDSS config MATCHING_ALG = " in caplog.text and "(cumath's default for order 25)" in caplog.text
    emulated.calls.clear()
    with S.DirectSolver(device_csr(large), device(np.ones(25)), options=_opts(emulated, cudss_config={
            "nd_ubfactor": 3})) as s:
        s.plan_config.matching_algorithm = "max_diag_count"
        s.plan()
    cfg = emulated.calls[0][1]
    assert cfg[M] == C.MatchingAlg.MAX_DIAG_COUNT and cfg[U] == 3
    monkeypatch.setattr(backend, "ANALYSIS_PHASES", (C.Phase.REORDERING, C.Phase.SYMBOLIC_FACTORIZATION))
    emulated.calls.clear()
    with S.DirectSolver(device_csr(small), device(np.ones(12)), options=_opts(emulated)) as s:
        s.plan()
        s.factorize()
        assert_solution(s.solve(), small, np.ones(12), "float64")
        steps = s.timings["plan"]
    assert _phases(emulated) == ["REORDERING", "SYMBOLIC_FACTORIZATION", "FACTORIZATION", "SOLVE"]
    assert "cudssExecute(REORDERING)" in steps and "cudssExecute(SYMBOLIC_FACTORIZATION)" in steps


def _poisson(m: int, dtype="float64"):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return sp.csr_array((sp.kron(sp.eye(m), t) + sp.kron(t, sp.eye(m))).astype(dtype))


def _matching(call) -> int:
    return call[1][C.ConfigParam.MATCHING_ALG]


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_dominant_general_matrix_is_analysed_without_matching(emulated, dtype, caplog):
    """A general matrix whose values are diagonally dominant (2-D Poisson) is analysed with matching off; new values
    that are dominant still are factorized on that analysis; values that are not bring matching back (analysed and
    factorized again), and every solution is right."""
    a = _poisson(5, dtype)
    n = a.shape[0]
    b = rng(2).standard_normal(n).astype(dtype)
    with caplog.at_level(logging.INFO, logger="cumath"):
        with S.DirectSolver(device_csr(a), device(b), options=_opts(emulated)) as s:
            s.plan()
            analysis = [c for c in emulated.calls if c[0] == "ANALYSIS"]
            assert len(analysis) == 1 and _matching(analysis[0]) == C.MatchingAlg.NONE
            assert "a is diagonally dominant: cuDSS analyses it without matching" in caplog.text
            s.factorize()
            assert_solution(s.solve(), a, b, dtype)
            a2 = a.copy()
            a2.data = a2.data * 3  # dominant still
            s.reset_operands(a=device_csr(a2))
            emulated.calls.clear()
            s.factorize()
            assert _phases(emulated) == ["FACTORIZATION"]
            assert_solution(s.solve(), a2, b, dtype)
            a3 = a.copy()
            a3.setdiag(0.5)  # not dominant: small diagonal entries
            s.reset_operands(a=device_csr(a3))
            emulated.calls.clear()
            s.factorize()
            assert _phases(emulated) == ["FACTORIZATION", "ANALYSIS", "FACTORIZATION"]
            assert _matching(emulated.calls[1]) == C.MatchingAlg.AUTO
            assert "new values of a are not diagonally dominant: cuDSS analyses and factorizes again" in caplog.text
            assert_solution(s.solve(), a3, b, dtype)
            assert len(emulated.dominance_checks) == 4  # the plan's and one per factorization without matching
            emulated.calls.clear()
            s.reset_operands(a=device_csr(a2))
            s.factorize()  # analysed with matching now: no check, no new analysis
            assert _phases(emulated) == ["FACTORIZATION"] and len(emulated.dominance_checks) == 4
    assert not emulated.violations


def test_matching_stays_where_asked_for_or_the_matrix_is_not_dominant(emulated):
    """The caller's matching, 'auto' included, is kept (no check); another reordering of the caller's still gets
    the rule; a matrix
    that is not dominant, and symmetric types, keep cuDSS's matching choice."""
    a = _poisson(4)
    b = np.ones(a.shape[0])
    for kw, expect, checked in (({"plan_preferences": {"matching_algorithm": "max_diag_product"}},
                                 C.MatchingAlg.MAX_DIAG_PRODUCT, 0),
                                ({"plan_preferences": {"matching_algorithm": "auto"}}, C.MatchingAlg.AUTO, 0),
                                ({"plan_preferences": {"reordering_algorithm": "amd"}}, C.MatchingAlg.NONE, 2),
                                ({}, C.MatchingAlg.NONE, 2)):  # checked by the analysis and the factorization
        emulated.calls.clear()
        emulated.dominance_checks.clear()
        S.direct_solver(device_csr(a), device(b), options=_opts(emulated), **kw)
        assert _matching(emulated.calls[0]) == expect and len(emulated.dominance_checks) == checked
    not_dominant = a.copy()
    not_dominant.setdiag(0.5)
    emulated.calls.clear()
    x = S.direct_solver(device_csr(not_dominant), device(b), options=_opts(emulated))
    # the stateless call's cached plan of this pattern (analysed without matching) finds the new values are not
    # dominant at their factorization: analysed again with cuDSS's matching
    assert _phases(emulated) == ["FACTORIZATION", "ANALYSIS", "FACTORIZATION", "SOLVE"]
    assert _matching(emulated.calls[1]) == C.MatchingAlg.AUTO
    assert_solution(x, not_dominant, b, "float64")
    sym = system(10, "float64", "symmetric", seed=4)  # symmetric types: cuDSS's matching choices, no check
    emulated.dominance_checks.clear()
    S.direct_solver(device_csr(sym), device(np.ones(10)), options=_opts(emulated, sparse_system_type="symmetric"))
    assert emulated.dominance_checks == []
