"""Probe the CPU FFT engines: FFTW and oneMKL through cumath's FFTW3 binding, against pyFFTW, scipy.fft,
mkl_fft and numpy.fft.

    python benchmarks/fftw_probe.py                  # all cases, markdown tables on stdout
    python benchmarks/fftw_probe.py --cases c128_2048 --rounds 1 --no-patient

Per case: plan with FFTW ESTIMATE / MEASURE / PATIENT at 1 and 2 threads (planning time with wisdom forgotten
first), oneMKL at 1 and 2 threads, plans from imported wisdom (FFTW_WISDOM_ONLY), pyFFTW's FFTW object
(FFTW_MEASURE, threads=2; ``.execute()`` and ``obj()``), scipy.fft (workers=2), mkl_fft (out=) and numpy.fft.
Execute times: the median over ``--repeats`` timed loops (time.perf_counter around a loop of k calls, k chosen
so that a loop lasts >= ``--loop-ms``), measured in ``--rounds`` interleaved rounds; reported as the median of the
round medians with the spread (max-min)/median. A pause between engines lets the OpenMP runtimes' spinning
worker threads (libgomp for FFTW, libiomp5 for MKL: KMP_BLOCKTIME defaults to 200 ms) go to sleep, so that one
engine's threads do not steal a core from the next on this 2-core machine.

Also, in fresh subprocesses: library load time and the first ESTIMATE planning; and whether wisdom exported here
gives WISDOM_ONLY plans there (planning time, identical plan text).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if "--fresh-estimate" not in sys.argv and "--fresh-wisdom" not in sys.argv:
    # pyFFTW must be imported before oneMKL makes its first plan: MKL then loads libmkl_intel_lp64 with
    # RTLD_GLOBAL, and an extension loaded afterwards binds its fftw_* calls to MKL (pyFFTW would run MKL).
    try:
        __import__("pyfftw")
    except ImportError:
        pass

from cumath._bindings import fftw as F  # noqa: E402
from cumath._core.frameworks.numpy import aligned_empty  # noqa: E402

CASES = {
    "c128_2048": dict(kind="c2c", dtype=np.complex128, shape=(2048,), axes=(0,)),
    "c128_2^20": dict(kind="c2c", dtype=np.complex128, shape=(1 << 20,), axes=(0,)),
    "c64_4096x1024_batch": dict(kind="c2c", dtype=np.complex64, shape=(4096, 1024), axes=(1,)),
    "c64_2048x2048_2d": dict(kind="c2c", dtype=np.complex64, shape=(2048, 2048), axes=(0, 1)),
    "f64_2^20_rfft": dict(kind="r2c", dtype=np.float64, shape=(1 << 20,), axes=(0,)),
}

FLAGS = {"ESTIMATE": F.FFTW_ESTIMATE, "MEASURE": F.FFTW_MEASURE, "PATIENT": F.FFTW_PATIENT}


# ------------------------------------------------------------------------------------------------ helpers
def precision_of(dtype) -> str:
    return "double" if np.dtype(dtype) in (np.float64, np.complex128) else "single"


def arrays(case):
    """(input, output) aligned arrays for a case."""
    shape, axes = case["shape"], case["axes"]
    if case["kind"] == "c2c":
        return aligned_empty(shape, case["dtype"]), aligned_empty(shape, case["dtype"])
    oshape = list(shape)
    oshape[axes[-1]] = shape[axes[-1]] // 2 + 1
    cdt = np.complex128 if case["dtype"] == np.float64 else np.complex64
    return aligned_empty(shape, case["dtype"]), aligned_empty(oshape, cdt)


def guru(x, y, axes):
    xs = [s // x.itemsize for s in x.strides]
    ys = [s // y.itemsize for s in y.strides]
    dims = [(x.shape[a], xs[a], ys[a]) for a in axes]
    howmany = [(x.shape[a], xs[a], ys[a]) for a in range(x.ndim) if a not in axes]
    return dims, howmany


def plan(L, case, x, y, flags, nthreads):
    """(plan, seconds) with wisdom forgotten first (so MEASURE/PATIENT times are honest)."""
    dims, howmany = guru(x, y, case["axes"])
    with F.planner_lock:
        L.forget_wisdom()
        L.plan_with_nthreads(nthreads)
        t0 = time.perf_counter()
        if case["kind"] == "c2c":
            p = L.plan_guru64_dft(dims, howmany, x.ctypes.data, y.ctypes.data, F.FFTW_FORWARD, flags)
        else:
            p = L.plan_guru64_dft_r2c(dims, howmany, x.ctypes.data, y.ctypes.data, flags)
        dt = time.perf_counter() - t0
        L.plan_with_nthreads(1)
    if not p:
        raise RuntimeError(f"NULL plan for {case} flags={flags}")
    return p, dt


def plan_no_forget(L, case, x, y, flags, nthreads):
    dims, howmany = guru(x, y, case["axes"])
    with F.planner_lock:
        L.plan_with_nthreads(nthreads)
        t0 = time.perf_counter()
        if case["kind"] == "c2c":
            p = L.plan_guru64_dft(dims, howmany, x.ctypes.data, y.ctypes.data, F.FFTW_FORWARD, flags)
        else:
            p = L.plan_guru64_dft_r2c(dims, howmany, x.ctypes.data, y.ctypes.data, flags)
        dt = time.perf_counter() - t0
        L.plan_with_nthreads(1)
    return p, dt


def fill(x, rng):
    if np.iscomplexobj(x):
        x[...] = rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
    else:
        x[...] = rng.standard_normal(x.shape)


def reference(case, x):
    a = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    if case["kind"] == "r2c":
        return np.fft.rfftn(a, axes=case["axes"])
    return np.fft.fftn(a, axes=case["axes"])


def rel_err(got, ref):
    return float(np.linalg.norm((np.asarray(got, np.complex128) - ref).ravel()) / np.linalg.norm(ref.ravel()))


def median_time(run, repeats, loop_s):
    """Median seconds per call over ``repeats`` loops of k calls."""
    run(2)  # warm up
    t0 = time.perf_counter()
    run(1)
    one = max(time.perf_counter() - t0, 1e-7)
    k = max(1, min(100000, int(loop_s / one)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(k)
        samples.append((time.perf_counter() - t0) / k)
    return statistics.median(samples)


def fmt_t(s):
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


# ------------------------------------------------------------------------------------------------ engines
def binding_runner(L, p, fn_name="execute"):
    ex = getattr(L, fn_name)

    def run(k):
        for _ in range(k):
            ex(p)

    return run


def build_engines(name, case, args, rng, log):
    """A list of (label, runner, output array or None, info dict) and a cleanup callable."""
    engines, cleanups = [], []
    prec = precision_of(case["dtype"])
    fftw = F.get_fftw(prec, "fftw")
    info_wisdom = {}

    # FFTW through the binding
    wisdom_by_threads = {}
    plans_text = {}
    for nt in (1, 2):
        for fl in ("ESTIMATE", "MEASURE", "PATIENT"):
            if fl == "PATIENT" and args.no_patient:
                continue
            x, y = arrays(case)
            if args.timelimit:
                with F.planner_lock:
                    fftw.set_timelimit(args.timelimit if fl == "PATIENT" else F.FFTW_NO_TIMELIMIT)
            p, dt = plan(fftw, case, x, y, FLAGS[fl], nt)
            log(f"  {name}: FFTW {fl} {nt}t planned in {dt:.3f} s")
            plans_text[(fl, nt)] = fftw.sprint_plan(p)
            if fl == "MEASURE":
                with F.planner_lock:
                    wisdom_by_threads[nt] = fftw.export_wisdom_to_string()
            fill(x, rng)
            engines.append((f"FFTW {fl} {nt}t", binding_runner(fftw, p), (x, y), {"plan_s": dt}))
            cleanups.append(lambda p=p: fftw.destroy_plan(p))
    with F.planner_lock:
        fftw.set_timelimit(F.FFTW_NO_TIMELIMIT)

    # FFTW plans from imported wisdom (WISDOM_ONLY, same flags as the MEASURE plans)
    for nt in (1, 2):
        x, y = arrays(case)
        with F.planner_lock:
            fftw.forget_wisdom()
            ok = fftw.import_wisdom_from_string(wisdom_by_threads[nt])
        p, dt = plan_no_forget(fftw, case, x, y, F.FFTW_MEASURE | F.FFTW_WISDOM_ONLY, nt)
        same = bool(p) and fftw.sprint_plan(p) == plans_text[("MEASURE", nt)]
        info_wisdom[nt] = {"imported": ok, "plan": bool(p), "plan_s": dt, "same_plan_text": same}
        log(f"  {name}: wisdom-only {nt}t: imported={ok} plan={bool(p)} in {dt * 1e3:.2f} ms, same plan text={same}")
        if p:
            fill(x, rng)
            engines.append((f"FFTW wisdom-only {nt}t", binding_runner(fftw, p), (x, y), {"plan_s": dt}))
            cleanups.append(lambda p=p: fftw.destroy_plan(p))

    # oneMKL through the binding
    mkl = F.get_fftw(prec, "mkl")
    try:
        mkl.load()
    except Exception as exc:  # LibraryNotFoundError
        log(f"  MKL unavailable: {exc}")
        mkl = None
    if mkl is not None:
        for nt in (1, 2):
            x, y = arrays(case)
            p, dt = plan(mkl, case, x, y, F.FFTW_ESTIMATE, nt)
            fill(x, rng)
            engines.append((f"MKL (binding) {nt}t", binding_runner(mkl, p), (x, y), {"plan_s": dt}))
            cleanups.append(lambda p=p, m=mkl: m.destroy_plan(p))

    # pyFFTW's own FFTW object (shares the bundled FFTW and its wisdom with the binding: forget first)
    pyfftw_mod = sys.modules.get("pyfftw")
    if pyfftw_mod is not None:
        x, y = arrays(case)
        with F.planner_lock:
            fftw.forget_wisdom()
            t0 = time.perf_counter()
            obj = pyfftw_mod.FFTW(x, y, axes=case["axes"], direction="FFTW_FORWARD", flags=("FFTW_MEASURE",), threads=2)
            dt = time.perf_counter() - t0
        log(f"  {name}: pyFFTW MEASURE 2t planned in {dt:.3f} s")
        fill(x, rng)

        def run_exec(k, obj=obj):
            ex = obj.execute
            for _ in range(k):
                ex()

        def run_call(k, obj=obj):
            for _ in range(k):
                obj()

        engines.append(("pyFFTW MEASURE 2t .execute()", run_exec, (x, y), {"plan_s": dt}))
        engines.append(("pyFFTW MEASURE 2t obj()", run_call, (x, y), {"plan_s": dt}))

    # scipy.fft, mkl_fft, numpy.fft (allocate their outputs, except mkl_fft with out=)
    import scipy.fft

    x, _ = arrays(case)
    fill(x, rng)
    axes = case["axes"]
    if case["kind"] == "r2c":
        sp = lambda: scipy.fft.rfft(x, workers=2)  # noqa: E731
        npf = lambda: np.fft.rfft(x)  # noqa: E731
    elif len(axes) == 2:
        sp = lambda: scipy.fft.fft2(x, workers=2)  # noqa: E731
        npf = lambda: np.fft.fft2(x)  # noqa: E731
    else:
        sp = lambda: scipy.fft.fft(x, axis=axes[0], workers=2)  # noqa: E731
        npf = lambda: np.fft.fft(x, axis=axes[0])  # noqa: E731

    def loop(f):
        def run(k):
            for _ in range(k):
                f()

        return run

    engines.append(("scipy.fft workers=2", loop(sp), None, {}))
    try:
        import mkl_fft

        _, out = arrays(case)
        if case["kind"] == "r2c":
            mf = lambda: mkl_fft.rfft(x, out=out)  # noqa: E731
        elif len(axes) == 2:
            mf = lambda: mkl_fft.fft2(x, out=out)  # noqa: E731
        else:
            mf = lambda: mkl_fft.fft(x, axis=axes[0], out=out)  # noqa: E731
        mf()
        engines.append(("mkl_fft (out=, MKL default threads)", loop(mf), None, {}))
    except Exception as exc:
        log(f"  mkl_fft unavailable: {exc}")
    engines.append(("numpy.fft", loop(npf), None, {}))

    def cleanup():
        with F.planner_lock:
            for c in cleanups:
                c()

    return engines, cleanup, info_wisdom


def check_outputs(name, case, engines, log):
    """Every binding/pyFFTW engine's output matches numpy (one execution)."""
    tol = 1e-12 if precision_of(case["dtype"]) == "double" else 1e-5
    for label, run, xy, _ in engines:
        if xy is None:
            continue
        x, y = xy
        run(1)
        err = rel_err(y, reference(case, x))
        if err > tol * 10:
            log(f"  !! {name} {label}: relative error {err:.2e}")


