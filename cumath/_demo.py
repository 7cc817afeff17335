"""`python -m cumath demo`: the flagship examples, on the GPU when there is one, else on the CPU.

Each example checks cumath's result against NumPy in float64 (relative error) and times cumath, stateless
and stateful, against the peers installed in this process.
"""

from __future__ import annotations

import sys

import numpy as np

from ._core.timing import time_call


def _rel(a, ref) -> float:
    return float(np.linalg.norm(np.asarray(a, dtype=np.complex128) - ref) / np.linalg.norm(ref))


def _to_host(x):
    mod = type(x).__module__.partition(".")[0]
    if mod == "cupy":
        return x.get()
    if mod == "torch":
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _examples(space: str, rng):
    """(name, operand maker, cumath call, stateful maker, NumPy reference, peers) per example."""
    import cumath

    if space == "cpu":
        shapes = {"batched 1-D C2C": (256, 4096), "2-D R2C + filter + C2R": (1024, 1024), "3-D C2C": (64, 64, 64)}
        dt_c, dt_r = np.complex128, np.float64
    else:
        shapes = {"batched 1-D C2C": (4096, 4096), "2-D R2C + filter + C2R": (4096, 4096), "3-D C2C": (256, 256, 256)}
        dt_c, dt_r = np.complex64, np.float32
    ex = []
    s = shapes["batched 1-D C2C"]
    x = (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dt_c)
    ex.append(("batched 1-D C2C " + "x".join(map(str, s)), x, lambda a: cumath.fft.fft(a, axes=[-1]),
               lambda a: cumath.fft.FFT(a, axes=[-1]), np.fft.fft(x.astype(np.complex128), axis=-1),
               {"numpy": lambda a: np.fft.fft(a, axis=-1)}, "fft"))
    s = shapes["2-D R2C + filter + C2R"]
    img = rng.standard_normal(s).astype(dt_r)
    fy = np.fft.fftfreq(s[0])[:, None]
    fx = np.fft.rfftfreq(s[1])[None, :]
    h = (np.exp(-2 * np.pi**2 * 4.0 * (fx**2 + fy**2)) / (s[0] * s[1])).astype(dt_r)
    ref = np.fft.irfft2(np.fft.rfft2(img.astype(np.float64)) * h * (s[0] * s[1]), s=s)
    ex.append(("2-D R2C + filter + C2R " + "x".join(map(str, s)), img, None, None, ref, {}, ("filter", h)))
    s = shapes["3-D C2C"]
    v = (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dt_c)
    ex.append(("3-D C2C " + "x".join(map(str, s)), v, lambda a: cumath.fft.fft(a), lambda a: cumath.fft.FFT(a),
               np.fft.fftn(v.astype(np.complex128)), {"numpy": lambda a: np.fft.fftn(a)}, "fftn"))
    return ex


def _peers(space, kind, mods):
    """Peer callables for an FFT kind, from the packages in this process."""
    peers = {}
    if space == "cpu":
        try:
            import scipy.fft as sf

            peers["scipy"] = {"fft": lambda a: sf.fft(a, axis=-1, workers=-1),
                              "fftn": lambda a: sf.fftn(a, workers=-1)}[kind]
        except ImportError:
            pass
        try:  # pyFFTW's own stateless interface, with its plan cache (FFTW_ESTIMATE, like cumath's first calls)
            import pyfftw.interfaces.cache
            import pyfftw.interfaces.numpy_fft as pf
            from ._core.execution import available_cpus

            pyfftw.interfaces.cache.enable()
            n = available_cpus()
            peers["pyfftw"] = {"fft": lambda a: pf.fft(a, axis=-1, threads=n, planner_effort="FFTW_ESTIMATE"),
                               "fftn": lambda a: pf.fftn(a, threads=n, planner_effort="FFTW_ESTIMATE")}[kind]
        except ImportError:
            pass
        return peers
    if "cupy" in mods:
        cp = mods["cupy"]
        peers["cupy"] = {"fft": lambda a: cp.fft.fft(a, axis=-1), "fftn": lambda a: cp.fft.fftn(a)}[kind]
    if "torch" in mods:
        torch = mods["torch"]
        peers["torch"] = {"fft": lambda a: torch.fft.fft(a, dim=-1), "fftn": lambda a: torch.fft.fftn(a)}[kind]
    return peers


