"""The CPU cases of benchmarks/fft.py: first calls without wisdom against FFTW's measured plans.

Each row says which engine and plan kind ran, read back from the plan (``served_by``: 'fftw:estimate',
'fftw:wisdom', 'fftw:measure', 'dfti', 'mkl', 'scipy'). Two rules keep the rows honest:

- plans without wisdom (auto, DFTI, FFTW_ESTIMATE) are made before the process learns measured wisdom for the
  problem: FFTW_ESTIMATE uses wisdom of a more patient plan when it has it, so an estimate plan made after
  the measured one *is* the measured plan;
- contenders that are compared are timed in the same rounds (A B ... B A). The 'auto' plan moves to FFTW's plan
  once wisdom exists, so after measuring, auto's no-wisdom choice is timed through the plan of the engine it
  chose (made before the wisdom, so it stays what it was), and the ratio says so.

The first call in a fresh process is split into the import of cumath.fft, the import of cumath's engine modules,
the libraries cumath loads (dlopen), MKL's first descriptor (MKL loads its computational libraries then),
planning proper, and the first two executions (the first starts the thread pools).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from harness import Skip, Stats, calibrate, cpu_count, measure, optional

import cumath
import cumath.fft

__all__ = ["CPU_CASES", "QUICK_SHAPES", "cpu_case", "no_wisdom_sweep", "served", "SWEEP"]

CPU_CASES = [  # id, title, shape, dtype, axes, kind
    ("c128-2048", "1-D 2048 complex128", (2048,), np.complex128, (-1,), "fft"),
    ("c128-2p20", "1-D 2^20 complex128", (1 << 20,), np.complex128, (-1,), "fft"),
    ("c64-4096x1024", "4096 x 1024 complex64, batched along the last axis", (4096, 1024), np.complex64, (-1,), "fft"),
    ("c64-2048x2048", "2048 x 2048 complex64, 2-D", (2048, 2048), np.complex64, (-2, -1), "fft"),
    ("f64-2p20-rfft", "1-D 2^20 float64 rfft", (1 << 20,), np.float64, (-1,), "rfft"),
]

# --quick: the two long transforms at smaller sizes (2^16 points: measured planning grows steeply with the length,
# 15-25 s at 2^18 and 2^20; 1024 x 1024: 3 s). Their measured FFTW plans take 14-18 s each at full size on two
# loaded cores; a planning time limit would leave wisdom that neither a later unlimited plan nor a wisdom-only one
# can use.
QUICK_SHAPES = {"c128-2p20": (1 << 16,), "c64-2048x2048": (1024, 1024)}

RNG = np.random.default_rng(7)


def data(shape, dtype, kind):
    if kind == "rfft":
        return RNG.standard_normal(shape).astype(dtype)
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def rel_err(got, ref) -> float:
    return float(np.linalg.norm(np.asarray(got) - ref) / np.linalg.norm(ref))


def served(f, sign=-1) -> str:
    """What a planned cumath FFT runs for ``sign``, read back from its engine's plan ('?' where unknown)."""
    try:
        return f._executor.backend.served_by(sign) or "not planned"
    except AttributeError:
        return "?"


def served_stateless() -> str:
    """What the plan of the last stateless call runs (the most recently used entry of this thread's cache)."""
    try:
        from cumath._core.plan_cache import plan_cache

        entries = plan_cache._mine().entries
        plan = entries[next(reversed(entries))][0]
        return served(plan)
    except (AttributeError, StopIteration, ImportError):
        return "?"


