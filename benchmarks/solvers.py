"""Direct solver benchmark: cumath's dense direct solver (``cumath.linalg.DirectSolver`` / ``direct_solver``)
against its peers, in one process, on the same data.

Groups (``--list`` shows every case):
  dense     CPU: one float64 system of order 2048 against scipy.linalg.solve and numpy.linalg.solve; a batch of
            4096 float64 systems of order 32 against numpy.linalg.solve. GPU: one float64 system of order 8192
            and a batch of 16,384 float32 systems of order 32 (b of shape (batch, 32, 1), (batch, 32) and
            (batch, 32, 8); positive definite ones by Cholesky), against torch.linalg.solve, cupy.linalg.solve and
            nvmath-python where installed, cumath's small-system kernels beside its library path forced
            (batch_method='batched'); the batch-method table (one cuSOLVER call per system against the
            batched routines, per order) behind ``DirectSolverOptions(batch_method='auto')``; optional: the CPU
            thread table (``--case dense/cpu-threads``).
  sparse    the sparse direct solver's cases, from benchmarks/solvers_sparse.py when that script is present (it
            registers them through ``register(bench)``).

cumath is timed stateful (factorize() + solve() of a planned DirectSolver, a new a and b bound each time with
reset_operands: what a loop over new systems costs) and stateless (direct_solver: a cached plan).

    python benchmarks/solvers.py                        # every default case; GPU cases skip without a GPU
    python benchmarks/solvers.py --case dense --quick
    python benchmarks/solvers.py --case dense/gpu-8192-float64 --json solvers-gpu.json
"""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import Bench, Skip, device_sync, need, optional  # noqa: E402

import cumath  # noqa: E402
import cumath.linalg  # noqa: E402

bench = Bench("solvers", __doc__)
RNG = np.random.default_rng(23)
# NumPy and SciPy each bring an OpenBLAS whose idle workers spin for a while after a call: idling before each
# CPU sample lets the last contender's threads go to sleep (benchmarks/NOTES.md, "two OpenBLAS thread pools").
SETTLE = 0.3


def api():
    """(DirectSolver, direct_solver) from the public module, else from the solver's package (before the public
    names are wired in)."""
    solver = getattr(cumath.linalg, "DirectSolver", None)
    function = getattr(cumath.linalg, "direct_solver", None)
    if solver is None or function is None:
        from cumath.linalg import _solver

        return _solver.DirectSolver, _solver.direct_solver
    return solver, function


DirectSolver, direct_solver = api()


def well_conditioned(xp, shape, dtype):
    """Random systems with a dominant diagonal (LU needs no large pivots, every contender is accurate)."""
    n = shape[-1]
    a = RNG.standard_normal(shape).astype(dtype) + float(2 * np.sqrt(n)) * np.eye(n, dtype=dtype)
    return xp.asarray(a)


def rel_residual(a, x, b) -> float:
    a, x, b = (np.asarray(v, dtype=np.float64) for v in (a, x, b))
    if x.ndim == a.ndim - 1:  # one vector per system
        x, b = x[..., None], b[..., None]
    return float(np.abs(a @ x - b).max() / (np.abs(a).max() * max(1.0, np.abs(x).max()) * a.shape[-1]))


def stateful(a, b, options=None):
    """A planned DirectSolver and the callable that binds a and b and runs factorize() + solve()."""
    s = DirectSolver(a, b, options=options)
    s.plan()

    def run():
        s.reset_operands(a=a, b=b)
        s.factorize()
        return s.solve()

    return s, run


def lapack_note(case):
    try:  # which LAPACK the CPU path found (informational only)
        from cumath._bindings import lapack

        lib = lapack.find_lapack("auto")
        case.note(f"cumath's CPU LAPACK: {lib.description} ({lib.blas.config or ''}); numpy {np.__version__}")
    except Exception:  # noqa: BLE001
        pass


# ------------------------------------------------------------------------------------------------ CPU
@bench.case("dense/cpu-2048-float64", "CPU, one float64 system of order 2048, one right-hand side")
def cpu_single(case):
    sla = need("scipy.linalg")
    n = 2048
    a = well_conditioned(np, (n, n), np.float64)
    b = RNG.standard_normal((n, 1))
    lapack_note(case)
    s, run = stateful(a, b)
    x = run()
    extra = {"cumath DirectSolver factorize+solve": {"rel_residual": rel_residual(a, x, b)}}
    fns = {"scipy.linalg.solve": lambda: sla.solve(a, b), "numpy.linalg.solve": lambda: np.linalg.solve(a, b),
           "cumath DirectSolver factorize+solve": run, "cumath direct_solver (stateless)": lambda: direct_solver(a, b)}
    case.time(fns, rounds=case.rounds(5, 2), target=0.5, settle=SETTLE, extra=extra)
    for mine in ("cumath DirectSolver factorize+solve", "cumath direct_solver (stateless)"):
        case.ratio(mine, "scipy.linalg.solve")
        case.ratio(mine, "numpy.linalg.solve")
    case.note("scipy.linalg.solve also checks that a is finite and estimates its condition number (gecon)")
    s.free()


