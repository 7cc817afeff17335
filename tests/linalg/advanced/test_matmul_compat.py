"""nvmath-python behaviours of the advanced matmul, end to end on the CPU stand-in of cuBLASLt: a bias per
column ((1, N)), c in the promoted form of 1-D products, bias-gradient shapes of batched products, zeroed aux
padding, autotune(prune=), DRELU/DGELU with K = 1, resets with an operand of another device."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumath.linalg.advanced as la
from cumath._bindings import cublaslt as lt
from cumath.linalg.advanced import MatmulEpilog as E
from helpers.matmul_reference import gelu, rel_error

import fake_cublaslt as fake
from fake_cublaslt import fake_library  # noqa: F401 (an autouse fixture)

RNG = np.random.default_rng(18)


def r(shape, order="C"):
    x = RNG.standard_normal(shape)
    if order == "F" and x.ndim >= 2:
        return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)
    return x


dev = fake.device_operand


def act(name, x):
    return np.maximum(x, 0) if "RELU" in name else gelu(x) if "GELU" in name else x


def bias_pointers():
    return {d.get(lt.CUBLASLT_MATMUL_DESC_BIAS_POINTER) for d in fake.DESCS.values()}


# ------------------------------------------------------------------------------------- row bias (1, N)
@pytest.mark.parametrize("name", ["BIAS", "RELU_BIAS", "GELU_BIAS"])
@pytest.mark.parametrize("bshape", ["(1,n)", "(n,)"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_bias_per_column(name, bshape, order):
    m, n, k = 10, 6, 7
    a, b = r((m, k), order), r((k, n), order)
    bias = r((1, n)) if bshape == "(1,n)" else r((n,))
    B = dev(bias)
    d = la.matmul(dev(a), dev(b), epilog=E[name], epilog_inputs={"bias": B})
    ref = act(name, a @ b + bias.reshape(1, n))
    assert d.shape == (m, n) and rel_error(d, ref) < 1e-12
    assert d.strides[-1] == d.itemsize  # D^T = B^T A^T: a row-major result
    assert B.ptr in bias_pointers()  # cuBLASLt reads the caller's bias: no copy


def test_bias_per_column_batched_and_broadcast():
    a, b = r((3, 9, 5)), r((5, 4))
    for bias in (r((3, 1, 4)), r((1, 4)), r((1, 1, 4)), r((3, 4))):
        d = la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias)})
        full = bias if bias.ndim == 3 or bias.shape == (1, 4) else bias[:, None, :]
        assert rel_error(d, np.maximum(a @ b + full, 0)) < 1e-12


def test_square_keeps_the_row_convention_for_a_vector():
    a, b = r((6, 6)), r((6, 6))
    rows, cols = r((6,)), r((1, 6))
    d = la.matmul(dev(a), dev(b), epilog=E.BIAS, epilog_inputs={"bias": dev(rows)})
    assert rel_error(d, a @ b + rows[:, None]) < 1e-12  # (M,): one value per row, as before
    d = la.matmul(dev(a), dev(b), epilog=E.BIAS, epilog_inputs={"bias": dev(cols)})
    assert rel_error(d, a @ b + cols) < 1e-12           # (1, N): one value per column
    d = la.matmul(dev(a), dev(b), epilog=E.BIAS, epilog_inputs={"bias": dev(rows[:, None])})
    assert rel_error(d, a @ b + rows[:, None]) < 1e-12


def test_aux_with_a_column_bias_round_trips():
    x, w, bias = r((9, 5)), r((5, 6)), r((1, 6))
    h, aux = la.matmul(dev(x), dev(w), epilog=E.RELU_AUX_BIAS, epilog_inputs={"bias": dev(bias)})
    pre = x @ w + bias
    assert rel_error(h, np.maximum(pre, 0)) < 1e-12
    g, w2 = r((9, 4)), r((4, 6))
    dz = la.matmul(dev(g), dev(w2), epilog=E.DRELU, epilog_inputs={"relu_aux": dev(aux["relu_aux"])})
    assert rel_error(dz, (g @ w2) * (pre > 0)) < 1e-12


@pytest.mark.parametrize("shape,fragment", [
    ((2, 6), "fits neither the result's 10 rows nor its 6 columns"),
    ((6, 1), "fits neither"), ((10, 6), "fits neither"),
])
def test_bias_shape_errors(shape, fragment):
    with pytest.raises(ValueError, match=fragment):
        la.matmul(dev(r((10, 7))), dev(r((7, 6))), epilog=E.BIAS, epilog_inputs={"bias": dev(r(shape))})


def test_bias_shape_message_says_what_applies():
    def message(m, n, bshape, batch=()):
        a, b = r(batch + (m, 7)), r((7, n))
        with pytest.raises(ValueError) as info:
            la.matmul(dev(a), dev(b), epilog=E.BIAS, epilog_inputs={"bias": dev(r(bshape))})
        return str(info.value)

    assert message(16, 16, (15,)) == (
        "epilog input 'bias' of shape [15] fits neither the result's 16 rows nor its 16 columns: it must have shape "
        "(16,) or (16, 1) (one value per row), or (1, 16) (one value per column, as in x @ w + bias)")
    assert message(10, 6, (5,)).endswith(
        "it must have shape (10,) or (10, 1) (one value per row), or (6,) or (1, 6) (one value per column, as in "
        "x @ w + bias)")
    assert message(10, 1, (5,)).endswith("nor its 1 column: it must have shape (10,) or (10, 1) (one value per "
                                         "row), or (1,) (one value per column, as in x @ w + bias)")
    assert message(10, 6, (5,), (3,)).endswith(", optionally with the batch dimensions [3] in front")
    assert message(10, 6, (2, 1, 6), (3,)) == (
        "epilog input 'bias' of shape [2, 1, 6] has the batch dimensions [2], which do not broadcast to the "
        "product's batch dimensions [3]: give each 1 or the product's size")


def test_column_bias_must_be_contiguous():
    bias = r((1, 12))[:, ::2]
    with pytest.raises(ValueError, match="must be contiguous along its 6 elements"):
        la.matmul(dev(r((10, 7))), dev(r((7, 6))), epilog=E.BIAS, epilog_inputs={"bias": dev(bias)})


@settings(max_examples=20, deadline=None, database=None)
@given(st.integers(1, 9), st.integers(2, 9), st.integers(1, 6), st.sampled_from(["C", "F"]))
def test_property_column_bias(m, n, k, order):
    a, b, bias = r((m, k), order), r((k, n), order), r((1, n))
    d = la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias)})
    assert rel_error(d, np.maximum(a @ b + bias, 0)) < 1e-12


# --------------------------------------------------------------------------------- 1-D promotion with c
@pytest.mark.parametrize("a_shape,b_shape,c_shape", [
    ((5,), (5, 3), (1, 3)), ((5,), (5, 3), (3,)), ((7, 5), (5,), (7, 1)), ((7, 5), (5,), (7,)),
    ((5,), (5,), (1, 1)), ((5,), (4, 5, 3), (4, 1, 3)), ((4, 7, 5), (5,), (4, 7, 1)),
])
@pytest.mark.parametrize("where", ["device", "host"])
def test_c_of_promoted_shape(a_shape, b_shape, c_shape, where):
    a, b, c = r(a_shape), r(b_shape), r(c_shape)
    args = (dev(a), dev(b), dev(c)) if where == "device" else (a, b, c)
    d = la.matmul(*args, alpha=0.5, beta=2.0)
    ref = 0.5 * np.matmul(a, b)
    ref = ref + 2.0 * c.reshape(ref.shape)
    assert d.shape == ref.shape and rel_error(d, ref) < 1e-12


def test_c_of_wrong_promoted_shape_is_refused():
    with pytest.raises(ValueError, match="does not broadcast to the result's shape"):
        la.matmul(dev(r((5,))), dev(r((5, 3))), dev(r((2, 3))), beta=1.0)


# ------------------------------------------------------------------------------- bias-gradient shapes
@pytest.mark.parametrize("name,length", [("BGRADA", 9), ("BGRADB", 6)])
def test_bias_gradient_shapes(name, length):
    a, b = r((3, 9, 5)), r((3, 5, 6))
    _d, aux = la.matmul(dev(a), dev(b), epilog=E[name])
    g = aux[name.lower()]
    assert g.shape == (3, length, 1)
    want = a.sum(axis=-1) if name == "BGRADA" else b.sum(axis=-2)
    assert rel_error(g[..., 0], want) < 1e-12
    _d, aux = la.matmul(dev(a[0]), dev(b[0]), epilog=E[name])
    assert aux[name.lower()].shape == (length,)


# ------------------------------------------------------------------------------------ zeroed aux padding
@pytest.fixture
def dirty_memory(monkeypatch):
    """New device arrays full of 0xAB bytes (what an allocator may leave there)."""
    import cumath._core.frameworks.numpy as pkg

    empty = pkg.empty

    def dirty(*args, **kwargs):
        x = empty(*args, **kwargs)
        ctypes.memset(x.ctypes.data, 0xAB, x.nbytes)  # dense with positive strides: [0, ..., 0] comes first
        return x

    monkeypatch.setattr(pkg, "empty", dirty)


@pytest.mark.parametrize("name", ["RELU_AUX", "GELU_AUX"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_aux_padding_is_zero(name, order, dirty_memory):
    m, n, k = 9, 6, 5
    a, b = r((2, m, k), order), r((k, n), order)
    _d, aux = la.matmul(dev(a), dev(b), epilog=E[name])
    x = aux[name.split("_")[0].lower() + "_aux"]
    row_major = _d.strides[-1] == _d.itemsize
    used = n if row_major else m  # aux rows cover cuBLASLt's D: (n) per row when row-major, else (m) per column
    if name == "RELU_AUX":
        used = -(-used // 8)
    pad = x[..., used:] if row_major else x[..., used:, :]
    assert pad.size > 0 and not pad.any()
    for i in range(2):  # aux[i] is batch i's
        single = la.matmul(dev(np.ascontiguousarray(a[i]) if order == "C" else np.asfortranarray(a[i])), dev(b),
                           epilog=E[name])[1]
        assert np.array_equal(np.asarray(x[i]), np.asarray(next(iter(single.values()))))


# ----------------------------------------------------------------------------------- autotune(prune=)
def test_autotune_prune_keeps_the_fastest(monkeypatch):
    import cumath.linalg.advanced._planner as planner

    monkeypatch.setattr(lt, "cublasLtMatmulAlgoGetHeuristic",
                        lambda *args: [fake._Result() for _ in range(5)])
    times = iter([4.0, 1.0, 3.0, 2.0, 5.0])

    def autotune(run_one, algorithms, *, iterations, prune, stream):
        for alg in algorithms:
            run_one(alg)
            alg.measured_time = next(times)
        timed = sorted(algorithms, key=lambda x: x.measured_time)
        return timed[:prune] if prune is not None else timed

    monkeypatch.setattr(planner._algorithms, "autotune", autotune)
    a, b = r((8, 5)), r((5, 4))
    with la.Matmul(dev(a), dev(b)) as mm:
        algs = mm.plan()
        assert len(algs) == 5
        best = mm.autotune(iterations=2, prune=2)
        assert [x.measured_time for x in best] == [1.0, 2.0]
        assert mm.algorithms == best  # only the pruned ones stay, best first
        assert rel_error(mm.execute(), a @ b) < 1e-12
    times = iter([4.0, 1.0, 3.0, 2.0, 5.0])
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        mm.autotune(iterations=2)
        assert [x.measured_time for x in mm.algorithms] == [1.0, 2.0, 3.0, 4.0, 5.0]


# ----------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("name,key,dtype", [("DRELU", "relu_aux", np.uint8), ("DGELU", "gelu_aux", np.float64),
                                            ("DRELU_BGRAD", "relu_aux", np.uint8)])
def test_backward_epilogs_with_k_1_are_refused(name, key, dtype):
    a, b = r((8, 1)), r((1, 4))
    aux = np.zeros((16, 4) if dtype == np.uint8 else (8, 4), dtype)
    with pytest.raises(ValueError, match=f"epilog {name} is not supported for K = 1"):
        la.matmul(dev(a), dev(b), epilog=E[name], epilog_inputs={key: dev(aux)})


def test_reset_with_another_device_is_a_type_error():
    a, b = r((4, 3)), r((3, 2))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        with pytest.raises(TypeError, match="the plan is for numpy arrays on GPU 0"):
            mm.reset_operands(a=a)  # host memory
        with pytest.raises(ValueError):  # also a ValueError, as cumath raised before
            mm.reset_operands(b=b)
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan(epilog=E.BIAS, epilog_inputs={"bias": dev(r((4,)))})
        with pytest.raises(TypeError, match="epilog input 'bias' must be a numpy array on the operands' device"):
            mm.reset_operands(epilog_inputs={"bias": r((4,))})


# ------------------------------------------------------------------ epilog inputs of another floating dtype
@pytest.mark.parametrize("where", ["device", "host"])
@pytest.mark.parametrize("bias_dtype", [np.float64, np.float16])
@pytest.mark.parametrize("bshape", [(1, 6), (10,), (10, 1)])
def test_bias_of_another_floating_dtype_is_converted_once(where, bias_dtype, bshape, caplog):
    a, b = r((10, 7)).astype(np.float32), r((7, 6)).astype(np.float32)
    bias = r(bshape).astype(bias_dtype)
    kept = bias.copy()
    wrap = dev if where == "device" else (lambda x: x)
    with caplog.at_level("INFO", logger="cumath"):
        d = la.matmul(wrap(a), wrap(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": wrap(bias)})
    full = bias.astype(np.float32).astype(np.float64).reshape((1, 6) if bshape == (1, 6) else (10, 1))
    assert d.dtype == np.float32 and rel_error(d, np.maximum(a.astype(np.float64) @ b + full, 0)) < 1e-6
    assert np.array_equal(bias, kept)  # the caller's bias is read, never written
    name = np.dtype(bias_dtype).name
    converted = [rec.getMessage() for rec in caplog.records if "epilog input 'bias' of dtype" in rec.getMessage()]
    assert converted == [f"epilog input 'bias' of dtype {name} is converted to float32 (what cuBLASLt reads for "
                         f"this product): one copy of {bias.size * 4} B; pass float32 to avoid it"]


@pytest.mark.parametrize("where", ["device", "host"])
def test_converted_bias_follows_each_call_and_reset(where):
    """The stateless cache hit and reset_operands convert the new bias too (the plan reads float32)."""
    wrap = dev if where == "device" else (lambda x: x)
    a, b = r((10, 7)).astype(np.float32), r((7, 6)).astype(np.float32)
    ref = a.astype(np.float64) @ b
    for _ in range(3):  # the first call plans, the others hit the plan cache with new values
        bias = r((1, 6))
        d = la.matmul(wrap(a), wrap(b), epilog=E.BIAS, epilog_inputs={"bias": wrap(bias)})
        assert rel_error(d, ref + bias) < 1e-6
    with la.Matmul(wrap(a), wrap(b)) as mm:
        mm.plan(epilog=E.BIAS, epilog_inputs={"bias": wrap(r((1, 6)))})
        bias = r((1, 6))
        mm.reset_operands(epilog_inputs={"bias": wrap(bias)})
        assert rel_error(mm.execute(), ref + bias) < 1e-6
        with pytest.raises(ValueError, match=r"'bias' has shape \[1, 6\], strides \[6, 1\] and dtype int32; the plan"):
            mm.reset_operands(epilog_inputs={"bias": wrap(r((1, 6)).astype(np.int32))})


def test_gelu_aux_of_another_floating_dtype_is_converted():
    x, w = r((9, 5)).astype(np.float32), r((5, 6)).astype(np.float32)
    _h, aux = la.matmul(dev(x), dev(w), epilog=E.GELU_AUX)
    g, w2 = r((9, 4)).astype(np.float32), r((4, 6)).astype(np.float32)
    want = la.matmul(dev(g), dev(w2), epilog=E.DGELU, epilog_inputs={"gelu_aux": dev(aux["gelu_aux"])})
    wide = aux["gelu_aux"].astype(np.float64)
    got = la.matmul(dev(g), dev(w2), epilog=E.DGELU, epilog_inputs={"gelu_aux": dev(wide)})
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dtype,fragment", [
    (np.int32, "'bias' must be float32 for this product, not int32"),
    (np.complex128, "'bias' must be float32 for this product, not complex128"),
])
def test_bias_of_integer_or_complex_dtype_is_refused(dtype, fragment):
    a, b = r((10, 7)).astype(np.float32), r((7, 6)).astype(np.float32)
    bias = (r((1, 6)) * 4).astype(dtype)
    with pytest.raises(TypeError, match=fragment):
        la.matmul(dev(a), dev(b), epilog=E.BIAS, epilog_inputs={"bias": dev(bias)})


def test_relu_aux_of_another_dtype_is_refused():
    x, w = r((9, 5)), r((5, 6))
    _h, aux = la.matmul(dev(x), dev(w), epilog=E.RELU_AUX)
    with pytest.raises(TypeError, match="'relu_aux' must be uint8"):
        la.matmul(dev(r((9, 4))), dev(r((4, 6))), epilog=E.DRELU,
                  epilog_inputs={"relu_aux": dev(aux["relu_aux"].astype(np.float32))})
