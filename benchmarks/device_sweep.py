"""Configuration sweep behind benchmarks/device.py's kernels (issue 5): which launch shapes and kernel forms reach
the figures. Exploration, not the figures themselves; what it showed is in benchmarks/NOTES.md.

- GBM: the state used in place in global memory (``states[i]`` on every draw) against a copy in a local record
  (loaded once, stored back once), at 64/128/256 threads per block, with and without fastmath.
- Block FFT (2^20 x 128 complex64): elements per thread x FFTs per block, each against cuFFT through CuPy
  ("fft"); persistent blocks with prefetch ("fft2"); rows staged through shared memory ("fft3"); one vector
  access per element with PTX cache operators ("fft4").
- Block GEMM (65536 x 32^3 float32): element loops with a run-time trip count (the first benchmark), loops with a
  constant trip count (each thread's loads in flight together), 64/128/256 threads, and the tensor API
  (cooperative copies into the suggested shared layouts, register accumulator stored straight to global memory).

    python benchmarks/device_sweep.py [--json out.json] [--only gbm|fft|fft2|fft3|fft4|gemm]
    python benchmarks/device_sweep.py --compile-only [--jobs N]

``--compile-only`` builds every kernel for sm_90 without a GPU (numba-cuda + nvJitLink), N processes at a time,
filling the device-code cache (CUMATH_CACHE_DIR), so the timed run spends no time on code generation.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from cumath._core.timing import time_interleaved  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from device import fft_kernels, gbm_kernels, gemm_kernel, run_sections  # noqa: E402  (benchmarks/device.py: the kernels)

ROWS: list[dict] = []
CC = (9, 0)


def report(section, name, us, **extra):
    ROWS.append({"section": section, "name": name, "us": us, **extra})
    more = "".join(f"  {k}={v:.3g}" if isinstance(v, float) else f"  {k}={v}" for k, v in extra.items())
    print(f"  {name:<44s} {us:10.1f} us{more}", flush=True)


def medians(fns, sync, number=10, rounds=11):
    return {k: v.median * 1e6 for k, v in time_interleaved(fns, sync=sync, number=number, rounds=rounds).items()}


def compile_only(kernel, argtypes):
    from numba.cuda.compiler import _compile_pyfunc_with_fixup

    lib, _ = _compile_pyfunc_with_fixup(kernel.py_func, tuple(argtypes), device=False, cc=CC, abi="numba", lto=True)
    lib._lto = True
    lib.get_cubin(cc=CC)


# ------------------------------------------------------------------------------------------------------ GBM

GBM_NAMES = ("in_place", "register", "in_place+fastmath", "register+fastmath")


def all_gbm_kernels(cuda, cc):
    from cumath.device import random

    compiled = random.Compile(cc=cc)
    kernels = {k: v for k, v in gbm_kernels(cuda, compiled).items() if k != "init"}
    kernels.update({k + "+fastmath": v for k, v in gbm_kernels(cuda, compiled, True).items() if k != "init"})
    return compiled, kernels


def compile_gbm(cuda, name):
    from numba import from_dtype, types

    from cumath.device import random

    _, kernels = all_gbm_kernels(cuda, CC)
    st = types.Array(from_dtype(random.state_dtype(random.StatesPhilox4_32_10)), 1, "C")
    paths = types.Array(types.float32, 2, "F")
    compile_only(kernels[name], (st, paths, types.int64, types.float32, types.float32, types.float32))


def sweep_gbm(cp, cuda):
    from cumath.device import random

    compiled, kernels = all_gbm_kernels(cuda, None)
    init = gbm_kernels(cuda, compiled)["init"]
    print("GBM 524288 x 252 float32, Philox normal4", flush=True)

    npaths, nsteps = 524288, 252
    states = random.StatesPhilox4_32_10(npaths)
    paths = cp.empty((npaths, nsteps), dtype=cp.float32, order="F")
    args = (np.float32(0.0003), np.float32(0.012), np.float32(100.0))
    fns, finals = {}, {}
    for name, k in kernels.items():
        for bs in (64, 128, 256):
            launch = k[npaths // bs, bs]
            init[npaths // 128, 128](states, 7777)
            launch(states, paths, nsteps, *args)
            finals[(name, bs)] = cp.asnumpy(paths[:, -1])
            fns[f"{name} bs={bs}"] = (lambda launch=launch: launch(states, paths, nsteps, *args))
    ref = finals[("in_place", 128)]
    t = medians(fns, cuda.synchronize)
    for (name, bs), fin in finals.items():
        report("gbm", f"{name} bs={bs}", t[f"{name} bs={bs}"], vs_nvmath=t[f"{name} bs={bs}"] / 894.0,
               max_rel_diff=float(np.max(np.abs(fin - ref) / np.abs(ref))))


# ------------------------------------------------------------------------------------------------------ FFT

FFT_CONFIGS = [(4, 1), (4, 2), (4, 4), (4, 8), (4, 16), (8, 1), (8, 2), (8, 4), (8, 8), (8, 12), (8, 16),
               (16, 1), (16, 2), (16, 4), (16, 8), (16, 16), (32, 2), (32, 4), (32, 8)]


def fft_object(cfg, cc):
    import cumath.device as dev

    ept, fpb = cfg
    return dev.FFT(size=128, precision=np.float32, fft_type="c2c", execution="Block", direction="forward",
                   ffts_per_block=fpb, elements_per_thread=ept, sm=cc)


def fft_data(cp, batch, n):
    """Random complex64 rows and their FFT (the reference)."""
    rng = cp.random.default_rng(0)
    x = (rng.standard_normal((batch, n), dtype=cp.float32)
         + 1j * rng.standard_normal((batch, n), dtype=cp.float32)).astype(cp.complex64)
    return x, cp.fft.fft(x, axis=-1)


def fft_kernel(cuda, f):
    return fft_kernels(cuda, f, f, vector_access=False)[0]


def fft_persistent_kernel(cuda, f, max_registers=None):
    """A grid of a few blocks per SM, each looping over groups of rows; the next group's loads are issued before
    the current group's FFT, so loads and the FFT overlap within one block."""
    fpb, stride, ept, storage, vt = f.ffts_per_block, f.stride, f.elements_per_thread, f.storage_size, f.value_type

    @cuda.jit(link=f.files, max_registers=max_registers)
    def rows(x, y):
        nrows = x.shape[0]
        td = cuda.local.array(storage, dtype=vt)
        nx = cuda.local.array(storage, dtype=vt)
        smem = cuda.shared.array(0, dtype=vt)
        tx = cuda.threadIdx.x
        group = cuda.blockIdx.x
        row = group * fpb + cuda.threadIdx.y
        step = cuda.gridDim.x * fpb
        if row < nrows:
            for i in range(ept):
                td[i] = x[row, tx + i * stride]
        while group * fpb < nrows:
            nrow = row + step
            if nrow < nrows:
                for i in range(ept):
                    nx[i] = x[nrow, tx + i * stride]
            f(td, smem)
            if row < nrows:
                for i in range(ept):
                    y[row, tx + i * stride] = td[i]
            for i in range(ept):
                td[i] = nx[i]
            row = nrow
            group += cuda.gridDim.x
            cuda.syncthreads()

    return rows


