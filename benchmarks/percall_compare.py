"""Per-call cost of this checkout against another one (before/after a change), in child processes A B B A B A.

    python benchmarks/percall_compare.py BEFORE_ROOT AFTER_ROOT [1 to add the GPU cases] [JSON_PATH]

(the same root twice gives six runs of one tree, for the same-process ratios alone)

Each child imports cumath from one root and times the per-call cases (CPU FFT 16 and 2048 points, CPU 64^3 matmul;
on the GPU: FFT 2048 with CuPy and PyTorch operands, advanced and generic 64^3 matmuls, NumPy operands staged,
and torch peers). Processes differ in speed from one another, so compare ratios to the peer measured in the same
process (cumath / torch in each run) as well as the medians: the last table prints those ratios against the
per-call targets (pyFFTW with a new aligned result of its own each call, as a user would get one).
"""
import json
import statistics
import subprocess
import sys

CHILD = r'''
import json, sys, time, statistics
root = sys.argv[1]; gpu = sys.argv[2] == "1"
sys.path.insert(0, root)
import numpy as np
import cumath
out = {"cumath": cumath.__file__}
def per_call(fn, n=2000, samples=15, sync=None):
    for _ in range(200): fn()
    if sync: sync()
    vals = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(n): fn()
        if sync: sync()
        vals.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(vals)
try:  # before cumath first uses MKL's FFTW interface (benchmarks/NOTES.md, "MKL symbols")
    import pyfftw
except ImportError:
    pyfftw = None
rng = np.random.default_rng(1)
x16 = rng.standard_normal(16) + 1j * rng.standard_normal(16)
x2k = rng.standard_normal(2048) + 1j * rng.standard_normal(2048)
for xw in (x16, x2k):  # measured wisdom in the process, as pyFFTW's FFTW_MEASURE plans below have
    with cumath.fft.FFT(xw, options={"planning_effort": "measure"}) as f0:
        f0.plan()
out["cpu_fft16_stateless"] = per_call(lambda: cumath.fft.fft(x16))
f = cumath.fft.FFT(x16); f.plan()
out["cpu_fft16_execute"] = per_call(f.execute)
out["cpu_fft2048_stateless"] = per_call(lambda: cumath.fft.fft(x2k))
f2 = cumath.fft.FFT(x2k); f2.plan()
out["cpu_fft2048_execute"] = per_call(f2.execute)
if pyfftw is not None:
    pa = pyfftw.empty_aligned(2048, dtype=np.complex128); pb = pyfftw.empty_aligned(2048, dtype=np.complex128)
    pobj = pyfftw.FFTW(pa, pb, flags=("FFTW_MEASURE",), threads=1); pa[...] = x2k
    out["cpu_fft2048_pyfftw_execute"] = per_call(pobj.execute)
    out["cpu_fft2048_pyfftw_new_result"] = per_call(
        lambda: (pobj.execute(), pyfftw.empty_aligned(2048, dtype=np.complex128)))
a = rng.standard_normal((64, 64)); b = rng.standard_normal((64, 64))
out["cpu_matmul64_stateless"] = per_call(lambda: cumath.linalg.matmul(a, b), n=1000)
m = cumath.linalg.Matmul(a, b); m.plan()
out["cpu_matmul64_execute"] = per_call(m.execute, n=1000)
if gpu:
    import cupy as cp, torch
    import cumath.linalg.advanced as la
    sync = torch.cuda.synchronize
    xc = cp.asarray(x2k); xt = torch.as_tensor(x2k, device="cuda")
    out["gpu_fft2048_stateless_cupy"] = per_call(lambda: cumath.fft.fft(xc), sync=sync)
    out["gpu_fft2048_stateless_torch"] = per_call(lambda: cumath.fft.fft(xt), sync=sync)
    g = cumath.fft.FFT(xt); g.plan()
    out["gpu_fft2048_execute_torch"] = per_call(g.execute, sync=sync)
    out["gpu_fft2048_torch.fft"] = per_call(lambda: torch.fft.fft(xt), sync=sync)
    at = torch.randn(64, 64, device="cuda"); bt = torch.randn(64, 64, device="cuda")
    out["gpu_advmm64_stateless"] = per_call(lambda: la.matmul(at, bt), sync=sync)
    mm = la.Matmul(at, bt); mm.plan()
    out["gpu_advmm64_execute"] = per_call(mm.execute, sync=sync)
    out["gpu_genmm64_stateless"] = per_call(lambda: cumath.linalg.matmul(at, bt), sync=sync)
    gm = cumath.linalg.Matmul(at, bt); gm.plan()
    out["gpu_genmm64_execute"] = per_call(gm.execute, sync=sync)
    out["gpu_torch.mm64"] = per_call(lambda: torch.mm(at, bt), sync=sync)
    an = np.random.rand(64, 64).astype(np.float32); bn = np.random.rand(64, 64).astype(np.float32)
    out["gpu_advmm64_numpy_stateless"] = per_call(lambda: la.matmul(an, bn), n=300, samples=9)
    mn = la.Matmul(an, bn); mn.plan()
    out["gpu_advmm64_numpy_execute"] = per_call(mn.execute, n=300, samples=9)
print(json.dumps(out))
'''

