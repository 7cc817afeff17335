"""JAX operands: jax.Array in, jax.Array out on the operand's device, for every domain; immutability and tracers."""

import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

import cumath  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

RNG = np.random.default_rng(20261201)


def crand(*shape, dtype=np.complex128):
    x = RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def rrand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def relerr(got, want):
    got = np.asarray(got)
    return np.linalg.norm((got - want).ravel()) / np.linalg.norm(np.asarray(want).ravel())


def tol(dtype):
    return 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def check_jax_result(r, like):
    assert isinstance(r, jax.Array)
    assert r.devices() == like.devices()


# ---------------------------------------------------------------------------------------------------------- FFT
@pytest.mark.parametrize("shape", [(7,), (13, 5), (3, 11, 4), (1, 17)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_fft_roundtrip(shape, dtype):
    a = crand(*shape, dtype=dtype)
    x = jnp.asarray(a)
    y = cumath.fft.fft(x)
    check_jax_result(y, x)
    assert y.dtype == dtype
    assert relerr(y, np.fft.fftn(a.astype(np.complex128))) < tol(dtype)
    z = cumath.fft.ifft(y)
    assert relerr(np.asarray(z) / np.prod(shape), a) < tol(dtype)
    assert relerr(x, a) == 0  # the operand is unchanged


@pytest.mark.parametrize("n", [8, 9, 31])
def test_rfft_irfft(n):
    a = rrand(5, n)
    x = jnp.asarray(a)
    y = cumath.fft.rfft(x, axes=[1])
    check_jax_result(y, x)
    assert relerr(y, np.fft.rfft(a, axis=1)) < 1e-12
    parity = "odd" if n % 2 else "even"
    z = cumath.fft.irfft(y, axes=[1], options={"last_axis_parity": parity})
    check_jax_result(z, x)
    assert relerr(np.asarray(z) / n, a) < 1e-12


def test_fft_leading_axis_and_transposed_operand():
    a = crand(6, 7)
    x = jnp.asarray(a)
    y = cumath.fft.fft(x, axes=[0])
    assert relerr(y, np.fft.fft(a, axis=0)) < 1e-12
    # JAX gives a copy for x.T; results in another memory order come back as JAX arrays with that layout
    yt = cumath.fft.fft(x.T, axes=[0])
    assert relerr(yt, np.fft.fft(a.T, axis=0)) < 1e-12
    assert relerr(yt + 1, np.fft.fft(a.T, axis=0) + 1) < 1e-12  # usable by JAX as any other array


def test_stateful_fft_reset_operand():
    a, b = crand(4, 9), crand(4, 9)
    with cumath.fft.FFT(jnp.asarray(a), axes=[1]) as f:
        f.plan()
        r1 = f.execute()
        f.reset_operand(jnp.asarray(b))
        r2 = f.execute()
    assert relerr(r1, np.fft.fft(a, axis=1)) < 1e-12
    assert relerr(r2, np.fft.fft(b, axis=1)) < 1e-12


def test_fft_batch_and_odd_sizes_float32():
    a = crand(3, 5, 7, dtype=np.complex64)
    y = cumath.fft.fft(jnp.asarray(a), axes=[1, 2])
    assert relerr(y, np.fft.fftn(a.astype(np.complex128), axes=(1, 2))) < 1e-5


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=3))
def test_fft_property(shape):
    a = crand(*shape)
    y = cumath.fft.fft(jnp.asarray(a))
    assert isinstance(y, jax.Array)
    assert np.allclose(np.asarray(y), np.fft.fftn(a), atol=1e-9 * max(1, a.size))


# ------------------------------------------------------------------------------------------------------- linalg
@pytest.mark.parametrize("m,k,n", [(7, 5, 3), (1, 13, 1), (11, 2, 17)])
def test_generic_matmul(m, k, n):
    a, b = rrand(m, k), rrand(k, n)
    r = cumath.linalg.matmul(jnp.asarray(a), jnp.asarray(b))
    check_jax_result(r, jnp.asarray(a))
    assert relerr(r, a @ b) < 1e-12


def test_generic_matmul_batched_complex():
    a, b = crand(3, 4, 5), crand(3, 5, 2)
    r = cumath.linalg.matmul(jnp.asarray(a), jnp.asarray(b))
    assert relerr(r, a @ b) < 1e-12


