"""Batched small GEMMs, one per block, with cuBLASDx through cumath.device.Matmul: each block loads its A, B and
C tiles into shared memory, computes C = alpha A B + beta C with all its threads, and stores C. Checked against
NumPy. Needs a GPU and the dx extra (``pip install "cumath[dx]"``); exits cleanly without them."""
import sys

import numpy as np

import cumath.device as dev

reason = dev.unavailable_reason("gpu", "numba", "mathdx")
if reason:
    print(f"skipped: {reason}")
    sys.exit(0)

from numba import cuda  # noqa: E402

m = n = k = 32
batch = 2048
MM = dev.Matmul(size=(m, n, k), precision=np.float32, data_type="real", block_size=128,
                arrangement=("col_major", "col_major", "col_major"))
LDA, LDB, LDC = MM.leading_dimension
SA, SB, SC, NT = MM.a_size, MM.b_size, MM.c_size, MM.block_size


@cuda.jit(link=MM.files)
def gemm_batched(a, b, c, alpha, beta):
    bi = cuda.blockIdx.x
    sa = cuda.shared.array(SA, dtype=np.float32)
    sb = cuda.shared.array(SB, dtype=np.float32)
    sc = cuda.shared.array(SC, dtype=np.float32)
    t = cuda.threadIdx.x
    for e in range(t, m * k, NT):  # column-major tiles
        sa[e % m + (e // m) * LDA] = a[bi, e % m, e // m]
    for e in range(t, k * n, NT):
        sb[e % k + (e // k) * LDB] = b[bi, e % k, e // k]
    for e in range(t, m * n, NT):
        sc[e % m + (e // m) * LDC] = c[bi, e % m, e // m]
    cuda.syncthreads()
    MM(alpha, sa, sb, beta, sc)
    cuda.syncthreads()
    for e in range(t, m * n, NT):
        c[bi, e % m, e // m] = sc[e % m + (e // m) * LDC]


rng = np.random.default_rng(1)
a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((batch, m, k), (batch, k, n), (batch, m, n)))
c_d = cuda.to_device(c)
gemm_batched[batch, MM.block_dim](cuda.to_device(a), cuda.to_device(b), c_d, 2.0, 0.5)
ref = 2.0 * (a.astype(np.float64) @ b) + 0.5 * c
err = np.linalg.norm(c_d.copy_to_host() - ref) / np.linalg.norm(ref)
print(f"{batch} GEMMs of {m}x{n}x{k}: relative error {err:.2e}")
assert err < 1e-5
