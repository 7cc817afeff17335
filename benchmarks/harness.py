"""The benchmark harness shared by benchmarks/fft.py, matmul.py and device.py.

A script declares its cases with ``@bench.case("group/name", "title", gpu=...)``; each case times its
contenders (cumath and its peers, in one process, on the same data) with ``case.time({...})`` and names the
ratios it reports with ``case.ratio(a, b)``. The harness selects cases (``--case``), skips GPU cases where there
is no GPU and cases whose packages are missing, prints one aligned table per case and writes every row to
``--json PATH``.

Timing (``measure``): each contender runs a loop of ``number`` calls per sample (calibrated so that a sample lasts
at least ``target`` seconds), between two synchronisations: for GPU work ``sync`` waits for the device, so a
sample counts the work the calls queued. A round times the contenders in A B ... B A order (forward, then
backward), so a drift of the machine's speed during a round (a GPU's clock falling as it heats, a neighbour
process starting) falls on every contender alike rather than on whoever runs first. Per contender: the median
of the per-call times of all samples, the best, and the spread (p90 - p10) / median. A ratio is the ratio of
two medians; it is flagged (``!``) when either side's spread exceeds ``--spread-warn``: then the ratio is not
to be trusted, and the case needs a quieter machine or more rounds.

The harness imports nothing from cumath, so the same harness times cumath before and after a change.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import os
import platform
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the source tree's cumath, also when run as `python benchmarks/<script>.py` (installed, the scripts live in
# cumath/_benchmarks and the installed cumath is used)
if os.path.isfile(os.path.join(ROOT, "pyproject.toml")) and ROOT not in sys.path:
    sys.path.insert(0, ROOT)

__all__ = ["Bench", "Case", "Skip", "Stats", "measure", "optional", "need", "gpu_count", "device_sync",
           "cpu_count", "event_time"]

SPREAD_WARN = 0.10


class Skip(Exception):
    """A case (or a contender) that cannot run here: a package or the GPU is missing."""


# ------------------------------------------------------------------------------------------- packages
_MODULES: dict = {}
VERSIONS: dict = {}


def optional(name: str):
    """The module ``name`` if it imports, else None (its version is recorded for the JSON metadata)."""
    if name not in _MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not installed, or broken: either way not a peer here
            mod = None
        _MODULES[name] = mod
        if mod is not None:
            VERSIONS[name.split(".")[0]] = getattr(sys.modules[name.split(".")[0]], "__version__", "?")
    return _MODULES[name]


def need(*names: str):
    """The modules ``names`` (one module or a tuple); raises Skip naming the first one missing."""
    mods = []
    for name in names:
        mod = optional(name)
        if mod is None:
            raise Skip(f"needs {name}")
        mods.append(mod)
    return mods[0] if len(mods) == 1 else tuple(mods)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


_GPUS = None


def gpu_count() -> int:
    """CUDA devices visible to this process (0 without a driver and a CUDA runtime), counted through cumath's own
    runtime binding, else CuPy, else PyTorch: importing PyTorch loads GNU OpenMP into the process, which changes
    how CPU libraries run (MKL PARDISO's two-level factorization is turned off with it), so the CPU cases of a
    machine without GPUs never import it for this."""
    global _GPUS
    if _GPUS is None:
        import ctypes

        from cumath._core.cuda import device_count

        try:  # no driver, no GPU: nothing more to ask
            ctypes.CDLL("libcuda.so.1")
        except OSError:
            _GPUS = 0
            return _GPUS
        _GPUS = device_count()
        if _GPUS:
            return _GPUS
        cp = optional("cupy")
        if cp is not None:
            try:
                _GPUS = cp.cuda.runtime.getDeviceCount()
            except Exception:  # noqa: BLE001 - no driver or no device
                _GPUS = 0
        if not _GPUS:
            torch = optional("torch")
            if torch is not None and torch.cuda.is_available():
                _GPUS = torch.cuda.device_count()
    return _GPUS


def device_sync():
    """A function that waits for all work on the current CUDA device (every stream), from PyTorch or CuPy."""
    torch = optional("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.synchronize
    cp = need("cupy")
    return cp.cuda.runtime.deviceSynchronize


def event_time(fn, number=20, package="torch", queued=False) -> float:
    """GPU seconds per call of ``fn`` from CUDA events recorded on the current stream around ``number`` calls
    (the device's time only; ``measure`` gives the host's wall time, synchronised). ``queued`` (torch): the calls
    wait behind a sleeping kernel long enough for the host to issue them all, so the events time the GPU running
    them back to back even where a call's host cost exceeds its GPU time."""
    fn()
    if package == "torch":
        torch = need("torch")
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if queued:
            torch.cuda._sleep(int(7e4 * number))  # ~40 us a call at an H200's clock
        e0.record()
        for _ in range(number):
            fn()
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1) / 1e3 / number
    cp = need("cupy")
    cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(number):
        fn()
    e1.record()
    e1.synchronize()
    return cp.cuda.get_elapsed_time(e0, e1) / 1e3 / number


