"""cumath.linalg.matmul / Matmul on the CPU: every qualifier, dtype, layout, batch shape, with and without c,
alpha, beta and in place, against float64 NumPy references."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import cumath
import cumath.linalg as L
from helpers.matrix import LAYOUTS, have_module, random_array, to_numpy, with_layout
from test_generic_reference import assert_matmul_close, full_matrix, matmul_ref, qualifier, qualifiers

DTYPES = ("float32", "float64", "complex64", "complex128")
dtypes = pytest.mark.parametrize("dtype", DTYPES)


def _providers():
    from cumath._bindings import blas

    out = []
    for p in ("openblas", "mkl"):
        try:
            blas.find_blas(p)
            ok = True
        except Exception:
            ok = False
        out.append(pytest.param(p, marks=pytest.mark.skipif(not ok, reason=f"no {p} BLAS here")))
    return out


providers = pytest.mark.parametrize("provider", _providers())


def _scalars(dtype):
    return (1.5 - 0.5j, 0.25 + 1j) if dtype.startswith("complex") else (1.5, -0.75)


# ------------------------------------------------------------------------------------------ general (gemm)

@dtypes
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", ("C", "F", "reversed", "step"))
def test_gemm_layouts(dtype, la, lb):
    a0, b0 = random_array((7, 5), dtype), random_array((5, 3), dtype)
    a, b = with_layout(a0, la), with_layout(b0, lb)
    r = L.matmul(a, b)
    assert isinstance(r, np.ndarray) and r.dtype == np.dtype(dtype)
    assert_matmul_close(r, matmul_ref(a0, b0), dtype, 5)
    np.testing.assert_array_equal(a, a0)  # operands are not touched


@dtypes
@providers
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
@pytest.mark.parametrize("lc", ("C", "F", "reversed", "step"))
def test_gemm_with_c_alpha_beta(dtype, provider, c_mode, lc):
    alpha, beta = _scalars(dtype)
    a0, b0, c0 = random_array((11, 6), dtype), random_array((6, 13), dtype), random_array((11, 13), dtype)
    a, b = with_layout(a0, "F"), with_layout(b0, "C")
    opts = {"cpu_blas": provider, "inplace": c_mode == "inplace"}
    if c_mode == "none":
        r = L.matmul(a, b, alpha=alpha, options=opts)
        assert_matmul_close(r, matmul_ref(a0, b0, None, alpha), dtype, 6)
        return
    c = with_layout(c0, lc)
    r = L.matmul(a, b, c, alpha=alpha, beta=beta, options=opts)
    ref = matmul_ref(a0, b0, c0, alpha, beta)
    assert_matmul_close(r, ref, dtype, 6)
    if c_mode == "inplace":
        assert r is c
    else:
        np.testing.assert_array_equal(c, c0)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("ca,cb", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("la,lb", [("C", "C"), ("F", "C"), ("C", "F"), ("F", "F")])
@providers
def test_gemm_conjugate_qualifiers(dtype, ca, cb, la, lb, provider):
    q = qualifiers(qualifier("ge", conjugate=ca), qualifier("ge", conjugate=cb))
    a0, b0 = random_array((4, 6), dtype), random_array((6, 5), dtype)
    r = L.matmul(with_layout(a0, la), with_layout(b0, lb), qualifiers=q, options={"cpu_blas": provider})
    assert_matmul_close(r, matmul_ref(a0, b0, quals=q), dtype, 6)


# --------------------------------------------------------------------------------------- qualifiers

STRUCTURED = [("sy", "L", "N"), ("sy", "U", "N"), ("he", "L", "N"), ("he", "U", "N"), ("tr", "L", "N"),
              ("tr", "U", "U"), ("tr", "L", "U"), ("tr", "U", "N")]


@dtypes
@pytest.mark.parametrize("kind,uplo,diag", STRUCTURED)
@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("conj", [False, True])
@pytest.mark.parametrize("ls,lg", [("C", "C"), ("F", "C"), ("C", "F"), ("reversed", "step")])
def test_structured_qualifiers(dtype, kind, uplo, diag, side, conj, ls, lg):
    n, other = 6, 4
    s0 = random_array((n, n), dtype)
    g0 = random_array((n, other) if side == "a" else (other, n), dtype)
    qs = qualifier(kind, conjugate=conj, uplo=uplo, diag=diag)
    q = qualifiers(qs, None) if side == "a" else qualifiers(None, qs)
    a0, b0 = (s0, g0) if side == "a" else (g0, s0)
    la, lb = (ls, lg) if side == "a" else (lg, ls)
    r = L.matmul(with_layout(a0, la), with_layout(b0, lb), qualifiers=q)
    assert_matmul_close(r, matmul_ref(a0, b0, quals=q), dtype, n)


@dtypes
@pytest.mark.parametrize("kind", ["sy", "he", "tr", "dg"])
@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("c_mode", ["c", "inplace"])
@pytest.mark.parametrize("lc", ["C", "F", "step"])
def test_structured_with_c(dtype, kind, side, c_mode, lc):
    alpha, beta = _scalars(dtype)
    n, other = 5, 3
    s0 = random_array((n,) if kind == "dg" else (n, n), dtype)
    g0 = random_array((n, other) if side == "a" else (other, n), dtype)
    qs = qualifier(kind, uplo="U")
    q = qualifiers(qs, None, n=3) if side == "a" else qualifiers(None, qs, n=3)
    a0, b0 = (s0, g0) if side == "a" else (g0, s0)
    c0 = random_array((n, other) if side == "a" else (other, n), dtype)
    c = with_layout(c0, lc)
    r = L.matmul(a0, b0, c, alpha=alpha, beta=beta, qualifiers=q, options={"inplace": c_mode == "inplace"})
    assert_matmul_close(r, matmul_ref(a0, b0, c0, alpha, beta, q), dtype, n)
    assert (r is c) == (c_mode == "inplace")


@dtypes
@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("incx", [1, -1])
@pytest.mark.parametrize("conj", [False, True])
@pytest.mark.parametrize("layout", ["C", "reversed", "step"])
def test_diagonal_qualifier(dtype, side, incx, conj, layout):
    alpha = _scalars(dtype)[0]
    x0 = random_array((6,), dtype)
    g0 = random_array((6, 4) if side == "a" else (4, 6), dtype)
    qd = qualifier("dg", conjugate=conj, incx=incx)
    q = qualifiers(qd, None) if side == "a" else qualifiers(None, qd)
    a0, b0 = (x0, g0) if side == "a" else (g0, x0)
    x = with_layout(x0, layout)
    a, b = (x, g0) if side == "a" else (g0, x)
    r = L.matmul(a, b, alpha=alpha, qualifiers=q)
    assert_matmul_close(r, matmul_ref(a0, b0, None, alpha, quals=q), dtype, 6)


def test_real_hermitian_is_symmetric():
    s0, g0 = random_array((5, 5), "float64"), random_array((5, 2), "float64")
    qh = qualifiers(qualifier("he", uplo="U"), None)
    qs = qualifiers(qualifier("sy", uplo="U"), None)
    np.testing.assert_allclose(L.matmul(s0, g0, qualifiers=qh), L.matmul(s0, g0, qualifiers=qs))


# ------------------------------------------------------------------------------------------- batches

BATCHES = [((4, 5, 3), (3, 2)), ((5, 3), (4, 3, 2)), ((4, 5, 3), (4, 3, 2)), ((2, 1, 5, 3), (3, 3, 2)),
           ((3, 2, 5, 3), (2, 3, 2)), ((1, 5, 3), (4, 3, 2)), ((3,), (4, 3, 2)), ((4, 5, 3), (3,))]


@dtypes
@pytest.mark.parametrize("sa,sb", BATCHES)
@pytest.mark.parametrize("layout", ["C", "F", "permuted"])
@pytest.mark.parametrize("with_c", [False, True])
def test_implicit_batches(dtype, sa, sb, layout, with_c):
    alpha, beta = _scalars(dtype)
    a0, b0 = random_array(sa, dtype), random_array(sb, dtype)
    shape = np.matmul(a0, b0).shape
    c0 = random_array(shape, dtype) if with_c else None
    r = L.matmul(with_layout(a0, layout), with_layout(b0, layout), c0, alpha=alpha,
                 beta=beta if with_c else None)
    assert_matmul_close(r, matmul_ref(a0, b0, c0, alpha, beta), dtype, sa[-1])


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("kind", ["sy", "he", "tr", "dg"])
def test_structured_batches(dtype, kind):
    s0 = random_array((3, 4) if kind == "dg" else (3, 4, 4), dtype)
    g0 = random_array((2, 1, 4, 5), dtype)
    q = qualifiers(qualifier(kind, uplo="U", diag="U"), None)
    c0 = random_array((2, 3, 4, 5), dtype)
    r = L.matmul(s0, g0, c0.copy(), alpha=2.0, beta=0.5, qualifiers=q, options={"inplace": True})
    assert_matmul_close(r, matmul_ref(s0, g0, c0, 2.0, 0.5, q), dtype, 4)


def test_broadcast_c_out_of_place():
    a0, b0 = random_array((3, 5, 4), "float64"), random_array((4, 6), "float64")
    for c0 in (random_array((6,), "float64"), random_array((5, 1), "float64"), random_array((1, 5, 6), "float64")):
        r = L.matmul(a0, b0, c0, alpha=1.0, beta=2.0)
        assert_matmul_close(r, matmul_ref(a0, b0, c0, 1.0, 2.0), "float64", 4)


@dtypes
def test_explicit_batches(dtype):
    alpha, beta = _scalars(dtype)
    shapes = [((3, 4), (4, 5)), ((6, 2), (2, 1)), ((2, 7, 3), (3, 2))]
    a = [random_array(s, dtype) for s, _ in shapes]
    b = [random_array(s, dtype) for _, s in shapes]
    c = [random_array(np.matmul(x, y).shape, dtype) for x, y in zip(a, b)]
    out = L.matmul(a, b, [x.copy() for x in c], alpha=alpha, beta=[beta, 0.0, 1.0])
    assert isinstance(out, list) and len(out) == 3
    for x, y, z, bt, r in zip(a, b, c, [beta, 0.0, 1.0], out):
        assert_matmul_close(r, matmul_ref(x, y, z, alpha, bt), dtype, x.shape[-1])


def test_explicit_batches_with_per_problem_qualifiers_and_reset():
    a = [random_array((4, 4), "float64"), random_array((3, 5), "float64")]
    b = [random_array((4, 2), "float64"), random_array((5,), "float64")]
    q = [qualifiers(qualifier("tr", uplo="U"), None), None]
    with L.Matmul(a, b, qualifiers=q) as mm:
        mm.plan()
        for _ in range(2):
            out = mm.execute()
            for x, y, qq, r in zip(a, b, q, out):
                assert_matmul_close(r, matmul_ref(x, y, quals=qq), "float64", x.shape[-1])
            a = [random_array(x.shape, "float64") for x in a]
            mm.reset_operands(a=a)
        with pytest.raises(ValueError, match="sequence of 2"):
            mm.reset_operands(a=a[0])


# ------------------------------------------------------------------------------------------- vectors

@dtypes
def test_one_dimensional_promotion(dtype):
    a2, b2 = random_array((4, 6), dtype), random_array((6, 3), dtype)
    va, vb = random_array((6,), dtype), random_array((6,), dtype)
    for x, y in ((va, b2), (a2, vb), (va, vb)):
        r = L.matmul(x, y)
        ref = matmul_ref(x, y)
        assert np.shape(r) == ref.shape
        assert_matmul_close(np.asarray(r), ref, dtype, 6)


def test_zero_sizes():
    assert L.matmul(np.ones((0, 3)), np.ones((3, 4))).shape == (0, 4)
    np.testing.assert_array_equal(L.matmul(np.ones((2, 0)), np.ones((0, 4))), np.zeros((2, 4)))
    c = random_array((2, 4), "float64")
    np.testing.assert_allclose(L.matmul(np.ones((2, 0)), np.ones((0, 4)), c, beta=3.0), 3 * c)


# ------------------------------------------------------------------------------------- packages, threads

@pytest.mark.skipif(not have_module("torch"), reason="PyTorch is not installed")
@pytest.mark.parametrize("inplace", [False, True])
def test_torch_cpu_tensors(inplace):
    import torch

    a0, b0, c0 = random_array((5, 4), "float32"), random_array((4, 3), "float32"), random_array((5, 3), "float32")
    a, b, c = torch.from_numpy(a0), torch.from_numpy(b0).T.contiguous().T, torch.from_numpy(c0.copy())
    r = L.matmul(a, b, c, alpha=2.0, beta=1.0, options={"inplace": inplace})
    assert isinstance(r, torch.Tensor) and r.device.type == "cpu"
    assert (r is c) == inplace
    assert_matmul_close(r, matmul_ref(a0, b0, c0, 2.0, 1.0), "float32", 4)


def test_execution_threads_and_logging(caplog):
    a0, b0 = random_array((64, 32), "float64"), random_array((32, 16), "float64")
    with caplog.at_level(logging.INFO, logger="cumath"):
        r = L.matmul(a0, b0, execution=cumath.ExecutionCPU(num_threads=1))
    assert_matmul_close(r, matmul_ref(a0, b0), "float64", 32)
    text = caplog.text
    assert "matmul (gemm)" in text and "planned on" in text


def test_copies_are_logged(caplog):
    a = with_layout(random_array((4, 5), "float64"), "step")
    with caplog.at_level(logging.INFO, logger="cumath"):
        L.matmul(a, random_array((5, 2), "float64"), options={"cpu_blas": "openblas"})
    assert "cannot be described to BLAS" in caplog.text


def test_plan_cache_reuses_plans():
    from cumath.config import plan_cache

    plan_cache.clear()
    plan_cache.reset_stats()
    a0, b0 = random_array((6, 4), "float64"), random_array((4, 3), "float64")
    for alpha in (1.0, 2.0, -1.0):
        assert_matmul_close(L.matmul(a0, b0, alpha=alpha), matmul_ref(a0, b0, None, alpha), "float64", 4)
    stats = plan_cache.stats()
    assert stats["misses"] == 1 and stats["hits"] == 2
    c0 = random_array((6, 3), "float64")
    r = L.matmul(a0, b0, c0, beta=0.5)
    assert_matmul_close(r, matmul_ref(a0, b0, c0, 1.0, 0.5), "float64", 4)
    with pytest.raises(ValueError, match="beta must be given"):
        L.matmul(a0, b0, c0)


@pytest.mark.usefixtures("recycling_on")
def test_result_is_recycled_only_when_unreferenced():
    a0, b0 = random_array((6, 4), "float64"), random_array((4, 3), "float64")
    with L.Matmul(a0, b0) as mm:
        mm.plan()
        r1 = mm.execute()
        r2 = mm.execute()
        assert r1 is not r2
        np.testing.assert_array_equal(r1, r2)
        ptr = r2.__array_interface__["data"][0]
        del r1, r2
        mm.execute()
        r4 = mm.execute()
        assert r4.__array_interface__["data"][0] == ptr  # reused: nothing referred to it
        r5 = mm.execute()
        assert r5 is not r4  # held by the caller: never overwritten
        np.testing.assert_array_equal(r4, r5)


def test_layout_property_shows_the_transpose_trick():
    a, b = random_array((6, 4), "float64"), random_array((4, 3), "float64")
    with L.Matmul(a, b) as mm:
        assert mm.layout is None
        mm.plan()
        (step,) = mm.layout.steps
        assert step.routine == "gemm" and step.args[:2] == ("N", "N")  # row-major: D^T = B^T A^T, no copies
        assert all(p.mode == "direct" for p in mm.layout.preps.values())
    tall = random_array((3, 50, 4), "float64")
    with L.Matmul(tall, b) as mm:
        mm.plan()
        (step,) = mm.layout.steps
        assert step.routine == "gemm" and step.args[3] == 150  # the batch folded into one gemm


def test_to_numpy_of_results():
    r = L.matmul(random_array((2, 3), "complex64"), random_array((3, 2), "complex64"))
    assert to_numpy(r).dtype == np.complex64
    assert full_matrix(r, qualifier("ge")).dtype == np.complex128
