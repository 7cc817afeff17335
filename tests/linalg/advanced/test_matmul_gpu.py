"""cumath.linalg.advanced on the GPU: every epilog x dtype x layout x batch against float64 references, aux
round trips, compute types, FP8, conjugation, host operands, autotuning, resets, the feed-back loop, errors.
Skipped without a GPU. Parametrised so that each epilog meets several dtypes, layouts and batch shapes
without the full cross product (the whole file runs in well under a minute on an H200)."""

from __future__ import annotations

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath.config import plan_cache
from cumath.errors import CUBLASLtError, InvalidStateError
from cumath.linalg.advanced import MatmulEpilog as E
from helpers.matmul_reference import (_np, epilog_ref, epilog_tolerance, gelu_aux_values, rel_error, relu_mask,
                                      unpack_relu_mask)

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - the gpu marker skips first
    pytest.skip("PyTorch has no CUDA", allow_module_level=True)

RNG = np.random.default_rng(7)
TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
         "complex64": torch.complex64, "complex128": torch.complex128}


def rand(shape, dtype, layout="row", scale=1.0):
    """A CUDA tensor of ``shape`` in ``layout``: 'row' (C order), 'col' (each matrix column-major), 'sub' (a
    sub-matrix of a wider one: leading dimension larger than the rows)."""
    x = RNG.standard_normal(shape) * scale
    if dtype.startswith("complex"):
        x = x + 1j * RNG.standard_normal(shape) * scale
    t = torch.from_numpy(x).to(TORCH[dtype]).cuda()
    if layout == "col" and t.ndim >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "sub" and t.ndim >= 2:
        big = torch.zeros(t.shape[:-1] + (t.shape[-1] + 3,), dtype=t.dtype, device="cuda")
        big[..., : t.shape[-1]] = t
        return big[..., : t.shape[-1]]
    return t


def is_row_major(t):
    return t.ndim < 2 or t.shape[-1] == 1 or t.stride(-1) == 1


def check(result, ref, dtype, k, factor=1.0, gelu=False):
    err = rel_error(result, ref)
    tol = epilog_tolerance(dtype, k, factor, gelu)
    assert err <= tol, f"relative error {err:.3e} > {tol:.2e} ({dtype}, K={k})"


# ------------------------------------------------------------------------- every epilog, many combinations
FORWARD = ["DEFAULT", "RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_BIAS", "RELU_AUX", "GELU_AUX", "RELU_AUX_BIAS",
           "GELU_AUX_BIAS", "BGRADA", "BGRADB"]
BACKWARD = ["DRELU", "DRELU_BGRAD", "DGELU", "DGELU_BGRAD"]
# (dtype, layout of a, layout of b, batch of a, batch of b, with c)
COMBOS = [("float32", "row", "row", (), (), False), ("float16", "col", "col", (3,), (3,), True),
          ("bfloat16", "row", "col", (2,), (), False), ("float64", "sub", "row", (), (), True)]


