"""Device APIs on a GPU, second part: the shared-memory FFT API, half-precision FFTs, cuBLASDx's tensor API
(register fragments, accumulators, copies; C in shared memory), QR/LQ with the multiply by Q, and the
eigenvalue, SVD and tridiagonal solvers, against NumPy/SciPy float64 references. Skipped without a GPU,
numba-cuda or libmathdx. The objects come from device_cases.py (pregenerate.py generates their code)."""

import math

import numpy as np
import pytest

import device_cases as C

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu(numba_cuda, cuda_device, mathdx):
    import device_kernels

    cc = numba_cuda.get_current_device().compute_capability
    return device_kernels, cc


def _rel(x, ref):
    ref = np.asarray(ref, dtype=np.complex128)
    return float(np.linalg.norm(np.asarray(x, dtype=np.complex128) - ref) / np.linalg.norm(ref))


def _rng(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------- FFT APIs

@pytest.mark.parametrize("size, prec, direction", C.SMEM_CASES)
def test_block_fft_shared_memory_api(gpu, size, prec, direction):
    from numba import cuda

    kernels, cc = gpu
    f = C.fft_smem(size, prec, direction, cc)
    assert f.execute_api == "shared_memory"
    batch = 3 * f.ffts_per_block
    r = _rng(size)
    x = (r.standard_normal((batch, size)) + 1j * r.standard_normal((batch, size))).astype(f.value_type)
    y = cuda.device_array_like(x)
    smem = max(f.shared_memory_size, f.ffts_per_block * size * np.dtype(f.value_type).itemsize)
    kernels.fft_smem_kernel(f)[batch // f.ffts_per_block, f.block_dim, 0, smem](cuda.to_device(x), y)
    ref = np.fft.fft(x.astype(np.complex128), axis=-1) if direction == "forward" else \
        np.fft.ifft(x.astype(np.complex128), axis=-1) * size
    assert _rel(y.copy_to_host(), ref) < (2e-6 if prec is np.float32 else 1e-14) * math.log2(size) * 4


def _half_complex(r, batch, n):
    z = r.standard_normal((batch, n, 2)).astype(np.float16)
    return z, z[..., 0].astype(np.float64) + 1j * z[..., 1].astype(np.float64)


def _half_tol(n):
    return 2e-3 * math.log2(n) + 2e-3


@pytest.mark.parametrize("size, direction, fpb", C.HALF_C2C_CASES)
def test_half_precision_block_fft(gpu, size, direction, fpb):
    from numba import cuda

    from cumath.device import float16x4

    kernels, cc = gpu
    f = C.fft_half_c2c(size, direction, fpb, cc)
    assert f.value_type is float16x4 and f.implicit_type_batching == 2 and f.ffts_per_block == fpb
    batch = 3 * fpb
    x, xc = _half_complex(_rng(size), batch, size)
    y = cuda.device_array_like(x)
    kernels.fft_half_kernel(f)[batch // fpb, f.block_dim, 0, f.shared_memory_size](cuda.to_device(x), y)
    out = y.copy_to_host().astype(np.float64)
    ref = np.fft.fft(xc, axis=-1) if direction == "forward" else np.fft.ifft(xc, axis=-1) * size
    assert _rel(out[..., 0] + 1j * out[..., 1], ref) < _half_tol(size)


def test_half_precision_r2c_c2r(gpu):
    from numba import cuda

    kernels, cc = gpu
    r2c, c2r = C.fft_half_real(cc)
    n, batch = r2c.size, 4
    x = _rng(3).standard_normal((batch, n)).astype(np.float16)
    spec = cuda.device_array((batch, r2c.output_length, 2), dtype=np.float16)
    kernels.fft_half_kernel(r2c)[batch // 2, r2c.block_dim, 0, r2c.shared_memory_size](cuda.to_device(x), spec)
    s = spec.copy_to_host().astype(np.float64)
    ref = np.fft.rfft(x.astype(np.float64), axis=-1)
    assert _rel(s[..., 0] + 1j * s[..., 1], ref) < _half_tol(n)
    back = cuda.device_array((batch, n), dtype=np.float16)
    kernels.fft_half_kernel(c2r)[batch // 2, c2r.block_dim, 0, c2r.shared_memory_size](spec, back)
    assert _rel(back.copy_to_host().astype(np.float64) / n, x) < 2 * _half_tol(n)


def test_half_precision_thread_fft(gpu):
    from numba import cuda

    kernels, cc = gpu
    f = C.fft_thread(C.HALF_THREAD_SIZE, cc, np.float16)
    n, batch = f.size, 256
    x, xc = _half_complex(_rng(4), batch, n)
    y = cuda.device_array_like(x)
    kernels.fft_half_thread_kernel(f)[2, 64](cuda.to_device(x), y)
    out = y.copy_to_host().astype(np.float64)
    assert _rel(out[..., 0] + 1j * out[..., 1], np.fft.fft(xc, axis=-1)) < _half_tol(n)


# ------------------------------------------------------------------------------------------ GEMM tensors

def _flat(mats, arrangement):
    """Each matrix of ``mats`` (batch, rows, cols) flattened in its arrangement (column-major: Fortran order)."""
    return np.stack([m.T.ravel() if arrangement == "col_major" else m.ravel() for m in mats])


def _unflat(flat, rows, cols, arrangement):
    return np.stack([f.reshape(cols, rows).T if arrangement == "col_major" else f.reshape(rows, cols)
                     for f in flat])


def _gemm_data(mm, batch, seed):
    r = _rng(seed)
    m, n, k = mm.size

    def rand(rows, cols, dt):
        v = r.standard_normal((batch, rows, cols))
        if np.dtype(dt).kind == "c":
            v = v + 1j * r.standard_normal((batch, rows, cols))
        return v.astype(dt)

    return rand(m, k, mm.a_value_type), rand(k, n, mm.b_value_type), rand(m, n, mm.c_value_type)


def test_gemm_tensor_api_register_fragment(gpu):
    """fp16 x fp16 -> fp32, suggested layouts, partitioner fragment, axpby, copy_fragment, map_fragment_index."""
    from numba import cuda

    kernels, cc = gpu
    mm = C.gemm_tensor_mixed(cc)
    assert mm.tensor_types == ("suggested_smem_a", "suggested_smem_b", "suggested_rmem_c")
    arr = ("col_major", "row_major", "row_major")
    batch, (m, n, _) = 6, mm.size
    a, b, c = _gemm_data(mm, batch, 11)
    alpha, beta = 1.25, -0.75
    kernel, smem = kernels.gemm_tensor_kernel(mm)
    out = cuda.device_array((batch, m * n), dtype=np.float32)
    where = cuda.device_array((batch, m, n), dtype=np.float32)
    kernel[batch, mm.block_dim, 0, smem](alpha, cuda.to_device(_flat(a, arr[0])), cuda.to_device(_flat(b, arr[1])),
                                         beta, cuda.to_device(_flat(c, arr[2])), out, where)
    ref = alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * c
    assert _rel(_unflat(out.copy_to_host(), m, n, arr[2]), ref) < 1e-5
    assert _rel(where.copy_to_host(), ref) < 1e-5


def test_gemm_tensor_api_accumulator(gpu):
    from numba import cuda

    kernels, cc = gpu
    mm = C.gemm_tensor_f64(cc)
    batch, (m, n, _) = 5, mm.size
    a, b, c = _gemm_data(mm, batch, 12)
    alpha, beta = -0.5, 2.0
    kernel, smem = kernels.gemm_accumulator_kernel(mm)
    out = cuda.device_array((batch, m * n), dtype=np.float64)
    kernel[batch, mm.block_dim, 0, smem](alpha, cuda.to_device(_flat(a, "col_major")),
                                         cuda.to_device(_flat(b, "col_major")), beta,
                                         cuda.to_device(_flat(c, "col_major")), out)
    ref = alpha * (a @ b) + beta * c
    assert _rel(_unflat(out.copy_to_host(), m, n, "col_major"), ref) < 1e-13


def test_gemm_tensor_api_shared_c_complex(gpu):
    from numba import cuda

    kernels, cc = gpu
    mm = C.gemm_tensor_c128(cc)
    arr = ("row_major", "col_major", "col_major")
    batch, (m, n, _) = 4, mm.size
    a, b, c = _gemm_data(mm, batch, 13)
    alpha, beta = 0.5 - 1j, 1.5 + 0.25j
    kernel, smem = kernels.gemm_smem_c_kernel(mm)
    c_d = cuda.to_device(_flat(c, arr[2]))
    kernel[batch, mm.block_dim, 0, smem](alpha, cuda.to_device(_flat(a, arr[0])), cuda.to_device(_flat(b, arr[1])),
                                         beta, c_d)
    ref = alpha * (a @ b) + beta * c
    assert _rel(_unflat(c_d.copy_to_host(), m, n, arr[2]), ref) < 1e-13


# --------------------------------------------------------------------------------------------- QR and LQ

def _pack(s, name, mats):
    """Matrices (blocks * bpb, rows, cols) or vectors (blocks * bpb, len) as flat per-block storage of ``s``."""
    bpb = s.batches_per_block
    mats = np.asarray(mats)
    per = mats.reshape(-1, bpb, *mats.shape[1:])
    if mats.ndim == 2:
        return per.reshape(per.shape[0], -1)
    col = s._arr(name) == "col_major"
    return np.stack([np.concatenate([(x.T if col else x).ravel() for x in blk]) for blk in per])


def _unpack(s, name, flat, rows, cols=None):
    bpb = s.batches_per_block
    if cols is None:
        return flat.reshape(-1, rows)
    col = s._arr(name) == "col_major"
    out = [(f.reshape(cols, rows).T if col else f.reshape(rows, cols))
           for blk in flat for f in blk.reshape(bpb, -1)]
    return np.stack(out)


def _run(_kernels, _solver, _blocks, **operands):
    """Launch flat_solver_kernel(_solver) over ``_blocks`` blocks with host arrays (flat per block, keyed by the
    solver's parameter names); returns them."""
    from numba import cuda

    dev_arrays = {p: cuda.to_device(np.ascontiguousarray(v)) for p, v in operands.items()}
    _kernels.flat_solver_kernel(_solver)[_blocks, _solver.block_dim](
        *[dev_arrays[p] for p in _solver.execute_parameters if p != "workspace"])
    return {p: d.copy_to_host() for p, d in dev_arrays.items()}


def test_qr_factorize_and_multiply(gpu):
    kernels, cc = gpu
    fac, mult_t, mult_n = C.qr_pair(cc)
    blocks, (m, n) = 7, fac.size[:2]
    a0 = _rng(21).standard_normal((blocks, m, n))
    got = _run(kernels, fac, blocks, a=_pack(fac, "a", a0), tau=np.zeros((blocks, n)))
    af, tau = _unpack(fac, "a", got["a"], m, n), got["tau"]
    r = np.triu(af[:, :n, :])
    assert np.allclose(np.abs(np.diagonal(r, axis1=1, axis2=2)),
                       np.abs(np.diagonal(np.linalg.qr(a0, mode="r"), axis1=1, axis2=2)), rtol=1e-12)
    # Q^T A0 = [R; 0]
    got = _run(kernels, mult_t, blocks, a=got["a"], tau=tau, c=_pack(mult_t, "c", a0))
    qta = _unpack(mult_t, "c", got["c"], m, n)
    assert _rel(qta[:, :n], r) < 1e-13 and np.abs(qta[:, n:]).max() < 1e-12 * np.abs(a0).max() * m
    # Q (Q^T C) = C, and Q preserves norms
    cmat = _rng(22).standard_normal((blocks, m, 3))
    qc = _unpack(mult_n, "c", _run(kernels, mult_n, blocks, a=_pack(fac, "a", af), tau=tau,
                                   c=_pack(mult_n, "c", cmat))["c"], m, 3)
    assert np.allclose(np.linalg.norm(qc, axis=1), np.linalg.norm(cmat, axis=1), rtol=1e-12)
    back = _unpack(mult_t, "c", _run(kernels, mult_t, blocks, a=_pack(fac, "a", af), tau=tau,
                                     c=_pack(mult_t, "c", np.concatenate([qc, np.zeros((blocks, m, 2))], 2)))["c"],
                   m, 5)
    assert _rel(back[..., :3], cmat) < 1e-13


def test_lq_factorize_and_multiply(gpu):
    kernels, cc = gpu
    fac, mult = C.lq_pair(cc)
    blocks, (m, n) = 5, fac.size[:2]
    a0 = _rng(23).standard_normal((blocks, m, n)).astype(np.float32)
    got = _run(kernels, fac, blocks, a=_pack(fac, "a", a0), tau=np.zeros((blocks, m), np.float32))
    lower = np.tril(_unpack(fac, "a", got["a"], m, n)[:, :, :m])
    # A0 Q^T = [L, 0]
    res = _run(kernels, mult, blocks, a=got["a"], tau=got["tau"], c=_pack(mult, "c", a0))
    aqt = _unpack(mult, "c", res["c"], m, n)
    assert _rel(aqt[:, :, :m], lower) < 2e-6 and np.abs(aqt[:, :, m:]).max() < 1e-5
    assert np.allclose(np.abs(np.diagonal(lower, axis1=1, axis2=2)),
                       np.abs(np.diagonal(np.linalg.qr(a0.transpose(0, 2, 1).astype(np.float64), mode="r"),
                                          axis1=1, axis2=2)), rtol=1e-4)


# --------------------------------------------------------------------------------- eigenvalues and SVDs

def _sym(r, blocks, n, complex_=False):
    x = r.standard_normal((blocks, n, n)) + (1j * r.standard_normal((blocks, n, n)) if complex_ else 0)
    return x + np.conj(x.transpose(0, 2, 1))


def test_heev_eigenvalues_and_vectors(gpu):
    kernels, cc = gpu
    s = C.eig_svd("heev", cc)
    assert s.execute_parameters == ("a", "lambda", "workspace", "info")
    blocks, n = 6, s.m
    a0 = _sym(_rng(31), blocks, n)
    got = _run(kernels, s, blocks, a=_pack(s, "a", a0), **{"lambda": np.zeros((blocks, n)),
                                                            "info": np.zeros((blocks, 1), np.int32)})
    lam, v = got["lambda"], _unpack(s, "a", got["a"], n, n)
    assert (got["info"] == 0).all()
    assert _rel(lam, np.linalg.eigvalsh(a0)) < 1e-13
    assert _rel(a0 @ v, v * lam[:, None, :]) < 1e-12


def test_heev_complex_eigenvalues(gpu):
    kernels, cc = gpu
    s = C.eig_svd("heev_c", cc)
    blocks, n = 4, s.m
    a0 = _sym(_rng(32), blocks, n, complex_=True)
    got = _run(kernels, s, blocks, a=_pack(s, "a", a0), **{"lambda": np.zeros((blocks, n)),
                                                            "info": np.zeros((blocks, 1), np.int32)})
    assert (got["info"] == 0).all() and _rel(got["lambda"], np.linalg.eigvalsh(a0)) < 1e-13


def test_htev_tridiagonal_two_per_block(gpu):
    kernels, cc = gpu
    s = C.eig_svd("htev", cc)
    assert s.batches_per_block == 2 and s.e_shape == (2, s.m - 1)
    blocks, n = 4, s.m
    r = _rng(33)
    d, e = r.standard_normal((2 * blocks, n)), r.standard_normal((2 * blocks, n - 1))
    t = np.stack([np.diag(di) + np.diag(ei, 1) + np.diag(ei, -1) for di, ei in zip(d, e)])
    got = _run(kernels, s, blocks, d=_pack(s, "d", d), e=_pack(s, "e", e),
               v=np.zeros((blocks, s.size_of("v"))), info=np.zeros((blocks, 2), np.int32))
    lam = _unpack(s, "d", got["d"], n)
    v = _unpack(s, "v", got["v"], n, n)
    assert (got["info"] == 0).all()
    assert _rel(lam, np.linalg.eigvalsh(t)) < 1e-13
    assert _rel(t @ v, v * lam[:, None, :]) < 1e-12


def test_gesvd_some_vectors(gpu):
    kernels, cc = gpu
    s = C.eig_svd("gesvd", cc)
    blocks, (m, n) = 5, s.size[:2]
    k = min(m, n)
    a0 = _rng(34).standard_normal((blocks, m, n))
    got = _run(kernels, s, blocks, a=_pack(s, "a", a0), s=np.zeros((blocks, k)),
               u=np.zeros((blocks, s.size_of("u"))), vt=np.zeros((blocks, s.size_of("vt"))),
               info=np.zeros((blocks, 1), np.int32))
    sv = got["s"]
    u, vt = _unpack(s, "u", got["u"], m, k), _unpack(s, "vt", got["vt"], k, n)
    assert (got["info"] == 0).all()
    assert _rel(sv, np.linalg.svd(a0, compute_uv=False)) < 1e-13
    assert _rel((u * sv[:, None, :]) @ vt, a0) < 1e-12


def test_bdsvd_bidiagonal(gpu):
    kernels, cc = gpu
    s = C.eig_svd("bdsvd", cc)
    blocks, n = 4, s.m
    r = _rng(35)
    d, e = r.standard_normal((blocks, n)), r.standard_normal((blocks, n - 1))
    upper = np.stack([np.diag(di) + np.diag(ei, 1) for di, ei in zip(d, e)])
    got = _run(kernels, s, blocks, d=_pack(s, "d", d), e=_pack(s, "e", e), u=np.zeros((blocks, n * n)),
               vt=np.zeros((blocks, n * n)), info=np.zeros((blocks, 1), np.int32))
    sv = _unpack(s, "d", got["d"], n)
    assert (got["info"] == 0).all()
    ref = np.linalg.svd(upper, compute_uv=False)
    assert _rel(np.sort(np.abs(sv), axis=1)[:, ::-1], ref) < 1e-13
    u, vt = _unpack(s, "u", got["u"], n, n), _unpack(s, "vt", got["vt"], n, n)
    rec = (u * sv[:, None, :]) @ vt
    assert min(_rel(rec, upper), _rel(rec, upper.transpose(0, 2, 1))) < 1e-12  # upper (or lower) bidiagonal


def test_hegv_generalized_eigenproblem(gpu):
    import scipy.linalg

    kernels, cc = gpu
    s = C.eig_svd("hegv", cc)
    blocks, n = 4, s.m
    r = _rng(36)
    a0 = _sym(r, blocks, n)
    x = r.standard_normal((blocks, n, n))
    b0 = x @ x.transpose(0, 2, 1) + n * np.eye(n)
    got = _run(kernels, s, blocks, a=_pack(s, "a", a0), b=_pack(s, "b", b0),
               **{"lambda": np.zeros((blocks, n)), "info": np.zeros((blocks, 1), np.int32)})
    assert (got["info"] == 0).all()
    ref = np.stack([scipy.linalg.eigh(a0[i], b0[i], eigvals_only=True) for i in range(blocks)])
    lam, v = got["lambda"], _unpack(s, "a", got["a"], n, n)
    assert _rel(lam, ref) < 1e-12
    assert _rel(a0 @ v, (b0 @ v) * lam[:, None, :]) < 1e-11


def test_gtsv_tridiagonal_solve(gpu):
    kernels, cc = gpu
    s = C.eig_svd("gtsv", cc)
    blocks, n, k = 6, s.m, s.k
    r = _rng(37)
    dl, du = r.standard_normal((blocks, n - 1)), r.standard_normal((blocks, n - 1))
    d = 4 + r.random((blocks, n))  # diagonally dominant: no pivoting needed
    a = np.stack([np.diag(d[i]) + np.diag(dl[i], -1) + np.diag(du[i], 1) for i in range(blocks)])
    b = r.standard_normal((blocks, n, k))
    got = _run(kernels, s, blocks, dl=dl, d=d, du=du, b=_pack(s, "b", b), info=np.zeros((blocks, 1), np.int32))
    assert (got["info"] == 0).all()
    assert _rel(_unpack(s, "b", got["b"], n, k), np.linalg.solve(a, b)) < 1e-13