@bench.case("dense/cpu-batched-4096x32-float64", "CPU, 4096 float64 systems of order 32, one right-hand side each")
def cpu_batched(case):
    count, n = (1024 if case.quick else 4096), 32
    a = well_conditioned(np, (count, n, n), np.float64)
    b = RNG.standard_normal((count, n, 1))
    lapack_note(case)
    s, run = stateful(a, b)
    x = run()
    extra = {"cumath DirectSolver factorize+solve": {"rel_residual": rel_residual(a, x, b)}}
    fns = {"numpy.linalg.solve": lambda: np.linalg.solve(a, b), "cumath DirectSolver factorize+solve": run,
           "cumath direct_solver (stateless)": lambda: direct_solver(a, b)}
    torch = optional("torch")
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fns["torch.linalg.solve (CPU)"] = lambda: torch.linalg.solve(ta, tb)
    case.time(fns, rounds=case.rounds(9, 3), target=0.2, settle=SETTLE, extra=extra)
    for mine in ("cumath DirectSolver factorize+solve", "cumath direct_solver (stateless)"):
        case.ratio(mine, "numpy.linalg.solve")
    s.free()


@bench.case("dense/cpu-threads", "CPU batches over threads against the calling thread, per order (the table of "
                                 "_traits.THREADS_FROM)", default=False)
def cpu_threads(case):
    from cumath._core.execution import ExecutionCPU, available_cpus

    cpus = available_cpus()
    if cpus < 2:
        raise Skip("needs 2 cores")
    for n in (8, 16, 32, 48, 64, 128, 256):
        count = max(8, int(2e8 / (n ** 3)))
        a = well_conditioned(np, (count, n, n), np.float64)
        b = RNG.standard_normal((count, n, 1))
        serial = DirectSolver(a, b, execution=ExecutionCPU(num_threads=1))
        threaded = DirectSolver(a, b, execution=ExecutionCPU(num_threads=cpus))
        for s in (serial, threaded):
            s.plan()
        t = case.time({f"n={n} x{count} calling thread": serial.execute, f"n={n} x{count} {cpus} threads":
                       threaded.execute}, rounds=case.rounds(5, 2), target=0.1)
        case.ratio(f"n={n} x{count} {cpus} threads", f"n={n} x{count} calling thread")
        del t
        serial.free()
        threaded.free()


# ------------------------------------------------------------------------------------------------ GPU
LIBRARY = {"batch_method": "batched"}  # the library path forced (cuBLAS's batched LU), for the kernels' cases


