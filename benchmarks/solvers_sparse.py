"""Sparse direct solver benchmark: cumath.sparse.advanced against its peers, in one process, on the same data.

Group ``sparse`` (``--list`` shows every case):
  cpu-poisson-90k   2-D Poisson, 300 x 300 grid (5-point Laplacian, 90,000 unknowns, float64, as a general
                    matrix): a fresh solve (plan + factorize + solve, the plan cache off) on cumath's default CPU
                    engine and on SuperLU, against pypardiso.spsolve (new values every call, so it factorizes),
                    scipy.sparse.linalg.spsolve and splu; the stateless call with new values of the same pattern
                    (the cached analysis refactorized); the first call split into plan / factorize / solve.
  gpu-poisson-90k   the same system on the GPU (cuDSS) with CuPy operands: the first call in a fresh process,
                    a fresh call split into plan / factorize / solve, the stateless re-solve with new values;
                    NumPy operands staged to the GPU; cupyx.scipy.sparse.linalg.spsolve; nvmath-python's
                    direct_solver where importable (stateless, and split into plan / factorize / solve, with
                    its multithreading_lib naming cuDSS's libcudss_mtlayer_gomp.so.0 and without); which
                    threading layer cuDSS loaded for cumath and with how many host threads; where a fresh
                    solver's host time goes, step by step (DirectSolver.timings: handle, config and data
                    objects, threading layer, matrix objects, each cudssExecute, the status reads). nvmath-python
                    needs cuDSS 0.x (libcudss.so.0) beside cuDSS 1.0 and LD_LIBRARY_PATH naming its folder;
                    without it the case says why and has no nvmath-python rows.
  gpu-poisson-1m    1000 x 1000 grid (1,000,000 unknowns): first call split (cumath and nvmath-python),
                    stateless re-solve.
  gpu-plan-settings fresh solves of the 90k system under every planning setting of PLAN_VARIANTS (each reordering,
                    nested-dissection levels and imbalance, matching and pivoting off, superpanels, host threads,
                    deterministic mode): one row each with plan / factorize / solve (best of 3, medians beside),
                    the factors' fill (lu_nnz), the residual, and the analysis split into cuDSS's REORDERING and
                    SYMBOLIC_FACTORIZATION phases; then each against cuDSS's defaults, the settings that plan in
                    <= 0.90x the time with factorize and solve <= 1.05x, and the PLAN_DEFAULTS line that would make
                    the best of them cumath's default for that size class.
  gpu-plan-settings-1m  (optional) the same table for the 1M system (NONE left out: its fill takes minutes);
                    CUMATH_BENCH_PLAN_ROWS (a regular expression) runs only the rows it finds, and the baseline.
  gpu-first-call-1m the first calls of new processes on the 1M system alone; CUMATH_BENCH_PLAN_DEFAULTS (as
                    PLAN_DEFAULTS, ConfigParam names as strings) tries a candidate default there first.
  cpu-pardiso-iparm (optional) fresh PARDISO solves of that system with other iparm settings (parallel METIS,
                    matching and scaling off, classic factorization, in-core), against cumath's defaults.
  gpu-reorderings   (optional; ``--reorderings``) every cuDSS reordering on the 1M system: plan, factorize and
                    solve times, the factors' fill (lu_nnz) and cuDSS's memory estimates.

    python benchmarks/solvers_sparse.py                       # every default case; GPU cases skip without a GPU
    python benchmarks/solvers_sparse.py --case sparse/cpu-poisson-90k --json sparse.json
    python benchmarks/solvers_sparse.py --reorderings

``register(bench)`` adds the cases to another script's Bench (benchmarks/solvers.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Bench, device_sync, need, optional  # noqa: E402

__all__ = ["register", "poisson", "main"]

SETTLE = 0.2  # MKL's and OpenBLAS's idle workers spin a while after a call (benchmarks/NOTES.md)


def poisson(m: int, dtype="float64"):
    """The 5-point Laplacian of an m x m grid as a SciPy CSR array (int32 indices, sorted)."""
    sp = need("scipy.sparse")
    t = sp.diags_array([-np.ones(m - 1), 4.0 * np.ones(m), -np.ones(m - 1)], offsets=[-1, 0, 1])
    s = sp.diags_array([-np.ones(m - 1), -np.ones(m - 1)], offsets=[-1, 1])
    a = sp.csr_array(sp.kron(sp.eye_array(m), t) + sp.kron(s, sp.eye_array(m))).astype(dtype)
    a.sort_indices()
    a.indptr, a.indices = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    return a


def _variants(a, k=2):
    """``k`` matrices with ``a``'s pattern and other values (the same arrays of indices): variable coefficients,
    each off-diagonal entry scaled by a random factor in [1, 1.05), the diagonal the sum of its row's off-diagonal
    magnitudes plus one per missing neighbour (Dirichlet couplings), times 1.001 (a small reaction term). Each
    row stays diagonally dominant, as the constant-coefficient operator's are, so cumath's matching rule sees
    these values as it sees ``poisson``'s."""
    sp = need("scipy.sparse")
    rng = np.random.default_rng(3)
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    off = a.indices != rows
    neighbours = np.bincount(rows[off], minlength=a.shape[0])
    out = []
    for _ in range(k):
        data = a.data * (1 + 0.05 * rng.random(a.nnz))
        row_sums = np.bincount(rows[off], weights=np.abs(data[off]), minlength=a.shape[0])
        data[~off] = 1.001 * (row_sums + (4 - neighbours))[rows[~off]]
        out.append(sp.csr_array((data.astype(a.dtype), a.indices, a.indptr), shape=a.shape))
    return out


