"""Device APIs benchmark (issue 5's figures), on a GPU: numba-cuda kernels calling cumath.device against peers.

- GBM: 524,288 paths x 252 steps, float32, Philox4_32_10 with normal4, one path per thread, against CuPy's
  standard_normal + cumsum + exp on the same problem, and nvmath-python's device-RNG kernel (894 us, measured
  2026-11-29 on the H200; quoted, not run). The kernel keeps the thread's state in registers (a local copy);
  the form that draws from states[i] in memory is timed beside it. Also the time to a first result in a fresh
  process (the cuRAND shim compiled) and in a second process (read from the disk cache), by phase.
- Block FFT: 2^20 FFTs of size 128 complex64 in one kernel (16 elements per thread, 4 FFTs per block: the best
  shape of benchmarks/device_sweep.py) against cuFFT through CuPy (cupy.fft.fft, plan
  cached); an FFT convolution (forward, multiply, inverse) in one kernel against CuPy's fft * h -> ifft.
  Also the first-use time of the two FFT descriptors (libmathdx code generation) and from the cache.
- Block GEMM: batched 32 x 32 x 32 float32 GEMMs, one per block (tiles loaded with constant trip counts), against
  cuBLAS batched through cupy.matmul.

Per-call medians of interleaved rounds (cumath._core.timing.time_interleaved), ratios, and --json output.

    python benchmarks/device.py [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from cumath._core.timing import time_interleaved  # noqa: E402

NVMATH_GBM_US = 894.0  # nvmath-python's device-RNG GBM kernel on the H200 (issue 5)
CUPY_GBM_US = 8577.0  # CuPy standard_normal + cumsum + exp, as measured for the issue
ROWS: list[dict] = []


def report(section, name, seconds, **extra):
    row = {"section": section, "name": name, "us": seconds * 1e6, **extra}
    ROWS.append(row)
    more = "".join(f"  {k}={v:.3g}" if isinstance(v, float) else f"  {k}={v}" for k, v in extra.items())
    print(f"  {name:<48s} {seconds * 1e6:10.1f} us{more}", flush=True)


def timed(fns, sync, number, rounds):
    return {k: v.median for k, v in time_interleaved(fns, sync=sync, number=number, rounds=rounds).items()}


# ------------------------------------------------------------------------------------------------------ GBM

_FIRST_USE = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    from cumath._core.numba_compat import import_numba_cuda
    cuda = import_numba_cuda()  # the NumPy 2.5 compatibility step before numba-cuda compiles anything
    from cumath.device import random
    cuda.current_context()
    t1 = time.perf_counter()
    compiled = random.Compile()
    compiled.files  # the cuRAND shim: compiled by NVRTC, or read from the disk cache
    t2 = time.perf_counter()
    @cuda.jit(link=compiled.files, extensions=compiled.extension)
    def init(states, seed):
        i = cuda.grid(1)
        if i < states.shape[0]:
            random.init(seed, i, 0, states[i])
    @cuda.jit(link=compiled.files, extensions=compiled.extension)
    def draw(states, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = random.normal4(states[i]).x
    states = random.StatesPhilox4_32_10(1024)
    out = cuda.device_array(1024, dtype=np.float32)
    init[8, 128](states, 1)
    draw[8, 128](states, out)
    out.copy_to_host()
    t3 = time.perf_counter()
    print(json.dumps({"seconds": t3 - t0, "imports_and_context": t1 - t0, "shim": t2 - t1,
                      "kernels_compiled_and_run": t3 - t2}))
""")


