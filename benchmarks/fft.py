"""FFT benchmark: cumath.fft against its peers, in one process, on the same data.

Groups (``--list`` shows every case):
  cpu        1-D 2048 and 2^20 complex128, 4096 x 1024 batched and 2048^2 2-D complex64, 2^20 float64 rfft
             (``_fft_cpu.py``): cumath without wisdom ('auto', DFTI, FFTW_ESTIMATE: each row names the engine and
             plan kind read back from the plan), then FFTW_MEASURE, stateless from wisdom and the MKL engines,
             against pyFFTW (FFTW_MEASURE plans, .execute()), pyfftw.interfaces, mkl_fft, scipy.fft and
             numpy.fft; the first call in fresh processes (no wisdom), its planning split into imports, library
             loading and planning proper.
  nowisdom   (optional) FFTW_ESTIMATE and DFTI against FFTW_MEASURE over 26 problems, with all threads (wall
             time) or one (CPU time): the data behind the 'auto' engine's rule for problems without wisdom.
  percall    the cost of one call of a small transform: CPU 2048 and 16 points complex128 (stateless
             cumath.fft.fft, FFT.execute, pyFFTW's FFTW.execute); GPU 2048 complex128 and 64^3 complex64 (cumath
             with CuPy and PyTorch operands, cupy.fft, torch.fft, nvmath-python); NumPy in, GPU FFT, NumPy out.
  gpu        large GPU FFTs (4096 x 4096 along the last axis, 8192^2 2-D, 512^3 3-D complex64) against CuPy,
             PyTorch and nvmath-python, which all call cuFFT.
  callbacks  GPU: a Gaussian image filter with the filter compiled as a cuFFT callback (fused into cuFFT's
             kernels or run as a separate pass) against unfused CuPy and PyTorch pipelines; identity callbacks
             against plain cuFFT over several shapes (the data behind FFTOptions(callback_fusion='auto')).

    python benchmarks/fft.py                           # every case; GPU cases skip without a GPU
    python benchmarks/fft.py --quick --case percall    # the per-call group, short
    python benchmarks/fft.py --case cpu/c128-2048 --case gpu --json fft.json
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import Bench, Skip, device_sync, need, optional  # noqa: E402

# pyFFTW before MKL's FFTW interface is first used: MKL then exports fftw_* process-wide and an FFTW extension
# loaded later would call MKL (benchmarks/NOTES.md, "MKL symbols").
pyfftw = optional("pyfftw")

import cumath  # noqa: E402
import cumath.fft  # noqa: E402
from _fft_cpu import CPU_CASES, cpu_case, no_wisdom_sweep  # noqa: E402

bench = Bench("fft", __doc__)
RNG = np.random.default_rng(7)


def cdata(shape, dtype):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def rel_err(got, ref) -> float:
    return float(np.linalg.norm(np.asarray(got) - ref) / np.linalg.norm(ref))


# ------------------------------------------------------------------------------------------------ CPU
# the CPU cases live in _fft_cpu.py (first calls without wisdom against FFTW's measured plans)
for _cid, _title, *_spec in CPU_CASES:
    bench.case(f"cpu/{_cid}", _title)(functools.partial(cpu_case, shape=_spec[0], dtype=_spec[1], axes=_spec[2],
                                                         kind=_spec[3], cid=_cid))
bench.case("nowisdom/sweep", "CPU problems without wisdom: FFTW_ESTIMATE and DFTI against FFTW_MEASURE (the data "
           "behind the 'auto' engine's rule)", default=False)(no_wisdom_sweep)
bench.case("nowisdom/sweep-1thread", "The same with one thread per plan, timed by the calling thread's CPU time "
           "(robust to a loaded machine)", default=False)(functools.partial(no_wisdom_sweep, threads=1))


# ------------------------------------------------------------------------------------------- per call
def percall_cpu(case, n):
    x = cdata((n,), np.complex128)
    ref = np.fft.fft(x)
    with cumath.fft.FFT(x, options={"planning_effort": "measure"}) as f0:
        f0.plan()  # the process now has measured wisdom: the plans below (stateless and stateful) use it
    f = cumath.fft.FFT(x)
    f.plan()
    errs = {"cumath.fft.fft (stateless)": rel_err(cumath.fft.fft(x), ref),
            "cumath FFT.execute (stateful)": rel_err(f.execute(), ref)}
    fns = {"cumath.fft.fft (stateless)": lambda: cumath.fft.fft(x), "cumath FFT.execute (stateful)": f.execute}
    fresh = _without_reuse(lambda: cumath.fft.FFT(x))  # CUMATH_RECYCLE_RESULTS=0: a new result every call
    if fresh is not None:
        fns["cumath FFT.execute (new result each call)"] = fresh.execute
    else:
        case.note("no switch for result reuse found: no row with it")
    if pyfftw is not None:  # one thread: the faster for small sizes (cumath also uses one below 2^15 points)
        a, b = pyfftw.empty_aligned(n, dtype=np.complex128), pyfftw.empty_aligned(n, dtype=np.complex128)
        obj = pyfftw.FFTW(a, b, flags=("FFTW_MEASURE",), threads=1)
        a[...] = x
        fns["pyfftw FFTW.execute (measure, 1 thread)"] = obj.execute

        def pyfftw_new_result():  # what a user of pyFFTW does for a result of its own each call
            obj.execute()
            return pyfftw.empty_aligned(n, dtype=np.complex128)

        fns["pyfftw FFTW.execute + new aligned result"] = pyfftw_new_result
        same = _pyfftw_on_cumaths_memory(f, x, n)
        if same is not None:  # the same input and output memory as cumath's: their difference is per-call cost
            fns["pyfftw FFTW.execute (cumath's memory)"] = same.execute
        else:
            case.note("cumath's stateful execute keeps no result here: no row on its memory")
    else:
        case.note("pyfftw not installed: no pyFFTW row")
    import scipy.fft as sfft

    fns["scipy.fft.fft"] = lambda: sfft.fft(x)
    fns["numpy.fft.fft"] = lambda: np.fft.fft(x)
    case.time(fns, rounds=case.rounds(12, 4), target=0.02 if case.quick else 0.05,
              extra={k: {"rel_err": v} for k, v in errs.items()})
    # the targets: stateless <= 2.0x execute (16 points); stateless <= 1.25x and execute <= 1.05x pyFFTW's
    # execute (2048 points; the stateful execute reuses a result the caller dropped, the stateless call does not)
    case.ratio("cumath.fft.fft (stateless)", "cumath FFT.execute (stateful)")
    case.ratio("cumath.fft.fft (stateless)", "pyfftw FFTW.execute + new aligned result")
    case.ratio("cumath FFT.execute (stateful)", "pyfftw FFTW.execute + new aligned result")
    case.ratio("cumath FFT.execute (stateful)", "pyfftw FFTW.execute (measure, 1 thread)")
    case.ratio("cumath.fft.fft (stateless)", "pyfftw FFTW.execute (measure, 1 thread)")
    case.ratio("cumath.fft.fft (stateless)", "numpy.fft.fft")
    case.ratio("cumath FFT.execute (stateful)", "pyfftw FFTW.execute (cumath's memory)")
    case.ratio("cumath FFT.execute (stateful)", "cumath FFT.execute (new result each call)")
    case.ratio("cumath FFT.execute (new result each call)", "pyfftw FFTW.execute (measure, 1 thread)")
    f.free()


def _pyfftw_on_cumaths_memory(f, x, n):
    """A pyFFTW plan reading ``x`` and writing the result buffer ``f.execute()`` reuses, or None where ``f`` keeps
    none. Where arrays sit decides 5-10% of a 2048-point FFT (an input off its 64-byte line runs slower), so this is
    the row that compares per-call costs alone. pyFFTW gets the buffer by address, not by a reference (which would
    stop its reuse); it is run only while ``f`` holds the buffer (f is freed after the timing)."""
    import ctypes

    r = getattr(f, "_executor", None)
    runner = getattr(r, "_runner", None)
    if runner is None or not runner.recycle:
        return None
    y = f.execute()
    p = y.__array_interface__["data"][0]
    del y
    if any(f.execute().__array_interface__["data"][0] != p for _ in range(3)):
        return None
    out = np.ctypeslib.as_array((ctypes.c_double * (2 * n)).from_address(p)).view(np.complex128)
    obj = pyfftw.FFTW(x.copy(), pyfftw.empty_aligned(n, dtype=np.complex128), flags=("FFTW_MEASURE",), threads=1)
    obj.update_arrays(x, out)
    return obj


def _without_reuse(make):
    """A planned FFT that returns a new result every call (``CUMATH_RECYCLE_RESULTS=0``), or None without the
    switch (``_core.recycle.COMPILED``)."""
    try:
        from cumath._core import recycle
    except ImportError:
        return None
    if not hasattr(recycle, "COMPILED"):
        return None
    old, recycle.COMPILED = recycle.COMPILED, False
    try:
        f = make()
        f.plan()
    finally:
        recycle.COMPILED = old
    return f


bench.case("percall/cpu-2048", "CPU, one 2048-point complex128 FFT per call")(functools.partial(percall_cpu, n=2048))
bench.case("percall/cpu-16", "CPU, one 16-point complex128 FFT per call")(functools.partial(percall_cpu, n=16))


def gpu_peers(fns, cp, torch, xc, xt, dims):
    """cupy.fft and torch.fft on the same data (their 1-D functions for one axis); returns the names."""
    names = []
    if xc is not None:
        name = "cupy.fft.fft" if len(dims) == 1 else "cupy.fft.fftn"
        fns[name] = (lambda: cp.fft.fft(xc, axis=dims[0])) if len(dims) == 1 else (lambda: cp.fft.fftn(xc, axes=dims))
        names.append(name)
    if xt is not None:
        name = "torch.fft.fft" if len(dims) == 1 else "torch.fft.fftn"
        fns[name] = (lambda: torch.fft.fft(xt, dim=dims[0])) if len(dims) == 1 else (lambda: torch.fft.fftn(xt, dim=dims))
        names.append(name)
    return names


def nvmath_contenders(case, fns, plans, xc, axes, stateless=True):
    if optional("nvmath") is None or xc is None:
        case.note("nvmath-python (with CuPy) not installed: no nvmath rows")
        return
    try:
        import nvmath.fft as nvfft

        g = nvfft.FFT(xc, axes=axes)
        g.plan()
        plans.append(g)
        g.execute()
        if stateless:
            nvfft.fft(xc, axes=axes)
            fns["nvmath.fft.fft (stateless, cupy)"] = lambda: nvfft.fft(xc, axes=axes)
        fns["nvmath FFT.execute (cupy)"] = g.execute
    except Exception as exc:  # noqa: BLE001
        case.note(f"nvmath-python not measured: {type(exc).__name__}: {exc}")


def gpu_ratios(case, peers):
    """Each cumath row against the peers of its operand's package (CuPy rows also against PyTorch and
    nvmath-python), and stateless against stateful."""
    for r in list(case.rows):
        name = r["contender"]
        if not (name.startswith("cumath") and "stats" in r):
            continue
        for p in peers:
            if "(cupy" in name or "cupy" not in p:
                case.ratio(name, p)
        if "cupy)" in name:
            case.ratio(name, "nvmath FFT.execute (cupy)")
    for label in ("cupy", "torch"):
        case.ratio(f"cumath.fft.fft (stateless, {label})", f"cumath FFT.execute ({label})")


def gpu_packages():
    cp, torch = optional("cupy"), optional("torch")
    if torch is not None and not torch.cuda.is_available():
        torch = None
    if cp is None and torch is None:
        raise Skip("needs CuPy or a CUDA PyTorch")
    return cp, torch


def percall_gpu(case, shape, dtype):
    cp, torch = gpu_packages()
    xh = cdata(shape, dtype)
    ref = np.fft.fftn(xh.astype(np.complex128))
    xc = cp.asarray(xh) if cp is not None else None
    xt = torch.from_numpy(xh).cuda() if torch is not None else None
    fns, plans, errs = {}, [], {}
    for label, x in (("cupy", xc), ("torch", xt)):
        if x is None:
            continue
        f = cumath.fft.FFT(x)
        f.plan()
        plans.append(f)
        fns[f"cumath.fft.fft (stateless, {label})"] = lambda x=x: cumath.fft.fft(x)
        fns[f"cumath FFT.execute ({label})"] = f.execute
        host = (lambda y: y.get()) if label == "cupy" else (lambda y: y.cpu().numpy())
        errs[f"cumath FFT.execute ({label})"] = {"rel_err": rel_err(host(f.execute()), ref)}
        for _ in range(2):  # the second call is the compiled hit path's
            y = cumath.fft.fft(x)
        errs[f"cumath.fft.fft (stateless, {label})"] = {"rel_err": rel_err(host(y), ref)}
    peers = gpu_peers(fns, cp, torch, xc, xt, tuple(range(len(shape))))
    nvmath_contenders(case, fns, plans, xc, None)
    case.time(fns, sync=device_sync(), rounds=case.rounds(12, 4), target=0.02 if case.quick else 0.05, extra=errs)
    gpu_ratios(case, peers)
    for p in plans:
        p.free()


bench.case("percall/gpu-2048", "GPU, one 2048-point complex128 FFT per call", gpu=True)(
    functools.partial(percall_gpu, shape=(2048,), dtype=np.complex128))
bench.case("percall/gpu-64cube", "GPU, one 64 x 64 x 64 complex64 3-D FFT per call", gpu=True)(
    functools.partial(percall_gpu, shape=(64, 64, 64), dtype=np.complex64))


@bench.case("percall/gpu-2048-numpy", "NumPy in, GPU FFT, NumPy out: 2048 complex128 per call", gpu=True)
def percall_gpu_numpy(case):
    xh = cdata((2048,), np.complex128)
    ref = np.fft.fft(xh)
    f = cumath.fft.FFT(xh, execution="cuda")
    f.plan()
    fns = {"cumath.fft.fft (stateless, execution='cuda')": lambda: cumath.fft.fft(xh, execution="cuda"),
           "cumath FFT.execute (execution='cuda')": f.execute, "numpy.fft.fft (on the host)": lambda: np.fft.fft(xh)}
    if optional("nvmath") is not None:
        try:
            import nvmath.fft as nvfft

            nvfft.fft(xh, execution="cuda")
            fns["nvmath.fft.fft (NumPy, execution='cuda')"] = lambda: nvfft.fft(xh, execution="cuda")
        except Exception as exc:  # noqa: BLE001
            case.note(f"nvmath-python not measured: {type(exc).__name__}: {exc}")
    case.time(fns, sync=device_sync(), rounds=case.rounds(10, 4), target=0.02 if case.quick else 0.05,
              extra={"cumath FFT.execute (execution='cuda')": {"rel_err": rel_err(f.execute(), ref)}})
    case.ratio("cumath.fft.fft (stateless, execution='cuda')", "cumath FFT.execute (execution='cuda')")
    case.ratio("cumath.fft.fft (stateless, execution='cuda')", "nvmath.fft.fft (NumPy, execution='cuda')")
    f.free()


# ------------------------------------------------------------------------------------------ large GPU
def large_gpu(case, shape, axes):
    cp = need("cupy")
    torch = optional("torch")
    torch = torch if torch is not None and torch.cuda.is_available() else None
    x = (cp.random.standard_normal(shape, dtype=cp.float32)
         + 1j * cp.random.standard_normal(shape, dtype=cp.float32)).astype(cp.complex64)
    yr = cp.fft.fftn(x.astype(cp.complex128), axes=axes)
    err = float(cp.linalg.norm(cumath.fft.fft(x, axes=axes) - yr) / cp.linalg.norm(yr))
    del yr
    xt = torch.as_tensor(x, device="cuda") if torch is not None else None
    f = cumath.fft.FFT(x, axes=axes)
    f.plan()
    plans = [f]
    fns = {"cumath FFT.execute (cupy)": f.execute,
           "cumath.fft.fft (stateless, cupy)": lambda: cumath.fft.fft(x, axes=axes)}
    if xt is not None:
        fns["cumath.fft.fft (stateless, torch)"] = lambda: cumath.fft.fft(xt, axes=axes)
    peers = gpu_peers(fns, cp, torch, x, xt, axes)
    nvmath_contenders(case, fns, plans, x, axes, stateless=False)
    case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.05 if case.quick else 0.2,
              extra={"cumath.fft.fft (stateless, cupy)": {"rel_err": err}})
    gpu_ratios(case, peers)
    for p in plans:
        p.free()
    fns.clear()
    x = xt = None
    cp.get_default_memory_pool().free_all_blocks()
    if torch is not None:
        torch.cuda.empty_cache()


for _cid, _title, _shape, _axes in (("c64-4096x4096", "4096 x 4096 complex64 along the last axis", (4096, 4096), (-1,)),
                                    ("c64-8192x8192", "8192 x 8192 complex64, 2-D", (8192, 8192), (-2, -1)),
                                    ("c64-512cube", "512^3 complex64, 3-D", (512, 512, 512), (-3, -2, -1))):
    bench.case(f"gpu/{_cid}", _title, gpu=True)(functools.partial(large_gpu, shape=_shape, axes=_axes))


# ------------------------------------------------------------------------------------------ callbacks
def gaussian_epilog(h: int, w: int, sigma: float):
    """The filter exp(-2 pi^2 sigma^2 (fx^2 + fy^2)) / (h w) of an h x w image as an R2C epilog over the w//2+1
    columns of the spectrum (C order): the offset gives (row, column), frequencies as numpy.fft.fftfreq and
    rfftfreq, scaled so that the unnormalised C2R that follows returns the filtered image. float32 arithmetic,
    written out in the callback itself (numba compiles it; it cannot call a Python helper)."""
    wc, half = np.uint64(w // 2 + 1), np.uint64((h + 1) // 2)
    inv_h, inv_w = np.float32(1.0 / h), np.float32(1.0 / w)
    coef, scale, one = np.float32(-2.0 * math.pi ** 2 * sigma ** 2), np.float32(1.0 / (h * w)), np.float32(1.0)

    def gaussian(data_out, offset, value, user_info, unused):
        row = offset // wc
        col = offset - row * wc
        fy = np.float32(row) * inv_h
        if row >= half:
            fy -= one
        fx = np.float32(col) * inv_w
        data_out[offset] = value * (scale * math.exp(coef * (fx * fx + fy * fy)))

    return gaussian


def gaussian_prolog(h: int, w: int, sigma: float):
    """The same filter as a C2R prolog (applied as cuFFT loads the spectrum)."""
    wc, half = np.uint64(w // 2 + 1), np.uint64((h + 1) // 2)
    inv_h, inv_w = np.float32(1.0 / h), np.float32(1.0 / w)
    coef, scale, one = np.float32(-2.0 * math.pi ** 2 * sigma ** 2), np.float32(1.0 / (h * w)), np.float32(1.0)

    def gaussian_load(data_in, offset, user_info, unused):
        row = offset // wc
        col = offset - row * wc
        fy = np.float32(row) * inv_h
        if row >= half:
            fy -= one
        fx = np.float32(col) * inv_w
        return data_in[offset] * (scale * math.exp(coef * (fx * fx + fy * fy)))

    return gaussian_load


def identity_store(data_out, offset, value, user_info, unused):
    data_out[offset] = value


def identity_load(data_in, offset, user_info, unused):
    return data_in[offset]


def gaussian_array(h, w, sigma, scaled):
    fy, fx = np.fft.fftfreq(h)[:, None], np.fft.rfftfreq(w)[None, :]
    g = np.exp(-2 * np.pi ** 2 * sigma ** 2 * (fx ** 2 + fy ** 2))
    return (g / (h * w) if scaled else g).astype(np.float32)


COMPILE_SCRIPT = r"""
import importlib.util, json, sys, time
import cupy as cp
cp.zeros(1)  # CUDA initialised, as in any process that uses the GPU
t0 = time.perf_counter()
import cumath.fft as F
t1 = time.perf_counter()
spec = importlib.util.spec_from_file_location("bench_fft", {path!r})
B = importlib.util.module_from_spec(spec); spec.loader.exec_module(B)
fn = B.gaussian_epilog({h}, {w}, {sigma})
t2 = time.perf_counter()
ir = F.compile_epilog(fn, "complex64", None)
t3 = time.perf_counter()
numba = any(m.split(".")[0] in ("numba", "numba_cuda") for m in sys.modules)
print(json.dumps({{"import_s": t1 - t0, "compile_s": t3 - t2, "numba_imported": numba, "bytes": len(ir)}}))
"""

CALLBACK_SIZE, SIGMA = 8192, 4.0


def callback_setup():
    cp = need("cupy")
    try:
        F = cumath.fft
        F.compile_epilog(identity_store, "complex64", None)
    except Exception as exc:  # noqa: BLE001 - numba-cuda missing, or no NVRTC/nvJitLink
        raise Skip(f"callbacks cannot be compiled here: {type(exc).__name__}: {exc}") from None
    return cp, F


@bench.case("callbacks/compile", "GPU: the first compile of a callback in fresh processes, and from the disk cache",
            gpu=True)
def callbacks_compile(case):
    callback_setup()
    h = w = CALLBACK_SIZE
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, CUMATH_CACHE_DIR=d, PYTHONPATH=os.pathsep.join(sys.path))
        code = COMPILE_SCRIPT.format(path=os.path.abspath(__file__), h=h, w=w, sigma=SIGMA)
        for label in ("first process (compiles)", "second process (disk cache)"):
            res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
            if res.returncode:
                raise RuntimeError(f"{label}: {res.stderr[-2000:]}")
            r = json.loads(res.stdout.strip().splitlines()[-1])
            case.value(f"{label}: import cumath.fft", r["import_s"] * 1e3, "ms")
            case.value(f"{label}: compile_epilog", r["compile_s"] * 1e3, "ms", numba_imported=r["numba_imported"],
                       bytes=r["bytes"])


@bench.case("callbacks/gaussian", "GPU: Gaussian filter of an 8192 x 8192 float32 image, filter as a callback",
            gpu=True)
def callbacks_gaussian(case):
    cp, F = callback_setup()
    torch = optional("torch")
    h = w = CALLBACK_SIZE
    ir = F.compile_epilog(gaussian_epilog(h, w, SIGMA), "complex64", None)
    ir_load = F.compile_prolog(gaussian_prolog(h, w, SIGMA), "complex64", None)
    img = cp.random.default_rng(1).standard_normal((h, w), dtype=cp.float32)
    H_scaled, H_peer = cp.asarray(gaussian_array(h, w, SIGMA, True)), cp.asarray(gaussian_array(h, w, SIGMA, False))
    over = F.FFTOptions(overwrite_input=True)
    over_fused = F.FFTOptions(overwrite_input=True, callback_fusion="fused")
    fused_opt = F.FFTOptions(callback_fusion="fused")
    objs = {}

    def planned(key, x, options, **callbacks):
        t = time.perf_counter()
        objs[key] = F.FFT(x, options=options)
        objs[key].plan(**callbacks)
        case.value(f"plan: {key}", time.perf_counter() - t, "s")

    for fusion in ("auto", "separate", "fused"):
        planned(f"R2C, epilog {fusion}", img, {"fft_type": "R2C", "callback_fusion": fusion}, epilog=ir)
    planned("R2C plain", img, {"fft_type": "R2C"})
    spec = objs["R2C plain"].execute()
    c2r = {"fft_type": "C2R", "overwrite_input": True}
    planned("C2R plain (overwrite_input)", spec, c2r)
    for fusion in ("separate", "fused"):
        planned(f"C2R, prolog {fusion}", spec, dict(c2r, callback_fusion=fusion), prolog=ir_load)

    def chain(first, second):
        def run():
            objs[second].reset_operand_unchecked(objs[first].execute())
            return objs[second].execute()
        return run

    fns = {
        "cumath stateful auto (R2C epilog; C2R overwrite_input)": chain("R2C, epilog auto", "C2R plain (overwrite_input)"),
        "cumath stateful separate (R2C epilog)": chain("R2C, epilog separate", "C2R plain (overwrite_input)"),
        "cumath stateful fused (R2C epilog)": chain("R2C, epilog fused", "C2R plain (overwrite_input)"),
        "cumath stateful separate (filter as C2R prolog)": chain("R2C plain", "C2R, prolog separate"),
        "cumath stateful fused (filter as C2R prolog)": chain("R2C plain", "C2R, prolog fused"),
        "cumath stateless auto (R2C epilog), repeated": lambda: F.irfft(F.rfft(img, epilog=ir), options=over),
        "cumath stateless fused (R2C epilog), repeated": lambda: F.irfft(F.rfft(img, epilog=ir, options=fused_opt),
                                                                         options=over_fused),
        "cumath unfused irfft(rfft(img) * H), overwrite_input": lambda: F.irfft(F.rfft(img) * H_scaled, options=over),
        "cupy irfft2(rfft2(img) * H)": lambda: cp.fft.irfft2(cp.fft.rfft2(img) * H_peer),
    }
    if torch is not None and torch.cuda.is_available():
        img_t, H_t = torch.as_tensor(img, device="cuda"), torch.as_tensor(H_peer, device="cuda")
        fns["torch irfft2(rfft2(img) * H)"] = lambda: torch.fft.irfft2(torch.fft.rfft2(img_t) * H_t, s=(h, w))
    ref = fns["cupy irfft2(rfft2(img) * H)"]()
    errs = {k: {"rel_err_vs_cupy": float(cp.linalg.norm(cp.asarray(fn()) - ref) / cp.linalg.norm(ref))}
            for k, fn in fns.items()}
    case.time(fns, sync=device_sync(), rounds=case.rounds(6, 3), target=0.02 if case.quick else 0.05, extra=errs)
    peer = "torch irfft2(rfft2(img) * H)" if "torch irfft2(rfft2(img) * H)" in fns else "cupy irfft2(rfft2(img) * H)"
    for name in fns:
        if name.startswith("cumath"):
            case.ratio(name, peer)
    case.ratio("cumath stateless auto (R2C epilog), repeated", "cumath stateful auto (R2C epilog; C2R overwrite_input)")
    case.ratio("cumath stateless fused (R2C epilog), repeated", "cumath stateful fused (R2C epilog)")
    for f in objs.values():
        f.free()
    objs.clear()
    fns.clear()
    cumath.config.plan_cache.clear()
    cp.get_default_memory_pool().free_all_blocks()


IDENTITY_CASES = [("R2C 2-D", (8192, 8192), None), ("R2C 2-D", (4096, 4096), None), ("R2C 2-D", (2048, 2048), None),
                  ("R2C 1-D batched", (16, 1 << 20), (-1,)), ("R2C 1-D batched", (4096, 1000), (-1,)),
                  ("C2C 2-D", (4096, 4096), None), ("C2C 1-D batched", (64, 1 << 16), (-1,)),
                  ("C2C 1-D batched", (16, 1 << 18), (-1,)), ("C2C 1-D batched", (4, 1 << 20), (-1,)),
                  ("R2C 1-D batched", (64, 1 << 18), (-1,))]


@bench.case("callbacks/identity", "GPU: identity callbacks, fused into cuFFT and as separate passes, vs plain cuFFT",
            gpu=True)
def callbacks_identity(case):
    cp, F = callback_setup()
    try:
        from cumath.fft._separate import choose_fusion  # what 'auto' picks for each (informational)
    except ImportError:
        choose_fusion = None
    id_store = F.compile_epilog(identity_store, "complex64", None)
    id_load, id_load_r = F.compile_prolog(identity_load, "complex64", None), F.compile_prolog(identity_load, "float32", None)
    rng = cp.random.default_rng(2)

    def planned(x, options, axes, **cb):
        f = F.FFT(x, axes=axes, options=options)
        f.plan(**cb)
        return f

    for kind, shape, axes in IDENTITY_CASES[:2] if case.quick else IDENTITY_CASES:
        label = f"{kind} {'x'.join(map(str, shape))}"
        group = {}
        if kind.startswith("C2C"):
            x = rng.standard_normal(shape, dtype=cp.float32) + 1j * rng.standard_normal(shape, dtype=cp.float32)
            group["C2C plain"] = planned(x, {}, axes)
            for fusion in ("fused", "separate"):
                o = {"callback_fusion": fusion}
                group[f"C2C epilog {fusion}"] = planned(x, o, axes, epilog=id_store)
                group[f"C2C prolog {fusion}"] = planned(x, o, axes, prolog=id_load)
            src = x
        else:
            x = rng.standard_normal(shape, dtype=cp.float32)
            group["R2C plain"] = planned(x, {"fft_type": "R2C"}, axes)
            for fusion in ("fused", "separate"):
                o = {"fft_type": "R2C", "callback_fusion": fusion}
                group[f"R2C epilog {fusion}"] = planned(x, o, axes, epilog=id_store)
                group[f"R2C prolog {fusion}"] = planned(x, o, axes, prolog=id_load_r)
            src = group["R2C plain"].execute()
            c2r = {"fft_type": "C2R", "overwrite_input": True}
            group["C2R plain"] = planned(src, c2r, axes)
            for fusion in ("fused", "separate"):
                group[f"C2R prolog {fusion}"] = planned(src, dict(c2r, callback_fusion=fusion), axes, prolog=id_load)
            for k in ("C2R plain", "C2R prolog fused", "C2R prolog separate"):
                group[k].reset_operand_unchecked(src)
        spare = src.copy()
        fns = {f"{label}: {k}": (lambda f=f: f.execute()) for k, f in group.items()}
        fns[f"{label}: one pass over the complex side (a copy)"] = lambda: cp.copyto(spare, src)
        case.time(fns, sync=device_sync(), rounds=case.rounds(4, 2), target=0.02)
        for k, f in group.items():
            typ, *rest = k.split(" ")
            if rest[-1] in ("fused", "separate"):
                case.ratio(f"{label}: {k}", f"{label}: {typ} plain")
            if rest[-1] == "fused" and choose_fusion is not None:
                try:
                    case.note(f"{label}: {typ} {rest[0]}: 'auto' picks {choose_fusion(f._geom, rest[0])[0]}")
                except Exception:  # noqa: BLE001 - internals changed: informational only
                    pass
        for f in group.values():
            f.free()
        x = src = spare = group = fns = None
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    sys.exit(bench.main())
