"""GPU sweep for the memory-bound GEMM (issue 3): variants of our kernel, cuBLAS/cuBLASLt peers, and a shape grid.

    python benchmarks/device/sweep_memory_bound.py --out DIR [--deadline SECONDS]

Problem: D = 1.5 A @ B + 0.5 C, A 10,000,000 x 10, B 10 x 40, C 10,000,000 x 40, float32, row-major and
column-major. Every variant is checked against torch.addmm before it is timed. Writes DIR/sweep.json after
each section (a deadline stops early, keeping what was measured).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

try:
    from cumath.linalg.advanced import _memory_bound as mb  # noqa: E402
except Exception as exc:  # the package around it is being written by others: load the module alone
    print("package import failed, loading _memory_bound alone:", exc)
    import importlib

    importlib.import_module("cumath")
    for pkg, sub in (("cumath.linalg", "cumath/linalg"), ("cumath.linalg.advanced", "cumath/linalg/advanced")):
        mod = types.ModuleType(pkg)
        mod.__path__ = [os.path.join(ROOT, sub)]
        sys.modules[pkg] = mod
    from cumath.linalg.advanced import _memory_bound as mb  # noqa: E402

BW = 4.2e12
T0 = time.perf_counter()
RESULTS: dict = {"device": torch.cuda.get_device_name(), "variants": [], "peers": {}, "grid": [], "lt": {}}


def left(deadline):
    return deadline - (time.perf_counter() - T0)


def save(out):
    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump(RESULTS, f, indent=1, default=str)


def timer(fn, reps=10, rounds=3):
    """Median per-call seconds from CUDA events around ``reps`` calls, ``rounds`` times (after a warm-up)."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / reps)
    return sorted(times)[len(times) // 2]


def floor_us(m, n, k, size=4, c=True):
    return size * (m * k + k * n + (2 if c else 1) * m * n) / BW * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--deadline", type=float, default=80.0)
    args = ap.parse_args()
    out, deadline = args.out, args.deadline
    dev = torch.cuda.current_device()
    m, k, n = 10_000_000, 10, 40
    alpha, beta = 1.5, 0.5
    g = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(m, k, device="cuda", generator=g)
    B = torch.randn(k, n, device="cuda", generator=g)
    C = torch.randn(m, n, device="cuda", generator=g)
    D = torch.empty(m, n, device="cuda")
    Ac, Bc, Cc = A.t().contiguous().t(), B.t().contiguous().t(), C.t().contiguous().t()  # column-major
    Dc = torch.empty(n, m, device="cuda").t()
    ref = torch.addmm(C, A, B, beta=beta, alpha=alpha)
    scale = ref.abs().max().item()
    stream = torch.cuda.current_stream().cuda_stream
    fl = floor_us(m, n, k)
    RESULTS["floor_us"] = fl

    # copy bandwidth of the day
    X = torch.empty(m, n, device="cuda")
    t = timer(lambda: X.copy_(C))
    RESULTS["copy_TBps"] = 2 * C.numel() * 4 / t / 1e12
    print(f"floor {fl:.0f} us; copy {RESULTS['copy_TBps']:.2f} TB/s", flush=True)
    X = None

    row = mb.GemmProblem(m, n, k, "float32", (k, 1), (n, 1), (n, 1), (n, 1), device_id=dev)
    col = mb.GemmProblem(m, n, k, "float32", (1, m), (1, k), (1, m), (1, m), device_id=dev)
    T = mb.Tuning
    variants = []
    for u in (1, 2, 4):
        for st in (2, 3, 4):
            for br in (0, 64):
                variants.append(("row", T(unroll_r=u, stages=st, b_regs_max=br, waves=1)))
    variants += [("row", T(unroll_r=2, stages=3, b_regs_max=br, waves=1, block_r=512)) for br in (0, 64)]
    variants += [("row", T(unroll_r=2, stages=3, b_regs_max=br, waves=2)) for br in (0, 64)]
    variants += [("row", T(unroll_r=2, stages=3, b_regs_max=0, waves=1, min_blocks=3)),
                 ("row", T(unroll_r=2, stages=3, b_regs_max=64, waves=1, stream_hints=False))]
    for u in (1, 2, 4):
        for br in (0, 64):
            for w in (0, 1):
                variants.append(("row", T(async_copy=False, unroll_r=u, b_regs_max=br, waves=w)))
    variants += [("row", T(async_copy=False, unroll_r=2, b_regs_max=64, waves=0, stream_hints=False))]
    for ju in (1, 2, 4):
        for bc in (128, 256):
            for w in (0, 1):
                variants.append(("col", T(junroll_c=ju, block_c=bc, waves=w)))
    variants += [("col", T(junroll_c=2, block_c=256, waves=0, stream_hints=False))]

    for layout, tuning in variants:
        if left(deadline) < 45:
            RESULTS["variants_stopped"] = "deadline"
            break
        p, (a, b, c, d) = (row, (A, B, C, D)) if layout == "row" else (col, (Ac, Bc, Cc, Dc))
        entry = {"layout": layout, "tuning": dataclasses.asdict(tuning)}
        try:
            t0 = time.perf_counter()
            gemm = mb.MemoryBoundGemm(p, tuning)
            entry["compile_s"] = time.perf_counter() - t0
            d.fill_(float("nan"))

            def run(gemm=gemm, a=a, b=b, c=c, d=d):
                gemm.launch(a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr(), alpha, beta, stream)

            run()
            torch.cuda.synchronize()
            entry["rel_err"] = ((d - ref).abs().max().item()) / scale
            entry["us"] = timer(run) * 1e6
            entry["x_floor"] = entry["us"] / fl
            _, _, block, smem = gemm._variants[(True, True)]
            entry["block"], entry["smem"] = block, smem
            entry["grid"] = gemm._variants[(True, True)][1]
            entry["regs"] = gemm._variants[(True, True)][0].attribute(4)
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
        RESULTS["variants"].append(entry)
        print(layout, {kk: v for kk, v in entry["tuning"].items() if kk in (
            "unroll_r", "stages", "b_regs_max", "waves", "block_r", "async_copy", "junroll_c", "block_c",
            "stream_hints", "min_blocks")}, {kk: (round(v, 3) if isinstance(v, float) else v)
                                               for kk, v in entry.items() if kk not in ("tuning", "layout")},
              flush=True)
    save(out)

    # ------------------------------------------------------------------------------------- peers
    peers = RESULTS["peers"]

    def peer(name, fn):
        if left(deadline) < 30:
            return
        try:
            peers[name] = timer(fn, reps=5) * 1e6
            print(f"{name:48s} {peers[name]:9.0f} us  {peers[name] / fl:5.2f}x floor", flush=True)
        except Exception as exc:
            peers[name] = f"{type(exc).__name__}: {exc}"
            print(name, peers[name], flush=True)

    C2, Cc2 = C.clone(), Cc.clone()
    peer("torch.addmm row-major (allocates D)", lambda: torch.addmm(C, A, B, beta=beta, alpha=alpha))
    peer("torch.addmm row-major out=D", lambda: torch.addmm(C, A, B, beta=beta, alpha=alpha, out=D))
    peer("torch C.addmm_ row-major (in place)", lambda: C2.addmm_(A, B, beta=beta, alpha=alpha))
    peer("torch C.addmm_ column-major (in place)", lambda: Cc2.addmm_(Ac, Bc, beta=beta, alpha=alpha))
    peer("torch.addmm column-major (allocates D)", lambda: torch.addmm(Cc, Ac, Bc, beta=beta, alpha=alpha))
    peer("torch A @ B only, row-major", lambda: torch.mm(A, B, out=D))
    try:
        torch.backends.cuda.preferred_blas_library("cublaslt")
        peer("torch[cublaslt] C.addmm_ row-major", lambda: C2.addmm_(A, B, beta=beta, alpha=alpha))
        peer("torch[cublaslt] C.addmm_ column-major", lambda: Cc2.addmm_(Ac, Bc, beta=beta, alpha=alpha))
        peer("torch[cublaslt] addmm row-major", lambda: torch.addmm(C, A, B, beta=beta, alpha=alpha))
    finally:
        torch.backends.cuda.preferred_blas_library("cublas")
    try:
        import cupy as cp

        ca, cb, cc = cp.from_dlpack(A), cp.from_dlpack(B), cp.from_dlpack(C)
        peer("cupy alpha*a@b + beta*c", lambda: alpha * (ca @ cb) + beta * cc)
    except Exception as exc:
        peers["cupy"] = str(exc)
    # which kernels cuBLAS ran
    try:
        from torch.profiler import ProfilerActivity, profile

        names = {}
        for name, fn in (("addmm_ row", lambda: C2.addmm_(A, B, beta=beta, alpha=alpha)),
                         ("addmm_ col", lambda: Cc2.addmm_(Ac, Bc, beta=beta, alpha=alpha)),
                         ("addmm alloc row", lambda: torch.addmm(C, A, B, beta=beta, alpha=alpha))):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            names[name] = [(e.key, e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
                           for e in prof.key_averages()]
        RESULTS["kernel_names"] = names
        print(json.dumps(names, indent=0, default=str)[:3000], flush=True)
    except Exception as exc:
        RESULTS["kernel_names"] = str(exc)
    C2 = Cc2 = None
    save(out)

    # ------------------------------------------------------------------------- cuBLASLt directly
    try:
        import cublaslt_probe as lt

        ws_size = 32 << 20
        ws = torch.empty(ws_size, dtype=torch.uint8, device="cuda")

        def lt_timer(fn):
            return timer(fn, reps=3, rounds=3)

        forms = {
            "row-major (ORDER_ROW)": ((m, k, k, lt.ORDER_ROW), (k, n, n, lt.ORDER_ROW), (m, n, n, lt.ORDER_ROW),
                                      (A, B, C, D)),
            "column-major (ORDER_COL)": ((m, k, m, lt.ORDER_COL), (k, n, k, lt.ORDER_COL),
                                         (m, n, m, lt.ORDER_COL), (Ac, Bc, Cc, Dc)),
            "transposed D^T = B^T A^T (what torch does)": ((n, k, n, lt.ORDER_COL), (k, m, k, lt.ORDER_COL),
                                                            (n, m, n, lt.ORDER_COL), (B, A, C, D)),
        }
        for name, (la, lb, lc, ts) in forms.items():
            if left(deadline) < 20:
                break
            res = lt.probe(la, lb, lc, tuple(x.data_ptr() for x in ts), alpha, beta, stream, ws.data_ptr(),
                           ws_size, lt_timer)
            RESULTS["lt"][name] = res
            f, b_ = res.get("first"), res.get("best")
            print(f"cuBLASLt {name}: {res['count']} algos; first "
                  f"{f and round(f['us'])} us {f and (f['tile'], f['stages'], f['splitk'])}; best "
                  f"{b_ and round(b_['us'])} us {b_ and (b_['tile'], b_['stages'], b_['splitk'], b_['rank'])}",
                  flush=True)
    except Exception as exc:
        RESULTS["lt"]["error"] = f"{type(exc).__name__}: {exc}"
        print("cuBLASLt probe failed:", exc, flush=True)
    save(out)

    # --------------------------------------------------------------- shape grid against cuBLAS
    A = B = C = D = Ac = Bc = Cc = Dc = ref = None
    torch.cuda.empty_cache()
    shapes = [(mm, kk, nn, "float32") for kk in (4, 10, 32, 64) for nn in (8, 40, 128, 256)
              for mm in (2_000_000,)]
    shapes += [(mm, 10, 40, "float32") for mm in (10_000, 100_000, 1_000_000)]
    shapes += [(2_000_000, 10, 40, "float64"), (2_000_000, 32, 128, "float64"), (2_000_000, 10, 40, "float16"),
               (2_000_000, 32, 128, "float16")]
    tdt = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16}
    for mm, kk, nn, dt in shapes:
        if left(deadline) < 5:
            RESULTS["grid_stopped"] = "deadline"
            break
        size = torch.tensor([], dtype=tdt[dt]).element_size()
        a = torch.randn(mm, kk, device="cuda", dtype=tdt[dt])
        b = torch.randn(kk, nn, device="cuda", dtype=tdt[dt])
        c = torch.randn(mm, nn, device="cuda", dtype=tdt[dt])
        d = torch.empty_like(c)
        entry = {"m": mm, "k": kk, "n": nn, "dtype": dt, "floor_us": floor_us(mm, nn, kk, size)}
        p = mb.GemmProblem(mm, nn, kk, dt, (kk, 1), (nn, 1), (nn, 1), (nn, 1), device_id=dev)
        entry["decide"] = mb.decide(p)
        try:
            gemm = mb.MemoryBoundGemm(p)

            def run(gemm=gemm, a=a, b=b, c=c, d=d):
                gemm.launch(a.data_ptr(), b.data_ptr(), c.data_ptr(), d.data_ptr(), alpha, beta, stream)

            run()
            r = torch.addmm(c.double(), a.double(), b.double(), beta=beta, alpha=alpha) if dt != "float16" else \
                torch.addmm(c.float(), a.float(), b.float(), beta=beta, alpha=alpha)
            entry["rel_err"] = ((d.to(r.dtype) - r).abs().max() / r.abs().max()).item()
            del r
            entry["ours_us"] = timer(run, reps=5) * 1e6
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
        c2 = c.clone()
        entry["cublas_inplace_us"] = timer(lambda: c2.addmm_(a, b, beta=beta, alpha=alpha), reps=5) * 1e6
        if "ours_us" in entry:
            entry["ratio_ours_to_cublas"] = entry["ours_us"] / entry["cublas_inplace_us"]
        RESULTS["grid"].append(entry)
        print({kk_: (round(v, 3) if isinstance(v, float) else v) for kk_, v in entry.items()}, flush=True)
        a = b = c = d = c2 = None
    save(out)
    print(f"sweep done in {time.perf_counter() - T0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
