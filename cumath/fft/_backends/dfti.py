"""oneMKL's DFTI as a CPU FFT engine ('dfti'), and the engine 'auto' prefers when MKL and FFTW are both there
('fftw+dfti'): FFTW's measured plan where the process has wisdom for the problem; where it has none, the engine
the no-wisdom rule (``_rule.py``) picks from the problem's rank, size and batch: FFTW_ESTIMATE for short 1-D
transforms (alone or in batches) and small multi-dimensional ones (its plans run near measured ones there), DFTI
for longer and larger ones (where FFTW_ESTIMATE's plans run 1.2-12x slower and DFTI's near measured ones; a
descriptor commits in milliseconds). Each choice is logged at DEBUG with its reason.

A plan DFTI serves moves to FFTW as soon as FFTW has wisdom for it (the same rule as FFTW's own heuristic plans:
``fftw.WISDOM`` empties ``entries`` when wisdom is learnt, and the next execution looks again). FFTW is loaded
for such a plan only where the process may have wisdom (a wisdom file, FFTW already in use), and MKL only when a
problem goes to DFTI. Where the user opts in (``CUMATH_FFT_BACKGROUND_PLANNING=measure``), a background thread
makes FFTW's measured plan of each problem DFTI serves, which swaps it in the same way.

A DFTI descriptor reads and writes any alignment (``align_mask`` 0), takes one batch loop (the outer ones run
here, as for oneMKL's FFTW wrappers), and computes one direction's layout: forward reads the FWD strides and
writes the BWD ones, backward the other way round, so each direction has its own descriptor, made on first use.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import queue
import threading
import time
import weakref
from ctypes import memmove

from ..._bindings import _loader
from ..._bindings import fftw as _fftw
from ..._bindings import mkl_dfti as _dfti
from ..._core._fast import KERNELS, call3, run_table
from ..._core.threads import run_parts, worker_pool
from ..._core.dtypes import ITEMSIZE
from ...errors import LibraryError, LibraryNotFoundError
from ._rule import no_wisdom_engine, problem
from ._wisdom import wisdom_path
from .fftw import THREAD_MIN_POINTS, WISDOM, _merge_loops, threads_for

__all__ = ["DftiEngine", "DftiPlan", "TunedEngine", "TunedPlan", "PLANNER", "background_effort", "via_result"]

logger = logging.getLogger(__name__)

_P, _V = _dfti.Param, _dfti.Value


def _raise(status):
    _dfti.check(status, "DftiCompute")


_compute_fns: dict = {}


def _compute(sign: int):
    """The compute function of ``sign`` for the hot path, its status checked: the compiled caller
    (``_core/_fast``), or the typed ctypes function with an errcheck."""
    fn = _compute_fns.get(sign)
    if fn is None:
        fn = _compute_fns[sign] = call3(_dfti.raw_compute(sign), status=True, on_error=_raise)
    return fn


class DftiEngine:
    """The CPU engine oneMKL DFTI (the ``mkl`` extra)."""

    name = "dfti"

    def locate(self) -> None:
        """As :meth:`load`, without loading MKL where a copy of it is found."""
        if not _loader.locatable("mkl_rt"):
            self.load()

    def load(self) -> None:
        if not _dfti.available():
            raise LibraryNotFoundError("oneMKL's DFTI (libmkl_rt) is not available; install the 'mkl' extra "
                                       "(pip install cumath[mkl]) or choose another cpu_engine")

    def plan(self, geom, in_strides, out_strides, num_threads, auto_threads, options, log) -> "DftiPlan":
        return DftiPlan(geom, in_strides, out_strides, num_threads, auto_threads, log)


class DftiPlan:
    """DFTI descriptors of one FFT layout (a ``CPUPlan``): one per direction, committed on first use."""

    align_mask = 0
    nbytes = 0

    def __init__(self, geom, in_strides, out_strides, num_threads, auto_threads=True, log=logger):
        self.kind = geom.fft_type
        self.precision = _V.DOUBLE if geom.precision == "float64" else _V.SINGLE
        self.domain = _V.COMPLEX if self.kind == "C2C" else _V.REAL
        self.dims = geom.transform_dims(in_strides, out_strides)
        loops = _merge_loops(geom.batch_dims(in_strides, out_strides))
        self.batch, outer = (loops[-1] if loops else (1, 0, 0)), loops[:-1]
        isz, osz = ITEMSIZE[geom.in_dtype], ITEMSIZE[geom.out_dtype]
        self._offsets = [  # byte offsets of the outer batch loops, run here
            (sum(i * s * isz for i, (_, s, _o) in zip(idx, outer)), sum(i * o * osz for i, (_, _s, o) in zip(idx, outer)))
            for idx in itertools.product(*(range(n) for n, _, _ in outer))] if outer else None
        self.inplace = geom.inplace
        points = self.batch[0]
        for n, *_ in self.dims:
            points *= n
        self.num_threads = threads_for(points, num_threads) if auto_threads else num_threads
        # M where the transform runs as two of length M and a last pass (see split_r2c), or 0
        self.half = split_r2c(self.kind, self.dims, self.batch, self._offsets, self.inplace, self.num_threads)
        # bytes to copy into the result before an in-place transform there, or 0 (see via_result)
        self.copy_bytes = 0 if self.half else via_result(self.kind, self.dims, self.batch, self._offsets,
                                                         self.inplace, self.num_threads, isz)
        self._halves = None  # (S0 and S1, their pointer, the last pass, a lock), made with the descriptor
        self.nbytes = 2 * (self.half // 2 + 1) * osz if self.half else 0  # the half spectra of a split one
        self.log = log
        self.entries: dict = {}
        self._descs: dict = {}  # sign -> descriptor
        self._finalizer = weakref.finalize(self, _free_all, self._descs)

    def _make(self, sign: int) -> int:
        """A committed descriptor computing direction ``sign`` from the input layout to the output layout."""
        t0 = time.perf_counter()
        if self.half:
            return self._make_split()
        # forward: input = forward domain; backward: input = backward domain
        src, dst = (_P.FWD_STRIDES, _P.BWD_STRIDES) if sign < 0 else (_P.BWD_STRIDES, _P.FWD_STRIDES)
        settings = [(src, [s for _, s, _ in self.dims]), (dst, [o for _, _, o in self.dims])]
        n, dist_in, dist_out = self.batch
        if n > 1:
            settings += [(_P.NUMBER_OF_TRANSFORMS, n), (_P.FWD_DISTANCE if sign < 0 else _P.BWD_DISTANCE, dist_in),
                         (_P.BWD_DISTANCE if sign < 0 else _P.FWD_DISTANCE, dist_out)]
        settings.append((_P.PLACEMENT, _V.INPLACE if self.inplace or self.copy_bytes else _V.NOT_INPLACE))
        desc = self._committed([n for n, _, _ in self.dims], settings)
        if self.log.isEnabledFor(logging.INFO):
            self.log.info("DFTI %s descriptor dims=%s batch=%s%s sign=%+d, %d thread(s), committed in %.2f ms",
                          self.kind, self.dims, self.batch, f" x {len(self._offsets)} here" if self._offsets else "",
                          sign, self.num_threads, 1e3 * (time.perf_counter() - t0))
        return desc

    def prepare(self, sign: int) -> None:
        desc = self._descs.get(sign)
        if desc is None:
            desc = self._descs[sign] = self._make(sign)
        if self._offsets:
            self.entries[sign] = (self._loop, sign)
        elif self.half:
            self.entries[sign] = (self._split, sign)
        elif self.copy_bytes:
            self.entries[sign] = (self._in_result, sign)
        else:
            self.entries[sign] = (_compute(sign), desc)

    def served_by(self, sign: int) -> str | None:
        """'dfti' once direction ``sign`` has its descriptor, else None."""
        return "dfti" if sign in self._descs else None

    def execute(self, in_ptr, out_ptr, sign, stream=None):
        if sign not in self.entries:
            self.prepare(sign)
        fn, arg = self.entries[sign]
        fn(arg, in_ptr, out_ptr)

    def _loop(self, sign, in_ptr, out_ptr):
        fn, desc = _compute(sign), self._descs[sign]
        for di, do in self._offsets:
            fn(desc, in_ptr + di, out_ptr + do)

    def _in_result(self, sign, in_ptr, out_ptr):
        memmove(out_ptr, in_ptr, self.copy_bytes)
        _compute(sign)(self._descs[sign], out_ptr, out_ptr)

    def _committed(self, lengths, settings) -> int:
        """A descriptor of ``lengths`` with ``settings`` ((param, int or list of strides), ...), the conjugate-even
        storage of a real domain and the plan's thread limit, committed (freed again if any step fails)."""
        desc = _dfti.create_descriptor(self.precision, self.domain, lengths)
        try:
            for param, value in settings:
                if isinstance(value, list):
                    _dfti.set_strides(desc, param, 0, value)
                else:
                    _dfti.set_value(desc, param, value)
            if self.domain == _V.REAL:
                _dfti.set_value(desc, _P.CONJUGATE_EVEN_STORAGE, _V.COMPLEX_COMPLEX)
            _dfti.set_value(desc, _P.THREAD_LIMIT, self.num_threads)
            _dfti.commit_descriptor(desc)
        except BaseException:
            _dfti.free_descriptor(desc)
            raise
        return desc

    def _make_split(self) -> int:
        """The descriptor of a split R2C (``split_r2c``): a batch of two length-M transforms, of the even and the
        odd samples (input distance 1, stride 2), into the plan's buffer of both half spectra."""
        import numpy as np

        t0 = time.perf_counter()
        m = self.half
        cdt = np.complex128 if self.precision == _V.DOUBLE else np.complex64
        halves = np.empty(2 * (m // 2 + 1), dtype=cdt)
        desc = self._committed([m], [(_P.NUMBER_OF_TRANSFORMS, 2), (_P.FWD_DISTANCE, 1), (_P.BWD_DISTANCE, m // 2 + 1),
                                     (_P.FWD_STRIDES, [2]), (_P.BWD_STRIDES, [1]), (_P.PLACEMENT, _V.NOT_INPLACE)])
        self._halves = (halves, halves.ctypes.data, _LastPass(halves, m, self.num_threads), threading.Lock())
        if self.log.isEnabledFor(logging.INFO):
            self.log.info("DFTI R2C of length %d as two of length %d (even and odd samples, one batch: MKL threads "
                          "batches, not one transform) and a last pass, %d thread(s), committed in %.2f ms",
                          2 * m, m, self.num_threads, 1e3 * (time.perf_counter() - t0))
        return desc

    def _split(self, sign, in_ptr, out_ptr):
        _, ptr, last, lock = self._halves
        with lock:  # the half spectra are the plan's: one execution at a time
            _compute(sign)(self._descs[sign], in_ptr, ptr)
            last(out_ptr)

    def free(self):
        self.entries.clear()
        self._finalizer()


def via_result(kind, dims, batch, offsets, inplace, num_threads, in_itemsize) -> int:
    """The input's size in bytes where an out-of-place transform runs faster as a copy of the input into the
    result and an in-place transform there, else 0. oneMKL 2026.2 computes a single 1-D out-of-place transform in
    one thread whatever its THREAD_LIMIT, and an in-place one in all of them (2^20 complex128 on 2 cores: 15.4 ms
    out of place, 10.7-12.3 ms copied and in place; 2^20 float64 R2C, one thread either way: 6.8-7.4 against
    5.4-5.9 ms; benchmarks/NOTES.md, "DFTI out of place runs one thread"). Taken for one contiguous 1-D C2C or
    R2C transform (the R2C result, n // 2 + 1 complex values, holds the n real inputs and DFTI's in-place
    padding); C2R's result is too small to hold its input."""
    if inplace or offsets or batch[0] != 1 or len(dims) != 1 or kind not in ("C2C", "R2C"):
        return 0
    n, stride_in, stride_out = dims[0]
    if n < THREAD_MIN_POINTS or stride_in != 1 or stride_out != 1 or (kind == "C2C" and num_threads < 2):
        return 0
    return n * in_itemsize


#: the shortest R2C transform split in two halves (below it one thread is what the transform gets anyway)
SPLIT_MIN_POINTS = 1 << 16


def split_r2c(kind, dims, batch, offsets, inplace, num_threads) -> int:
    """M where one contiguous 1-D R2C transform of n = 2M points (M even, n >= :data:`SPLIT_MIN_POINTS`) with 2
    threads or more runs as a batch of two length-M transforms (the even and the odd samples) and a last pass that
    combines them (``_core/_fast/_rfft.c``), else 0. oneMKL 2026.2 computes one 1-D real transform on one thread
    whatever its thread limit (in place or not) and a batch on all: 2^20 float64 on 2 cores, 8.4 ms alone against
    3.9 ms for the batch of halves, FFTW_MEASURE's plan 5.0 ms (benchmarks/NOTES.md)."""
    if inplace or offsets or batch[0] != 1 or len(dims) != 1 or kind != "R2C" or num_threads < 2:
        return 0
    n, stride_in, stride_out = dims[0]
    if n < SPLIT_MIN_POINTS or n % 4 or stride_in != 1 or stride_out != 1:
        return 0
    return n // 2


class _LastPass:
    """The last pass of a split R2C: the n/2 + 1 outputs from the half spectra (S0 then S1, M/2 + 1 values each),
    ``X[k] = S0[k] + w^k S1[k]`` and ``X[M - k] = conj(S0[k] - w^k S1[k])``, w = exp(-2 pi i / n). In C over
    ``threads`` parts (``rfft_combine_*`` through run_table), or in NumPy without the extension."""

    def __init__(self, halves, m: int, threads: int):
        import numpy as np

        self.halves, self.m = halves, m
        fn = KERNELS.get("rfft_combine_f64" if halves.dtype == np.complex128 else "rfft_combine_f32")
        self.parts = max(1, min(threads, 8))
        if fn is None or run_table is None:
            self.table = None
            return
        edges = [(m // 2 + 1) * i // self.parts for i in range(self.parts + 1)]
        self.table = np.array([[fn, halves.ctypes.data, 0, m, lo, hi] for lo, hi in zip(edges, edges[1:])],
                              dtype=np.int64)
        self.pool = worker_pool("fft-last-pass", self.parts - 1) if self.parts > 1 else None

    def __call__(self, out_ptr: int) -> None:
        t = self.table
        if t is None:
            return self._numpy(out_ptr)
        t[:, 2] = out_ptr
        addr, rows = t.ctypes.data, t.shape[0]
        if self.pool is None:
            run_table(addr, rows, 6, 0, rows)
        else:
            run_parts(lambda i: run_table(addr, rows, 6, i, i + 1), [(i,) for i in range(rows)], self.pool,
                      rows - 1)

    def _numpy(self, out_ptr: int) -> None:
        import ctypes

        import numpy as np

        m, h = self.m, self.halves
        half = m // 2
        out = np.ctypeslib.as_array(ctypes.cast(out_ptr, ctypes.POINTER(ctypes.c_char)), (h.itemsize * (m + 1),))
        x = out.view(h.dtype)
        s0, s1 = h[:half + 1], h[half + 1:]
        k = np.arange(half + 1)
        t = np.exp(-2j * np.pi * k / (2 * m)) * s1
        x[:half + 1] = s0 + t
        x[m:half:-1] = np.conj(s0[:half] - t[:half])


def _free_all(descs):
    for desc in descs.values():
        try:
            _dfti.free_descriptor(desc)
        except Exception:  # noqa: BLE001 - a descriptor that cannot be freed must not stop the others
            pass
    descs.clear()


# ------------------------------------------------------------------------------------- FFTW where tuned, else DFTI

BACKGROUND_ENV = "CUMATH_FFT_BACKGROUND_PLANNING"


def background_effort() -> str | None:
    """The effort of background planning the user opted into (``CUMATH_FFT_BACKGROUND_PLANNING``: 'measure'
    (or 1/on), 'patient', 'exhaustive'); None (unset, 0/off) by default: it would compete for the caller's
    cores."""
    value = os.environ.get(BACKGROUND_ENV, "").strip().lower()
    if value in ("", "0", "off", "no", "false"):
        return None
    if value in ("1", "on", "yes", "true"):
        return "measure"
    if value in ("measure", "patient", "exhaustive"):
        return value
    raise ValueError(f"{BACKGROUND_ENV}={value!r} is not supported; use measure, patient, exhaustive, 1 or 0")


class _BackgroundPlanner:
    """One daemon thread making FFTW's measured plans of the problems DFTI serves, one at a time. Each plan
    leaves wisdom, which swaps FFTW's plan in at the next execution of every plan of the problem (``WISDOM``).
    FFTW's planner is process-wide, so a caller's new FFTW plan waits while a measurement runs."""

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.seen: set = set()
        self._lock = threading.Lock()
        self._thread = None

    def submit(self, key, job) -> None:
        with self._lock:
            if key in self.seen:
                return
            self.seen.add(key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cumath-fft-planner", daemon=True)
                self._thread.start()
        self.jobs.put(job)

    def _run(self):
        while True:
            job = self.jobs.get()
            try:
                job()
            except Exception:  # noqa: BLE001 - background planning must never fail a computation
                logger.warning("background FFT planning failed", exc_info=True)
            finally:
                self.jobs.task_done()

    def wait(self) -> None:
        """Until every submitted plan is made (for tests and benchmarks)."""
        self.jobs.join()


PLANNER = _BackgroundPlanner()


def _measure(make_fftw, sign, effort, log):
    t0 = time.perf_counter()
    plan = make_fftw(effort)
    try:
        plan.prepare(sign)
    finally:
        plan.free()
    log.info("background FFTW planning (%s) of %s dims=%s howmany=%s sign=%+d took %.0f ms", effort, plan.kind,
             plan.dims, plan.howmany, sign, 1e3 * (time.perf_counter() - t0))

class TunedEngine:
    """'fftw+dfti': per problem, the engine the no-wisdom rule (``_rule.no_wisdom_engine``) picks, FFTW's plan
    from wisdom wherever the process has it, and an explicit ``planning_effort`` means FFTW planned that way (as
    with ``cpu_engine='fftw'``). Neither library is loaded before a plan needs it: a process whose problems all
    go to FFTW never loads MKL, and one whose problems all go to DFTI loads FFTW only where wisdom may exist."""

    name = "fftw+dfti"

    def __init__(self, registry):
        self._registry = registry  # its 'fftw' and 'dfti' engines (so that what replaces one there counts here)

    def load(self) -> None:
        self._fftw = self._registry.engine("fftw")
        self._dfti = self._registry.engine("dfti")
        for engine in (self._fftw, self._dfti):  # both installed (found without loading them), else the next one
            getattr(engine, "locate", engine.load)()

    def plan(self, geom, in_strides, out_strides, num_threads, auto_threads, options, log):
        def fftw_plan(opts=options):  # loads the library of the problem's precision (LibraryNotFoundError)
            return self._fftw.plan(geom, in_strides, out_strides, num_threads, auto_threads, opts, log)

        if options.planning_effort is not None:
            log.debug("fftw+dfti: FFTW, planning_effort=%r was asked for", options.planning_effort)
            return fftw_plan()
        engine, why = no_wisdom_engine(geom, in_strides, out_strides)
        if engine == "fftw":
            log.debug("fftw+dfti: FFTW (its plan from wisdom, else FFTW_ESTIMATE) for %s: %s", problem(geom), why)
            return fftw_plan()
        effort = background_effort()
        # FFTW is looked at only where the process may have wisdom: a wisdom file, or FFTW in use already
        fftw = fftw_plan() if effort is not None or _may_have_wisdom(geom) else None
        try:
            self._dfti.load()
            dfti = self._dfti.plan(geom, in_strides, out_strides, num_threads, auto_threads, options, log)
        except (LibraryError, LibraryNotFoundError, ValueError) as exc:  # DFTI cannot describe it, or no MKL
            log.info("DFTI cannot take %s (%s): FFTW plans it", problem(geom), exc)
            return fftw or fftw_plan()
        log.debug("fftw+dfti: DFTI for %s where the process has no wisdom for it (FFTW's plan from wisdom "
                  "otherwise): %s", problem(geom), why)
        measured = None
        if effort is not None:
            def measured(effort):  # the same problem planned by FFTW with that effort (in the planner thread)
                return fftw_plan(dataclasses.replace(options, planning_effort=effort))
        return TunedPlan(fftw_plan, fftw, dfti, log, measured, effort)


def _may_have_wisdom(geom) -> bool:
    """Whether FFTW may have wisdom for a problem of ``geom``'s precision in this process: FFTW is in use already,
    or a wisdom file exists (read when FFTW's first plan is made)."""
    lib = _fftw.get_fftw("double" if geom.precision == "float64" else "single", "fftw")
    if lib.started:
        return True
    try:
        return os.path.isfile(wisdom_path(lib))
    except OSError:  # an unusable cache folder: let FFTW's own reading report it
        return True


class TunedPlan:
    """One FFT layout served, per direction, by FFTW (from wisdom) or by DFTI (no wisdom yet); a ``CPUPlan``.

    ``entries`` holds the served direction's raw function; pointers off FFTW's SIMD alignment come through
    ``execute``, which gives them to DFTI (any alignment, nothing to plan). FFTW's plan object is made when first
    needed (``make_fftw``): at once where the process may have wisdom, else once it learns some. A plan made
    without FFTW has ``align_mask`` 0 (DFTI's, so that its calls go straight to DFTI); should FFTW serve it later,
    its direction stays out of ``entries`` and every call comes through ``execute``, which checks FFTW's
    alignment (executors read ``align_mask`` once)."""

    nbytes = 0

    def __init__(self, make_fftw, fftw, dfti: DftiPlan, log=logger, measured=None, effort=None):
        self._make_fftw, self.fftw, self.dfti, self.log = make_fftw, fftw, dfti, log
        self.nbytes = dfti.nbytes  # buffers of DFTI's plan (FFTW's plans hold none)
        self._measured, self._effort = measured, effort  # background planning, where the user opted in
        self.align_mask = fftw.align_mask if fftw is not None else 0
        self.entries: dict = {}
        self._ready: set = set()  # directions chosen since the last wisdom generation
        self._by_fftw: set = set()  # directions FFTW serves (from wisdom)
        self._refused: set = set()  # directions DFTI could not describe
        self._generation = -1
        self._born = WISDOM.generation  # without FFTW's plan: no wisdom until the process learns some

    def _with_fftw(self):
        if self.fftw is None:
            self.fftw = self._make_fftw()
        return self.fftw

    def _choose(self, sign: int) -> None:
        if self._generation != WISDOM.generation:
            self._generation = WISDOM.generation
            self._ready.clear()
        self._ready.add(sign)
        if (sign not in self._by_fftw and (self.fftw is not None or WISDOM.generation != self._born)
                and self._with_fftw().from_wisdom(sign)):
            self._by_fftw.add(sign)
            self.log.info("FFT direction %+d: FFTW's plan from wisdom", sign)
        if sign in self._by_fftw:
            self.fftw.prepare(sign)
            if self.fftw.align_mask & ~self.align_mask:  # FFTW needs an alignment the executor does not check
                self.entries.pop(sign, None)
            else:
                self.entries[sign] = self.fftw.entries[sign]
            return
        try:
            self.dfti.prepare(sign)
        except LibraryError as exc:  # DFTI refused the layout: FFTW plans it (heuristically, as before)
            self.log.info("DFTI cannot take this layout (%s): FFTW plans it", exc)
            self._by_fftw.add(sign)
            self._refused.add(sign)
            # through FFTWPlan.execute on every call, never a copy of its entry: FFTW replaces (and destroys) a
            # heuristic plan when wisdom for it appears
            self._with_fftw().prepare(sign)
            return
        self.entries[sign] = self.dfti.entries[sign]
        with _fftw.planner_lock:  # looked at again when the process learns wisdom
            WISDOM.waiting.add(self)
        if self._measured is not None:
            f = self.fftw
            key = (f.kind, f.lib.precision, tuple(f.dims), tuple(f.howmany), f.inplace, f.num_threads, sign)
            PLANNER.submit(key, lambda: _measure(self._measured, sign, self._effort, self.log))

    def prepare(self, sign: int) -> None:
        if sign in self._refused:
            self.fftw.prepare(sign)
        else:
            self._choose(sign)

    def served_by(self, sign: int) -> str | None:
        if sign in self._by_fftw:
            return self.fftw.served_by(sign)
        return self.dfti.served_by(sign)

    def execute(self, in_ptr, out_ptr, sign, stream=None):
        if sign in self._refused:
            self.fftw.execute(in_ptr, out_ptr, sign)
            return
        if sign not in self._ready or self._generation != WISDOM.generation:
            self._choose(sign)
            if sign in self._refused:
                self.fftw.execute(in_ptr, out_ptr, sign)
                return
        if sign in self._by_fftw and not (in_ptr | out_ptr) & self.fftw.align_mask:
            self.fftw.execute(in_ptr, out_ptr, sign)
        else:  # DFTI's direction, or FFTW's at an alignment its plan was not made for
            self.dfti.execute(in_ptr, out_ptr, sign)

    def free(self):
        self.entries.clear()
        self.dfti.free()
        if self.fftw is not None:
            self.fftw.free()
