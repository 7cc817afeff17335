"""Matmul.release_operands() and the resets after it, and the epilog pointers of the plan cache's calls, on the CPU
stand-in of cuBLASLt (fake_cublaslt.py): GPU operands are NumPy arrays presented as on GPU 0, host operands are
staged through fake device buffers."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath._bindings import cublaslt as lt
from cumath._core.frameworks.numpy import aligned_empty
from cumath.errors import InvalidStateError
from cumath.linalg.advanced import MatmulEpilog as E
from helpers.matmul_reference import rel_error

import fake_cublaslt as fake
from fake_cublaslt import fake_library  # noqa: F401 (an autouse fixture)

RNG = np.random.default_rng(41)
A_SHAPE, B_SHAPE = (3, 7, 5), (5, 11)
RELEASED = r"the operands were released; call reset_operands\(a=\.\.\., b=\.\.\.\) with all of them before"
MISSING = r"after release_operands\(\), reset_operands\(\) needs all operands; missing "


def r(shape, order="C"):
    x = RNG.standard_normal(shape) + 0.5
    return np.asfortranarray(x) if order == "F" else x


def on(where, *xs):
    return tuple(fake.device_operand(x) for x in xs) if where == "device" else xs


def ok(result, ref, tol=1e-12):
    assert result.shape == ref.shape
    assert rel_error(result, ref) < tol


# c of the result's shape (mirrored on the host), broadcast over the batch, and (M, 1) broadcast over the columns
# (both copied into the result from the host array, not mirrored)
C_SHAPES = [(3, 7, 11), (7, 11), (7, 1)]


@pytest.mark.parametrize("cshape", C_SHAPES)
@pytest.mark.parametrize("where", ["device", "host"])
def test_release_then_reset_all(where, cshape):
    a, b, c = r(A_SHAPE), r(B_SHAPE), r(cshape)
    with la.Matmul(*on(where, a, b, c), alpha=0.5, beta=2.0) as mm:
        mm.plan()
        ok(mm.execute(), 0.5 * (a @ b) + 2.0 * c)
        for checked in (True, False):
            mm.release_operands()
            a, b, c = r(A_SHAPE), r(B_SHAPE), r(cshape)
            reset = mm.reset_operands if checked else mm.reset_operands_unchecked
            reset(*on(where, a, b, c))
            ok(mm.execute(), 0.5 * (a @ b) + 2.0 * c)
        a = r(A_SHAPE)
        mm.reset_operands(*on(where, a), beta=-1.5)  # later resets may be partial again
        ok(mm.execute(), 0.5 * (a @ b) - 1.5 * c)


@pytest.mark.parametrize("where", ["device", "host"])
def test_release_then_reset_without_c(where):
    a, b = r(A_SHAPE), r(B_SHAPE)
    with la.Matmul(*on(where, a, b)) as mm:
        mm.plan()
        ok(mm.execute(), a @ b)
        mm.release_operands()
        a, b = r(A_SHAPE), r(B_SHAPE)
        mm.reset_operands(*on(where, a, b))
        ok(mm.execute(), a @ b)
        mm.release_operands()
        with pytest.raises(ValueError, match="c was not given when the Matmul was created; it cannot be reset"):
            mm.reset_operands(*on(where, a, b, r((7, 11))))
        with pytest.raises(ValueError, match="beta applies to c, which this Matmul does not have"):
            mm.reset_operands(*on(where, a, b), beta=2.0)
        with pytest.raises(InvalidStateError, match=RELEASED):  # the failed resets left it released
            mm.execute()


@pytest.mark.parametrize("cshape", C_SHAPES)
@pytest.mark.parametrize("where", ["device", "host"])
def test_first_reset_after_release_needs_every_operand(where, cshape):
    a, b, c = r(A_SHAPE), r(B_SHAPE), r(cshape)
    with la.Matmul(*on(where, a, b, c), beta=0.75) as mm:
        mm.plan()
        mm.release_operands()
        A, B, C = on(where, a, b, c)
        with pytest.raises(ValueError, match=MISSING + "c$"):
            mm.reset_operands(A, B)
        with pytest.raises(ValueError, match=MISSING + "c$"):
            mm.reset_operands_unchecked(A, B, beta=3.0)
        with pytest.raises(ValueError, match=MISSING + "a, b$"):
            mm.reset_operands(c=C)
        with pytest.raises(ValueError, match=MISSING + "a, b, c$"):
            mm.reset_operands(alpha=2.0)
        with pytest.raises(InvalidStateError, match=RELEASED + r" execute\(\)"):
            mm.execute()
        mm.reset_operands(A, B, C)
        ok(mm.execute(), a @ b + 0.75 * c)


@pytest.mark.parametrize("where", ["device", "host"])
def test_released_plan_refuses_to_run(where):
    a, b, c = r(A_SHAPE), r(B_SHAPE), r((7, 11))
    with la.Matmul(*on(where, a, b, c), beta=1.0) as mm:
        mm.release_operands()  # before planning: plan() has nothing to plan for
        with pytest.raises(InvalidStateError, match=RELEASED + r" plan\(\)"):
            mm.plan()
        mm.reset_operands(*on(where, a, b, c))
        mm.plan()
        ok(mm.execute(), a @ b + c)
        mm.release_operands()
        with pytest.raises(InvalidStateError, match=RELEASED + r" execute\(\)"):
            mm.execute()
        with pytest.raises(InvalidStateError, match=RELEASED + r" autotune\(\)"):
            mm.autotune()
    with pytest.raises(InvalidStateError, match="after free"):
        mm.release_operands()


@pytest.mark.parametrize("cshape", [(3, 7, 11), (7, 1)])
@pytest.mark.parametrize("where", ["device", "host"])
def test_release_drops_the_references(where, cshape):
    a, b, c = r(A_SHAPE), r(B_SHAPE), r(cshape)
    refs = [weakref.ref(x) for x in (a, b, c)]
    with la.Matmul(*on(where, a, b, c), beta=1.0) as mm:
        mm.plan()
        ok(mm.execute(), a @ b + c)
        mm.release_operands()
        del a, b, c
        gc.collect()
        assert [w() for w in refs] == [None, None, None]


@pytest.mark.parametrize("where", ["device", "host"])
def test_epilog_inputs_stay_bound_across_a_release(where):
    """Released before the first execute: the host bias's device copy is still uploaded per execute."""
    a, b, bias = r((7, 5)), r((5, 11)), r((7,))
    with la.Matmul(*on(where, a, b)) as mm:
        mm.plan(epilog=E.BIAS, epilog_inputs={"bias": on(where, bias)[0]})
        mm.release_operands()
        a, b = r((7, 5)), r((5, 11))
        mm.reset_operands(*on(where, a, b))
        ok(mm.execute(), a @ b + bias[:, None])


