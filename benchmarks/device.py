"""Device APIs benchmark: numba-cuda kernels calling cumath.device, against their peers, on a GPU.

Groups (``--list`` shows every case):
  gbm    geometric Brownian motion, 524,288 paths x 252 steps float32, Philox4_32_10 normal4, one path per
         thread: the thread's state kept in registers (a local copy, as in examples/device_gbm_monte_carlo.py)
         and drawn from states[i] in memory, against CuPy's standard_normal + cumsum + exp and, where
         installed, nvmath-python's device random module in the same kernel; the time to a first result in a
         fresh process (the cuRAND shim compiled) and in a second one (read from the disk cache).
  fft    2^20 FFTs of size 128 complex64 in one kernel (16 elements per thread, 4 FFTs per block) against cuFFT
         through cupy.fft and a copy of the same bytes; an FFT convolution in one kernel against CuPy's
         fft * h -> ifft.
  gemm   batched 32 x 32 x 32 float32 GEMMs, one per block, against cuBLAS batched through cupy.matmul.
  sweep  (optional, only with --case sweep) the launch shapes behind the figures: block FFT elements per thread x
         FFTs per block, and GBM threads per block, each against the same peers.

    python benchmarks/device.py [--quick] [--json out.json]
    python benchmarks/device.py --case gbm --case fft
    python benchmarks/device.py --case sweep
"""

from __future__ import annotations

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
sys.path.insert(0, HERE)

from harness import ROOT, Bench, Skip, need, optional  # noqa: E402

bench = Bench("device", __doc__, fresh_cache=False)  # the user's cache: generated device code is reused
NVMATH_GBM_US = 894.0  # nvmath-python's device-RNG GBM example kernel, measured on an H200 on 2026-11-29


def setup(*needs):
    """(cupy, numba.cuda) once cumath.device can run ``needs`` here; Skip naming what is missing."""
    import cumath.device as dev

    reason = dev.unavailable_reason(*needs)
    if reason:
        raise Skip(reason)
    cp = need("cupy")
    from numba import cuda

    return cp, cuda


# ------------------------------------------------------------------------------------------------------ GBM
_FIRST_USE = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    from cumath._core.numba_compat import import_numba_cuda
    cuda = import_numba_cuda()  # the NumPy compatibility step before numba-cuda compiles anything
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


def gbm_kernels(cuda, random, compiled, fastmath=False) -> dict:
    """init, and the GBM kernel in two forms: "register" (the thread's state copied to a local record once, kept
    in registers, stored back; needs ``random.state_dtype``) and "in_place" (every draw reads and writes
    states[i] in global memory, the form of nvmath-python's examples). ``random``: cumath's or nvmath's module."""
    jit = cuda.jit(link=compiled.files, extensions=compiled.extension, fastmath=fastmath)

    def init(states, seed):
        i = cuda.grid(1)
        if i < states.shape[0]:
            random.init(seed, i, 0, states[i])

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

    out = {"init": jit(init), "in_place": jit(in_place)}
    if hasattr(random, "state_dtype"):
        state_dt = random.state_dtype(random.StatesPhilox4_32_10)

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

        out["register"] = jit(register)
    return out


GBM = dict(nsteps=252, mu=np.float32(0.0003), sigma=np.float32(0.012), s0=np.float32(100.0))


