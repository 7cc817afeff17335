"""Device APIs on a GPU: block/thread FFTs against numpy.fft, GEMMs and batched solves against NumPy float64,
and the cuRAND generators' distributions (mean, variance, Kolmogorov-Smirnov against the exact law),
reproducibility by seed and subsequence, and skip-ahead consistency. Skipped without a GPU, numba-cuda or
libmathdx."""

import math

import numpy as np
import pytest

import device_cases as C

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu(numba_cuda, cuda_device):
    import device_kernels

    cc = numba_cuda.get_current_device().compute_capability
    return device_kernels, cc


def _rel(x, ref):
    return float(np.linalg.norm(np.asarray(x, dtype=np.complex128) - ref) / np.linalg.norm(ref))


def _rng(seed):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------------------------------------ FFT

@pytest.mark.parametrize("size, prec, direction", C.C2C_CASES)
def test_block_fft_c2c(gpu, mathdx, size, prec, direction):
    from numba import cuda

    kernels, cc = gpu
    f = C.fft_c2c(size, prec, direction, cc)
    batch = 3 * f.ffts_per_block + 1  # a partial last block
    r = _rng(size)
    x = (r.standard_normal((batch, size)) + 1j * r.standard_normal((batch, size))).astype(f.value_type)
    y = cuda.device_array_like(x)
    kernels.fft_block_kernel(f)[(batch + f.ffts_per_block - 1) // f.ffts_per_block, f.block_dim, 0,
                                f.shared_memory_size](cuda.to_device(x), y)
    ref = np.fft.fft(x.astype(np.complex128), axis=-1) if direction == "forward" else \
        np.fft.ifft(x.astype(np.complex128), axis=-1) * size
    tol = (2e-6 if prec is np.float32 else 1e-14) * math.log2(size + 1) * 4
    assert _rel(y.copy_to_host(), ref) < tol