class _Cycle:
    def __init__(self, items):
        self.items, self.i = items, 0

    def __call__(self):
        self.i = (self.i + 1) % len(self.items)
        return self.items[self.i]


def _timed_phases(solver, sync):
    """((plan, factorize, solve) seconds, factorization_info, x) of one solver, each phase waited for."""
    sync()
    t0 = time.perf_counter()
    solver.plan()
    sync()
    t1 = time.perf_counter()
    f = solver.factorize()
    sync()
    t2 = time.perf_counter()
    x = solver.solve()
    sync()
    t3 = time.perf_counter()
    return (t1 - t0, t2 - t1, t3 - t2), f, x


def _split(case, make_solver, sync, prefix: str, repeats: int = 3):
    """Rows of the plan / factorize / solve times of fresh solvers (best of ``repeats``)."""
    best = {"plan": [], "factorize": [], "solve": [], "total": []}
    info = None
    for _ in range(repeats):
        solver = make_solver()
        try:
            (tp, tf, ts), f, _ = _timed_phases(solver, sync)
            plans = getattr(solver._executor, "plans", None)
            two_level = f", two-level factorization {'on' if plans[0].iparm[23] == 10 else 'off'}" if (
                plans and hasattr(plans[0], "iparm")) else ""
            info = (f.lu_nnz, solver.engine + two_level)
        finally:
            solver.free()
        for key, dt in (("plan", tp), ("factorize", tf), ("solve", ts), ("total", tp + tf + ts)):
            best[key].append(dt)
    for key, values in best.items():
        case.value(f"{prefix} {key} (best of {repeats})", min(values) * 1e3, "ms",
                   median_ms=float(np.median(values)) * 1e3)
    if info:
        case.note(f"{prefix}: engine {info[1]}, factors' stored entries {info[0]:,}")


def _breakdown(case, make_solver, prefix: str, repeats: int = 3) -> None:
    """Rows of where a fresh cumath solver's host time goes, step by step (DirectSolver.timings, taken with the
    solver's logger at DEBUG, so that each step waits for the stream: GPU work is charged to the step that
    queued it), the median of ``repeats`` fresh solvers per step. The totals here include those waits; the
    plan / factorize / solve rows above do not."""
    import logging

    log = logging.getLogger("cumath.sparse.advanced")
    level = log.level
    runs = []
    log.setLevel(logging.DEBUG)
    try:
        for _ in range(repeats):
            solver = make_solver()
            try:
                solver.plan()
                solver.factorize()
                solver.solve()
                runs.append(solver.timings)
            finally:
                solver.free()
    finally:
        log.setLevel(level)
    if not runs or not runs[0]:
        case.note(f"{prefix}: no step timings (a solver without DirectSolver.timings)")
        return
    for phase, steps in runs[0].items():
        for step in steps:
            values = [r.get(phase, {}).get(step, 0.0) for r in runs]
            case.value(f"{prefix} {phase}: {step} (median of {repeats})", float(np.median(values)), "ms",
                       min_ms=min(values), max_ms=max(values))