@pytest.mark.parametrize("nrhs", [None, 1, 3])
def test_direct_solver(nrhs):
    n = 7
    a = rrand(n, n) + n * np.eye(n)
    b = rrand(n) if nrhs is None else rrand(n, nrhs)
    x = cumath.linalg.direct_solver(jnp.asarray(a), jnp.asarray(b))
    check_jax_result(x, jnp.asarray(a))
    assert x.shape == b.shape
    assert relerr(x, np.linalg.solve(a, b)) < 1e-12


def test_sparse_direct_solver_refuses_mixed_packages():
    """Sparse matrices come from SciPy, CuPy or PyTorch; a JAX right-hand side with a SciPy matrix is refused
    with a message that names the package to use."""
    sp = pytest.importorskip("scipy.sparse")
    n = 9
    a = (sp.random(n, n, density=0.3, random_state=3, format="csr") + sp.eye(n, format="csr") * n).tocsr()
    with pytest.raises(TypeError, match="b is a jax array while a is a SciPy matrix; pass a numpy array"):
        cumath.sparse.advanced.direct_solver(a, jnp.asarray(rrand(n, 2)))


# ------------------------------------------------------------------------------------------------- immutability
def test_fft_inplace_refused():
    x = jnp.asarray(crand(4, 4))
    with pytest.raises(ValueError, match="JAX arrays are immutable"):
        cumath.fft.fft(x, options={"inplace": True})


def test_matmul_inplace_refused():
    a = jnp.asarray(rrand(3, 3))
    with pytest.raises(ValueError, match="JAX arrays are immutable"):
        cumath.linalg.matmul(a, a, a, beta=1.0, options={"inplace": True})


def test_solver_inplace_refused():
    a = jnp.asarray(rrand(3, 3) + 3 * np.eye(3))
    b = jnp.asarray(rrand(3, 1))
    with pytest.raises(ValueError, match="JAX arrays are immutable"):
        cumath.linalg.direct_solver(a, b, options={"inplace_b": True})


# ---------------------------------------------------------------------------------------------------- staging
@pytest.mark.parametrize("perm", [(0, 1), (1, 0)])
def test_host_mirror_stores_into_a_jax_array(monkeypatch, perm):
    """The device-to-host executors store their host result into a new JAX array: the staging copy reads the
    JAX array's memory order through the adapter (JAX arrays have no strides). The copies run as memmove on a
    JAX CPU array (what the H2D copy does to a JAX GPU array's buffer)."""
    import ctypes

    from cumath._core import cuda
    from cumath._core.executors import HostMirror, pkg_strides
    from cumath._core.frameworks import jax as jax_adapter

    monkeypatch.setattr(cuda, "copy", lambda dst, src, n, kind, stream, what="": ctypes.memmove(dst, src, n))
    monkeypatch.setattr(cuda, "synchronize", lambda stream: None)
    a = crand(5, 12)
    mirror = HostMirror(a.shape, "complex128", (0, 1), "result")
    mirror.array[...] = a
    target = jax_adapter.empty(a.shape, "complex128", None, perm)
    assert pkg_strides(target, jax_adapter) == ((12, 1) if perm == (0, 1) else (1, 5))
    mirror.store(target, jax_adapter, None, 0)
    assert relerr(target, a) == 0


# ------------------------------------------------------------------------------------------------------ tracers
def test_tracer_under_jit_names_pure_callback():
    @jax.jit
    def f(x):
        return cumath.fft.fft(x)

    with pytest.raises(TypeError, match=r"jax\.pure_callback"):
        f(jnp.asarray(crand(4)))


def test_tracer_under_grad_and_vmap():
    with pytest.raises(TypeError, match="tracer"):
        jax.vmap(lambda x: cumath.fft.fft(x))(jnp.asarray(crand(2, 4)))
    with pytest.raises(TypeError, match="tracer"):
        jax.grad(lambda x: jnp.abs(cumath.linalg.matmul(x, x)).sum())(jnp.asarray(rrand(2, 2)))