# ------------------------------------------------------------------------------------ fresh process
_CHILD = r"""
import json, sys, time
T = time.perf_counter
import numpy as np
shape, axes, dtype, kind = json.loads(sys.argv[1])
rng = np.random.default_rng(1)
x = rng.standard_normal(shape).astype(dtype)
if kind == "fft":
    x = (x + 1j * rng.standard_normal(shape)).astype(dtype)
t0 = T(); import cumath.fft; t_import = T() - t0
from cumath._bindings import _loader, mkl_dfti
from cumath.fft import _backends
loads, modules, first = {}, [0.0], {}
load, module, create = _loader._load, _backends._module, mkl_dfti.create_descriptor
def timed_load(name):
    t = T(); lib = load(name); loads[name] = 1e3 * (T() - t); return lib
def timed_module(name):
    t = T(); mod = module(name); modules[0] += T() - t; return mod
def timed_create(*args):
    t = T(); desc = create(*args)
    first.setdefault("create", (1e3 * (T() - t), args))
    return desc
_loader._load, _backends._module, mkl_dfti.create_descriptor = timed_load, timed_module, timed_create
t0 = T()
if sys.argv[2] == "stateless":
    getattr(cumath.fft, kind)(x, axes=axes)
    print(json.dumps({"whole": 1e3 * (T() - t0)}))
    raise SystemExit
c0 = time.process_time()
f = cumath.fft.FFT(x, axes=axes); f.plan(); t_plan = T() - t0; c_plan = time.process_time() - c0
t0 = T(); f.execute(); t_exec1 = T() - t0
t0 = T(); f.execute(); t_exec2 = T() - t0
mkl_first = 0.0
if "create" in first:  # the same descriptor again: what the first one cost more is MKL loading its libraries
    ms, args = first["create"]
    t0 = T(); mkl_dfti.free_descriptor(create(*args)); mkl_first = max(0.0, ms - 1e3 * (T() - t0))
backend = f._executor.backend  # (a cumath without served_by: the plan's class)
served = backend.served_by(-1) if hasattr(backend, "served_by") else type(backend).__name__
print(json.dumps({"import": 1e3 * t_import, "plan": 1e3 * t_plan, "plan_cpu": 1e3 * c_plan, "modules": 1e3 * modules[0], "loads": loads,
                  "mkl_first": mkl_first, "exec1": 1e3 * t_exec1, "exec2": 1e3 * t_exec2, "served": served}))
"""


def cold_first_call(shape, dtype, axes, kind, pycache, path=None):
    """Two fresh processes with an empty cache folder (no wisdom): one planning and executing an FFT step by
    step (reading cumath's loader to split the planning time), one making a whole first stateless call.
    Compiled modules are kept under ``pycache`` (as an installed package has them), even where the environment
    says not to write bytecode."""
    spec = json.dumps([list(shape), list(axes), np.dtype(dtype).name, kind])
    out = []
    for mode in ("staged", "stateless"):
        with tempfile.TemporaryDirectory() as d:
            e = dict(os.environ, CUMATH_CACHE_DIR=d, PYTHONPATH=os.pathsep.join(path or sys.path),
                     PYTHONPYCACHEPREFIX=pycache)
            e.pop("PYTHONDONTWRITEBYTECODE", None)
            res = subprocess.run([sys.executable, "-c", _CHILD, spec, mode], env=e, capture_output=True, text=True,
                                 check=True)
        out.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return out