# ------------------------------------------------------------------------------------------------ CPU
def cpu_poisson(case, m=300):
    splinalg = need("scipy.sparse.linalg")
    import cumath.sparse.advanced as S
    from cumath.config import plan_cache

    a = poisson(m)
    n = a.shape[0]
    b = np.random.default_rng(0).standard_normal(n)
    variants = _variants(a)
    values = _Cycle(variants)
    case.note(f"2-D Poisson {m} x {m}: n = {n:,}, nnz = {a.nnz:,}; {os.cpu_count()} cores")

    def fresh(engine=None):
        opts = None if engine is None else {"cpu_engine": engine}
        mine = _Cycle(variants)

        def run():
            enabled, plan_cache.enabled = plan_cache.enabled, False
            try:
                return S.direct_solver(mine(), b, options=opts)
            finally:
                plan_cache.enabled = enabled
        return run

    # every contender alternates between two value sets of its own, so that none can skip a factorization
    again = _Cycle(variants)
    fns = {"cumath fresh": fresh(), "cumath same pattern, new values": lambda: S.direct_solver(again(), b),
           "cumath fresh (superlu)": fresh("superlu")}
    pyp = optional("pypardiso")
    if pyp is not None:
        solver, theirs = pyp.PyPardisoSolver(), _Cycle(variants)
        fns["pypardiso.spsolve"] = lambda: pyp.spsolve(theirs(), b, solver=solver)
    csc = [v.tocsc() for v in variants]
    c1, c2 = _Cycle(csc), _Cycle(csc)
    fns["scipy spsolve"] = lambda: splinalg.spsolve(c1(), b)
    fns["scipy splu + solve"] = lambda: splinalg.splu(c2()).solve(b)
    x = S.direct_solver(a, b)
    case.note(f"cumath's residual max|a x - b| = {np.abs(a @ x - b).max():.2e}")
    case.note(_gnu_openmp_note())
    case.time(fns, rounds=case.rounds(5, 2), number=1, settle=SETTLE)
    case.ratio("cumath fresh", "pypardiso.spsolve", "fresh solve / pypardiso.spsolve")
    case.ratio("cumath fresh", "scipy spsolve", "fresh solve / scipy spsolve")
    case.ratio("cumath same pattern, new values", "cumath fresh", "new values (stateless) / fresh solve")
    _split(case, lambda: S.DirectSolver(values(), b), lambda: None, "cumath first call")
    _breakdown(case, lambda: S.DirectSolver(values(), b), "cumath steps")


def _gnu_openmp_note() -> str:
    """Whether GNU OpenMP is mapped into this process (PyTorch brings it: an earlier case that ran a PyTorch peer,
    or a GPU machine's harness counting devices through it): cumath's PARDISO plans then use the classic
    factorization, not the two-level one."""
    try:
        with open("/proc/self/maps") as f:
            found = sorted({line.split()[-1] for line in f if "libgomp" in line})
    except OSError:
        return "GNU OpenMP: unknown (/proc/self/maps unreadable)"
    if not found:
        return "GNU OpenMP not loaded: cumath's PARDISO plans of this order use the two-level factorization"
    return f"GNU OpenMP loaded ({found[0]}): cumath's PARDISO plans use the classic factorization"


#: PARDISO settings tried by sparse/cpu-pardiso-iparm: label -> {iparm index: value} over cumath's defaults
IPARM_VARIANTS = {
    "cumath's defaults": {},
    "parallel METIS nested dissection (iparm[1]=3)": {1: 3},
    "METIS nested dissection (iparm[1]=2)": {1: 2},
    "matching and scaling off (iparm[10]=iparm[12]=0)": {10: 0, 12: 0},
    "iparm[1]=3, matching and scaling off": {1: 3, 10: 0, 12: 0},
    "classic factorization (iparm[23]=0)": {23: 0},
    "in-core (iparm[59]=0)": {59: 0},
}


def cpu_pardiso_iparm(case, m=300):
    """Fresh PARDISO solves of the Poisson system with each of IPARM_VARIANTS (in A B B A rounds)."""
    import cumath.sparse.advanced as S
    from cumath.config import plan_cache
    from cumath.sparse.advanced._backends import pardiso as backend

    a = poisson(m)
    b = np.random.default_rng(0).standard_normal(a.shape[0])
    variants = _variants(a)
    original = backend.PardisoPlan.__init__

    def runner(changes):
        mine = _Cycle(variants)

        def init(self, *args, **kwargs):
            original(self, *args, **kwargs)
            for k, v in changes.items():
                self.iparm[k] = v
            self.defaults = self.iparm.copy()

        def run():
            enabled, plan_cache.enabled = plan_cache.enabled, False
            backend.PardisoPlan.__init__ = init
            try:
                return S.direct_solver(mine(), b, options={"cpu_engine": "pardiso"})
            finally:
                backend.PardisoPlan.__init__ = original
                plan_cache.enabled = enabled
        return run

    fns = {label: runner(changes) for label, changes in IPARM_VARIANTS.items()}
    for label, fn in fns.items():
        x = fn()
        case.note(f"{label}: residual max|a x - b| = {np.abs(variants[1] @ x - b).max():.1e}")  # its first matrix
    case.time(fns, rounds=case.rounds(5, 2), number=1, settle=SETTLE)
    for label in list(fns)[1:]:
        case.ratio(label, "cumath's defaults")