def test_pure_callback_recipe_works():
    a = crand(8)

    @jax.jit
    def f(x):
        return jax.pure_callback(lambda v: cumath.fft.fft(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2

    assert relerr(f(jnp.asarray(a)), 2 * np.fft.fft(a)) < 1e-12


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="not supported|need"):
        cumath.fft.fft(jnp.asarray(np.arange(4, dtype=np.uint32)))


def test_adapter_not_imported_by_cumath():
    code = ("import sys, cumath, cumath.fft, cumath.linalg; "
            "print(any(m == 'jax' or m.startswith('jax.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------------------------------------------------- GPU
def _jax_gpu():
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX sees no GPU")


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64,), (7, 33), (3, 5, 17)])
def test_gpu_fft(shape, cufft_device):
    dev = _jax_gpu()
    a = crand(*shape)
    x = jax.device_put(jnp.asarray(a), dev)
    y = cumath.fft.fft(x)
    check_jax_result(y, x)
    assert relerr(y, np.fft.fftn(a)) < 1e-12
    # irfft gives a last axis of 2 * (m - 1) by default (nvmath-python's last_axis_parity='even'): an odd size
    # comes back only when the parity says so
    parity = {"last_axis_parity": "odd" if shape[-1] % 2 else "even"}
    z = cumath.fft.irfft(cumath.fft.rfft(jax.device_put(jnp.asarray(a.real), dev)), options=parity)
    check_jax_result(z, x)
    assert z.shape == a.shape
    assert relerr(np.asarray(z) / a.size, a.real) < 1e-12


@pytest.mark.gpu
def test_gpu_fft_on_cpu_execution(cufft_device):
    dev = _jax_gpu()
    a = crand(5, 12)
    x = jax.device_put(jnp.asarray(a), dev)
    y = cumath.fft.fft(x, execution="cpu")
    check_jax_result(y, x)
    assert relerr(y, np.fft.fftn(a)) < 1e-12


@pytest.mark.gpu
def test_gpu_cpu_operand_on_gpu_execution(cufft_device):
    a = crand(5, 12)
    x = jnp.asarray(a)
    y = cumath.fft.fft(x, execution="cuda")
    check_jax_result(y, x)
    assert relerr(y, np.fft.fftn(a)) < 1e-12


@pytest.mark.gpu
@pytest.mark.parametrize("m,k,n", [(64, 32, 48), (7, 5, 3)])
def test_gpu_matmuls(m, k, n, cuda_device):
    dev = _jax_gpu()
    a, b = rrand(m, k), rrand(k, n)
    A, B = jax.device_put(jnp.asarray(a), dev), jax.device_put(jnp.asarray(b), dev)
    r = cumath.linalg.matmul(A, B)
    check_jax_result(r, A)
    assert relerr(r, a @ b) < 1e-12
    r = cumath.linalg.advanced.matmul(A, B)
    check_jax_result(r, A)
    assert relerr(r, a @ b) < 1e-12
    bias = jax.device_put(jnp.asarray(rrand(m, 1)), dev)
    r = cumath.linalg.advanced.matmul(A, B, epilog=cumath.linalg.advanced.MatmulEpilog.BIAS,
                                      epilog_inputs={"bias": bias})
    check_jax_result(r, A)
    assert relerr(r, a @ b + np.asarray(bias)) < 1e-12


@pytest.mark.gpu
def test_gpu_direct_solver(cuda_device):
    dev = _jax_gpu()
    n = 9
    a = rrand(n, n) + n * np.eye(n)
    b = rrand(n, 2)
    x = cumath.linalg.direct_solver(jax.device_put(jnp.asarray(a), dev), jax.device_put(jnp.asarray(b), dev))
    assert isinstance(x, jax.Array) and x.devices() == {dev}
    assert relerr(x, np.linalg.solve(a, b)) < 1e-12


@pytest.mark.gpu
def test_gpu_result_used_by_jax_right_away(cufft_device):
    """cumath waits for its work before returning a JAX result: JAX's next op reads finished data."""
    dev = _jax_gpu()
    a = crand(1 << 16)
    x = jax.device_put(jnp.asarray(a), dev)
    for _ in range(3):
        y = cumath.fft.fft(x) * 1.0
    assert relerr(y, np.fft.fft(a)) < 1e-12