def bench_case(name, args, rng, log):
    case = CASES[name]
    engines, cleanup, info_wisdom = build_engines(name, case, args, rng, log)
    check_outputs(name, case, engines, log)
    results = {label: [] for label, *_ in engines}
    for r in range(args.rounds):
        for label, run, _, _ in engines:
            time.sleep(args.pause)
            results[label].append(median_time(run, args.repeats, args.loop_ms / 1e3))
        log(f"  {name}: round {r + 1}/{args.rounds} done")
    rows = []
    for label, _, _, info in engines:
        ts = results[label]
        med = statistics.median(ts)
        spread = (max(ts) - min(ts)) / med if med else 0.0
        rows.append({"engine": label, "median_s": med, "rounds_s": ts, "spread": spread, **info})
    cleanup()
    return {"case": name, "rows": rows, "wisdom": info_wisdom}


# ------------------------------------------------------------------------------------------------ fresh processes
def fresh_estimate(name):
    """In a fresh process: load time, first and second ESTIMATE planning (1 thread), threads setup."""
    case = CASES[name]
    L = F.get_fftw(precision_of(case["dtype"]), "fftw")
    t0 = time.perf_counter()
    L.load()
    t_load = time.perf_counter() - t0
    x, y = arrays(case)
    p1, t1 = plan_no_forget(L, case, x, y, F.FFTW_ESTIMATE, 1)
    p2, t2 = plan_no_forget(L, case, x, y, F.FFTW_ESTIMATE, 1)
    t0 = time.perf_counter()
    L.init_threads()
    t_thr = time.perf_counter() - t0
    p3, t3 = plan_no_forget(L, case, x, y, F.FFTW_ESTIMATE, 2)
    for p in (p1, p2, p3):
        L.destroy_plan(p)
    print(json.dumps({"load_s": t_load, "first_estimate_s": t1, "second_estimate_s": t2,
                      "init_threads_s": t_thr, "first_estimate_2t_s": t3}))


