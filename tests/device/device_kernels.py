"""numba-cuda kernels over the device objects, shared by the GPU tests (which launch them) and the CPU tests (which
type and compile them for sm_90, so a GPU session meets no typing surprise). Importing this module imports numba.

Every factory is memoised on its arguments (device objects by their generated symbols, functions by name), so
a kernel is built once per process however many tests launch it: numba then compiles it once per argument
types, instead of once per call of the factory.
"""

import functools
import math

import numpy as np
from numba import cuda

from cumath.device import (axpby, clear, copy, copy_fragment, copy_wait, float16x2, float16x4, make_tensor,
                           random)

_EXTENSIONS = random.Compile(cc=90).extension  # passes States objects to kernels (the same for every cc)
_KERNELS: dict = {}


def _key(v):
    if hasattr(v, "_numba_key"):
        return ("device", type(v).__name__, v._numba_key)
    if isinstance(v, (list, tuple)):
        return tuple(_key(x) for x in v)
    if callable(v):
        return ("fn", getattr(v, "__module__", None), getattr(v, "__name__", repr(v)))
    return v


def memoised(factory):
    """Build each kernel once per process (keyed by the factory's arguments)."""

    @functools.wraps(factory)
    def wrapper(*args):
        key = (factory.__name__, _key(args))
        k = _KERNELS.get(key)
        if k is None:
            k = _KERNELS[key] = factory(*args)
        return k

    return wrapper


# ------------------------------------------------------------------------------------------------------ FFT

@memoised
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


@memoised
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


@memoised
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

@memoised
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

@memoised
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

@memoised
def init_pseudo_kernel(link):
    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, seed, offset):
        i = cuda.grid(1)
        if i < states.shape[0]:
            random.init(seed, i, offset, states[i])

    return kernel


@memoised
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


@memoised
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


@memoised
def local_state_kernel(link, generator):
    """Like sample_kernel(link, random.normal2, 2), drawing from a copy of the state in a local record (the
    register idiom of examples/device_gbm_monte_carlo.py), stored back at the end."""
    state_dt = random.state_dtype(generator)

    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, out, per_thread):
        i = cuda.grid(1)
        if i >= states.shape[0]:
            return
        st = cuda.local.array(1, dtype=state_dt)
        st[0] = states[i]
        base = i * per_thread * 2
        for k in range(per_thread):
            v = random.normal2(st[0])
            out[base + 2 * k] = v.x
            out[base + 2 * k + 1] = v.y
        states[i] = st[0]

    return kernel


@memoised
def skipahead_kernel(link, skip):
    """out[i] = the first rand() after skip(n, state) (``skip`` is random.skipahead or skipahead_sequence)."""

    @cuda.jit(link=link, extensions=_EXTENSIONS)
    def kernel(states, n, out):
        i = cuda.grid(1)
        if i < states.shape[0]:
            skip(n, states[i])
            out[i] = random.rand(states[i])

    return kernel


@memoised
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


@memoised
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


@memoised
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


# ------------------------------------------------------------------------------------ FFT: more APIs, half

@memoised
def fft_smem_kernel(f):
    """Block c2c FFT with the shared-memory API: FFT ``threadIdx.y`` of the block at ``smem[fft * size:]``."""
    vt, fpb, stride, ept, n = f.value_type, f.ffts_per_block, f.stride, f.elements_per_thread, f.size

    @cuda.jit
    def kernel(x, y):
        smem = cuda.shared.array(0, dtype=vt)
        local = cuda.threadIdx.y
        row = cuda.blockIdx.x * fpb + local
        for i in range(ept):
            idx = cuda.threadIdx.x + i * stride
            if idx < n:
                smem[local * n + idx] = x[row, idx]
        cuda.syncthreads()
        f.execute(smem)
        cuda.syncthreads()
        for i in range(ept):
            idx = cuda.threadIdx.x + i * stride
            if idx < n:
                y[row, idx] = smem[local * n + idx]

    return kernel


