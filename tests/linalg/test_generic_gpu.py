"""cumath.linalg.matmul / Matmul on the GPU (cuBLAS): CuPy and PyTorch CUDA operands, NumPy operands executed
on the GPU, GPU operands executed on the CPU; every qualifier, dtype, layout, batches, c/alpha/beta/in place,
streams and the lifecycle, against float64 NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import cumath.linalg as L
from helpers.matrix import have_module, random_array, to_numpy, with_layout
from test_generic_reference import (assert_matmul_close, check_explicit, explicit_problems, matmul_ref, qualifier,
                                    qualifiers)

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")


def _packages():
    out = [pytest.param("cupy", marks=pytest.mark.skipif(not have_module("cupy"), reason="CuPy is not installed"))]
    torch_cuda = False
    if have_module("torch"):
        try:
            import torch

            torch_cuda = torch.cuda.is_available()
        except Exception:
            torch_cuda = False
    out.append(pytest.param("torch", marks=pytest.mark.skipif(not torch_cuda, reason="PyTorch has no CUDA")))
    return out


packages = pytest.mark.parametrize("package", _packages())


def on_gpu(x, package, layout="C"):
    return with_layout(x, layout, package, device="cuda")


def _scalars(dtype):
    return (1.5 - 0.5j, 0.25 + 1j) if dtype.startswith("complex") else (1.5, -0.75)


CASES = [("ge", "a", False), ("ge", "a", True), ("sy", "a", False), ("sy", "b", True), ("he", "a", True),
         ("he", "b", False), ("tr", "a", False), ("tr", "b", True), ("dg", "a", True), ("dg", "b", False)]


def _problem(kind, side, conj, dtype, batch=()):
    n, other = 6, 4
    if kind == "ge":
        a0, b0 = random_array(batch + (5, n), dtype), random_array((n, other), dtype)
        q = qualifiers(qualifier("ge", conjugate=conj), qualifier("ge", conjugate=not conj))
        return a0, b0, q
    s0 = random_array(batch + ((n,) if kind == "dg" else (n, n)), dtype)
    g0 = random_array((n, other) if side == "a" else (other, n), dtype)
    qs = qualifier(kind, conjugate=conj, uplo="U", diag="U", incx=-1)
    if side == "a":
        return s0, g0, qualifiers(qs, None)
    return g0, s0, qualifiers(None, qs)


def _result_shape(a0, b0, q):
    from test_generic_reference import full_matrix

    return np.matmul(full_matrix(a0, q[0]), full_matrix(b0, q[1])).shape


@packages
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind,side,conj", CASES)
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
@pytest.mark.parametrize("layout", ["C", "F", "step"])
def test_qualifiers_layouts_and_c(package, dtype, kind, side, conj, c_mode, layout):
    alpha, beta = _scalars(dtype)
    a0, b0, q = _problem(kind, side, conj, dtype)
    c0 = random_array(_result_shape(a0, b0, q), dtype) if c_mode != "none" else None
    a, b = on_gpu(a0, package, layout), on_gpu(b0, package, "F" if layout == "C" else "C")
    c = None if c0 is None else on_gpu(c0, package, layout)
    r = L.matmul(a, b, c, alpha=alpha, beta=beta if c is not None else None, qualifiers=q,
                 options={"inplace": c_mode == "inplace"})
    assert type(r).__module__.startswith(package)
    assert_matmul_close(r, matmul_ref(a0, b0, c0, alpha, beta, q), dtype, 6)
    if c_mode == "inplace":
        assert r is c


@packages
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("sa,sb", [((4, 5, 3), (3, 2)), ((5, 3), (4, 3, 2)), ((4, 5, 3), (4, 3, 2)),
                                   ((2, 1, 5, 3), (3, 3, 2)), ((3,), (4, 3, 2)), ((4, 5, 3), (3,))])
@pytest.mark.parametrize("layout", ["C", "F", "permuted"])
def test_implicit_batches(package, dtype, sa, sb, layout):
    a0, b0 = random_array(sa, dtype), random_array(sb, dtype)
    c0 = random_array(np.matmul(a0, b0).shape, dtype)
    r = L.matmul(on_gpu(a0, package, layout), on_gpu(b0, package, layout), on_gpu(c0, package), alpha=2.0,
                 beta=0.5)
    assert_matmul_close(r, matmul_ref(a0, b0, c0, 2.0, 0.5), dtype, sa[-1])


@packages
@pytest.mark.parametrize("kind", ["sy", "he", "tr", "dg"])
def test_structured_batches(package, kind):
    a0, b0, q = _problem(kind, "a", False, "complex64", batch=(3,))
    b0 = random_array((2, 1) + b0.shape, "complex64")
    c0 = random_array(_result_shape(a0, b0, q), "complex64")
    c = on_gpu(c0, package)
    r = L.matmul(on_gpu(a0, package), on_gpu(b0, package), c, alpha=2.0, beta=0.5, qualifiers=q,
                 options={"inplace": True})
    assert r is c
    assert_matmul_close(r, matmul_ref(a0, b0, c0, 2.0, 0.5, q), "complex64", 6)


@packages
def test_explicit_batches(package):
    shapes = [((3, 4), (4, 5)), ((6, 2), (2, 1)), ((2, 7, 3), (3, 2))]
    a = [random_array(s, "float64") for s, _ in shapes]
    b = [random_array(s, "float64") for _, s in shapes]
    with L.Matmul([on_gpu(x, package) for x in a], [on_gpu(y, package) for y in b]) as mm:
        mm.plan()
        out = mm.execute()
        for x, y, r in zip(a, b, out):
            assert_matmul_close(r, matmul_ref(x, y), "float64", x.shape[-1])


def _stream_of(package):
    if package == "cupy":
        import cupy

        return cupy.cuda.Stream(non_blocking=True)
    import torch

    return torch.cuda.Stream()


def _device_synchronize(package):
    """Operands made on the package's default stream are ready before work on another stream reads them."""
    if package == "cupy":
        import cupy

        cupy.cuda.Device().synchronize()
    else:
        import torch

        torch.cuda.synchronize()