def _epilog_case(name, combo, m=67, n=45, k=37):
    dtype, la_, lb, ba, bb, with_c = combo
    a = rand(ba + (m, k), dtype, la_)
    b = rand(bb + (k, n), dtype, lb)
    batch = np.broadcast_shapes(ba, bb)
    c = rand(batch + (m, n), dtype, la_ if la_ != "sub" else "row") if with_c and "GRAD" not in name else None
    return a, b, c, batch


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: f"{c[0]}-{c[1]}{c[2]}-b{len(c[3]) + len(c[4])}-c{int(c[5])}")
@pytest.mark.parametrize("name", FORWARD)
def test_forward_epilogs(name, combo):
    a, b, c, batch = _epilog_case(name, combo)
    dtype = combo[0]
    m, n, k = a.shape[-2], b.shape[-1], a.shape[-1]
    inputs = {}
    if "BIAS" in name:
        inputs["bias"] = rand((m,), dtype)
    alpha, beta = (0.75, 0.5) if c is not None else (1.0, None)
    if "GRAD" in name:
        alpha = 1.0
    try:
        out = la.matmul(a, b, c, alpha=alpha, beta=beta, epilog=E[name], epilog_inputs=inputs or None)
    except ValueError as exc:
        # cuBLASLt 13.1 (H200) has bias-gradient kernels for BGRADA with column-major a and BGRADB with
        # row-major b only: elsewhere a clear error that names the epilog, the dtypes and the GPU
        assert name in ("BGRADA", "BGRADB") and "CUBLAS_STATUS_NOT_SUPPORTED" in str(exc), exc
        if name == "BGRADA":
            supported = combo[1] == "col" and combo[2] == "col"
        else:
            supported = combo[1] in ("row", "sub") and combo[2] == "row"
        assert not supported, exc
        return
    ref, extras = epilog_ref(name, a, b, c, alpha, beta, bias=inputs.get("bias"))
    d, aux = out if isinstance(out, tuple) else (out, {})
    assert tuple(d.shape) == ref.shape and d.dtype == TORCH[dtype]
    check(d, ref, dtype, k, factor=4 if "GELU" in name else 1, gelu="GELU" in name)
    assert set(aux) == set(extras)
    kind = "T" if is_row_major(d) and d.ndim >= 2 and m > 1 and n > 1 else "N"
    for key, want in extras.items():
        if key == "relu_aux":
            got = unpack_relu_mask(aux[key], m, n, kind)
            pre = want
            agree = np.mean(got == pre)
            assert got.shape == pre.shape and agree > 0.99, f"mask agreement {agree}"
            assert aux[key].dtype == torch.uint8
        elif key == "gelu_aux":
            check(gelu_aux_values(aux[key], m, n, kind), want, dtype, k, gelu=True)
        else:  # bias gradients: (M,) or (N,); (*batch, M, 1) for a batched product
            check(aux[key], want[..., None] if want.ndim > 1 else want, dtype, k * n)
    if not la._epilogs.epilog_spec(E[name]).rows_bound:  # no bias: the result keeps a's layout
        assert is_row_major(d) == (combo[1] != "col") or d.shape[-1] == 1