def cold_rows(case, shape, dtype, axes, kind, runs):
    """The fresh-process rows: medians of ``runs`` pairs of processes (after one pair that compiles the modules),
    with their min-max."""
    staged, whole = [], []
    with tempfile.TemporaryDirectory() as pycache:
        cold_first_call(shape, dtype, axes, kind, pycache)  # compiles what the first call imports
        for _ in range(runs):
            s, w = cold_first_call(shape, dtype, axes, kind, pycache)
            staged.append(s)
            whole.append(w["whole"])

    def row(name, values):
        v = sorted(values)
        case.value(name, float(np.median(v)), "ms", range=f"{v[0]:.1f}-{v[-1]:.1f}")

    loads = sorted({k for s in staged for k in s["loads"]})
    row("fresh process: import cumath.fft", [s["import"] for s in staged])
    row(f"fresh process: first plan, no wisdom (-> {staged[0]['served']}), all of it", [s["plan"] for s in staged])
    row("  its CPU time (all threads; less sensitive to the load)", [s["plan_cpu"] for s in staged])
    row("  of it: cumath's engine modules imported", [s["modules"] for s in staged])
    row(f"  of it: libraries loaded by cumath ({', '.join(loads) or 'none'})",
        [sum(s["loads"].values()) for s in staged])
    row("  of it: MKL loading its own libraries (first DFTI descriptor)", [s["mkl_first"] for s in staged])
    row("  of it: the rest (planning proper, wisdom lookup)",
        [s["plan"] - s["modules"] - sum(s["loads"].values()) - s["mkl_first"] for s in staged])
    row("fresh process: first execute (thread pools start)", [s["exec1"] for s in staged])
    row("fresh process: second execute", [s["exec2"] for s in staged])
    row("fresh process: whole first stateless call", whole)
    if len({s["served"] for s in staged}) > 1:
        case.note(f"fresh processes chose differently: {sorted({s['served'] for s in staged})}")


# ------------------------------------------------------------------------------------------ the cases
def cpu_case(case, shape, dtype, axes, kind, cid=""):
    pyfftw = optional("pyfftw")
    if case.quick and kind == "rfft":
        raise Skip("measured planning takes ~20 s per plan here; run without --quick")
    if case.quick and cid in QUICK_SHAPES:
        case.note(f"--quick: {' x '.join(map(str, QUICK_SHAPES[cid]))} instead of {' x '.join(map(str, shape))} "
                  f"(measured planning at full size takes 14-18 s per plan on two loaded cores)")
        shape = QUICK_SHAPES[cid]
        case.title = f"{case.title} (--quick: {' x '.join(map(str, shape))})"
    threads = cpu_count()
    x = data(shape, dtype, kind)
    ref = (np.fft.fftn if kind == "fft" else np.fft.rfftn)(x.astype(np.complex128 if kind == "fft" else np.float64),
                                                          axes=axes)
    fn = getattr(cumath.fft, kind)
    case.note(f"{threads} cores; load average {os.getloadavg()[0]:.1f} at the start")
    cold_rows(case, shape, dtype, axes, kind, runs=1 if case.quick else 3)
    rounds = case.rounds(5, 2)
    target = 0.02 if case.quick else 0.05
    settle = 0.25  # MKL's OpenMP workers spin ~200 ms after a call: idle before each sample

    # 1. no wisdom for the problem in this process: auto, DFTI and FFTW_ESTIMATE plans, all made now
    auto = cumath.fft.FFT(x, axes=axes)
    auto.plan()
    err = rel_err(fn(x, axes=axes), ref)
    chosen, chosen_stateless = served(auto), served_stateless()
    pinned = {}  # engine read back -> a stateful plan of that engine, made without wisdom
    for name, options in (("dfti", {"cpu_engine": "dfti"}),
                          ("fftw:estimate", {"cpu_engine": "fftw", "planning_effort": "estimate"})):
        try:
            p = cumath.fft.FFT(x, axes=axes, options=options)
            p.plan()
        except Exception as exc:  # noqa: BLE001 - MKL or FFTW not installed
            case.note(f"no {name} rows: {type(exc).__name__}: {str(exc).split(' (')[0]}")
            continue
        pinned[served(p)] = p
    first = {f"cumath stateless, no wisdom (auto -> {chosen_stateless})": lambda: fn(x, axes=axes),
             f"cumath FFT.execute, no wisdom (auto -> {chosen})": auto.execute}
    for name, p in pinned.items():
        first[f"cumath FFT.execute [{name}], before wisdom"] = p.execute
    case.time(first, rounds=rounds, target=target, settle=settle,
              extra={next(iter(first)): {"rel_err": err}})
    for name in pinned:
        case.ratio(f"cumath FFT.execute, no wisdom (auto -> {chosen})", f"cumath FFT.execute [{name}], before wisdom")

    # 2. FFTW_MEASURE, then every contender in the same rounds
    t0 = time.perf_counter()
    f = cumath.fft.FFT(x, axes=axes, options={"planning_effort": "measure"})
    f.plan()
    case.value(f"cumath FFT.plan (measure -> {served(f)})", (time.perf_counter() - t0) * 1e3, "ms")
    fn(x, axes=axes)
    measured = f"cumath FFT.execute [{served(f)}]"
    fns = {measured: f.execute,
           f"cumath stateless, after wisdom (-> {served_stateless()})": lambda: fn(x, axes=axes)}
    for name, p in pinned.items():
        fns[f"cumath FFT.execute [{name}]"] = p.execute
    plans = [auto, f, *pinned.values()]
    try:
        mkl = cumath.fft.FFT(x, axes=axes, options={"cpu_engine": "mkl"})
        mkl.plan()
        plans.append(mkl)
        fns["cumath FFT.execute [mkl] (MKL's FFTW3 interface)"] = mkl.execute
    except Exception:  # noqa: BLE001 - MKL not installed (noted above)
        pass
    pyfftw_rows = _pyfftw_contenders(case, fns, pyfftw, x, shape, kind, axes, threads)
    _other_peers(fns, x, axes, kind)
    case.time(fns, rounds=rounds, target=target, settle=settle, extra={measured: {"rel_err": rel_err(f.execute(), ref)}})
    for name, p in pinned.items():  # still what they were (no plan swapped under the rows)
        if served(p) != name:
            case.note(f"the [{name}] plan runs {served(p)} after the timing: its rows are not what they say")
    if pyfftw_rows:
        best = min(pyfftw_rows, key=lambda k: case.stats(k).median)
        case.ratio(measured, best)
        case.ratio(f"cumath stateless, after wisdom (-> {served_stateless()})", best)
    case.ratio("cumath FFT.execute [mkl] (MKL's FFTW3 interface)", measured)
    case.ratio("cumath FFT.execute [mkl] (MKL's FFTW3 interface)", "mkl_fft")
    # first calls at tuned speed: what a process without wisdom runs, against FFTW's measured plan
    if chosen in pinned:
        case.ratio(f"cumath FFT.execute [{chosen}]", measured,
                   label=f"auto without wisdom (runs {chosen}) / FFTW_MEASURE")
    for name in pinned:
        if name != chosen:
            case.ratio(f"cumath FFT.execute [{name}]", measured, label=f"{name} without wisdom / FFTW_MEASURE")
    for p in plans:
        p.free()