@memoised
def fft_half_kernel(f):
    """Half-precision block FFT, two FFTs per thread row (implicit type batching): rows 2p and 2p + 1 of ``x`` go
    to rows 2p and 2p + 1 of ``y``, p = blockIdx.x * (ffts_per_block // 2) + threadIdx.y. Complex data are
    float16 arrays of shape (batch, length, 2) (real, imaginary); real data (batch, length)."""
    vt, pairs, stride, storage = f.value_type, f.ffts_per_block // 2, f.stride, f.storage_size
    in_ept, out_ept, in_len, out_len = (f.input_elements_per_thread, f.output_elements_per_thread, f.input_length,
                                        f.output_length)
    real_in, real_out = f.fft_type == "r2c", f.fft_type == "c2r"

    @cuda.jit
    def kernel(x, y):
        r0 = 2 * (cuda.blockIdx.x * pairs + cuda.threadIdx.y)
        r1 = r0 + 1
        td = cuda.local.array(storage, dtype=vt)
        smem = cuda.shared.array(0, dtype=vt)
        for i in range(in_ept):
            idx = cuda.threadIdx.x + i * stride
            if idx < in_len:
                if real_in:  # real i: the real (even i) or imaginary (odd i) half2 of complex i // 2
                    old = td[i // 2]
                    if i % 2 == 0:
                        td[i // 2] = float16x4(x[r0, idx], x[r1, idx], old.z, old.w)
                    else:
                        td[i // 2] = float16x4(old.x, old.y, x[r0, idx], x[r1, idx])
                else:
                    td[i] = float16x4(x[r0, idx, 0], x[r1, idx, 0], x[r0, idx, 1], x[r1, idx, 1])
        f.execute(td, smem)
        for i in range(out_ept):
            idx = cuda.threadIdx.x + i * stride
            if idx < out_len:
                v = td[i // 2] if real_out else td[i]
                if real_out:
                    h = float16x2(v.x, v.y) if i % 2 == 0 else float16x2(v.z, v.w)
                    y[r0, idx] = h.x
                    y[r1, idx] = h.y
                else:
                    y[r0, idx, 0] = v.x
                    y[r1, idx, 0] = v.y
                    y[r0, idx, 1] = v.z
                    y[r1, idx, 1] = v.w

    return kernel


@memoised
def fft_half_thread_kernel(f):
    """Half-precision thread FFT: thread t computes rows 2t and 2t + 1 (complex data as in fft_half_kernel)."""
    vt, n, storage = f.value_type, f.size, f.storage_size

    @cuda.jit
    def kernel(x, y):
        r0 = 2 * cuda.grid(1)
        if r0 + 1 >= x.shape[0]:
            return
        td = cuda.local.array(storage, dtype=vt)
        for i in range(n):
            td[i] = float16x4(x[r0, i, 0], x[r0 + 1, i, 0], x[r0, i, 1], x[r0 + 1, i, 1])
        f(td)
        for i in range(n):
            v = td[i]
            y[r0, i, 0] = v.x
            y[r0 + 1, i, 0] = v.y
            y[r0, i, 1] = v.z
            y[r0 + 1, i, 1] = v.w

    return kernel


# ------------------------------------------------------------------------------------ GEMM: tensor API

def _round_up(n, m):
    return -(-n // m) * m


@memoised
def gemm_tensor_kernel(mm):
    """Suggested shared layouts, a register fragment from the suggested partitioner, axpby and copy_fragment:
    out[b] = alpha * a[b] @ b[b] + beta * c[b] (a, b, c flat per block in their arrangements), and ``where[b]``
    gets the same result written element by element through map_fragment_index (row, column)."""
    al, bl, cl = mm.suggest_layout_smem_a(), mm.suggest_layout_smem_b(), mm.suggest_layout_rmem_c()
    a_bytes = al.cosize * al.dtype.itemsize
    b_off = _round_up(a_bytes, max(bl.alignment, 16))
    b_end = b_off + bl.cosize * bl.dtype.itemsize
    ccos, c_size, cvt = cl.cosize, cl.size, mm.c_value_type

    @cuda.jit
    def kernel(alpha, a, b, beta, c, out, where):
        bi = cuda.blockIdx.x
        smem = cuda.shared.array(0, dtype=np.uint8)
        sa = make_tensor(smem[:a_bytes], al)
        sb = make_tensor(smem[b_off:b_end], bl)
        copy(make_tensor(a[bi], mm.get_layout_gmem_a()), sa)
        copy(make_tensor(b[bi], mm.get_layout_gmem_b()), sb)
        part = mm.suggest_partitioner()
        acc = part.make_accumulator_fragment()
        clear(acc)
        copy_wait()
        mm.execute(sa, sb, acc)
        dbuf = cuda.local.array(ccos, dtype=cvt)
        d = make_tensor(dbuf, cl)
        copy_fragment(make_tensor(c[bi], mm.get_layout_gmem_c()), d)
        axpby(alpha, acc, beta, d)
        copy_fragment(d, make_tensor(out[bi], mm.get_layout_gmem_c()))
        if part.is_thread_active():
            for i in range(c_size):
                if (not part.is_predicated()) or part.is_index_in_bounds(i):
                    row, col = part.map_fragment_index(i)
                    where[bi, row, col] = dbuf[i]

    return kernel, b_end


@memoised
def gemm_accumulator_kernel(mm):
    """Plain shared layouts and the accumulator API: out[b] = alpha * a[b] @ b[b] + beta * c[b]."""
    al, bl = mm.get_layout_smem_a(), mm.get_layout_smem_b()
    vt = mm.a_value_type
    b_off = _round_up(al.cosize, 2)
    b_end = b_off + bl.cosize

    @cuda.jit
    def kernel(alpha, a, b, beta, c, out):
        bi = cuda.blockIdx.x
        smem = cuda.shared.array(0, dtype=vt)
        sa = make_tensor(smem[:al.cosize], mm.get_layout_smem_a())
        sb = make_tensor(smem[b_off:b_end], mm.get_layout_smem_b())
        copy(make_tensor(a[bi], mm.get_layout_gmem_a()), sa)
        copy(make_tensor(b[bi], mm.get_layout_gmem_b()), sb)
        copy_wait()
        acc = mm.get_accumulator()
        mm.execute(sa, sb, acc)
        cfrag = acc.make_partition_and_copy(make_tensor(c[bi], mm.get_layout_gmem_c()))
        axpby(alpha, acc.get_results(), beta, cfrag)
        acc.partition_and_copy(cfrag, make_tensor(out[bi], mm.get_layout_gmem_c()))

    return kernel, b_end * np.dtype(vt).itemsize


@memoised
def gemm_smem_c_kernel(mm):
    """C in (suggested) shared memory: execute(alpha, a, b, beta, c), then C copied out (in place in c)."""
    al, bl, cl = mm.suggest_layout_smem_a(), mm.suggest_layout_smem_b(), mm.suggest_layout_smem_c()
    vt = mm.c_value_type
    b_off = _round_up(al.cosize, 2)
    c_off = _round_up(b_off + bl.cosize, 2)
    c_end = c_off + cl.cosize

    @cuda.jit
    def kernel(alpha, a, b, beta, c):
        bi = cuda.blockIdx.x
        smem = cuda.shared.array(0, dtype=vt)
        sa = make_tensor(smem[:al.cosize], al)
        sb = make_tensor(smem[b_off:c_off], bl)
        sc = make_tensor(smem[c_off:c_end], cl)
        gc = make_tensor(c[bi], mm.get_layout_gmem_c())
        copy(make_tensor(a[bi], mm.get_layout_gmem_a()), sa)
        copy(make_tensor(b[bi], mm.get_layout_gmem_b()), sb)
        copy(gc, sc)
        copy_wait()
        mm.execute(alpha, sa, sb, beta, sc)
        cuda.syncthreads()
        copy(sc, gc)
        copy_wait()

    return kernel, c_end * np.dtype(vt).itemsize


# ----------------------------------------------------------------------------------- solvers: any function

@memoised
def flat_solver_kernel(s):
    """``s.execute`` on operands held per block as flat arrays in their shared-memory storage (``g_<name>`` of
    shape (blocks, s.size_of(name)); ``info``: (blocks, batches_per_block) int32; the workspace stays in shared
    memory): loaded, solved, stored back. Built from the solver's parameter list."""
    params = s.execute_parameters
    dtypes = {"info": "int32"}
    for p, kind in s._params(s._function_names[0]):
        dtypes[p] = {"v": s.value_type.name, "w": s.value_type.name, "r": s._precision, "i": "int32"}[kind]
    nt = s.block_dim[0] * s.block_dim[1] * s.block_dim[2]
    lines = [f"def kernel({', '.join('g_' + p for p in params if p != 'workspace')}):",
             "    blk = cuda.blockIdx.x",
             "    t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)"]
    args, stores = [], []
    for p in params:
        if p == "info":
            args.append("g_info[blk]")
            continue
        n = max(s.size_of(p), 1)
        lines.append(f"    s_{p} = cuda.shared.array({n}, dtype=np.{dtypes[p]})")
        args.append(f"s_{p}")
        if p != "workspace":
            lines.append(f"    for e in range(t, {s.size_of(p)}, {nt}):\n        s_{p}[e] = g_{p}[blk, e]")
            stores.append(f"    for e in range(t, {s.size_of(p)}, {nt}):\n        g_{p}[blk, e] = s_{p}[e]")
    lines += ["    cuda.syncthreads()", f"    S.execute({', '.join(args)})", "    cuda.syncthreads()"] + stores
    namespace = {"cuda": cuda, "np": np, "S": s}
    exec(compile("\n".join(lines), f"<flat_solver_kernel {s.execute_parameters}>", "exec"), namespace)
    return cuda.jit(namespace["kernel"])
