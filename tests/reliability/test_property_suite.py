"""Property-based checks of every public FFT function, the stateful FFT and the CPU matmuls against NumPy
float64: random shapes (odd and prime sizes), axes, strides (negative, gapped, transposed), dtypes, offsets, in
place or not; overlapping in-place operands must be refused."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import cumath  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {"complex64": 2e-5, "complex128": 1e-12, "float32": 2e-5, "float64": 1e-12}


@st.composite
def arrays(draw, kinds=("complex64", "complex128"), max_ndim=3):
    ndim = draw(st.integers(1, max_ndim))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 5, 7, 8, 11, 13, 16]), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(kinds))
    steps = tuple(draw(st.lists(st.sampled_from([1, 1, 2, -1, -2]), min_size=ndim, max_size=ndim)))
    order = draw(st.permutations(range(ndim)))
    offset = draw(st.sampled_from([0, 0, 1]))  # 1: an element-misaligned start
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    big = tuple(n * abs(s) for n, s in zip(shape, steps))
    values = rng.standard_normal(big) + (1j * rng.standard_normal(big) if dtype.startswith("complex") else 0)
    values = values.astype(dtype)
    base = np.ascontiguousarray(values.transpose(order)).transpose(np.argsort(order))
    index = tuple(slice(None, None, s) for s in steps)
    x = base[index]
    if offset:
        raw = np.frombuffer(bytearray(x.nbytes + 16), np.uint8)
        y = raw[1:1 + x.nbytes].view(x.dtype).reshape(x.shape)
        y[...] = x
        x = y
    return x


@st.composite
def arrays_and_axes(draw, kinds=("complex64", "complex128")):
    x = draw(arrays(kinds))
    n = draw(st.integers(1, min(3, x.ndim)))
    axes = draw(st.permutations(range(x.ndim)))[:n]
    if draw(st.booleans()):
        axes = [a - x.ndim for a in axes]
    return x, list(axes)


def rel(a, ref):
    return np.abs(np.asarray(a) - ref).max() / max(np.abs(ref).max(), 1e-30)


def ref64(x):
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


@SETTINGS
@given(arrays_and_axes(), st.booleans())
def test_fft_and_ifft(case, inplace):
    x, axes = case
    x0 = ref64(x)
    ref = np.fft.fftn(x0, axes=axes)
    if inplace:
        y = x.copy() if not x.flags.writeable else x
        r = cumath.fft.fft(y, axes=axes, options={"inplace": True})
        assert r is y
    else:
        r = cumath.fft.fft(x, axes=axes)
    assert r.dtype == x.dtype and r.shape == x.shape
    assert rel(r, ref) < TOL[str(x.dtype)] * 10
    back = cumath.fft.ifft(np.asarray(r), axes=axes)
    n = np.prod([x.shape[a] for a in axes])
    assert rel(back, x0 * n) < TOL[str(x.dtype)] * 10


@SETTINGS
@given(arrays_and_axes(kinds=("float32", "float64")))
def test_rfft_and_irfft(case):
    x, axes = case
    ref = np.fft.rfftn(ref64(x), axes=axes)
    r = cumath.fft.rfft(x, axes=axes)
    assert rel(r, ref) < TOL[str(x.dtype)] * 10
    last = x.shape[axes[-1]]
    parity = "odd" if last % 2 else "even"
    back = cumath.fft.irfft(r, axes=axes, options={"last_axis_parity": parity})
    n = np.prod([x.shape[a] for a in axes])
    assert back.shape == x.shape
    assert rel(back, ref64(x) * n) < TOL[str(x.dtype)] * 10


@SETTINGS
@given(arrays_and_axes(), st.integers(0, 3))
def test_stateful_fft_with_resets(case, seed):
    x, axes = case
    rng = np.random.default_rng(seed)
    with cumath.fft.FFT(x, axes=axes) as f:
        f.plan()
        for _ in range(2):
            new = np.empty_like(x)
            new[...] = (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
            try:
                f.reset_operand(new)  # same shape, maybe other strides: a plan layout of its own or refused
            except ValueError as e:
                assert "does not match" in str(e)
                continue
            assert rel(f.execute(), np.fft.fftn(ref64(new), axes=axes)) < TOL[str(x.dtype)] * 10
            assert rel(f.execute(direction="inverse"), np.fft.ifftn(ref64(new), axes=axes) *
                       np.prod([x.shape[a] for a in axes])) < TOL[str(x.dtype)] * 10


@SETTINGS
@given(st.integers(2, 9), st.integers(2, 9), st.sampled_from([0, 1, 2]))
def test_overlapping_inplace_operands_are_refused(n, m, kind):
    z = np.zeros(n * m + m, complex)
    if kind == 0:
        v = np.lib.stride_tricks.as_strided(z, shape=(n, m), strides=(0, 16))
    elif kind == 1:
        v = np.lib.stride_tricks.sliding_window_view(z, m, writeable=True)[:n]
    else:
        v = np.lib.stride_tricks.as_strided(z, shape=(n, m), strides=(16, 16))
    with pytest.raises(ValueError, match="share memory"):
        cumath.fft.fft(v, axes=[-1], options={"inplace": True})


@st.composite
def matrices(draw):
    m, k, n = (draw(st.sampled_from([1, 2, 3, 5, 7, 13])) for _ in range(3))
    dtype = draw(st.sampled_from(["float32", "float64", "complex64", "complex128"]))
    batch = draw(st.sampled_from([(), (2,), (3, 1)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))

    def make(shape):
        v = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.startswith("complex") else 0)
        v = v.astype(dtype)
        layout = draw(st.sampled_from(["C", "F", "rev"]))
        if layout == "F":
            return np.asfortranarray(v)
        if layout == "rev" and v.ndim >= 2:
            return np.ascontiguousarray(v[..., ::-1, :])[..., ::-1, :]
        return v

    return make(batch + (m, k)), make(batch + (k, n)), make(batch + (m, n)), dtype


@SETTINGS
@given(matrices(), st.booleans(), st.sampled_from([0.0, 0.5, 1.0]))
def test_generic_matmul(case, inplace, beta):
    a, b, c, dtype = case
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-11
    ref = ref64(a) @ ref64(b) + beta * ref64(c)
    c_in = c.copy()
    r = cumath.linalg.matmul(a, b, c_in, beta=beta, options={"inplace": inplace})
    assert rel(r, ref) < tol
    if inplace:
        assert r is c_in
    else:
        np.testing.assert_array_equal(c_in, c)  # never written without inplace


@SETTINGS
@given(arrays_and_axes(), st.sampled_from(["fft", "ifft"]))
def test_fft_with_torch_cpu_tensors(case, fn):
    torch = pytest.importorskip("torch")
    x, axes = case
    # PyTorch has no negative strides: those operands become copies (other layouts stay as drawn)
    t = torch.from_numpy(x.copy() if any(s < 0 for s in x.strides) or not x.flags.writeable else x)
    ref = getattr(np.fft, fn + "n")(ref64(t.numpy()), axes=axes)
    if fn == "ifft":
        ref = ref * np.prod([x.shape[a] for a in axes])
    r = getattr(cumath.fft, fn)(t, axes=axes)
    assert isinstance(r, torch.Tensor) and tuple(r.shape) == x.shape
    assert rel(r.numpy(), ref) < TOL[str(x.dtype)] * 10


@SETTINGS
@given(arrays_and_axes(), st.sampled_from([None, "cpu", {"name": "cpu", "num_threads": 1}]))
def test_fft_execution_spaces(case, execution):
    x, axes = case
    r = cumath.fft.fft(x, axes=axes, execution=execution)
    assert rel(r, np.fft.fftn(ref64(x), axes=axes)) < TOL[str(x.dtype)] * 10