@pytest.mark.parametrize("combo", COMBOS[:3], ids=lambda c: f"{c[0]}-{c[1]}{c[2]}-b{len(c[3]) + len(c[4])}")
@pytest.mark.parametrize("kind", ["N", "T"])
@pytest.mark.parametrize("name", BACKWARD)
def test_backward_epilogs_with_a_given_aux(name, kind, combo):
    """The aux input built from the reference definition of the layout, in both orientations."""
    if kind == "T" and name.endswith("BGRAD"):
        pytest.skip("bias gradients need the column-major ('N') orientation")
    a, b, _c, batch = _epilog_case(name, combo)
    dtype = combo[0]
    m, n, k = a.shape[-2], b.shape[-1], a.shape[-1]
    pre = RNG.standard_normal(batch + (m, n))
    if "RELU" in name:
        mask = pre > 0
        packed = relu_mask(mask, kind)
        t = torch.from_numpy(np.ascontiguousarray(packed)).cuda()
        if kind == "N":  # column-major matrices of bytes
            t = torch.from_numpy(np.ascontiguousarray(np.swapaxes(packed, -1, -2))).cuda().transpose(-1, -2)
        inputs, aux_ref = {"relu_aux": t}, mask
    else:
        ld = -(-m // 8) * 8 if kind == "N" else -(-n // 8) * 8
        vals = torch.from_numpy(pre).to(TORCH[dtype])
        if kind == "N":
            full = torch.zeros(batch + (n, ld), dtype=TORCH[dtype])
            full[..., :m] = vals.transpose(-1, -2)
            t = full.cuda().transpose(-1, -2)
        else:
            full = torch.zeros(batch + (m, ld), dtype=TORCH[dtype])
            full[..., :n] = vals
            t = full.cuda()
        inputs, aux_ref = {"gelu_aux": t}, _np(vals).astype(np.float64)
    out = la.matmul(a, b, epilog=E[name], epilog_inputs=inputs)
    d, aux = out if isinstance(out, tuple) else (out, {})
    ref, extras = epilog_ref(name, a, b, aux=aux_ref)
    check(d, ref, dtype, k, factor=4)
    for key, want in extras.items():
        check(aux[key], want[..., None] if want.ndim > 1 else want, dtype, k * n, factor=4)
    assert is_row_major(d) == (kind == "T")


@pytest.mark.parametrize("act", ["RELU", "GELU"])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_aux_round_trip(act, layout):
    """Forward RELU_AUX(_BIAS) / GELU_AUX(_BIAS), then the backward epilog with its aux output."""
    m, n, k = 130, 72, 48
    x, w = rand((m, k), "float32", layout), rand((k, n), "float32", layout)
    bias = rand((m,), "float32")
    for fwd, bwd in ((f"{act}_AUX", f"D{act}"), (f"{act}_AUX_BIAS", f"D{act}_BGRAD")):
        inputs = {"bias": bias} if "BIAS" in fwd else None
        h, aux = la.matmul(x, w, epilog=E[fwd], epilog_inputs=inputs)
        key = f"{act.lower()}_aux"
        g, w2 = rand((m, 64), "float32", layout), rand((64, n), "float32", layout)
        out = la.matmul(g, w2, epilog=E[bwd], epilog_inputs={key: aux[key]})
        dz, extras = out if isinstance(out, tuple) else (out, {})
        pre = epilog_ref(fwd, x, w, bias=bias if inputs else None)[1][key]
        deriv_in = pre if act == "RELU" else pre.astype(np.float32).astype(np.float64)
        ref, ref_extras = epilog_ref(bwd, g, w2, aux=deriv_in)
        check(dz, ref, "float32", 64, factor=4)
        for name, want in ref_extras.items():
            check(extras[name], want, "float32", 64 * n, factor=4)


def test_aux_from_a_different_problem_is_rejected():
    a, b = rand((64, 32), "float32"), rand((32, 48), "float32")
    _d, aux = la.matmul(a, b, epilog=E.RELU_AUX)
    with pytest.raises(ValueError, match="does not come from a forward pass of this problem"):
        la.matmul(rand((40, 32), "float32"), b, epilog=E.DRELU, epilog_inputs={"relu_aux": aux["relu_aux"]})
    with pytest.raises(ValueError, match="needs the bias gradient over the rows of a column-major result"):
        la.matmul(a, b, epilog=E.DRELU_BGRAD, epilog_inputs={"relu_aux": aux["relu_aux"]})


# ------------------------------------------------------------------------------------- dtypes and layouts
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("case", ["row", "col", "transposed-views", "vectors", "broadcast-c"])
def test_default_epilog(dtype, case):
    m, n, k = 33, 29, 41
    c = None
    alpha, beta = 1.5, 0.5
    if case == "row":
        a, b, c = rand((m, k), dtype), rand((k, n), dtype), rand((m, n), dtype)
    elif case == "col":
        a, b, c = rand((2, m, k), dtype, "col"), rand((2, k, n), dtype, "col"), rand((2, m, n), dtype, "col")
    elif case == "transposed-views":
        a, b = rand((k, m), dtype).T, rand((3, n, k), dtype).transpose(-1, -2)
    elif case == "vectors":
        a, b = rand((k,), dtype), rand((4, k, n), dtype)
    else:
        a, b, c = rand((3, m, k), dtype), rand((k, n), dtype), rand((m, 1), dtype)
    d = la.matmul(a, b, c, alpha=alpha, beta=beta if c is not None else None)
    ref, _ = epilog_ref("DEFAULT", a, b, c, alpha, beta)
    assert tuple(d.shape) == ref.shape
    check(d, ref, dtype, k)


@pytest.mark.parametrize("compute,tol_dtype", [("COMPUTE_32F_FAST_TF32", "tf32"), ("COMPUTE_32F_FAST_16F", "float16"),
                                               ("COMPUTE_32F_FAST_16BF", "bfloat16"), ("COMPUTE_32F_PEDANTIC", "float32")])
def test_compute_types(compute, tol_dtype):
    a, b = rand((96, 64), "float32"), rand((64, 80), "float32")
    d = la.matmul(a, b, options={"compute_type": la.MatmulComputeType[compute]})
    check(d, epilog_ref("DEFAULT", a, b)[0], tol_dtype, 64)


def test_half_compute_and_mixed_result():
    a, b = rand((64, 48), "float16"), rand((48, 40), "float16")
    d = la.matmul(a, b, options={"compute_type": la.MatmulComputeType.COMPUTE_16F})
    check(d, epilog_ref("DEFAULT", a, b)[0], "float16", 48, factor=4)
    c = rand((64, 40), "float32")
    d = la.matmul(a, b, c, beta=1.0)
    assert d.dtype == torch.float32
    check(d, epilog_ref("DEFAULT", a, b, c)[0], "float16", 48)


def test_conjugation_through_qualifiers():
    m, n, k = 24, 20, 16
    q = np.zeros(3, dtype=la.matrix_qualifiers_dtype)
    q["is_conjugate"][0] = 1
    a, b = rand((m, k), "complex64"), rand((k, n), "complex64")
    d = la.matmul(a, b, qualifiers=q)
    check(d, epilog_ref("DEFAULT", a, b)[0] * 0 + np.matmul(_np(a).conj(), _np(b)), "complex64", k)
    q["is_conjugate"][:2] = (0, 1)
    b_col = rand((k, n), "complex64", "col")
    d = la.matmul(a, b_col, qualifiers=q)
    check(d, np.matmul(_np(a), _np(b_col).conj()), "complex64", k)


@pytest.mark.parametrize("result", ["float8_e4m3fn", "bfloat16", "float32"])
def test_fp8(result):
    m, n, k = 64, 48, 32
    a32, b32 = rand((m, k), "float32", scale=0.5), rand((k, n), "float32", "col", scale=0.5)
    a, b = a32.to(torch.float8_e4m3fn), b32.t().contiguous().t().to(torch.float8_e4m3fn)
    assert b.stride(0) == 1
    scales = {"a": 2.0, "b": 0.5, "d": 1.0} if result == "float8_e4m3fn" else {"a": 2.0, "b": 0.5}
    d = la.matmul(a, b, quantization_scales=scales, options={"result_type": result})
    assert d.dtype == getattr(torch, result)
    ref = np.matmul(_np(a).astype(np.float64), _np(b).astype(np.float64))
    check(d, ref, "float8_e4m3fn" if result.startswith("float8") else "bfloat16", k)
    scale_t = torch.tensor([4.0], device="cuda")
    d = la.matmul(a, b, quantization_scales=la.MatmulQuantizationScales(a=scale_t, b=0.25),
                  options={"result_type": "float32"})
    check(d, ref, "bfloat16", k)
    with pytest.raises(ValueError, match="a scale for d applies to an FP8 result only"):
        la.matmul(a, b, quantization_scales={"a": 1.0, "b": 1.0, "d": 1.0}, options={"result_type": "float32"})


def test_fp8_errors():
    a = rand((32, 32), "float32").to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="FP8 matmul on this GPU needs a row-major a and a column-major b"):
        la.matmul(a, a, quantization_scales={"a": 1.0, "b": 1.0, "d": 1.0})
    with pytest.raises(ValueError, match="block_scaling=True .* needs a GPU of compute capability 10.0"):
        la.matmul(a, a.t(), quantization_scales={"a": 1.0, "b": 1.0, "d": 1.0}, options={"block_scaling": True})