def fft_staged_kernel(cuda, f, wide):
    """Rows staged through shared memory: the block's fpb rows (one contiguous run) are read and written
    linearly, 16-byte elements when ``wide`` (the arrays viewed as complex128), and regrouped in shared memory
    into the FFT's element order (dynamic shared arrays of any type share one base address)."""
    fpb, stride, ept, storage, vt, n = (f.ffts_per_block, f.stride, f.elements_per_thread, f.storage_size,
                                        f.value_type, f.size)
    nthreads = f.block_dim[0] * f.block_dim[1]
    per_row = n // 2 if wide else n
    per_thread = fpb * per_row // nthreads
    assert fpb * per_row % nthreads == 0
    wt = np.complex128 if wide else vt

    @cuda.jit(link=f.files)
    def rows(x, y):
        nrows = x.shape[0]
        s8 = cuda.shared.array(0, dtype=vt)
        sw = cuda.shared.array(0, dtype=wt)
        td = cuda.local.array(storage, dtype=vt)
        tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
        first = cuda.blockIdx.x * fpb
        for j in range(per_thread):
            e = tid + j * nthreads
            r = e // per_row
            if first + r < nrows:
                sw[e] = x[first + r, e - r * per_row]
        cuda.syncthreads()
        base = cuda.threadIdx.y * n + cuda.threadIdx.x
        for i in range(ept):
            td[i] = s8[base + i * stride]
        cuda.syncthreads()
        f(td, s8)
        cuda.syncthreads()
        for i in range(ept):
            s8[base + i * stride] = td[i]
        cuda.syncthreads()
        for j in range(per_thread):
            e = tid + j * nthreads
            r = e // per_row
            if first + r < nrows:
                y[first + r, e - r * per_row] = sw[e]

    return rows