def main(execution: str = "auto") -> int:
    import cumath
    from ._core.cuda import device_count

    if execution == "cuda" and device_count() == 0:
        print("no CUDA GPU is usable here; run the demo on the CPU with `python -m cumath demo --execution cpu`")
        return 2
    space = execution if execution != "auto" else ("cuda" if device_count() > 0 else "cpu")
    mods = {}
    if space == "cuda":
        for name in ("cupy", "torch"):
            try:
                mods[name] = __import__(name)
            except ImportError:
                pass
        if "torch" in mods and not mods["torch"].cuda.is_available():
            del mods["torch"]
    rng = np.random.default_rng(2026)
    print(f"cumath {cumath.__version__} demo on the {'GPU' if space == 'cuda' else 'CPU'}"
          + (f" (arrays: {', '.join(mods) or 'NumPy staged to the GPU'})" if space == "cuda" else ""))
    print(f"engines: {engines(space)}")
    rows, failures = [], 0
    for name, host, call, make, ref, _np_peers, kind in _examples(space, rng):
        pkg = next(iter(mods), None) if space == "cuda" else None
        x = _upload(host, pkg, mods)
        sync = _sync(pkg, mods)
        if isinstance(kind, tuple):  # the Gaussian filter: rfft2, multiply, irfft2
            hx = _upload(kind[1], pkg, mods)

            def call(a, hx=hx):
                return cumath.fft.irfft(cumath.fft.rfft(a) * hx)

            make = None
            peers = {}
            if space == "cpu":
                peers["numpy"] = lambda a, h=kind[1]: np.fft.irfft2(np.fft.rfft2(a) * h, s=a.shape)
            else:
                if "cupy" in mods and pkg == "cupy":
                    cp = mods["cupy"]
                    peers["cupy"] = lambda a, h=hx: cp.fft.irfft2(cp.fft.rfft2(a) * h, s=a.shape)
                if "torch" in mods and pkg == "torch":
                    torch = mods["torch"]
                    peers["torch"] = lambda a, h=hx: torch.fft.irfft2(torch.fft.rfft2(a) * h, s=a.shape)
        else:
            peers = dict(_np_peers) if space == "cpu" else {}
            peers.update({k: v for k, v in _peers(space, kind, mods).items() if space == "cpu" or k == pkg})
        res = call(x)
        err = _rel(_to_host(res), ref)
        tol = 1e-10 if host.dtype in (np.float64, np.complex128) else 1e-4
        ok = err < tol
        failures += not ok
        t_stateless = time_call(lambda: call(x), sync=sync, min_time=0.1, repeat=5)
        t_stateful = None
        if make is not None:
            with make(x) as f:
                f.plan()
                t_stateful = time_call(f.execute, sync=sync, min_time=0.1, repeat=5)
        peer_times = {k: time_call(lambda p=p: p(x), sync=sync, min_time=0.1, repeat=5) for k, p in peers.items()}
        rows.append((name, err, ok, t_stateless, t_stateful, peer_times))
    if space == "cuda":
        x = (rng.standard_normal(2048) + 1j * rng.standard_normal(2048))
        res = cumath.fft.fft(x, execution="cuda")
        err = _rel(res, np.fft.fft(x))
        ok = err < 1e-12
        failures += not ok
        t = time_call(lambda: cumath.fft.fft(x, execution="cuda"), min_time=0.1, repeat=5)
        rows.append(("NumPy in, GPU FFT, NumPy out (2048 c128)", err, ok, t, None,
                     {"numpy": time_call(lambda: np.fft.fft(x), min_time=0.1, repeat=5)}))
    mm_rows = _matmul_rows(space, rng, mods)
    failures += sum(not r[2] for r in mm_rows)
    rows += mm_rows
    _print(rows)
    print("\nall results match NumPy" if not failures else f"\n{failures} result(s) did NOT match NumPy")
    return 1 if failures else 0