@pytest.mark.parametrize("package", ["numpy", "cupy", "torch-cpu"])
def test_other_packages(package, caplog):
    m, n, k = 40, 24, 56
    x_a, x_b, x_c = RNG.standard_normal((2, m, k)), RNG.standard_normal((k, n)), RNG.standard_normal((m, 1))
    bias = RNG.standard_normal(m)
    if package == "cupy":
        cp = pytest.importorskip("cupy")
        conv = cp.asarray
    elif package == "numpy":
        conv = np.asarray
    else:
        conv = torch.from_numpy
    a, b, c = conv(x_a), conv(np.asfortranarray(x_b)), conv(x_c)
    with caplog.at_level("INFO", logger="cumath"):
        d = la.matmul(a, b, c, alpha=2.0, beta=0.5)
    assert type(d).__module__.partition(".")[0] == type(a).__module__.partition(".")[0]
    check(d, 2.0 * np.matmul(x_a, x_b) + 0.5 * x_c, "float64", k)
    if package != "cupy":
        assert "copy host->GPU" in caplog.text or "device buffer" in caplog.text
    d, aux = la.matmul(a[0], b, epilog=E.RELU_AUX_BIAS, epilog_inputs={"bias": conv(bias)})
    ref, extras = epilog_ref("RELU_AUX_BIAS", x_a[0], x_b, bias=bias)
    check(d, ref, "float64", k)
    assert set(aux) == {"relu_aux"}


