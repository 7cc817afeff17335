"""GPU matmul benchmark: cumath.linalg.advanced against PyTorch and CuPy, in one process, on the same data.

Cases (issue 3): per-call 64^3 float32 (stateless matmul and Matmul.execute against torch.mm and CuPy's @),
batched RELU_BIAS 256 x 1024^3 float32 (plain and COMPUTE_32F_FAST_TF32), bf16 8192^3, and the tall-skinny
D = 1.5 A@B + 0.5 C (A 10,000,000 x 10, B 10 x 40, C 10,000,000 x 40, float32; floor 837 us at 4.2 TB/s).
Contenders run interleaved (``time_interleaved``); medians, TFLOP/s and ratios are printed; --json writes all.

    python benchmarks/matmul_gpu.py --json $OUT/matmul_gpu.json [--quick] [--cases per-call,relu-bias-tf32]

Cases: per-call, relu-bias, relu-bias-tf32, bf16, tall-skinny (all by default).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
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
    # the same call through a ctypes prototype without argtypes, every argument a ctypes object
    untyped = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(raw, ctypes.c_void_p).value)
    cargs = [ctypes.c_void_p(x) if isinstance(x, int) else x for x in args]
    cargs[14] = ctypes.c_size_t(args[14])
    proto = torch.empty((64, 64), device="cuda")
    fns = {"bare cublasLtMatmul (planned algo)": lambda: raw(*args),
           "bare cublasLtMatmul (algo NULL)": lambda: raw(*null),
           "bare cublasLtMatmul (untyped ctypes)": lambda: untyped(*cargs),
           "torch.empty((64, 64))": lambda: torch.empty((64, 64), device="cuda"),
           "torch.empty_like(t)": lambda: torch.empty_like(proto),
           "t.new_empty((64, 64))": lambda: proto.new_empty((64, 64)),
           "torch.mm": lambda: torch.mm(a, b)}
    legacy = _legacy_sgemm(a, b, torch)
    if legacy is not None:
        fns["bare cublasSgemm_v2_64 (ctypes)"] = legacy
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


def _legacy_sgemm(a, b, torch):
    """cuBLAS's legacy cublasSgemm_v2_64 on the same 64^3 problem (row-major: D^T = B^T A^T), checked once
    against torch.mm; None where it cannot be run."""
    try:
        from cumath._bindings import cublas

        h = cublas.cublasCreate_v2()
        cublas.cublasSetStream_v2(h, torch.cuda.current_stream().cuda_stream)
        fn = cublas.raw("cublasSgemm_v2_64")
    except Exception as exc:  # noqa: BLE001 - a diagnostic only
        print(f"  (no legacy cuBLAS: {exc})")
        return None
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    d = torch.empty((64, 64), device="cuda")
    m, n, k = a.shape[0], b.shape[1], a.shape[1]
    args = [h, 0, 0, n, m, k, ctypes.addressof(one), b.data_ptr(), n, a.data_ptr(), k, ctypes.addressof(zero),
            d.data_ptr(), n]
    status = fn(*args)
    torch.cuda.synchronize()
    err = float(((d - torch.mm(a, b)).norm() / d.norm()).item())
    print(f"  legacy cublasSgemm_v2_64: status {status}, rel. difference from torch.mm {err:.1e}")
    keep = (one, zero, d)

    def call(keep=keep):
        return fn(*args)

    return call


def reference_counts(torch):
    """What the recycling rule reads on this PyTorch (CUDA tensors): the snapshot fresh, with a view, with a
    storage object held, with a DLPack capsule, with autograd holding the tensor, and again after."""
    from cumath.linalg.advanced._executor import recycling_rule

    rule = recycling_rule("torch")
    row = {"case": "reference counts (torch)", "torch": torch.__version__, "available": rule is not None}
    if rule is not None:
        e = [torch.empty((64, 64), device="cuda"), 0, 0, None]
        e[3] = rule[0](e)
        row["fresh"] = [str(x) for x in e[3]]
        for name, make in (("view", lambda t: t[1:]), ("storage", lambda t: t.untyped_storage()),
                           ("dlpack", lambda t: torch.utils.dlpack.to_dlpack(t)),
                           ("autograd", lambda t: t * torch.ones(64, 64, device="cuda", requires_grad=True))):
            held = [make(e[0])]
            row[name] = [str(x) for x in rule[0](e)] + [f"free={rule[1](e)}"]
            held.clear()
        row["after"] = [str(x) for x in rule[0](e)] + [f"free={rule[1](e)}"]
    ROWS.append(row)
    print(f"  {row}", flush=True)


def gpu_state(tag):
    """SM clock, power and temperature from nvidia-smi (for the spread of the TF32 case)."""
    try:
        query = "--query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu"
        out = subprocess.run(["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except Exception as exc:  # noqa: BLE001
        out = f"unavailable: {exc}"
    ROWS.append({"case": "gpu state", "when": tag, "nvidia-smi": out})
    print(f"  gpu state ({tag}): {out}", flush=True)


def algorithm_rows(case, name, mm):
    algs = mm.algorithms
    ROWS.append({"case": case, "plan": name, "algorithms": [
        {"id": x.algorithm_id, "workspace": x.workspace_size, "time_ms": x.measured_time} for x in algs]})
    print(f"  {name}: algorithms {[(x.algorithm_id, x.workspace_size) for x in algs]}", flush=True)


CASES = ("per-call", "relu-bias", "relu-bias-tf32", "bf16", "tall-skinny")


def main():
    import cupy as cp
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--quick", action="store_true", help="fewer rounds")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 11, --quick 5)")
    args = p.parse_args()
    cases = set(args.cases.split(","))
    if cases - set(CASES):
        p.error(f"unknown cases {sorted(cases - set(CASES))}; choose from {CASES}")
    rounds = args.rounds or (5 if args.quick else 11)
    torch.manual_seed(0)
    ctx = {"cp": cp, "torch": torch, "rounds": rounds, "sync": torch.cuda.synchronize}

    def dump():
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": ROWS, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "cupy": cp.__version__, "cases": sorted(cases), "rounds": rounds}, f, indent=1)

    for name, fn in (("per-call", case_per_call), ("relu-bias", lambda **k: case_relu_bias(False, **k)),
                     ("relu-bias-tf32", lambda **k: case_relu_bias(True, **k)), ("bf16", case_bf16),
                     ("tall-skinny", case_tall_skinny)):
        if name in cases:
            fn(**ctx)
            dump()  # after each case: a run cut short keeps what it measured


def case_per_call(cp, torch, rounds, sync):
    """Per call, 64^3 float32: the stateless call and Matmul.execute against torch.mm and CuPy; execute with
    the caller keeping each result until the next (``d = mm.execute()``) and without result recycling."""
    from cumath.linalg.advanced import _executor

    case = "per-call 64x64x64 float32"
    print(case, flush=True)
    a = torch.randn(64, 64, device="cuda")
    b = torch.randn(64, 64, device="cuda")
    ca, cb = cp.asarray(a), cp.asarray(b)
    mm = la.Matmul(a, b)
    mm.plan()
    _executor.RECYCLE_RESULTS = False
    mm_plain = la.Matmul(a, b)
    mm_plain.plan()
    _executor.RECYCLE_RESULTS = True
    la.matmul(a, b)
    held = [None]

    def keep():
        held[0] = mm.execute()

    fns = {"torch.mm": lambda: torch.mm(a, b), "cumath matmul (stateless)": lambda: la.matmul(a, b),
           "cumath Matmul.execute": mm.execute, "cupy a @ b": lambda: ca @ cb,
           "cumath Matmul.execute (result kept: d = mm.execute())": keep,
           "cumath Matmul.execute (no recycling)": mm_plain.execute}
    t = time_interleaved(fns, sync=sync, number=2000, rounds=rounds)
    for k, v in t.items():
        record(case, k, v)
    ratio(case, "cumath matmul (stateless)", "torch.mm", "stateless / torch.mm (target <= 1.5)")
    ratio(case, "cumath Matmul.execute", "torch.mm", "execute / torch.mm (target <= 1.0)")
    ratio(case, "cumath Matmul.execute (result kept: d = mm.execute())", "torch.mm", "execute, result kept / torch.mm")
    d = mm.execute()
    err = float(((d - torch.mm(a, b)).norm() / torch.mm(a, b).norm()).item())
    ROWS.append({"case": case, "check": "rel. difference execute vs torch.mm", "value": err})
    print(f"  rel. difference execute vs torch.mm: {err:.1e}", flush=True)
    reference_counts(torch)
    per_call_diagnostics(mm, a, b, torch, rounds)
    mm.free()
    mm_plain.free()


def case_relu_bias(tf32, cp, torch, rounds, sync):
    """Batched RELU_BIAS 256 x 1024^3 float32 (TF32 compute with ``tf32``). With TF32 also: the plan with a
    workspace up to memory_limit (80% of the GPU, as nvmath-python allows) instead of cumath's 32 MiB cap, and
    32 heuristic algorithms autotuned; all interleaved."""
    import cumath.linalg.advanced._planner as planner

    case = f"batched RELU_BIAS 256x1024^3 float32{' TF32' if tf32 else ''}"
    print(case, flush=True)
    batch, n = 256, 1024
    a = torch.randn(batch, n, n, device="cuda")
    b = torch.randn(batch, n, n, device="cuda")
    bias = torch.randn(n, device="cuda")
    flops = 2.0 * batch * n ** 3
    opts = {"compute_type": la.MatmulComputeType.COMPUTE_32F_FAST_TF32} if tf32 else None
    epi = {"epilog": la.MatmulEpilog.RELU_BIAS, "epilog_inputs": {"bias": bias}}
    mm = la.Matmul(a, b, options=opts)
    mm.plan(**epi)
    algorithm_rows(case, "default (workspace <= 32 MiB, 8 algorithms)", mm)
    layout = "row" if mm.execute().stride(-1) == 1 else "col"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    bias_col = bias[:, None]
    fns = {"cumath Matmul.execute": mm.execute,
           "torch relu(baddbmm)": lambda: torch.relu(torch.baddbmm(bias_col, a, b))}
    extra = []
    if not tf32:
        ca, cb, cbias = cp.asarray(a), cp.asarray(b), cp.asarray(bias)
        fns["cupy relu(a@b + bias)"] = lambda: cp.maximum(ca @ cb + cbias[:, None], 0)
    else:
        gpu_state("before TF32")
        cap = planner._WORKSPACE_CAP
        planner._WORKSPACE_CAP = 1 << 62  # the workspace limit is then memory_limit ("80%" of the GPU)
        try:
            mm_ws = la.Matmul(a, b, options=opts)
            mm_ws.plan(**epi)
        finally:
            planner._WORKSPACE_CAP = cap
        algorithm_rows(case, "workspace <= memory_limit (80%), 8 algorithms", mm_ws)
        mm_at = la.Matmul(a, b, options=opts)
        mm_at.plan(preferences={"limit": 32}, **epi)
        mm_at.autotune(iterations=10)
        algorithm_rows(case, "32 algorithms, autotuned (10 iterations)", mm_at)
        mm_at8 = la.Matmul(a, b, options=opts)
        mm_at8.plan(**epi)
        mm_at8.autotune(iterations=10)
        algorithm_rows(case, "8 algorithms, autotuned (10 iterations)", mm_at8)
        fns["cumath workspace <= memory_limit"] = mm_ws.execute
        fns["cumath 32 algorithms autotuned"] = mm_at.execute
        fns["cumath 8 algorithms autotuned"] = mm_at8.execute
        extra = [mm_ws, mm_at, mm_at8]
    t = time_interleaved(fns, sync=sync, number=5, rounds=rounds)
    for k, v in t.items():
        record(case, k, v, flops, result_layout=layout if k.startswith("cumath") else None)
    ratio(case, "torch relu(baddbmm)", "cumath Matmul.execute", "torch / cumath")
    if tf32:
        gpu_state("after TF32")
    torch.backends.cuda.matmul.allow_tf32 = False
    for x in [mm] + extra:
        x.free()
    fns.clear()
    torch.cuda.empty_cache()
    cp.get_default_memory_pool().free_all_blocks()


def case_bf16(cp, torch, rounds, sync):
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
    fns.clear()
    torch.cuda.empty_cache()


def case_tall_skinny(cp, torch, rounds, sync):
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


if __name__ == "__main__":
    main()
