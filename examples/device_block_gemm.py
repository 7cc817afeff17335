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
                arrangement=("row_major", "row_major", "row_major"))
SA, SB, SC, NT = MM.a_size, MM.b_size, MM.c_size, MM.block_size
# The tiles are dense (leading dimensions k, n, n), so a block's tile is one contiguous run of a flat
# (batch, rows * cols) view of a C-order batch. Loops with a constant trip count let each thread issue all its
# loads at once (loops over range(t, size, NT) issue them one after another: 2.4x slower at 65,536 GEMMs).
assert tuple(MM.leading_dimension) == (k, n, n) and m * k % NT == 0 and k * n % NT == 0 and m * n % NT == 0
PA, PB, PC = m * k // NT, k * n // NT, m * n // NT


@cuda.jit(link=MM.files)
def gemm_batched(a, b, c, alpha, beta):
    bi = cuda.blockIdx.x
    sa = cuda.shared.array(SA, dtype=np.float32)
    sb = cuda.shared.array(SB, dtype=np.float32)
    sc = cuda.shared.array(SC, dtype=np.float32)
    t = cuda.threadIdx.x
    for j in range(PA):
        sa[t + j * NT] = a[bi, t + j * NT]
    for j in range(PB):
        sb[t + j * NT] = b[bi, t + j * NT]
    for j in range(PC):
        sc[t + j * NT] = c[bi, t + j * NT]
    cuda.syncthreads()
    MM(alpha, sa, sb, beta, sc)
    cuda.syncthreads()
    for j in range(PC):
        c[bi, t + j * NT] = sc[t + j * NT]


rng = np.random.default_rng(1)
a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((batch, m, k), (batch, k, n), (batch, m, n)))
c_d = cuda.to_device(c.reshape(batch, -1))
gemm_batched[batch, MM.block_dim](cuda.to_device(a.reshape(batch, -1)), cuda.to_device(b.reshape(batch, -1)), c_d,
                                  2.0, 0.5)
ref = 2.0 * (a.astype(np.float64) @ b) + 0.5 * c
err = np.linalg.norm(c_d.copy_to_host().reshape(batch, m, n) - ref) / np.linalg.norm(ref)
print(f"{batch} GEMMs of {m}x{n}x{k}: relative error {err:.2e}")
assert err < 1e-5