def gbm_launches(cp, random, kernels, npaths, threads=128):
    """name -> launch() for each GBM kernel form over one set of states and paths, and the paths array."""
    states = random.StatesPhilox4_32_10(npaths)
    paths = cp.empty((npaths, GBM["nsteps"]), dtype=cp.float32, order="F")
    kernels["init"][npaths // 128, 128](states, 7777)
    out = {}
    for form in ("register", "in_place"):
        if form in kernels:
            k = kernels[form][npaths // threads, threads]
            out[form] = (lambda k=k: k(states, paths, GBM["nsteps"], GBM["mu"], GBM["sigma"], GBM["s0"]))
    return out, paths, states


@bench.case("gbm/kernel", "GBM 524,288 paths x 252 steps float32, Philox4_32_10 normal4", gpu=True)
def gbm_kernel(case):
    cp, cuda = setup("gpu", "numba", "curand")
    from cumath.device import random

    npaths = 65536 if case.quick else 524288
    compiled = random.Compile()
    kernels = gbm_kernels(cuda, random, compiled)
    runs, paths, states = gbm_launches(cp, random, kernels, npaths)
    runs["in_place"]()
    last = cp.asnumpy(paths[:, -1])
    kernels["init"][npaths // 128, 128](states, 7777)
    runs["register"]()
    same = bool(np.array_equal(last, cp.asnumpy(paths[:, -1])))
    mu, sigma, s0 = float(GBM["mu"]), float(GBM["sigma"]), float(GBM["s0"])

    def cupy_gbm():
        z = cp.random.standard_normal((npaths, GBM["nsteps"] - 1), dtype=cp.float32) * sigma + mu
        out = cp.empty((npaths, GBM["nsteps"]), dtype=cp.float32)
        out[:, 0] = s0
        out[:, 1:] = s0 * cp.exp(cp.cumsum(z, axis=1))
        return out

    fns = {"cumath kernel, state in registers": runs["register"],
           "cumath kernel, states[i] drawn from in memory": runs["in_place"],
           "cupy standard_normal + cumsum + exp": cupy_gbm}
    nvrandom = None
    if optional("nvmath") is not None:
        try:
            from nvmath.device import random as nvrandom

            nk = gbm_kernels(cuda, nvrandom, nvrandom.Compile())
            nruns, _, _ = gbm_launches(cp, nvrandom, nk, npaths)
            for fn in nruns.values():  # compiled here, so that a failure leaves the other rows
                fn()
            cuda.synchronize()
            for form, fn in nruns.items():
                fns[f"nvmath-python random, {'state in registers' if form == 'register' else 'states[i] in memory'}"] = fn
        except Exception as exc:  # noqa: BLE001
            case.note(f"nvmath-python's device random module not measured: {type(exc).__name__}: {exc}")
    case.time(fns, sync=cuda.synchronize, rounds=case.rounds(7, 3), target=0.05,
              extra={"cumath kernel, states[i] drawn from in memory": {"same_paths_as_registers": same}})
    lr = np.log(cp.asnumpy(paths[:, -1]).astype(np.float64) / s0)
    case.note(f"mean log return of the last paths: {lr.mean():.4g} (expected {(GBM['nsteps'] - 1) * mu:.4g})")
    for name in fns:
        if name.startswith("cumath"):
            case.ratio(name, "cupy standard_normal + cumsum + exp")
            if nvrandom is not None:
                case.ratio(name, "nvmath-python random, states[i] in memory")
    if npaths == 524288:
        case.value("reference: nvmath-python's device-RNG GBM example, H200, 2026-11-29", NVMATH_GBM_US, "us")
        st = case.stats("cumath kernel, state in registers")
        case.note(f"cumath kernel, state in registers / that reference: {st.median * 1e6 / NVMATH_GBM_US:.3f}")


@bench.case("gbm/first-use", "GBM: time to a first result in a fresh process and in a second one", gpu=True)
def gbm_first_use(case):
    setup("gpu", "numba", "curand")
    with tempfile.TemporaryDirectory() as cache:
        cold = first_use(_FIRST_USE, cache)
        warm = first_use(_FIRST_USE, cache)
    for label, r in (("fresh process (shim compiled)", cold), ("second process (disk cache)", warm)):
        case.value(f"{label}: first result", r["seconds"], "s")
        for k in ("imports_and_context", "shim", "kernels_compiled_and_run"):
            case.value(f"{label}: {k.replace('_', ' ')}", r[k], "s")
    case.note(f"second process / fresh process: whole {warm['seconds'] / cold['seconds']:.3f}, "
              f"cuRAND shim {warm['shim'] / cold['shim']:.3f}")


# ------------------------------------------------------------------------------------------------------ FFT
def fft_kernels(cuda, fwd, inv, vector_access=True):
    """The block FFT of rows and the FFT convolution of rows, one kernel each. Global memory is read and written
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


def fft_descriptors(ept=16, fpb=4, n=128):
    import cumath.device as dev

    kw = dict(size=n, precision=np.float32, fft_type="c2c", execution="Block", ffts_per_block=fpb,
              elements_per_thread=ept)
    return dev.FFT(direction="forward", **kw), dev.FFT(direction="inverse", **kw)


def fft_rows_data(cp, batch, n=128):
    rng = cp.random.default_rng(0)
    x = (rng.standard_normal((batch, n), dtype=cp.float32)
         + 1j * rng.standard_normal((batch, n), dtype=cp.float32)).astype(cp.complex64)
    return x, cp.fft.fft(x, axis=-1)


def launch_rows(kernel, f, batch):
    return kernel[-(-batch // f.ffts_per_block), f.block_dim, 0, f.shared_memory_size]


@bench.case("fft/rows", "block FFT: 2^20 rows of size 128 complex64 in one kernel", gpu=True)
def fft_rows_case(case):
    cp, cuda = setup("gpu", "numba", "mathdx")
    batch = 1 << 16 if case.quick else 1 << 20
    t0 = time.perf_counter()
    # 16 elements per thread, 4 FFTs per block: the fastest shape of the sweep group on the H200 (libmathdx's
    # suggestion, 8 x 12, was 1.10x cuFFT's time there)
    fwd, inv = fft_descriptors()
    fwd.files, inv.files  # generate (or read from the cache) both LTO-IRs now
    case.value("descriptors + code (first use in this process)", time.perf_counter() - t0, "s")
    fft_rows, _ = fft_kernels(cuda, fwd, inv)
    fft_indexed = fft_kernels(cuda, fwd, inv, vector_access=False)[0]
    x, ref = fft_rows_data(cp, batch)
    y, y2, y3 = cp.zeros_like(x), cp.empty_like(x), cp.empty_like(x)
    run, indexed = launch_rows(fft_rows, fwd, batch), launch_rows(fft_indexed, fwd, batch)
    run(x, y)
    indexed(x, y3)
    err = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
    fns = {"cumath block FFT (load/store)": lambda: run(x, y), "same, numba's x[i] indexing": lambda: indexed(x, y3),
           "cuFFT through cupy.fft.fft": lambda: cp.fft.fft(x, axis=-1),
           "copy of the same bytes (cupy.copyto)": lambda: cp.copyto(y2, x)}
    t = case.time(fns, sync=cuda.synchronize, rounds=case.rounds(10, 3), target=0.05,
                  extra={"cumath block FFT (load/store)": {"rel_err": err},
                         "same, numba's x[i] indexing": {"same_result": bool(cp.array_equal(y3, y))}})
    for r in case.rows:
        if "stats" in r:
            r["GBps"] = 2 * x.nbytes / t[r["contender"]].median / 1e9
    for peer in list(fns)[1:]:
        case.ratio("cumath block FFT (load/store)", peer)


@bench.case("fft/convolution", "block FFT convolution of 2^20 rows of size 128 complex64 in one kernel", gpu=True)
def fft_convolution_case(case):
    cp, cuda = setup("gpu", "numba", "mathdx")
    batch, n = (1 << 16 if case.quick else 1 << 20), 128
    fwd, inv = fft_descriptors()
    _, convolve = fft_kernels(cuda, fwd, inv)
    x, _ = fft_rows_data(cp, batch)
    h = cp.fft.fft(cp.exp(-cp.arange(n, dtype=cp.float32) / 8)).astype(cp.complex64)
    y = cp.zeros_like(x)
    run = launch_rows(convolve, fwd, batch)
    run(x, h, y)
    ref = cp.fft.ifft(cp.fft.fft(x, axis=-1) * h, axis=-1)
    err = float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))
    fns = {"cumath FFT convolution in one kernel": lambda: run(x, h, y),
           "cupy ifft(fft(x) * h)": lambda: cp.fft.ifft(cp.fft.fft(x, axis=-1) * h, axis=-1)}
    case.time(fns, sync=cuda.synchronize, rounds=case.rounds(7, 3), target=0.05,
              extra={"cumath FFT convolution in one kernel": {"rel_err": err}})
    case.ratio("cumath FFT convolution in one kernel", "cupy ifft(fft(x) * h)")


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


@bench.case("gemm/batched", "block GEMM: batched 32 x 32 x 32 float32, one GEMM per block", gpu=True)
def gemm_case(case):
    cp, cuda = setup("gpu", "numba", "mathdx")
    import cumath.device as dev

    m = n = k = 32
    batch = 4096 if case.quick else 65536
    MM = dev.Matmul(size=(m, n, k), precision=np.float32, data_type="real", block_size=128,
                    arrangement=("row_major", "row_major", "row_major"))
    launch = gemm_kernel(cuda, MM)[batch, MM.block_dim]
    rng = cp.random.default_rng(1)
    a = rng.standard_normal((batch, m, k), dtype=cp.float32)
    b = rng.standard_normal((batch, k, n), dtype=cp.float32)
    c = cp.empty((batch, m, n), dtype=cp.float32)
    af, bf, cf = a.reshape(batch, -1), b.reshape(batch, -1), c.reshape(batch, -1)
    launch(af, bf, cf)
    err = float(cp.linalg.norm(c - cp.matmul(a, b)) / cp.linalg.norm(c))
    fns = {"cumath block GEMM": lambda: launch(af, bf, cf), "cuBLAS batched through cupy.matmul": lambda: cp.matmul(a, b)}
    t = case.time(fns, sync=cuda.synchronize, rounds=case.rounds(7, 3), target=0.05,
                  extra={"cumath block GEMM": {"rel_err": err}})
    for r in case.rows:
        if "stats" in r:
            r["TFLOPs"] = 2 * m * n * k * batch / t[r["contender"]].median / 1e12
    case.ratio("cumath block GEMM", "cuBLAS batched through cupy.matmul")


# ---------------------------------------------------------------------------------------------------- sweep
FFT_SHAPES = [(4, 2), (4, 8), (8, 2), (8, 4), (8, 8), (8, 12), (8, 16), (16, 1), (16, 2), (16, 4), (16, 8),
              (16, 16), (32, 2), (32, 4), (32, 8)]


@bench.case("sweep/fft-shapes", "block FFT 2^20 x 128 complex64: elements per thread x FFTs per block", gpu=True,
            default=False)
def sweep_fft(case):
    cp, cuda = setup("gpu", "numba", "mathdx")
    batch = 1 << 20
    x, ref = fft_rows_data(cp, batch)
    y, y2 = cp.empty_like(x), cp.empty_like(x)
    fns = {"cuFFT through cupy.fft.fft": lambda: cp.fft.fft(x, axis=-1),
           "copy of the same bytes (cupy.copyto)": lambda: cp.copyto(y2, x)}
    errs = {}
    for ept, fpb in FFT_SHAPES:
        try:
            f, inv = fft_descriptors(ept, fpb)
            run = launch_rows(fft_kernels(cuda, f, inv)[0], f, batch)
            y.fill(0)
            run(x, y)
        except Exception as exc:  # noqa: BLE001 - a shape libmathdx does not offer
            case.note(f"{ept} elements per thread x {fpb} FFTs per block: {type(exc).__name__}: {exc}")
            continue
        name = f"{ept} elements per thread x {fpb} FFTs per block"
        errs[name] = {"rel_err": float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref))}
        fns[name] = lambda run=run: run(x, y)
    case.time(fns, sync=cuda.synchronize, rounds=case.rounds(5, 2), target=0.03, extra=errs)
    for name in errs:
        case.ratio(name, "cuFFT through cupy.fft.fft")


@bench.case("sweep/gbm-threads", "GBM: threads per block, state in registers and in memory", gpu=True, default=False)
def sweep_gbm(case):
    cp, cuda = setup("gpu", "numba", "curand")
    from cumath.device import random

    compiled = random.Compile()
    fns = {}
    for fastmath in (False, True):
        kernels = gbm_kernels(cuda, random, compiled, fastmath)
        for threads in (64, 128, 256):
            runs, _, _ = gbm_launches(cp, random, kernels, 524288, threads)
            for form, fn in runs.items():
                fns[f"{form}, {threads} threads{', fastmath' if fastmath else ''}"] = fn
    case.time(fns, sync=cuda.synchronize, rounds=case.rounds(5, 2), target=0.03)
    for name in fns:
        if name != "register, 128 threads":
            case.ratio(name, "register, 128 threads")


if __name__ == "__main__":
    sys.exit(bench.main())