def first_use(code: str, cache: str) -> dict:
    env = dict(os.environ, CUMATH_CACHE_DIR=cache, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if res.returncode:
        raise RuntimeError(res.stderr[-2000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def gbm_kernels(cuda, compiled, fastmath=False) -> dict:
    """init, and the GBM kernel in two forms: "register" (the thread's state copied to a local record once, kept
    in registers, stored back; as in examples/device_gbm_monte_carlo.py) and "in_place" (every draw reads and
    writes states[i] in global memory, the form of nvmath-python's examples)."""
    from cumath.device import random

    state_dt = random.state_dtype(random.StatesPhilox4_32_10)
    jit = cuda.jit(link=compiled.files, extensions=compiled.extension, fastmath=fastmath)

    def init(states, seed):
        i = cuda.grid(1)
        if i < states.shape[0]:
            random.init(seed, i, 0, states[i])

    def register(states, paths, nsteps, mu, sigma, s0):
        i = cuda.grid(1)
        if i >= paths.shape[0]:
            return
        st = cuda.local.array(1, dtype=state_dt)
        st[0] = states[i]
        s = s0
        paths[i, 0] = s
        for t in range(1, nsteps, 4):
            v = random.normal4(st[0])
            z = (v.x, v.y, v.z, v.w)
            for j in range(4):
                if t + j < nsteps:
                    s = s * math.exp(mu + sigma * z[j])
                    paths[i, t + j] = s
        states[i] = st[0]

    def in_place(states, paths, nsteps, mu, sigma, s0):
        i = cuda.grid(1)
        if i >= paths.shape[0]:
            return
        s = s0
        paths[i, 0] = s
        for t in range(1, nsteps, 4):
            v = random.normal4(states[i])
            z = (v.x, v.y, v.z, v.w)
            for j in range(4):
                if t + j < nsteps:
                    s = s * math.exp(mu + sigma * z[j])
                    paths[i, t + j] = s

    return {"init": jit(init), "register": jit(register), "in_place": jit(in_place)}


def bench_gbm(cp, cuda, quick):
    from cumath.device import random

    print("GBM: Philox4_32_10 normal4, one path per thread, float32", flush=True)
    npaths, nsteps, mu, sigma, s0 = (65536 if quick else 524288), 252, 0.0003, 0.012, 100.0
    with tempfile.TemporaryDirectory() as cache:
        cold = first_use(_FIRST_USE, cache)
        warm = first_use(_FIRST_USE, cache)
    report("gbm", "first result, fresh process (shim compiled)", cold["seconds"],
           **{k: v for k, v in cold.items() if k != "seconds"})
    report("gbm", "first result, second process (disk cache)", warm["seconds"], ratio_to_fresh=warm["seconds"] /
           cold["seconds"], **{k: v for k, v in warm.items() if k != "seconds"})
    report("gbm", "cuRAND shim: compiled (fresh process)", cold["shim"])
    report("gbm", "cuRAND shim: from the disk cache (second process)", warm["shim"],
           ratio_to_fresh=warm["shim"] / cold["shim"])
    compiled = random.Compile()
    kernels = gbm_kernels(cuda, compiled)
    init, gbm, gbm_in_place = kernels["init"], kernels["register"], kernels["in_place"]

    states = random.StatesPhilox4_32_10(npaths)
    paths = cp.empty((npaths, nsteps), dtype=cp.float32, order="F")
    blocks = npaths // 128
    launch, launch_in_place = gbm[blocks, 128], gbm_in_place[blocks, 128]
    mu32, sigma32, s032 = np.float32(mu), np.float32(sigma), np.float32(s0)
    init[blocks, 128](states, 7777)
    launch_in_place(states, paths, nsteps, mu32, sigma32, s032)
    in_place_last = cp.asnumpy(paths[:, -1])
    init[blocks, 128](states, 7777)
    launch(states, paths, nsteps, mu32, sigma32, s032)
    same = bool(np.array_equal(in_place_last, cp.asnumpy(paths[:, -1])))

    def cumath_gbm():
        launch(states, paths, nsteps, mu32, sigma32, s032)

    def cumath_gbm_in_place():
        launch_in_place(states, paths, nsteps, mu32, sigma32, s032)

    def cupy_gbm():
        z = cp.random.standard_normal((npaths, nsteps - 1), dtype=cp.float32) * sigma + mu
        out = cp.empty((npaths, nsteps), dtype=cp.float32)
        out[:, 0] = s0
        out[:, 1:] = s0 * cp.exp(cp.cumsum(z, axis=1))
        return out

    t = timed({"cumath": cumath_gbm, "in_place": cumath_gbm_in_place, "cupy": cupy_gbm}, cuda.synchronize,
              3 if quick else 10, 7 if quick else 15)
    lr = np.log(cp.asnumpy(paths[:, -1]).astype(np.float64) / s0)
    report("gbm", f"cumath kernel ({npaths} x {nsteps})", t["cumath"], mean_log_return=float(lr.mean()),
           vs_nvmath=t["cumath"] * 1e6 / NVMATH_GBM_US)
    report("gbm", "cumath kernel, states[i] drawn from in memory", t["in_place"],
           vs_nvmath=t["in_place"] * 1e6 / NVMATH_GBM_US, same_paths_as_register_copy=same)
    report("gbm", "CuPy standard_normal + cumsum + exp", t["cupy"], speedup=t["cupy"] / t["cumath"],
           issue_cupy_us=CUPY_GBM_US)
    print(f"  -> figure: kernel {t['cumath'] * 1e6:.0f} us = {t['cumath'] * 1e6 / NVMATH_GBM_US:.2f}x nvmath "
          f"(target <= 1.0x; states[i] in memory: {t['in_place'] * 1e6 / NVMATH_GBM_US:.2f}x); "
          f"{t['cupy'] / t['cumath']:.1f}x faster than CuPy (target >= 9x)", flush=True)


# ------------------------------------------------------------------------------------------------------ FFT

def fft_kernels(cuda, fwd, inv, vector_access=True):
    """The block FFT of rows and the FFT convolution of rows, in one kernel each. Global memory is read and written
    with cumath.device.load/store (one 8-byte access per complex64; numba's x[i] issues two 4-byte ones) unless
    ``vector_access`` is False."""
    from cumath.device import load, store

    fpb, stride, ept, storage, n = fwd.ffts_per_block, fwd.stride, fwd.elements_per_thread, fwd.storage_size, fwd.size
    vt = fwd.value_type

    if vector_access:
        @cuda.jit(link=fwd.files)
        def fft_rows(x, y):
            row = cuda.blockIdx.x * fpb + cuda.threadIdx.y
            td = cuda.local.array(storage, dtype=vt)
            smem = cuda.shared.array(0, dtype=vt)
            if row < x.shape[0]:  # every thread takes part in the FFT (it synchronises the block)
                for i in range(ept):
                    td[i] = load(x, (row, cuda.threadIdx.x + i * stride))
            fwd(td, smem)
            if row < x.shape[0]:
                for i in range(ept):
                    store(y, (row, cuda.threadIdx.x + i * stride), td[i])
    else:
        @cuda.jit(link=fwd.files)
        def fft_rows(x, y):
            row = cuda.blockIdx.x * fpb + cuda.threadIdx.y
            td = cuda.local.array(storage, dtype=vt)
            smem = cuda.shared.array(0, dtype=vt)
            if row < x.shape[0]:
                for i in range(ept):
                    td[i] = x[row, cuda.threadIdx.x + i * stride]
            fwd(td, smem)
            if row < x.shape[0]:
                for i in range(ept):
                    y[row, cuda.threadIdx.x + i * stride] = td[i]

    @cuda.jit(link=fwd.files + inv.files)
    def convolve_rows(x, h, y):
        row = cuda.blockIdx.x * fpb + cuda.threadIdx.y
        td = cuda.local.array(storage, dtype=vt)
        smem = cuda.shared.array(0, dtype=vt)
        if row < x.shape[0]:
            for i in range(ept):
                td[i] = load(x, (row, cuda.threadIdx.x + i * stride))
        fwd(td, smem)
        for i in range(ept):
            td[i] = td[i] * load(h, cuda.threadIdx.x + i * stride)
        inv(td, smem)
        if row < x.shape[0]:
            for i in range(ept):
                store(y, (row, cuda.threadIdx.x + i * stride), td[i] / n)

    return fft_rows, convolve_rows


def bench_fft(cp, cuda, quick):
    import cumath.device as dev

    print("Block FFT: batches of size-128 complex64 FFTs in one kernel", flush=True)
    n, batch = 128, (1 << 16 if quick else 1 << 20)
    t0 = time.perf_counter()
    # 16 elements per thread and 4 FFTs per block: the fastest shape of benchmarks/device_sweep.py (libmathdx's
    # suggestion, 8 x 12 at 8 elements per thread, is 1.10x cuFFT here)
    kw = dict(size=n, precision=np.float32, fft_type="c2c", execution="Block", ffts_per_block=4,
              elements_per_thread=16)
    fwd, inv = dev.FFT(direction="forward", **kw), dev.FFT(direction="inverse", **kw)
    fwd.files, inv.files  # generate (or read from the cache) both LTO-IRs now
    report("fft", "descriptors + code (first use in this process)", time.perf_counter() - t0)
    fft_rows, convolve_rows = fft_kernels(cuda, fwd, inv)
    fft_rows_indexed = fft_kernels(cuda, fwd, inv, vector_access=False)[0]
    rng = cp.random.default_rng(0)
    x = rng.standard_normal((batch, n), dtype=cp.float32) + 1j * rng.standard_normal((batch, n), dtype=cp.float32)
    x = x.astype(cp.complex64)
    h = cp.fft.fft(cp.exp(-cp.arange(n, dtype=cp.float32) / 8)).astype(cp.complex64)
    y = cp.zeros_like(x)
    grid = -(-batch // fwd.ffts_per_block)
    fft_launch = fft_rows[grid, fwd.block_dim, 0, fwd.shared_memory_size]
    conv_launch = convolve_rows[grid, fwd.block_dim, 0, fwd.shared_memory_size]
    fft_launch(x, y)
    err = float(cp.linalg.norm(y - cp.fft.fft(x, axis=-1)) / cp.linalg.norm(y))
    indexed_launch = fft_rows_indexed[grid, fwd.block_dim, 0, fwd.shared_memory_size]
    y2, y3 = cp.empty_like(x), cp.empty_like(x)
    t = timed({"cumath": lambda: fft_launch(x, y), "indexed": lambda: indexed_launch(x, y3),
               "cupy": lambda: cp.fft.fft(x, axis=-1), "copy": lambda: cp.copyto(y2, x)}, cuda.synchronize,
              5 if quick else 20, 7 if quick else 21)
    gbs = 2 * x.nbytes / t["cumath"] / 1e9
    report("fft", f"cumath block FFT ({batch} x {n})", t["cumath"], rel_err=err, GBps=gbs)
    report("fft", "same, numba's x[i] indexing instead of load/store", t["indexed"],
           ratio_to_load_store=t["indexed"] / t["cumath"],
           same_result=bool(cp.array_equal(y3, y)))
    report("fft", "cuFFT through cupy.fft.fft", t["cupy"], ratio=t["cupy"] / t["cumath"])
    report("fft", "copy of the same bytes (cupy.copyto), the floor", t["copy"], ratio=t["copy"] / t["cumath"])
    conv_launch(x, h, y)
    ref = cp.fft.ifft(cp.fft.fft(x, axis=-1) * h, axis=-1)
    err = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
    t = timed({"cumath": lambda: conv_launch(x, h, y),
               "cupy": lambda: cp.fft.ifft(cp.fft.fft(x, axis=-1) * h, axis=-1)},
              cuda.synchronize, 5 if quick else 20, 7 if quick else 15)
    report("fft", "cumath FFT convolution in one kernel", t["cumath"], rel_err=err)
    report("fft", "CuPy fft * h -> ifft", t["cupy"], ratio=t["cupy"] / t["cumath"])


# ----------------------------------------------------------------------------------------------------- GEMM

def gemm_kernel(cuda, MM):
    """One GEMM per block, c[b] = a[b] @ b[b], over flat (batch, rows * cols) views of C-order batches of dense
    row-major tiles; the tile loops have constant trip counts, so each thread's loads are in flight together."""
    m, n, k = MM.size
    if tuple(MM.leading_dimension) != (k, n, n) or any(x % MM.block_size for x in (m * k, k * n, m * n)):
        raise ValueError(f"{MM.size} with leading dimensions {tuple(MM.leading_dimension)} and "
                         f"{MM.block_size} threads: not dense tiles split evenly over the threads")
    sa_n, sb_n, sc_n, nt = MM.a_size, MM.b_size, MM.c_size, MM.block_size
    pa, pb, pc = m * k // nt, k * n // nt, m * n // nt
    dt = MM.a_value_type

    @cuda.jit(link=MM.files)
    def gemm(a, b, c):
        bi = cuda.blockIdx.x
        sa = cuda.shared.array(sa_n, dtype=dt)
        sb = cuda.shared.array(sb_n, dtype=dt)
        sc = cuda.shared.array(sc_n, dtype=dt)
        t = cuda.threadIdx.x
        for j in range(pa):
            sa[t + j * nt] = a[bi, t + j * nt]
        for j in range(pb):
            sb[t + j * nt] = b[bi, t + j * nt]
        cuda.syncthreads()
        MM(1.0, sa, sb, 0.0, sc)
        cuda.syncthreads()
        for j in range(pc):
            c[bi, t + j * nt] = sc[t + j * nt]

    return gemm


def bench_gemm(cp, cuda, quick):
    import cumath.device as dev

    print("Block GEMM: batched 32 x 32 x 32 float32, one GEMM per block", flush=True)
    m = n = k = 32
    batch = 4096 if quick else 65536
    MM = dev.Matmul(size=(m, n, k), precision=np.float32, data_type="real", block_size=128,
                    arrangement=("row_major", "row_major", "row_major"))
    gemm = gemm_kernel(cuda, MM)

    rng = cp.random.default_rng(1)
    a = rng.standard_normal((batch, m, k), dtype=cp.float32)
    b = rng.standard_normal((batch, k, n), dtype=cp.float32)
    c = cp.empty((batch, m, n), dtype=cp.float32)
    launch = gemm[batch, MM.block_dim]
    af, bf, cf = a.reshape(batch, -1), b.reshape(batch, -1), c.reshape(batch, -1)
    launch(af, bf, cf)
    err = float(cp.linalg.norm(c - cp.matmul(a, b)) / cp.linalg.norm(c))
    t = timed({"cumath": lambda: launch(af, bf, cf), "cupy": lambda: cp.matmul(a, b)}, cuda.synchronize,
              5 if quick else 20, 7 if quick else 15)
    flops = 2 * m * n * k * batch
    report("gemm", f"cumath block GEMM ({batch} x {m}x{n}x{k})", t["cumath"], rel_err=err,
           TFLOPs=flops / t["cumath"] / 1e12)
    report("gemm", "cuBLAS batched through cupy.matmul", t["cupy"], ratio=t["cupy"] / t["cumath"])


def run_sections(sections, only, json_path, rows, call):
    """Run each (name, fn) of ``sections`` that ``only`` selects; one failing leaves the others' rows; ``rows``
    are written to ``json_path`` after each."""
    for name, fn in sections:
        if only and name not in only:
            continue
        try:
            call(fn)
        except Exception as exc:
            import traceback

            traceback.print_exc()
            print(f"  {name} FAILED: {type(exc).__name__}: {exc}", flush=True)
            rows.append({"section": name, "error": f"{type(exc).__name__}: {exc}"})
        if json_path:
            with open(json_path, "w") as f:
                json.dump(rows, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the measurements here")
    parser.add_argument("--quick", action="store_true", help="smaller problems, fewer rounds")
    parser.add_argument("--only", choices=("gbm", "fft", "gemm"), action="append")
    args = parser.parse_args()
    import cumath.device as dev

    reason = dev.unavailable_reason()
    if reason:
        print(f"skipped: {reason}")
        return
    import cupy as cp
    from numba import cuda

    name = cuda.get_current_device().name
    print(f"GPU: {name.decode() if isinstance(name, bytes) else name}")
    sections = (("gbm", bench_gbm), ("fft", bench_fft), ("gemm", bench_gemm))
    run_sections(sections, args.only, args.json, ROWS, lambda fn: fn(cp, cuda, args.quick))


if __name__ == "__main__":
    main()