def _pyfftw_contenders(case, fns, pyfftw, x, shape, kind, axes, threads):
    if pyfftw is None:
        case.note("pyfftw not installed: no pyFFTW rows")
        return []
    case.note("pyFFTW runs the FFTW library cumath uses, so its MEASURE plans start from the wisdom cumath's plan "
              "left (hence their short planning times)")
    a = pyfftw.empty_aligned(shape, dtype=x.dtype)
    oshape = list(shape)
    if kind == "rfft":
        oshape[-1] = shape[-1] // 2 + 1
    b = pyfftw.empty_aligned(oshape, dtype=x.dtype if kind == "fft" else np.complex128)
    rows = []
    counts = sorted({threads, 1}, reverse=True) if not case.quick else [threads if x.size >= 1 << 15 else 1]
    for n in counts:  # pyFFTW at its best: measured plans with all threads and with one (small sizes)
        label = f"measure, {n} thread{'s' if n > 1 else ''}"
        t0 = time.perf_counter()
        obj = pyfftw.FFTW(a, b, axes=axes, flags=("FFTW_MEASURE",), threads=n)
        case.value(f"pyfftw plan ({label})", (time.perf_counter() - t0) * 1e3, "ms")
        a[...] = x
        fns[f"pyfftw FFTW.execute ({label})"] = obj.execute
        rows.append(f"pyfftw FFTW.execute ({label})")
        if n == counts[0]:
            fns[f"pyfftw FFTW() call ({label})"] = obj
    from pyfftw.interfaces import cache as pyfftw_cache, numpy_fft as pnf

    pyfftw_cache.enable()
    nt = threads if x.size >= 1 << 15 else 1
    pf = pnf.fftn if kind == "fft" else pnf.rfftn
    fns[f"pyfftw.interfaces (cached, measure, {nt} thread{'s' if nt > 1 else ''})"] = (
        lambda: pf(x, axes=axes, threads=nt, planner_effort="FFTW_MEASURE"))
    return rows


