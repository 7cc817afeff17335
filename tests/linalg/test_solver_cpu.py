"""The dense direct solver on the CPU (LAPACK): residuals against NumPy float64 for every dtype, layout, batch
and right-hand side shape; LU and Cholesky; in-place factors and solutions; singular and near-singular systems;
NumPy and PyTorch CPU operands; the stateless call's plan cache and frame budget; explicit batches."""

from __future__ import annotations

import logging
import sys
import warnings

import numpy as np
import pytest

from cumath._core.execution import ExecutionCPU, available_cpus
from cumath.config import plan_cache
from cumath.errors import CumathError, InvalidStateError
from cumath.errors import SingularMatrixError as CumathSingular
from cumath.linalg._solver import (DirectSolver, DirectSolverOptions, IllConditionedWarning, SingularMatrixError,
                                   direct_solver)
from helpers.matrix import package_params, random_array, with_layout

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 5e-5, "float64": 1e-12, "complex64": 5e-5, "complex128": 1e-12}
LAYOUTS = ("C", "F", "reversed", "step", "permuted")


def system(batch, n, nrhs, dtype, kind="lu", vector=False):
    """(a, b, the matrix the solver must solve with): fresh well-conditioned random systems; for Cholesky,
    Hermitian positive definite ones whose strict upper triangle holds garbage (only the lower one is read)."""
    m = random_array(tuple(batch) + (n, n), dtype)
    b = random_array(tuple(batch) + ((n,) if vector else (n, nrhs)), dtype)
    if kind == "lu":
        a = m + float(2 * np.sqrt(n)) * np.eye(n, dtype=dtype)
        return a, b, a
    h = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n, dtype=dtype)
    a = h.copy()
    iu = np.triu_indices(n, 1)
    a[..., iu[0], iu[1]] = 1e3
    return a, b, h


def assert_solves(ref_a, x, b, dtype):
    """The relative residual of ``ref_a @ x = b`` in float64 is within the dtype's precision."""
    x = np.asarray(x)
    assert x.shape == b.shape and x.dtype == np.dtype(dtype)
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    vec = b.ndim == ref_a.ndim - 1
    lhs = ref_a.astype(wide) @ (x[..., None] if vec else x).astype(wide)
    rhs = (b[..., None] if vec else b).astype(wide)
    err = np.abs(lhs - rhs).max() / (np.abs(ref_a).max() * max(1.0, np.abs(x).max()) * ref_a.shape[-1])
    assert err < TOL[dtype], err


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("batch,n", [((), 1), ((), 13), ((3,), 7), ((2, 3), 5)])
@pytest.mark.parametrize("rhs", ["vector", 1, 4])
def test_lu_residuals(dtype, layout, batch, n, rhs):
    a0, b0, ref = system(batch, n, 1 if rhs == "vector" else rhs, dtype, vector=rhs == "vector")
    a, b = with_layout(a0, layout), with_layout(b0, layout)
    x = direct_solver(a, b)
    assert_solves(ref, x, b0, dtype)
    np.testing.assert_array_equal(a, a0)  # never written without inplace_a / inplace_b
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("batch,n", [((), 11), ((4,), 6)])
def test_cholesky_residuals(dtype, layout, batch, n):
    mt = "hpd" if dtype.startswith("complex") else "spd"
    a0, b0, ref = system(batch, n, 3, dtype, "cholesky")
    x = direct_solver(with_layout(a0, layout), with_layout(b0, layout), options={"matrix_type": mt})
    assert_solves(ref, x, b0, dtype)


def test_hpd_for_real_matrices_is_spd():
    a0, b0, ref = system((), 9, 2, "float64", "cholesky")
    np.testing.assert_allclose(direct_solver(a0, b0, options={"matrix_type": "HPD"}),
                               direct_solver(a0, b0, options={"matrix_type": "spd"}), rtol=1e-14)


