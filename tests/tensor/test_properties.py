"""Property tests: random contractions (random index sets; batch, contracted and free modes; permutations;
random strides) against numpy.einsum in float64."""

import string

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cumath import tensor


@st.composite
def contraction(draw, n_inputs):
    letters = draw(st.lists(st.sampled_from(string.ascii_letters[:12]), min_size=1, max_size=6, unique=True))
    extents = {m: draw(st.integers(1, 5)) for m in letters}
    inputs = []
    for _ in range(n_inputs):
        modes = draw(st.lists(st.sampled_from(letters), min_size=0, max_size=4, unique=True))
        inputs.append(draw(st.permutations(modes)))
    present = sorted({m for ins in inputs for m in ins})
    output = draw(st.lists(st.sampled_from(present), unique=True, max_size=4)) if present else []
    output = draw(st.permutations(output))
    flips = [draw(st.lists(st.booleans(), min_size=len(i), max_size=len(i))) for i in inputs]
    steps = [draw(st.lists(st.integers(1, 2), min_size=len(i), max_size=len(i))) for i in inputs]
    expr = ",".join("".join(i) for i in inputs) + "->" + "".join(output)
    return expr, inputs, extents, flips, steps


def _operand(rng, modes, extents, flips, steps, dtype):
    shape = [extents[m] * s for m, s in zip(modes, steps)]
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    index = tuple(slice(None, None, -s if f else s) for f, s in zip(flips, steps))
    return x[index]


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(contraction(2), st.sampled_from(["float64", "complex128", "float32"]), st.integers(0, 2**31))
def test_binary_random(spec, dtype, seed):
    expr, inputs, extents, flips, steps = spec
    rng = np.random.default_rng(seed)
    a, b = (_operand(rng, i, extents, f, s, dtype) for i, f, s in zip(inputs, flips, steps))
    r = tensor.binary_contraction(expr, a, b)
    expect = np.einsum(expr, a.astype(np.complex128), b.astype(np.complex128))
    tol = 1e-4 if dtype == "float32" else 1e-11
    assert np.allclose(r, expect, rtol=tol, atol=tol * (1 + np.abs(expect).max(initial=0)))


@SETTINGS
@given(contraction(3), st.integers(0, 2**31), st.booleans())
def test_ternary_random(spec, seed, with_d):
    expr, inputs, extents, flips, steps = spec
    rng = np.random.default_rng(seed)
    a, b, c = (_operand(rng, i, extents, f, s, "float64") for i, f, s in zip(inputs, flips, steps))
    expect = np.einsum(expr, a, b, c)
    d = rng.standard_normal(expect.shape) if with_d else None
    r = tensor.ternary_contraction(expr, a, b, c, d=d, alpha=1.5, beta=0.5 if with_d else None)
    expect = 1.5 * expect + (0.5 * d if with_d else 0)
    assert np.allclose(r, expect, rtol=1e-11, atol=1e-11 * (1 + np.abs(expect).max(initial=0)))


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**31))
def test_implicit_matches_numpy(n, m, k, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, k)), rng.standard_normal((k, m))
    for expr in ("ij,jk", "ji,jk", "ab,bc"):
        aa = a.T.copy() if expr.startswith("ji") else a
        assert np.allclose(tensor.binary_contraction(expr, aa, b), np.einsum(expr, aa, b))


@SETTINGS
@given(contraction(2), st.sampled_from(["C", "F", "mixed"]), st.integers(0, 2**31))
def test_auto_layout_random(spec, order, seed):
    """result_layout='auto': correct values; a C (F) result for C (F) inputs unless the engine's own order is
    taken ('optimized', what it writes without a copy)."""
    expr, inputs, extents, _flips, _steps = spec
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal([extents[m] for m in i]) for i in inputs)
    if order == "F":
        a, b = np.asarray(a, order="F"), np.asarray(b, order="F")  # (0-d stays 0-d)
    elif order == "mixed":
        b = np.asarray(b, order="F")
    r = tensor.binary_contraction(expr, a, b)
    assert np.allclose(r, np.einsum(expr, a, b), rtol=1e-11, atol=1e-11 * (1 + np.abs(r).max(initial=0)))
    opt = tensor.binary_contraction(expr, a, b, options={"result_layout": "optimized"})
    if order == "C":
        assert r.flags.c_contiguous or r.strides == opt.strides
    elif order == "F":
        assert r.flags.f_contiguous or r.strides == opt.strides


def test_auto_layout_of_inputs_in_both_orders_is_the_engines():
    """1-D operands are C and F at once: 'auto' says nothing then, and takes what the engine writes."""
    a, b = np.asfortranarray(np.arange(1.0, 4.0)), np.asfortranarray(np.arange(1.0, 5.0))
    r = tensor.binary_contraction("a,b->ba", a, b)
    opt = tensor.binary_contraction("a,b->ba", a, b, options={"result_layout": "optimized"})
    assert r.strides == opt.strides and np.array_equal(r, np.einsum("a,b->ba", a, b))