# ------------------------------------------------------------------------------------------------ GPU
_FIRST_CALL = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
    import numpy as np, cupy as cp, cupyx.scipy.sparse as csp
    from solvers_sparse import poisson
    a = csp.csr_matrix(poisson(int(sys.argv[3])))
    b = cp.asarray(np.random.default_rng(0).standard_normal(a.shape[0]))
    cp.cuda.Device().synchronize()
    import cumath.sparse.advanced as S
    import ast, os
    if os.environ.get("CUMATH_BENCH_PLAN_DEFAULTS"):  # a candidate planning default, tried before adopting it
        from cumath._bindings import cudss as C
        from cumath.sparse.advanced._backends import cudss as backend
        given = ast.literal_eval(os.environ["CUMATH_BENCH_PLAN_DEFAULTS"])
        backend.PLAN_DEFAULTS = tuple((n, {getattr(C.ConfigParam, k): v for k, v in d.items()}) for n, d in given)
    t0 = time.perf_counter()
    x = S.direct_solver(a, b)
    cp.cuda.Device().synchronize()
    t1 = time.perf_counter()
    a.data *= 1.01
    x = S.direct_solver(a, b)
    cp.cuda.Device().synchronize()
    t2 = time.perf_counter()
    print((t1 - t0) * 1e3, (t2 - t1) * 1e3)