def fresh_wisdom(name, path):
    """In a fresh process: import wisdom from ``path``, plan WISDOM_ONLY at 1 and 2 threads."""
    case = CASES[name]
    L = F.get_fftw(precision_of(case["dtype"]), "fftw")
    with open(path, "rb") as f:
        blobs = json.load(f)
    out = {}
    for nt in (1, 2):
        with F.planner_lock:
            L.forget_wisdom()
            t0 = time.perf_counter()
            ok = L.import_wisdom_from_string(blobs[str(nt)]["wisdom"].encode())
            t_imp = time.perf_counter() - t0
        x, y = arrays(case)
        p, dt = plan_no_forget(L, case, x, y, F.FFTW_MEASURE | F.FFTW_WISDOM_ONLY, nt)
        out[nt] = {"imported": ok, "import_s": t_imp, "plan": bool(p), "plan_s": dt,
                   "same_plan_text": bool(p) and L.sprint_plan(p) == blobs[str(nt)]["plan"]}
        if p:
            L.destroy_plan(p)
    print(json.dumps(out))


def wisdom_blobs(name):
    """MEASURE plans at 1 and 2 threads here; their wisdom and plan text, for ``fresh_wisdom``."""
    case = CASES[name]
    L = F.get_fftw(precision_of(case["dtype"]), "fftw")
    blobs = {}
    for nt in (1, 2):
        x, y = arrays(case)
        p, _ = plan(L, case, x, y, F.FFTW_MEASURE, nt)
        with F.planner_lock:
            blobs[str(nt)] = {"wisdom": L.export_wisdom_to_string().decode(), "plan": L.sprint_plan(p)}
            L.destroy_plan(p)
    return blobs