# ------------------------------------------------------------------------------ epilog pointers per call
@pytest.fixture
def bias_sets(monkeypatch):
    """The pointers written to CUBLASLT_MATMUL_DESC_BIAS_POINTER, per (descriptor, pointer)."""
    seen = []
    inner = lt.cublasLtMatmulDescSetAttribute

    def spy(desc, attr, value):
        if attr == lt.CUBLASLT_MATMUL_DESC_BIAS_POINTER:
            seen.append((desc, int(value)))
        return inner(desc, attr, value)

    monkeypatch.setattr(lt, "cublasLtMatmulDescSetAttribute", spy)
    return seen


def aligned(shape, offset=0):
    """A random array at a 256-byte boundary plus ``offset`` elements (another alignment: another variant)."""
    n = int(np.prod(shape))
    buf = aligned_empty((n + offset,), np.float64, 256)
    x = buf[offset:].reshape(shape)
    x[...] = RNG.standard_normal(shape) + 0.5
    return x


def ptr(x):
    return x.__array_interface__["data"][0]


def test_cached_call_sets_the_bias_pointer_only_when_it_moves(bias_sets):
    dev = fake.device_operand
    b, bias = aligned((5, 11)), aligned((7,))
    a = aligned((7, 5))
    ok(la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias)}),
       np.maximum(a @ b + bias[:, None], 0))
    bias_sets.clear()
    a = aligned((7, 5))
    ok(la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias)}),
       np.maximum(a @ b + bias[:, None], 0))
    assert bias_sets == []  # same bias: no descriptor update
    bias2 = aligned((7,))
    ok(la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias2)}),
       np.maximum(a @ b + bias2[:, None], 0))
    assert [p for _d, p in bias_sets] == [ptr(bias2)]  # one update, on the variant in use
    # a of another alignment: a second variant of the cached plan (planned with the bias it held, then rebound)
    bias_sets.clear()
    a8, bias3 = aligned((7, 5), 1), aligned((7,))
    ok(la.matmul(dev(a8), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias3)}),
       np.maximum(a8 @ b + bias3[:, None], 0))
    assert len({d for d, _p in bias_sets}) == 1 and bias_sets[-1][1] == ptr(bias3)
    # back to the first variant, which last saw bias2: rebound when switched to
    ok(la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias3)}),
       np.maximum(a @ b + bias3[:, None], 0))
    bias4 = aligned((7,))
    ok(la.matmul(dev(a8), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias4)}),
       np.maximum(a8 @ b + bias4[:, None], 0))
    ok(la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias4)}),
       np.maximum(a @ b + bias4[:, None], 0))


@pytest.mark.parametrize("order", ["C", "F"])
def test_reset_epilog_inputs_across_variants(order, bias_sets):
    a, b, bias = r((7, 5), order), r((5, 11), order), r((7,))
    dev = fake.device_operand
    other = "F" if order == "C" else "C"
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan(epilog=E.BIAS, epilog_inputs={"bias": dev(bias)})
        ok(mm.execute(), a @ b + bias[:, None])
        a2 = r((7, 5), other)
        mm.reset_operands(a=dev(a2))  # another layout: a second variant
        ok(mm.execute(), a2 @ b + bias[:, None])
        bias_sets.clear()
        bias2 = r((7,))
        mm.reset_operands(epilog_inputs={"bias": dev(bias2)})
        assert [(d, p) for d, p in bias_sets] == [(mm._v.problem.desc, ptr(bias2))]  # the current variant only
        ok(mm.execute(), a2 @ b + bias2[:, None])
        bias_sets.clear()
        mm.reset_operands(epilog_inputs={"bias": dev(bias2)})
        assert bias_sets == []  # unchanged: nothing to set
        mm.reset_operands_unchecked(a=dev(a))  # back to the first variant, rebound to bias2
        ok(mm.execute(), a @ b + bias2[:, None])
        assert len(mm._executor.variants) == 2