""")


def _first_call_in_a_fresh_process(case, m: int):
    """The first and second stateless calls of new processes: with an empty cache folder (cuDSS compiles its
    run-time kernels), then with the kernels that process cached."""
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, CUMATH_CACHE_DIR=tempfile.mkdtemp(prefix="cumath-bench-cudss-"))
    env.pop("CUDSS_JIT_CACHE_DIR", None)
    for label in ("empty kernel cache", "kernels cached"):
        out = subprocess.run([sys.executable, "-c", _FIRST_CALL, root, os.path.dirname(os.path.abspath(__file__)),
                              str(m)], capture_output=True, text=True, timeout=600, env=env)
        if out.returncode:
            case.note(f"first call in a fresh process failed: {out.stderr.strip().splitlines()[-1:]}")
            return
        first, second = map(float, out.stdout.split()[-2:])
        case.value(f"cumath first call, new process, {label} (load, plan, factorize, solve)", first, "ms")
        case.value(f"cumath second call, same process, {label} (new values)", second, "ms")


def _gpu_poisson(case, m: int, peers: bool):
    cp = need("cupy")
    csp = need("cupyx.scipy.sparse")
    import cumath.sparse.advanced as S

    a_host = poisson(m)
    n = a_host.shape[0]
    case.note(f"2-D Poisson {m} x {m}: n = {n:,}, nnz = {a_host.nnz:,}")
    _first_call_in_a_fresh_process(case, m)
    a = csp.csr_matrix(a_host)
    b = cp.asarray(np.random.default_rng(0).standard_normal(n))
    sync = device_sync()
    mats = [csp.csr_matrix(v) for v in _variants(a_host)]
    values = _Cycle(mats)
    x = S.direct_solver(a, b)
    case.note(f"cumath's residual max|a x - b| = {float(cp.abs(a @ x - b).max()):.2e}")
    _threading_note(case, a, b)
    _split(case, lambda: S.DirectSolver(values(), b), sync, "cumath fresh call")
    _breakdown(case, lambda: S.DirectSolver(values(), b), "cumath steps")
    nvmath, why = _nvmath_sparse()
    if nvmath is None:
        case.note(f"no nvmath-python rows: {why}")
    else:
        _nvmath_split(case, nvmath, values, b, sync)
        _value_ratio(case, "cumath fresh call total (best of 3)", "nvmath-python, threading layer named total (best "
                     "of 3)", "fresh call total: cumath / nvmath-python with its threading layer named")
        for phase in ("plan", "factorize", "solve"):
            _value_ratio(case, f"cumath fresh call {phase} (best of 3)", f"nvmath-python, threading layer named "
                         f"{phase} (best of 3)", f"{phase}: cumath / nvmath-python with its threading layer named")
    _targets(case, m)
    fns = {"cumath same pattern, new values (CuPy)": lambda: S.direct_solver(values(), b)}
    host_values = _Cycle(_variants(a_host))
    b_host = cp.asnumpy(b)
    fns["cumath same pattern, new values (NumPy, staged)"] = lambda: S.direct_solver(host_values(), b_host,
                                                                                       execution="cuda")
    if peers:
        cspl = optional("cupyx.scipy.sparse.linalg")
        if cspl is not None:
            fns["cupyx spsolve"] = lambda: cspl.spsolve(values(), b)
        layer = _nvmath_mt_layer()
        if nvmath is not None:
            fns["nvmath-python direct_solver"] = lambda: nvmath.direct_solver(values(), b)
            if layer:
                mt = nvmath.DirectSolverOptions(multithreading_lib=layer)
                fns["nvmath-python direct_solver, threading layer"] = lambda: nvmath.direct_solver(values(), b,
                                                                                                     options=mt)
        splinalg = optional("scipy.sparse.linalg")
        if splinalg is not None:
            cpu_values = _Cycle([v.tocsc() for v in _variants(a_host)])
            fns["scipy spsolve (CPU)"] = lambda: splinalg.spsolve(cpu_values(), b_host)
    case.time(fns, sync=sync, number=1, rounds=case.rounds(5, 2))
    if peers:
        case.ratio("cumath same pattern, new values (CuPy)", "cupyx spsolve")
        case.ratio("cumath same pattern, new values (CuPy)", "nvmath-python direct_solver")
        case.ratio("cumath same pattern, new values (CuPy)", "nvmath-python direct_solver, threading layer")


#: the figures cumath aims at (ms) per grid side: fresh call total, first call of a new process (kernels cached)
TARGETS = {300: {"cumath fresh call plan (best of 3)": 130.0, "cumath fresh call total (best of 3)": 130.0},
           1000: {"cumath first call, new process, kernels cached (load, plan, factorize, solve)": 1400.0}}


def _targets(case, m: int) -> None:
    """Notes that say whether the rows measured so far meet TARGETS (the stateless re-solve's 10 ms is in the
    timed table below)."""
    got = {r["contender"]: r.get("value") for r in case.rows}
    for name, limit in TARGETS.get(m, {}).items():
        v = got.get(name)
        if isinstance(v, float):
            case.note(f"target: {name} <= {limit:.0f} ms: {v:.1f} ms ({'met' if v <= limit else 'NOT met'})")
    case.note("target: 'cumath same pattern, new values (CuPy)' <= 10 ms median (table below)")


def _value_ratio(case, num: str, den: str, label: str) -> None:
    """A row with the ratio of two single-value rows (skipped when either is missing)."""
    got = {r["contender"]: r.get("value") for r in case.rows}
    a, b = got.get(num), got.get(den)
    if isinstance(a, float) and isinstance(b, float) and b > 0:
        case.value(label, a / b, "x")


#: planning settings tried by sparse/gpu-plan-settings(-1m): label -> (plan_config fields, DirectSolverOptions
#: fields). Every reordering cuDSS 1.0 has (cudss.h: CUDSS_REORDERING_ALG_*; there is no device-side reordering),
#: nested-dissection levels and imbalance, host threads, matching and pivoting off (cuDSS 1.0's matching default is
#: AUTO; 0.8, under nvmath-python, had none), superpanels, deterministic mode. The baseline names matching AUTO
#: (cuDSS's own choice): with no matching named, cumath analyses a dominant matrix (these Poisson systems) without.
PLAN_VARIANTS = {
    "cuDSS's own defaults": ({"matching_algorithm": "auto"}, {}),
    "cumath's matching rule (none for a dominant a)": ({}, {}),
    "reordering NESTED_DISSECTION": ({"reordering_algorithm": "nested_dissection"}, {}),
    "reordering AMD": ({"reordering_algorithm": "amd"}, {}),
    "reordering COLAMD (global pivoting)": ({"reordering_algorithm": "colamd"}, {}),
    "reordering BTF_COLAMD (global pivoting)": ({"reordering_algorithm": "btf_colamd"}, {}),
    "reordering NONE (natural order)": ({"reordering_algorithm": "none"}, {}),
    "matching off": ({"matching_algorithm": "none"}, {}),
    "matching off, pivoting off": ({"matching_algorithm": "none", "pivot_type": "none"}, {}),
    "pivoting off": ({"pivot_type": "none"}, {}),
    "nd_min_levels=1": ({"nd_min_levels": 1}, {}),
    "nd_min_levels=4": ({"nd_min_levels": 4}, {}),
    "ND_UBFACTOR=1": ({}, {"cudss_config": {"nd_ubfactor": 1}}),
    "ND_UBFACTOR=2": ({}, {"cudss_config": {"nd_ubfactor": 2}}),
    "ND_UBFACTOR=3": ({}, {"cudss_config": {"nd_ubfactor": 3}}),
    "ND_UBFACTOR=5": ({}, {"cudss_config": {"nd_ubfactor": 5}}),
    "ND_UBFACTOR=30": ({}, {"cudss_config": {"nd_ubfactor": 30}}),
    "use_superpanels=False": ({"use_superpanels": False}, {}),
    "matching off, use_superpanels=False": ({"matching_algorithm": "none", "use_superpanels": False}, {}),
    "host_nthreads=1": ({"host_nthreads": 1}, {}),
    "host_nthreads=4": ({"host_nthreads": 4}, {}),
    "host_nthreads=8": ({"host_nthreads": 8}, {}),
    "host threads = os.cpu_count()": ({"host_nthreads": os.cpu_count() or 1}, {}),
    "DETERMINISTIC_MODE=1": ({}, {"cudss_config": {"deterministic_mode": 1}}),
}
#: variants left out of the 1M table (their factors do not fit the time: NONE took 26 s to plan and 23 s to
#: factorize the 1M system, benchmarks/results/2026-12-02-cudss-reorderings-gpu.json)
SKIP_1M = {"reordering NONE (natural order)"}
#: a setting becomes a candidate default when it plans in at most PLAN_GAIN of the baseline's time with factorize
#: and solve at most KEEP times the baseline's (the task's ~1.05x)
PLAN_GAIN, KEEP = 0.90, 1.05


def _timed_run(make, sync, split: bool):
    """One fresh solver: (plan, factorize, solve) seconds, lu_nnz, max residual, plan steps (split: the analysis
    as REORDERING + SYMBOLIC_FACTORIZATION, timed apart; DEBUG on so that each step waits for the stream)."""
    import logging

    from cumath.sparse.advanced._backends import cudss as backend
    from cumath._bindings import cudss

    log = logging.getLogger("cumath.sparse.advanced")
    phases, level = backend.ANALYSIS_PHASES, log.level
    if split:
        backend.ANALYSIS_PHASES = (cudss.Phase.REORDERING, cudss.Phase.SYMBOLIC_FACTORIZATION)
        log.setLevel(logging.DEBUG)
    solver = make()
    try:
        times, f, x = _timed_phases(solver, sync)
        steps = solver.timings.get("plan", {})
        a, b = solver._ops["a"].obj, solver._ops["b"].obj
        res = float(abs(a @ x - b).max() / abs(b).max())
        return times, int(f.lu_nnz), res, steps
    finally:
        solver.free()
        backend.ANALYSIS_PHASES = phases
        log.setLevel(level)


def _plan_table(case, m: int, skip=()):
    """One row per PLAN_VARIANTS entry on the m x m Poisson system: plan / factorize / solve (best of 3 fresh
    solvers, medians beside), the factors' fill, the residual, and from one more fresh solver with the analysis
    split in two, the reordering and the symbolic factorization apart. Then the settings that qualify as a
    default of cumath's for this size class, and the PLAN_DEFAULTS line that would make the best one so."""
    cp = need("cupy")
    csp = need("cupyx.scipy.sparse")
    import cumath.sparse.advanced as S
    from cumath.sparse.advanced._backends import cudss as backend

    a_host = poisson(m)
    n = a_host.shape[0]
    values = _Cycle([csp.csr_matrix(v) for v in _variants(a_host)])
    b = cp.asarray(np.random.default_rng(0).standard_normal(n))
    sync = device_sync()
    S.direct_solver(values(), b)  # cuDSS's run-time kernels compiled or loaded, the shared handle made
    case.note(f"2-D Poisson {m} x {m}: n = {n:,}, nnz = {a_host.nnz:,}; cumath's PLAN_DEFAULTS now: "
              f"{backend.PLAN_DEFAULTS or 'none (cuDSS own choices)'}")

    def maker(config, options):
        def make():
            s = S.DirectSolver(values(), b, options=options or None)
            for name, value in config.items():
                setattr(s.plan_config, name, value)
            return s
        return make

    saved, backend.PLAN_DEFAULTS = backend.PLAN_DEFAULTS, ()  # every variant over cuDSS's own defaults
    table = {}
    only = os.environ.get("CUMATH_BENCH_PLAN_ROWS")  # a regular expression: the rows to run (the baseline always)
    try:
        for label, (config, options) in PLAN_VARIANTS.items():
            if label in skip:
                case.note(f"{label}: not run at this size (see SKIP_1M)")
                continue
            if only and label != "cuDSS's own defaults" and not re.search(only, label):
                continue
            try:
                runs = [_timed_run(maker(config, options), sync, split=False) for _ in range(3)]
                _, _, _, steps = _timed_run(maker(config, options), sync, split=True)
            except Exception as exc:  # noqa: BLE001 - a setting cuDSS refuses is a row too
                case.value(label, f"failed: {type(exc).__name__}: {exc}")
                continue
            times = np.array([r[0] for r in runs]) * 1e3
            best, med = times.min(axis=0), np.median(times, axis=0)
            row = {"plan_ms": best[0], "factorize_ms": best[1], "solve_ms": best[2], "plan_median_ms": med[0],
                   "factorize_median_ms": med[1], "solve_median_ms": med[2], "lu_nnz": runs[0][1],
                   "residual": max(r[2] for r in runs),
                   "reordering_ms": steps.get("cudssExecute(REORDERING)"),
                   "symbolic_ms": steps.get("cudssExecute(SYMBOLIC_FACTORIZATION)")}
            table[label] = row
            case.value(f"{label}: plan", row["plan_ms"], "ms", **{k: v for k, v in row.items() if k != "plan_ms"})
    finally:
        backend.PLAN_DEFAULTS = saved
    base = table.get("cuDSS's own defaults")
    if base is None:
        return
    fit = []
    for label, row in table.items():
        if label == "cuDSS's own defaults" or row["residual"] > 1e-8:
            continue
        p, f, s_ = (row[k] / base[k] for k in ("plan_ms", "factorize_ms", "solve_ms"))
        case.value(f"{label}: plan / factorize / solve vs cuDSS's defaults", p, "x", factorize_x=f, solve_x=s_,
                   fill_x=row["lu_nnz"] / base["lu_nnz"])
        if p <= PLAN_GAIN and f <= KEEP and s_ <= KEEP:
            fit.append((row["plan_ms"], label))
    if not fit:
        case.note(f"order {n:,}: no setting plans in <= {PLAN_GAIN:.2f}x cuDSS's default time with factorize and "
                  f"solve <= {KEEP:.2f}x: keep PLAN_DEFAULTS as it is for this size class")
        return
    fit.sort()
    case.note(f"order {n:,}: qualifying settings (plan <= {PLAN_GAIN:.2f}x, factorize and solve <= {KEEP:.2f}x), "
              f"fastest first: {', '.join(f'{lab} ({ms:.1f} ms)' for ms, lab in fit)}")
    config, options = PLAN_VARIANTS[fit[0][1]]
    entry = dict(config, **{k.upper(): v for k, v in (options.get("cudss_config") or {}).items()})
    case.note(f"to make it cumath's default from this order up: PLAN_DEFAULTS = ((<lowest order>, {entry!r}),) in "
              f"cumath/sparse/advanced/_backends/cudss.py (cudss_config names as cudss.ConfigParam members)")


