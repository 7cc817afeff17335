"""Probe (issue 3): which formulation cuBLASLt accepts for each epilog with row-major inputs (ORDER_ROW
results for bias epilogs?), whether the results are right, and where the per-call time of a 64^3 matmul goes.

    PYTHONPATH=$PWD python3 benchmarks/device/probe_matmul_layouts.py
"""

from __future__ import annotations

import logging
import time

import torch

import cumath.linalg.advanced as la
from cumath.linalg.advanced import MatmulEpilog as E

logging.basicConfig(level=logging.WARNING)


def main():
    torch.manual_seed(0)
    m, n, k = 96, 80, 64
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for name in ("RELU", "BIAS", "RELU_BIAS", "GELU_BIAS", "RELU_AUX_BIAS", "GELU_AUX", "BGRADA", "BGRADB"):
            for layout in ("row", "col"):
                a = torch.randn(4, m, k, device="cuda", dtype=dtype)
                b = torch.randn(4, k, n, device="cuda", dtype=dtype)
                if layout == "col":
                    a, b = a.transpose(1, 2).contiguous().transpose(1, 2), b.transpose(1, 2).contiguous().transpose(1, 2)
                bias = torch.randn(m, device="cuda", dtype=dtype)
                inputs = {"bias": bias} if "BIAS" in name else None
                try:
                    with la.Matmul(a, b) as mm:
                        mm.plan(epilog=E[name], epilog_inputs=inputs)
                        kind = mm._v.form.kind
                        out = mm.execute()
                    d = out[0] if isinstance(out, tuple) else out
                    x = (a.double() @ b.double())
                    if "BIAS" in name:
                        x = x + bias.double()[:, None]
                    if "RELU" in name:
                        x = torch.relu(x)
                    if "GELU" in name:
                        x = torch.nn.functional.gelu(x, approximate="tanh")
                    err = float((d.double() - x).norm() / x.norm())
                    print(f"{str(dtype):15s} {name:14s} {layout}: formulation {kind}, result "
                          f"{'row' if d.stride(-1) == 1 else 'col'}-major, rel err {err:.1e}", flush=True)
                except Exception as exc:  # noqa: BLE001
                    print(f"{str(dtype):15s} {name:14s} {layout}: {type(exc).__name__}: {exc}", flush=True)
    # per-call breakdown
    a = torch.randn(64, 64, device="cuda")
    b = torch.randn(64, 64, device="cuda")
    mm = la.Matmul(a, b)
    mm.plan()
    v = mm._v
    args = list(v.args)
    d = mm.execute()
    args[10] = args[8] = d.data_ptr()
    from cumath.linalg.advanced._backends.cublaslt import raw_matmul

    raw = raw_matmul()
    fns = {"raw cublasLtMatmul": lambda: raw(*args), "torch.empty": lambda: torch.empty((64, 64), device="cuda"),
           "Matmul.execute": mm.execute, "matmul": lambda: la.matmul(a, b), "torch.mm": lambda: torch.mm(a, b)}
    for name, fn in fns.items():
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5000):
            fn()
        torch.cuda.synchronize()
        print(f"{name:20s} {(time.perf_counter() - t0) / 5000 * 1e6:8.2f} us/call", flush=True)


if __name__ == "__main__":
    main()
