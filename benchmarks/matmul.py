"""Matmul benchmark: cumath.linalg (generic) and cumath.linalg.advanced against their peers, in one process,
on the same data.

Groups (``--list`` shows every case):
  cpu       generic matmul on the CPU: 2048^3 float64/float32 against NumPy's a @ b (the same BLAS); the
            tall-skinny D = 1.5 A@B + 0.5 C (A 1e6 x 10, B 10 x 40) in place against SciPy's in-place gemm and
            NumPy's expression, and out of place.
  percall   the cost of one small call (64^3): CPU generic matmul (stateless, Matmul.execute, NumPy); GPU
            advanced matmul (stateless, Matmul.execute, torch.mm, CuPy, nvmath-python), GPU generic matmul, and
            advanced matmul with NumPy operands (staged to the GPU and back); the small-GEMM kernel at 32^3, 64^3
            and 128^3 against torch.mm and the same plan on cuBLASLt (torch and CuPy operands).
  gpu       generic matmul on the GPU (cuBLAS): 4096^3 float32/float64 against CuPy and PyTorch, the
            tall-skinny product in place (1e7 x 10 x 40), an explicit batch of 1,000 64^3 products.
  advanced  cumath.linalg.advanced (cuBLASLt) on the GPU: batched RELU_BIAS 256 x 1024^3 float32 (and TF32),
            bf16 8192^3, and the tall-skinny 1.5 A@B + 0.5 C (1e7 x 10 x 40 float32; cumath's memory-bound kernel
            against cuBLASLt, PyTorch and CuPy, against the memory floor).

    python benchmarks/matmul.py                            # every case; GPU cases skip without a GPU
    python benchmarks/matmul.py --quick
    python benchmarks/matmul.py --case percall --json matmul-percall.json
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Bench, Skip, device_sync, event_time, need, optional  # noqa: E402

import cumath  # noqa: E402
import cumath.linalg  # noqa: E402

bench = Bench("matmul", __doc__)
RNG = np.random.default_rng(11)
# NumPy and SciPy each bring an OpenBLAS whose idle workers spin for a while after a call: idling this long
# before each CPU sample lets the last contender's threads go to sleep (benchmarks/NOTES.md, "two OpenBLAS
# thread pools").
SETTLE = 0.3


def blas_info(case):
    try:  # which BLAS the CPU path found (informational only)
        from cumath._bindings import blas

        lib = blas.find_blas("auto")
        case.note(f"cumath's CPU BLAS: {lib.provider.description} ({lib.config or ''}); numpy {np.__version__}")
    except Exception:  # noqa: BLE001
        pass


# ------------------------------------------------------------------------------------------------ CPU
def cpu_square(case, dtype):
    n = 2048
    a = RNG.standard_normal((n, n)).astype(dtype)
    b = RNG.standard_normal((n, n)).astype(dtype)
    blas_info(case)
    mm = cumath.linalg.Matmul(a, b)
    mm.plan()
    np.testing.assert_allclose(mm.execute(), a @ b, rtol=1e-3 if dtype == np.float32 else 1e-10, atol=1e-2)
    flops = 2 * n ** 3
    fns = {"numpy a @ b": lambda: a @ b, "cumath Matmul.execute": mm.execute,
           "cumath.linalg.matmul (stateless)": lambda: cumath.linalg.matmul(a, b)}
    t = case.time(fns, rounds=case.rounds(5, 2), target=0.2, settle=SETTLE)
    for r in case.rows:
        if "stats" in r:
            r["GFLOPs"] = flops / t[r["contender"]].median / 1e9
    case.ratio("cumath Matmul.execute", "numpy a @ b")
    case.ratio("cumath.linalg.matmul (stateless)", "numpy a @ b")
    mm.free()


def cpu_tall_skinny(case, dtype):
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
    np.testing.assert_allclose(outofplace.execute(), alpha * (a @ b) + beta * c, rtol=1e-4, atol=1e-3)

    def scipy_inplace():
        # C^T (n x m, the column-major view of row-major C) = alpha B^T A^T + beta C^T, written into C
        gemm(alpha, b.T, a.T, beta, c_scipy.T, overwrite_c=True)

    fns = {"scipy gemm in place (overwrite_c)": scipy_inplace, "cumath Matmul.execute in place": inplace.execute,
           "cumath.linalg.matmul in place (stateless)":
               lambda: cumath.linalg.matmul(a, b, c_stateless, alpha=alpha, beta=beta, options={"inplace": True}),
           "cumath Matmul.execute out of place": outofplace.execute,
           "numpy alpha*(a@b) + beta*c": lambda: alpha * (a @ b) + beta * c}
    case.time(fns, rounds=case.rounds(5, 2), target=0.1, settle=SETTLE)
    for mine in ("cumath Matmul.execute in place", "cumath.linalg.matmul in place (stateless)"):
        case.ratio(mine, "scipy gemm in place (overwrite_c)")
        case.ratio(mine, "numpy alpha*(a@b) + beta*c")
    case.ratio("cumath Matmul.execute out of place", "numpy alpha*(a@b) + beta*c")
    inplace.free()
    outofplace.free()


for _dt in (np.float64, np.float32):
    _name = np.dtype(_dt).name
    bench.case(f"cpu/square-{_name}", f"{_name} 2048 x 2048 x 2048")(functools.partial(cpu_square, dtype=_dt))
for _dt in (np.float64, np.float32):
    _name = np.dtype(_dt).name
    bench.case(f"cpu/tall-skinny-{_name}", f"{_name} D = 1.5 A@B + 0.5 C, A 1e6 x 10, B 10 x 40")(
        functools.partial(cpu_tall_skinny, dtype=_dt))


# ------------------------------------------------------------------------------------------- per call
@bench.case("percall/cpu-generic-64", "CPU generic matmul 64 x 64 x 64 float64, one call")
def percall_cpu(case):
    a, b = RNG.standard_normal((64, 64)), RNG.standard_normal((64, 64))
    mm = cumath.linalg.Matmul(a, b)
    mm.plan()
    np.testing.assert_allclose(cumath.linalg.matmul(a, b), a @ b, rtol=1e-12)
    fns = {"cumath.linalg.matmul (stateless)": lambda: cumath.linalg.matmul(a, b),
           "cumath Matmul.execute (stateful)": mm.execute, "numpy a @ b": lambda: a @ b}
    case.time(fns, rounds=case.rounds(12, 4), target=0.02 if case.quick else 0.05)
    case.ratio("cumath.linalg.matmul (stateless)", "cumath Matmul.execute (stateful)")
    case.ratio("cumath Matmul.execute (stateful)", "numpy a @ b")
    case.ratio("cumath.linalg.matmul (stateless)", "numpy a @ b")
    mm.free()


def cuda_torch():
    torch = need("torch")
    if not torch.cuda.is_available():
        raise Skip("needs a CUDA PyTorch")
    return torch


def percall_target(case):
    return dict(rounds=case.rounds(12, 4), target=0.02 if case.quick else 0.05)


@bench.case("percall/gpu-advanced-64", "GPU cumath.linalg.advanced matmul 64 x 64 x 64 float32, one call", gpu=True)
def percall_gpu_advanced(case):
    import cumath.linalg.advanced as la

    torch = cuda_torch()
    cp = optional("cupy")
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    mm = la.Matmul(a, b)
    mm.plan()
    err = float(((mm.execute() - torch.mm(a, b)).norm() / torch.mm(a, b).norm()).item())
    held = [None]

    def kept():
        held[0] = mm.execute()

    fns = {"torch.mm": lambda: torch.mm(a, b), "cumath advanced matmul (stateless)": lambda: la.matmul(a, b),
           "cumath advanced Matmul.execute": mm.execute,
           "cumath advanced Matmul.execute, result kept (d = mm.execute())": kept}
    plans = [mm]
    try:  # the same plan without result recycling (a module switch of the executor; skipped if it is gone)
        from cumath.linalg.advanced import _executor

        if hasattr(_executor, "RECYCLE_RESULTS"):
            _executor.RECYCLE_RESULTS = False
            try:
                plain = la.Matmul(a, b)
                plain.plan()
            finally:
                _executor.RECYCLE_RESULTS = True
            plans.append(plain)
            fns["cumath advanced Matmul.execute, no result recycling"] = plain.execute
        else:
            case.note("no switch for result recycling found: no row without it")
    except ImportError:
        case.note("no switch for result recycling found: no row without it")
    if cp is not None:
        ca, cb = cp.asarray(a), cp.asarray(b)
        fns["cupy a @ b"] = lambda: ca @ cb
        fns["cumath advanced matmul (stateless, cupy)"] = lambda: la.matmul(ca, cb)
    nvmath = optional("nvmath")
    if nvmath is not None:
        try:
            import nvmath.linalg.advanced as nla

            nmm = nla.Matmul(a, b)
            nmm.plan()
            plans.append(nmm)
            nmm.execute()
            fns["nvmath advanced matmul (stateless)"] = lambda: nla.matmul(a, b)
            fns["nvmath advanced Matmul.execute"] = nmm.execute
        except Exception as exc:  # noqa: BLE001
            case.note(f"nvmath-python not measured: {type(exc).__name__}: {exc}")
    else:
        case.note("nvmath-python not installed: no nvmath rows")
    case.time(fns, sync=device_sync(), extra={"cumath advanced Matmul.execute": {"rel_err_vs_torch": err}},
              **percall_target(case))
    for name in fns:
        if name.startswith("cumath"):
            case.ratio(name, "torch.mm")
    case.ratio("cumath advanced matmul (stateless)", "cumath advanced Matmul.execute")
    case.ratio("cumath advanced matmul (stateless)", "nvmath advanced matmul (stateless)")
    case.ratio("cumath advanced Matmul.execute", "nvmath advanced Matmul.execute")
    for name, fn in (("cumath advanced Matmul.execute", mm.execute), ("torch.mm", lambda: torch.mm(a, b))):
        case.value(f"GPU time per call, CUDA events: {name}", event_time(fn, 200) * 1e6, "us")
    for p in plans:
        p.free()


def _cublaslt_plan(la, a, b):
    """A Matmul of a @ b planned with the small-GEMM kernel turned off (cuBLASLt runs its default execution)."""
    old = os.environ.get("CUMATH_SMALL_MATMUL")
    os.environ["CUMATH_SMALL_MATMUL"] = "0"
    try:
        mm = la.Matmul(a, b)
        mm.plan()
    finally:
        if old is None:
            os.environ.pop("CUMATH_SMALL_MATMUL", None)
        else:
            os.environ["CUMATH_SMALL_MATMUL"] = old
    return mm


def percall_small(case, n):
    """Per call of an n^3 float32 advanced matmul on the small-GEMM kernel against torch.mm and against the same
    plan on cuBLASLt, torch and CuPy operands, in rounds of A B ... B A; GPU time per call from CUDA events."""
    import cumath.linalg.advanced as la

    torch = cuda_torch()
    cp = optional("cupy")
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    mm, lt = la.Matmul(a, b), _cublaslt_plan(la, a, b)
    mm.plan()
    plans = [mm, lt]
    engines = {"kernel plan": mm._v.engine, "forced plan": lt._v.engine}
    case.note(f"engines: {engines}")
    ref = torch.mm(a.double(), b.double())
    err = {k: float(((x.execute().double() - ref).norm() / ref.norm()).item()) for k, x in (("small", mm), ("lt", lt))}
    fns = {"torch.mm": lambda: torch.mm(a, b), "cumath matmul (stateless, torch)": lambda: la.matmul(a, b),
           "cumath Matmul.execute (torch)": mm.execute, "cumath Matmul.execute, cuBLASLt forced (torch)": lt.execute}
    if cp is not None:
        ca, cb = cp.asarray(a), cp.asarray(b)
        cmm, clt = la.Matmul(ca, cb), _cublaslt_plan(la, ca, cb)
        cmm.plan()
        plans += [cmm, clt]
        fns.update({"cupy a @ b": lambda: ca @ cb, "cumath matmul (stateless, cupy)": lambda: la.matmul(ca, cb),
                    "cumath Matmul.execute (cupy)": cmm.execute,
                    "cumath Matmul.execute, cuBLASLt forced (cupy)": clt.execute})
    else:
        case.note("CuPy not installed: no CuPy rows")
    case.time(fns, sync=device_sync(), extra={"cumath Matmul.execute (torch)": {"rel_err_vs_f64": err["small"]},
                                              "cumath Matmul.execute, cuBLASLt forced (torch)": {
                                                  "rel_err_vs_f64": err["lt"]}}, **percall_target(case))
    for name in fns:
        if name.startswith("cumath"):
            case.ratio(name, "torch.mm")
    for pkg in ("torch", "cupy"):
        case.ratio(f"cumath Matmul.execute ({pkg})", f"cumath Matmul.execute, cuBLASLt forced ({pkg})")
    case.ratio("cumath matmul (stateless, cupy)", "cupy a @ b")
    for name, fn in (("small-GEMM kernel", mm.execute), ("cuBLASLt (same plan, forced)", lt.execute),
                     ("torch.mm", lambda: torch.mm(a, b))):
        case.value(f"GPU time per call, queued, CUDA events: {name}", event_time(fn, 300, queued=True) * 1e6, "us")
    for p in plans:
        p.free()


for _n in (32, 64, 128):
    bench.case(f"percall/gpu-small-{_n}", f"GPU advanced matmul {_n}^3 float32 on the small-GEMM kernel, one call",
               gpu=True)(functools.partial(percall_small, n=_n))


@bench.case("percall/gpu-generic-64", "GPU generic cumath.linalg.matmul 64 x 64 x 64 float32, one call", gpu=True)
def percall_gpu_generic(case):
    torch = cuda_torch()
    cp = optional("cupy")
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    mm = cumath.linalg.Matmul(a, b)
    mm.plan()
    fns = {"torch.mm": lambda: torch.mm(a, b), "cumath.linalg.matmul (stateless)": lambda: cumath.linalg.matmul(a, b),
           "cumath Matmul.execute (stateful)": mm.execute}
    if cp is not None:
        ca, cb = cp.asarray(a), cp.asarray(b)
        fns["cupy a @ b"] = lambda: ca @ cb
        fns["cumath.linalg.matmul (stateless, cupy)"] = lambda: cumath.linalg.matmul(ca, cb)
    nvmath = optional("nvmath")
    generic = getattr(getattr(nvmath, "linalg", None), "matmul", None) if nvmath is not None else None
    if generic is not None:
        try:
            generic(a, b)
            fns["nvmath.linalg.matmul (stateless)"] = lambda: generic(a, b)
        except Exception as exc:  # noqa: BLE001
            case.note(f"nvmath-python's generic matmul not measured: {type(exc).__name__}: {exc}")
    case.time(fns, sync=device_sync(), **percall_target(case))
    for name in fns:
        if name.startswith("cumath"):
            case.ratio(name, "torch.mm")
    case.ratio("cumath.linalg.matmul (stateless)", "cumath Matmul.execute (stateful)")
    case.ratio("cumath.linalg.matmul (stateless)", "nvmath.linalg.matmul (stateless)")
    mm.free()


@bench.case("percall/gpu-advanced-numpy-64", "GPU advanced matmul of NumPy operands 64^3 float32 (staged), one call",
            gpu=True)
def percall_gpu_numpy(case):
    import cumath.linalg.advanced as la

    a = RNG.standard_normal((64, 64)).astype(np.float32)
    b = RNG.standard_normal((64, 64)).astype(np.float32)
    mm = la.Matmul(a, b)
    mm.plan()
    np.testing.assert_allclose(mm.execute(), a @ b, rtol=1e-4, atol=1e-4)
    fns = {"cumath advanced matmul (stateless, NumPy)": lambda: la.matmul(a, b),
           "cumath advanced Matmul.execute (NumPy)": mm.execute, "numpy a @ b (on the host)": lambda: a @ b}
    plans = [mm]
    if optional("nvmath") is not None:
        try:
            import nvmath.linalg.advanced as nla

            nmm = nla.Matmul(a, b)
            nmm.plan()
            plans.append(nmm)
            nmm.execute()
            fns["nvmath advanced matmul (stateless, NumPy)"] = lambda: nla.matmul(a, b)
            fns["nvmath advanced Matmul.execute (NumPy)"] = nmm.execute
        except Exception as exc:  # noqa: BLE001
            case.note(f"nvmath-python not measured: {type(exc).__name__}: {exc}")
    case.time(fns, sync=device_sync(), **percall_target(case))
    case.ratio("cumath advanced matmul (stateless, NumPy)", "cumath advanced Matmul.execute (NumPy)")
    case.ratio("cumath advanced matmul (stateless, NumPy)", "nvmath advanced matmul (stateless, NumPy)")
    case.ratio("cumath advanced Matmul.execute (NumPy)", "nvmath advanced Matmul.execute (NumPy)")
    for p in plans:
        p.free()


# ------------------------------------------------------------------------------------ GPU, generic
def gpu_pair():
    cp = need("cupy")
    return cp, cuda_torch()


def copy_bandwidth(torch, nbytes: int) -> float:
    """Device-to-device copy bandwidth (bytes read + written per second) of ``nbytes`` buffers, measured now."""
    x = torch.empty(nbytes // 4, device="cuda")
    y = torch.empty_like(x)
    bw = 2 * nbytes / event_time(lambda: y.copy_(x), 10)
    x = y = None  # (not `del`: the lambda above refers to them)
    torch.cuda.empty_cache()
    return bw


def generic_square(case, dtype):
    cp, torch = gpu_pair()
    n = 4096
    a, b = cp.random.standard_normal((n, n), dtype=dtype), cp.random.standard_normal((n, n), dtype=dtype)
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    mm = cumath.linalg.Matmul(a, b)
    mm.plan()
    fns = {"cupy a @ b": lambda: a @ b, "torch.mm": lambda: torch.mm(ta, tb), "cumath Matmul.execute": mm.execute,
           "cumath.linalg.matmul (stateless)": lambda: cumath.linalg.matmul(a, b)}
    t = case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.1)
    for r in case.rows:
        if "stats" in r:
            r["TFLOPs"] = 2 * n ** 3 / t[r["contender"]].median / 1e12
    for mine in ("cumath Matmul.execute", "cumath.linalg.matmul (stateless)"):
        case.ratio(mine, "cupy a @ b")
        case.ratio(mine, "torch.mm")
    mm.free()


for _dt in ("float32", "float64"):
    bench.case(f"gpu/square-{_dt}", f"GPU generic matmul 4096^3 {_dt}", gpu=True)(
        functools.partial(generic_square, dtype=_dt))


@bench.case("gpu/tall-skinny-inplace", "GPU generic matmul in place: C = 1.5 A@B + 0.5 C, A 1e7 x 10, B 10 x 40, "
            "float32", gpu=True)
def generic_tall_skinny(case):
    cp, torch = gpu_pair()
    m, n, k = 10_000_000, 40, 10
    a, b, c = (cp.random.standard_normal(s, dtype="float32") for s in ((m, k), (k, n), (m, n)))
    ta, tb, tc = (torch.as_tensor(x, device="cuda") for x in (a, b, c))
    mm = cumath.linalg.Matmul(a, b, c, alpha=1.5, beta=0.5, options={"inplace": True})
    mm.plan()
    fns = {"torch.addmm(out=c)": lambda: torch.addmm(tc, ta, tb, beta=0.5, alpha=1.5, out=tc),
           "cupy 1.5*(a@b) + 0.5*c": lambda: 1.5 * (a @ b) + 0.5 * c, "cumath Matmul.execute in place": mm.execute}
    t = case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.1)
    floor = (m * k + 2 * m * n) * 4 / copy_bandwidth(torch, m * n * 4)
    case.value("memory floor (bytes moved / copy bandwidth)", floor * 1e6, "us")
    for r in case.rows:
        if "stats" in r:
            r["x_floor"] = t[r["contender"]].median / floor
    case.ratio("cumath Matmul.execute in place", "torch.addmm(out=c)")
    case.ratio("cumath Matmul.execute in place", "cupy 1.5*(a@b) + 0.5*c")
    mm.free()


def explicit_batch(case, dtype, members=1000, n=64):
    """``members`` products of n x n x n given as lists: one grouped cuBLAS launch against one plan per member,
    Python loops of torch.mm and cupy.matmul, and torch.bmm of the stacked batch (what equal shapes allow)."""
    cp, torch = gpu_pair()

    def rand():
        x = cp.random.standard_normal((n, n), dtype="float32")
        return x if dtype == "float32" else (x + 1j * cp.random.standard_normal((n, n), dtype="float32")).astype(dtype)

    a, b = [rand() for _ in range(members)], [rand() for _ in range(members)]
    ta, tb = [torch.as_tensor(x, device="cuda") for x in a], [torch.as_tensor(y, device="cuda") for y in b]
    sa, sb = torch.stack(ta), torch.stack(tb)
    t0 = time.perf_counter()
    grouped = cumath.linalg.Matmul(a, b)
    grouped.plan()
    case.value("plan: grouped Matmul(list)", (time.perf_counter() - t0) * 1e3, "ms")
    t0 = time.perf_counter()
    singles = [cumath.linalg.Matmul(x, y) for x, y in zip(a, b)]
    for s in singles:
        s.plan()
    case.value(f"plan: {members} single Matmuls", (time.perf_counter() - t0) * 1e3, "ms")
    out = grouped.execute()
    wide = torch.complex128 if dtype == "complex64" else torch.float64
    for i in (0, members // 2, members - 1):
        ref = ta[i].to(wide) @ tb[i].to(wide)
        err = float(torch.linalg.norm(torch.as_tensor(out[i], device="cuda") - ref) / torch.linalg.norm(ref))
        assert err < 1e-5, f"explicit batch result {i}: relative error {err:.2e}"
    fns = {"cumath Matmul(list).execute (grouped)": grouped.execute,
           "cumath one Matmul per member, looped": lambda: [s.execute() for s in singles],
           "torch.mm loop": lambda: [torch.mm(x, y) for x, y in zip(ta, tb)],
           "cupy.matmul loop": lambda: [cp.matmul(x, y) for x, y in zip(a, b)],
           "torch.bmm stacked (equal shapes only)": lambda: torch.bmm(sa, sb)}
    case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.05)
    for peer in list(fns)[1:]:
        case.ratio("cumath Matmul(list).execute (grouped)", peer)
    grouped.free()
    for s in singles:
        s.free()


for _dt in ("float32", "complex64"):
    bench.case(f"gpu/explicit-batch-{_dt}", f"GPU explicit batch: 1,000 products of 64^3 {_dt} as lists", gpu=True)(
        functools.partial(explicit_batch, dtype=_dt))


# ---------------------------------------------------------------------------------- GPU, advanced
def gpu_state(case, when):
    """SM clock, power and temperature (nvidia-smi): a power-capped GPU's clock explains drifting rows."""
    try:
        query = "--query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu"
        out = subprocess.run(["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except Exception as exc:  # noqa: BLE001
        out = f"unavailable: {exc}"
    case.value(f"GPU state {when} (SM MHz, max MHz, W, W cap, C)", out)


def relu_bias(case, tf32):
    """Batched RELU_BIAS 256 x 1024^3 float32 (TF32 compute with ``tf32``). With TF32 also: a workspace up to
    the memory limit (as nvmath-python allows) instead of cumath's 32 MiB cap, and up to 32 heuristic algorithms
    autotuned."""
    import cumath.linalg.advanced as la

    torch = cuda_torch()
    cp = optional("cupy")
    batch, n = 256, 1024
    a, b = torch.randn(batch, n, n, device="cuda"), torch.randn(batch, n, n, device="cuda")
    bias = torch.randn(n, device="cuda")
    opts = {"compute_type": la.MatmulComputeType.COMPUTE_32F_FAST_TF32} if tf32 else None
    epi = {"epilog": la.MatmulEpilog.RELU_BIAS, "epilog_inputs": {"bias": bias}}

    def planned(prefs=None, autotune=False):
        mm = la.Matmul(a, b, options=opts)
        mm.plan(preferences=prefs, **epi)
        if autotune:
            mm.autotune(iterations=10)
        algs = [(x.algorithm_id, x.workspace_size) for x in mm.algorithms]
        return mm, algs

    mm, algs = planned()
    case.note(f"default plan (workspace <= 32 MiB): algorithms (id, workspace) {algs}")
    fns = {"cumath Matmul.execute": mm.execute}
    plans = [mm]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    bias_col = bias[:, None]
    fns["torch relu(baddbmm(bias, a, b))"] = lambda: torch.relu(torch.baddbmm(bias_col, a, b))
    if not tf32 and cp is not None:
        ca, cb, cbias = cp.asarray(a), cp.asarray(b), cp.asarray(bias)
        fns["cupy maximum(a@b + bias, 0)"] = lambda: cp.maximum(ca @ cb + cbias[:, None], 0)
    if tf32:
        gpu_state(case, "before")
        try:
            import cumath.linalg.advanced._planner as planner

            cap = planner._WORKSPACE_CAP
            planner._WORKSPACE_CAP = 1 << 62  # the workspace limit is then the memory limit
            try:
                mm_ws, algs = planned()
            finally:
                planner._WORKSPACE_CAP = cap
            case.note(f"workspace up to the memory limit: algorithms {algs}")
            fns["cumath, workspace up to the memory limit"] = mm_ws.execute
            plans.append(mm_ws)
        except (ImportError, AttributeError) as exc:
            case.note(f"workspace variant not measured: {exc}")
        for limit in (8, 32):
            m2, algs = planned({"limit": limit}, autotune=True)
            case.note(f"{limit} algorithms autotuned (10 iterations): {algs[:4]}...")
            fns[f"cumath, {limit} heuristic algorithms autotuned"] = m2.execute
            plans.append(m2)
    flops = 2.0 * batch * n ** 3
    t = case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.1)
    for r in case.rows:
        if "stats" in r:
            r["TFLOPs"] = flops / t[r["contender"]].median / 1e12
    for name in fns:
        if name.startswith("cumath"):
            case.ratio(name, "torch relu(baddbmm(bias, a, b))")
    if tf32:
        gpu_state(case, "after")
    torch.backends.cuda.matmul.allow_tf32 = False
    for p in plans:
        p.free()
    fns.clear()
    torch.cuda.empty_cache()


bench.case("advanced/relu-bias", "batched RELU_BIAS 256 x 1024^3 float32", gpu=True)(
    functools.partial(relu_bias, tf32=False))
bench.case("advanced/relu-bias-tf32", "batched RELU_BIAS 256 x 1024^3 float32, TF32 compute", gpu=True)(
    functools.partial(relu_bias, tf32=True))


@bench.case("advanced/bf16", "bfloat16 8192^3", gpu=True)
def advanced_bf16(case):
    import cumath.linalg.advanced as la

    torch = cuda_torch()
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    mm = la.Matmul(a, b)
    mm.plan()
    tuned = la.Matmul(a, b)
    tuned.plan()
    tuned.autotune(iterations=5)
    fns = {"cumath Matmul.execute": mm.execute, "cumath Matmul.execute, autotuned": tuned.execute,
           "torch.mm": lambda: torch.mm(a, b)}
    t = case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.1)
    for r in case.rows:
        if "stats" in r:
            r["TFLOPs"] = 2.0 * n ** 3 / t[r["contender"]].median / 1e12
    case.ratio("cumath Matmul.execute", "torch.mm")
    case.ratio("cumath Matmul.execute, autotuned", "torch.mm")
    mm.free()
    tuned.free()
    torch.cuda.empty_cache()