def gpu_plan_settings(case, m=300):
    """The planning-settings table of the 90k Poisson system (see _plan_table)."""
    _plan_table(case, m)


def gpu_plan_settings_1m(case, m=1000):
    """The planning-settings table of the 1M Poisson system (see _plan_table; SKIP_1M left out)."""
    _plan_table(case, m, skip=SKIP_1M)


def _threading_note(case, a, b) -> None:
    """Say which threading layer cuDSS loaded and with how many host threads."""
    import cumath.sparse.advanced as S
    from cumath._bindings import cudss

    with S.DirectSolver(a, b) as s:
        s.plan()
        solver = s._executor.solver
        n = solver.config_get(cudss.ConfigParam.HOST_NTHREADS)
        case.note(f"cuDSS threading layer: {solver.threading or 'none (one core)'}, host threads {n}, "
                  f"cores this process may use {len(os.sched_getaffinity(0))}")


def _nvmath_mt_layer() -> str | None:
    """cuDSS 0.x's threading layer (the cuDSS nvmath-python 1.0 loads), from the nvidia/*/lib folders."""
    import glob

    for entry in sys.path + os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        for pattern in ("nvidia/cu13/lib/libcudss_mtlayer_gomp.so.0*", "nvidia/*/lib/libcudss_mtlayer_gomp.so.0*",
                        "libcudss_mtlayer_gomp.so.0*"):
            found = sorted(glob.glob(os.path.join(entry, pattern)))
            if found:
                return found[0]
    return None