# ----------------------------------------------------------------------------------------- the feed-back loop
@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("name", ["DEFAULT", "RELU_BIAS", "GELU_AUX_BIAS", "BIAS"])
def test_feeding_the_result_back(name, layout):
    """d = mm.execute(); mm.reset_operands_unchecked(a=d): right at every step."""
    n = 64
    a = rand((n, n), "float64", layout)
    w = rand((n, n), "float64", layout, scale=1 / 8)
    bias = rand((n,), "float64")
    inputs = {"bias": bias} if "BIAS" in name else None
    x = _np(a)
    with la.Matmul(a, w) as mm:
        mm.plan(epilog=E[name], epilog_inputs=inputs)
        for step in range(4):
            out = mm.execute()
            d = out[0] if isinstance(out, tuple) else out
            ref, _ = epilog_ref(name, x, w, bias=bias if inputs else None)
            check(d, ref, "float64", n, gelu="GELU" in name)
            x = ref
            mm.reset_operands_unchecked(a=d)
        if name == "DEFAULT":
            assert is_row_major(d) == (layout == "row")


def test_reset_catches_layout_changes_and_checks_shapes():
    a, b = rand((48, 40), "float32"), rand((40, 32), "float32")
    with la.Matmul(a, b) as mm:
        mm.plan()
        check(mm.execute(), epilog_ref("DEFAULT", a, b)[0], "float32", 40)
        a2 = rand((48, 40), "float32", "col")
        mm.reset_operands(a=a2)
        check(mm.execute(), epilog_ref("DEFAULT", a2, b)[0], "float32", 40)
        a3 = rand((48, 40), "float32", "sub")
        mm.reset_operands_unchecked(a=a3)
        check(mm.execute(), epilog_ref("DEFAULT", a3, b)[0], "float32", 40)
        mm.reset_operands_unchecked(a=a)
        check(mm.execute(), epilog_ref("DEFAULT", a, b)[0], "float32", 40)
        with pytest.raises(ValueError, match=r"the new a has shape \[40, 48\] and dtype float32; the plan is for"):
            mm.reset_operands(a=rand((40, 48), "float32"))
        with pytest.raises(ValueError, match="the new b has shape"):
            mm.reset_operands(b=rand((40, 32), "float64"))
        with pytest.raises(ValueError, match="c was not given"):
            mm.reset_operands(c=rand((48, 32), "float32"))
        mm.release_operands()
        with pytest.raises(InvalidStateError, match="the operands were released"):
            mm.execute()
        mm.reset_operands(a=a, b=b)
        mm.reset_operands(alpha=2.0)
        check(mm.execute(), 2 * epilog_ref("DEFAULT", a, b)[0], "float32", 40)
    with pytest.raises(InvalidStateError, match="after free"):
        mm.execute()
    mm.free()
    with pytest.raises(InvalidStateError, match="needs a plan"):
        la.Matmul(a, b).execute()


def test_reset_epilog_inputs_and_alpha_beta():
    a, b, c = rand((64, 32), "float32"), rand((32, 48), "float32"), rand((64, 48), "float32")
    bias1, bias2 = rand((64,), "float32"), rand((64,), "float32")
    with la.Matmul(a, b, c, alpha=1.0, beta=1.0) as mm:
        mm.plan(epilog=E.BIAS, epilog_inputs={"bias": bias1})
        check(mm.execute(), epilog_ref("BIAS", a, b, c, 1.0, 1.0, bias=bias1)[0], "float32", 32)
        mm.reset_operands(beta=0.25, epilog_inputs={"bias": bias2})
        check(mm.execute(), epilog_ref("BIAS", a, b, c, 1.0, 0.25, bias=bias2)[0], "float32", 32)
        with pytest.raises(ValueError, match="epilog input 'relu_aux' was not planned"):
            mm.reset_operands(epilog_inputs={"relu_aux": bias2})


