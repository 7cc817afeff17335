"""The dense direct solver on a real GPU (cuSOLVER, cuBLAS's batched LU, cuSOLVER's batched Cholesky): residuals
in float64 for CuPy and PyTorch CUDA operands of every dtype and layout, both batch methods, host operands
solved on the GPU and GPU operands on the CPU, streams, in-place factors and solutions, singular systems, the
caller's cuSOLVER handle, explicit batches and the plan cache. Every test is marked ``gpu`` (skipped without a
GPU). Run on a GPU machine with::

    python -m pytest -q tests/linalg/test_solver_gpu.py          # or: python tests/linalg/test_solver_gpu.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from cumath.config import plan_cache
from cumath.linalg._solver import DirectSolver, IllConditionedWarning, SingularMatrixError, direct_solver
from helpers.matrix import random_array, with_layout
from test_solver_cpu import assert_solves as cpu_assert_solves
from test_solver_cpu import check_nonfinite, near_singular, system

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")
MT = {"lu": "general", "cholesky": "hpd"}


def _cupy():
    return pytest.importorskip("cupy")


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA PyTorch")
    return torch


def to_host(x) -> np.ndarray:
    if hasattr(x, "get"):
        return x.get()
    if hasattr(x, "cpu"):
        return x.cpu().numpy()
    return np.asarray(x)


def device_of(x) -> int:
    d = x.device
    return d.id if hasattr(d, "id") else d.index


def assert_solves(ref_a, x, b, dtype):
    cpu_assert_solves(ref_a, to_host(x), b, dtype)


def on_gpu(package, x, layout="C"):
    if package == "cupy":
        return with_layout(x, layout, "cupy")
    return with_layout(x, layout, "torch", "cuda")


PACKAGES = ["cupy", "torch"]


def _need(package):
    return _cupy() if package == "cupy" else _torch_cuda()


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["lu", "cholesky"])
@pytest.mark.parametrize("method", ["loop", "batched"])
@pytest.mark.parametrize("layout", ["C", "F", "step"])
def test_gpu_operands(package, dtype, kind, method, layout):
    _need(package)
    for batch, n, rhs in (((), 37, 3), ((5,), 16, 1), ((2, 3), 9, "vector")):
        vector = rhs == "vector"
        a0, b0, ref = system(batch, n, 1 if vector else rhs, dtype, kind, vector)
        a, b = on_gpu(package, a0, layout), on_gpu(package, b0, layout)
        opts = {"matrix_type": MT[kind], "batch_method": method}
        x = direct_solver(a, b, options=opts)
        assert type(x) is type(b) and device_of(x) == device_of(b)
        assert_solves(ref, x, b0, dtype)
        np.testing.assert_array_equal(to_host(a), a0)
        np.testing.assert_array_equal(to_host(b), b0)
        with DirectSolver(a, b, options=opts) as s:
            s.plan()
            s.factorize()
            assert_solves(ref, s.solve(), b0, dtype)
            b1 = random_array(b0.shape, dtype)
            s.reset_operands(b=on_gpu(package, b1, layout))
            assert_solves(ref, s.solve(), b1, dtype)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("kind", ["lu", "cholesky"])
def test_large_single_system(dtype, kind):
    cp = _cupy()
    a0, b0, ref = system((), 1500, 4, dtype, kind)
    x = direct_solver(cp.asarray(a0), cp.asarray(b0), options={"matrix_type": MT[kind]})
    assert_solves(ref, x, b0, dtype)


@pytest.mark.parametrize("kind", ["lu", "cholesky"])
@pytest.mark.parametrize("method", ["loop", "batched"])
def test_host_operands_solved_on_the_gpu(kind, method):
    a0, b0, ref = system((7,), 12, 2, "float64", kind)
    for layout in ("C", "F"):
        a, b = with_layout(a0, layout), with_layout(b0, layout)
        x = direct_solver(a, b, options={"matrix_type": MT[kind], "batch_method": method}, execution="cuda")
        assert type(x) is np.ndarray
        assert_solves(ref, x, b0, "float64")
        np.testing.assert_array_equal(a, a0)


def test_gpu_operands_solved_on_the_cpu():
    cp = _cupy()
    a0, b0, ref = system((3,), 10, 2, "complex128")
    x = direct_solver(cp.asarray(a0), cp.asarray(b0), execution="cpu")
    assert isinstance(x, cp.ndarray)
    assert_solves(ref, x, b0, "complex128")


@pytest.mark.parametrize("method", ["loop", "batched"])
def test_inplace_on_the_gpu(method):
    cp = _cupy()
    import scipy.linalg as sla

    for layout in ("F", "C"):
        a0, b0, ref = system((2,), 8, 2, "float64")
        a, b = on_gpu("cupy", a0, layout), on_gpu("cupy", b0, layout)
        with DirectSolver(a, b, options={"inplace_a": True, "inplace_b": True, "batch_method": method}) as s:
            s.plan()
            s.factorize()
            assert s.solve() is b
        assert_solves(ref, b, b0, "float64")
        for i in range(2):
            np.testing.assert_allclose(cp.asnumpy(a[i]), sla.lu_factor(a0[i])[0], rtol=1e-10, atol=1e-10)


def test_explicit_stream_and_blocking():
    cp = _cupy()
    a0, b0, ref = system((4,), 20, 3, "float32")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        a, b = cp.asarray(a0), cp.asarray(b0)
    with DirectSolver(a, b, stream=stream, options={"blocking": True}) as s:
        s.plan()
        s.factorize()
        x = s.solve()
        assert_solves(ref, x, b0, "float32")
    with DirectSolver(a, b) as s:
        s.plan()
        s.factorize(stream=stream)
        x = s.solve(stream=stream)
        stream.synchronize()
        assert_solves(ref, x, b0, "float32")
    x = direct_solver(a, b, stream=stream)
    stream.synchronize()
    assert_solves(ref, x, b0, "float32")


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("method", ["loop", "batched"])
def test_singular_gpu_systems(package, method):
    _need(package)
    a = np.stack([np.eye(5) + 0.1, np.ones((5, 5)), np.eye(5)])
    with pytest.raises(SingularMatrixError, match=r"a\[1\] is singular") as err:
        direct_solver(on_gpu(package, a), on_gpu(package, np.ones((3, 5))), options={"batch_method": method})
    assert err.value.problem == (1,) and isinstance(err.value, np.linalg.LinAlgError)
    spd = np.stack([np.eye(4), -np.eye(4)])
    with pytest.raises(SingularMatrixError, match=r"a\[1\] is not positive definite"):
        direct_solver(on_gpu(package, spd), on_gpu(package, np.ones((2, 4))),
                      options={"matrix_type": "spd", "batch_method": method})


@pytest.mark.parametrize("method", ["loop", "batched"])
def test_ill_conditioned_gpu_system_warns(method):
    cp = _cupy()
    a = np.stack([near_singular(6, 1.0), near_singular(6)])
    with pytest.warns(IllConditionedWarning, match=r"a\[1\] is numerically singular"):
        direct_solver(cp.asarray(a), cp.ones((2, 6)), options={"batch_method": method})
    a[0, 1, 1] = np.inf
    with pytest.warns(IllConditionedWarning, match=r"a\[0\] has non-finite pivots"):
        direct_solver(cp.asarray(a), cp.ones((2, 6)), options={"batch_method": method})


@pytest.mark.parametrize("method", ["loop", "batched"])
@pytest.mark.parametrize("n", [5, 33])
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_non_finite_entries_anywhere_warn_as_on_the_cpu(method, n, dtype):
    """The CPU engine's cases (test_solver_cpu.py: NaN and inf on, below and above the diagonal, a Cholesky NaN
    where LAPACK's potrf stops, the triangle a Cholesky factor never reads) on cuBLAS's/cuSOLVER's batched
    routines and on cuSOLVER's single-system ones: the same one warning, naming the same system."""
    cp = _cupy()

    def solve(a, b, kind):
        mt = "general" if kind == "lu" else "spd" if dtype[0] == "f" else "hpd"
        return cp.asnumpy(direct_solver(cp.asarray(a), cp.asarray(b), options={"matrix_type": mt,
                                                                                "batch_method": method}))
    check_nonfinite(solve, n, dtype)