def run_sub(*argv):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------ extras
def extra(args, log):
    """Thread crossover for 1-D complex128 (FFTW MEASURE and MKL, 1 vs 2 threads) and per-call overhead."""
    rng = np.random.default_rng()
    fftw = F.get_fftw("double", "fftw")
    mkl = F.get_fftw("double", "mkl")
    rows = []
    for log2n in range(10, 19):
        case = dict(kind="c2c", dtype=np.complex128, shape=(1 << log2n,), axes=(0,))
        engines = []
        for L, label, flags in ((fftw, "FFTW MEASURE", F.FFTW_MEASURE), (mkl, "MKL", F.FFTW_ESTIMATE)):
            for nt in (1, 2):
                x, y = arrays(case)
                p, _ = plan(L, case, x, y, flags, nt)
                fill(x, rng)
                engines.append((f"{label} {nt}t", binding_runner(L, p), L, p, (x, y)))  # keep the arrays alive
        times = {lab: [] for lab, *_ in engines}
        for _ in range(args.rounds):
            for lab, run, *_ in engines:
                time.sleep(args.pause)
                times[lab].append(median_time(run, args.repeats, args.loop_ms / 1e3))
        rows.append((log2n, {lab: statistics.median(v) for lab, v in times.items()}))
        log(f"  crossover 2^{log2n}: " + ", ".join(f"{k} {fmt_t(v)}" for k, v in rows[-1][1].items()))
        with F.planner_lock:
            for _, _, L, p, _ in engines:
                L.destroy_plan(p)
    print("\n### 1-D complex128: 1 vs 2 threads (median of rounds)\n")
    labels = list(rows[0][1])
    print("| n | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for log2n, r in rows:
        print(f"| 2^{log2n} | " + " | ".join(fmt_t(r[k]) for k in labels) + " |")

    # Per-call overhead: a 4-point transform, binding (ctypes) against pyFFTW's Cython .execute()
    case = dict(kind="c2c", dtype=np.complex128, shape=(4,), axes=(0,))
    x, y = arrays(case)
    p, _ = plan(fftw, case, x, y, F.FFTW_MEASURE, 1)
    fill(x, rng)
    ov = {"binding execute(p)": binding_runner(fftw, p),
          "binding execute_dft(p, in, out)": (lambda k, ex=fftw.execute_dft, a=x.ctypes.data, b=y.ctypes.data:
                                              [ex(p, a, b) for _ in range(k)])}
    pyfftw_mod = sys.modules.get("pyfftw")
    if pyfftw_mod is not None:
        obj = pyfftw_mod.FFTW(x, y, flags=("FFTW_MEASURE",), threads=1)
        ov["pyFFTW .execute()"] = lambda k, ex=obj.execute: [ex() for _ in range(k)]
        ov["pyFFTW obj()"] = lambda k, o=obj: [o() for _ in range(k)]
    res = {k: [] for k in ov}
    for _ in range(args.rounds):
        for k, run in ov.items():
            res[k].append(median_time(run, args.repeats, args.loop_ms / 1e3))
    print("\n### per-call cost of a 4-point complex128 transform (median of rounds, spread)\n")
    print("| call | time | spread |")
    print("|---|---|---|")
    for k, v in res.items():
        m = statistics.median(v)
        print(f"| {k} | {fmt_t(m)} | {(max(v) - min(v)) / m * 100:.0f}% |")
    with F.planner_lock:
        fftw.destroy_plan(p)


# ------------------------------------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--loop-ms", type=float, default=20.0)
    ap.add_argument("--pause", type=float, default=0.4)
    ap.add_argument("--no-patient", action="store_true")
    ap.add_argument("--timelimit", type=float, default=0.0, help="fftw_set_timelimit for PATIENT (0: none)")
    ap.add_argument("--json", help="also write the raw results to this file")
    ap.add_argument("--extra", action="store_true", help="only the thread crossover and per-call overhead probes")
    ap.add_argument("--fresh-estimate", help=argparse.SUPPRESS)
    ap.add_argument("--fresh-wisdom", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fresh_estimate:
        return fresh_estimate(args.fresh_estimate)
    if args.fresh_wisdom:
        return fresh_wisdom(*args.fresh_wisdom)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.extra:
        return extra(args, log)

    fresh = {name: run_sub("--fresh-estimate", name) for name in args.cases}
    for name, r in fresh.items():
        log(f"fresh {name}: {r}")
    fresh_w = {}
    for name in args.cases:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(wisdom_blobs(name), f)
        try:
            fresh_w[name] = run_sub("--fresh-wisdom", name, f.name)
        finally:
            os.unlink(f.name)
        log(f"fresh wisdom {name}: {fresh_w[name]}")

    rng = np.random.default_rng()
    results = [bench_case(name, args, rng, log) for name in args.cases]

    L = F.get_fftw("double", "fftw")
    M = F.get_fftw("double", "mkl")
    print(f"FFTW: {L.version} ({L.library_path}); threads: {L.threads_library_path}; simd_alignment {L.simd_alignment}")
    try:
        print(f"MKL: {M.version} ({M.library_path}); simd_alignment {M.simd_alignment}")
    except Exception:
        pass
    print(f"rounds={args.rounds} repeats={args.repeats} loop>={args.loop_ms} ms, cpu count {os.cpu_count()}")
    for res in results:
        print(f"\n### {res['case']}\n")
        print("| engine | execute (median of rounds) | spread | rounds | planning |")
        print("|---|---|---|---|---|")
        for row in res["rows"]:
            rounds = " / ".join(fmt_t(t) for t in row["rounds_s"])
            print(f"| {row['engine']} | {fmt_t(row['median_s'])} | {row['spread'] * 100:.0f}% | {rounds} "
                  f"| {fmt_t(row.get('plan_s'))} |")
    print("\n### fresh process: load and first ESTIMATE planning\n")
    print("| case | load libfftw3 | 1st ESTIMATE plan | 2nd ESTIMATE plan | init_threads | 1st ESTIMATE 2t |")
    print("|---|---|---|---|---|---|")
    for name, r in fresh.items():
        print(f"| {name} | {fmt_t(r['load_s'])} | {fmt_t(r['first_estimate_s'])} | {fmt_t(r['second_estimate_s'])} "
              f"| {fmt_t(r['init_threads_s'])} | {fmt_t(r['first_estimate_2t_s'])} |")
    print("\n### wisdom: MEASURE wisdom exported, imported in a fresh process, planned with WISDOM_ONLY\n")
    print("| case | threads | imported | plan | import | WISDOM_ONLY planning | same plan as MEASURE |")
    print("|---|---|---|---|---|---|---|")
    for name, r in fresh_w.items():
        for nt, v in r.items():
            print(f"| {name} | {nt} | {v['imported']} | {v['plan']} | {fmt_t(v['import_s'])} | {fmt_t(v['plan_s'])} "
                  f"| {v['same_plan_text']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "fresh": fresh, "fresh_wisdom": fresh_w}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