def test_inplace():
    a, b, c = rand((64, 32), "float32"), rand((32, 48), "float32"), rand((64, 48), "float32", "col")
    ref = epilog_ref("DEFAULT", a, b, c, 1.0, 0.5)[0]
    d = la.matmul(a, b, c, beta=0.5, options={"inplace": True})
    assert d is c
    check(c, ref, "float32", 32)


# --------------------------------------------------------------------------------------------- autotuning
def test_autotune_and_algorithms(tmp_path, monkeypatch):
    from cumath.linalg.advanced import _algorithms, _autotune_cache

    a, b = rand((512, 256), "float16"), rand((256, 384), "float16")
    with la.Matmul(a, b) as mm:
        algs = mm.plan(preferences={"limit": 4})
        assert 1 <= len(algs) <= 4 and all(isinstance(x, la.Algorithm) for x in algs)
        timed = mm.autotune(iterations=3)
        assert timed and timed[0].measured_time is not None
        assert mm.algorithms[0] is timed[0]
        check(mm.execute(), epilog_ref("DEFAULT", a, b)[0], "float16", 256)
        for alg in algs:
            check(mm.execute(algorithm=alg), epilog_ref("DEFAULT", a, b)[0], "float16", 256)
        path = tmp_path / "algs.json"
        _algorithms.save_algorithms(str(path), timed[:1])
    loaded = _algorithms.load_algorithms(str(path))
    with la.Matmul(a, b) as mm:
        assert mm.plan(algorithms=loaded)[0].algorithm_id == timed[0].algorithm_id
        check(mm.execute(), epilog_ref("DEFAULT", a, b)[0], "float16", 256)
    # the persistent cache: a new object reuses the stored winner
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("cumath.config.matmul_autotune_cache", True, raising=False)
    _autotune_cache.clear(memory_only=True)
    with la.Matmul(a, b) as mm:
        mm.plan()
        best = mm.autotune(iterations=2)[0]
    with la.Matmul(a, b) as mm:
        first = mm.plan()[0]
        assert first.algorithm_id == best.algorithm_id and first.measured_time is not None


def test_library_errors_are_typed(monkeypatch):
    monkeypatch.setenv("CUMATH_SMALL_MATMUL", "0")  # a cuBLASLt plan (32^3 runs on cumath's own kernel otherwise)
    a, b = rand((32, 32), "float32"), rand((32, 32), "float32")
    with la.Matmul(a, b) as mm:
        mm.plan()
        assert mm._v.engine == "cublaslt"
        monkeypatch.setattr(mm._v, "hot_raw", lambda *args: 7)  # the hot path's cublasLtMatmul caller
        with pytest.raises(CUBLASLtError, match="CUBLAS_STATUS_INVALID_VALUE"):
            mm.execute()


def test_unsupported_epilog_errors():
    a = rand((16, 16), "complex64")
    with pytest.raises(ValueError, match="epilog RELU is not supported for complex operands"):
        la.matmul(a, a, epilog=E.RELU)
    a = rand((16, 16), "float32")
    with pytest.raises(ValueError, match=r"epilog BIAS needs the epilog input\(s\) \['bias'\]"):
        la.matmul(a, a, epilog=E.BIAS)
    with pytest.raises(ValueError, match=r"'bias' of shape \[15\] fits neither the result's 16 rows nor its 16 "
                                         r"columns: it must have shape \(16,\) or \(16, 1\) \(one value per row\), "
                                         r"or \(1, 16\) \(one value per column, as in x @ w \+ bias\)$"):
        la.matmul(a, a, epilog=E.BIAS, epilog_inputs={"bias": rand((15,), "float32")})


