"""The GPU half of the fault suite: CuPy and PyTorch operands, streams (runs on a machine with a GPU)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rel(a, ref):
    return float(np.abs(np.asarray(a) - ref).max() / max(np.abs(ref).max(), 1e-300))


@pytest.fixture
def cp(cufft_device):
    return pytest.importorskip("cupy")


def test_cupy_inplace_self_overlapping_is_refused(cp):
    z = cp.zeros(64, cp.complex128)
    v = cp.lib.stride_tricks.as_strided(z, shape=(4, 8), strides=(0, 16))
    import cumath

    with pytest.raises(ValueError, match="share memory"):
        cumath.fft.fft(v, axes=[-1], options={"inplace": True})


@pytest.mark.parametrize("axes", [[1], [0, 2], [-1]])
def test_cupy_inplace_negative_strides(cp, axes):
    import cumath

    h = np.random.default_rng(0).standard_normal((4, 3, 6)) + 0j
    z = cp.asarray(h)[::-1, ::-1]
    ref = np.fft.fftn(h[::-1, ::-1], axes=axes)
    r = cumath.fft.fft(z, axes=axes, options={"inplace": True})
    assert r is z and rel(cp.asnumpy(z), ref) < 1e-12


def test_cupy_results_are_new_memory_and_views_stay(cp):
    import cumath

    x = cp.asarray(np.random.default_rng(1).standard_normal((6, 5)) + 0j)
    y = cumath.fft.fft(x, axes=[0])
    v = y[0]
    snap = cp.asnumpy(v)
    del y
    for k in range(4):
        cumath.fft.fft(x * (k + 2), axes=[0])
    np.testing.assert_array_equal(cp.asnumpy(v), snap)


def test_cupy_on_a_side_stream(cp):
    import cumath

    h = np.random.default_rng(2).standard_normal((8, 33)) + 0j
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.asarray(h)
    r = cumath.fft.fft(x, axes=[-1], stream=s)
    s.synchronize()
    assert rel(cp.asnumpy(r), np.fft.fft(h, axis=-1)) < 1e-12


def test_torch_results_and_views(cufft_device):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA")
    import cumath

    x = torch.randn(6, 5, dtype=torch.complex128, device="cuda")
    y = cumath.fft.fft(x, axes=[0])
    v = y.real
    snap = v.cpu().numpy().copy()
    del y
    for k in range(4):
        cumath.fft.fft(x * (k + 2), axes=[0])
    np.testing.assert_array_equal(v.cpu().numpy(), snap)


def test_advanced_matmul_resets_keep_memory_safe(cp):
    import cumath.linalg.advanced as la

    a = cp.random.rand(8, 4)
    b = cp.random.rand(4, 3)
    with la.Matmul(a, b) as mm:
        mm.plan()
        with pytest.raises(ValueError, match="the plan is for"):
            mm.reset_operands_unchecked(a=cp.random.rand(2, 4))
        mm.release_operands()
        with pytest.raises(ValueError, match="needs all operands"):
            mm.reset_operands_unchecked(a=a)
        mm.reset_operands_unchecked(a=a, b=b)
        assert rel(cp.asnumpy(mm.execute()), cp.asnumpy(a) @ cp.asnumpy(b)) < 1e-12


def test_gpu_faults_in_a_subprocess(cufft_device):
    code = textwrap.dedent("""
        import cupy as cp, numpy as np, cumath
        z = cp.zeros(64, cp.complex128)
        try:
            cumath.fft.fft(cp.lib.stride_tricks.as_strided(z, shape=(57, 8), strides=(16, 16)), axes=[-1],
                           options={"inplace": True})
            raise SystemExit("accepted")
        except ValueError:
            pass
        f = cumath.fft.FFT(cp.ones((64, 64), cp.complex64)); f.plan()
        try:
            f.reset_operand_unchecked(cp.ones(4, cp.complex64)); raise SystemExit("accepted")
        except ValueError:
            pass
        print("clean")
    """)
    pytest.importorskip("cupy")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0 and r.stdout.strip().endswith("clean"), r.stderr[-3000:]


def test_cupy_matmul_inplace_overlap_is_refused(cp):
    import cumath
    import cumath.linalg.advanced as la

    buf = cp.random.rand(8, 4)
    a, c = buf[:4], buf[2:6]
    b = cp.random.rand(4, 4)
    with pytest.raises(ValueError, match="overlaps"):
        cumath.linalg.matmul(a, b, c, beta=1.0, options={"inplace": True})
    with pytest.raises(ValueError, match="overlaps"):
        la.matmul(a, b, c, beta=1.0, options={"inplace": True})
    c2 = cp.random.rand(4, 4)
    ref = cp.asnumpy(a) @ cp.asnumpy(b) + cp.asnumpy(c2)
    assert rel(cp.asnumpy(cumath.linalg.matmul(a, b, c2, beta=1.0, options={"inplace": True})), ref) < 1e-12