def gpu_contenders(case, a, b, dtype_name, library=False):
    """Rows for torch/cupy operands (cumath stateful and stateless), torch.linalg.solve, cupy.linalg.solve and
    nvmath-python's direct solver where importable; ``library``: cumath's rows again with the library path
    forced (``batch_method='batched'``: cuBLAS's batched LU instead of cumath's small-system kernels)."""
    torch = optional("torch")
    cp = optional("cupy")
    if (torch is None or not torch.cuda.is_available()) and cp is None:
        raise Skip("needs CuPy or a CUDA PyTorch")
    fns, plans = {}, []
    ref = None
    if torch is not None and torch.cuda.is_available():
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        s, run = stateful(ta, tb)
        plans.append(s)
        ref = (ta, tb, run)
        fns["torch.linalg.solve"] = lambda: torch.linalg.solve(ta, tb)
        fns["cumath DirectSolver factorize+solve (torch)"] = run
        fns["cumath direct_solver (stateless, torch)"] = lambda: direct_solver(ta, tb)
        if library:
            s, run = stateful(ta, tb, options=LIBRARY)
            plans.append(s)
            fns["cumath DirectSolver factorize+solve (torch, library path)"] = run
            fns["cumath direct_solver (stateless, torch, library path)"] = lambda: direct_solver(ta, tb, options=LIBRARY)
        # cuSOLVER's non-deterministic algorithms (cumath's default keeps cuSOLVER's deterministic results)
        fns["cumath direct_solver (stateless, torch, deterministic=False)"] = lambda: direct_solver(
            ta, tb, options={"deterministic": False})
    if cp is not None:
        ca, cb = cp.asarray(a), cp.asarray(b)
        s, run = stateful(ca, cb)
        plans.append(s)
        if b.ndim == a.ndim:  # (NumPy 2's rule, which CuPy follows: a b of (batch, n) is not a batch of vectors)
            fns["cupy.linalg.solve"] = lambda: cp.linalg.solve(ca, cb)
        else:
            fns["cupy.linalg.solve (b as (batch, n, 1))"] = lambda: cp.linalg.solve(ca, cb[..., None])
        fns["cumath DirectSolver factorize+solve (cupy)"] = run
        fns["cumath direct_solver (stateless, cupy)"] = lambda: direct_solver(ca, cb)
        if ref is None:
            ref = (ca, cb, run)
    nvmath = optional("nvmath")
    nv_fn = getattr(getattr(nvmath, "linalg", None), "direct_solver", None) if nvmath is not None else None
    if nv_fn is not None:
        xa, xb = ref[0], ref[1]
        try:
            nv_fn(xa, xb)
            fns["nvmath.linalg.direct_solver (stateless)"] = lambda: nv_fn(xa, xb)
            nv_cls = nvmath.linalg.DirectSolver
            nvs = nv_cls(xa, xb)
            nvs.plan()

            def nv_run():
                nvs.reset_operands(a=xa, b=xb)
                nvs.factorize()
                return nvs.solve()

            nv_run()
            plans.append(nvs)
            fns["nvmath DirectSolver factorize+solve"] = nv_run
        except Exception as exc:  # noqa: BLE001
            case.note(f"nvmath-python not measured: {type(exc).__name__}: {exc}")
    else:
        case.note("nvmath-python (with nvmath.linalg.direct_solver) not installed: no nvmath rows")
    x = ref[2]()
    host = (lambda v: v.cpu().numpy()) if hasattr(ref[0], "cpu") else (lambda v: v.get())
    err = rel_residual(a, host(x), b)
    return fns, plans, err


def gpu_case(case, a, b, dtype_name, rounds, library=False):
    fns, plans, err = gpu_contenders(case, a, b, dtype_name, library)
    first = next(k for k in fns if k.startswith("cumath DirectSolver"))
    case.time(fns, sync=device_sync(), rounds=rounds, target=0.2, extra={first: {"rel_residual": err}})
    for mine in [k for k in fns if k.startswith("cumath")]:
        for peer in ("torch.linalg.solve", "cupy.linalg.solve", "nvmath.linalg.direct_solver (stateless)"):
            case.ratio(mine, peer)
    case.ratio("cumath DirectSolver factorize+solve (torch)", "nvmath DirectSolver factorize+solve")
    if library:
        case.ratio("cumath DirectSolver factorize+solve (torch)",
                   "cumath DirectSolver factorize+solve (torch, library path)", "kernels / library path (stateful)")
    engine = getattr(plans[0]._executor, "engine", None) if plans else None
    if engine is not None:
        case.note(f"cumath's engine for this case: {engine.description}")
    for p in plans:
        p.free()


@bench.case("dense/gpu-8192-float64", "GPU, one float64 system of order 8192, one right-hand side", gpu=True)
def gpu_single(case):
    n = 4096 if case.quick else 8192
    a = well_conditioned(np, (n, n), np.float64)
    b = RNG.standard_normal((n, 1))
    gpu_case(case, a, b, "float64", case.rounds(5, 2))


@bench.case("dense/gpu-batched-16384x32-float32", "GPU, 16,384 float32 systems of order 32, one right-hand side "
                                                   "each", gpu=True)
def gpu_batched(case):
    count, n = 16384, 32
    a = well_conditioned(np, (count, n, n), np.float32)
    b = RNG.standard_normal((count, n, 1)).astype(np.float32)
    gpu_case(case, a, b, "float32", case.rounds(7, 3), library=True)
    _pivot_check_alone(case, a)
    _small_kernel_alone(case, a, b)


@bench.case("dense/gpu-batched-16384x32-float32-vector", "GPU, 16,384 float32 systems of order 32, b of shape "
                                                          "(batch, 32)", gpu=True)
def gpu_batched_vector(case):
    count, n = 16384, 32
    a = well_conditioned(np, (count, n, n), np.float32)
    gpu_case(case, a, RNG.standard_normal((count, n)).astype(np.float32), "float32", case.rounds(7, 3), library=True)


@bench.case("dense/gpu-batched-16384x32-float32-nrhs8", "GPU, 16,384 float32 systems of order 32, b of shape "
                                                         "(batch, 32, 8)", gpu=True)