# --------------------------------------------------------------------------------------------- timing
class Stats:
    """Per-call seconds of each sample: ``median``, ``best``, ``p10``, ``p90``, ``spread`` = (p90-p10)/median."""

    def __init__(self, samples, number=1):
        self.samples = sorted(samples)
        self.number = number

    def quantile(self, q: float) -> float:
        s = self.samples
        pos = q * (len(s) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def median(self) -> float:
        return self.quantile(0.5)

    @property
    def best(self) -> float:
        return self.samples[0]

    @property
    def spread(self) -> float:
        m = self.median
        return (self.quantile(0.9) - self.quantile(0.1)) / m if m > 0 else 0.0


def _nothing():
    pass


def _sample(fn, sync, number) -> float:
    sync()
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return (time.perf_counter() - t0) / number


def calibrate(fn, sync, target: float, max_number: int = 1_000_000) -> int:
    """Calls per sample so that a sample lasts about ``target`` seconds (at least one call)."""
    number = 1
    while True:
        dt = _sample(fn, sync, number) * number
        if dt >= target / 5 or number >= max_number:
            dt = min(dt, _sample(fn, sync, number) * number)  # one slow sample must not shorten every sample
            break
        number = min(max_number, number * (10 if dt < target / 50 else 2))
    return max(1, min(max_number, round(number * target / max(dt, 1e-9))))


def _progress(total: int, desc: str):
    """cumath's progress bar when this cumath has one (quiet when stderr is no terminal), else nothing."""
    try:
        from cumath._core.progress import progress
    except ImportError:  # an older cumath: no progress
        return None
    return progress(total, desc)


def measure(fns: dict, *, sync=None, number=None, rounds=5, target=0.05, settle=0.0, desc=None) -> dict:
    """Time the callables of ``fns`` (name -> fn) in ``rounds`` rounds of A B ... B A; name -> Stats.

    ``sync``: a function called before and after each sample's loop (a GPU synchronisation), or a dict
    name -> function; ``number``: calls per sample (an int, a dict, or None: calibrated per contender to last
    ``target`` seconds); ``settle``: seconds of idling before each sample (lets the worker threads of the last
    contender's library go to sleep); ``desc``: the label of the progress bar (shown on a terminal)."""
    names = list(fns)
    syncs = {k: (sync.get(k) if isinstance(sync, dict) else sync) or _nothing for k in names}
    for k in names:  # warm-up: first-call costs (planning, caches, lazy loading) stay out of the samples
        fns[k]()
        if callable(syncs[k]()):  # device_sync instead of device_sync(): no sample would wait for the GPU
            raise TypeError(f"the sync function of {k!r} returned a function instead of waiting: pass "
                            f"sync=device_sync() (its result), not device_sync")
    if isinstance(number, dict):
        numbers = {k: number.get(k) or calibrate(fns[k], syncs[k], target) for k in names}
    elif number:
        numbers = {k: number for k in names}
    else:
        numbers = {k: calibrate(fns[k], syncs[k], target) for k in names}
    samples = {k: [] for k in names}
    gc.collect()
    bar = _progress(2 * rounds * len(names), desc or "timing")
    try:
        for _ in range(rounds):
            for k in names + names[::-1]:
                if settle:
                    time.sleep(settle)
                samples[k].append(_sample(fns[k], syncs[k], numbers[k]))
                if bar is not None:
                    bar.update()
    finally:
        if bar is not None:
            bar.close()
    return {k: Stats(samples[k], numbers[k]) for k in names}


# --------------------------------------------------------------------------------------------- output
_UNITS = ((1e-6, "ns", 1e9), (1e-3, "us", 1e6), (1.0, "ms", 1e3), (math.inf, "s", 1.0))


def _unit(seconds: float):
    for bound, name, scale in _UNITS:
        if seconds < bound:
            return name, scale
    return "s", 1.0


def _num(x: float) -> str:
    """4 significant digits, no exponent for the usual range."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    digits = max(0, 3 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{digits}f}"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if (abs(v) < 1e-2 or abs(v) >= 1e5) and v != 0 else _num(v)
    return str(v)


class Case:
    """One case of a script: its rows (timed contenders and other values), ratios and notes."""

    def __init__(self, bench: "Bench", cid: str, title: str):
        self.bench, self.id, self.title = bench, cid, title
        self.quick = bench.args.quick
        self.rows: list = []
        self.ratios: list = []
        self.notes: list = []

    # --- measuring
    def rounds(self, full: int, quick: int) -> int:
        """Rounds for this case: ``--rounds`` when given, else ``quick`` with --quick, else ``full``."""
        return self.bench.args.rounds or (quick if self.quick else full)

    def time(self, fns: dict, *, rounds=None, extra=None, **kw) -> dict:
        """``measure(fns, ...)``, every result added as a row (``extra``: name -> dict of more fields)."""
        rounds = rounds or self.rounds(7, 3)
        print(f"  timing {len(fns)} contender{'s' if len(fns) > 1 else ''}, {rounds} rounds ...", flush=True)
        out = measure(fns, rounds=rounds, desc=f"{self.id}", **kw)
        for name, st in out.items():
            self.row(name, st, **((extra or {}).get(name) or {}))
        return out

    def row(self, name: str, stats: Stats, **extra):
        self.rows.append({"contender": name, "stats": stats, **extra})
        return stats

    def value(self, name: str, value, unit: str = "", **extra):
        """A row that is a single value (a planning time, a first call in a fresh process, an error)."""
        self.rows.append({"contender": name, "value": value, "unit": unit, **extra})

    def note(self, text: str):
        """A line printed under the case's table (what was not measured, and why; what a row means)."""
        self.notes.append(text)

    def stats(self, name: str):
        for r in self.rows:
            if r["contender"] == name and "stats" in r:
                return r["stats"]
        return None

    def ratio(self, num: str, den: str, label: str | None = None):
        """The ratio of the medians of rows ``num`` and ``den`` (skipped when either is missing)."""
        a, b = self.stats(num), self.stats(den)
        if a is None or b is None:
            return None
        value = a.median / b.median
        noisy = max(a.spread, b.spread) > self.bench.args.spread_warn
        self.ratios.append({"numerator": num, "denominator": den, "label": label or f"{num} / {den}",
                            "ratio": value, "difference_s": a.median - b.median, "noisy": noisy,
                            "faster": num if value < 1 else den})
        return value

    # --- output
    def table(self) -> str:
        timed = [r for r in self.rows if "stats" in r]
        unit, scale = _unit(min((r["stats"].median for r in timed), default=1.0))
        width = max([len(r["contender"]) for r in self.rows] + [len("contender")])
        lines = [f"  {'contender':<{width}}  {'median':>10}  {'best':>10}  {'spread':>7}  {'calls':>7}"]
        for r in self.rows:
            more = "  ".join(f"{k}={_fmt(v)}" for k, v in r.items()
                             if k not in ("contender", "stats", "value", "unit") and v is not None)
            if "stats" in r:
                st = r["stats"]
                flag = "!" if st.spread > self.bench.args.spread_warn else " "
                lines.append(f"  {r['contender']:<{width}}  {_num(st.median * scale):>7} {unit:<2}  "
                             f"{_num(st.best * scale):>7} {unit:<2}  {100 * st.spread:6.1f}%{flag} "
                             f"{st.number:>7}  {more}".rstrip())
            else:
                v = r["value"]
                text = (_num(v) if isinstance(v, float) else str(v)) + (f" {r['unit']}" if r.get("unit") else "")
                lines.append(f"  {r['contender']:<{width}}  {text:>10}  {more}".rstrip())
        if self.ratios:
            lw = max(len(x["label"]) for x in self.ratios)
            lines.append("  ratios of medians:")
            for x in self.ratios:
                d = x["difference_s"]
                du, ds = _unit(abs(d) or 1.0)
                if abs(x["ratio"] - 1) < 0.02:
                    verdict = "about the same (within 2%)"
                else:
                    verdict = f"{x['faster']} faster by {max(x['ratio'], 1 / x['ratio']):.2f}x"
                lines.append(f"    {x['label']:<{lw}}  {x['ratio']:7.3f}  ({'+' if d >= 0 else '-'}"
                             f"{_num(abs(d) * ds)} {du})  {verdict}{'  ! too noisy to trust' if x['noisy'] else ''}")
        for n in self.notes:
            lines.append(f"  note: {n}")
        return "\n".join(lines)

    def json_rows(self) -> list:
        out = []
        for r in self.rows:
            row = {"case": self.id, "contender": r["contender"]}
            if "stats" in r:
                st = r["stats"]
                row.update(median_s=st.median, best_s=st.best, p10_s=st.quantile(0.1), p90_s=st.quantile(0.9),
                           spread=st.spread, noisy=st.spread > self.bench.args.spread_warn, samples=len(st.samples),
                           calls_per_sample=st.number)
            else:
                row.update(value=r["value"], unit=r.get("unit", ""))
            row.update({k: v for k, v in r.items() if k not in ("contender", "stats", "value", "unit")})
            out.append(row)
        return out


# ---------------------------------------------------------------------------------------------- bench
class Bench:
    """A benchmark script: its cases, the command line, the run and the JSON."""

    def __init__(self, name: str, doc: str, *, fresh_cache: bool = True):
        self.name, self.doc, self.fresh_cache = name, doc, fresh_cache
        self.cases: list = []  # (id, title, fn, gpu, default)
        self.done: list = []
        self.args = None

    def case(self, cid: str, title: str, *, gpu: bool = False, default: bool = True):
        """Register ``fn(case)`` as case ``cid`` ("group/name"); ``default=False``: only run when selected."""
        def register(fn):
            self.cases.append((cid, title, fn, gpu, default))
            return fn
        return register

    def parser(self) -> argparse.ArgumentParser:
        groups = sorted({c[0].split("/")[0] for c in self.cases})
        ap = argparse.ArgumentParser(prog=f"benchmarks/{self.name}.py", description=self.doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("--case", action="append", default=[], metavar="NAME",
                        help=f"a group ({', '.join(groups)}) or one case (group/name, see --list); repeat or "
                             "separate with commas; default: every case not marked optional")
        ap.add_argument("--list", action="store_true", help="list the cases and exit")
        ap.add_argument("--quick", action="store_true", help="a short run: fewer rounds, smaller or fewer problems")
        ap.add_argument("--cpu", action="store_true", help="CPU cases only")
        ap.add_argument("--gpu", action="store_true", help="GPU cases only")
        ap.add_argument("--rounds", type=int, default=None, help="rounds per case (each round times every "
                                                                  "contender twice: A B ... B A)")
        ap.add_argument("--spread-warn", type=float, default=SPREAD_WARN,
                        help=f"flag a row whose (p90-p10)/median exceeds this (default {SPREAD_WARN})")
        ap.add_argument("--json", metavar="PATH", help="write every row and ratio to this file")
        ap.add_argument("--plot", metavar="PNG", help="draw a chart per case (median and p10-p90 of each contender; "
                                                      "needs matplotlib: pip install \"cumath[cli]\")")
        ap.add_argument("--cache-dir", help="cumath's cache folder (default: a new empty one, so no FFTW wisdom "
                                            "or autotuning results from earlier runs are used)")
        return ap

    def _selected(self, cid: str, default: bool) -> bool:
        sel = [s.strip() for arg in self.args.case for s in arg.split(",") if s.strip()]
        if not sel:
            return default
        return any(cid == s or cid.startswith(s + "/") for s in sel)

    def meta(self) -> dict:
        return {"script": f"benchmarks/{self.name}.py", "argv": sys.argv[1:],
                "date": time.strftime("%Y-%m-%d %H:%M:%S"), "host": platform.node(),
                "machine": platform.machine(), "python": platform.python_version(), "cpus": cpu_count(),
                "gpus": gpu_count(), "versions": dict(VERSIONS), "spread_warn": self.args.spread_warn}

    def write_json(self):
        if not self.args.json:
            return
        rows, ratios, skipped = [], [], []
        for case, status in self.done:
            if case is None:
                skipped.append(status)
                continue
            rows += case.json_rows()
            ratios += [{"case": case.id, **x} for x in case.ratios]
            if status != "ok":
                skipped.append({"case": case.id, "status": status})
        with open(self.args.json, "w") as f:
            json.dump({"meta": self.meta(), "rows": rows, "ratios": ratios, "skipped": skipped}, f, indent=1,
                      default=str)

    def plot(self, path: str) -> bool:
        """A chart per case: each contender's median per call with its p10-p90 range, cumath's rows in one
        colour and the peers' in another; written to ``path`` (PNG). False when matplotlib is missing."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print(f"--plot: matplotlib is not installed (pip install \"cumath[cli]\" or matplotlib); no {path}",
                  file=sys.stderr)
            return False
        cases = [c for c, _ in self.done if c is not None and any("stats" in r for r in c.rows)]
        if not cases:
            print(f"--plot: no timed case to draw; no {path}", file=sys.stderr)
            return False
        cols = 1 if len(cases) == 1 else 2
        nrows = math.ceil(len(cases) / cols)
        heights = [max(1.6, 0.32 * sum("stats" in r for r in c.rows) + 1.0) for c in cases]
        fig, axes = plt.subplots(nrows, cols, figsize=(7.5 * cols, max(heights) * nrows), squeeze=False)
        for ax, case in zip(axes.flat, cases):
            timed = [r for r in case.rows if "stats" in r]
            unit, scale = _unit(min(r["stats"].median for r in timed))
            names = [r["contender"] for r in timed]
            med = [r["stats"].median * scale for r in timed]
            lo = [max(0.0, m - r["stats"].quantile(0.1) * scale) for m, r in zip(med, timed)]
            hi = [max(0.0, r["stats"].quantile(0.9) * scale - m) for m, r in zip(med, timed)]
            colours = ["tab:green" if n.startswith("cumath") else "tab:gray" for n in names]
            ys = list(range(len(names)))[::-1]
            ax.barh(ys, med, xerr=[lo, hi], color=colours, capsize=3)
            ax.set_yticks(ys, names, fontsize=8)
            ax.set_xlabel(f"time per call ({unit}); bars: median, whiskers: p10-p90")
            ax.set_title(f"{case.id}: {case.title}"[:70], fontsize=9)
            for y, m, h, r in zip(ys, med, hi, timed):
                noisy = r["stats"].spread > self.args.spread_warn
                ax.text(m + h, y, f"  {_num(m)}{' (noisy)' if noisy else ''}", va="center", fontsize=7)
            ax.set_xlim(0, max(m + h for m, h in zip(med, hi)) * 1.3)
        for ax in list(axes.flat)[len(cases):]:
            ax.set_visible(False)
        fig.suptitle(f"{self.name}: cumath (green) and its peers (gray) on {platform.node()} "
                     f"({cpu_count()} CPU cores, {gpu_count()} GPUs)", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"\nchart written to {path}")
        return True

    def main(self, argv=None) -> int:
        self.args = ap = self.parser().parse_args(argv)
        if self.args.list:
            for cid, title, _fn, gpu, default in self.cases:
                print(f"  {cid:<32s} {'GPU' if gpu else 'CPU'}  {title}{'' if default else '  (optional)'}")
            return 0
        known = {c[0] for c in self.cases} | {c[0].split("/")[0] for c in self.cases}
        for arg in ap.case:
            for s in filter(None, (x.strip() for x in arg.split(","))):
                if s not in known:
                    self.parser().error(f"unknown case {s!r}; --list shows the cases")
        if self.fresh_cache or ap.cache_dir:
            os.environ["CUMATH_CACHE_DIR"] = ap.cache_dir or tempfile.mkdtemp(prefix=f"cumath-bench-{self.name}-")
        failed = 0
        print(f"benchmarks/{self.name}.py: {cpu_count()} CPU cores, {gpu_count()} GPU(s)"
              f"{'; quick run' if ap.quick else ''}", flush=True)
        for cid, title, fn, gpu, default in self.cases:
            if not self._selected(cid, default) or (ap.cpu and gpu) or (ap.gpu and not gpu):
                continue
            if gpu and not gpu_count():
                print(f"\n== {cid}: {title}\n  skipped: no GPU", flush=True)
                self.done.append((None, {"case": cid, "status": "skipped: no GPU"}))
                continue
            case = Case(self, cid, title)
            print(f"\n== {cid}: {title}", flush=True)
            status = "ok"
            t_case = time.perf_counter()
            try:
                fn(case)
            except Skip as exc:
                status = f"skipped: {exc}"
            except Exception as exc:  # noqa: BLE001 - one failing case leaves the others' rows
                traceback.print_exc()
                status = f"failed: {type(exc).__name__}: {exc}"
                failed += 1
            case.seconds = time.perf_counter() - t_case
            if case.rows or case.notes or case.ratios:
                print(case.table(), flush=True)
                print(f"  (this case took {case.seconds:.1f} s)", flush=True)
            if status != "ok":
                print(f"  {status}", flush=True)
            self.done.append((case, status))
            self.write_json()  # after each case: a run cut short keeps what it measured
        self.write_json()
        noisy = sum(x["noisy"] for c, _ in self.done if c is not None for x in c.ratios)
        if noisy:
            print(f"\nwarning: {noisy} ratio(s) marked '!' come from rows whose spread exceeds "
                  f"{100 * ap.spread_warn:.0f}%: the machine was too busy to trust them; run again on a quieter "
                  f"machine or with more --rounds")
        if ap.plot:
            self.plot(ap.plot)
        return 1 if failed else 0
