"""nvmath-python behaviours of the advanced matmul on a real GPU: the RELU_BIAS example with a bias per column,
autotune(prune=), c in the promoted form of 1-D products, aux and bias-gradient shapes and layouts of batched
products, zeroed aux padding, refusals (DRELU/DGELU with K = 1, operands of another package or device)."""

from __future__ import annotations

import numpy as np
import pytest

import cumath as nvmath
from helpers.matmul_reference import epilog_ref, epilog_tolerance, gelu_aux_values, rel_error, unpack_relu_mask

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
la = nvmath.linalg.advanced
E = la.MatmulEpilog


def _row_major(x):
    return x.ndim < 2 or x.shape[-1] == 1 or x.strides[-1] == x.itemsize


def test_relu_bias_example_with_a_row_bias():
    m, n, k = 1024, 512, 2048
    a = cp.random.rand(m, k, dtype=cp.float32)
    b = cp.random.rand(k, n, dtype=cp.float32)
    bias = cp.random.rand(1, n, dtype=cp.float32)
    result = nvmath.linalg.advanced.matmul(
        a, b, epilog=nvmath.linalg.advanced.MatmulEpilog.RELU_BIAS, epilog_inputs={"bias": bias},
        options={"compute_type": nvmath.linalg.advanced.MatmulComputeType.COMPUTE_32F_FAST_16F})
    ref = cp.maximum(a @ b + bias, 0)
    assert result.shape == (m, n) and result.dtype == cp.float32
    assert _row_major(result)  # row-major inputs: a row-major result
    err = float(cp.linalg.norm(result - ref) / cp.linalg.norm(ref))
    assert err < 1e-2, err  # FAST_16F rounds the inputs to half precision
    # the column bias as (n,) too, and batched with a bias per batch member
    r2 = la.matmul(a, b, epilog=E.RELU_BIAS, epilog_inputs={"bias": bias[0]})
    assert float(cp.abs(r2 - cp.maximum(a @ b + bias, 0)).max()) < 1e-2 * float(cp.abs(ref).max())
    ab = cp.random.rand(3, 64, 32, dtype=cp.float32)
    bb = cp.random.rand(32, 48, dtype=cp.float32)
    biasb = cp.random.rand(3, 1, 48, dtype=cp.float32)
    rb = la.matmul(ab, bb, epilog=E.BIAS, epilog_inputs={"bias": biasb})
    assert float(cp.abs(rb - (ab @ bb + biasb)).max()) < 1e-4


def test_relu_bias_example_verbatim(caplog):
    """nvmath-python's announcement example as written: cp.random.rand(1, n) is a float64 bias for the float32
    product; it is converted to float32 with one logged copy."""
    m, n, k = 1024, 512, 2048
    a = cp.random.rand(m, k, dtype=cp.float32)
    b = cp.random.rand(k, n, dtype=cp.float32)
    bias = cp.random.rand(1, n)
    kept = bias.copy()

    with caplog.at_level("INFO", logger="cumath"):
        result = nvmath.linalg.advanced.matmul(
            a,
            b,
            epilog=nvmath.linalg.advanced.MatmulEpilog.RELU_BIAS,
            epilog_inputs={"bias": bias},
            options={"compute_type": nvmath.linalg.advanced.MatmulComputeType.COMPUTE_32F_FAST_16F},
        )

    ref = cp.maximum(a @ b + bias, 0)
    assert result.shape == (m, n) and result.dtype == cp.float32
    err = float(cp.linalg.norm(result - ref) / cp.linalg.norm(ref))
    assert err < 1e-2, err  # FAST_16F rounds the inputs to half precision
    assert bool((bias == kept).all())
    assert any("epilog input 'bias' of dtype float64 is converted to float32" in rec.getMessage()
               for rec in caplog.records)
    again = la.matmul(a, b, epilog=E.RELU_BIAS, epilog_inputs={"bias": bias + 1},  # the cached plan, a new bias
                      options={"compute_type": la.MatmulComputeType.COMPUTE_32F_FAST_16F})
    ref = cp.maximum(a @ b + bias + 1, 0)
    assert float(cp.linalg.norm(again - ref) / cp.linalg.norm(ref)) < 1e-2