def gpu_batched_nrhs(case):
    count, n = 16384, 32
    a = well_conditioned(np, (count, n, n), np.float32)
    gpu_case(case, a, RNG.standard_normal((count, n, 8)).astype(np.float32), "float32", case.rounds(7, 3),
             library=True)


@bench.case("dense/gpu-batched-16384x32-float32-spd", "GPU, 16,384 float32 positive definite systems of order "
                                                       "32 (Cholesky), one right-hand side each", gpu=True)
def gpu_batched_spd(case):
    torch = optional("torch")
    if torch is None or not torch.cuda.is_available():
        raise Skip("needs a CUDA PyTorch")
    count, n = 16384, 32
    m = RNG.standard_normal((count, n, n)).astype(np.float32)
    a = m @ np.swapaxes(m, 1, 2) + n * np.eye(n, dtype=np.float32)
    b = RNG.standard_normal((count, n, 1)).astype(np.float32)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    spd = {"matrix_type": "spd"}
    lib = {**spd, **LIBRARY}
    fns, plans = {}, []
    for label, opts in (("", spd), (", library path", lib)):
        s, run = stateful(ta, tb, options=opts)
        plans.append(s)
        fns[f"cumath DirectSolver factorize+solve (torch{label})"] = run
        fns[f"cumath direct_solver (stateless, torch{label})"] = (
            lambda o: lambda: direct_solver(ta, tb, options=o))(opts)
    fns["torch.linalg.cholesky + torch.cholesky_solve"] = lambda: torch.cholesky_solve(tb, torch.linalg.cholesky(ta))
    fns["torch.linalg.solve"] = lambda: torch.linalg.solve(ta, tb)
    err = rel_residual(a, direct_solver(ta, tb, options=spd).cpu().numpy(), b)
    first = "cumath DirectSolver factorize+solve (torch)"
    case.time(fns, sync=device_sync(), rounds=case.rounds(7, 3), target=0.2, extra={first: {"rel_residual": err}})
    for mine in [k for k in fns if k.startswith("cumath")]:
        case.ratio(mine, "torch.linalg.cholesky + torch.cholesky_solve")
    case.ratio(first, "cumath DirectSolver factorize+solve (torch, library path)", "kernels / library path (stateful)")
    case.note(f"cumath's engine for this case: {plans[0]._executor.engine.description}")
    for p in plans:
        p.free()


def _small_kernel_alone(case, a, b) -> None:
    """cumath's small-system kernel on its own: the fused launch (factorize, check, solve: a and b read where they
    are, the factors and x written into buffers of the plan's layouts), timed with CUDA events over 50 launches,
    against the factorize+solve row."""
    cp = optional("cupy")
    if cp is None:
        case.note("the small-system kernel alone: needs CuPy")
        return
    ca, cb = cp.asarray(a), cp.asarray(b)
    s = DirectSolver(ca, cb)
    s.plan()
    engine = getattr(s._executor, "engine", None)
    if engine is None or not hasattr(engine, "_fused_calls"):
        case.note(f"the small-system kernel alone: the plan runs {getattr(engine, 'description', '?')}")
        s.free()
        return
    f = cp.empty_like(ca)  # the factors, in the plan's layout (a row-major a: factorized through its transpose)
    x = cp.empty((cb.shape[0], cb.shape[2], cb.shape[1]), cb.dtype) if cb.ndim == 3 else cp.empty_like(cb)
    stream = cp.cuda.get_current_stream()
    engine.set_stream(stream.ptr)
    engine.source, engine.b_source = ca.data.ptr, cb.data.ptr  # (what the executor sets before each call)
    [(launch, args)] = engine._fused_calls(f.data.ptr, x.data.ptr)
    launch(*args)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(50):
        launch(*args)
    end.record(stream)
    end.synchronize()
    us = cp.cuda.get_elapsed_time(start, end) * 1e3 / 50
    case.value("small-system kernel alone (factorize + check + solve, 16,384 systems)", us, "us",
               bytes_moved=int(2 * f.nbytes + 2 * x.nbytes))  # (a read, the factors written; b read, x written)
    mine = case.stats("cumath DirectSolver factorize+solve (torch)") or case.stats(
        "cumath DirectSolver factorize+solve (cupy)")
    if mine is not None:
        case.note(f"the kernel is {us / (mine.median * 1e6):.1%} of cumath's factorize+solve median "
                  f"({2 * f.nbytes / 2 ** 20:.0f} MiB of a read and written in {us:.1f} us)")
    s.free()


