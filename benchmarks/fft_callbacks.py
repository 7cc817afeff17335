"""FFT callbacks benchmark: a Gaussian image filter with the filter fused into cuFFT, against unfused peers.

The filter of an H x W float32 image: R2C, multiply by exp(-2 pi^2 sigma^2 (fx^2 + fy^2)) / (H W), C2R.
- cumath stateful fused (R2C epilog): an R2C FFT object whose epilog applies the filter as cuFFT stores each
  element, then a C2R FFT object allowed to overwrite its input (``overwrite_input=True``); also with
  cuFFT's patient JIT, with the C2R on a copy (the default), and with the filter as a C2R prolog instead;
- cumath stateless fused: ``irfft(rfft(img, epilog=ir), options=...)``, repeated (plans from the cache);
- cumath unfused: ``irfft(rfft(img) * H)`` (the multiply by CuPy), with and without ``overwrite_input``;
- CuPy ``irfft2(rfft2(img) * H)`` and PyTorch ``irfft2(rfft2(img) * H)``.
Also: the first compile of the epilog in a fresh process, a second process loading it from the disk cache,
planning times, and cuFFT's callback kernels against its plain ones (identity callbacks on R2C, C2R and
C2C of several shapes). Prints medians (interleaved rounds) and ratios; --json writes everything.

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
    over_c2r = F.FFTOptions(fft_type="C2R", overwrite_input=True)

    from cumath.config import plan_cache
    from cumath.fft._backends import cufft as cufft_backend

    def planned(x, options, patient=False, axes=None, **callbacks):
        """A planned FFT object (and its planning seconds); ``patient``: cuFFT's patient JIT."""
        cufft_backend.PATIENT_JIT = True if patient else None
        try:
            t = time.perf_counter()
            f = F.FFT(x, axes=axes, options=options)
            f.plan(**callbacks)
            return f, time.perf_counter() - t
        finally:
            cufft_backend.PATIENT_JIT = None

    ir_load = F.compile_prolog(gaussian_prolog(h, w, sigma), "complex64", None)
    plans = {}
    r2c, plans["R2C with the epilog"] = planned(img, {"fft_type": "R2C"}, epilog=ir)
    r2c_p, plans["R2C with the epilog, patient JIT"] = planned(img, {"fft_type": "R2C"}, True, epilog=ir)
    r2c_plain, plans["R2C plain"] = planned(img, {"fft_type": "R2C"})
    spec = r2c.execute()
    c2r, plans["C2R plain (overwrite_input)"] = planned(spec, over_c2r)
    c2r_copy, plans["C2R plain (on a copy)"] = planned(spec, {"fft_type": "C2R"})
    c2r_pro, plans["C2R with the prolog"] = planned(spec, over_c2r, prolog=ir_load)
    c2r_pro_p, plans["C2R with the prolog, patient JIT"] = planned(spec, over_c2r, True, prolog=ir_load)
    sync()
    result["plan_seconds"] = plans
    print("  planning: " + ", ".join(f"{k} {v:.3f} s" for k, v in plans.items()))

    def chain(first, second):
        def run():
            second.reset_operand_unchecked(first.execute())
            return second.execute()
        return run

    fns = {
        "cumath stateful fused (R2C epilog)": chain(r2c, c2r),
        "cumath stateful fused (R2C epilog, patient JIT)": chain(r2c_p, c2r),
        "cumath stateful fused (C2R prolog)": chain(r2c_plain, c2r_pro),
        "cumath stateful fused (C2R prolog, patient JIT)": chain(r2c_plain, c2r_pro_p),
        "cumath stateful fused (R2C epilog, C2R on a copy)": chain(r2c, c2r_copy),
        "cumath stateless fused (R2C epilog)": lambda: F.irfft(F.rfft(img, epilog=ir), options=over),
        "cumath unfused": lambda: F.irfft(F.rfft(img) * H_scaled),
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
    number, rounds = (5, 5) if args.quick else (20, 15)
    timings = time_interleaved(fns, sync=sync, number=number, rounds=rounds)
    by = {name: record("gaussian", name, t) for name, t in timings.items()}
    result["plan_cache"] = plan_cache.stats()
    peers = [by[k]["median_us"] for k in ("CuPy unfused", "PyTorch unfused") if k in by]
    best_peer = min(peers)
    stateful = by["cumath stateful fused (R2C epilog)"]["median_us"]
    ratios = {f"{k} / faster unfused peer": v["median_us"] / best_peer for k, v in by.items()}
    ratios["stateless fused / stateful fused (target <= 1.05)"] = (
        by["cumath stateless fused (R2C epilog)"]["median_us"] / stateful)
    ratios["disk-cache load in a second process, ms (target < 50)"] = (
        1e3 * result["fresh_processes"]["second process (disk cache)"]["compile_s"])
    ratios["first compile in a fresh process, s"] = result["fresh_processes"]["first process (compiles)"]["compile_s"]
    result["ratios"] = ratios
    print("\n-- ratios (target: stateful fused <= 0.85 x the faster unfused peer)")
    for k, v in ratios.items():
        print(f"  {k:75s} {v:8.3f}")
    result["rows"] = ROWS
    dump(args.json, result)
    for f in (r2c, r2c_p, r2c_plain, c2r, c2r_copy, c2r_pro, c2r_pro_p):
        f.free()
    spec = ref = None
    plan_cache.clear()
    cp.get_default_memory_pool().free_all_blocks()

    # what cuFFT's callback kernels cost against its plain ones
    print("\n-- cuFFT's kernels with and without (identity) callbacks (stateful, interleaved)")
    id_store = F.compile_epilog(identity_store, "complex64", None)
    id_load = F.compile_prolog(identity_load, "complex64", None)
    id_load_r = F.compile_prolog(identity_load, "float32", None)
    cases = [("R2C 2-D", (h, w), None, True), ("R2C 2-D", (4096, 4096), None, False),
             ("R2C 2-D", (2048, 2048), None, False), ("R2C 1-D batched", (16, 1 << 20), (-1,), False),
             ("R2C 1-D batched", (4096, 1000), (-1,), False), ("C2C 2-D", (4096, 4096), None, False),
             ("C2C 1-D batched", (64, 1 << 16), (-1,), False)]
    if args.quick:
        cases = cases[:2]
    diag = {}
    for kind, shape, axes, patient in cases:
        label = f"{kind} {'x'.join(map(str, shape))}"
        if kind.startswith("C2C"):
            x = rng.standard_normal(shape, dtype=cp.float32) + 1j * rng.standard_normal(shape, dtype=cp.float32)
            opts = {"fft_type": "C2C"}
            group = {"C2C plain": planned(x, opts, axes=axes)[0],
                     "C2C + identity epilog": planned(x, opts, axes=axes, epilog=id_store)[0],
                     "C2C + identity prolog": planned(x, opts, axes=axes, prolog=id_load)[0]}
            fns = {k: (lambda f=f: f.execute()) for k, f in group.items()}
        else:
            x = rng.standard_normal(shape, dtype=cp.float32)
            opts = {"fft_type": "R2C"}
            group = {"R2C plain": planned(x, opts, axes=axes)[0]}
            group["R2C + identity epilog"], t_plan = planned(x, opts, axes=axes, epilog=id_store)
            group["R2C + identity prolog"] = planned(x, opts, axes=axes, prolog=id_load_r)[0]
            if patient:
                group["R2C plain, patient JIT"] = planned(x, opts, True, axes)[0]
                group["R2C + identity epilog, patient JIT"] = planned(x, opts, True, axes, epilog=id_store)[0]
            s = group["R2C plain"].execute()
            c2r_opts = F.FFTOptions(fft_type="C2R", overwrite_input=True)
            group["C2R plain"] = planned(s, c2r_opts, axes=axes)[0]
            group["C2R + identity prolog"] = planned(s, c2r_opts, axes=axes, prolog=id_load)[0]
            if patient:
                group["C2R + identity prolog, patient JIT"] = planned(s, c2r_opts, True, axes, prolog=id_load)[0]
            for f in group.values():
                if f._geom.fft_type == "C2R":
                    f.reset_operand_unchecked(s)
            spare = s.copy()
            fns = {k: (lambda f=f: f.execute()) for k, f in group.items()}
            fns["one pass over the R2C result (a copy)"] = lambda: cp.copyto(spare, s)
            print(f"  {label}: planning with a callback {t_plan:.3f} s")
        tm = time_interleaved(fns, sync=sync, number=max(2, number // 2), rounds=max(3, rounds - 4))
        rows = {k: record(label, k, v) for k, v in tm.items()}
        base = {k.split(" ")[0]: rows[k]["median_us"] for k in rows if k.endswith("plain")}
        diag[label] = {k: rows[k]["median_us"] / base[k.split(" ")[0]] for k in rows
                       if k.split(" ")[0] in base and not k.endswith("plain")}
        for f in group.values():
            f.free()
        x = s = spare = group = fns = None
        cp.get_default_memory_pool().free_all_blocks()
        result["callback_kernels"] = diag
        dump(args.json, result)
    print("\n-- callback kernels against plain ones (median ratio, same shape)")
    for label, d in diag.items():
        print(f"  {label:28s} " + "   ".join(f"{k}: {v:.2f}" for k, v in d.items()))


def dump(path, result):
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