def _other_peers(fns, x, axes, kind):
    mkl_fft = optional("mkl_fft")
    if mkl_fft is not None:
        # mkl_fft's numpy interface; one axis through fft/rfft(axis=): its fftn over one axis of a batch takes a
        # slow path (112 ms instead of 7 ms on the batched 4096 x 1024 case)
        from mkl_fft.interfaces import numpy_fft as mnf

        if len(axes) == 1:
            fns["mkl_fft"] = (lambda: mnf.fft(x, axis=axes[0])) if kind == "fft" else (lambda: mnf.rfft(x, axis=axes[0]))
        else:
            fns["mkl_fft"] = (lambda: mnf.fftn(x, axes=axes)) if kind == "fft" else (lambda: mnf.rfftn(x, axes=axes))
    import scipy.fft as sfft

    sf = sfft.fftn if kind == "fft" else sfft.rfftn
    fns["scipy.fft (workers=-1)"] = lambda: sf(x, axes=axes, workers=-1)
    nf = np.fft.fftn if kind == "fft" else np.fft.rfftn
    fns["numpy.fft"] = lambda: nf(x, axes=axes)


# ------------------------------------------------------------------------ the data behind the rule
#: problems without wisdom: rank, size, batch, dtype (id, shape, dtype, axes, kind)
SWEEP = [
    ("c128-2048", (2048,), np.complex128, (-1,), "fft"),
    ("c128-2p15", (1 << 15,), np.complex128, (-1,), "fft"),
    ("c128-2p12", (1 << 12,), np.complex128, (-1,), "fft"),
    ("c128-2p13", (1 << 13,), np.complex128, (-1,), "fft"),
    ("c128-2p14", (1 << 14,), np.complex128, (-1,), "fft"),
    ("c64-2p14", (1 << 14,), np.complex64, (-1,), "fft"),
    ("c128-64x2048", (64, 2048), np.complex128, (-1,), "fft"),
    ("c128-64x8192", (64, 8192), np.complex128, (-1,), "fft"),
    ("c64-32x16384", (32, 16384), np.complex64, (-1,), "fft"),
    ("c64-256x256", (256, 256), np.complex64, (0, 1), "fft"),
    ("c64-128x128", (128, 128), np.complex64, (0, 1), "fft"),
    ("c128-2p17", (1 << 17,), np.complex128, (-1,), "fft"),
    ("c128-2p20", (1 << 20,), np.complex128, (-1,), "fft"),
    ("c64-2p20", (1 << 20,), np.complex64, (-1,), "fft"),
    ("c128-3p12", (3 ** 12,), np.complex128, (-1,), "fft"),
    ("c128-256x4096", (256, 4096), np.complex128, (-1,), "fft"),
    ("c64-4096x1024", (4096, 1024), np.complex64, (-1,), "fft"),
    ("c64-32x2p15", (32, 1 << 15), np.complex64, (-1,), "fft"),
    ("c64-1024x256-axis0", (1024, 256), np.complex64, (0,), "fft"),
    ("c64-512x512", (512, 512), np.complex64, (0, 1), "fft"),
    ("c128-1024x1024", (1024, 1024), np.complex128, (0, 1), "fft"),
    ("c64-2048x2048", (2048, 2048), np.complex64, (0, 1), "fft"),
    ("c64-128cube", (128, 128, 128), np.complex64, (0, 1, 2), "fft"),
    ("f64-2p18-rfft", (1 << 18,), np.float64, (-1,), "rfft"),
    ("f64-2p20-rfft", (1 << 20,), np.float64, (-1,), "rfft"),
    ("f32-1024x1024-rfft2", (1024, 1024), np.float32, (0, 1), "rfft"),
]