def _nonfinite_in_factors(a) -> str:
    """Where cuSOLVER's LU of ``a`` (the single-system engine, column-major, in place) holds NaN or inf."""
    cp = _cupy()
    f = cp.asarray(np.asfortranarray(a))
    given = int(cp.count_nonzero(~cp.isfinite(f)))  # what the library was handed
    status = "info 0"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        with DirectSolver(f, cp.ones(a.shape[0]), options={"inplace_a": True, "batch_method": "loop"}) as s:
            s.plan()
            try:
                s.factorize()
            except SingularMatrixError as exc:
                status = f"cuSOLVER's info {exc.info}"
    lu = cp.asnumpy(f)
    where = np.argwhere(~np.isfinite(lu))
    diag = int(np.sum(where[:, 0] == where[:, 1]))
    return (f"{status}; {given} non-finite entries given, {len(where)} in the factors ({diag} on U's diagonal), first "
            f"{where[:4].tolist()}")


@pytest.mark.parametrize("n", [257, 1031])
def test_pivots_of_large_gpu_systems(n):
    """The wide pivot kernel (a block per system) on orders past its 256 threads, after cuSOLVER's LU: a NaN of
    a lands wherever cuSOLVER's pivoting puts it (on U's diagonal or in L), and the kernel checks every entry."""
    cp = _cupy()
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        x = direct_solver(cp.asarray(a), cp.ones(n))
    np.testing.assert_allclose(a @ cp.asnumpy(x), np.ones(n), rtol=1e-10, atol=1e-10)
    with pytest.warns(IllConditionedWarning, match="numerically singular"):
        direct_solver(cp.asarray(near_singular(n)), cp.ones(n))
    a[n - 2, n - 2] = np.nan
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            direct_solver(cp.asarray(a), cp.ones(n))
        except SingularMatrixError as exc:
            pytest.fail(f"cuSOLVER reported the NaN as a zero pivot ({exc}); {_nonfinite_in_factors(a)}")
    messages = [str(w.message) for w in seen if issubclass(w.category, IllConditionedWarning)]
    assert any("non-finite pivots" in m for m in messages), f"{messages}; {_nonfinite_in_factors(a)}"


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("n", [6, 32, 257, 1031])
def test_pivot_kernels_on_the_gpu(wide, n):
    """The kernels alone on factors written by hand (no library in between): magnitudes, NaN and inf on the
    diagonal at thread 0, the last thread and past the block's 256 threads, and off it (the narrow kernel's own
    read of every entry; the single-system engine's scan before its wide kernel)."""
    cp = _cupy()
    from cumath.linalg._solver._backends import _pivots

    device_id = cp.cuda.Device().id
    kernel = _pivots.pivot_kernel("float64", device_id, wide=wide)
    scan = _pivots.pivot_kernel("float64", device_id, scan=True)
    assert kernel is not None and scan is not None, "the pivot kernels did not build (see the log)"
    rng = np.random.default_rng(n)
    count = 3 if wide else 5
    ld = n + 2

    def run(mats, infos=(0,) * count, power=1):
        store = cp.zeros((count, n, ld))  # store[p, j, i]: column-major with leading dimension ld
        store[:, :, :n] = cp.asarray(np.swapaxes(mats, 1, 2))
        ptrs = cp.asarray(np.array([store[p].data.ptr for p in range(count)], np.uint64))
        info = cp.asarray(np.asarray(infos, np.int32))
        out, flagged, bad = cp.full((count, 2), -1.0), cp.zeros(1, cp.uint64), cp.zeros(count, cp.uint64)
        stream, epoch = cp.cuda.get_current_stream().ptr, 7
        if wide:
            scan.launch(_pivots.scan_grid(n, count), _pivots.WIDE, 0, stream, ptrs.data.ptr, ld, n, count, 0, epoch,
                        bad.data.ptr)
            grid, block = count, _pivots.WIDE
        else:
            grid, block = -(-count // 4), _pivots.NARROW_BLOCK
        kernel.launch(grid, block, 0, stream, ptrs.data.ptr, ld, n, count, info.data.ptr,
                      bad.data.ptr if wide else 0, power, float(np.finfo(np.float64).eps), epoch, out.data.ptr,
                      flagged.data.ptr, 0)
        return cp.asnumpy(out), int(flagged.get()[0] == epoch)

    mats = rng.standard_normal((count, n, n)) + n * np.eye(n)
    d = np.abs(np.diagonal(mats, axis1=1, axis2=2))
    out, flagged = run(mats)
    np.testing.assert_allclose(out, np.stack([d.min(1), d.max(1)], 1), rtol=1e-14)
    assert flagged == 0
    assert run(mats, infos=(0,) * (count - 1) + (2,))[1] == 1
    places = [(i, i) for i in sorted({0, n - 2, n - 1, 255, 256} & set(range(n)))]
    places += [(n - 1, n - 2), (0, n - 1), (n - 1, 0)]  # off the diagonal: L and U (both kernels' checks)
    for value in (np.nan, np.inf):
        for i, j in places:
            bad = mats.copy()
            bad[1, i, j] = value
            out, flagged = run(bad)
            assert flagged == 1 and np.isnan(out[1]).all(), (value, i, j)


def test_the_callers_cusolver_handle():
    cp = _cupy()
    from cupy.cuda import device

    handle = device.get_cusolver_handle()
    a0, b0, ref = system((), 30, 2, "float64")
    with DirectSolver(cp.asarray(a0), cp.asarray(b0), options={"handle": handle}) as s:
        s.plan()
        s.factorize()
        assert_solves(ref, s.solve(), b0, "float64")
    # the handle still works after the solver freed its resources
    x = direct_solver(cp.asarray(a0), cp.asarray(b0), options={"handle": handle})
    assert_solves(ref, x, b0, "float64")


def test_explicit_gpu_batch():
    cp = _cupy()
    systems = [system((), n, k, "float64") for n, k in ((3, 1), (40, 2), (7, 5))]
    xs = direct_solver([cp.asarray(s[0]) for s in systems], [cp.asarray(s[1]) for s in systems])
    for (a0, b0, ref), x in zip(systems, xs):
        assert_solves(ref, x, b0, "float64")


def test_stateless_gpu_calls_plan_once():
    cp = _cupy()
    plan_cache.clear()
    plan_cache.reset_stats()
    for _ in range(3):
        a0, b0, ref = system((64,), 16, 1, "float32")
        assert_solves(ref, direct_solver(cp.asarray(a0), cp.asarray(b0)), b0, "float32")
    assert plan_cache.stats()["misses"] == 1 and plan_cache.stats()["hits"] == 2
    plan_cache.clear()


def test_agrees_with_torch():
    torch = _torch_cuda()
    a0, b0, ref = system((32,), 24, 2, "float32")
    a, b = torch.from_numpy(a0).cuda(), torch.from_numpy(b0).cuda()
    x = direct_solver(a, b)
    torch.testing.assert_close(x, torch.linalg.solve(a, b), rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-rA"]))


@pytest.mark.parametrize("package", ["cupy", "torch"])
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("layout", ["C", "F", "step"])
@pytest.mark.parametrize("n", [257, 1031])
def test_copy_with_the_input_scan_on_the_gpu(package, dtype, layout, n):
    """The copy of a dense a into the plan's buffer with the scan for NaN and inf in the same pass (C and F: the
    buffer's order), the copy then the flat scan (step: a strided a): sound systems solve, a never changes, and a
    NaN or inf anywhere in a (first entry, last entry, off the diagonal) is reported, the plan reused after it."""
    if package == "cupy":
        _cupy()
    else:
        _torch_cuda()
    rng = np.random.default_rng(n + len(layout))
    a0 = (rng.standard_normal((n, n)) + n * np.eye(n)).astype(dtype)
    b0 = rng.standard_normal(n).astype(dtype)
    for where, value in ((None, None), ((0, 0), np.nan), ((n - 1, n - 1), np.inf), ((n // 3, n - 2), np.nan),
                         (None, None)):
        a = a0.copy()
        if where is not None:
            a[where] = value
        ga, gb = on_gpu(package, a, layout), on_gpu(package, b0)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            x = direct_solver(ga, gb)
        messages = [str(w.message) for w in seen if issubclass(w.category, IllConditionedWarning)]
        assert any("non-finite pivots" in m for m in messages) == (where is not None), (where, messages)
        np.testing.assert_array_equal(to_host(ga), a)  # the caller's a is only read
        if where is None:
            assert_solves(a0, x, b0, dtype)


@pytest.mark.parametrize("kind", ["lu", "cholesky"])
def test_non_deterministic_mode_solves(kind):
    """deterministic=False (cuSOLVER's non-deterministic algorithms) on a large system: the same residuals."""
    cp = _cupy()
    n = 1031
    rng = np.random.default_rng(3)
    m = rng.standard_normal((n, n))
    a = m @ m.T + n * np.eye(n) if kind == "cholesky" else m + n * np.eye(n)
    b = rng.standard_normal((n, 2))
    x = direct_solver(cp.asarray(a), cp.asarray(b), options={"matrix_type": MT[kind], "deterministic": False})
    assert_solves(a, x, b, "float64")


def _routines(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("solver engine:")]
    return lines[-1] if lines else ""


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("nrhs", ["vector", 1, 3])
@pytest.mark.parametrize("n", [2, 257, 1031])
def test_lu_solve_step_without_getrs(dtype, layout, nrhs, n, caplog, monkeypatch):
    """The solve step of single large LU systems: getrf's interchanges as one permutation (cumath's kernel), then
    two cuBLAS trsm calls, trans N (an F-order a) and T (a C-order a: its transpose is factorized), on random
    matrices that pivot on almost every row; the same solution as getrs (CUMATH_SOLVER_KERNEL=0)."""
    import logging

    cp = _cupy()
    rng = np.random.default_rng(n * 7 + len(layout))
    a0 = rng.standard_normal((n, n))
    if dtype.startswith("complex"):
        a0 = a0 + 1j * rng.standard_normal((n, n))
    a0 = a0.astype(dtype)
    b0 = rng.standard_normal(n if nrhs == "vector" else (n, nrhs)).astype(dtype)
    ga = cp.asarray(a0, order=layout)
    caplog.set_level(logging.INFO, logger="cumath")
    x = direct_solver(ga, cp.asarray(b0), options={"batch_method": "loop"})
    assert "cumath_lu_permute" in _routines(caplog) and "trsm" in _routines(caplog), _routines(caplog)
    assert_solves(a0, x, b0, dtype)
    np.testing.assert_array_equal(ga.get(), a0)
    monkeypatch.setenv("CUMATH_SOLVER_KERNEL", "0")
    plan_cache.clear()
    y = direct_solver(ga, cp.asarray(b0), options={"batch_method": "loop"})
    assert "Xgetrs" in _routines(caplog), _routines(caplog)
    tol = {"float32": 1e-3, "complex64": 1e-3}.get(dtype, 1e-10)
    np.testing.assert_allclose(x.get(), y.get(), rtol=tol, atol=tol * np.abs(y.get()).max())


def test_lu_solve_step_stateful_streams_and_new_b():
    """A DirectSolver reusing its factors for new right-hand sides on another stream (the permutation and trsm
    follow the plan's stream), and an explicit batch of two large systems (one launch per system, one scratch)."""
    cp = _cupy()
    n = 701
    rng = np.random.default_rng(11)
    a0 = rng.standard_normal((n, n))
    b0 = rng.standard_normal((n, 2))
    with DirectSolver(cp.asarray(a0), cp.asarray(b0)) as s:
        s.plan()
        s.factorize()
        assert_solves(a0, s.solve(), b0, "float64")
        other = cp.cuda.Stream(non_blocking=True)
        for k in range(3):
            b1 = rng.standard_normal((n, 2))
            with other:
                gb = cp.asarray(b1)
            s.reset_operands(b=gb, stream=other)
            x = s.solve()
            assert_solves(a0, x.get(stream=other), b1, "float64")
    a1 = rng.standard_normal((n, n))
    xs = direct_solver([cp.asarray(a0), cp.asarray(a1)], [cp.asarray(b0), cp.asarray(b0)])
    assert_solves(a0, xs[0], b0, "float64")
    assert_solves(a1, xs[1], b0, "float64")


@pytest.mark.parametrize("n", [30011])
def test_lu_solve_step_with_pivots_in_device_memory(n, caplog):
    """An order whose pivots no longer fit the shared memory beside the permutation (8 bytes a row over the
    device's opt-in limit): the kernel reads them from device memory; residual in float64 on the GPU."""
    import logging

    cp = _cupy()
    rng = cp.random.default_rng(5)
    a = rng.standard_normal((n, n), dtype=cp.float32)
    b = rng.standard_normal((n, 1), dtype=cp.float32)
    caplog.set_level(logging.INFO, logger="cumath")
    x = direct_solver(a, b, options={"batch_method": "loop"})
    assert "cumath_lu_permute" in _routines(caplog)
    r = a.astype(cp.float64) @ x.astype(cp.float64) - b
    err = float(cp.abs(r).max() / (cp.abs(a).max() * max(1.0, float(cp.abs(x).max())) * n))
    assert err < 1e-6, err