def main():
    roots = {"before": sys.argv[1], "after": sys.argv[2]}
    gpu = sys.argv[3] if len(sys.argv) > 3 else "0"
    order = ["before", "after", "after", "before", "before", "after"]
    runs = {"before": [], "after": []}
    for name in order:
        r = subprocess.run([sys.executable, "-c", CHILD, roots[name], gpu], capture_output=True, text=True)
        if r.returncode:
            print(name, "failed:", r.stderr[-3000:]); continue
        runs[name].append(json.loads(r.stdout.strip().splitlines()[-1]))
    keys = [k for k in (runs["after"] or runs["before"])[0] if k != "cumath"]
    table = {}
    print(f"{'case':34s} {'before us':>12s} {'after us':>12s} {'after/before':>13s}   (runs: min-max)")
    for k in keys:
        b = [r[k] for r in runs["before"] if k in r]; a = [r[k] for r in runs["after"] if k in r]
        mb, ma = (statistics.median(b) if b else float("nan")), (statistics.median(a) if a else float("nan"))
        table[k] = {"before": b, "after": a, "ratio": ma / mb if b and a else None}
        span = lambda v: f"{min(v):.2f}-{max(v):.2f}" if v else "-"
        print(f"{k:34s} {mb:12.2f} {ma:12.2f} {ma / mb:13.3f}   ({span(b)} | {span(a)})")
    print(f"\nsame-process ratios (median over the runs; target in brackets):")
    ratios = {}
    for label, num, den, target in TARGETS:
        for name in ("before", "after"):
            vals = [r[num] / r[den] for r in runs[name] if num in r and den in r]
            if vals:
                ratios.setdefault(label, {})[name] = vals
        got = ratios.get(label)
        if got:
            cells = "  ".join(f"{n} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})" for n, v in got.items())
            print(f"  {label:52s} [<= {target}]  {cells}")
    if len(sys.argv) > 4:
        json.dump({"runs": runs, "table": table, "ratios": ratios}, open(sys.argv[4], "w"), indent=1)


TARGETS = [
    ("CPU FFT 16 stateless / execute", "cpu_fft16_stateless", "cpu_fft16_execute", 2.0),
    ("CPU FFT 2048 stateless / pyFFTW execute + new result", "cpu_fft2048_stateless", "cpu_fft2048_pyfftw_new_result",
     1.25),
    ("CPU FFT 2048 execute / pyFFTW execute + new result", "cpu_fft2048_execute", "cpu_fft2048_pyfftw_new_result",
     1.05),
    ("CPU FFT 2048 execute / pyFFTW execute (no result)", "cpu_fft2048_execute", "cpu_fft2048_pyfftw_execute", "-"),
    ("GPU FFT 2048 stateless (torch) / torch.fft.fft", "gpu_fft2048_stateless_torch", "gpu_fft2048_torch.fft", 1.0),
    ("GPU FFT 2048 stateless (cupy) / torch.fft.fft", "gpu_fft2048_stateless_cupy", "gpu_fft2048_torch.fft", 1.0),
    ("GPU FFT 2048 execute (torch) / torch.fft.fft", "gpu_fft2048_execute_torch", "gpu_fft2048_torch.fft", 0.8),
    ("GPU advanced matmul 64 stateless / torch.mm", "gpu_advmm64_stateless", "gpu_torch.mm64", 1.0),
    ("GPU advanced matmul 64 execute / torch.mm", "gpu_advmm64_execute", "gpu_torch.mm64", 0.8),
]

main()
