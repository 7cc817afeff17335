"""FFT benchmark: cumath against its peers, in one process, on the same data.

CPU peers: pyFFTW (FFTW_MEASURE plans, executed with .execute()), mkl_fft, scipy.fft (all workers),
numpy.fft. GPU peers: CuPy and PyTorch (both use cuFFT). Prints medians (and the spread of the repeats)
and the ratios the issue asks for; --json writes everything.

    python benchmarks/fft.py                 # CPU cases, and GPU cases when a GPU is present
    python benchmarks/fft.py --gpu --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cumath  # noqa: E402
from cumath._core.execution import available_cpus  # noqa: E402
from cumath._core.timing import time_call, time_interleaved  # noqa: E402

RNG = np.random.default_rng(7)
ROWS: list[dict] = []


def record(case, impl, timing, **extra):
    row = {"case": case, "impl": impl, "median_us": timing.median * 1e6, "best_us": timing.best * 1e6,
           "spread": timing.spread, **extra}
    ROWS.append(row)
    print(f"  {impl:34s} {row['median_us']:12.1f} us   (spread {100 * timing.spread:4.1f}%)", flush=True)
    return row


def cdata(shape, dtype):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


# ------------------------------------------------------------------------------------------------ CPU
CPU_CASES = [
    # name, shape, dtype, axes, kind
    ("c128 2048", (2048,), np.complex128, (-1,), "fft"),
    ("c128 2^20", (1 << 20,), np.complex128, (-1,), "fft"),
    ("c64 4096x1024 batched", (4096, 1024), np.complex64, (-1,), "fft"),
    ("c64 2048^2 2-D", (2048, 2048), np.complex64, (-2, -1), "fft"),
    ("f64 2^20 rfft", (1 << 20,), np.float64, (-1,), "rfft"),
]


def cold_first_call(shape, dtype, axes, kind):
    """A fresh process with an empty cache folder (no wisdom): seconds to import cumath.fft, to plan the
    first FFT (this loads the libraries too) and to execute it, and of a whole first stateless call in a
    second fresh process."""
    make = (
        "import time, numpy as np\n"
        f"rng = np.random.default_rng(1); shape = {shape!r}; axes = {axes!r}\n"
        f"x = rng.standard_normal(shape).astype(np.{np.dtype(dtype).name})\n"
        + ("" if kind == "rfft" else f"x = (x + 1j * rng.standard_normal(shape)).astype(np.{np.dtype(dtype).name})\n")
    )
    staged = make + (
        "t0 = time.perf_counter(); import cumath.fft; t1 = time.perf_counter()\n"
        "f = cumath.fft.FFT(x, axes=axes); f.plan(); t2 = time.perf_counter()\n"
        "f.execute(); t3 = time.perf_counter()\n"
        "print(t1 - t0, t2 - t1, t3 - t2)\n"
    )
    whole = make + (
        "import cumath\n"
        f"t0 = time.perf_counter(); cumath.fft.{kind}(x, axes=axes); t1 = time.perf_counter()\n"
        "print(t1 - t0)\n"
    )
    outs = []
    for code in (staged, whole):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, CUMATH_CACHE_DIR=d, PYTHONPATH=os.pathsep.join(sys.path))
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        outs.append([float(v) for v in out.stdout.split()])
    (imp, plan, exe), (first,) = outs
    return {"import_ms": imp * 1e3, "plan_ms": plan * 1e3, "execute_ms": exe * 1e3, "first_call_ms": first * 1e3}


def cpu_benchmarks(threads: int, quick: bool):
    try:
        import pyfftw
    except ImportError:
        pyfftw = None
    try:
        import mkl_fft
    except ImportError:
        mkl_fft = None
    import scipy.fft as sfft

    tmin = 0.05 if quick else 0.3
    print(f"\n== CPU ({threads} threads; cumath engine {cumath.fft._executors.cpu_engine('auto')}) ==")
    for name, shape, dtype, axes, kind in CPU_CASES:
        print(f"\n{name}")
        x = cdata(shape, dtype) if kind == "fft" else RNG.standard_normal(shape).astype(dtype)
        ref = (np.fft.fftn if kind == "fft" else np.fft.rfftn)(x.astype(np.complex128 if kind == "fft" else np.float64), axes=axes)
        fn = getattr(cumath.fft, kind)
        cold = cold_first_call(shape, dtype, axes, kind)
        ROWS.append({"case": name, "impl": "cumath cold start, fresh process, no wisdom", **cold})
        print("  fresh process, no wisdom: import cumath.fft {import_ms:.1f} ms, plan {plan_ms:.1f} ms, execute "
              "{execute_ms:.1f} ms; whole first stateless call {first_call_ms:.1f} ms".format(**cold))
        # stateless before any measured planning: heuristic (FFTW_ESTIMATE) plans
        y = fn(x, axes=axes)
        err = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
        record(name, "cumath stateless (estimate, no wisdom)", time_call(lambda: fn(x, axes=axes), min_time=tmin),
               rel_err=err)
        t0 = time.perf_counter()
        f = cumath.fft.FFT(x, axes=axes, options={"planning_effort": "measure"})
        f.plan()
        plan_s = time.perf_counter() - t0
        print(f"  cumath measured planning: {plan_s * 1e3:.0f} ms")
        record(name, "cumath stateful (measure)", time_call(f.execute, min_time=tmin), plan_ms=plan_s * 1e3)
        record(name, "cumath stateless (wisdom)", time_call(lambda: fn(x, axes=axes), min_time=tmin))
        f.free()
        if pyfftw is not None:
            a = pyfftw.empty_aligned(shape, dtype=x.dtype)
            a[...] = x
            outshape = list(shape)
            if kind == "rfft":
                outshape[-1] = shape[-1] // 2 + 1
            b = pyfftw.empty_aligned(outshape, dtype=x.dtype if kind == "fft" else np.result_type(x.dtype, np.complex64))
            # pyFFTW at its best: measured plans with all threads and with one (one wins for small sizes)
            for nthreads in sorted({threads, 1}, reverse=True):
                t0 = time.perf_counter()
                obj = pyfftw.FFTW(a, b, axes=axes, flags=("FFTW_MEASURE",), threads=nthreads)
                pplan = time.perf_counter() - t0
                a[...] = x
                tag = f"measure, {nthreads} thread{'s' if nthreads > 1 else ''}"
                record(name, f"pyfftw FFTW.execute ({tag})", time_call(obj.execute, min_time=tmin),
                       plan_ms=pplan * 1e3)
                record(name, f"pyfftw FFTW() call ({tag})", time_call(obj, min_time=tmin))
        if pyfftw is not None:  # pyFFTW's own stateless API, with its plan cache, as a peer of cumath's stateless call
            import pyfftw.interfaces.cache
            import pyfftw.interfaces.numpy_fft as pnf

            pyfftw.interfaces.cache.enable()
            nthreads = threads if x.size >= 1 << 15 else 1
            pf = (lambda a: pnf.fftn(a, axes=axes, threads=nthreads, planner_effort="FFTW_MEASURE")) if kind == "fft" \
                else (lambda a: pnf.rfftn(a, axes=axes, threads=nthreads, planner_effort="FFTW_MEASURE"))
            record(name, f"pyfftw.interfaces (stateless, cached, measure, {nthreads} thr)", time_call(lambda: pf(x), min_time=tmin))
            pyfftw.interfaces.cache.disable()
        if mkl_fft is not None:
            # its numpy-compatible interface; one axis through fft/rfft(axis=): its fftn over one axis of a
            # batch takes a slow path (112 ms instead of 7 ms on the batched 4096 x 1024 case)
            from mkl_fft.interfaces import numpy_fft as mnf

            if len(axes) == 1:
                mf = (lambda a: mnf.fft(a, axis=axes[0])) if kind == "fft" else (lambda a: mnf.rfft(a, axis=axes[0]))
            else:
                mf = (lambda a: mnf.fftn(a, axes=axes)) if kind == "fft" else (lambda a: mnf.rfftn(a, axes=axes))
            record(name, "mkl_fft", time_call(lambda: mf(x), min_time=tmin))
        sf = sfft.fftn if kind == "fft" else sfft.rfftn
        record(name, "scipy.fft (workers=-1)", time_call(lambda: sf(x, axes=axes, workers=-1), min_time=tmin))
        nf = np.fft.fftn if kind == "fft" else np.fft.rfftn
        record(name, "numpy.fft", time_call(lambda: nf(x, axes=axes), min_time=tmin))


# ------------------------------------------------------------------------------------------------ GPU
def gpu_benchmarks(quick: bool):
    import cupy as cp
    import torch

    tmin = 0.1 if quick else 0.4
    sync_cp = lambda: cp.cuda.get_current_stream().synchronize()  # noqa: E731
    sync_t = torch.cuda.synchronize
    print("\n== GPU: " + torch.cuda.get_device_name(0) + " ==")

    name = "c128 2048 per call"
    print(f"\n{name}")
    xh = cdata((2048,), np.complex128)
    xc = cp.asarray(xh)
    xt = torch.from_numpy(xh).cuda()
    ref = np.fft.fft(xh)
    fns, syncs, plans = {}, {}, []
    for label, x, sync in (("cupy", xc, sync_cp), ("torch", xt, sync_t)):
        y = cumath.fft.fft(x)
        host = y.get() if label == "cupy" else y.cpu().numpy()
        err = float(np.linalg.norm(host - ref) / np.linalg.norm(ref))
        print(f"  cumath ({label}) relative error {err:.1e}")
        f = cumath.fft.FFT(x)
        f.plan()
        plans.append(f)
        fns[f"cumath stateless ({label})"] = lambda x=x: cumath.fft.fft(x)
        fns[f"cumath FFT.execute ({label})"] = f.execute
        syncs[f"cumath stateless ({label})"] = syncs[f"cumath FFT.execute ({label})"] = sync
    fns["torch.fft.fft"], syncs["torch.fft.fft"] = (lambda: torch.fft.fft(xt)), sync_t
    fns["cupy.fft.fft"], syncs["cupy.fft.fft"] = (lambda: cp.fft.fft(xc)), sync_cp
    # interleaved rounds: drift in the machine's speed falls on every implementation alike
    for impl, timing in time_interleaved(fns, sync=syncs, number=1000 if quick else 3000,
                                         rounds=7 if quick else 21).items():
        record(name, impl, timing)
    for f in plans:
        f.free()
    y = cumath.fft.fft(xh, execution="cuda")
    err = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
    record(name, "cumath numpy->GPU->numpy", time_call(lambda: cumath.fft.fft(xh, execution="cuda"), min_time=tmin),
           rel_err=err)
    f = cumath.fft.FFT(xh, execution="cuda")
    f.plan()
    record(name, "cumath numpy->GPU->numpy FFT.execute", time_call(f.execute, min_time=tmin))
    f.free()
    record(name, "numpy.fft (host)", time_call(lambda: np.fft.fft(xh), min_time=tmin))

    for name, shape, axes in (("c64 4096x4096 last axis", (4096, 4096), (-1,)),
                              ("c64 8192^2 2-D", (8192, 8192), (-2, -1)),
                              ("c64 512^3 3-D", (512, 512, 512), (-3, -2, -1))):
        print(f"\n{name}")
        xc = cp.asarray(cdata(shape, np.complex64)) if len(shape) < 3 else (
            cp.random.standard_normal(shape, dtype=cp.float32) + 1j * cp.random.standard_normal(shape, dtype=cp.float32)
        ).astype(cp.complex64)
        xt = torch.as_tensor(xc, device="cuda")
        y = cumath.fft.fft(xc, axes=axes)
        yr = cp.fft.fftn(xc.astype(cp.complex128), axes=axes)
        err = float(cp.linalg.norm(y - yr) / cp.linalg.norm(yr))
        del yr
        record(name, "cumath stateless (cupy)", time_call(lambda: cumath.fft.fft(xc, axes=axes), sync=sync_cp,
                                                          min_time=tmin), rel_err=err)
        f = cumath.fft.FFT(xc, axes=axes)
        f.plan()
        record(name, "cumath FFT.execute (cupy)", time_call(f.execute, sync=sync_cp, min_time=tmin))
        f.free()
        record(name, "cumath stateless (torch)", time_call(lambda: cumath.fft.fft(xt, axes=axes), sync=sync_t,
                                                           min_time=tmin))
        record(name, "cupy.fft.fftn", time_call(lambda: cp.fft.fftn(xc, axes=axes), sync=sync_cp, min_time=tmin))
        record(name, "torch.fft.fftn", time_call(lambda: torch.fft.fftn(xt, dim=axes), sync=sync_t, min_time=tmin))
        xc = xt = y = None  # (not `del`: the timed lambdas above close over these names)
        cp.get_default_memory_pool().free_all_blocks()
        torch.cuda.empty_cache()


def ratios():
    """The figures of the issue, as ratios of medians from this run."""
    by = {(r["case"], r["impl"]): r for r in ROWS if "median_us" in r}
    out = []

    def ratio(case, a, b, limit, what):
        if (case, a) in by and (case, b) in by:
            v = by[(case, a)]["median_us"] / by[(case, b)]["median_us"]
            out.append({"case": case, "what": what, "ratio": v, "limit": limit, "ok": v <= limit})

    for name, *_ in CPU_CASES:
        peers = [r for (c, impl), r in by.items() if c == name and impl.startswith("pyfftw FFTW.execute")]
        if not peers:
            continue
        best = min(peers, key=lambda r: r["median_us"])
        by[(name, "pyfftw best")] = best
        which = best["impl"][len("pyfftw FFTW.execute "):]
        ratio(name, "cumath stateful (measure)", "pyfftw best", 1.05, f"stateful / pyFFTW {which}")
        ratio(name, "cumath stateless (wisdom)", "pyfftw best", 1.25, f"stateless / pyFFTW {which}")
        ratio(name, "cumath stateless (estimate, no wisdom)", "pyfftw best", 1.25,
              "stateless, no wisdom yet / pyFFTW (not an issue figure)")
    c = "c128 2048"
    if (c, "cumath stateless (wisdom)") in by:
        d = by[(c, "cumath stateless (wisdom)")]["median_us"] - by[(c, "cumath stateful (measure)")]["median_us"]
        out.append({"case": c, "what": "stateless - stateful (us)", "ratio": d, "limit": 4.0, "ok": d <= 4.0})
    for r in ROWS:
        if "plan_ms" in r and "import_ms" in r:
            out.append({"case": r["case"], "what": "first plan in a fresh process, no wisdom (ms)",
                        "ratio": r["plan_ms"], "limit": 50.0, "ok": r["plan_ms"] <= 50.0})
    g = "c128 2048 per call"
    for lab in ("cupy", "torch"):
        ratio(g, f"cumath stateless ({lab})", "torch.fft.fft", 1.5, f"stateless ({lab}) / torch")
        ratio(g, f"cumath FFT.execute ({lab})", "torch.fft.fft", 1.2, f"execute ({lab}) / torch")
    if (g, "cumath numpy->GPU->numpy") in by:
        v = by[(g, "cumath numpy->GPU->numpy")]["median_us"]
        out.append({"case": g, "what": "numpy->GPU->numpy (us)", "ratio": v, "limit": 60.0, "ok": v <= 60.0})
    for name in ("c64 4096x4096 last axis", "c64 8192^2 2-D", "c64 512^3 3-D"):
        peers = [by[(name, p)]["median_us"] for p in ("cupy.fft.fftn", "torch.fft.fftn") if (name, p) in by]
        if peers:
            for impl in ("cumath FFT.execute (cupy)", "cumath stateless (cupy)"):
                if (name, impl) in by:
                    v = by[(name, impl)]["median_us"] / min(peers)
                    out.append({"case": name, "what": f"{impl} / faster peer", "ratio": v, "limit": 1.03,
                                "ok": v <= 1.03})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", action="store_true", help="CPU cases only")
    ap.add_argument("--gpu", action="store_true", help="GPU cases only")
    ap.add_argument("--quick", action="store_true", help="shorter timing loops")
    ap.add_argument("--json", help="write the rows and ratios to this file")
    args = ap.parse_args()
    from cumath._core.cuda import device_count

    run_cpu = args.cpu or not args.gpu
    run_gpu = args.gpu or (not args.cpu and device_count() > 0)
    cache = tempfile.mkdtemp(prefix="cumath-bench-")
    os.environ["CUMATH_CACHE_DIR"] = cache  # start with no wisdom, like a new user
    if run_cpu:
        cpu_benchmarks(available_cpus(), args.quick)
    if run_gpu:
        gpu_benchmarks(args.quick)
    rs = ratios()
    print("\n== figures (ratios of medians from this run) ==")
    for r in rs:
        print(f"  {r['case']:26s} {r['what']:58s} {r['ratio']:8.3f}  (limit {r['limit']})  "
              f"{'ok' if r['ok'] else 'MISSED'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": available_cpus(),
                       "rows": ROWS, "figures": rs}, f, indent=1)


if __name__ == "__main__":
    main()