@bench.case("advanced/tall-skinny", "D = 1.5 A@B + 0.5 C, A 1e7 x 10, B 10 x 40, C 1e7 x 40, float32", gpu=True)
def advanced_tall_skinny(case):
    """cumath's memory-bound kernel (what Matmul selects for this shape) in row- and column-major layouts,
    against cuBLASLt through cumath (the heuristic's algorithm, and the best of up to 32 after autotuning),
    PyTorch (addmm, in-place addmm_ with cuBLAS and with cuBLASLt as its BLAS) and CuPy's expression; each
    row also as a multiple of the memory floor (A, C read and D written at the copy bandwidth measured now)."""
    import cumath.linalg.advanced as la

    torch = cuda_torch()
    cp = optional("cupy")
    m, k, n = 10_000_000, 10, 40
    alpha, beta = 1.5, 0.5
    g = torch.Generator(device="cuda").manual_seed(0)
    A, B, C = (torch.randn(*s, device="cuda", generator=g) for s in ((m, k), (k, n), (m, n)))
    Ac, Bc, Cc = (x.t().contiguous().t() for x in (A, B, C))  # column-major
    C2, Cc2 = C.clone(), Cc.clone()  # the in-place peers overwrite these
    ref = torch.addmm(C.double(), A.double(), B.double(), beta=beta, alpha=alpha)

    def err(d):
        return float(((d.double() - ref).abs().max() / ref.abs().max()).item())

    mm = la.Matmul(A, B, C, alpha=alpha, beta=beta)
    mm.plan()
    mmc = la.Matmul(Ac, Bc, Cc, alpha=alpha, beta=beta)
    mmc.plan()
    extra = {"cumath Matmul.execute (row-major)": {"rel_err": err(mm.execute())},
             "cumath Matmul.execute (column-major)": {"rel_err": err(mmc.execute())}}
    variant = getattr(mm, "_v", None)  # which path the plan chose (informational; internals may change)
    if variant is not None and hasattr(variant, "kernel"):
        case.note(f"row-major plan runs {'the memory-bound kernel' if variant.kernel is not None else 'cuBLASLt'}")
    fns = {"cumath Matmul.execute (row-major)": mm.execute, "cumath Matmul.execute (column-major)": mmc.execute}
    plans = [mm, mmc]
    lt = la.Matmul(A, B, C, alpha=alpha, beta=beta)
    lt.plan(algorithms=mm.algorithms)  # algorithms given: cuBLASLt only
    fns["cumath, cuBLASLt only (heuristic's algorithm)"] = lt.execute
    plans.append(lt)
    try:
        probe = la.Matmul(A, B, C, alpha=alpha, beta=beta)
        offered = probe.plan(preferences={"limit": 32})
        probe.free()
        tuned = la.Matmul(A, B, C, alpha=alpha, beta=beta)
        tuned.plan(algorithms=offered)
        tuned.autotune(iterations=5)
        case.note(f"cuBLASLt offered {len(offered)} algorithms for this shape")
        fns["cumath, cuBLASLt only (best of its algorithms, autotuned)"] = tuned.execute
        plans.append(tuned)
    except Exception as exc:  # noqa: BLE001
        case.note(f"autotuned cuBLASLt not measured: {type(exc).__name__}: {exc}")
    fns["torch.addmm (row-major)"] = lambda: torch.addmm(C, A, B, beta=beta, alpha=alpha)
    fns["torch C.addmm_ in place (row-major)"] = lambda: C2.addmm_(A, B, beta=beta, alpha=alpha)
    fns["torch C.addmm_ in place (column-major)"] = lambda: Cc2.addmm_(Ac, Bc, beta=beta, alpha=alpha)
    if hasattr(torch.backends.cuda, "preferred_blas_library"):
        def with_lt():
            torch.backends.cuda.preferred_blas_library("cublaslt")
            try:
                C2.addmm_(A, B, beta=beta, alpha=alpha)
            finally:
                torch.backends.cuda.preferred_blas_library("cublas")
        fns["torch (cuBLASLt as its BLAS) C.addmm_ in place"] = with_lt
    if cp is not None:
        ca, cb, cc = cp.from_dlpack(A), cp.from_dlpack(B), cp.from_dlpack(C)
        fns["cupy alpha*a@b + beta*c"] = lambda: alpha * (ca @ cb) + beta * cc
    t = case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.05, extra=extra)
    floor = 4 * (m * k + k * n + 2 * m * n) / copy_bandwidth(torch, m * n * 4)
    case.value("memory floor (bytes moved / copy bandwidth measured now)", floor * 1e6, "us")
    for r in case.rows:
        if "stats" in r:
            r["x_floor"] = t[r["contender"]].median / floor
    for mine in ("cumath Matmul.execute (row-major)", "cumath Matmul.execute (column-major)"):
        case.ratio(mine, "torch.addmm (row-major)")
        case.ratio(mine, "torch C.addmm_ in place (row-major)")
        case.ratio(mine, "cumath, cuBLASLt only (best of its algorithms, autotuned)")
    case.ratio("cumath Matmul.execute (row-major)", "cupy alpha*a@b + beta*c")
    for p in plans:
        p.free()
    fns.clear()
    torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(bench.main())
