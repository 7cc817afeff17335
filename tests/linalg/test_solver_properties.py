"""Property tests of the public dense direct solver: for any square, well-conditioned system (any order, batch
shape, number of right-hand sides, dtype, memory layout and matrix type) ``direct_solver`` returns x of b's shape
with a small residual, leaves its operands untouched, agrees with the stateful object, and a singular matrix
always raises SingularMatrixError naming a system of the batch."""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cumath.linalg._solver import DirectSolver, SingularMatrixError, direct_solver  # noqa: E402

DTYPES = ("float32", "float64", "complex64", "complex128")
EPS = {"float32": 1e-4, "float64": 1e-12, "complex64": 1e-4, "complex128": 1e-12}


@st.composite
def systems(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 12))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    vector = draw(st.booleans())
    nrhs = 1 if vector else draw(st.integers(1, 4))
    spd = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    g = np.random.default_rng(seed)
    cplx = dtype.startswith("complex")

    def rand(shape):
        x = g.standard_normal(shape)
        return x + 1j * g.standard_normal(shape) if cplx else x

    m = rand(batch + (n, n))
    if spd:
        a = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)
    else:
        a = m + 3 * np.sqrt(n) * np.eye(n)
    b = rand(batch + ((n,) if vector else (n, nrhs)))
    a_layout = draw(st.sampled_from(["C", "F", "reversed"]))
    b_layout = draw(st.sampled_from(["C", "F"]))
    return dtype, a.astype(dtype), b.astype(dtype), spd, a_layout, b_layout


def _layout(x, layout):
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "reversed":
        y = np.empty_like(x)[..., ::-1, :]
        y[...] = x
        return y
    return np.ascontiguousarray(x)


def _residual(a, x, b):
    vec = b.ndim == a.ndim - 1
    wide = a.astype(np.complex128) @ (x[..., None] if vec else x).astype(np.complex128)
    rhs = b[..., None] if vec else b
    return np.abs(wide - rhs).max() / (np.abs(a).max() * max(1.0, np.abs(x).max()) * a.shape[-1])


@settings(max_examples=150, deadline=None)
@given(systems())
def test_direct_solver_solves(problem):
    dtype, a0, b0, spd, la, lb = problem
    a, b = _layout(a0, la), _layout(b0, lb)
    mt = ("hpd" if dtype.startswith("complex") else "spd") if spd else "general"
    x = direct_solver(a, b, options={"matrix_type": mt})
    assert x.shape == b0.shape and x.dtype == a0.dtype
    assert _residual(a0, x, b0) < EPS[dtype]
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    with DirectSolver(a, b, options={"matrix_type": mt}) as s:
        s.plan()
        s.factorize()
        y = s.solve()
    np.testing.assert_allclose(y, x, rtol=0, atol=10 * EPS[dtype] * max(1.0, np.abs(x).max()))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(1, 5), st.data())
def test_singular_systems_always_raise(n, count, data):
    check_singular_raises(direct_solver, n, count, data)


def check_singular_raises(solve, n, count, data):
    """``solve(a, b)`` of a batch with one system whose row is zero raises SingularMatrixError naming it."""
    g = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = g.standard_normal((count, n, n)) + 3 * np.sqrt(n) * np.eye(n)
    bad = data.draw(st.integers(0, count - 1))
    row = data.draw(st.integers(0, n - 1))
    a[bad, row, :] = 0  # a zero row: exactly singular, whatever the pivoting
    with pytest.raises(SingularMatrixError) as err:
        solve(a, g.standard_normal((count, n)))
    assert err.value.problem == (bad,) and err.value.count == 1
    assert isinstance(err.value, np.linalg.LinAlgError)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DTYPES), st.integers(1, 40), st.integers(1, 5), st.data(),
       st.sampled_from([np.nan, np.inf, -np.inf]), st.booleans())
def test_a_non_finite_entry_anywhere_is_reported_for_its_system(dtype, n, count, data, value, spd):
    """One NaN or inf at any place of one system of a batch (for a positive definite solve: of the triangle it
    reads, the lower one) gives exactly one IllConditionedWarning that names that system, never an error; the
    other systems are solved."""
    import warnings

    from cumath.linalg._solver import IllConditionedWarning

    g = np.random.default_rng(n * 31 + count)
    m = g.standard_normal((count, n, n))
    a = (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)) if spd else m + 2 * np.sqrt(n) * np.eye(n)
    a = a.astype(dtype)
    b = g.standard_normal((count, n)).astype(dtype)
    p = data.draw(st.integers(0, count - 1))
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, i if spd else n - 1))
    a[p, i, j] = value
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        x = direct_solver(a, b, options={"matrix_type": ("spd" if dtype[0] == "f" else "hpd") if spd else "general"})
    messages = [str(w.message) for w in seen if issubclass(w.category, IllConditionedWarning)]
    label = f"a[{p}]"  # (a batch, even of one)
    assert len(messages) == 1 and messages[0].startswith(f"{label} has non-finite pivots"), messages
    ref = a.astype(np.complex128 if dtype[0] == "c" else np.float64)
    for q in range(count):
        if q != p:
            err = np.abs(ref[q] @ x[q] - b[q]).max() / (np.abs(ref[q]).max() * max(1.0, np.abs(x[q]).max()) * n)
            assert err < EPS[dtype], (q, err)
