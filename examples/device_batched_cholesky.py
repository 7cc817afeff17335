"""Batched Cholesky solves, one small SPD system per block, with cuSOLVERDx through cumath.device.CholeskySolver:
factorize A = L L^T in shared memory, then solve A X = B. Checked against numpy.linalg.solve. Needs a GPU and the
dx extra (``pip install "cumath[dx]"``); exits cleanly without them."""
import sys

import numpy as np

import cumath.device as dev

reason = dev.unavailable_reason("gpu", "numba", "mathdx")
if reason:
    print(f"skipped: {reason}")
    sys.exit(0)

from numba import cuda  # noqa: E402

n, nrhs, batch = 24, 2, 1000
solver = dev.CholeskySolver((n, n, nrhs), np.float64, "Block", "lower")
LDA, LDB, NA, NB = solver.lda, solver.ldb, solver.a_size(), solver.b_size()
NT = solver.block_dim.x * solver.block_dim.y * solver.block_dim.z


@cuda.jit(link=solver.files)
def solve_batched(a, b, info):
    bi = cuda.blockIdx.x
    sa = cuda.shared.array(NA, dtype=np.float64)
    sb = cuda.shared.array(NB, dtype=np.float64)
    t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
    for e in range(t, n * n, NT):  # column-major, leading dimension lda
        sa[e % n + (e // n) * LDA] = a[bi, e % n, e // n]
    for e in range(t, n * nrhs, NT):
        sb[e % n + (e // n) * LDB] = b[bi, e % n, e // n]
    cuda.syncthreads()
    solver.factorize(sa, info[bi:])
    solver.solve(sa, sb)
    cuda.syncthreads()
    for e in range(t, n * nrhs, NT):
        b[bi, e % n, e // n] = sb[e % n + (e // n) * LDB]


rng = np.random.default_rng(2)
m = rng.standard_normal((batch, n, n))
a = m @ m.transpose(0, 2, 1) + n * np.eye(n)  # symmetric positive definite
b = rng.standard_normal((batch, n, nrhs))
b_d, info = cuda.to_device(b), cuda.device_array(batch, dtype=np.int32)
solve_batched[batch, solver.block_dim](cuda.to_device(a), b_d, info)
assert (info.copy_to_host() == 0).all(), "a factorization failed"
x = b_d.copy_to_host()
err = np.linalg.norm(x - np.linalg.solve(a, b)) / np.linalg.norm(x)
print(f"{batch} Cholesky solves of {n}x{n} with {nrhs} right-hand sides: relative error {err:.2e}")
assert err < 1e-10