@pytest.mark.parametrize("package", package_params())
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_packages_get_their_own_kind_back(package, dtype):
    a0, b0, ref = system((2,), 8, 3, dtype)
    if package == "torch":
        import torch

        a, b = torch.from_numpy(a0), torch.from_numpy(b0)
    else:
        a, b = a0, b0
    x = direct_solver(a, b)
    assert type(x) is type(b)
    assert_solves(ref, np.asarray(x), b0, dtype)
    with DirectSolver(a, b) as s:
        s.plan()
        s.factorize()
        x = s.solve()
        assert type(x) is type(b)
        assert_solves(ref, np.asarray(x), b0, dtype)


def test_torch_tensors_with_strides():
    torch = pytest.importorskip("torch")
    a0, b0, ref = system((3,), 6, 2, "float64")
    a = torch.from_numpy(np.ascontiguousarray(np.swapaxes(a0, -1, -2))).transpose(-1, -2)
    b = torch.from_numpy(b0.copy())[..., ::1]
    x = direct_solver(a, b, options={"inplace_b": True})
    assert x is b
    assert_solves(ref, b.numpy(), b0, "float64")


def test_result_layout_is_column_major_per_matrix():
    a0, b0, _ = system((2,), 5, 3, "float64")
    x = direct_solver(a0, b0)
    assert x.strides == (15 * 8, 8, 5 * 8)


# -------------------------------------------------------------------------------------------- in place
@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("layout", ["C", "F", "step"])
@pytest.mark.parametrize("kind", ["lu", "cholesky"])
def test_inplace_factors_and_solution(dtype, layout, kind):
    import scipy.linalg as sla

    mt = "general" if kind == "lu" else "hpd"
    a0, b0, ref = system((2,), 6, 2, dtype, kind)
    a, b = with_layout(a0, layout), with_layout(b0, layout)
    with DirectSolver(a, b, options={"inplace_a": True, "inplace_b": True, "matrix_type": mt}) as s:
        s.plan()
        s.factorize()
        assert s.solve() is b
    assert_solves(ref, b, b0, dtype)
    for i in range(2):
        if kind == "lu":
            lu, piv = sla.lu_factor(a0[i])
            np.testing.assert_allclose(a[i], lu, rtol=1e-5, atol=1e-5)
        else:
            low = np.tril(a[i])
            np.testing.assert_allclose(low @ low.conj().T, ref[i], rtol=1e-5, atol=1e-4)
            iu = np.triu_indices(6, 1)
            np.testing.assert_array_equal(a[i][iu], a0[i][iu])  # the strict upper triangle is left as it was


def test_inplace_needs_writeable_unshared_operands():
    a0, b0, _ = system((), 4, 1, "float64")
    ro = a0.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="inplace_a=True writes into a, but a is read-only"):
        DirectSolver(ro, b0, options={"inplace_a": True})
    shared = np.broadcast_to(a0, (3, 4, 4))
    repeated = np.lib.stride_tricks.as_strided(b0.copy(), (3, 4, 1), (0, 8, 8))  # writeable, overlapping
    with pytest.raises(ValueError, match=r"elements of b share memory \(a broadcast or overlapping view, strides "
                                         r"\(0, 1, 1\)\); pass a copy"):
        DirectSolver(np.stack([a0] * 3), repeated, options={"inplace_b": True})
    x = direct_solver(shared, np.stack([b0] * 3))  # fine without in place
    assert x.shape == (3, 4, 1)
    with DirectSolver(a0.copy(), b0.copy(), options={"inplace_b": True}) as s:
        s.plan()
        with pytest.raises(ValueError, match="b is written in place, but the new b is read-only"):
            s.reset_operands(b=_readonly(b0))


def _readonly(x):
    y = x.copy()
    y.flags.writeable = False
    return y