def thread_cpu_time(fns: dict, rounds: int, target: float) -> dict:
    """Per contender the calling thread's CPU seconds per call (``time.thread_time``), A B ... B A rounds: for
    single-threaded plans, which then run in the calling thread, this leaves out the time other processes hold
    the core, so plans compare on a loaded machine as they would on a quiet one (caches aside)."""
    names = list(fns)
    numbers = {k: calibrate(fns[k], lambda: None, target) for k in names}
    samples = {k: [] for k in names}
    for _ in range(rounds):
        for k in names + names[::-1]:
            fn, n = fns[k], numbers[k]
            t0 = time.thread_time()
            for _ in range(n):
                fn()
            samples[k].append((time.thread_time() - t0) / n)
    return {k: Stats(samples[k], numbers[k]) for k in names}


def no_wisdom_sweep(case, threads=None):
    """Per problem: FFTW_ESTIMATE, DFTI and auto planned without wisdom (all of them before any measured plan,
    so that no estimate plan picks up measured wisdom of a sub-problem), then FFTW_MEASURE, and the three timed
    in the same rounds. ``threads=1``: one thread each, timed by the calling thread's CPU time."""
    problems = SWEEP[:4] if case.quick else SWEEP
    execution = None if threads is None else cumath.ExecutionCPU(num_threads=threads)
    case.note(f"{cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start"
              + ("; one thread per plan, timed by the calling thread's CPU time" if threads == 1 else ""))
    made = []
    for pid, shape, dtype, axes, kind in problems:
        x = data(shape, dtype, kind)
        plans = {}
        for name, options in (("estimate", {"cpu_engine": "fftw", "planning_effort": "estimate"}),
                              ("dfti", {"cpu_engine": "dfti"}), ("auto", None)):
            t0 = time.perf_counter()
            p = cumath.fft.FFT(x, axes=axes, options=options, execution=execution)
            p.plan()
            plans[name] = (p, 1e3 * (time.perf_counter() - t0))
        made.append((pid, x, axes, plans))
    for pid, x, axes, plans in made:
        t0 = time.perf_counter()
        m = cumath.fft.FFT(x, axes=axes, options={"planning_effort": "measure"}, execution=execution)
        m.plan()
        plan_measure = 1e3 * (time.perf_counter() - t0)
        auto = served(plans["auto"][0])
        fns = {"measure": m.execute, "estimate": plans["estimate"][0].execute, "dfti": plans["dfti"][0].execute}
        rounds, target = case.rounds(5, 2), 0.02 if case.quick else 0.05
        if threads == 1:
            out = thread_cpu_time(fns, rounds, target)
        else:
            out = measure(fns, rounds=rounds, target=target, settle=0.25, desc=f"{case.id}/{pid}")
        for name, st in out.items():
            case.row(f"{pid} {name}", st)
        case.value(f"{pid}: plan ms (estimate / dfti / measure)",
                   f"{plans['estimate'][1]:.1f} / {plans['dfti'][1]:.1f} / {plan_measure:.0f}")
        case.ratio(f"{pid} estimate", f"{pid} measure", label=f"{pid} estimate / measure")
        case.ratio(f"{pid} dfti", f"{pid} measure", label=f"{pid} dfti / measure (auto chose {auto})")
        print(f"  {pid}: estimate/measure {out['estimate'].median / out['measure'].median:.2f}, dfti/measure "
              f"{out['dfti'].median / out['measure'].median:.2f} (auto: {auto})", flush=True)
        for p, _ in plans.values():
            p.free()
        m.free()