def c64_access(load_op: str, store_op: str):
    """numba intrinsics (load(a, row, col) -> complex64, store(a, row, col, value)) for 2-D complex64 arrays as
    one 8-byte vector access with a PTX cache operator (ld.global.<op>.v2.f32 / st.global.<op>.v2.f32; "" for the
    default), indexed without numba's wrap-around of negative indices."""
    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    ld = "ld.global" + (f".{load_op}" if load_op else "") + ".v2.f32 {$0, $1}, [$2];"
    st = "st.global" + (f".{store_op}" if store_op else "") + ".v2.f32 [$0], {$1, $2};"

    def pointer(context, builder, sig, args):
        aty = sig.args[0]
        arr = context.make_array(aty)(context, builder, value=args[0])
        idx = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:3], sig.args[1:3])]
        return cgutils.get_item_pointer(context, builder, aty, arr, idx, wraparound=False)

    @intrinsic
    def load(typingctx, array, row, col):
        def codegen(context, builder, sig, args):
            ptr = pointer(context, builder, sig, args)
            f32 = ir.FloatType()
            fnty = ir.FunctionType(ir.LiteralStructType([f32, f32]), [ptr.type])
            pair = builder.call(ir.InlineAsm(fnty, ld, "=f,=f,l", side_effect=False), [ptr])
            z = cgutils.create_struct_proxy(types.complex64)(context, builder)
            z.real, z.imag = builder.extract_value(pair, 0), builder.extract_value(pair, 1)
            return z._getvalue()

        return types.complex64(array, row, col), codegen

    @intrinsic
    def store(typingctx, array, row, col, value):
        def codegen(context, builder, sig, args):
            ptr = pointer(context, builder, sig, args)
            f32 = ir.FloatType()
            z = cgutils.create_struct_proxy(types.complex64)(context, builder, value=args[3])
            fnty = ir.FunctionType(ir.VoidType(), [ptr.type, f32, f32])
            builder.call(ir.InlineAsm(fnty, st, "l,f,f", side_effect=True), [ptr, z.real, z.imag])
            return context.get_dummy_value()

        return types.void(array, row, col, value), codegen

    return load, store


def fft_hinted_kernel(cuda, f, load_op, store_op):
    """The plain kernel with its global accesses through c64_access(load_op, store_op)."""
    fpb, stride, ept, storage, vt = f.ffts_per_block, f.stride, f.elements_per_thread, f.storage_size, f.value_type
    load, store = c64_access(load_op, store_op)

    @cuda.jit(link=f.files)
    def rows(x, y):
        row = cuda.blockIdx.x * fpb + cuda.threadIdx.y
        td = cuda.local.array(storage, dtype=vt)
        smem = cuda.shared.array(0, dtype=vt)
        if row < x.shape[0]:
            for i in range(ept):
                td[i] = load(x, row, cuda.threadIdx.x + i * stride)
        f(td, smem)
        if row < x.shape[0]:
            for i in range(ept):
                store(y, row, cuda.threadIdx.x + i * stride, td[i])

    return rows


FFT4_CONFIGS = [(16, 4), (16, 8)]
FFT4_HINTS = [("", ""), ("cs", "cs"), ("", "cs"), ("cs", ""), ("nc", "cs")]


