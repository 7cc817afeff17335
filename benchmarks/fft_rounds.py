"""The CPU first-call cases of benchmarks/fft.py as per-round ratios, for a noisy machine.

``fft.py --case cpu`` compares medians over all rounds; on a shared 2-core machine a neighbour's burst lands in
some rounds and not others, and the medians of two contenders drift apart by 25% or more. Here each round times
every contender back to back (order alternating, A B C C B A), and the figure is the median of the per-round
ratios against FFTW_MEASURE on the same arrays, with p10 and p90; pyFFTW's measured plan on arrays of its own is
timed beside it. The cumath plan is made before the process has wisdom for the problem (what a first call runs).

    python benchmarks/fft_rounds.py [--rounds 40] [--json out.json] [case ...]   # cases: the ids of fft.py's cpu/
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

os.environ["CUMATH_CACHE_DIR"] = tempfile.mkdtemp(prefix="cumath-fft-rounds-")  # no stored wisdom: first calls
import cumath  # noqa: E402
import cumath.fft  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _fft_cpu import CPU_CASES, data, served  # noqa: E402
from harness import cpu_count  # noqa: E402


def _timed(fn, k: int) -> float:
    ts = []
    for _ in range(k):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _ratios(num, den) -> dict:
    r = np.array(num) / np.array(den)
    return {"median": float(np.median(r)), "p10": float(np.percentile(r, 10)), "p90": float(np.percentile(r, 90)),
            "best_over_best": min(num) / min(den)}


def run_case(cid, shape, dtype, axes, kind, rounds: int) -> dict:
    """cumath's plan without wisdom (``FFT.execute``, and the stateless call, whose plan is cached before any
    wisdom exists) against FFTW_MEASURE on the same arrays (cumath's measured plan of the same operand: the
    like-for-like reference of plan quality) and pyFFTW's measured plan writing into arrays of its own. The
    stateless call returns new memory every call, as numpy.fft does: above a few MiB that is fresh pages the
    kernel zeroes, which pyFFTW's execute into its kept output never pays; so the stateless call is also timed
    against the same call with a measured FFTW plan (both with ``options``, so both take the same path)."""
    import pyfftw

    x = data(shape, dtype, kind)
    opts = {"fft_type": "R2C"} if kind == "rfft" else {}
    f = cumath.fft.FFT(x, axes=list(axes), options=opts or None)
    f.plan()  # no wisdom yet: what a first call plans
    by = served(f)
    fn = cumath.fft.rfft if kind == "rfft" else cumath.fft.fft
    every = len(axes) == x.ndim  # the default axes: the call numpy users write (arguments take the Python path)
    stateless = functools.partial(fn, x, **({} if every else {"axes": list(axes)}))
    stateless()  # its plan is cached now, before any wisdom, and serves every later call
    # the same call form for both plan kinds (options: the Python path of the stateless call, ~4 us a call)
    stateless_opts = functools.partial(fn, x, axes=list(axes), options={**opts, "cpu_engine": "auto"})
    stateless_opts()  # planned before any wisdom too
    measured = {**opts, "cpu_engine": "fftw", "planning_effort": "measure"}
    stateless_measured = functools.partial(fn, x, axes=list(axes), options=measured)
    g = cumath.fft.FFT(x, axes=list(axes), options=measured)
    g.plan()
    stateless_measured()  # the measured plan of the stateless call (wisdom exists now: no second measurement)
    threads = 1 if x.size < (1 << 15) else cpu_count()  # FFTW at its best: one thread for small sizes (fft.py's)
    a = pyfftw.empty_aligned(x.shape, dtype=x.dtype)
    out_shape = x.shape[:-1] + (x.shape[-1] // 2 + 1,) if kind == "rfft" else x.shape
    b = pyfftw.empty_aligned(out_shape, dtype=np.complex128 if x.dtype in (np.float64, np.complex128)
                             else np.complex64)
    m = pyfftw.FFTW(a, b, axes=axes, flags=("FFTW_MEASURE",), threads=threads)
    a[...] = x
    k = max(3, min(400, int(0.02 / max(_timed(m.execute, 3), 1e-7))))  # ~20 ms of calls per contender a round
    fns = {"cumath, no wisdom": f.execute, "cumath FFTW_MEASURE": g.execute, "pyFFTW FFTW_MEASURE": m.execute,
           "cumath stateless, no wisdom": stateless, "cumath stateless (options), no wisdom": stateless_opts,
           "cumath stateless (options), FFTW_MEASURE": stateless_measured}
    for fn in fns.values():
        _timed(fn, 2)
    times = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            times[name].append(_timed(fns[name], k))
    by_measure = served(g)
    f.free()
    g.free()
    med = {name: statistics.median(v) * 1e3 for name, v in times.items()}
    return {"case": cid, "served_by": by, "measure_served_by": by_measure, "threads": threads,
            "calls_per_round": k, "rounds": rounds, "median_ms": med,
            "no_wisdom_over_measure": _ratios(times["cumath, no wisdom"], times["cumath FFTW_MEASURE"]),
            "no_wisdom_over_pyfftw": _ratios(times["cumath, no wisdom"], times["pyFFTW FFTW_MEASURE"]),
            "measure_over_pyfftw": _ratios(times["cumath FFTW_MEASURE"], times["pyFFTW FFTW_MEASURE"]),
            "stateless_over_pyfftw": _ratios(times["cumath stateless, no wisdom"], times["pyFFTW FFTW_MEASURE"]),
            "stateless_over_stateless_measure": _ratios(times["cumath stateless (options), no wisdom"],
                                                        times["cumath stateless (options), FFTW_MEASURE"])}


def _fmt(r: dict) -> str:
    return f"{r['median']:.3f} [p10 {r['p10']:.3f}, p90 {r['p90']:.3f}; best/best {r['best_over_best']:.3f}]"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases", nargs="*", help="case ids (default: all five)")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--json")
    args = p.parse_args(argv)
    rows = []
    for cid, title, shape, dtype, axes, kind in CPU_CASES:
        if args.cases and cid not in args.cases:
            continue
        row = run_case(cid, shape, dtype, axes, kind, args.rounds)
        rows.append(row)
        med = row["median_ms"]
        print(f"{cid:14s} {row['served_by']:13s} medians: no wisdom {med['cumath, no wisdom']:.4g} ms, measure "
              f"{med['cumath FFTW_MEASURE']:.4g}, pyFFTW {med['pyFFTW FFTW_MEASURE']:.4g}\n"
              f"    no wisdom / FFTW_MEASURE (same arrays)  {_fmt(row['no_wisdom_over_measure'])}\n"
              f"    no wisdom / pyFFTW (its own arrays)     {_fmt(row['no_wisdom_over_pyfftw'])}\n"
              f"    FFTW_MEASURE / pyFFTW                   {_fmt(row['measure_over_pyfftw'])}\n"
              f"    stateless no wisdom / pyFFTW            {_fmt(row['stateless_over_pyfftw'])}\n"
              f"    stateless: no wisdom / FFTW_MEASURE     {_fmt(row['stateless_over_stateless_measure'])}",
              flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