@pytest.mark.parametrize("size, prec", C.REAL_CASES)
def test_block_fft_r2c_c2r(gpu, mathdx, size, prec):
    from numba import cuda

    kernels, cc = gpu
    r2c, c2r = C.fft_real(size, prec, cc)
    batch = 5
    x = _rng(size).standard_normal((batch, size)).astype(prec)
    spec = cuda.device_array((batch, r2c.output_length), dtype=r2c.output_type)
    kernels.fft_block_kernel(r2c)[(batch + 1) // 2, r2c.block_dim, 0, r2c.shared_memory_size](cuda.to_device(x), spec)
    ref = np.fft.rfft(x.astype(np.float64), axis=-1)
    tol = (2e-6 if prec is np.float32 else 1e-14) * math.log2(size) * 4
    assert _rel(spec.copy_to_host(), ref) < tol
    back = cuda.device_array((batch, size), dtype=prec)
    kernels.fft_block_kernel(c2r)[(batch + 1) // 2, c2r.block_dim, 0, c2r.shared_memory_size](spec, back)
    assert _rel(back.copy_to_host() / size, x) < tol


@pytest.mark.parametrize("size", C.THREAD_SIZES)
def test_thread_fft(gpu, mathdx, size):
    from numba import cuda

    kernels, cc = gpu
    f = C.fft_thread(size, cc)
    r = _rng(size)
    x = r.standard_normal((300, size)) + 1j * r.standard_normal((300, size))
    y = cuda.device_array_like(x)
    kernels.fft_thread_kernel(f)[3, 128](cuda.to_device(x), y)
    assert _rel(y.copy_to_host(), np.fft.fft(x, axis=-1)) < 1e-14 * size


def test_fft_convolution_in_one_kernel(gpu, mathdx):
    from numba import cuda

    kernels, cc = gpu
    fwd, inv = C.fft_convolution(cc)
    r = _rng(0)
    x = (r.standard_normal((64, 128)) + 1j * r.standard_normal((64, 128))).astype(np.complex64)
    h = np.fft.fft(np.exp(-np.arange(128) / 8.0)).astype(np.complex64)
    y = cuda.device_array_like(x)
    kernels.fft_convolution_kernel(fwd, inv)[16, fwd.block_dim, 0, fwd.shared_memory_size](
        cuda.to_device(x), cuda.to_device(h), y)
    ref = np.fft.ifft(np.fft.fft(x.astype(np.complex128), axis=-1) * h, axis=-1)
    assert _rel(y.copy_to_host(), ref) < 1e-5


# ----------------------------------------------------------------------------------------------------- GEMM

@pytest.mark.parametrize("shape, prec, dtype", C.GEMM_CASES)
def test_block_gemm(gpu, mathdx, shape, prec, dtype):
    from numba import cuda

    kernels, cc = gpu
    m, n, k = shape
    mm = C.gemm(shape, prec, dtype, cc)
    vt = mm.c_value_type
    r = _rng(m * n + k)

    def rand(*s):
        v = r.standard_normal(s) + (1j * r.standard_normal(s) if dtype == "complex" else 0)
        return v.astype(vt)

    batch = 10
    a, b, c = rand(batch, m, k), rand(batch, k, n), rand(batch, m, n)
    alpha, beta = 1.5, -0.5
    c_d = cuda.to_device(c)
    kernels.gemm_kernel(mm)[batch, mm.block_dim](cuda.to_device(a), cuda.to_device(b), c_d, alpha, beta)
    ref = alpha * (a.astype(np.complex128) @ b) + beta * c
    assert _rel(c_d.copy_to_host(), ref) < (1e-5 if prec is np.float32 else 1e-13)


# --------------------------------------------------------------------------------------------------- solvers

@pytest.mark.parametrize("n, nrhs, prec", C.SOLVE_CASES)
@pytest.mark.parametrize("kind", ["cholesky", "lu_pivot"])
def test_batched_solve(gpu, mathdx, n, nrhs, prec, kind):
    from numba import cuda

    kernels, cc = gpu
    s = C.solver(kind, n, nrhs, prec, cc)
    batch = 20
    r = _rng(n)
    m = r.standard_normal((batch, n, n))
    a = (m @ m.transpose(0, 2, 1) + n * np.eye(n)) if kind == "cholesky" else m + 0.1 * np.eye(n)
    b = r.standard_normal((batch, n, nrhs))
    a_d, b_d = cuda.to_device(a.astype(prec)), cuda.to_device(b.astype(prec))
    info = cuda.device_array(batch, dtype=np.int32)
    kernels.solve_kernel(s, kind == "lu_pivot")[batch, s.block_dim](a_d, b_d, info)
    assert (info.copy_to_host() == 0).all()
    x = b_d.copy_to_host()
    ref = np.linalg.solve(a, b)
    assert _rel(x, ref) < (1e-3 if prec is np.float32 else 1e-10)


def test_batched_least_squares_and_triangular_solve(gpu, mathdx):
    from numba import cuda

    kernels, cc = gpu
    batch, r = 16, _rng(5)
    gels = C.least_squares(cc)
    a, b = r.standard_normal((batch, 12, 5)), r.standard_normal((batch, 12, 2))
    b_d = cuda.to_device(b)
    kernels.least_squares_kernel(gels)[batch, gels.block_dim](cuda.to_device(a), b_d)
    ref = np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0] for i in range(batch)])
    assert _rel(b_d.copy_to_host()[:, :5], ref) < 1e-10
    trsm = C.triangular(cc)
    low = np.tril(r.standard_normal((batch, 8, 8))) + 4 * np.eye(8)
    rhs = r.standard_normal((batch, 8, 3))
    rhs_d = cuda.to_device(rhs)
    kernels.triangular_solve_kernel(trsm)[batch, trsm.block_dim](cuda.to_device(low), rhs_d)
    assert _rel(rhs_d.copy_to_host(), np.linalg.solve(low, rhs)) < 1e-12


# ---------------------------------------------------------------------------------------------------- random

N_THREADS, PER_THREAD = 4096, 64


@pytest.fixture(scope="module")
def rng_env(gpu, curand_headers):
    from cumath.device import random

    kernels, cc = gpu
    return kernels, random, random.Compile(cc=cc).files