# ------------------------------------------------------------------------------------------- failures
def test_singular_system_raises_linalg_error():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(SingularMatrixError, match=r"a is singular: U\[1, 1\] of its LU factorization .* "
                                                  r"exactly zero \(dgetrf info 2\)") as err:
        direct_solver(a, np.ones(2))
    e = err.value
    assert isinstance(e, np.linalg.LinAlgError) and isinstance(e, CumathSingular) and isinstance(e, CumathError)
    assert (e.problem, e.info, e.pivot, e.count) == (None, 2, 1, 1)


def test_singular_member_of_a_batch_is_named():
    a = np.stack([np.eye(3), np.eye(3), np.zeros((3, 3)), np.eye(3), np.zeros((3, 3)), np.eye(3)]).reshape(2, 3, 3, 3)
    with pytest.raises(SingularMatrixError, match=r"a\[0, 2\] is singular: U\[0, 0\] .*\(2 of the 6 systems of the "
                                                  r"batch failed; this is the first\)") as err:
        direct_solver(a, np.ones((2, 3, 3)))
    assert err.value.problem == (0, 2) and err.value.count == 2


def test_not_positive_definite():
    a = np.diag([2.0, 1.0, -1.0, 3.0])
    with pytest.raises(SingularMatrixError, match=r"a is not positive definite: its leading minor of order 3 is "
                                                  r"not positive \(dpotrf info 3\); use matrix_type='general'"):
        direct_solver(a, np.ones(4), options={"matrix_type": "spd"})
    x = direct_solver(a, np.ones(4))  # LU has no trouble with it
    np.testing.assert_allclose(a @ x, np.ones(4))


def test_a_failed_factorization_leaves_the_solver_unfactorized():
    a, b, _ = system((), 5, 1, "float64")
    with DirectSolver(a, b) as s:
        s.plan()
        s.factorize()
        s.reset_operands(a=np.zeros((5, 5)))
        with pytest.raises(SingularMatrixError):
            s.factorize()
        with pytest.raises(InvalidStateError, match=r"DirectSolver.solve\(\) needs a factorization: call "
                                                    r"factorize\(\) first"):
            s.solve()
        s.reset_operands(a=a)
        s.factorize()
        assert_solves(a, s.solve(), b, "float64")


