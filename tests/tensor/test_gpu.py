"""Contractions on the GPU (cuTENSOR) against numpy.einsum in float64; they run on a machine with a GPU and the
cutensor-cu13 wheel."""

import numpy as np
import pytest

from cumath import tensor
from cumath.tensor import Operator

pytestmark = pytest.mark.gpu

TOL = {"float16": 2e-2, "bfloat16": 5e-2, "float32": 1e-4, "float64": 1e-12, "complex64": 1e-4,
       "complex128": 1e-12}


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    from cumath._bindings._loader import find_library

    if find_library("cutensor") is None:
        pytest.skip("cuTENSOR (cutensor-cu13) is not installed")
    return torch


def _t(torch, x, dtype):
    names = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
             "float64": torch.float64, "complex64": torch.complex64, "complex128": torch.complex128}
    return torch.as_tensor(x).to(device="cuda", dtype=names[dtype])


def _rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x


def _relerr(got, expect):
    got = got.cpu().to(dtype=got.dtype if got.is_complex() else got.new_empty(0).double().dtype).numpy()
    return np.linalg.norm((got - expect).ravel()) / max(np.linalg.norm(expect.ravel()), 1e-300)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("expr, shapes", [
    ("ij,jk->ik", [(17, 31), (31, 13)]),
    ("abcd,cdef->abef", [(4, 5, 7, 3), (7, 3, 2, 6)]),
    ("bij,bjk->bik", [(11, 5, 7), (11, 7, 3)]),
    ("...ij,...jk", [(2, 3, 4, 5), (3, 5, 2)]),
    ("pijkl,pjiab->lakbp", [(3, 2, 5, 2, 3), (3, 5, 2, 3, 2)]),
])
def test_binary_gpu(torch, dtype, expr, shapes):
    rng = np.random.default_rng(1)
    a, b = (_rand(rng, s, dtype) for s in shapes)
    ta, tb = _t(torch, a, dtype), _t(torch, b, dtype)
    r = tensor.binary_contraction(expr, ta, tb)
    assert isinstance(r, torch.Tensor) and r.is_cuda and r.dtype == ta.dtype
    expect = np.einsum(expr, ta.cpu().to(torch.complex128 if ta.is_complex() else torch.float64).numpy(),
                       tb.cpu().to(torch.complex128 if tb.is_complex() else torch.float64).numpy())
    assert _relerr(r, expect) < TOL[dtype]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_ternary_gpu(torch, dtype):
    rng = np.random.default_rng(2)
    a, b, c, d = (_rand(rng, s, dtype) for s in [(13, 40), (40, 7), (7, 29), (13, 29)])
    ta, tb, tc, td = (_t(torch, x, dtype) for x in (a, b, c, d))
    r = tensor.ternary_contraction("ij,jk,kl->il", ta, tb, tc, d=td, alpha=1.5, beta=0.5)
    assert _relerr(r, 1.5 * a @ b @ c + 0.5 * d) < TOL[dtype]


def test_alpha_beta_out_strided(torch):
    rng = np.random.default_rng(3)
    a = torch.randn(9, 12, device="cuda", dtype=torch.float64)[:, ::2]
    b = torch.randn(6, 5, device="cuda", dtype=torch.float64).flip(0)
    c = torch.randn(5, 9, device="cuda", dtype=torch.float64).T
    out = torch.empty(5, 9, device="cuda", dtype=torch.float64).T
    r = tensor.binary_contraction("ij,jk->ik", a, b, c=c, alpha=2.0, beta=-1.0, out=out)
    assert r is out
    expect = 2 * a.cpu().numpy() @ b.cpu().numpy() - c.cpu().numpy()
    assert _relerr(out, expect) < 1e-12
    del rng


def test_operators_gpu(torch):
    a = torch.randn(6, 8, device="cuda", dtype=torch.float32)
    b = torch.randn(8, 4, device="cuda", dtype=torch.float32)
    for op, fn in ((Operator.OP_RELU, torch.relu), (Operator.OP_TANH, torch.tanh), (Operator.OP_NEG, torch.neg)):
        r = tensor.binary_contraction("ij,jk->ik", a, b, qualifiers=[op, Operator.OP_IDENTITY])
        expect = (fn(a).double() @ b.double()).cpu().numpy()
        assert _relerr(r, expect) < 1e-4
    z = torch.randn(6, 8, device="cuda", dtype=torch.complex64)
    w = torch.randn(8, 4, device="cuda", dtype=torch.complex64)
    r = tensor.binary_contraction("ij,jk->ik", z, w, qualifiers=[Operator.OP_CONJ, Operator.OP_IDENTITY])
    assert _relerr(r, (z.conj().cdouble() @ w.cdouble()).cpu().numpy()) < 1e-4


def test_operators_ternary_strided_gpu(torch):
    a = torch.randn(9, 22, device="cuda", dtype=torch.float64)[:, ::2]
    b = torch.randn(7, 11, device="cuda", dtype=torch.float64).T
    c = torch.randn(7, 5, device="cuda", dtype=torch.float64)
    saved = [x.clone() for x in (a, b, c)]
    q = [Operator.OP_RELU, Operator.OP_SIGMOID, Operator.OP_ABS]
    expect = (2 * torch.relu(a) @ torch.sigmoid(b) @ torch.abs(c)).cpu().numpy()
    with tensor.TernaryContraction("ij,jk,kl->il", a, b, c, qualifiers=q) as t:
        t.plan()
        for _ in range(2):  # the plan's operator buffers are reused
            r = t.execute(alpha=2.0)
            assert _relerr(r, expect) < 1e-12
    assert all(torch.equal(x, y) for x, y in zip((a, b, c), saved))  # op(x) went to the plan's buffers


