"""The small-system LU kernels (batch_method 'auto' / 'kernel', order up to 32) on a real GPU through the public
API: CuPy and PyTorch CUDA operands of every dtype and layout, one vector or several right-hand sides per system,
results against NumPy in float64 and against the library path (cuBLAS's batched LU), the same exceptions,
warnings, infos and batch indices, solves after factorize() with new right-hand sides, streams, in-place
factors, and the 16,384 x 32 x 32 float32 batch of the benchmark. Marked ``gpu``. Run on a GPU machine with::

    python -m pytest -q tests/linalg/test_solver_small_gpu.py
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from cumath.config import plan_cache
from cumath.linalg._solver import DirectSolver, IllConditionedWarning, SingularMatrixError, direct_solver
from helpers.matrix import random_array
from test_solver_cpu import near_singular, system
from test_solver_gpu import PACKAGES, _cupy, _need, assert_solves, on_gpu, to_host

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")
KERNEL = "cumath's LU kernels for small systems"


def _engine(s) -> str:
    return s._executor.engine.description if hasattr(s._executor, "engine") else ""


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F", "step"])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 31, 32])
def test_kernel_solves(package, dtype, layout, n):
    _need(package)
    for batch, rhs in (((), 2), ((5,), 1), ((2, 3), "vector")):
        vector = rhs == "vector"
        a0, b0, ref = system(batch, n, 1 if vector else rhs, dtype, "lu", vector)
        a, b = on_gpu(package, a0, layout), on_gpu(package, b0, layout)
        x = direct_solver(a, b)
        assert type(x) is type(b)
        assert_solves(ref, x, b0, dtype)
        np.testing.assert_array_equal(to_host(a), a0)  # never written
        np.testing.assert_array_equal(to_host(b), b0)
        lib = direct_solver(a, b, options={"batch_method": "batched" if batch else "loop"})
        tol = 1e3 * n * np.finfo(dtype).eps
        np.testing.assert_allclose(to_host(x), to_host(lib), rtol=tol, atol=tol * np.abs(to_host(lib)).max())
        with DirectSolver(a, b) as s:
            s.plan()
            assert KERNEL in _engine(s)
            s.factorize()
            assert_solves(ref, s.solve(), b0, dtype)
            b1 = random_array(b0.shape, dtype)
            s.reset_operands(b=on_gpu(package, b1, layout))
            assert_solves(ref, s.solve(), b1, dtype)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_benchmark_batch(package):
    """16,384 systems of order 32 in float32, b (batch, 32) and (batch, 32, 4): kernel and library agree."""
    _need(package)
    rng = np.random.default_rng(0)
    a0 = rng.standard_normal((16384, 32, 32)).astype(np.float32)
    for b0 in (rng.standard_normal((16384, 32)).astype(np.float32),
               rng.standard_normal((16384, 32, 4)).astype(np.float32)):
        a, b = on_gpu(package, a0), on_gpu(package, b0)
        x = to_host(direct_solver(a, b))
        ref = np.linalg.solve(a0.astype(np.float64), b0.astype(np.float64)[..., None] if b0.ndim == 2 else b0)
        ref = ref[..., 0] if b0.ndim == 2 else ref
        err = np.linalg.norm((x - ref).reshape(16384, -1), axis=1) / np.linalg.norm(ref.reshape(16384, -1), axis=1)
        cond = np.linalg.cond(a0.astype(np.float64))
        assert (err <= 100 * 32 * np.finfo(np.float32).eps * cond).all()
        lib = to_host(direct_solver(a, b, options={"batch_method": "batched"}))
        rel = np.linalg.norm((x - lib).reshape(16384, -1), axis=1) / np.linalg.norm(lib.reshape(16384, -1), axis=1)
        assert (rel <= 100 * 32 * np.finfo(np.float32).eps * cond).all()


@pytest.mark.parametrize("method", ["auto", "batched"])
def test_singular_systems_raise_as_the_library_path_does(method):
    cp = _cupy()
    a0, b0, _ = system((2, 3), 6, 1, "float64", "lu")
    a0[1, 2, :, 3] = 0
    a0[0, 1, :, 0] = 0
    a = cp.asarray(np.swapaxes(a0, -1, -2).copy()).swapaxes(-1, -2)  # column-major matrices
    with pytest.raises(SingularMatrixError, match=r"a\[0, 1\] is singular: U\[0, 0\].*\(2 of the 6") as e:
        direct_solver(a, cp.asarray(b0), options={"batch_method": method})
    assert (e.value.problem, e.value.info, e.value.count) == ((0, 1), 1, 2)


def test_warnings_and_non_finite_systems():
    cp = _cupy()
    n = 16
    rng = np.random.default_rng(3)
    good = rng.standard_normal((3, n, n)) + n * np.eye(n)
    ones = cp.ones((3, n))
    for place in ((2, 5, 2), (0, n - 1, n - 1), (1, 0, n - 1)):
        bad = good.copy()
        bad[place] = np.nan
        with pytest.warns(IllConditionedWarning, match=rf"a\[{place[0]}\] has non-finite pivots"):
            direct_solver(cp.asarray(bad), ones)
    sing = good.copy()
    sing[1] = near_singular(n)
    with pytest.warns(IllConditionedWarning, match=r"a\[1\] is numerically singular"):
        direct_solver(cp.asarray(sing), ones)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        x = direct_solver(cp.asarray(good), ones)
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", good, x.get()), 1.0, rtol=1e-10)


def test_streams_and_inplace():
    cp = _cupy()
    import scipy.linalg as sla

    a0, b0, ref = system((4,), 11, 2, "float64", "lu")
    f = cp.asarray(np.swapaxes(a0, -1, -2).copy()).swapaxes(-1, -2)  # column-major matrices: in place
    bf = cp.asarray(np.swapaxes(b0, -1, -2).copy()).swapaxes(-1, -2)
    stream = cp.cuda.Stream(non_blocking=True)
    with DirectSolver(f, bf, options={"inplace_a": True, "inplace_b": True}, stream=stream) as s:
        s.plan()
        s.factorize()
        x = s.solve()
        stream.synchronize()
    assert x is bf
    assert_solves(ref, bf, b0, "float64")
    for i in range(4):
        np.testing.assert_allclose(f[i].get(), sla.lu_factor(a0[i])[0], rtol=1e-12, atol=1e-12)


def test_choice_is_logged_and_can_be_forced(monkeypatch, caplog):
    cp = _cupy()
    a0, b0, ref = system((8,), 32, 1, "float32", "lu")
    plan_cache.clear()
    with caplog.at_level(logging.DEBUG, logger="cumath"):
        direct_solver(cp.asarray(a0), cp.asarray(b0))
    assert "solver batch method: kernel" in caplog.text and KERNEL in caplog.text
    monkeypatch.setenv("CUMATH_SOLVER_KERNEL", "0")
    with DirectSolver(cp.asarray(a0), cp.asarray(b0)) as s:
        s.plan()
        assert "cuBLAS" in _engine(s)
        s.factorize()
        assert_solves(ref, s.solve(), b0, "float32")


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("n", [1, 3, 16, 32])
def test_cholesky_kernel_solves(package, dtype, layout, n):
    _need(package)
    mt = "hpd" if dtype.startswith("complex") else "spd"
    for batch, rhs in (((), 2), ((6,), 1), ((2, 3), "vector")):
        vector = rhs == "vector"
        a0, b0, ref = system(batch, n, 1 if vector else rhs, dtype, "cholesky", vector)
        a, b = on_gpu(package, a0, layout), on_gpu(package, b0, layout)
        with DirectSolver(a, b, options={"matrix_type": mt}) as s:
            s.plan()
            assert "cumath's Cholesky kernels" in _engine(s)
            s.factorize()
            assert_solves(ref, s.solve(), b0, dtype)
        assert_solves(ref, direct_solver(a, b, options={"matrix_type": mt}), b0, dtype)
        np.testing.assert_array_equal(to_host(a), a0)


@pytest.mark.parametrize("method", ["auto", "batched"])
def test_not_positive_definite_raises_as_the_library_path_does(method):
    cp = _cupy()
    a0, b0, _ = system((2, 3), 6, 1, "float64", "cholesky")
    a0[1, 0, 3, 3] = -50.0
    a = cp.asarray(np.swapaxes(a0, -1, -2).copy()).swapaxes(-1, -2)  # column-major matrices
    with pytest.raises(SingularMatrixError, match=r"a\[1, 0\] is not positive definite: its leading minor of order "
                                                  r"4 is not positive") as e:
        direct_solver(a, cp.asarray(b0), options={"batch_method": method, "matrix_type": "spd"})
    assert (e.value.problem, e.value.info) == ((1, 0), 4)
