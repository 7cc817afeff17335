"""FFT callbacks benchmark: a Gaussian image filter with the filter as a callback, against unfused peers.

The filter of an H x W float32 image: R2C, multiply by exp(-2 pi^2 sigma^2 (fx^2 + fy^2)) / (H W), C2R.
The callback runs as cumath's ``FFTOptions(callback_fusion=...)`` says: 'fused' into cuFFT's kernels,
'separate' (plain cuFFT, then cumath's elementwise pass with the same compiled callback), or 'auto'.
- cumath stateful (R2C epilog): an R2C FFT object with the filter as epilog, then a C2R FFT object allowed
  to overwrite its input (``overwrite_input=True``), for auto / separate / fused; also the filter as a C2R
  prolog instead (separate / fused);
- cumath stateless, repeated: ``irfft(rfft(img, epilog=ir), options=...)`` (plans from the cache), auto and
  fused;
- cumath unfused: ``irfft(rfft(img) * H)`` (the multiply by CuPy), C2R with ``overwrite_input``;
- CuPy ``irfft2(rfft2(img) * H)`` and PyTorch ``irfft2(rfft2(img) * H)``.
Also: the first compile of the epilog in a fresh process, a second process loading it from the disk cache,
planning times, and cuFFT's callback kernels against its plain ones and against separate passes (identity
callbacks on R2C, C2R and C2C of several shapes: what the 'auto' rule is set from). Prints medians
(interleaved rounds) and ratios; --json writes everything (after each section).

    python benchmarks/fft_callbacks.py [--size 8192] [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import cumath.fft as F  # noqa: E402
from cumath._core.timing import time_interleaved  # noqa: E402

ROWS: list[dict] = []


def gaussian_epilog(h: int, w: int, sigma: float):
    """The filter as an R2C epilog for an h x w image (the result has w//2+1 columns, C order): the offset
    gives (row, column); frequencies as numpy.fft.fftfreq/rfftfreq; scaled by 1/(h*w) so that the
    unnormalized C2R that follows returns the filtered image. float32 arithmetic."""
    wc = np.uint64(w // 2 + 1)
    half = np.uint64((h + 1) // 2)
    inv_h, inv_w = np.float32(1.0 / h), np.float32(1.0 / w)
    coef = np.float32(-2.0 * math.pi ** 2 * sigma ** 2)
    scale = np.float32(1.0 / (h * w))
    one = np.float32(1.0)

    def gaussian(data_out, offset, value, user_info, unused):
        row = offset // wc
        col = offset - row * wc
        fy = np.float32(row) * inv_h
        if row >= half:
            fy -= one
        fx = np.float32(col) * inv_w
        data_out[offset] = value * (scale * math.exp(coef * (fx * fx + fy * fy)))

    return gaussian


def gaussian_prolog(h: int, w: int, sigma: float):
    """The same filter as a C2R prolog (applied as cuFFT loads the spectrum)."""
    wc = np.uint64(w // 2 + 1)
    half = np.uint64((h + 1) // 2)
    inv_h, inv_w = np.float32(1.0 / h), np.float32(1.0 / w)
    coef = np.float32(-2.0 * math.pi ** 2 * sigma ** 2)
    scale = np.float32(1.0 / (h * w))
    one = np.float32(1.0)

    def gaussian_load(data_in, offset, user_info, unused):
        row = offset // wc
        col = offset - row * wc
        fy = np.float32(row) * inv_h
        if row >= half:
            fy -= one
        fx = np.float32(col) * inv_w
        return data_in[offset] * (scale * math.exp(coef * (fx * fx + fy * fy)))

    return gaussian_load


def identity_store(data_out, offset, value, user_info, unused):
    data_out[offset] = value


def identity_load(data_in, offset, user_info, unused):
    return data_in[offset]


def gaussian_array(h, w, sigma, scaled):
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    g = np.exp(-2 * np.pi ** 2 * sigma ** 2 * (fx ** 2 + fy ** 2))
    return (g / (h * w) if scaled else g).astype(np.float32)


def record(group, impl, timing, **extra):
    row = {"group": group, "impl": impl, "median_us": timing.median * 1e6, "best_us": timing.best * 1e6,
           "spread": timing.spread, **extra}
    ROWS.append(row)
    print(f"  {impl:44s} {row['median_us']:10.1f} us   (spread {100 * timing.spread:4.1f}%)", flush=True)
    return row


# ------------------------------------------------------------------------------------- fresh processes

COMPILE_SCRIPT = r"""
import sys, time, json
sys.path.insert(0, {here!r}); sys.path.insert(0, {root!r})
import cupy as cp
cp.zeros(1)  # CUDA initialised, as in any process that uses the GPU
t0 = time.perf_counter()
import cumath.fft as F
import fft_callbacks as B
t1 = time.perf_counter()
fn = B.gaussian_epilog({h}, {w}, {sigma})
t2 = time.perf_counter()
ir = F.compile_epilog(fn, "complex64", None)
t3 = time.perf_counter()
from cumath.fft import _compile as C
C.clear_memory_cache()
t4 = time.perf_counter()
ir2 = F.compile_epilog(fn, "complex64", None, compute_capability={cc!r})
t5 = time.perf_counter()
numba = any(m.split(".")[0] in ("numba", "numba_cuda") for m in sys.modules)
print(json.dumps({{"import_s": t1 - t0, "compile_s": t3 - t2, "again_with_cc_s": t5 - t4, "numba_imported": numba,
                  "bytes": len(ir), "symbol": ir.symbol}}))
"""


def fresh_process_compiles(h, w, sigma, cc):
    """Compile in a fresh process with an empty cache folder, then load in a second fresh process."""
    out = {}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, CUMATH_CACHE_DIR=d)
        code = COMPILE_SCRIPT.format(here=HERE, root=os.path.dirname(HERE), h=h, w=w, sigma=sigma, cc=cc)
        for label in ("first process (compiles)", "second process (disk cache)"):
            res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
            if res.returncode:
                print(res.stdout, res.stderr)
                raise RuntimeError(f"{label} failed")
            out[label] = json.loads(res.stdout.strip().splitlines()[-1])
            r = out[label]
            print(f"  {label:30s} import cumath.fft {1e3 * r['import_s']:7.1f} ms, compile_epilog "
                  f"{1e3 * r['compile_s']:8.1f} ms (numba imported: {r['numba_imported']}), {r['bytes']} bytes")
    return out


# -------------------------------------------------------------------------------------------- main run

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--sigma", type=float, default=4.0)
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-fresh", action="store_true", help="skip the fresh-process compile timings")
    args = ap.parse_args()

    import cupy as cp

    try:
        import torch
    except ImportError:
        torch = None
    h = w = args.size
    sigma = args.sigma
    dev = cp.cuda.Device()
    cc = "".join(map(str, dev.compute_capability))
    sync = dev.synchronize
    print(f"== FFT callbacks: Gaussian filter of a {h} x {w} float32 image, GPU sm_{cc} ==")
    result = {"size": [h, w], "sigma": sigma, "date": time.strftime("%Y-%m-%d %H:%M:%S")}

    if not args.no_fresh:
        print("\n-- compiling the epilog (fresh processes)")
        result["fresh_processes"] = fresh_process_compiles(h, w, sigma, cc)

    print("\n-- this process")
    t0 = time.perf_counter()
    ir = F.compile_epilog(gaussian_epilog(h, w, sigma), "complex64", None)
    result["compile_in_process_s"] = time.perf_counter() - t0
    print(f"  compile_epilog (numba import included, or the disk cache): {result['compile_in_process_s']:.3f} s")

    rng = cp.random.default_rng(1)
    img = rng.standard_normal((h, w), dtype=cp.float32)
    H_scaled = cp.asarray(gaussian_array(h, w, sigma, True))
    H_peer = cp.asarray(gaussian_array(h, w, sigma, False))
    over = F.FFTOptions(overwrite_input=True)
    over_fused = F.FFTOptions(overwrite_input=True, callback_fusion="fused")
    fused_opt = F.FFTOptions(callback_fusion="fused")

    from cumath.config import plan_cache

    def planned(x, options, axes=None, **callbacks):
        """A planned FFT object and its planning seconds."""
        t = time.perf_counter()
        f = F.FFT(x, axes=axes, options=options)
        f.plan(**callbacks)
        return f, time.perf_counter() - t

    def c2r_opts(fusion):
        return F.FFTOptions(fft_type="C2R", overwrite_input=True, callback_fusion=fusion)

    ir_load = F.compile_prolog(gaussian_prolog(h, w, sigma), "complex64", None)
    plans, objs = {}, {}
    for fusion in ("auto", "separate", "fused"):
        objs[f"r2c epilog {fusion}"], plans[f"R2C with the epilog ({fusion})"] = planned(
            img, {"fft_type": "R2C", "callback_fusion": fusion}, epilog=ir)
    objs["r2c plain"], plans["R2C plain"] = planned(img, {"fft_type": "R2C"})
    spec = objs["r2c plain"].execute()
    objs["c2r plain"], plans["C2R plain (overwrite_input)"] = planned(spec, c2r_opts("auto"))
    for fusion in ("separate", "fused"):
        objs[f"c2r prolog {fusion}"], plans[f"C2R with the prolog ({fusion})"] = planned(
            spec, c2r_opts(fusion), prolog=ir_load)
    sync()
    result["plan_seconds"] = plans
    print("  planning: " + ", ".join(f"{k} {v:.3f} s" for k, v in plans.items()))

    def chain(first, second):
        def run():
            second.reset_operand_unchecked(first.execute())
            return second.execute()
        return run

    c2r = objs["c2r plain"]
    fns = {
        "cumath stateful auto (R2C epilog)": chain(objs["r2c epilog auto"], c2r),
        "cumath stateful separate (R2C epilog)": chain(objs["r2c epilog separate"], c2r),
        "cumath stateful fused (R2C epilog)": chain(objs["r2c epilog fused"], c2r),
        "cumath stateful separate (C2R prolog)": chain(objs["r2c plain"], objs["c2r prolog separate"]),
        "cumath stateful fused (C2R prolog)": chain(objs["r2c plain"], objs["c2r prolog fused"]),
        "cumath stateless auto (R2C epilog)": lambda: F.irfft(F.rfft(img, epilog=ir), options=over),
        "cumath stateless fused (R2C epilog)": lambda: F.irfft(F.rfft(img, epilog=ir, options=fused_opt),
                                                               options=over_fused),
        "cumath unfused (C2R overwrite_input)": lambda: F.irfft(F.rfft(img) * H_scaled, options=over),
        "CuPy unfused": lambda: cp.fft.irfft2(cp.fft.rfft2(img) * H_peer),
    }
    if torch is not None and torch.cuda.is_available():
        img_t = torch.as_tensor(img, device="cuda")
        H_t = torch.as_tensor(H_peer, device="cuda")
        fns["PyTorch unfused"] = lambda: torch.fft.irfft2(torch.fft.rfft2(img_t) * H_t, s=(h, w))

    ref = fns["CuPy unfused"]()
    errors = {}
    for name, fn in fns.items():
        out = cp.asarray(fn())
        errors[name] = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
    result["relative_errors_vs_cupy"] = errors
    print("  relative error against CuPy's result: " + ", ".join(f"{k}: {v:.1e}" for k, v in errors.items()))

    print("\n-- Gaussian filter per call (interleaved rounds)")
    number, rounds = (5, 5) if args.quick else (10, 12)
    timings = time_interleaved(fns, sync=sync, number=number, rounds=rounds)
    by = {name: record("gaussian", name, t) for name, t in timings.items()}
    result["plan_cache"] = plan_cache.stats()
    peers = [by[k]["median_us"] for k in ("CuPy unfused", "PyTorch unfused") if k in by]
    best_peer = min(peers)
    stateful = by["cumath stateful auto (R2C epilog)"]["median_us"]
    ratios = {f"{k} / faster unfused peer": v["median_us"] / best_peer for k, v in by.items()}
    ratios["stateful auto / faster unfused peer (target <= 0.85)"] = stateful / best_peer
    ratios["stateless auto, repeated / stateful auto (target <= 1.05)"] = (
        by["cumath stateless auto (R2C epilog)"]["median_us"] / stateful)
    ratios["stateless fused / stateful fused (record)"] = (
        by["cumath stateless fused (R2C epilog)"]["median_us"] / by["cumath stateful fused (R2C epilog)"]["median_us"])
    if "fresh_processes" in result:
        ratios["disk-cache load in a second process, ms (target < 50)"] = (
            1e3 * result["fresh_processes"]["second process (disk cache)"]["compile_s"])
        ratios["first compile in a fresh process, s"] = (
            result["fresh_processes"]["first process (compiles)"]["compile_s"])
    result["ratios"] = ratios
    print("\n-- ratios (target: stateful auto <= 0.85 x the faster unfused peer)")
    for k, v in ratios.items():
        print(f"  {k:75s} {v:8.3f}")
    result["rows"] = ROWS
    dump(args.json, result)
    for f in objs.values():
        f.free()
    spec = ref = objs = fns = None
    plan_cache.clear()
    cp.get_default_memory_pool().free_all_blocks()
    callback_kernels(args, result, rng, sync, number, rounds)


def callback_kernels(args, result, rng, sync, number, rounds):
    """cuFFT's kernels with identity callbacks, fused and as separate passes, against its plain ones."""
    import cupy as cp

    from cumath.fft._separate import choose_fusion

    print("\n-- identity callbacks: fused into cuFFT vs separate passes vs plain cuFFT (stateful, interleaved)")
    id_store = F.compile_epilog(identity_store, "complex64", None)
    id_load = F.compile_prolog(identity_load, "complex64", None)
    id_load_r = F.compile_prolog(identity_load, "float32", None)
    h = args.size
    cases = [("R2C 2-D", (h, h), None), ("R2C 2-D", (4096, 4096), None), ("R2C 2-D", (2048, 2048), None),
             ("R2C 1-D batched", (16, 1 << 20), (-1,)), ("R2C 1-D batched", (4096, 1000), (-1,)),
             ("C2C 2-D", (4096, 4096), None), ("C2C 1-D batched", (64, 1 << 16), (-1,)),
             ("C2C 1-D batched", (16, 1 << 18), (-1,)), ("C2C 1-D batched", (4, 1 << 20), (-1,)),
             ("R2C 1-D batched", (64, 1 << 18), (-1,))]
    if args.quick:
        cases = cases[:2]
    diag = {}
    result["callback_kernels"] = diag

    def planned(x, options, axes, **cb):
        f = F.FFT(x, axes=axes, options=options)
        f.plan(**cb)
        return f

    for kind, shape, axes in cases:
        label = f"{kind} {'x'.join(map(str, shape))}"
        t_case = time.perf_counter()
        group = {}
        if kind.startswith("C2C"):
            x = rng.standard_normal(shape, dtype=cp.float32) + 1j * rng.standard_normal(shape, dtype=cp.float32)
            group["C2C plain"] = planned(x, {}, axes)
            for fusion in ("fused", "separate"):
                o = {"callback_fusion": fusion}
                group[f"C2C epilog {fusion}"] = planned(x, o, axes, epilog=id_store)
                group[f"C2C prolog {fusion}"] = planned(x, o, axes, prolog=id_load)
            spare = x.copy()
            src = x
        else:
            x = rng.standard_normal(shape, dtype=cp.float32)
            group["R2C plain"] = planned(x, {"fft_type": "R2C"}, axes)
            for fusion in ("fused", "separate"):
                o = {"fft_type": "R2C", "callback_fusion": fusion}
                group[f"R2C epilog {fusion}"] = planned(x, o, axes, epilog=id_store)
                group[f"R2C prolog {fusion}"] = planned(x, o, axes, prolog=id_load_r)
            s = group["R2C plain"].execute()
            group["C2R plain"] = planned(s, {"fft_type": "C2R", "overwrite_input": True}, axes)
            for fusion in ("fused", "separate"):
                group[f"C2R prolog {fusion}"] = planned(
                    s, {"fft_type": "C2R", "overwrite_input": True, "callback_fusion": fusion}, axes, prolog=id_load)
            for f in group.values():
                if f._geom.fft_type == "C2R":
                    f.reset_operand_unchecked(s)
            spare = s.copy()
            src = s
        t_plan = time.perf_counter() - t_case
        fns = {k: (lambda f=f: f.execute()) for k, f in group.items()}
        fns["one pass (a copy of the complex side)"] = lambda: cp.copyto(spare, src)
        tm = time_interleaved(fns, sync=sync, number=max(2, number // 2), rounds=max(3, rounds // 2))
        rows = {k: record(label, k, v) for k, v in tm.items()}
        entry = {"plan_s": t_plan}
        for k, r in rows.items():
            parts = k.split(" ")
            if len(parts) == 3 and parts[2] in ("fused", "separate"):
                typ, cbkind, fusion = parts
                plain = rows[f"{typ} plain"]["median_us"]
                entry[f"{typ} {cbkind} {fusion} / plain"] = r["median_us"] / plain
        for typ in ("C2C", "R2C", "C2R"):
            for cbkind in ("prolog", "epilog"):
                a, b = f"{typ} {cbkind} fused", f"{typ} {cbkind} separate"
                if a in rows and b in rows:
                    g = group[a]._geom
                    auto = choose_fusion(g, cbkind)[0]
                    best = "fused" if rows[a]["median_us"] <= rows[b]["median_us"] else "separate"
                    entry[f"{typ} {cbkind}: auto picks"] = auto
                    entry[f"{typ} {cbkind}: faster"] = best
        diag[label] = entry
        print(f"  {label}: planned in {t_plan:.2f} s; " + ", ".join(
            f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}" for k, v in entry.items() if k != "plan_s"),
            flush=True)
        for f in group.values():
            f.free()
        x = s = spare = src = group = fns = None
        cp.get_default_memory_pool().free_all_blocks()
        result["rows"] = ROWS
        dump(args.json, result)


def dump(path, result):
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