@packages
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 17])
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
def test_explicit_batches_grouped(package, dtype, n, c_mode, caplog):
    """Lists of mixed shapes, layouts (C, F, transposed views, strided), conjugations, alphas and betas: the
    general products run in one grouped launch on one handle; results checked over three executions (the second
    after new a's and alphas, the third with nothing changed); on a stream of the package for n = 17."""
    probs = explicit_problems(n, dtype, c_mode)
    a = [on_gpu(p["a"], package, p["layouts"][0]) for p in probs]
    b = [on_gpu(p["b"], package, p["layouts"][1]) for p in probs]
    c = None if c_mode == "none" else [on_gpu(p["c"], package, p["layouts"][2]) for p in probs]
    stream = _stream_of(package) if n == 17 else None
    if c is None:
        for p in probs:
            p["beta"] = 0.0
    caplog.set_level("INFO", logger="cumath.linalg")
    with L.Matmul(a, b, c, alpha=[p["alpha"] for p in probs], beta=None if c is None else [p["beta"] for p in probs],
                  qualifiers=[p["q"] for p in probs], options={"inplace": c_mode == "inplace"}, stream=stream) as mm:
        mm.plan()
        for step in range(3):
            if stream is not None:
                _device_synchronize(package)
            out = mm.execute()
            if stream is not None:
                stream.synchronize()
            assert all(type(r).__module__.startswith(package) for r in out)
            check_explicit(out, probs, dtype, c_mode == "inplace", c)
            if step == 0:
                for p in probs:
                    p["a"] = random_array(p["a"].shape, dtype)
                    p["alpha"] = p["alpha"] * 2
                mm.reset_operands(a=[on_gpu(p["a"], package, p["layouts"][0]) for p in probs],
                                  alpha=[p["alpha"] for p in probs])
    problems = sum(int(np.prod(p["a"].shape[:-2])) for p in probs)
    if problems >= 2:
        routine = "GroupedBatched_64" if dtype in ("float32", "float64") else "gemmBatched_64"
        assert routine in caplog.text


