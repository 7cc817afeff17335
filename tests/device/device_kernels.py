"""numba-cuda kernels over the device objects, shared by the GPU tests (which launch them) and the CPU tests (which
type and compile them for sm_90, so a GPU session meets no typing surprise). Importing this module imports numba."""

import math

import numpy as np
from numba import cuda

from cumath.device import random

_EXTENSIONS = random.Compile(cc=90).extension  # passes States objects to kernels (the same for every cc)


# ------------------------------------------------------------------------------------------------------ FFT

def fft_block_kernel(f):
    """Batched block FFT: row ``blockIdx.x * ffts_per_block + threadIdx.y`` of ``x`` to the same row of ``y``.

    c2c rows have ``size`` complex values; r2c reads ``size`` reals and writes ``output_length`` complex values;
    c2r reads ``input_length`` complex values and writes ``size`` reals."""
    vt = f.value_type
    fpb, stride, storage = f.ffts_per_block, f.stride, f.storage_size
    in_ept, out_ept = f.input_elements_per_thread, f.output_elements_per_thread
    in_len, out_len = f.input_length, f.output_length
    real_in, real_out = f.fft_type == "r2c", f.fft_type == "c2r"

    @cuda.jit
    def kernel(x, y):
        row = cuda.blockIdx.x * fpb + cuda.threadIdx.y
        td = cuda.local.array(storage, dtype=vt)
        smem = cuda.shared.array(0, dtype=vt)
        # real data sit in thread_data as consecutive reals: real i is the real (even i) or imaginary (odd i)
        # part of complex i // 2 (written without .view(), which numba-cuda cannot compile without a GPU)
        if row < x.shape[0]:
            for i in range(in_ept):
                idx = cuda.threadIdx.x + i * stride
                if idx < in_len:
                    if real_in:
                        old = td[i // 2]
                        v = x[row, idx].real
                        td[i // 2] = complex(v, old.imag) if i % 2 == 0 else complex(old.real, v)
                    else:
                        td[i] = x[row, idx]
        f.execute(td, smem)
        if row < y.shape[0]:
            for i in range(out_ept):
                idx = cuda.threadIdx.x + i * stride
                if idx < out_len:
                    if real_out:
                        y[row, idx] = td[i // 2].real if i % 2 == 0 else td[i // 2].imag
                    else:
                        y[row, idx] = td[i]

    return kernel


def fft_thread_kernel(f):
    """One c2c FFT per thread, rows of ``x`` to rows of ``y``."""
    vt, n, storage = f.value_type, f.size, f.storage_size

    @cuda.jit
    def kernel(x, y):
        row = cuda.grid(1)
        if row >= x.shape[0]:
            return
        td = cuda.local.array(storage, dtype=vt)
        for i in range(n):
            td[i] = x[row, i]
        f(td)
        for i in range(n):
            y[row, i] = td[i]

    return kernel


def fft_convolution_kernel(fwd, inv):
    """y = ifft(fft(x) * h) per row, both transforms in one kernel (c2c, ffts_per_block rows per block)."""
    vt = fwd.value_type
    fpb, stride, storage, ept, n = fwd.ffts_per_block, fwd.stride, fwd.storage_size, fwd.elements_per_thread, fwd.size

    @cuda.jit
    def kernel(x, h, y):
        row = cuda.blockIdx.x * fpb + cuda.threadIdx.y
        td = cuda.local.array(storage, dtype=vt)
        smem = cuda.shared.array(0, dtype=vt)
        if row < x.shape[0]:
            for i in range(ept):
                td[i] = x[row, cuda.threadIdx.x + i * stride]
        fwd(td, smem)
        for i in range(ept):
            td[i] = td[i] * h[cuda.threadIdx.x + i * stride] / n
        inv(td, smem)
        if row < y.shape[0]:
            for i in range(ept):
                y[row, cuda.threadIdx.x + i * stride] = td[i]

    return kernel


# ----------------------------------------------------------------------------------------------------- GEMM

def gemm_kernel(mm):
    """One GEMM per block: c[b] = alpha * a[b] @ b[b] + beta * c[b] (a, b, c of shape (batch, rows, cols), C order;
    the tiles are column-major with the object's leading dimensions)."""
    (m, k), (_, n) = mm.a_dim, mm.b_dim
    lda, ldb, ldc = mm.leading_dimension
    a_size, b_size, c_size = mm.a_size, mm.b_size, mm.c_size
    vt = mm.c_value_type
    nthreads = mm.block_size

    @cuda.jit
    def kernel(a, b, c, alpha, beta):
        batch = cuda.blockIdx.x
        sa = cuda.shared.array(a_size, dtype=vt)
        sb = cuda.shared.array(b_size, dtype=vt)
        sc = cuda.shared.array(c_size, dtype=vt)
        t = cuda.threadIdx.x
        for e in range(t, m * k, nthreads):
            sa[e % m + (e // m) * lda] = a[batch, e % m, e // m]
        for e in range(t, k * n, nthreads):
            sb[e % k + (e // k) * ldb] = b[batch, e % k, e // k]
        for e in range(t, m * n, nthreads):
            sc[e % m + (e // m) * ldc] = c[batch, e % m, e // m]
        cuda.syncthreads()
        mm(alpha, sa, sb, beta, sc)
        cuda.syncthreads()
        for e in range(t, m * n, nthreads):
            c[batch, e % m, e // m] = sc[e % m + (e // m) * ldc]

    return kernel


# -------------------------------------------------------------------------------------------------- solvers

def solve_kernel(s, pivot: bool):
    """Batched solve of a[b] x = rhs[b] (one problem per block, column-major tiles): Cholesky or LU factorize, then
    solve; x overwrites rhs, the factor overwrites a, info[b] gets the status."""
    n, nrhs = s.m, s.k
    lda, ldb = s.lda, s.ldb
    a_size, b_size = s.a_size(), s.b_size()
    vt = s.value_type
    nthreads = s.block_dim[0] * s.block_dim[1] * s.block_dim[2]

    @cuda.jit
    def kernel(a, rhs, info):
        batch = cuda.blockIdx.x
        sa = cuda.shared.array(a_size, dtype=vt)
        sb = cuda.shared.array(b_size, dtype=vt)
        ipiv = cuda.shared.array(n, dtype=np.int32)
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        for e in range(t, n * n, nthreads):
            sa[e % n + (e // n) * lda] = a[batch, e % n, e // n]
        for e in range(t, n * nrhs, nthreads):
            sb[e % n + (e // n) * ldb] = rhs[batch, e % n, e // n]
        cuda.syncthreads()
        if pivot:
            s.factorize(sa, ipiv, info[batch:])
            s.solve(sa, ipiv, sb)
        else:
            s.factorize(sa, info[batch:])
            s.solve(sa, sb)
        cuda.syncthreads()
        for e in range(t, n * nrhs, nthreads):
            rhs[batch, e % n, e // n] = sb[e % n + (e // n) * ldb]
        for e in range(t, n * n, nthreads):
            a[batch, e % n, e // n] = sa[e % n + (e // n) * lda]

    return kernel


# ------------------------------------------------------------------------------------------------- random

def init_pseudo_kernel(link):
    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, seed, offset):
        i = cuda.grid(1)
        if i < states.shape[0]:
            random.init(seed, i, offset, states[i])

    return kernel


def init_sobol_kernel(link, scrambled: bool):
    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, vectors, constants, offset):
        i = cuda.grid(1)
        if i < states.shape[0]:
            if scrambled:
                random.init(vectors[i], constants[i], offset, states[i])
            else:
                random.init(vectors[i], offset, states[i])

    return kernel


def sample_kernel(link, fn, width: int, params=()):
    """Each thread draws ``per_thread`` results of ``fn(state, *params)`` (``width`` values each) into its slice
    of ``out`` (thread i writes out[i * per_thread * width:...])."""
    p0 = params[0] if params else 0.0
    p1 = params[1] if len(params) > 1 else 0.0
    nparams = len(params)

    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, out, per_thread):
        i = cuda.grid(1)
        if i >= states.shape[0]:
            return
        base = i * per_thread * width
        for k in range(per_thread):
            if nparams == 0:
                v = fn(states[i])
            elif nparams == 1:
                v = fn(states[i], p0)
            else:
                v = fn(states[i], p0, p1)
            if width == 1:
                out[base + k] = v
            elif width == 2:
                out[base + 2 * k] = v.x
                out[base + 2 * k + 1] = v.y
            else:
                out[base + 4 * k] = v.x
                out[base + 4 * k + 1] = v.y
                out[base + 4 * k + 2] = v.z
                out[base + 4 * k + 3] = v.w

    return kernel


def skipahead_kernel(link, skip):
    """out[i] = the first rand() after skip(n, state) (``skip`` is random.skipahead or skipahead_sequence)."""

    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, n, out):
        i = cuda.grid(1)
        if i < states.shape[0]:
            skip(n, states[i])
            out[i] = random.rand(states[i])

    return kernel


def gbm_kernel(link):
    """Geometric Brownian motion, one path per thread, four steps per normal4 draw (the issue's figure)."""

    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, paths, nsteps, mu, sigma, s0):
        i = cuda.grid(1)
        if i >= paths.shape[0]:
            return
        s = s0
        paths[i, 0] = s
        for t in range(1, nsteps, 4):
            v = random.normal4(states[i])
            vals = (v.x, v.y, v.z, v.w)
            for j in range(4):
                if t + j < nsteps:
                    s = s * math.exp(mu + sigma * vals[j])
                    paths[i, t + j] = s

    return kernel


def least_squares_kernel(s):
    """gels: min ||a[b] x - rhs[b]|| for tall a (m x n), one problem per block; x lands in rhs[b][:n]."""
    m, n, k = s.m, s.n, s.k
    lda, ldb = s.lda, s.ldb
    a_size, b_size, tau_n = s.a_size(), s.b_size(), s.tau_size()
    vt = s.value_type
    nthreads = s.block_dim[0] * s.block_dim[1] * s.block_dim[2]

    @cuda.jit
    def kernel(a, rhs):
        batch = cuda.blockIdx.x
        sa = cuda.shared.array(a_size, dtype=vt)
        sb = cuda.shared.array(b_size, dtype=vt)
        tau = cuda.shared.array(tau_n, dtype=vt)
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        for e in range(t, m * n, nthreads):
            sa[e % m + (e // m) * lda] = a[batch, e % m, e // m]
        for e in range(t, m * k, nthreads):
            sb[e % m + (e // m) * ldb] = rhs[batch, e % m, e // m]
        cuda.syncthreads()
        s.solve(sa, tau, sb)
        cuda.syncthreads()
        for e in range(t, m * k, nthreads):
            rhs[batch, e % m, e // m] = sb[e % m + (e // m) * ldb]

    return kernel


def triangular_solve_kernel(s):
    """trsm (left side): a[b] x = rhs[b] with a triangular (m x m), rhs m x n; x overwrites rhs."""
    m, n = s.m, s.n
    lda, ldb = s.lda, s.ldb
    a_size, b_size = s.a_size(), s.b_size()
    vt = s.value_type
    nthreads = s.block_dim[0] * s.block_dim[1] * s.block_dim[2]

    @cuda.jit
    def kernel(a, rhs):
        batch = cuda.blockIdx.x
        sa = cuda.shared.array(a_size, dtype=vt)
        sb = cuda.shared.array(b_size, dtype=vt)
        t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
        for e in range(t, m * m, nthreads):
            sa[e % m + (e // m) * lda] = a[batch, e % m, e // m]
        for e in range(t, m * n, nthreads):
            sb[e % m + (e // m) * ldb] = rhs[batch, e % m, e // m]
        cuda.syncthreads()
        s.solve(sa, sb)
        cuda.syncthreads()
        for e in range(t, m * n, nthreads):
            rhs[batch, e % m, e // m] = sb[e % m + (e // m) * ldb]

    return kernel
