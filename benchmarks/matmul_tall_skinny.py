"""Tall-skinny GEMM on the GPU (issue 3): D = 1.5 A @ B + 0.5 C, A m x k, B k x n, C m x n, float32.

cumath's memory-bound kernel (``MemoryBoundGemm`` directly, and ``Matmul.execute`` where it runs) against
PyTorch (``addmm``, in-place ``addmm_``, with cuBLAS and with cuBLASLt as its BLAS), CuPy's
``alpha*a@b + beta*c``, and cuBLASLt called directly (its heuristic's first algorithm and the fastest of all
it offers), in row-major and column-major layouts and in the transposed formulation D^T = B^T A^T. All in one
process on the same data, timed interleaved; prints medians, multiples of the memory floor (bytes that must
move / 4.2 TB/s, the copy bandwidth measured on the H200) and ratios.

    python benchmarks/matmul_tall_skinny.py [--m 10000000 --k 10 --n 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "device"))

from cumath._core.timing import time_interleaved  # noqa: E402

BANDWIDTH = 4.2e12  # bytes/s, device-to-device copy (read + write) measured on the H200
ISSUE_FLOOR_US = 837.0  # the issue's figure for m=1e7, k=10, n=40 (its bytes/4.2e12 gives 857 us; see NOTES)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=10_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--number", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import torch

    from cumath.linalg.advanced import _memory_bound as mb

    m, k, n = args.m, args.k, args.n
    alpha, beta = 1.5, 0.5
    dev = torch.cuda.current_device()
    g = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(m, k, device="cuda", generator=g)
    B = torch.randn(k, n, device="cuda", generator=g)
    C = torch.randn(m, n, device="cuda", generator=g)
    D = torch.empty(m, n, device="cuda")
    Ac, Bc, Cc = A.t().contiguous().t(), B.t().contiguous().t(), C.t().contiguous().t()  # column-major
    Dc = torch.empty(n, m, device="cuda").t()
    C2, Cc2 = C.clone(), Cc.clone()  # in-place peers overwrite these
    ref = torch.addmm(C.double(), A.double(), B.double(), beta=beta, alpha=alpha)
    stream = torch.cuda.current_stream().cuda_stream
    floor_us = 4 * (m * k + k * n + 2 * m * n) / BANDWIDTH * 1e6

    def err(d):
        return ((d.double() - ref).abs().max() / ref.abs().max()).item()

    fns, notes = {}, {}

    def gemm_fn(problem, tuning, a, b, c, d):
        gemm = mb.MemoryBoundGemm(problem, tuning)
        pa, pb, pc, pd = a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr()
        return lambda: gemm.launch(pa, pb, pc, pd, alpha, beta, stream)

    row = mb.GemmProblem(m, n, k, "float32", (k, 1), (n, 1), (n, 1), (n, 1), device_id=dev)
    col = mb.GemmProblem(m, n, k, "float32", (1, m), (1, k), (1, m), (1, m), device_id=dev)
    notes["select(row-major)"] = mb.decide(row)
    fns["cumath MemoryBoundGemm row-major"] = gemm_fn(row, mb.TUNING, A, B, C, D)
    fns["cumath MemoryBoundGemm column-major"] = gemm_fn(col, mb.TUNING, Ac, Bc, Cc, Dc)
    for name, tuning in (("unroll 2, 3 stages", mb.Tuning(unroll_r=2, stages=3)),
                         ("unroll 2, 3 stages, 480 threads", mb.Tuning(unroll_r=2, stages=3, block_r=512)),
                         ("no cp.async, unroll 2", mb.Tuning(async_copy=False, unroll_r=2))):
        fns[f"  (variant: {name})"] = gemm_fn(row, tuning, A, B, C, D)
    for fn in list(fns.values()):
        fn()
    torch.cuda.synchronize()
    fns["cumath MemoryBoundGemm row-major"]()
    torch.cuda.synchronize()
    notes["rel_err row-major"] = err(D)
    fns["cumath MemoryBoundGemm column-major"]()
    torch.cuda.synchronize()
    notes["rel_err column-major"] = err(Dc)

    try:  # the stateful Matmul of cumath.linalg.advanced, where it is there
        from cumath.linalg.advanced import Matmul

        mm = Matmul(A, B, C, alpha=alpha, beta=beta)
        mm.plan()
        out = mm.execute()
        torch.cuda.synchronize()
        notes["Matmul.execute rel_err"] = err(out)
        notes["Matmul kernel"] = repr(getattr(mm, "_memory_bound_kernel", None) or "see its INFO log")
        fns["cumath Matmul.execute (stateful)"] = mm.execute
    except Exception as exc:
        notes["Matmul"] = f"not measured: {type(exc).__name__}: {exc}"

    fns["torch.addmm row-major"] = lambda: torch.addmm(C, A, B, beta=beta, alpha=alpha)
    fns["torch C.addmm_ row-major (in place)"] = lambda: C2.addmm_(A, B, beta=beta, alpha=alpha)
    fns["torch C.addmm_ column-major (in place)"] = lambda: Cc2.addmm_(Ac, Bc, beta=beta, alpha=alpha)

    def with_lt(fn):
        def run():
            torch.backends.cuda.preferred_blas_library("cublaslt")
            try:
                fn()
            finally:
                torch.backends.cuda.preferred_blas_library("cublas")
        return run

    fns["torch[cuBLASLt] C.addmm_ row-major"] = with_lt(lambda: C2.addmm_(A, B, beta=beta, alpha=alpha))
    try:
        import cupy as cp

        ca, cb, cc = cp.from_dlpack(A), cp.from_dlpack(B), cp.from_dlpack(C)
        fns["cupy alpha*a@b + beta*c"] = lambda: alpha * (ca @ cb) + beta * cc
    except Exception as exc:
        notes["cupy"] = f"not measured: {exc}"

    lt_rows = {}
    try:  # cuBLASLt directly: first heuristic choice and fastest of the algorithms it offers
        import cublaslt_probe as lt

        ws_size = 32 << 20
        ws = torch.empty(ws_size, dtype=torch.uint8, device="cuda")

        def lt_timer(fn):
            fn()
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(5):
                fn()
            e1.record()
            e1.synchronize()
            return e0.elapsed_time(e1) / 5e3

        forms = {
            "row-major (ORDER_ROW)": ((m, k, k, lt.ORDER_ROW), (k, n, n, lt.ORDER_ROW), (m, n, n, lt.ORDER_ROW),
                                      (A, B, C, D)),
            "column-major (ORDER_COL)": ((m, k, m, lt.ORDER_COL), (k, n, k, lt.ORDER_COL),
                                         (m, n, m, lt.ORDER_COL), (Ac, Bc, Cc, Dc)),
            "transposed D^T = B^T A^T": ((n, k, n, lt.ORDER_COL), (k, m, k, lt.ORDER_COL), (n, m, n, lt.ORDER_COL),
                                         (B, A, C, D)),
        }
        for name, (la, lb, lc, ts) in forms.items():
            res = lt.probe(la, lb, lc, tuple(x.data_ptr() for x in ts), alpha, beta, stream, ws.data_ptr(),
                           ws_size, lt_timer)
            lt_rows[name] = res
    except Exception as exc:
        notes["cuBLASLt probe"] = f"not measured: {type(exc).__name__}: {exc}"

    print(f"D = {alpha} A @ B + {beta} C, m={m} k={k} n={n} float32, {torch.cuda.get_device_name()}")
    print(f"floor = {floor_us:.0f} us (bytes / 4.2 TB/s; the issue's figure: {ISSUE_FLOOR_US:.0f} us)")
    timings = time_interleaved(fns, sync=torch.cuda.synchronize, number=args.number, rounds=args.rounds)
    rows = []
    base = timings["torch.addmm row-major"].median
    for name, t in timings.items():
        us = t.median * 1e6
        rows.append({"impl": name, "median_us": us, "best_us": t.best * 1e6, "spread": t.spread,
                     "x_floor": us / floor_us, "x_issue_floor": us / ISSUE_FLOOR_US, "vs_torch_addmm": t.median / base})
        print(f"  {name:44s} {us:9.1f} us  {us / floor_us:5.2f}x floor  {us / ISSUE_FLOOR_US:5.2f}x 837us  "
              f"{t.median / base:5.2f}x torch.addmm  (spread {100 * t.spread:4.1f}%)")
    for name, res in lt_rows.items():
        for which in ("first", "best"):
            a = res.get(which)
            if a:
                rows.append({"impl": f"cuBLASLt {name} {which}", "median_us": a["us"], "x_floor": a["us"] / floor_us,
                             "x_issue_floor": a["us"] / ISSUE_FLOOR_US, "tile": a["tile"], "stages": a["stages"],
                             "splitk": a["splitk"], "rank": a["rank"], "of": res["count"]})
                print(f"  cuBLASLt {name:27s} {which:5s} {a['us']:9.1f} us  {a['us'] / floor_us:5.2f}x floor  "
                      f"tile {a['tile']} stages {a['stages']} split-k {a['splitk']} (#{a['rank']} of {res['count']})")
    for key, value in notes.items():
        print(f"  {key}: {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"m": m, "k": k, "n": n, "floor_us": floor_us, "issue_floor_us": ISSUE_FLOOR_US,
                       "device": torch.cuda.get_device_name(), "rows": rows, "notes": notes,
                       "cublaslt": lt_rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