def _matmul_rows(space, rng, mods):
    """Matrix products: the generic matmul (BLAS) on the CPU; cuBLASLt with a fused epilog and the tall-skinny
    memory-bound kernel on the GPU. Each row: (name, error, ok, stateless, stateful, peers)."""
    import cumath

    pkg = next(iter(mods), None) if space == "cuda" else None
    sync = _sync(pkg, mods)
    rows = []

    def row(name, ops, call, make, ref, peers, tol, plan_kw=None):
        try:
            _row(name, ops, call, make, ref, peers, tol, plan_kw)
        except Exception as exc:  # one failing example must not hide the others; it counts as a failure
            print(f"{name}: FAILED with {type(exc).__name__}: {exc}")
            rows.append((name, float("nan"), False, None, None, {}))

    def _row(name, ops, call, make, ref, peers, tol, plan_kw):
        res = call(*ops)
        res = res[0] if isinstance(res, tuple) else res
        err = _rel(_to_host(res), ref)
        t_stateless = time_call(lambda: call(*ops), sync=sync, min_time=0.1, repeat=5)
        with make(*ops) as m:
            m.plan(**(plan_kw(*ops) if plan_kw else {}))
            t_stateful = time_call(m.execute, sync=sync, min_time=0.1, repeat=5)
        peer_times = {k: time_call(lambda p=p: p(*ops), sync=sync, min_time=0.1, repeat=5)
                      for k, p in peers.items()}
        rows.append((name, err, err < tol, t_stateless, t_stateful, peer_times))

    if space == "cpu":
        lin = cumath.linalg
        for (m, n, k), what in (((1024, 1024, 1024), "GEMM"), ((1_000_000, 40, 10), "tall-skinny")):
            a, b, c = (rng.standard_normal(s) for s in ((m, k), (k, n), (m, n)))
            ref = 1.5 * _reference_product(a, b) + 0.5 * c
            row(f"{what} 1.5AB+0.5C {m}x{n}x{k} f64", (a, b, c),
                lambda a, b, c: lin.matmul(a, b, c, alpha=1.5, beta=0.5),
                lambda a, b, c: lin.Matmul(a, b, c, alpha=1.5, beta=0.5), ref,
                {"numpy": lambda a, b, c: 1.5 * (a @ b) + 0.5 * c}, 1e-12)
        return rows
    from .linalg import advanced as adv

    batch, m, n, k = 64, 512, 512, 512
    a, b = rng.standard_normal((batch, m, k)).astype(np.float32), rng.standard_normal((batch, k, n)).astype(np.float32)
    bias = rng.standard_normal((m, 1)).astype(np.float32)
    ref = np.maximum(a.astype(np.float64) @ b + bias, 0)
    ops = tuple(_upload(x, pkg, mods) for x in (a, b, bias))
    peers = {}
    if pkg == "torch":
        torch = mods["torch"]
        peers["torch"] = lambda a, b, bias: torch.relu(torch.baddbmm(bias, a, b))
    elif pkg == "cupy":
        cp = mods["cupy"]
        peers["cupy"] = lambda a, b, bias: cp.maximum(cp.matmul(a, b) + bias, 0)
    row(f"RELU_BIAS epilog {batch} x {m}x{n}x{k} f32", ops,
        lambda a, b, bias: adv.matmul(a, b, epilog=adv.MatmulEpilog.RELU_BIAS, epilog_inputs={"bias": bias}),
        lambda a, b, bias: adv.Matmul(a, b), ref, peers, 1e-4,
        plan_kw=lambda a, b, bias: {"epilog": adv.MatmulEpilog.RELU_BIAS, "epilog_inputs": {"bias": bias}})
    m, n, k = 4_000_000, 40, 10
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    ref = 1.5 * (a.astype(np.float64) @ b) + 0.5 * c  # the host's BLAS: independent of the GPU's libraries
    ops = tuple(_upload(x, pkg, mods) for x in (a, b, c))
    peers = {}
    if pkg == "torch":
        peers["torch addmm"] = lambda a, b, c: mods["torch"].addmm(c, a, b, beta=0.5, alpha=1.5)
    elif pkg == "cupy":
        peers["cupy"] = lambda a, b, c: 1.5 * (a @ b) + 0.5 * c
    row(f"tall-skinny 1.5AB+0.5C {m}x{n}x{k} f32", ops,
        lambda a, b, c: adv.matmul(a, b, c, alpha=1.5, beta=0.5),
        lambda a, b, c: adv.Matmul(a, b, c, alpha=1.5, beta=0.5), ref, peers, 1e-5)
    return rows


def _reference_product(a, b):
    """``a @ b`` in float64 without BLAS (NumPy's own einsum loop): on the CPU cumath's matmul runs the BLAS that
    ``a @ b`` would call, so a reference computed with ``@`` agrees to the last bit and shows an error of 0."""
    return np.einsum("ik,kj->ij", np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), optimize=False)


def _upload(host, pkg, mods):
    if pkg == "cupy":
        return mods["cupy"].asarray(host)
    if pkg == "torch":
        return mods["torch"].from_numpy(np.ascontiguousarray(host)).cuda()
    return host


def _sync(pkg, mods):
    if pkg == "cupy":
        return mods["cupy"].cuda.get_current_stream().synchronize
    if pkg == "torch":
        return mods["torch"].cuda.synchronize
    return None


def engines(space: str) -> str:
    """The engines this demo's examples run on, as loaded (FFT and matmul)."""
    if space == "cuda":
        return "FFT: cuFFT; matmul: cuBLASLt (and cumath's tall-skinny kernel where it is faster)"
    from ._info import cpu_engines

    e = cpu_engines()
    return f"FFT: {e['fft']}; matmul: {e['blas']}"


def _fmt(t) -> str:
    """``median +-spread%`` of a Timing (spread: (max - min) / median of the repeats)."""
    if t is None:
        return "-"
    m = t.median
    text = f"{m * 1e6:.1f} us" if m < 1e-3 else f"{m * 1e3:.2f} ms"
    return f"{text} \u00b1{100 * t.spread:.0f}%"


def _print(rows):
    peers = sorted({k for r in rows for k in r[5]})
    width = max([len(r[0]) for r in rows] + [len("example")])
    cols = ["cumath", "stateful", *peers]
    cells = [[_fmt(r[3]), _fmt(r[4]), *(_fmt(r[5].get(p)) for p in peers)] for r in rows]
    cw = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    head = f"{'example':<{width}}  {'rel.err':>9}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cols, cw))
    print("\n" + head)
    print("-" * len(head))
    for (name, err, ok, *_), row in zip(rows, cells):
        line = f"{name:<{width}}  {err:9.1e}  " + "  ".join(f"{c:>{w}}" for c, w in zip(row, cw))
        print(line + ("" if ok else "  MISMATCH"))
    print("(median time per call \u00b1 spread of 5 repeats: (max - min) / median; on a busy machine the "
          "spread is large and\n the comparison less certain)")


if __name__ == "__main__":
    sys.exit(main())
