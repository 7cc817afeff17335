"""GPU matmul benchmark: cumath.linalg.advanced against PyTorch and CuPy, in one process, on the same data.

Cases (issue 3): per-call 64^3 float32 (stateless matmul and Matmul.execute against torch.mm and CuPy's @),
batched RELU_BIAS 256 x 1024^3 float32 (plain and COMPUTE_32F_FAST_TF32), bf16 8192^3, and the tall-skinny
D = 1.5 A@B + 0.5 C (A 10,000,000 x 10, B 10 x 40, C 10,000,000 x 40, float32; floor 837 us at 4.2 TB/s).
Contenders run interleaved (``time_interleaved``); medians, TFLOP/s and ratios are printed; --json writes all.

    python benchmarks/matmul_gpu.py --json $OUT/matmul_gpu.json [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cumath.linalg.advanced as la  # noqa: E402
from cumath._core.timing import time_interleaved  # noqa: E402

ROWS: list[dict] = []
FLOOR_TALL_SKINNY_US = 837.0


def record(case, impl, timing, flops=None, **extra):
    row = {"case": case, "impl": impl, "median_us": timing.median * 1e6, "best_us": timing.best * 1e6,
           "spread": timing.spread, **extra}
    if flops:
        row["tflops"] = flops / timing.median / 1e12
    ROWS.append(row)
    tf = f"  {row['tflops']:8.1f} TFLOP/s" if flops else ""
    print(f"  {impl:40s} {row['median_us']:12.1f} us{tf}   (spread {100 * timing.spread:4.1f}%)", flush=True)
    return row


def ratio(case, num, den, what):
    rows = {r["impl"]: r for r in ROWS if r["case"] == case and "impl" in r}
    if num in rows and den in rows:
        value = rows[num]["median_us"] / rows[den]["median_us"]
        ROWS.append({"case": case, "ratio": what, "value": value})
        print(f"  ratio {what}: {value:.3f}", flush=True)


def per_call_diagnostics(mm, a, b, torch, rounds):
    """Where the per-call time goes: the bare library call (with the planned algorithm, and with NULL: cuBLASLt's
    own choice), the GPU time of one call (CUDA events), and Matmul.execute after autotuning."""
    case = "per-call 64x64x64 float32 (diagnostics)"
    print(case, flush=True)
    v = mm._v
    d = mm.execute()
    args = list(v.args)
    args[10] = args[8] = d.data_ptr()
    null = list(args)
    null[12] = None
    raw = v.raw
    fns = {"bare cublasLtMatmul (planned algo)": lambda: raw(*args),
           "bare cublasLtMatmul (algo NULL)": lambda: raw(*null),
           "torch.empty((64, 64))": lambda: torch.empty((64, 64), device="cuda"),
           "torch.mm": lambda: torch.mm(a, b)}
    t = time_interleaved(fns, sync=torch.cuda.synchronize, number=2000, rounds=rounds)
    for k, val in t.items():
        record(case, k, val)
    for name, fn in (("GPU time of one cumath call", lambda: raw(*args)), ("GPU time of one torch.mm",
                                                                           lambda: torch.mm(a, b))):
        times = []
        for _ in range(50):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1) * 1e3)
        times.sort()
        ROWS.append({"case": case, "impl": name, "median_us": times[len(times) // 2], "best_us": times[0],
                     "spread": 0.0})
        print(f"  {name:40s} {times[len(times) // 2]:12.1f} us (CUDA events)", flush=True)
    timed = mm.autotune(iterations=20)
    t = time_interleaved({"cumath Matmul.execute (autotuned)": mm.execute, "torch.mm": lambda: torch.mm(a, b)},
                         sync=torch.cuda.synchronize, number=2000, rounds=rounds)
    for k, val in t.items():
        record(case, k, val, algorithm=timed[0].algorithm_id if k.startswith("cumath") else None)


def main():
    import cupy as cp
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--quick", action="store_true", help="fewer rounds")
    args = p.parse_args()
    rounds = 5 if args.quick else 11
    sync = torch.cuda.synchronize
    torch.manual_seed(0)

    # ------------------------------------------------------------------------------ per call, 64^3 fp32
    case = "per-call 64x64x64 float32"
    print(case, flush=True)
    a = torch.randn(64, 64, device="cuda")
    b = torch.randn(64, 64, device="cuda")
    ca, cb = cp.asarray(a), cp.asarray(b)
    mm = la.Matmul(a, b)
    mm.plan()
    la.matmul(a, b)
    fns = {"torch.mm": lambda: torch.mm(a, b), "cumath matmul (stateless)": lambda: la.matmul(a, b),
           "cumath Matmul.execute": mm.execute, "cupy a @ b": lambda: ca @ cb}
    t = time_interleaved(fns, sync=sync, number=2000, rounds=rounds)
    for k, v in t.items():
        record(case, k, v)
    ratio(case, "cumath matmul (stateless)", "torch.mm", "stateless / torch.mm (target <= 1.5)")
    ratio(case, "cumath Matmul.execute", "torch.mm", "execute / torch.mm (target <= 1.0)")
    per_call_diagnostics(mm, a, b, torch, rounds)
    mm.free()

    # ----------------------------------------------------------------------- batched RELU_BIAS fp32
    for tf32 in (False, True):
        case = f"batched RELU_BIAS 256x1024^3 float32{' TF32' if tf32 else ''}"
        print(case, flush=True)
        batch, n = 256, 1024
        a = torch.randn(batch, n, n, device="cuda")
        b = torch.randn(batch, n, n, device="cuda")
        bias = torch.randn(n, device="cuda")
        ca, cb, cbias = cp.asarray(a), cp.asarray(b), cp.asarray(bias)
        flops = 2.0 * batch * n ** 3
        opts = {"compute_type": la.MatmulComputeType.COMPUTE_32F_FAST_TF32} if tf32 else None
        mm = la.Matmul(a, b, options=opts)
        mm.plan(epilog=la.MatmulEpilog.RELU_BIAS, epilog_inputs={"bias": bias})
        layout = "row" if mm.execute().stride(-1) == 1 else "col"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        bias_col = bias[:, None]
        fns = {"cumath Matmul.execute": mm.execute,
               "torch relu(baddbmm)": lambda: torch.relu(torch.baddbmm(bias_col, a, b))}
        if not tf32:
            fns["cupy relu(a@b + bias)"] = lambda: cp.maximum(ca @ cb + cbias[:, None], 0)
        t = time_interleaved(fns, sync=sync, number=5, rounds=rounds)
        for k, v in t.items():
            record(case, k, v, flops, result_layout=layout if k.startswith("cumath") else None)
        timed = mm.autotune(iterations=5)
        t = time_interleaved({"cumath Matmul.execute (autotuned)": mm.execute}, sync=sync, number=5, rounds=rounds)
        record(case, "cumath Matmul.execute (autotuned)", t["cumath Matmul.execute (autotuned)"], flops,
               algorithms_timed=len(timed))
        ratio(case, "torch relu(baddbmm)", "cumath Matmul.execute", "torch / cumath")
        torch.backends.cuda.matmul.allow_tf32 = False
        mm.free()
        del a, b, ca, cb
        torch.cuda.empty_cache()
        cp.get_default_memory_pool().free_all_blocks()

    # ----------------------------------------------------------------------------------- bf16 8192^3
    case = "bf16 8192^3"
    print(case, flush=True)
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    flops = 2.0 * n ** 3
    mm = la.Matmul(a, b)
    mm.plan()
    fns = {"cumath Matmul.execute": mm.execute, "torch.mm": lambda: torch.mm(a, b)}
    t = time_interleaved(fns, sync=sync, number=10, rounds=rounds)
    for k, v in t.items():
        record(case, k, v, flops)
    mm.autotune(iterations=5)
    t = time_interleaved({"cumath Matmul.execute (autotuned)": mm.execute, "torch.mm": lambda: torch.mm(a, b)},
                         sync=sync, number=10, rounds=rounds)
    for k, v in t.items():
        record(case, k + (" (again)" if k == "torch.mm" else ""), v, flops)
    ratio(case, "torch.mm", "cumath Matmul.execute", "cumath / torch speed (target >= 0.98)")
    ratio(case, "torch.mm (again)", "cumath Matmul.execute (autotuned)", "cumath autotuned / torch speed")
    mm.free()
    del a, b
    torch.cuda.empty_cache()

    # ----------------------------------------------------------------------------------- tall-skinny
    case = "tall-skinny 1.5 A@B + 0.5 C, A 1e7x10, B 10x40, float32"
    print(case, flush=True)
    m = 10_000_000
    a = torch.randn(m, 10, device="cuda")
    b = torch.randn(10, 40, device="cuda")
    c = torch.randn(m, 40, device="cuda")
    ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
    mm = la.Matmul(a, b, c, alpha=1.5, beta=0.5)
    mm.plan()
    kernel = mm._v.kernel is not None
    d = mm.execute()
    err = float(((d - (1.5 * a @ b + 0.5 * c)).norm() / d.norm()).item())
    fns = {"cumath Matmul.execute": mm.execute,
           "torch addmm": lambda: torch.addmm(c, a, b, beta=0.5, alpha=1.5),
           "cupy 1.5*a@b + 0.5*c": lambda: 1.5 * (ca @ cb) + 0.5 * cc}
    t = time_interleaved(fns, sync=sync, number=10, rounds=rounds)
    for k, v in t.items():
        record(case, k, v, memory_bound_kernel=kernel if k.startswith("cumath") else None,
               rel_error=err if k.startswith("cumath") else None)
    mm2 = la.Matmul(a, b, c, alpha=1.5, beta=0.5)
    mm2.plan(algorithms=mm.algorithms)  # user algorithms: cuBLASLt only
    t = time_interleaved({"cumath cuBLASLt only": mm2.execute}, sync=sync, number=10, rounds=rounds)
    record(case, "cumath cuBLASLt only", t["cumath cuBLASLt only"])
    rows = {r["impl"]: r for r in ROWS if r["case"] == case and "impl" in r}
    floor_ratio = rows["cumath Matmul.execute"]["median_us"] / FLOOR_TALL_SKINNY_US
    ROWS.append({"case": case, "ratio": "cumath / floor 837 us (target <= 1.15)", "value": floor_ratio})
    print(f"  ratio cumath / floor: {floor_ratio:.3f} (memory-bound kernel: {kernel}, rel. error {err:.1e})")
    mm.free()
    mm2.free()

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": ROWS, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cupy": cp.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
