"""The small-GEMM kernel on the GPU through the public API, with PyTorch and CuPy operands, against NumPy float64:
every dtype and result type, row- and column-major and padded operands, odd and prime extents, C with alpha and
beta, batches, misaligned and negative-stride (CuPy) operands; which engine a plan uses, CUMATH_SMALL_MATMUL=0,
compute types the kernel does not take, ``execute(algorithm=...)`` on cuBLASLt, the stateless hit path, and the
ctypes fallback (CUMATH_NATIVE=0, in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath.config import plan_cache

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - the gpu marker skips first
    pytest.skip("PyTorch has no CUDA", allow_module_level=True)

RNG = np.random.default_rng(17)
TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}
TOL = {"float32": 2e-5, "float64": 1e-13, "float16": 3e-3, "bfloat16": 2e-2}


def host64(t):
    if isinstance(t, torch.Tensor):
        return t.detach().to(torch.float64).cpu().numpy()
    return np.asarray(t.get() if hasattr(t, "get") else t, np.float64)


def rand(shape, dtype, layout="row", package="torch"):
    x = RNG.standard_normal(shape)
    if package == "cupy":
        cp = pytest.importorskip("cupy")
        if dtype == "bfloat16":
            pytest.skip("CuPy has no bfloat16")
        a = cp.asarray(x.astype(dtype))
        if layout == "col":
            return cp.asfortranarray(a) if a.ndim == 2 else cp.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)
        if layout == "sub":
            big = cp.zeros(shape[:-1] + (shape[-1] + 3,), a.dtype)
            big[..., : shape[-1]] = a
            return big[..., : shape[-1]]
        if layout == "offset":  # 4 bytes past an allocation's alignment
            flat = cp.zeros(a.size + 1, a.dtype)
            flat[1:] = a.ravel()
            return flat[1:].reshape(shape)
        if layout == "neg":
            return a[..., ::-1, :].copy()[..., ::-1, :]
        return a
    t = torch.from_numpy(x).to(TORCH[dtype]).cuda()
    if layout == "col":
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "sub":
        big = torch.zeros(t.shape[:-1] + (t.shape[-1] + 3,), dtype=t.dtype, device="cuda")
        big[..., : t.shape[-1]] = t
        return big[..., : t.shape[-1]]
    return t


def check(d, ref, scale, dtype):
    err = np.max(np.abs(host64(d) - ref)) / max(np.max(scale), 1e-300)
    assert err <= TOL[dtype], f"relative error {err:.3g} ({dtype})"


def reference(a, b, c=None, alpha=1.0, beta=0.0):
    a64, b64 = host64(a), host64(b)
    ref = alpha * np.matmul(a64, b64) + (beta * host64(c) if c is not None else 0)
    scale = abs(alpha) * np.matmul(np.abs(a64), np.abs(b64)) + (abs(beta) * np.abs(host64(c)) if c is not None else 0)
    return ref, scale


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.delenv("CUMATH_SMALL_MATMUL", raising=False)
    plan_cache.clear()
    yield
    plan_cache.clear()


@pytest.mark.parametrize("package", ["torch", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("layouts", [("row", "row"), ("col", "col"), ("row", "col"), ("sub", "col")])
def test_dtypes_and_layouts(cuda_device, package, dtype, layouts):
    a, b = rand((37, 29), dtype, layouts[0], package), rand((29, 41), dtype, layouts[1], package)
    with la.Matmul(a, b, alpha=0.75) as mm:
        mm.plan()
        assert mm._v.engine == "small"
        d = mm.execute()
        assert type(d) is type(a) and d.dtype == a.dtype
        check(d, *reference(a, b, alpha=0.75), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precisions_with_a_float32_result(cuda_device, dtype):
    a, b, c = rand((17, 33), dtype), rand((33, 9), dtype), rand((17, 9), "float32")
    with la.Matmul(a, b, c, beta=1.0) as mm:
        mm.plan()
        assert mm._v.engine == "small"
        d = mm.execute()
        assert d.dtype == torch.float32
        check(d, *reference(a, b, c, beta=1.0), dtype="float32")


@pytest.mark.parametrize("mnk", [(1, 1, 1), (2, 3, 5), (7, 11, 13), (31, 37, 41), (97, 101, 103), (127, 1, 128),
                                 (64, 64, 64), (128, 128, 128), (1, 128, 127)])
@pytest.mark.parametrize("package", ["torch", "cupy"])
def test_odd_and_prime_extents(cuda_device, mnk, package):
    m, n, k = mnk
    a, b = rand((m, k), "float32", package=package), rand((k, n), "float32", "col", package)
    check(la.matmul(a, b), *reference(a, b), dtype="float32")


@pytest.mark.parametrize("c_layout", ["row", "col", "sub"])
@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (-0.5, 2.0), (2.0, 0.0)])
def test_c_alpha_beta(cuda_device, c_layout, alpha, beta):
    a, b, c = rand((19, 23), "float64"), rand((23, 29), "float64"), rand((19, 29), "float64", c_layout)
    c_before = host64(c)
    with la.Matmul(a, b, c, alpha=alpha, beta=beta) as mm:
        mm.plan()
        assert mm._v.engine == "small"
        check(mm.execute(), *reference(a, b, c, alpha, beta), dtype="float64")
        mm.reset_operands(alpha=-alpha, beta=beta / 2)
        check(mm.execute(), *reference(a, b, c, -alpha, beta / 2), dtype="float64")
    assert np.array_equal(host64(c), c_before)  # c is read, never written


@pytest.mark.parametrize("shapes", [((4, 9, 14), (4, 14, 6)), ((3, 12, 10), (10, 6)), ((10, 7), (5, 7, 3))])
def test_batches(cuda_device, shapes):
    a, b = rand(shapes[0], "float32"), rand(shapes[1], "float32", "col")
    with la.Matmul(a, b) as mm:
        mm.plan()
        assert mm._v.engine == "small"
        check(mm.execute(), *reference(a, b), dtype="float32")


@pytest.mark.parametrize("layout", ["offset", "neg"])
def test_misaligned_and_negative_stride_cupy(cuda_device, layout):
    a, b = rand((13, 17), "float32", layout, "cupy"), rand((17, 11), "float32", "row", "cupy")
    check(la.matmul(a, b), *reference(a, b), dtype="float32")


def test_the_kernel_equals_cublaslt_within_rounding(cuda_device, monkeypatch):
    a, b = rand((64, 64), "float32"), rand((64, 64), "float32")
    d_small = la.matmul(a, b)
    monkeypatch.setenv("CUMATH_SMALL_MATMUL", "0")
    plan_cache.clear()
    with la.Matmul(a, b) as mm:
        mm.plan()
        assert mm._v.engine == "cublaslt"
        d_lt = mm.execute()
    ref, scale = reference(a, b)
    check(d_small, ref, scale, "float32")
    check(d_lt, ref, scale, "float32")


@pytest.mark.parametrize("how", ["env", "tf32", "large", "relu", "algorithms"])
def test_cublaslt_runs_what_the_kernel_does_not_take(cuda_device, monkeypatch, how):
    a, b = rand((64, 64), "float32"), rand((64, 64), "float32")
    opts, plan = {}, {}
    if how == "env":
        monkeypatch.setenv("CUMATH_SMALL_MATMUL", "0")
    elif how == "tf32":
        opts = {"compute_type": la.MatmulComputeType.COMPUTE_32F_FAST_TF32}
    elif how == "large":
        a = rand((256, 64), "float32")
    elif how == "relu":
        plan = {"epilog": la.MatmulEpilog.RELU}
    else:
        with la.Matmul(a, b) as first:
            plan = {"algorithms": first.plan()[:1]}
    with la.Matmul(a, b, options=opts) as mm:
        mm.plan(**plan)
        assert mm._v.engine == "cublaslt" and mm._v.kernel is None
        ref, scale = reference(a, b)
        if how == "relu":
            ref = np.maximum(ref, 0)
        check(mm.execute(), ref, scale, "float32" if how != "tf32" else "bfloat16")


def test_execute_with_an_algorithm_runs_cublaslt(cuda_device):
    a, b = rand((33, 65), "float32"), rand((65, 17), "float32")
    with la.Matmul(a, b) as mm:
        algs = mm.plan()
        assert mm._v.engine == "small"
        ref, scale = reference(a, b)
        check(mm.execute(algorithm=algs[0]), ref, scale, "float32")
        timed = mm.autotune(iterations=2)
        assert timed and mm._v.engine == "small"
        check(mm.execute(), ref, scale, "float32")


@pytest.mark.parametrize("package", ["torch", "cupy"])
def test_the_stateless_hit_path(cuda_device, package):
    a, b = rand((64, 64), "float32", package=package), rand((64, 64), "float32", package=package)
    outs = [la.matmul(a, b) for _ in range(5)]
    ref, scale = reference(a, b)
    for d in outs:
        check(d, ref, scale, "float32")
    assert plan_cache._local.cache.fast.hits >= 3
    assert outs[3].data_ptr() != outs[4].data_ptr() if package == "torch" else outs[3].data.ptr != outs[4].data.ptr


def test_streams(cuda_device):
    a, b = rand((48, 40), "float32"), rand((40, 24), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        d = la.matmul(a, b)
    s.synchronize()
    check(d, *reference(a, b), dtype="float32")
    with la.Matmul(a, b, stream=s) as mm:
        mm.plan()
        d = mm.execute()
        s.synchronize()
        check(d, *reference(a, b), dtype="float32")


def test_the_ctypes_fallback_in_a_subprocess(cuda_device):
    code = """
import numpy as np, torch
import cumath.linalg.advanced as la
from cumath._core import _fast
assert not _fast.NATIVE
a = torch.randn(37, 53, device='cuda'); b = torch.randn(53, 19, device='cuda')
with la.Matmul(a, b) as mm:
    mm.plan()
    assert mm._v.engine == 'small' and mm._v.hot
    for _ in range(3):
        d = mm.execute()
ref = a.double() @ b.double()
err = (d.double() - ref).abs().max().item() / ref.abs().max().item()
assert err < 1e-5, err
d2 = la.matmul(a, b); d3 = la.matmul(a, b)
assert (d3.double() - ref).abs().max().item() / ref.abs().max().item() < 1e-5
print('ok')
"""
    env = {**os.environ, "CUMATH_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]