def sweep_fft4(cp, cuda):
    """Cache operators on the block FFT's global accesses (streaming: evict first) against cuFFT and a copy."""
    n, batch = 128, 1 << 20
    print("Block FFT 2^20 x 128 complex64, cache operators", flush=True)
    x, ref = fft_data(cp, batch, n)
    y, y2 = cp.empty_like(x), cp.empty_like(x)
    fns, errs = {"cupy": lambda: cp.fft.fft(x, axis=-1), "copy": lambda: cp.copyto(y2, x)}, {}
    for cfg in FFT4_CONFIGS:
        f = fft_object(cfg, None)
        grid = -(-batch // f.ffts_per_block)
        kernels = {f"plain ept={cfg[0]} fpb={cfg[1]}": fft_kernel(cuda, f)}
        for lo, so in FFT4_HINTS:
            kernels[f"ld.{lo or 'default'} st.{so or 'default'} ept={cfg[0]} fpb={cfg[1]}"] = \
                fft_hinted_kernel(cuda, f, lo, so)
        for name, k in kernels.items():
            launch = k[grid, f.block_dim, 0, f.shared_memory_size]
            y.fill(0)
            launch(x, y)
            errs[name] = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
            fns[name] = (lambda launch=launch: launch(x, y))
    t = medians(fns, cuda.synchronize, number=20, rounds=21)
    report("fft4", "cuFFT (cupy.fft.fft)", t["cupy"])
    report("fft4", "copy (cupy.copyto)", t["copy"], vs_cufft=t["copy"] / t["cupy"])
    for name in fns:
        if name not in ("cupy", "copy"):
            report("fft4", name, t[name], vs_cufft=t[name] / t["cupy"], rel_err=errs[name])


FFT2_CONFIGS = [(16, 4), (16, 8), (8, 8)]
FFT3_CONFIGS = [(16, 4), (16, 8), (16, 16), (8, 8)]


def sweep_fft3(cp, cuda):
    """Rows staged through shared memory (8- and 16-byte linear accesses) against the plain kernel and cuFFT."""
    n, batch = 128, 1 << 20
    print("Block FFT 2^20 x 128 complex64, rows staged through shared memory", flush=True)
    x, ref = fft_data(cp, batch, n)
    y = cp.empty_like(x)
    y2 = cp.empty_like(x)
    xw, yw = x.view(cp.complex128), y.view(cp.complex128)
    fns = {"cupy": lambda: cp.fft.fft(x, axis=-1), "copy": lambda: cp.copyto(y2, x)}
    errs = {}
    for cfg in FFT3_CONFIGS:
        f = fft_object(cfg, None)
        grid = -(-batch // f.ffts_per_block)
        smem = max(f.shared_memory_size, f.ffts_per_block * n * 8)
        variants = {f"plain ept={cfg[0]} fpb={cfg[1]}": (fft_kernel(cuda, f)[grid, f.block_dim, 0,
                                                                            f.shared_memory_size], x, y)}
        for wide in (False, True):
            k = fft_staged_kernel(cuda, f, wide)[grid, f.block_dim, 0, smem]
            variants[f"staged{16 if wide else 8} ept={cfg[0]} fpb={cfg[1]}"] = (k, xw if wide else x,
                                                                                 yw if wide else y)
        for name, (launch, a, b) in variants.items():
            y.fill(0)
            launch(a, b)
            errs[name] = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
            fns[name] = (lambda launch=launch, a=a, b=b: launch(a, b))
    t = medians(fns, cuda.synchronize, number=20, rounds=15)
    report("fft3", "cuFFT (cupy.fft.fft)", t["cupy"])
    report("fft3", "copy (cupy.copyto)", t["copy"], vs_cufft=t["copy"] / t["cupy"])
    for name in fns:
        if name not in ("cupy", "copy"):
            report("fft3", name, t[name], vs_cufft=t[name] / t["cupy"], rel_err=errs[name])
FFT2_REGS = (None, 64)


def compile_fft(cuda, cfg):
    from numba import types

    arr = types.Array(types.complex64, 2, "C")
    if cfg[0] == "hinted":
        _, ept, fpb, lo, so = cfg
        compile_only(fft_hinted_kernel(cuda, fft_object((ept, fpb), CC), lo, so), (arr, arr))
    elif cfg[0] == "staged":
        _, ept, fpb, wide = cfg
        dt = types.complex128 if wide else types.complex64
        compile_only(fft_staged_kernel(cuda, fft_object((ept, fpb), CC), wide), (types.Array(dt, 2, "C"),) * 2)
    elif cfg[0] == "persistent":
        _, ept, fpb, regs = cfg
        compile_only(fft_persistent_kernel(cuda, fft_object((ept, fpb), CC), regs), (arr, arr))
    else:
        compile_only(fft_kernel(cuda, fft_object(cfg, CC)), (arr, arr))


def sweep_fft2(cp, cuda):
    """Persistent blocks with the next group prefetched, against the best plain launch and cuFFT."""
    n, batch = 128, 1 << 20
    nsm = cuda.get_current_device().MULTIPROCESSOR_COUNT
    print(f"Block FFT 2^20 x 128 complex64, persistent blocks ({nsm} SMs)", flush=True)
    x, ref = fft_data(cp, batch, n)
    y = cp.empty_like(x)
    fns, errs, regs = {"cupy": lambda: cp.fft.fft(x, axis=-1)}, {}, {}
    for cfg in FFT2_CONFIGS:
        f = fft_object(cfg, None)
        plain = fft_kernel(cuda, f)
        launch = plain[-(-batch // f.ffts_per_block), f.block_dim, 0, f.shared_memory_size]
        name = f"plain ept={cfg[0]} fpb={cfg[1]}"
        y.fill(0)
        launch(x, y)
        errs[name] = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
        fns[name] = (lambda launch=launch: launch(x, y))
        for r in FFT2_REGS:
            k = fft_persistent_kernel(cuda, f, r)
            for per_sm in (8, 16, 32):
                launch = k[nsm * per_sm, f.block_dim, 0, f.shared_memory_size]
                name = f"persistent ept={cfg[0]} fpb={cfg[1]} regs={r} blocks/SM={per_sm}"
                y.fill(0)
                launch(x, y)
                errs[name] = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
                fns[name] = (lambda launch=launch: launch(x, y))
                try:
                    regs[name] = int(k.get_regs_per_thread())
                except Exception:
                    regs[name] = -1
    t = medians(fns, cuda.synchronize, number=20, rounds=11)
    report("fft2", "cuFFT (cupy.fft.fft)", t["cupy"])
    for name in fns:
        if name != "cupy":
            report("fft2", name, t[name], vs_cufft=t[name] / t["cupy"], rel_err=errs[name],
                   regs=regs.get(name, 0))


def sweep_fft(cp, cuda):
    n, batch = 128, 1 << 20
    objs = {c: fft_object(c, None) for c in FFT_CONFIGS}
    kernels = {c: fft_kernel(cuda, f) for c, f in objs.items()}
    print("Block FFT 2^20 x 128 complex64", flush=True)
    x, ref = fft_data(cp, batch, n)
    y = cp.empty_like(x)
    y2 = cp.empty_like(x)
    fns, errs = {"cupy": lambda: cp.fft.fft(x, axis=-1), "copy": lambda: cp.copyto(y2, x)}, {}
    for c, k in kernels.items():
        f = objs[c]
        launch = k[-(-batch // f.ffts_per_block), f.block_dim, 0, f.shared_memory_size]
        y.fill(0)
        launch(x, y)
        errs[c] = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
        fns[f"ept={c[0]} fpb={c[1]}"] = (lambda launch=launch: launch(x, y))
    t = medians(fns, cuda.synchronize, number=20, rounds=11)
    report("fft", "cuFFT (cupy.fft.fft)", t["cupy"], GBps=2 * x.nbytes / t["cupy"] / 1e3)
    report("fft", "copy (cupy.copyto), the bandwidth floor", t["copy"], GBps=2 * x.nbytes / t["copy"] / 1e3)
    for c in kernels:
        name = f"ept={c[0]} fpb={c[1]}"
        report("fft", name, t[name], vs_cufft=t[name] / t["cupy"], rel_err=errs[c],
               GBps=2 * x.nbytes / t[name] / 1e3)


# ----------------------------------------------------------------------------------------------------- GEMM

GEMM_BLOCKS = (64, 128, 256)


def gemm_loop_kernel(cuda, MM):
    """The first benchmark's kernel: element loops with a run-time trip count."""
    m, n, k = MM.size
    lda, ldb, ldc = MM.leading_dimension
    sa_n, sb_n, sc_n, nt = MM.a_size, MM.b_size, MM.c_size, MM.block_size

    @cuda.jit(link=MM.files)
    def gemm(a, b, c):
        bi = cuda.blockIdx.x
        sa = cuda.shared.array(sa_n, dtype=np.float32)
        sb = cuda.shared.array(sb_n, dtype=np.float32)
        sc = cuda.shared.array(sc_n, dtype=np.float32)
        t = cuda.threadIdx.x
        for e in range(t, m * k, nt):
            sa[(e // k) * lda + e % k] = a[bi, e // k, e % k]
        for e in range(t, k * n, nt):
            sb[(e // n) * ldb + e % n] = b[bi, e // n, e % n]
        cuda.syncthreads()
        MM(1.0, sa, sb, 0.0, sc)
        cuda.syncthreads()
        for e in range(t, m * n, nt):
            c[bi, e // n, e % n] = sc[(e // n) * ldc + e % n]

    return gemm


def gemm_tensor_kernel(cuda, MM):
    """Tensor API: cooperative copies into the suggested shared layouts, the suggested register accumulator,
    stored to global memory from registers (no C tile in shared memory)."""
    from cumath.device import clear, copy, copy_fragment, copy_wait, make_tensor

    al, bl = MM.suggest_layout_smem_a(), MM.suggest_layout_smem_b()
    a_bytes = al.cosize * al.dtype.itemsize
    b_off = -(-a_bytes // max(bl.alignment, 16)) * max(bl.alignment, 16)
    b_end = b_off + bl.cosize * bl.dtype.itemsize

    @cuda.jit
    def gemm(a, b, c):
        bi = cuda.blockIdx.x
        smem = cuda.shared.array(0, dtype=np.uint8)
        sa = make_tensor(smem[:a_bytes], al)
        sb = make_tensor(smem[b_off:b_end], bl)
        copy(make_tensor(a[bi], MM.get_layout_gmem_a()), sa)
        copy(make_tensor(b[bi], MM.get_layout_gmem_b()), sb)
        part = MM.suggest_partitioner()
        acc = part.make_accumulator_fragment()
        clear(acc)
        copy_wait()
        MM.execute(sa, sb, acc)
        copy_fragment(acc, make_tensor(c[bi], MM.get_layout_gmem_c()))

    return gemm, b_end


def gemm_variants(cuda, cc):
    """name -> factory() -> (kernel, descriptor, dynamic shared bytes, operand ndim), built lazily (the code is
    generated when a kernel is decorated)."""
    import cumath.device as dev

    arr = ("row_major", "row_major", "row_major")

    def plain(bs):
        return dev.Matmul(size=(32, 32, 32), precision=np.float32, data_type="real", block_size=bs,
                          arrangement=arr, sm=cc)

    def tensor(bs):
        mm = dev.Matmul(size=(32, 32, 32), precision=np.float32, data_type="real", block_size=bs,
                        arrangement=arr, sm=cc, execute_api="tensors",
                        tensor_types=("suggested_smem_a", "suggested_smem_b", "suggested_rmem_c"))
        kern, smem = gemm_tensor_kernel(cuda, mm)
        return kern, mm, smem, 2

    def loop(bs):
        mm = plain(bs)
        return gemm_loop_kernel(cuda, mm), mm, 0, 3

    def unrolled(bs):
        mm = plain(bs)
        return gemm_kernel(cuda, mm), mm, 0, 2

    out = {}
    for bs in GEMM_BLOCKS:
        for name, factory in (("loop", loop), ("unrolled", unrolled), ("tensor", tensor)):
            out[f"{name} bs={bs}"] = (lambda factory=factory, bs=bs: factory(bs))
    return out


def compile_gemm(cuda, name):
    from numba import types

    kern, _, _, nd = gemm_variants(cuda, CC)[name]()
    a = types.Array(types.float32, nd, "C")
    compile_only(kern, (a, a, a))


def sweep_gemm(cp, cuda):
    m = n = k = 32
    batch = 65536
    variants = {name: f() for name, f in gemm_variants(cuda, None).items()}
    print("Block GEMM 65536 x 32^3 float32", flush=True)
    rng = cp.random.default_rng(1)
    a = rng.standard_normal((batch, m, k), dtype=cp.float32)
    b = rng.standard_normal((batch, k, n), dtype=cp.float32)
    ref = cp.matmul(a, b)
    c = cp.empty((batch, m, n), dtype=cp.float32)
    fns, errs = {"cupy": lambda: cp.matmul(a, b)}, {}
    for name, (kern, MM, smem, nd) in variants.items():
        av, bv, cv = (a, b, c) if nd == 3 else (a.reshape(batch, -1), b.reshape(batch, -1), c.reshape(batch, -1))
        launch = kern[batch, MM.block_dim, 0, smem]
        c.fill(0)
        launch(av, bv, cv)
        errs[name] = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref))
        fns[name] = (lambda launch=launch, av=av, bv=bv, cv=cv: launch(av, bv, cv))
    t = medians(fns, cuda.synchronize, number=20, rounds=11)
    report("gemm", "cuBLAS (cupy.matmul)", t["cupy"])
    for name in variants:
        report("gemm", name, t[name], vs_cublas=t[name] / t["cupy"], rel_err=errs[name])


# ------------------------------------------------------------------------------------------------------ main

def _compile_one(job):
    from cumath._core.numba_compat import import_numba_cuda

    cuda = import_numba_cuda()
    section, name = job
    t0 = time.perf_counter()
    {"gemm": compile_gemm, "fft": compile_fft, "fft2": compile_fft, "fft3": compile_fft, "fft4": compile_fft, "gbm": compile_gbm}[section](cuda, name)
    return f"compiled {section} {name} in {time.perf_counter() - t0:.1f} s"


def compile_all(sections, jobs):
    """Every kernel compiled for sm_90 (filling the device-code cache), ``jobs`` processes at a time."""
    from concurrent.futures import ProcessPoolExecutor

    work = [("gbm", n) for n in GBM_NAMES] + [("fft", c) for c in FFT_CONFIGS]
    work += [("fft2", ("persistent", *c, r)) for c in FFT2_CONFIGS for r in FFT2_REGS]
    work += [("fft3", ("staged", *c, w)) for c in FFT3_CONFIGS for w in (False, True)]
    work += [("fft4", ("hinted", *c, *h)) for c in FFT4_CONFIGS for h in FFT4_HINTS]
    work += [("gemm", f"{v} bs={bs}") for bs in GEMM_BLOCKS for v in ("loop", "unrolled", "tensor")]
    work = [w for w in work if not sections or w[0] in sections]
    with ProcessPoolExecutor(jobs) as pool:
        for line in pool.map(_compile_one, work):
            print(" ", line, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--only", choices=("gbm", "fft", "fft2", "fft3", "fft4", "gemm"), action="append")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    if args.compile_only:
        compile_all(args.only, args.jobs)
        return
    from cumath._core.numba_compat import import_numba_cuda

    cuda = import_numba_cuda()
    import cupy as cp

    sections = (("gemm", sweep_gemm), ("fft", sweep_fft), ("fft2", sweep_fft2), ("fft3", sweep_fft3),
                ("fft4", sweep_fft4), ("gbm", sweep_gbm))
    run_sections(sections, args.only, args.json, ROWS, lambda fn: fn(cp, cuda))


if __name__ == "__main__":
    main()