def _nvmath_sparse():
    """(nvmath.sparse.advanced, None) when nvmath-python's sparse direct solver runs here, else (None, why).
    nvmath-python 1.0 takes cuDSS 0.x only (``libcudss.so.0``, wheel nvidia-cudss-cu13==0.8.0.10), which may sit
    beside cumath's cuDSS 1.0 (``libcudss.so.1``) in one nvidia/cu13/lib folder; nvmath-python finds it through
    cuda-pathfinder, which does not look in ``pip install --target`` folders on PYTHONPATH: LD_LIBRARY_PATH must
    name that folder. A 3 x 3 system solved once says whether it works."""
    import ctypes

    nvmath = optional("nvmath.sparse.advanced")
    if nvmath is None:
        return None, "nvmath-python (nvmath.sparse.advanced) is not importable"
    try:
        ctypes.CDLL("libcudss.so.0")
    except OSError as exc:
        return None, (f"cuDSS 0.x (libcudss.so.0, which nvmath-python 1.0 needs) cannot be loaded ({exc}): install "
                      f"nvidia-cudss-cu13==0.8.0.10 beside cuDSS 1.0 and set LD_LIBRARY_PATH to the nvidia/cu13/lib "
                      f"folder that holds it (LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH', '')!r})")
    try:
        cp = need("cupy")
        csp = need("cupyx.scipy.sparse")
        a = csp.csr_matrix(cp.asarray([[4.0, 1, 0], [1, 3, 0], [0, 0, 2]]))
        x = nvmath.direct_solver(a, cp.asarray([1.0, 2, 3]))
        if float(cp.abs(a @ x - cp.asarray([1.0, 2, 3])).max()) > 1e-12:
            return None, "nvmath-python's direct_solver gave a wrong solution of a 3 x 3 system"
    except Exception as exc:  # noqa: BLE001 - a peer that does not run is a note, not a failed benchmark
        return None, f"nvmath-python's direct_solver does not run here ({type(exc).__name__}: {exc})"
    return nvmath, None


def _nvmath_split(case, nvmath, values, b, sync) -> None:
    """nvmath-python's stateful solver, plan / factorize / solve, with and without cuDSS's threading layer."""
    layer = _nvmath_mt_layer()
    for label, opts in (("nvmath-python, threading layer named", {"multithreading_lib": layer} if layer else None),
                        ("nvmath-python, default", {})):
        if opts is None:
            case.note("cuDSS 0.x's libcudss_mtlayer_gomp.so.0 not found: no nvmath-python row with the layer")
            continue
        try:
            _split(case, lambda: _NvmathSolver(nvmath, values(), b, opts), sync, label)
        except Exception as exc:  # noqa: BLE001 - a peer that fails is a note, not a failed benchmark
            case.note(f"{label} failed: {type(exc).__name__}: {exc}")
    if layer:
        case.note(f"nvmath-python's multithreading_lib: {layer}")