def near_singular(n, tiny=1e-20, dtype="float64"):
    """An upper triangular matrix with one tiny pivot: LU of it and of its transpose keep the diagonal."""
    return (np.triu(0.1 * random_array((n, n), dtype), 1) + np.diag([1.0] * (n - 1) + [tiny])).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_numerically_singular_system_warns(dtype, layout):
    a = with_layout(near_singular(7, 1e-30 if dtype == "float32" else 1e-20, dtype), layout)
    with pytest.warns(IllConditionedWarning, match=r"a is numerically singular: the smallest pivot of its "
                                                   r"factorization is .* of the largest, below the "):
        direct_solver(a, np.ones(7, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        direct_solver(near_singular(7, 1e-3, dtype), np.ones(7, dtype))  # uneven but fine: no warning


def test_non_finite_entries_warn():
    a, b, _ = system((3,), 4, 1, "float64")
    a[1, 0, 0] = np.nan
    with pytest.warns(IllConditionedWarning, match=r"a\[1\] has non-finite pivots"):
        direct_solver(a, b)


def nonfinite_cases(n):
    """(kind, (i, j) of a, value, whether it is reported): NaN and inf on the diagonal, below it (where a pivot
    search that passes over a NaN leaves it: in L) and above it; for Cholesky one on the diagonal (LAPACK's potrf
    stops there with info > 0: still the non-finite warning, not SingularMatrixError), one in the lower triangle
    it reads, and one in the strict upper triangle it never reads (not reported: not part of the system)."""
    nan, inf = np.nan, np.inf
    return [("lu", (0, 0), nan, True), ("lu", (n - 1, 0), nan, True), ("lu", (n - 1, n - 2), inf, True),
            ("lu", (0, n - 1), -inf, True), ("lu", (n // 2, n // 3), nan, True),
            ("cholesky", (2, 2), nan, True), ("cholesky", (n - 1, 1), inf, True), ("cholesky", (n - 1, 0), nan, True),
            ("cholesky", (1, n - 1), nan, False)]


def check_nonfinite(solve, n, dtype="float64", kinds=("lu", "cholesky")):
    """Every case of ``nonfinite_cases`` on the middle system of a batch of three through ``solve(a, b, kind)``
    (which returns x as a NumPy array): the one warning, naming a[1], never an error; the other systems solved."""
    for kind, (i, j), value, reported in nonfinite_cases(n):
        if kind not in kinds:
            continue
        a, b, ref = system((3,), n, 2, dtype, kind)
        a[1, i, j] = value
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            x = np.asarray(solve(a, b, kind))
        messages = [str(w.message) for w in seen if issubclass(w.category, IllConditionedWarning)]
        case = (kind, (i, j), value, messages)
        if reported:
            assert len(messages) == 1 and messages[0].startswith("a[1] has non-finite pivots"), case
            assert "(" not in messages[0].split("meaningful", 1)[1], case  # one system of the batch, not more
        else:
            assert messages == [], case
            assert_solves(ref[1], x[1], b[1], dtype)
        for p in (0, 2):
            assert_solves(ref[p], x[p], b[p], dtype)


@pytest.mark.parametrize("n", [5, 33])
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_non_finite_entries_anywhere_warn_the_same_way(n, dtype):
    """A NaN or inf anywhere in a (or its factors) is reported by one IllConditionedWarning, as the GPU engines
    report it (test_solver_emulated_gpu.py, test_solver_gpu.py run the same cases)."""
    def solve(a, b, kind):
        return direct_solver(a, b, options={"matrix_type": "general" if kind == "lu" else "spd" if dtype[0] == "f"
                                            else "hpd"})
    check_nonfinite(solve, n, dtype)


def test_finiteness_check_of_the_cpu_factors():
    """The CPU engine's check of the factors alone, on factors written by hand: a NaN in L (off the diagonal,
    which a check of the diagonal does not see), an overflowing sum of finite entries (not flagged), the triangle
    a Cholesky factor holds."""
    import types

    from cumath.linalg._solver._backends.lapack import LapackEngine

    n = 6
    rng = np.random.default_rng(0)
    f = rng.standard_normal((4, n, n))  # (system, column, row), as the engine's views index
    engine = types.SimpleNamespace(geom=types.SimpleNamespace(n=n), lu=True,
                                   problems=types.SimpleNamespace(factor=types.SimpleNamespace(uplo="L")))
    assert LapackEngine._finite(engine, [f]) is None
    f[2, 0, n - 1] = np.nan  # column 0, row n - 1: L
    assert LapackEngine._finite(engine, [f]).tolist() == [False, False, True, False]
    f[2, 0, n - 1] = 1.0
    f[1] = np.finfo(np.float64).max  # the sum overflows; every entry is finite
    assert LapackEngine._finite(engine, [f]) is None
    assert LapackEngine._finite(engine, [f[:1], f[1:2], f[2:]]) is None  # one view per system (gathered)
    engine.lu = False
    f[3, 4, 1] = np.inf  # column 4, row 1: above the diagonal, outside a lower factor
    assert LapackEngine._finite(engine, [f]) is None
    engine.problems.factor.uplo = "U"
    assert LapackEngine._finite(engine, [f]).tolist() == [False, False, False, True]


# ------------------------------------------------------------------------------------- argument errors
@pytest.mark.parametrize("a_shape,b_shape,match", [
    ((3,), (3,), r"a must be a square matrix \(n, n\) or a batch of them"),
    ((3, 4), (3,), "a must be a square matrix"),
    ((2, 3, 3), (3,), r"b of shape \(3,\) does not fit a of shape \(2, 3, 3\): b must have shape \(2, 3\)"),
    ((3, 3), (4,), r"b of shape \(4,\) does not fit a"),
    ((2, 3, 3), (3, 3, 1), "does not fit"),
])
def test_shape_errors(a_shape, b_shape, match):
    with pytest.raises(ValueError, match=match):
        DirectSolver(np.ones(a_shape), np.ones(b_shape))


def test_dtype_errors():
    with pytest.raises(TypeError, match="a has dtype int64; the direct solver supports float32, float64"):
        DirectSolver(np.eye(3, dtype=np.int64), np.ones(3, dtype=np.int64))
    with pytest.raises(TypeError, match="b has dtype float32 but a has float64; pass a and b of one dtype"):
        DirectSolver(np.eye(3), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="matrix_type='spd' is for real matrices;.*use matrix_type='hpd'"):
        DirectSolver(np.eye(3, dtype=complex), np.ones(3, complex), options={"matrix_type": "spd"})


def test_operands_of_different_packages():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="b is a torch array while a is a numpy array"):
        DirectSolver(np.eye(3), torch.ones(3, dtype=torch.float64))


@pytest.mark.parametrize("options,error,match", [
    ({"matrix_type": "symmetric"}, ValueError, r"matrix_type='symmetric' is not supported; the allowed values are "
                                               r"'general', 'spd', 'hpd'"),
    ({"matrix_type": 7}, ValueError, "matrix_type=7 is not supported"),
    ({"batch_method": "fast"}, ValueError, r"batch_method='fast' is not supported; the allowed values are "
                                           r"\['auto', 'loop', 'batched', 'kernel'\]"),
    ({"cpu_lapack": "netlib"}, ValueError, "cpu_lapack='netlib' is not supported"),
    ({"deterministic": "yes"}, ValueError, r"deterministic='yes' is not supported; the allowed values are "
                                           r"\[True, False\]"),
    ({"blocking": False}, ValueError, r"blocking=False is not supported; the allowed values are \[True, 'auto'\]"),
    ({"inplace_a": 1.5}, ValueError, "inplace_a=1.5 is not supported"),
    ({"handle": "h"}, TypeError, r"handle must be a cuSOLVER handle \(an int\) or None, not str"),
    ({"logger": "log"}, TypeError, "logger must be a logging.Logger, not str"),
    ({"inplace": True}, TypeError, r"unknown direct solver options \['inplace'\] for DirectSolverOptions"),
])
def test_option_errors(options, error, match):
    with pytest.raises(error, match=match):
        DirectSolver(np.eye(3), np.ones(3), options=options)


def test_options_object_dict_and_equality():
    log = logging.getLogger("mine")
    o1 = DirectSolverOptions(matrix_type="SPD", logger=log)
    o2 = DirectSolverOptions(matrix_type=3)
    assert o1 == o2 and hash(o1) == hash(o2) and o1.matrix_type.name == "SPD"
    assert DirectSolverOptions() != DirectSolverOptions(inplace_a=True)
    with pytest.raises(TypeError, match="options must be a DirectSolverOptions, a dict of its fields or None"):
        DirectSolver(np.eye(2), np.ones(2), options=["spd"])


# -------------------------------------------------------------------------------------------- lifecycle
def test_lifecycle_and_state_messages():
    a, b, _ = system((), 6, 2, "float64")
    s = DirectSolver(a, b)
    for method in (s.factorize, s.solve):
        with pytest.raises(InvalidStateError, match=rf"DirectSolver.{method.__name__}\(\) needs a plan: call "
                                                    r"plan\(\) first"):
            method()
    s.plan()
    s.plan()  # twice does nothing
    with pytest.raises(InvalidStateError, match=r"DirectSolver.solve\(\) needs a factorization: call factorize"):
        s.solve()
    s.factorize()
    assert_solves(a, s.solve(), b, "float64")
    b2 = random_array(b.shape, "float64")
    s.reset_operands(b=b2)  # a new b: solved with the kept factorization
    assert_solves(a, s.solve(), b2, "float64")
    a2 = system((), 6, 2, "float64")[0]
    s.reset_operands(a=a2)  # a new a: factorize again
    with pytest.raises(InvalidStateError, match="call factorize"):
        s.solve()
    s.factorize()
    assert_solves(a2, s.solve(), b2, "float64")
    s.release_operands()
    with pytest.raises(InvalidStateError, match=r"the operands were released; call reset_operands\(a=\.\.\., "
                                                r"b=\.\.\.\) before solve\(\)"):
        s.solve()
    with pytest.raises(InvalidStateError, match="the operands were released"):
        s.factorize()
    with pytest.raises(ValueError, match="after release_operands\\(\\), every operand must be given again; "
                                         "missing a"):
        s.reset_operands(b=b)
    s.reset_operands(a=a, b=b)
    with pytest.raises(InvalidStateError, match="call factorize"):
        s.solve()
    s.factorize()
    assert_solves(a, s.solve(), b, "float64")
    assert s.nbytes > 0
    s.free()
    s.free()  # twice is fine
    for method in (s.plan, s.factorize, s.solve, s.release_operands):
        with pytest.raises(InvalidStateError, match=r"was called after free\(\); create a new object"):
            method()
    with pytest.raises(InvalidStateError, match="after free"):
        s.reset_operands(b=b)


def test_reset_mismatch_messages():
    a, b, _ = system((2,), 4, 1, "float64")
    with DirectSolver(a, b) as s:
        s.plan()
        with pytest.raises(ValueError, match=r"the new a does not match the planned one: shape \(4, 4\) \(planned: "
                                             r"\(2, 4, 4\)\).*create a new DirectSolver for it"):
            s.reset_operands(a=a[0])
        with pytest.raises(ValueError, match="the new b does not match the planned one: strides"):
            s.reset_operands(b=np.asfortranarray(b))
        with pytest.raises(ValueError, match="the new b does not match"):
            s.reset_operands_unchecked(b=b.astype(np.float32))
        s.reset_operands_unchecked(a=a.copy(), b=b.copy())
        s.factorize()
        assert_solves(a, s.solve(), b, "float64")


def test_context_manager_and_execute():
    a, b, _ = system((3,), 5, 2, "float64")
    with DirectSolver(a, b) as s:
        s.plan()
        assert_solves(a, s.execute(), b, "float64")
        assert_solves(a, s.solve(), b, "float64")  # execute leaves the factorization behind
    assert s._freed
    with pytest.raises(InvalidStateError, match="needs a plan"):
        DirectSolver(a, b).execute()


def test_a_failure_inside_plan_frees_what_was_made(monkeypatch):
    from cumath.linalg._solver import _executors

    made = []

    def failing(*args, **kwargs):
        made.append(args)
        raise RuntimeError("no engine today")

    monkeypatch.setattr(_executors, "create_engine", failing)
    a, b, _ = system((), 5, 1, "float64")
    s = DirectSolver(a, b)
    with pytest.raises(RuntimeError, match="no engine today"):
        s.plan()
    assert made and not s._planned and s._executor is None
    with pytest.raises(InvalidStateError, match="needs a plan"):
        s.factorize()
    s.free()


def test_empty_problems():
    for a, b in ((np.ones((0, 0)), np.ones(0)), (np.ones((0, 3, 3)), np.ones((0, 3))), (np.eye(3), np.ones((3, 0)))):
        x = direct_solver(a, b)
        assert x.shape == b.shape
        with DirectSolver(a, b) as s:
            s.plan()
            s.factorize()
            assert s.solve().shape == b.shape


# ------------------------------------------------------------------------------------ stateless and cache
def test_stateless_calls_plan_once_and_refactorize():
    plan_cache.clear()
    plan_cache.reset_stats()
    for _ in range(3):
        a, b, _ = system((4,), 6, 2, "complex64")
        assert_solves(a, direct_solver(a, b), b, "complex64")
    st = plan_cache.stats()
    assert (st["misses"], st["hits"], st["plans"]) == (1, 2, 1)
    a, b, _ = system((4,), 6, 2, "complex64")
    assert_solves(a, direct_solver(np.asfortranarray(a), b), b, "complex64")  # another layout: another plan
    assert plan_cache.stats()["plans"] == 2
    plan_cache.clear()


def test_stateless_singular_call_keeps_the_cache_usable():
    plan_cache.clear()
    with pytest.raises(SingularMatrixError):
        direct_solver(np.zeros((3, 3)), np.ones(3))
    a, b, _ = system((), 3, 1, "float64", vector=True)
    assert_solves(a, direct_solver(a, b), b, "float64")
    plan_cache.clear()


def frames_to(function, frame) -> list:
    """The names of the Python frames from ``frame`` up to (and including) the call of ``function``."""
    names = []
    while frame is not None and frame.f_code is not function.__code__:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    assert frame is not None, f"not called from {function.__name__}"
    return names + [function.__name__]


@pytest.mark.parametrize("native", [True, False], ids=["run_table", "ctypes"])
def test_cached_cpu_call_reaches_lapack_within_four_frames(monkeypatch, native):
    """Stubs in place of the native calls (``run_table`` with the extension, else the untyped bindings of LAPACK's
    routines) record the Python frames above the native call."""
    from cumath._bindings import lapack
    from cumath._core import _fast
    from cumath.linalg._solver import _functions as F
    from cumath.linalg._solver._backends import lapack as engine_module

    lib = lapack.find_lapack("auto")
    seen = []

    def traced(real):
        def stub(*args):
            seen.append(frames_to(F.direct_solver, sys._getframe(1)))
            return real(*args)
        return stub

    if native:
        if _fast.run_table is None:
            pytest.skip("the C extension is not built in this checkout")
        monkeypatch.setattr(engine_module, "run_table", traced(_fast.run_table))
    else:
        monkeypatch.setattr(engine_module, "run_table", None)
        for name in ("dgesv", "dgetrf", "dgetrs"):
            for release in (True, False):
                monkeypatch.setitem(lib.__dict__, f"_untyped_{name}_{int(release)}",
                                    traced(lib.untyped(name, release)))
    plan_cache.clear()
    for n in (8, 100):  # keeping the GIL (n <= 64) and releasing it
        for layout in ("F", "C"):
            seen.clear()
            a, b, _ = system((), n, 1, "float64")
            for _ in range(3):
                assert_solves(a, direct_solver(with_layout(a, layout), b), b, "float64")
            assert seen
            for frames in seen[len(seen) // 3:]:
                assert len(frames) <= 4, frames
    plan_cache.clear()


# ------------------------------------------------------------------------------------------- threads
@pytest.mark.parametrize("native", [True, False], ids=["one-call-per-part", "ctypes-call-by-call"])
def test_batches_split_across_threads(monkeypatch, native):
    from cumath._core import _fast
    from cumath.linalg._solver import _traits
    from cumath.linalg._solver._backends import lapack

    if native and _fast.run_table is None:
        pytest.skip("the C extension is not built in this checkout")
    if not native:
        monkeypatch.setattr(lapack, "run_table", None)
    for key in ("min_count", "min_n", "table_min_n", "table_work", "solve_work"):
        monkeypatch.setitem(_traits.THREADS_FROM, key, 2)
    for dtype in ("float64", "complex64"):
        for kind, mt in (("lu", "general"), ("cholesky", "hpd")):
            a, b, ref = system((37,), 9, 2, dtype, kind)
            with DirectSolver(a, b, options={"matrix_type": mt}) as s:
                s.plan()
                engine = s._executor.engine
                assert engine.threads == engine.solve_threads == min(37, available_cpus())
                s.factorize()
                assert_solves(ref, s.solve(), b, dtype)
                assert_solves(ref, s.execute(), b, dtype)
                progs = list(engine._programs().values())
                assert progs and all((p.table is not None) == native for p in progs)
            with pytest.raises(SingularMatrixError, match=r"a\[30\]"):
                a[30] = 0
                direct_solver(a, b, options={"matrix_type": mt})


def test_named_threads_split_a_batch():
    a, b, ref = system((9,), 5, 1, "complex128")
    with DirectSolver(a, b, execution=ExecutionCPU(num_threads=3)) as s:
        s.plan()
        assert (s._executor.engine.threads, s._executor.engine.named) == (3, None)
        assert_solves(ref, s.execute(), b, "complex128")


def test_named_threads_for_one_system():
    a, b, _ = system((), 64, 2, "float64")
    with DirectSolver(a, b, execution={"name": "cpu", "num_threads": 1}) as s:
        s.plan()
        assert s._executor.engine.threads == 1 and s._executor.engine.named == 1
        s.factorize()
        assert_solves(a, s.solve(), b, "float64")


# ------------------------------------------------------------------------------------- explicit batches
def test_explicit_batch_of_different_sizes():
    systems = [system((), n, k, dt) for n, k, dt in ((3, 1, "float64"), (8, 2, "float64"), (5, 4, "complex64"))]
    a, b = [s[0] for s in systems], [s[1] for s in systems]
    xs = direct_solver(a, b)
    assert isinstance(xs, list) and len(xs) == 3
    for (ai, bi, _), x in zip(systems, xs):
        assert_solves(ai, x, bi, str(bi.dtype))
    with DirectSolver(a, b) as s:
        s.plan()
        with pytest.raises(InvalidStateError, match="call factorize"):
            s.solve()
        s.factorize()
        for (ai, bi, _), x in zip(systems, s.solve()):
            assert_solves(ai, x, bi, str(bi.dtype))
        new_b = [random_array(bi.shape, bi.dtype) for bi in b]
        s.reset_operands(b=new_b)
        for ai, bi, x in zip(a, new_b, s.solve()):
            assert_solves(ai, x, bi, str(bi.dtype))
        s.reset_operands(a=[ai.copy() for ai in a])
        with pytest.raises(InvalidStateError, match="call factorize"):
            s.solve()
        with pytest.raises(ValueError, match="the batch has 3 systems but 2 new b were given"):
            s.reset_operands(b=new_b[:2])
        s.release_operands()
        with pytest.raises(ValueError, match="after release_operands"):
            s.reset_operands(b=new_b)
        s.reset_operands(a=a, b=b)
        s.factorize()
        assert len(s.solve()) == 3
        assert s.nbytes > 0


def test_explicit_batch_errors_name_the_member():
    a = [np.eye(3), np.zeros((3, 3)), np.eye(2)]
    b = [np.ones(3), np.ones(3), np.ones(2)]
    with pytest.raises(SingularMatrixError, match=r"a\[1\] is singular") as err:
        direct_solver(a, b)
    assert err.value.problem == 1
    with pytest.raises(ValueError, match="needs as many right-hand sides as matrices; got 3 a and 2 b"):
        DirectSolver(a, b[:2])
    with pytest.raises(ValueError, match="at least one system"):
        DirectSolver([], [])
    with pytest.raises(TypeError, match="b must be a list or tuple of arrays"):
        DirectSolver(a, np.ones(3))
    with pytest.raises(ValueError, match="b of shape"):
        DirectSolver([np.eye(3)], [np.ones(4)])


def test_info_logs_name_the_engine_and_copies(caplog):
    a, b, _ = system((), 5, 1, "float64")
    with caplog.at_level(logging.INFO, logger="cumath"):
        direct_solver(a, b, options={"logger": logging.getLogger("cumath.test_solver")})
    text = caplog.text
    assert "direct solver (lu) of numpy float64: one system of order 5" in text
    assert "solver engine: LAPACK" in text and "solver copy: a is copied into the plan's factor buffer" in text
