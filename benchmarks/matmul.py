"""Generic matmul benchmark (CPU): cumath.linalg against NumPy and SciPy's BLAS, in one process, on the same data.

Cases (issue 3, CPU figures):
- float64 and float32 2048^3: cumath (stateful Matmul.execute and the stateless matmul) against numpy's a @ b;
  figure: at most 1.03x numpy.
- tall-skinny D = alpha A@B + beta C (A 1,000,000 x 10, B 10 x 40, C 1,000,000 x 40), float64 and float32:
  cumath in place (options={"inplace": True}) against SciPy's in-place BLAS call (dgemm/sgemm with
  overwrite_c=True on transposed views); figures: at most 1.05x SciPy and at least 4x faster than NumPy's
  alpha*(a@b)+beta*c; out of place (c untouched): at least 1.5x faster than NumPy's expression.

Contenders run interleaved (rounds of A B C ...), each ``--number`` calls per round after a short idle
pause, so that drift of this shared machine falls on all alike and the previous contender's BLAS threads have
gone to sleep before the next one is timed. Prints medians, spreads (max-min over median) and ratios;
--json writes everything.

    python benchmarks/matmul.py [--quick] [--json out.json]

GPU cases live in benchmarks/matmul_gpu.py (cumath.linalg.advanced against PyTorch and CuPy). HOOK for the
lead: ``--gpu`` runs that script in this process after the CPU cases (its own --json is written next to ours).
``--generic-gpu``: a short GPU timing of cumath.linalg; ``--explicit-batch``: 1,000 products of 64^3 given as a
list (one grouped cuBLAS launch against the per-member path and Python loops of torch.mm / cupy.matmul).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cumath  # noqa: E402
from cumath._core.execution import available_cpus  # noqa: E402
from cumath._core.timing import Timing, time_interleaved  # noqa: E402

RNG = np.random.default_rng(11)
SETTLE = 0.3  # seconds of idling before each timed contender (see interleaved())
ROWS: list[dict] = []
FIGURES: list[dict] = []


def record(case, impl, timing, **extra):
    row = {"case": case, "impl": impl, "median_ms": timing.median * 1e3, "best_ms": timing.best * 1e3,
           "spread": timing.spread, **extra}
    ROWS.append(row)
    print(f"  {impl:44s} {row['median_ms']:10.2f} ms   (spread {100 * timing.spread:4.1f}%)", flush=True)
    return row


def figure(case, what, value, limit, kind="max"):
    ok = value <= limit if kind == "max" else value >= limit
    FIGURES.append({"case": case, "what": what, "ratio": value, "limit": limit, "kind": kind, "ok": ok})


def interleaved(fns: dict, number: int, rounds: int, settle: float) -> dict:
    """Rounds of A B C ...: before each contender the machine idles ``settle`` seconds, so that the worker
    threads of the previous contender's BLAS (NumPy and SciPy each bring their own OpenBLAS, whose idle
    threads spin for a while after a call) have gone to sleep and do not compete with the next one."""
    for fn in fns.values():
        fn()
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            time.sleep(settle)
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples[k].append((time.perf_counter() - t0) / number)
    return {k: Timing(v) for k, v in samples.items()}


def run(case, fns, number, rounds, settle=SETTLE):
    print(f"\n== {case} ==", flush=True)
    timings = interleaved(fns, number=number, rounds=rounds, settle=settle)
    return {k: record(case, k, t)["median_ms"] for k, t in timings.items()}


def square(dtype, number, rounds):
    n = 2048
    a = RNG.standard_normal((n, n)).astype(dtype)
    b = RNG.standard_normal((n, n)).astype(dtype)
    mm = cumath.linalg.Matmul(a, b)
    mm.plan()
    np.testing.assert_allclose(mm.execute(), a @ b, rtol=1e-3 if dtype == np.float32 else 1e-10, atol=1e-2)
    case = f"{np.dtype(dtype).name} 2048^3"
    t = run(case, {"numpy a @ b": lambda: a @ b, "cumath Matmul.execute": mm.execute,
                   "cumath matmul (stateless)": lambda: cumath.linalg.matmul(a, b)}, number, rounds)
    figure(case, "Matmul.execute / numpy", t["cumath Matmul.execute"] / t["numpy a @ b"], 1.03)
    figure(case, "stateless matmul / numpy", t["cumath matmul (stateless)"] / t["numpy a @ b"], 1.03)
    mm.free()


def tall_skinny(dtype, number, rounds):
    import scipy.linalg.blas as sblas

    m, n, k = 1_000_000, 40, 10
    alpha, beta = 1.5, 0.5
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    c = RNG.standard_normal((m, n)).astype(dtype)
    gemm = sblas.dgemm if dtype == np.float64 else sblas.sgemm
    c_scipy, c_ours, c_stateless = c.copy(), c.copy(), c.copy()
    inplace = cumath.linalg.Matmul(a, b, c_ours, alpha=alpha, beta=beta, options={"inplace": True})
    inplace.plan()
    outofplace = cumath.linalg.Matmul(a, b, c, alpha=alpha, beta=beta)
    outofplace.plan()
    expected = alpha * (a @ b) + beta * c
    np.testing.assert_allclose(outofplace.execute(), expected, rtol=1e-4, atol=1e-3)

    def scipy_inplace():
        # C^T (n x m, column-major view of row-major C) = alpha B^T A^T + beta C^T, written into C
        gemm(alpha, b.T, a.T, beta, c_scipy.T, overwrite_c=True)

    def stateless_inplace():
        cumath.linalg.matmul(a, b, c_stateless, alpha=alpha, beta=beta, options={"inplace": True})

    case = f"{np.dtype(dtype).name} tall-skinny 1e6x40x10"
    t = run(case, {"scipy gemm in place (overwrite_c)": scipy_inplace,
                   "cumath Matmul in place": inplace.execute,
                   "cumath matmul in place (stateless)": stateless_inplace,
                   "cumath Matmul out of place": outofplace.execute,
                   "numpy alpha*(a@b)+beta*c": lambda: alpha * (a @ b) + beta * c}, number, rounds)
    sc, ours, st = (t["scipy gemm in place (overwrite_c)"], t["cumath Matmul in place"],
                    t["cumath matmul in place (stateless)"])
    npx, oop = t["numpy alpha*(a@b)+beta*c"], t["cumath Matmul out of place"]
    figure(case, "in place / scipy in place", ours / sc, 1.05)
    figure(case, "stateless in place / scipy in place", st / sc, 1.05)
    figure(case, "numpy expression / in place (speed-up)", npx / ours, 4.0, "min")
    figure(case, "numpy expression / out of place (speed-up)", npx / oop, 1.5, "min")
    inplace.free()
    outofplace.free()


def generic_gpu(rounds):
    """A short GPU timing of the generic matmul (cuBLAS) against CuPy and PyTorch, interleaved, synchronised
    per loop: 4096^3 float32/float64 and the tall-skinny in-place product (float32, 10,000,000 x 40 x 10)."""
    import cupy as cp
    import torch

    sync = torch.cuda.synchronize
    out = {}
    for dtype in ("float32", "float64"):
        n = 4096
        a = cp.random.standard_normal((n, n), dtype=dtype)
        b = cp.random.standard_normal((n, n), dtype=dtype)
        ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
        mm = cumath.linalg.Matmul(a, b)
        mm.plan()
        case = f"GPU {dtype} 4096^3"
        print(f"\n== {case} ==", flush=True)
        t = time_interleaved({"cupy a @ b": lambda: a @ b, "torch.mm": lambda: torch.mm(ta, tb),
                              "cumath Matmul.execute": mm.execute,
                              "cumath matmul (stateless)": lambda: cumath.linalg.matmul(a, b)},
                             sync=sync, number=5, rounds=rounds)
        flops = 2 * n ** 3
        for k, v in t.items():
            record(case, k, v, tflops=flops / v.median / 1e12)
        figure(case, "Matmul.execute / faster peer", t["cumath Matmul.execute"].median /
               min(t["cupy a @ b"].median, t["torch.mm"].median), 1.03)
        mm.free()
        out[case] = t
    m, n, k = 10_000_000, 40, 10
    a = cp.random.standard_normal((m, k), dtype="float32")
    b = cp.random.standard_normal((k, n), dtype="float32")
    c = cp.random.standard_normal((m, n), dtype="float32")
    ta, tb, tc = (torch.as_tensor(x, device="cuda") for x in (a, b, c))
    mm = cumath.linalg.Matmul(a, b, c, alpha=1.5, beta=0.5, options={"inplace": True})
    mm.plan()
    case = "GPU float32 tall-skinny 1e7x40x10 in place"
    print(f"\n== {case} ==", flush=True)
    t = time_interleaved({"torch.addmm(out=c)": lambda: torch.addmm(tc, ta, tb, beta=0.5, alpha=1.5, out=tc),
                          "cupy 1.5*(a@b)+0.5*c": lambda: 1.5 * (a @ b) + 0.5 * c,
                          "cumath Matmul in place": mm.execute}, sync=sync, number=20, rounds=rounds)
    floor_us = (m * k + m * n * 2) * 4 / 4.2e12 * 1e6
    for kk, v in t.items():
        record(case, kk, v, floor_ratio=v.median * 1e6 / floor_us)
    print(f"  (memory floor at 4.2 TB/s: {floor_us:.0f} us)")
    mm.free()


def explicit_batch_gpu(rounds, members=1000, n=64):
    """An explicit batch on the GPU: ``members`` products of n x n x n as a list (issue 3: grouped-batched).
    cumath Matmul(list).execute (one handle, one grouped cuBLAS launch) against the per-member path it
    replaces (a planned Matmul per member, each with its own handle, executed one after the other), Python
    loops of torch.mm and cupy.matmul, and torch.bmm on the stacked batch (what equal shapes allow)."""
    import cupy as cp
    import torch

    sync = torch.cuda.synchronize

    def rand(dtype):
        x = cp.random.standard_normal((n, n), dtype="float32")
        return x if dtype == "float32" else (x + 1j * cp.random.standard_normal((n, n), dtype="float32")).astype(dtype)

    for dtype in ("float32", "complex64"):
        a = [rand(dtype) for _ in range(members)]
        b = [rand(dtype) for _ in range(members)]
        ta = [torch.as_tensor(x, device="cuda") for x in a]
        tb = [torch.as_tensor(y, device="cuda") for y in b]
        sa, sb = torch.stack(ta), torch.stack(tb)
        t0 = time.perf_counter()
        grouped = cumath.linalg.Matmul(a, b)
        grouped.plan()
        plan_grouped = time.perf_counter() - t0
        t0 = time.perf_counter()
        singles = [cumath.linalg.Matmul(x, y) for x, y in zip(a, b)]
        for m in singles:
            m.plan()
        plan_singles = time.perf_counter() - t0
        out = grouped.execute()
        for i in (0, members // 2, members - 1):
            ref = (ta[i].to(torch.complex128 if dtype == "complex64" else torch.float64) @
                   tb[i].to(torch.complex128 if dtype == "complex64" else torch.float64))
            err = float(torch.linalg.norm(torch.as_tensor(out[i], device="cuda") - ref) / torch.linalg.norm(ref))
            assert err < 1e-5, f"explicit batch result {i}: relative error {err:.2e}"
        case = f"GPU {dtype} explicit batch {members} x {n}^3"
        print(f"\n== {case} ==  (plan: grouped {plan_grouped * 1e3:.0f} ms, {members} single plans "
              f"{plan_singles * 1e3:.0f} ms)", flush=True)
        t = time_interleaved({"cumath Matmul(list).execute (grouped)": grouped.execute,
                              "cumath per-member loop (previous)": lambda: [m.execute() for m in singles],
                              "torch.mm loop": lambda: [torch.mm(x, y) for x, y in zip(ta, tb)],
                              "cupy.matmul loop": lambda: [cp.matmul(x, y) for x, y in zip(a, b)],
                              "torch.bmm stacked (equal shapes only)": lambda: torch.bmm(sa, sb)},
                             sync=sync, number=3, rounds=rounds)
        flops = 8 * members * n ** 3 if dtype == "complex64" else 2 * members * n ** 3
        for k, v in t.items():
            record(case, k, v, tflops=flops / v.median / 1e12)
        g = t["cumath Matmul(list).execute (grouped)"].median
        print("  ratios (other / grouped): " + ", ".join(f"{k.split(' (')[0]} {v.median / g:.2f}x"
                                                           for k, v in t.items() if not k.startswith("cumath Matmul")))
        figure(case, "grouped / per-member loop", g / t["cumath per-member loop (previous)"].median, 1.0)
        figure(case, "grouped / torch.mm loop", g / t["torch.mm loop"].median, 1.0)
        figure(case, "grouped / cupy.matmul loop", g / t["cupy.matmul loop"].median, 1.0)
        grouped.free()
        for m in singles:
            m.free()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--number", type=int, default=3, help="calls per contender per round")
    ap.add_argument("--json", help="write the rows and figures to this file")
    ap.add_argument("--gpu", action="store_true", help="then run benchmarks/matmul_gpu.py (the GPU cases)")
    ap.add_argument("--generic-gpu", action="store_true", help="only a short GPU timing of the generic matmul")
    ap.add_argument("--explicit-batch", action="store_true",
                    help="only the GPU explicit batch (1,000 x 64^3 as a list: grouped vs loops)")
    args = ap.parse_args()
    rounds = 3 if args.quick else 7
    if args.explicit_batch:
        explicit_batch_gpu(rounds)
        _report(args)
        return
    if args.generic_gpu:
        generic_gpu(rounds)
        _report(args)
        return
    from cumath._bindings import blas

    lib = blas.find_blas("auto")
    print(f"cumath {cumath.__version__}; {available_cpus()} cores; CPU BLAS: {lib.provider.description} "
          f"({lib.config or ''}); numpy {np.__version__}", flush=True)
    for dtype in (np.float64, np.float32):
        square(dtype, max(1, args.number // 2), rounds)
    for dtype in (np.float64, np.float32):
        tall_skinny(dtype, args.number, rounds)
    _report(args)
    if args.gpu:  # the GPU cases (cumath.linalg.advanced) are written and maintained in matmul_gpu.py
        gpu_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "matmul_gpu.py")
        argv = [gpu_script] + (["--quick"] if args.quick else [])
        if args.json:
            argv += ["--json", os.path.splitext(args.json)[0] + "-gpu.json"]
        sys.argv = argv
        runpy.run_path(gpu_script, run_name="__main__")


def _report(args):
    from cumath._bindings import blas

    print("\n== figures (ratios of medians from this run) ==")
    for f in FIGURES:
        bound = "<=" if f["kind"] == "max" else ">="
        print(f"  {f['case']:30s} {f['what']:42s} {f['ratio']:7.3f}  ({bound} {f['limit']})  "
              f"{'ok' if f['ok'] else 'MISSED'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": available_cpus(),
                       "blas": blas.find_blas("auto").provider.description, "rows": ROWS, "figures": FIGURES},
                      fh, indent=1)


if __name__ == "__main__":
    main()