def test_converted_bias_is_ordered_on_the_callers_stream():
    a = cp.random.rand(256, 128, dtype=cp.float32)
    b = cp.random.rand(128, 64, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        bias = cp.random.rand(1, 64)  # made on s: the conversion must come after it, on s
        d = la.matmul(a, b, epilog=E.BIAS, epilog_inputs={"bias": bias}, stream=s)
    s.synchronize()
    assert float(cp.abs(d - (a @ b + bias)).max()) < 1e-3


@pytest.mark.parametrize("dtype", ["int32", "complex128"])
def test_bias_of_integer_or_complex_dtype_names_the_dtype(dtype):
    a = cp.random.rand(64, 32, dtype=cp.float32)
    b = cp.random.rand(32, 16, dtype=cp.float32)
    with pytest.raises(TypeError, match=f"'bias' must be float32 for this product, not {dtype}"):
        la.matmul(a, b, epilog=E.RELU_BIAS, epilog_inputs={"bias": (cp.random.rand(1, 16) * 4).astype(dtype)})


@pytest.mark.parametrize("name", ["BIAS", "RELU_BIAS", "GELU_BIAS", "RELU_AUX_BIAS", "GELU_AUX_BIAS"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_column_bias_every_epilog(name, dtype):
    m, n, k = 67, 45, 37
    rng = np.random.default_rng(1)
    a = cp.asarray(rng.standard_normal((m, k))).astype(dtype)
    b = cp.asarray(rng.standard_normal((k, n))).astype(dtype)
    bias = cp.asarray(rng.standard_normal((1, n))).astype(dtype)
    out = la.matmul(a, b, epilog=E[name], epilog_inputs={"bias": bias})
    d, aux = out if isinstance(out, tuple) else (out, {})
    pre = cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b).astype(np.float64) + cp.asnumpy(bias).astype(np.float64)
    want = np.maximum(pre, 0) if "RELU" in name else epilog_ref("GELU", pre, np.eye(n))[0] if "GELU" in name \
        else pre
    # the reference's GELU is the tanh form cuBLASLt evaluates (as in the per-row GELU tests), and so is their
    # float64 floor: cuBLASLt's double tanh is good to about 1e-10, not to float64 eps
    assert rel_error(cp.asnumpy(d), want) <= epilog_tolerance(dtype, k, 4, gelu="GELU" in name)
    assert _row_major(d)
    if "RELU_AUX" in name:
        got = unpack_relu_mask(cp.asnumpy(aux["relu_aux"]), m, n, "T")
        assert np.mean(got == (pre > 0)) > 0.99


def test_autotune_prune():
    a = cp.random.rand(512, 256, dtype=cp.float32)
    b = cp.random.rand(256, 384, dtype=cp.float32)
    with la.Matmul(a, b) as mm:
        algs = mm.plan(preferences={"limit": 8})
        best = mm.autotune(iterations=3, prune=2)
        assert len(best) == min(2, len(algs)) and mm.algorithms == best
        assert all(x.measured_time is not None for x in best)
        assert best[0].measured_time <= best[-1].measured_time
        assert float(cp.abs(mm.execute() - a @ b).max()) < 1e-3


@pytest.mark.parametrize("a_shape,b_shape,c_shape", [
    ((37,), (37, 45), (1, 45)), ((37,), (37, 45), (45,)), ((67, 37), (37,), (67, 1)), ((67, 37), (37,), (67,)),
    ((37,), (4, 37, 45), (4, 1, 45)),
])
def test_c_of_promoted_shape(a_shape, b_shape, c_shape):
    a, b = cp.random.rand(*a_shape), cp.random.rand(*b_shape)
    c = cp.random.rand(*c_shape)
    d = la.matmul(a, b, c, beta=0.5)
    ref = cp.matmul(a, b)
    ref = ref + 0.5 * c.reshape(ref.shape)
    assert d.shape == ref.shape and float(cp.abs(d - ref).max()) < 1e-10


@pytest.mark.parametrize("name,length", [("BGRADA", 67), ("BGRADB", 45)])
def test_bias_gradients_of_batched_products(name, length):
    rng = np.random.default_rng(3)
    a_np, b_np = rng.standard_normal((3, 67, 37)), rng.standard_normal((3, 37, 45))
    # the layouts cuBLASLt 13.1 has bias-gradient kernels for: column-major a (BGRADA), row-major b (BGRADB)
    a = cp.asarray(np.ascontiguousarray(a_np.transpose(0, 2, 1))).transpose(0, 2, 1) if name == "BGRADA" \
        else cp.asarray(a_np)
    b = cp.asarray(b_np)
    _d, aux = la.matmul(a, b, epilog=E[name])
    g = aux[name.lower()]
    assert g.shape == (3, length, 1)
    want = a_np.sum(axis=-1) if name == "BGRADA" else b_np.sum(axis=-2)
    assert rel_error(cp.asnumpy(g)[..., 0], want) < 1e-12


@pytest.mark.parametrize("name", ["RELU_AUX", "GELU_AUX"])
def test_batched_aux_is_per_batch_and_zero_padded(name):
    m, n, k = 67, 45, 37
    a, b = cp.random.rand(3, m, k) - 0.5, cp.random.rand(k, n) - 0.5
    junk = cp.full(1 << 20, 0xAB, cp.uint8)  # dirty memory back in CuPy's pool, where the aux may land
    del junk
    d, aux = la.matmul(a, b, epilog=E[name])
    x = aux[name.lower()]
    kind = "T" if _row_major(d) else "N"
    key = "relu_aux" if name == "RELU_AUX" else "gelu_aux"
    for i in range(3):  # aux[i] is batch member i's, as its own product gives it
        _di, one = la.matmul(cp.ascontiguousarray(a[i]), b, epilog=E[name])
        assert cp.array_equal(x[i], one[key])
        pre = cp.asnumpy(a[i] @ b)
        if name == "RELU_AUX":
            assert np.mean(unpack_relu_mask(cp.asnumpy(x[i]), m, n, kind) == (pre > 0)) > 0.99
        else:
            assert rel_error(gelu_aux_values(cp.asnumpy(x[i]), m, n, kind), pre) < 1e-12
    used = (n if kind == "T" else m)
    used = -(-used // 8) if name == "RELU_AUX" else used
    pad = x[..., used:] if kind == "T" else x[..., used:, :]
    assert pad.size == 0 or not bool(pad.any())


@pytest.mark.parametrize("name,key", [("DRELU", "relu_aux"), ("DGELU", "gelu_aux")])
def test_backward_with_k_1_refused(name, key):
    a, b = cp.random.rand(64, 1), cp.random.rand(1, 48)
    _h, aux = la.matmul(cp.random.rand(64, 8), cp.random.rand(8, 48), epilog=E[name[1:] + "_AUX"])
    with pytest.raises(ValueError, match="not supported for K = 1"):
        la.matmul(a, b, epilog=E[name], epilog_inputs={key: aux[key]})


def test_reset_with_another_package_or_device_is_a_type_error():
    torch = pytest.importorskip("torch")
    a, b = cp.random.rand(16, 8), cp.random.rand(8, 4)
    with la.Matmul(a, b) as mm:
        mm.plan()
        with pytest.raises(TypeError, match="torch"):
            mm.reset_operands(a=torch.rand(16, 8, dtype=torch.float64, device="cuda"))
        with pytest.raises(TypeError, match="the host"):
            mm.reset_operands(a=cp.asnumpy(a))