@packages
def test_explicit_batch_of_structured_and_mixed_dtypes(package):
    specs = [("sy", "float32"), ("ge", "float32"), ("tr", "float64"), ("ge", "float64"), ("dg", "complex64"),
             ("ge", "complex64"), ("ge", "float32"), ("he", "complex128"), ("ge", "complex128"), ("ge", "float64")]
    a0, b0, c0, quals = [], [], [], []
    for i, (kind, dt) in enumerate(specs):
        n = 5 + 2 * (i % 3)
        a0.append(random_array((n,) if kind == "dg" else (n, n) if kind != "ge" else (7, n), dt))
        b0.append(random_array((n, 3), dt))
        quals.append(qualifiers(qualifier(kind, uplo="U"), None))
        c0.append(random_array((n if kind != "ge" else 7, 3), dt))
    c = [on_gpu(z, package, "F") for z in c0]
    out = L.matmul([on_gpu(x, package) for x in a0], [on_gpu(y, package, "F") for y in b0], c, alpha=1.25,
                   beta=-0.5, qualifiers=quals, options={"inplace": True})
    for x, y, z, q, r, cc in zip(a0, b0, c0, quals, out, c):
        assert r is cc
        assert_matmul_close(r, matmul_ref(x, y, z, 1.25, -0.5, q), x.dtype.name, 7)