def _pivot_check_alone(case, a) -> None:
    """The batched engine's check of its factors on its own: the narrow pivot kernel (every entry of each factor
    read for NaN and inf, the diagonal's magnitudes reduced, the verdict judged on the GPU) on a's 16,384
    matrices, timed with CUDA events over 50 launches, against the factorize+solve row."""
    cp = optional("cupy")
    if cp is None:
        case.note("the pivot check alone: needs CuPy")
        return
    from cumath.linalg._solver._backends import _pivots

    count, n = a.shape[0], a.shape[1]
    kernel = _pivots.pivot_kernel("float32", cp.cuda.Device().id)
    if kernel is None:
        case.note("the pivot check alone: its kernel did not build (see the log)")
        return
    f = cp.asarray(np.swapaxes(a, 1, 2).copy())  # column-major factors
    ptrs = cp.asarray(np.array([f.data.ptr + i * n * n * 4 for i in range(count)], np.uint64))
    info, out, flagged = cp.zeros(count, cp.int32), cp.zeros((count, 2)), cp.zeros(1, cp.uint64)
    stream = cp.cuda.get_current_stream()
    grid = -(-count // (_pivots.NARROW_BLOCK // 32))

    def launch(epoch):
        kernel.launch(grid, _pivots.NARROW_BLOCK, 0, stream.ptr, ptrs.data.ptr, n, n, count, info.data.ptr, 0, 1,
                      float(np.finfo(np.float32).eps), epoch, out.data.ptr, flagged.data.ptr, _pivots.PART["lu"])

    launch(1)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for k in range(50):
        launch(2 + k)
    end.record(stream)
    end.synchronize()
    us = cp.cuda.get_elapsed_time(start, end) * 1e3 / 50
    case.value("pivot check alone (narrow kernel, every entry of 16,384 factors)", us, "us",
               bytes_read=int(f.nbytes))
    mine = case.stats("cumath DirectSolver factorize+solve (torch)") or case.stats(
        "cumath DirectSolver factorize+solve (cupy)")
    if mine is not None:
        case.note(f"the pivot check is {us / (mine.median * 1e6):.1%} of cumath's factorize+solve median "
                  f"({f.nbytes / 2 ** 20:.0f} MiB read in {us:.1f} us)")


@bench.case("dense/gpu-batch-method", "GPU, one cuSOLVER call per system ('loop') against the batched routines "
                                      "('batched'), per order and matrix type (the table of "
                                      "_traits.BATCHED_UP_TO)", gpu=True)
def gpu_batch_method(case):
    torch = optional("torch")
    cp = optional("cupy")
    if cp is None and (torch is None or not torch.cuda.is_available()):
        raise Skip("needs CuPy or a CUDA PyTorch")
    to_gpu = cp.asarray if cp is not None else (lambda v: torch.from_numpy(v).cuda())
    orders = (8, 32, 64, 128) if case.quick else (8, 16, 32, 48, 64, 96, 128, 192, 256)
    for kind in ("general", "spd"):
        for n in orders:
            count = max(16, min(8192, int(4e8 / n ** 3)))
            a = well_conditioned(np, (count, n, n), np.float32)
            if kind == "spd":
                a = a @ np.swapaxes(a, -1, -2)
            ga, gb = to_gpu(a), to_gpu(RNG.standard_normal((count, n, 1)).astype(np.float32))
            fns, plans = {}, []
            for method in ("loop", "batched"):
                s, run = stateful(ga, gb, options={"matrix_type": kind, "batch_method": method})
                plans.append(s)
                fns[f"{kind} n={n} x{count} {method}"] = run
            case.time(fns, sync=device_sync(), rounds=case.rounds(3, 2), target=0.05)
            case.ratio(f"{kind} n={n} x{count} batched", f"{kind} n={n} x{count} loop")
            for p in plans:
                p.free()
    case.note("the cases where 'batched' / 'loop' < 1 are where DirectSolverOptions(batch_method='auto') should pick "
              "'batched' (cumath.linalg._solver._traits.BATCHED_UP_TO: the largest such order per matrix type)")


# --------------------------------------------------------------------------------------------- sparse
def _sparse_hook():
    """The sparse direct solver's cases live in benchmarks/solvers_sparse.py (written separately): when present,
    its ``register(bench)`` adds them (as group ``sparse``) to this script."""
    if not os.path.exists(os.path.join(HERE, "solvers_sparse.py")):
        return
    module = importlib.import_module("solvers_sparse")
    register = getattr(module, "register", None)
    if register is not None:
        register(bench)


_sparse_hook()

if __name__ == "__main__":
    sys.exit(bench.main())