def test_stateful_gpu_lifecycle(torch):
    a = torch.randn(64, 64, 64, 64, device="cuda")
    b = torch.randn(64, 64, 64, 64, device="cuda")
    with tensor.BinaryContraction("abcd,cdef->abef", a, b) as ctr:
        ctr.plan()
        r = ctr.execute()
        expect = torch.einsum("abcd,cdef->abef", a.double(), b.double())
        assert float(((r.double() - expect).norm() / expect.norm()).item()) < 1e-4
        ctr.plan_preference.algo = tensor.ContractionAlgo.GETT
        ctr.plan()
        r = ctr.execute(release_workspace=True)
        assert float(((r.double() - expect).norm() / expect.norm()).item()) < 1e-4
        ctr.autotune(iterations=2)
        r = ctr.execute()
        assert float(((r.double() - expect).norm() / expect.norm()).item()) < 1e-4
        ctr.plan_preference.algo = tensor.ContractionAlgo.DEFAULT
        ctr.plan_preference.jit = tensor.ContractionJitMode.DEFAULT
        ctr.plan()
        r = ctr.execute()
        assert float(((r.double() - expect).norm() / expect.norm()).item()) < 1e-4


def test_cupy_operands(torch):
    cp = pytest.importorskip("cupy")
    a = cp.random.standard_normal((7, 9))
    b = cp.random.standard_normal((9, 5))
    r = tensor.binary_contraction("ij,jk->ik", a, b)
    assert isinstance(r, cp.ndarray)
    assert float(cp.abs(r - a @ b).max()) < 1e-12


def test_unaligned_stateless(torch):
    raw = torch.randn(1 + 8 * 8, device="cuda")
    a = raw[1:].view(8, 8)
    b = torch.randn(8, 8, device="cuda")
    aligned = torch.randn(8, 8, device="cuda")
    tensor.binary_contraction("ij,jk->ik", aligned, b)  # plan for 256-byte aligned operands
    r = tensor.binary_contraction("ij,jk->ik", a, b)    # another plan for the 4-byte aligned one
    assert float((r - a @ b).abs().max().item()) < 1e-4


def test_plan_cache_file_written(torch, tmp_path):
    import subprocess
    import sys

    code = ("import torch, cumath; a = torch.randn(32, 32, device='cuda'); "
            "cumath.tensor.binary_contraction('ij,jk->ik', a, a); print('ok')")
    env = {**__import__('os').environ, "CUMATH_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    files = list((tmp_path / "cutensor").iterdir())
    assert any(f.name.startswith("plans-") for f in files), (files, out.stderr)


def test_numpy_operands_on_the_gpu(torch):
    rng = np.random.default_rng(9)
    a, b, c = rng.standard_normal((9, 7))[:, ::2], rng.standard_normal((4, 5)), rng.standard_normal((9, 5))
    r = tensor.binary_contraction("ij,jk->ik", a, b, c=c, beta=2.0, execution="cuda")
    assert isinstance(r, np.ndarray) and np.allclose(r, a @ b + 2 * c)
    x = rng.standard_normal((5, 3))
    r = tensor.ternary_contraction("ij,jk,kl->il", a, b, x, execution="cuda")
    assert np.allclose(r, a @ b @ x)


def test_autotune_tries_jit_on_large_float32(torch, caplog):
    """autotune() on a large float32 contraction times a JIT kernel against the precompiled one and keeps the
    faster (either is correct); an explicit jit is kept."""
    a = torch.randn(48, 48, 48, 48, device="cuda")
    b = torch.randn(48, 48, 48, 48, device="cuda")
    expect = torch.einsum("abcd,cdef->abef", a.double(), b.double())
    with tensor.BinaryContraction("abcd,cdef->abef", a, b) as ctr:
        ctr.plan()
        with caplog.at_level("INFO", logger="cumath.tensor"):
            ctr.autotune(iterations=2)
        assert any("autotune:" in r.getMessage() for r in caplog.records)
        assert ctr.plan_preference.jit in (tensor.ContractionJitMode.NONE, tensor.ContractionJitMode.DEFAULT)
        r = ctr.execute()
        assert float(((r.double() - expect).norm() / expect.norm()).item()) < 1e-4
    with tensor.BinaryContraction("abcd,cdef->abef", a, b) as ctr:
        ctr.plan_preference.jit = tensor.ContractionJitMode.NONE
        ctr.plan()
        ctr.autotune(iterations=1)
        assert ctr.plan_preference.jit == tensor.ContractionJitMode.NONE


def test_stateless_batched_call_one_plan(torch):
    """The batched stateless call: one plan, then cached calls on the one-call path, alpha changing per call."""
    from cumath import config

    a = torch.randn(256, 32, 32, device="cuda")
    b = torch.randn(256, 32, 32, device="cuda")
    config.plan_cache.clear()
    config.plan_cache.reset_stats()
    for alpha in (1.0, 2.0, 1.0, -0.5):
        r = tensor.binary_contraction("bij,bjk->bik", a, b, alpha=alpha)
        assert float(((r - alpha * torch.bmm(a, b)).norm() / torch.bmm(a, b).norm()).item()) < 1e-4
    stats = config.plan_cache.stats()
    assert stats["misses"] == 1 and stats["hits"] == 3