@packages
def test_explicit_batch_in_place_overlaps_run_in_order(package):
    a0 = [random_array((4, 3), "float64") for _ in range(3)]
    b0 = [random_array((3, 5), "float64") for _ in range(3)]
    c0 = random_array((4, 5), "float64")
    expected = c0.copy()
    for x, y, al, be in zip(a0, b0, (1.0, 2.0, -1.0), (0.5, 1.0, 2.0)):
        expected = al * (x @ y) + be * expected
    c = on_gpu(c0, package)
    L.matmul([on_gpu(x, package) for x in a0], [on_gpu(y, package) for y in b0], [c, c, c], alpha=[1.0, 2.0, -1.0],
             beta=[0.5, 1.0, 2.0], options={"inplace": True})
    np.testing.assert_allclose(to_numpy(c), expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("c_mode", ["none", "inplace"])
def test_explicit_batch_of_numpy_operands_on_the_gpu(dtype, c_mode, cuda_device):
    probs = explicit_problems(17, dtype, c_mode)
    a = [with_layout(p["a"], p["layouts"][0]) for p in probs]
    b = [with_layout(p["b"], p["layouts"][1]) for p in probs]
    c = None if c_mode == "none" else [with_layout(p["c"], p["layouts"][2]) for p in probs]
    if c is None:
        for p in probs:
            p["beta"] = 0.0
    out = L.matmul(a, b, c, alpha=[p["alpha"] for p in probs], beta=None if c is None else [p["beta"] for p in probs],
                   qualifiers=[p["q"] for p in probs], options={"inplace": c_mode == "inplace"}, execution="cuda")
    assert all(isinstance(r, np.ndarray) for r in out)
    check_explicit(out, probs, dtype, c_mode == "inplace", c)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind,side,conj", CASES[::2])
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
def test_numpy_operands_on_the_gpu(dtype, kind, side, conj, c_mode, cuda_device):
    alpha, beta = _scalars(dtype)
    a0, b0, q = _problem(kind, side, conj, dtype)
    c0 = random_array(_result_shape(a0, b0, q), dtype) if c_mode != "none" else None
    c = None if c0 is None else with_layout(c0, "F")
    r = L.matmul(with_layout(a0, "step"), b0, c, alpha=alpha, beta=beta if c is not None else None,
                 qualifiers=q, options={"inplace": c_mode == "inplace"}, execution="cuda")
    assert isinstance(r, np.ndarray)
    assert_matmul_close(r, matmul_ref(a0, b0, c0, alpha, beta, q), dtype, 6)


@packages
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
def test_gpu_operands_on_the_cpu(package, c_mode):
    a0, b0, c0 = random_array((7, 5), "complex64"), random_array((5, 3), "complex64"), random_array((7, 3), "complex64")
    c = None if c_mode == "none" else on_gpu(c0, package, "F")
    r = L.matmul(on_gpu(a0, package, "step"), on_gpu(b0, package), c, alpha=1.0, beta=None if c is None else 2.0,
                 options={"inplace": c_mode == "inplace"}, execution="cpu")
    assert type(r).__module__.startswith(package)
    assert_matmul_close(r, matmul_ref(a0, b0, None if c is None else c0, 1.0, 2.0), "complex64", 5)


@packages
def test_stateful_reset_and_streams(package):
    a0, b0, c0 = random_array((64, 32), "float32"), random_array((32, 48), "float32"), random_array((64, 48), "float32")
    if package == "cupy":
        import cupy

        stream = cupy.cuda.Stream(non_blocking=True)
        sync = stream.synchronize
    else:
        import torch

        stream = torch.cuda.Stream()
        sync = stream.synchronize
    a, b, c = on_gpu(a0, package), on_gpu(b0, package), on_gpu(c0, package)
    with L.Matmul(a, b, c, alpha=1.0, beta=1.0, stream=stream, options={"blocking": "auto"}) as mm:
        mm.plan()
        r = mm.execute()
        sync()
        assert_matmul_close(r, matmul_ref(a0, b0, c0, 1.0, 1.0), "float32", 32)
        for _ in range(3):
            a1 = random_array(a0.shape, "float32")
            mm.reset_operands(a=on_gpu(a1, package), alpha=-2.0)
            r = mm.execute(stream=stream)
            sync()
            assert_matmul_close(r, matmul_ref(a1, b0, c0, -2.0, 1.0), "float32", 32)
        d = mm.execute()
        mm.reset_operands_unchecked(c=d)
        r2 = mm.execute()
        sync()
        assert_matmul_close(r2, matmul_ref(a1, b0, to_numpy(d), -2.0, 1.0), "float32", 32)
        with pytest.raises(ValueError, match="package"):
            mm.reset_operands(a=a0)


@packages
def test_large_tall_skinny_in_place(package):
    m, n, k = 200_000, 40, 10
    a0, b0, c0 = random_array((m, k), "float32"), random_array((k, n), "float32"), random_array((m, n), "float32")
    c = on_gpu(c0, package)
    r = L.matmul(on_gpu(a0, package), on_gpu(b0, package), c, alpha=1.5, beta=0.5, options={"inplace": True})
    assert r is c
    assert_matmul_close(r, matmul_ref(a0, b0, c0, 1.5, 0.5), "float32", k)


def test_cublas_binding_basics(cuda_device):
    from cumath._bindings import cublas

    h = cublas.cublasCreate_v2()
    try:
        assert cublas.cublasGetVersion_v2(h) >= 120000
        assert cublas.cublasGetPointerMode_v2(h) == 0
        cublas.cublasSetStream_v2(h, 0)
        assert cublas.cublasGetStream_v2(h) == 0
    finally:
        cublas.cublasDestroy_v2(h)
    assert cublas.cublasGetStatusName(7) == "CUBLAS_STATUS_INVALID_VALUE"
    assert cublas.cublasGetProperty(0) >= 12
    from cumath.errors import CUBLASError

    with pytest.raises(CUBLASError, match="CUBLAS_STATUS_"):
        cublas.cublasSgemm_v2_64(0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1)
