"""cumath.fft with cuFFT and with GPU operands: CuPy and PyTorch CUDA arrays, host operands executed on the
GPU, GPU operands executed on the CPU, streams, blocking, workspaces and the plan cache. Skipped without a GPU.
CuPy and PyTorch are imported inside the tests."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cumath
import cumath.fft as F
from cumath.config import plan_cache
from helpers.matrix import (LAYOUTS, dtype_of, hermitian_array, is_dense, memory_order, package_of,
                            random_array, strides_of, to_numpy, with_layout)
from helpers.reference import assert_close, fft_ref, ifft_ref, irfft_ref, rfft_ref

pytestmark = pytest.mark.gpu

PRECISIONS = {"single": ("float32", "complex64"), "double": ("float64", "complex128")}
CASES = [((n,), None) for n in (256, 17, 1009, 210, 2310)] + [
    ((16, 32), None), ((17, 60), None), ((9, 127), (1,)), ((60, 7), (0,)), ((4, 6, 8), None),
    ((5, 7, 9), (0, 2)), ((4, 6, 10), (2, 0, 1)), ((6, 8, 10), (1,)), ((3, 4, 5, 6), (1, 3)),
]
CASE_IDS = [f"{'x'.join(map(str, s))}-axes{'' if a is None else ''.join(map(str, a))}" for s, a in CASES]
cases = pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
precision = pytest.mark.parametrize("precision", list(PRECISIONS))
gpu_package = pytest.mark.parametrize("package", ["cupy", "torch"])


@pytest.fixture(autouse=True)
def _need_package(request):
    pkg = request.node.callspec.params.get("package") if hasattr(request.node, "callspec") else None
    if pkg in ("cupy", "torch"):
        mod = pytest.importorskip(pkg)
        if pkg == "torch" and not mod.cuda.is_available():
            pytest.skip("PyTorch has no CUDA here")


def dev(values, package, layout="C"):
    """``values`` on the GPU as a ``package`` array in memory ``layout``."""
    return with_layout(values, layout, package, device="cuda")


def _n(shape, axes):
    return math.prod(shape[a] for a in (range(len(shape)) if axes is None else axes))


def _on_gpu(y, package):
    assert package_of(y) == package
    if package == "cupy":
        import cupy

        assert isinstance(y, cupy.ndarray) and y.device.id == 0
    else:
        assert y.is_cuda and y.device.index == 0


def _synchronize():
    """Wait for all work on the GPU (results made on a stream other than the reader's)."""
    try:
        import cupy

        cupy.cuda.runtime.deviceSynchronize()
    except ImportError:
        import torch

        torch.cuda.synchronize()


@pytest.fixture
def fresh_cache():
    limits = (plan_cache.max_plans, plan_cache.max_bytes)
    plan_cache.clear()
    plan_cache.reset_stats()
    yield plan_cache
    plan_cache.clear()
    plan_cache.max_plans, plan_cache.max_bytes = limits


# ---------------------------------------------------------------------------------------------- matrix

@gpu_package
@precision
@cases
def test_c2c(package, precision, shape, axes):
    dtype = PRECISIONS[precision][1]
    values = random_array(shape, dtype)
    x = dev(values, package)
    y = F.fft(x, axes)
    _on_gpu(y, package)
    assert dtype_of(y) == dtype
    assert_close(y, fft_ref(values, axes), dtype, _n(shape, axes))
    assert_close(F.ifft(x, axes), ifft_ref(values, axes), dtype, _n(shape, axes))
    np.testing.assert_array_equal(to_numpy(x), values)


@gpu_package
@precision
@cases
def test_r2c(package, precision, shape, axes):
    real, cplx = PRECISIONS[precision]
    values = random_array(shape, real)
    y = F.rfft(dev(values, package), axes)
    _on_gpu(y, package)
    assert dtype_of(y) == cplx
    assert_close(y, rfft_ref(values, axes), cplx, _n(shape, axes))


@gpu_package
@precision
@pytest.mark.parametrize("parity", ["even", "odd"])
@cases
def test_c2r(package, precision, parity, shape, axes):
    real, cplx = PRECISIONS[precision]
    values = hermitian_array(shape, cplx, axes, parity)
    x = dev(values, package)
    y = F.irfft(x, axes, options={"last_axis_parity": parity})
    _on_gpu(y, package)
    ref = irfft_ref(values, axes, parity)
    assert dtype_of(y) == real
    assert_close(y, ref, real, ref.size)
    np.testing.assert_array_equal(to_numpy(x), values)  # C2R leaves the operand alone


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("package", ["torch"])
@pytest.mark.parametrize("shape,axes", [((256,), None), ((8, 64), (1,)), ((16, 32), None), ((4, 8, 16), None)])
def test_half_precision(package, shape, axes):
    """float16 / complex32 (power-of-2 sizes only) through PyTorch."""
    import torch

    values = random_array(shape, "complex64") * 0.1
    x = torch.from_numpy(values).cuda().to(torch.complex32)
    exact = to_numpy(x)  # the half-precision values themselves
    y = F.fft(x, axes)
    assert y.dtype == torch.complex32 and y.is_cuda
    assert_close(y, fft_ref(exact, axes), "complex32", _n(shape, axes))
    r = torch.from_numpy(values.real.copy()).cuda().half()
    z = F.rfft(r, axes)
    assert z.dtype == torch.complex32
    assert_close(z, rfft_ref(to_numpy(r), axes), "complex32", _n(shape, axes))
    last = (len(shape) - 1) if axes is None else axes[-1]
    half_shape = tuple(n // 2 + 1 if a == last else n for a, n in enumerate(shape))
    h = torch.from_numpy(hermitian_array(half_shape, "complex64", axes) * 0.01).cuda().to(torch.complex32)
    w = F.irfft(h, axes)
    assert w.dtype == torch.float16 and tuple(w.shape) == shape
    assert_close(w, irfft_ref(to_numpy(h), axes), "float16", _n(shape, axes))


@pytest.mark.parametrize("package", ["torch"])
def test_half_precision_needs_powers_of_two(package):
    import torch

    x = torch.from_numpy(random_array((12,), "float32")).cuda().half()
    with pytest.raises(ValueError, match="power-of-2 sizes"):
        F.rfft(x)


# ---------------------------------------------------------------------------------------------- layouts

@gpu_package
@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("result_layout", ["natural", "optimized"])
@pytest.mark.parametrize("shape,axes", [((8, 12), None), ((6, 10, 4), (0, 2)), ((5, 6, 7), (1,))])
def test_layouts(package, kind, layout, result_layout, shape, axes):
    values = {"C2C": lambda: random_array(shape, "complex128"), "R2C": lambda: random_array(shape, "float64"),
              "C2R": lambda: hermitian_array(shape, "complex128", axes)}[kind]()
    fn, ref = {"C2C": (F.fft, fft_ref), "R2C": (F.rfft, rfft_ref), "C2R": (F.irfft, irfft_ref)}[kind]
    x = dev(values, package, layout)
    strides = strides_of(x)
    y = fn(x, axes, options={"result_layout": result_layout})
    _on_gpu(y, package)
    assert is_dense(y)
    assert_close(y, ref(values, axes), dtype_of(y))
    assert strides_of(x) == strides
    np.testing.assert_array_equal(to_numpy(x), values)
    if result_layout == "natural":
        assert memory_order(y) == memory_order(x)


@gpu_package
@precision
@pytest.mark.parametrize("layout", LAYOUTS)
def test_inplace(package, precision, layout):
    dtype = PRECISIONS[precision][1]
    values = random_array((6, 10, 8), dtype)
    x = dev(values, package, layout)
    y = F.fft(x, (0, 2), options={"inplace": True})
    assert y is x
    assert_close(x, fft_ref(values, (0, 2)), dtype, 48)
    F.ifft(x, (0, 2), options={"inplace": True})
    assert_close(x, values.astype("complex128") * 48, dtype, 48)


@gpu_package
@precision
def test_r2c_of_views_not_aligned_to_the_complex_type(package, precision):
    """Real views starting at an odd element (x[1:]) after a plan made on an aligned array of that layout."""
    real, cplx = PRECISIONS[precision]
    aligned = random_array((6, 33), real)
    assert_close(F.rfft(dev(aligned, package), (1,)), rfft_ref(aligned, (1,)), cplx, 33)
    base = random_array((6, 34), real)
    for view in (lambda b: b.reshape(-1)[1:199].reshape(6, 33), lambda b: b[:, 1:]):
        values = view(base)
        x = view(dev(base, package))
        assert_close(F.rfft(x, (1,)), rfft_ref(values, (1,)), cplx, 33)
    one = random_array((65,), real)
    x = dev(one, package)[1:]
    with F.FFT(dev(one[:64], package)) as f:
        f.plan()
        f.reset_operand(x)
        assert_close(f.execute(), rfft_ref(one[1:]), cplx, 64)


# ---------------------------------------------------------------------------------------------- spaces

@pytest.mark.parametrize("host", ["numpy", "torch"])
@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
@pytest.mark.parametrize("layout", ["C", "F", "step"])
def test_host_operand_on_the_gpu(host, kind, layout):
    if host == "torch":
        pytest.importorskip("torch")
    shape, axes = (6, 10, 12), (1, 2)
    values = {"C2C": lambda: random_array(shape, "complex64"), "R2C": lambda: random_array(shape, "float32"),
              "C2R": lambda: hermitian_array(shape, "complex64", axes)}[kind]()
    fn, ref = {"C2C": (F.fft, fft_ref), "R2C": (F.rfft, rfft_ref), "C2R": (F.irfft, irfft_ref)}[kind]
    x = with_layout(values, layout, host)
    for execution in ("cuda", cumath.ExecutionCUDA(device_id=0)):
        y = fn(x, axes, execution=execution)
        assert package_of(y) == host and (host == "numpy" or y.device.type == "cpu")
        assert_close(y, ref(values, axes), dtype_of(y), 120)
    np.testing.assert_array_equal(to_numpy(x), values)


@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
def test_torch_cpu_tensor_that_requires_grad_on_the_gpu(kind):
    torch = pytest.importorskip("torch")
    values = {"C2C": lambda: random_array((6, 10), "complex64"), "R2C": lambda: random_array((6, 10), "float32"),
              "C2R": lambda: hermitian_array((6, 10), "complex64")}[kind]()
    fn, ref = {"C2C": (F.fft, fft_ref), "R2C": (F.rfft, rfft_ref), "C2R": (F.irfft, irfft_ref)}[kind]
    x = torch.from_numpy(values).t().requires_grad_(True)  # transposed: staged through a host copy
    y = fn(x, execution="cuda")
    assert y.device.type == "cpu" and not y.requires_grad
    assert_close(y, ref(values.T), dtype_of(y))


@pytest.mark.parametrize("layout", ["C", "reversed", "step"])
def test_host_operand_on_the_gpu_inplace(layout):
    values = random_array((8, 16), "complex128")
    x = with_layout(values, layout)
    assert F.fft(x, options={"inplace": True}, execution="cuda") is x
    assert_close(x, fft_ref(values), "complex128")


@gpu_package
@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
@pytest.mark.parametrize("layout", ["C", "F", "reversed", "step"])
def test_gpu_operand_on_the_cpu(package, kind, layout):
    shape, axes = (6, 10, 12), (0, 2)
    values = {"C2C": lambda: random_array(shape, "complex128"), "R2C": lambda: random_array(shape, "float64"),
              "C2R": lambda: hermitian_array(shape, "complex128", axes)}[kind]()
    fn, ref = {"C2C": (F.fft, fft_ref), "R2C": (F.rfft, rfft_ref), "C2R": (F.irfft, irfft_ref)}[kind]
    x = dev(values, package, layout)
    y = fn(x, axes, execution="cpu")
    _on_gpu(y, package)
    _synchronize()
    assert_close(y, ref(values, axes), dtype_of(y))
    np.testing.assert_array_equal(to_numpy(x), values)


@gpu_package
@pytest.mark.parametrize("layout", ["C", "step"])
def test_gpu_operand_on_the_cpu_inplace(package, layout):
    values = random_array((8, 16), "complex64")
    x = dev(values, package, layout)
    assert F.fft(x, options={"inplace": True}, execution=cumath.ExecutionCPU(num_threads=2)) is x
    _synchronize()
    assert_close(x, fft_ref(values), "complex64")


# ---------------------------------------------------------------------------------------------- streams

def _streams(kind):
    if kind == "torch":
        import torch

        s = torch.cuda.Stream()
        return "torch", s, s.cuda_stream, s.synchronize
    import cupy

    s = cupy.cuda.Stream(non_blocking=True)
    return "cupy", (s if kind == "cupy-object" else s.ptr), s.ptr, s.synchronize


@pytest.mark.parametrize("kind", ["cupy-object", "cupy-int", "torch"])
def test_explicit_streams(kind, fresh_cache):
    pytest.importorskip(kind.partition("-")[0])
    package, stream, handle, sync = _streams(kind)
    results = []
    for _ in range(3):
        values = random_array((32, 64), "complex64")
        x = dev(values, package)
        _synchronize()  # x was written on the current stream
        y = F.fft(x, stream=stream)
        sync()
        assert_close(y, fft_ref(values), "complex64")
        results.append(y)
    stats = plan_cache.stats()
    assert stats["misses"] == 1 and stats["hits"] == 2
    keys = list(plan_cache._mine().entries)
    assert handle in keys[0]
    x = dev(random_array((32, 64), "complex64"), package)
    F.fft(x)  # the package's current stream: another plan
    _synchronize()
    assert plan_cache.stats()["misses"] == 2 and plan_cache.stats()["plans"] == 2


@pytest.mark.parametrize("kind", ["cupy-object", "torch"])
def test_stream_of_a_stateful_fft(kind):
    pytest.importorskip(kind.partition("-")[0])
    package, stream, _, sync = _streams(kind)
    values = random_array((16, 48), "complex128")
    x = dev(values, package)
    _synchronize()
    with F.FFT(x, options={"blocking": True}, stream=stream) as f:
        f.plan()
        assert_close(f.execute(), fft_ref(values), "complex128")
        v2 = random_array((16, 48), "complex128")
        x2 = dev(v2, package)
        _synchronize()
        f.reset_operand(x2, stream=stream)
        y = f.execute(direction="inverse", stream=stream)
        sync()
        assert_close(y, ifft_ref(v2), "complex128")


@gpu_package
def test_blocking_and_release_workspace(package):
    values = random_array((64, 256), "complex64")
    x = dev(values, package)
    with F.FFT(x, axes=(1,), options={"blocking": True}) as f:
        f.plan()
        for _ in range(3):
            y = f.execute(release_workspace=True)
            assert_close(y, fft_ref(values, (1,)), "complex64", 256)
        assert f._executor.backend._ws is None
        y = f.execute()
        assert f._executor.backend._ws is not None or f._executor.backend.workspace_size == 0
        assert_close(y, fft_ref(values, (1,)), "complex64", 256)


@gpu_package
def test_stateful_lifecycle(package):
    values = random_array((12, 20), "complex64")
    with F.FFT(dev(values, package), execution=cumath.ExecutionCUDA(device_id=0)) as f:
        f.plan()
        assert_close(f.execute(), fft_ref(values), "complex64")
        for _ in range(2):
            v = random_array((12, 20), "complex64")
            f.reset_operand(dev(v, package))
            assert_close(f.execute(direction="inverse"), ifft_ref(v), "complex64")
        with pytest.raises(ValueError, match="strides"):
            f.reset_operand(dev(v, package, "F"))
        f.release_operand()
        with pytest.raises(cumath.InvalidStateError, match="reset_operand"):
            f.execute()
    with pytest.raises(cumath.InvalidStateError, match=r"after free\(\)"):
        f.execute()


@gpu_package
def test_plan_cache_with_gpu_operands(package, fresh_cache):
    for _ in range(4):
        values = random_array((10, 30), "complex64")
        assert_close(F.fft(dev(values, package)), fft_ref(values), "complex64")
    assert plan_cache.stats()["misses"] == 1 and plan_cache.stats()["hits"] == 3
    (plan,) = [p for p, _ in plan_cache._mine().entries.values()]
    assert plan.nbytes >= 0
    plan_cache.set_limits(max_plans=1)
    F.fft(dev(random_array((10, 31), "complex64"), package))
    assert plan._freed


@gpu_package
def test_device_mismatch(package):
    x = dev(random_array((4, 4), "complex64"), package)
    with pytest.raises(ValueError, match="the operand is on GPU 0 but execution asks for GPU 1"):
        F.fft(x, execution=cumath.ExecutionCUDA(device_id=1))


def test_c2r_natural_layout_on_the_gpu_keeps_fortran_order():
    cupy = pytest.importorskip("cupy")
    values = hermitian_array((6, 8, 5), "complex128", (0, 1))
    x = cupy.asfortranarray(cupy.asarray(values))
    y = F.irfft(x, (0, 1), options={"result_layout": "natural"})
    assert y.flags.f_contiguous
    assert_close(y, irfft_ref(values, (0, 1)), "float64")