class _NvmathSolver:
    """nvmath-python's DirectSolver presented as _split() wants it (plan/factorize/solve/free, lu_nnz, engine)."""

    engine = "cuDSS 0.x (nvmath-python)"

    def __init__(self, nvmath, a, b, opts):
        self._s = nvmath.DirectSolver(a, b, options=nvmath.DirectSolverOptions(**opts))
        self._executor = None

    def plan(self):
        return self._s.plan()

    def factorize(self):
        self._s.factorize()
        return type("F", (), {"lu_nnz": int(self._s.factorization_info.lu_nnz)})()

    def solve(self):
        return self._s.solve()

    def free(self):
        self._s.free()


def gpu_poisson_90k(case):
    _gpu_poisson(case, 300, peers=True)


def gpu_poisson_1m(case):
    _gpu_poisson(case, 1000, peers=False)


def gpu_first_call_1m(case):
    """Only the first calls of new processes on the 1M system (CUMATH_BENCH_PLAN_DEFAULTS: a candidate
    PLAN_DEFAULTS, as ((lowest order, {ConfigParam name: value}), ...), for those processes)."""
    given = os.environ.get("CUMATH_BENCH_PLAN_DEFAULTS")
    case.note(f"planning defaults: {given or 'cumath as it is'}")
    _first_call_in_a_fresh_process(case, 1000)


def gpu_reorderings(case, m=1000):
    cp = need("cupy")
    csp = need("cupyx.scipy.sparse")
    import cumath.sparse.advanced as S

    a = csp.csr_matrix(poisson(m))
    b = cp.asarray(np.random.default_rng(0).standard_normal(a.shape[0]))
    sync = device_sync()
    for alg in S.DirectSolverReorderingAlg:
        with S.DirectSolver(a, b) as s:
            s.plan_config.reordering_algorithm = alg
            try:
                (tp, tf, ts), f, x = _timed_phases(s, sync)
            except Exception as exc:  # noqa: BLE001 - a reordering cuDSS refuses for this matrix is a row too
                case.value(f"{alg.name}", f"failed: {type(exc).__name__}: {exc}")
                continue
            est = s.plan_info.memory_estimates
            t = {"plan_ms": tp * 1e3, "factorize_ms": tf * 1e3, "solve_ms": ts * 1e3}
            res = float(cp.abs(a @ x - b).max())
            case.value(f"{alg.name}", (tp + tf + ts) * 1e3, "ms", **t, lu_nnz=int(f.lu_nnz),
                       peak_device_MiB=int(est.peak_device_memory) / 2 ** 20, npivots=int(f.npivots),
                       residual=res)
    case.note("total = plan + factorize + solve of one fresh solver per reordering; lu_nnz = the factors' fill")


def register(bench: Bench) -> None:
    """Add the ``sparse`` group to ``bench``."""
    bench.case("sparse/cpu-poisson-90k", "2-D Poisson 90k f64 on the CPU: cumath vs pypardiso, SciPy")(cpu_poisson)
    bench.case("sparse/cpu-pardiso-iparm", "PARDISO settings on the 2-D Poisson 90k system (fresh solves)",
               default=False)(cpu_pardiso_iparm)
    bench.case("sparse/gpu-poisson-90k", "2-D Poisson 90k f64 on the GPU (cuDSS) vs cupyx, nvmath-python",
               gpu=True)(gpu_poisson_90k)
    bench.case("sparse/gpu-poisson-1m", "2-D Poisson 1M f64 on the GPU (cuDSS)", gpu=True)(gpu_poisson_1m)
    bench.case("sparse/gpu-first-call-1m", "2-D Poisson 1M f64: the first call of new processes only",
               gpu=True)(gpu_first_call_1m)
    bench.case("sparse/gpu-plan-settings", "cuDSS planning settings on the 2-D Poisson 90k system (fresh solves)",
               gpu=True)(gpu_plan_settings)
    bench.case("sparse/gpu-plan-settings-1m", "cuDSS planning settings on the 2-D Poisson 1M system (fresh solves)",
               gpu=True, default=False)(gpu_plan_settings_1m)
    bench.case("sparse/gpu-reorderings", "every cuDSS reordering on the 1M Poisson system", gpu=True,
               default=False)(gpu_reorderings)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--reorderings" in argv:
        argv.remove("--reorderings")
        argv += ["--case", "sparse/gpu-reorderings"]
    bench = Bench("solvers_sparse", __doc__)
    register(bench)
    return bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