def test_streams_and_plan_cache():
    a, b = rand((64, 64), "float32"), rand((64, 64), "float32")
    plan_cache.clear()
    plan_cache.reset_stats()
    for _ in range(3):
        d = la.matmul(a, b)
    assert plan_cache.stats()["hits"] == 2
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        d = la.matmul(a, b)
    s.synchronize()
    check(d, epilog_ref("DEFAULT", a, b)[0], "float32", 64)
    d = la.matmul(a, b, stream=s)
    s.synchronize()
    check(d, epilog_ref("DEFAULT", a, b)[0], "float32", 64)


# ------------------------------------------------------------------------------------------ recycled results
def _recycles_torch():
    from cumath._core.operand import adapter

    return getattr(adapter("torch"), "recycle_snapshot", None) is not None


@pytest.mark.usefixtures("recycling_on")
@pytest.mark.parametrize("layout", ["row", "col"])
def test_recycled_results_torch(layout):
    """Results the caller dropped are reused; kept ones, views and tensors autograd saved are never touched."""
    a, b = rand((64, 48), "float32", layout), rand((48, 40), "float32", layout)
    with la.Matmul(a, b) as mm:
        mm.plan()
        p = mm.execute().data_ptr()
        d = mm.execute()
        if _recycles_torch():
            assert d.data_ptr() == p
        kept, refs = [], []
        for i in range(8):  # d = mm.execute() keeps the previous result alive during the call
            a2 = rand((64, 48), "float32", layout)
            mm.reset_operands(a=a2)
            d = mm.execute()
            if i % 3 == 0:
                kept.append(d)
                refs.append(epilog_ref("DEFAULT", a2, b)[0])
        view, view_ref = d[1:, 2:], epilog_ref("DEFAULT", a2, b)[0][1:, 2:]
        w = torch.randn(64, 40, device="cuda", requires_grad=True)
        saved = mm.execute()
        saved_ref = _np(saved).astype(np.float64)
        loss = (saved * w).sum()  # autograd keeps the product's tensor: dL/dw = saved
        del d, saved
        for _ in range(6):
            mm.reset_operands(a=rand((64, 48), "float32", layout))
            mm.execute()
        loss.backward()
        torch.cuda.synchronize()
        for x, ref in zip(kept, refs):
            check(x, ref, "float32", 48)
        check(view, view_ref, "float32", 48)
        assert np.array_equal(_np(w.grad).astype(np.float64), saved_ref)

@pytest.mark.usefixtures("recycling_on")
def test_recycled_results_torch_loops_and_streams():
    n = 64
    a, w = rand((n, n), "float32"), rand((n, n), "float32", scale=1 / 8)
    x = _np(a).astype(np.float64)
    d = la.matmul(a, w)
    for _ in range(5):  # stateless feed-back: the input is never the output
        x = x @ _np(w)
        check(d, x, "float32", n, factor=4)
        d = la.matmul(d, w)
    with la.Matmul(a, w) as mm:
        mm.plan()
        p0 = mm.execute().data_ptr()
        s = torch.cuda.Stream()
        mm.reset_operands(stream=s)
        d1 = mm.execute()
        assert d1.data_ptr() != p0  # made on another stream: not reused here
        s.synchronize()
        check(d1, epilog_ref("DEFAULT", a, w)[0], "float32", n)

@pytest.mark.usefixtures("recycling_on")
def test_recycled_results_cupy():
    cp = pytest.importorskip("cupy")
    a, b = cp.asarray(rand((33, 20), "float64")), cp.asarray(rand((20, 17), "float64"))
    with la.Matmul(a, b) as mm:
        mm.plan()
        p = mm.execute().data.ptr
        d = mm.execute()
        assert d.data.ptr == p
        view, want = d[2:], cp.asnumpy(d[2:])
        del d
        kept = []
        for _ in range(5):
            a2 = cp.asarray(rand((33, 20), "float64"))
            mm.reset_operands(a=a2)
            kept.append((mm.execute(), cp.asnumpy(a2) @ cp.asnumpy(b)))
        cp.cuda.get_current_stream().synchronize()
        assert np.array_equal(cp.asnumpy(view), want)
        for x, ref in kept:
            check(x, ref, "float64", 20)