def _states(rng_env, cls, seed=1234, offset=0):
    kernels, random, link = rng_env
    states = cls(N_THREADS)
    kernels.init_pseudo_kernel(link)[N_THREADS // 128, 128](states, seed, offset)
    return states


def _draw(rng_env, states, fn, width, params=(), dtype=np.float32):
    from numba import cuda

    kernels, random, link = rng_env
    out = cuda.device_array(N_THREADS * PER_THREAD * width, dtype=dtype)
    kernels.sample_kernel(link, fn, width, params)[N_THREADS // 128, 128](states, out, PER_THREAD)
    return out.copy_to_host()


def _ks(sample, cdf, limit=1.95):
    """Kolmogorov-Smirnov statistic scaled by sqrt(n); 1.95 is the 0.1% critical value."""
    s = np.sort(np.asarray(sample, dtype=np.float64))
    n = len(s)
    f = cdf(s)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    return d * math.sqrt(n) < limit


def _normal_cdf(x, mu=0.0, sigma=1.0):
    from scipy.special import ndtr

    return ndtr((x - mu) / sigma)


@pytest.mark.parametrize("gen", ["StatesPhilox4_32_10", "StatesXORWOW", "StatesMRG32k3a"])
def test_uniform_and_normal(rng_env, gen):
    _, random, _ = rng_env
    states = _states(rng_env, getattr(random, gen))
    u = _draw(rng_env, states, random.uniform, 1)
    assert u.min() > 0 and u.max() <= 1
    assert abs(u.mean() - 0.5) < 3e-3 and abs(u.var() - 1 / 12) < 2e-3
    assert _ks(u[:200000], lambda x: np.clip(x, 0, 1))
    z = _draw(rng_env, states, random.normal, 1)
    assert abs(z.mean()) < 1e-2 and abs(z.var() - 1) < 1e-2 and _ks(z[:200000], _normal_cdf)
    z2 = _draw(rng_env, states, random.normal2_double, 2, dtype=np.float64)
    assert abs(z2.mean()) < 1e-2 and _ks(z2[:200000], _normal_cdf)
    ud = _draw(rng_env, states, random.uniform_double, 1, dtype=np.float64)
    assert _ks(ud[:200000], lambda x: np.clip(x, 0, 1))


def test_philox_vector_samplers(rng_env):
    _, random, _ = rng_env
    states = _states(rng_env, random.StatesPhilox4_32_10)
    z = _draw(rng_env, states, random.normal4, 4)
    assert abs(z.mean()) < 1e-2 and abs(z.std() - 1) < 1e-2 and _ks(z[:400000], _normal_cdf)
    u = _draw(rng_env, states, random.uniform4, 4)
    assert _ks(u[:400000], lambda x: np.clip(x, 0, 1))
    u2 = _draw(rng_env, states, random.uniform2_double, 2, dtype=np.float64)
    assert abs(u2.mean() - 0.5) < 3e-3
    bits = _draw(rng_env, states, random.rand4, 4, dtype=np.uint32)
    assert abs(bits.astype(np.float64).mean() / 2 ** 32 - 0.5) < 3e-3


def test_log_normal_and_poisson(rng_env):
    _, random, _ = rng_env
    states = _states(rng_env, random.StatesPhilox4_32_10)
    ln = _draw(rng_env, states, random.log_normal, 1, (0.5, 0.25))
    assert _ks(np.log(ln[:200000]), lambda x: _normal_cdf(x, 0.5, 0.25))
    lam = 3.5
    p = _draw(rng_env, states, random.poisson, 1, (lam,), dtype=np.uint32).astype(np.float64)
    assert abs(p.mean() - lam) < 0.02 and abs(p.var() - lam) < 0.05
    p4 = _draw(rng_env, states, random.poisson4, 4, (lam,), dtype=np.uint32).astype(np.float64)
    assert abs(p4.mean() - lam) < 0.02


def test_reproducible_by_seed_and_subsequence(rng_env):
    _, random, _ = rng_env
    a = _draw(rng_env, _states(rng_env, random.StatesXORWOW, seed=7), random.uniform, 1)
    b = _draw(rng_env, _states(rng_env, random.StatesXORWOW, seed=7), random.uniform, 1)
    c = _draw(rng_env, _states(rng_env, random.StatesXORWOW, seed=8), random.uniform, 1)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    per = a.reshape(N_THREADS, PER_THREAD)  # threads use distinct subsequences: their streams differ
    assert not np.array_equal(per[0], per[1])
    assert abs(np.corrcoef(per[0], per[1])[0, 1]) < 0.5


@pytest.mark.parametrize("gen", ["StatesXORWOW", "StatesPhilox4_32_10", "StatesMRG32k3a"])
def test_skipahead_matches_sequential_draws(rng_env, gen):
    from numba import cuda

    kernels, random, link = rng_env
    cls = getattr(random, gen)
    seq = _draw(rng_env, _states(rng_env, cls, seed=99), random.rand, 1, dtype=np.uint32)
    seq = seq.reshape(N_THREADS, PER_THREAD)
    n = 10
    states = _states(rng_env, cls, seed=99)
    out = cuda.device_array(N_THREADS, dtype=np.uint32)
    kernels.skipahead_kernel(link, random.skipahead)[N_THREADS // 128, 128](states, n, out)
    assert np.array_equal(out.copy_to_host(), seq[:, n])
    # skipping one subsequence from subsequence i lands on subsequence i + 1, thread i + 1's stream (for MRG32k3a
    # curand_init's subsequences are skipahead_subsequence's; skipahead_sequence jumps further)
    skip = random.skipahead_subsequence if gen == "StatesMRG32k3a" else random.skipahead_sequence
    states = _states(rng_env, cls, seed=99)
    kernels.skipahead_kernel(link, skip)[N_THREADS // 128, 128](states, 1, out)
    assert np.array_equal(out.copy_to_host()[:-1], seq[1:, 0])


@pytest.mark.parametrize("gen, scrambled, bits", [("StatesSobol32", False, 32), ("StatesScrambledSobol32", True, 32),
                                                  ("StatesSobol64", False, 64), ("StatesScrambledSobol64", True, 64)])
def test_sobol(rng_env, gen, scrambled, bits):
    from numba import cuda

    kernels, random, link = rng_env
    h = random.random_helpers
    sets = {(32, False): h.DirectionVectorSet.DIRECTION_VECTORS_32_JOEKUO6,
            (32, True): h.DirectionVectorSet.SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6,
            (64, False): h.DirectionVectorSet.DIRECTION_VECTORS_64_JOEKUO6,
            (64, True): h.DirectionVectorSet.SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6}
    ndim = 64
    vectors = (h.get_direction_vectors32 if bits == 32 else h.get_direction_vectors64)(sets[(bits, scrambled)], ndim)
    consts = (h.get_scramble_constants32 if bits == 32 else h.get_scramble_constants64)(ndim)
    states = getattr(random, gen)(ndim)
    kernels.init_sobol_kernel(link, scrambled)[1, ndim](states, cuda.to_device(vectors), cuda.to_device(consts), 0)
    out = cuda.device_array(ndim * 1024, dtype=np.float64)
    kernels.sample_kernel(link, random.uniform_double, 1)[1, ndim](states, out, 1024)
    pts = out.copy_to_host().reshape(ndim, 1024)
    # quasi-random: every dimension's mean is much closer to 1/2 than pseudo-random draws would be
    assert np.abs(pts.mean(axis=1) - 0.5).max() < 5e-3
    assert pts.min() >= 0 and pts.max() <= 1


@pytest.mark.parametrize("generator", ["StatesPhilox4_32_10", "StatesXORWOW", "StatesMRG32k3a"])
def test_state_copied_to_a_local_record(rng_env, generator):
    """Drawing from a local copy of the state gives the draws of states[i] in memory, and the copy stored back
    continues the sequence in the next kernel."""
    from numba import cuda

    kernels, random, link = rng_env
    n, per = 1000, 5
    cls = getattr(random, generator)
    ref_states, states = cls(n), cls(n)
    for st in (ref_states, states):
        kernels.init_pseudo_kernel(link)[(n + 127) // 128, 128](st, 2024, 0)
    ref = cuda.device_array(n * 2 * per * 2, dtype=np.float32)
    kernels.sample_kernel(link, random.normal2, 2)[(n + 127) // 128, 128](ref_states, ref, 2 * per)
    out1 = cuda.device_array(n * per * 2, dtype=np.float32)
    out2 = cuda.device_array(n * per * 2, dtype=np.float32)
    local = kernels.local_state_kernel(link, cls)
    local[(n + 127) // 128, 128](states, out1, per)
    local[(n + 127) // 128, 128](states, out2, per)
    ref = ref.copy_to_host().reshape(n, 2, per * 2)
    np.testing.assert_array_equal(out1.copy_to_host().reshape(n, per * 2), ref[:, 0])
    np.testing.assert_array_equal(out2.copy_to_host().reshape(n, per * 2), ref[:, 1])
    assert abs(ref.mean()) < 0.05 and abs(ref.std() - 1) < 0.05


def test_gbm(rng_env):
    from numba import cuda

    kernels, random, link = rng_env
    npaths, nsteps, mu, sigma, s0 = 8192, 252, 0.0003, 0.01, 100.0
    states = random.StatesPhilox4_32_10(npaths)
    kernels.init_pseudo_kernel(link)[npaths // 128, 128](states, 7777, 0)
    paths = cuda.device_array((npaths, nsteps), dtype=np.float32, order="F")
    kernels.gbm_kernel(link)[npaths // 128, 128](states, paths, nsteps, mu, sigma, s0)
    last = np.log(paths.copy_to_host()[:, -1].astype(np.float64) / s0)
    # log S_T = (nsteps - 1) mu + sigma * sqrt(nsteps - 1) Z
    m, sd = (nsteps - 1) * mu, sigma * math.sqrt(nsteps - 1)
    assert abs(last.mean() - m) < 4 * sd / math.sqrt(npaths) and abs(last.std() / sd - 1) < 0.05
    assert _ks(last, lambda x: _normal_cdf(x, m, sd))
