"""The fast CPU engine: FFTW3's guru64 interface, from the FFTW bundled with pyFFTW or from MKL.

Plans are made once per layout, on scratch arrays (measured planning overwrites its arrays), and executed
on the caller's arrays with FFTW's new-array functions; a plan is reused for any arrays with the same
SIMD alignment, and another is made (and kept) for a different alignment. Planning effort is a choice
(see FFTOptions.planning_effort); what measured planning learns is kept as FFTW wisdom on disk.

Executors call FFTW's execute function themselves (``FFTWPlan.entries``: per direction, the raw ctypes
function and the plan for SIMD-aligned arrays); everything else (other alignments, plans still to be made,
plans to improve from new wisdom, MKL's extra batch loops) goes through ``FFTWPlan.execute``.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import weakref
from contextlib import nullcontext

import numpy as np

from ..._bindings import fftw as _fftw
from ..._bindings._loader import locatable
from ..._core._fast import call3
from ..._core.dtypes import ITEMSIZE
from ._wisdom import import_wisdom, read_wisdom, wisdom_path, write_wisdom
from ..._core.progress import busy
from ...config import cache_dir

__all__ = ["FFTWEngine", "FFTWPlan", "threads_for", "THREAD_MIN_POINTS"]

logger = logging.getLogger(__name__)

_EFFORT_FLAGS = {
    "estimate": _fftw.FFTW_ESTIMATE,
    "measure": _fftw.FFTW_MEASURE,
    "patient": _fftw.FFTW_PATIENT,
    "exhaustive": _fftw.FFTW_EXHAUSTIVE,
}
_wisdom_loaded: set = set()


class _WisdomState:
    """``generation`` grows whenever this process learns wisdom; plans made heuristically for lack of it
    look again (cheaply, FFTW_WISDOM_ONLY) when it has changed. ``waiting`` holds the FFTWPlans that have
    such plans: their ``entries`` are emptied when wisdom is learnt, so that their next execution goes through
    ``FFTWPlan.execute``, which looks again (in the thread that runs the plan, never under it)."""

    generation = 0

    def __init__(self):
        self.waiting = weakref.WeakSet()  # read and written with _fftw.planner_lock held

    def learnt(self) -> None:
        with _fftw.planner_lock:
            self.generation += 1
            for plan in list(self.waiting):
                plan.entries.clear()


WISDOM = _WisdomState()
_wisdom_lock = threading.Lock()

# Below this many points per transform batch, threads cost more than they save (benchmarks/NOTES.md).
THREAD_MIN_POINTS = 1 << 15


def threads_for(points: int, requested: int) -> int:
    return requested if points >= THREAD_MIN_POINTS else 1


def _load_wisdom(lib) -> None:
    key = (lib.provider, lib.precision)
    if key in _wisdom_loaded:
        return
    with _wisdom_lock:
        if key in _wisdom_loaded:
            return
        wisdom = read_wisdom(lib)  # checked before FFTW sees it (a damaged file aborts FFTW's import)
        if wisdom is not None:
            ok = import_wisdom(lib, wisdom)
            logger.info("FFTW wisdom %s from %s", "loaded" if ok else "could not be read", wisdom_path(lib))
        _wisdom_loaded.add(key)


def _save_wisdom(lib) -> None:
    with _wisdom_lock:
        other = read_wisdom(lib)  # merge what other processes learnt meanwhile (checked as when loading)
        with _fftw.planner_lock:
            if other is not None:
                lib.import_wisdom_from_string(other)
            wisdom = lib.export_wisdom_to_string()
        if write_wisdom(lib, wisdom):
            logger.info("FFTW wisdom saved to %s", wisdom_path(lib))
    WISDOM.learnt()


def _scratch(shape_strides, itemsize: int, residue: int, align: int):
    """A scratch buffer for planning and the address in it of element 0, with ``address % align == residue``.
    ``shape_strides``: (n, stride) of every dimension, strides in elements (negative allowed)."""
    lo = sum((n - 1) * s for n, s in shape_strides if s < 0)
    hi = sum((n - 1) * s for n, s in shape_strides if s > 0)
    nbytes = (hi - lo + 1) * itemsize
    buf = np.empty(nbytes + 2 * align, dtype=np.uint8)
    base = buf.ctypes.data
    start = base + (residue - base) % align
    ptr = start - lo * itemsize
    return buf, ptr


class FFTWEngine:
    """The CPU engine FFTW3 (provider 'fftw'), oneMKL's FFTW3 interface (provider 'mkl') or NVPL FFT on Arm
    (provider 'nvpl')."""

    def __init__(self, provider: str):
        self.name = provider

    def load(self) -> None:
        _fftw.get_fftw("double", self.name).version  # loads the library (LibraryNotFoundError)

    def locate(self) -> None:
        """As :meth:`load`, without loading the library where a copy of it is found."""
        if not locatable(_fftw.library_name("double", self.name)):
            self.load()

    def plan(self, geom, in_strides, out_strides, num_threads, auto_threads, options, log) -> "FFTWPlan":
        precision = {"float32": "single", "float64": "double"}[geom.precision]
        return FFTWPlan(geom.fft_type, precision, self.name, geom.transform_dims(in_strides, out_strides),
                        geom.batch_dims(in_strides, out_strides), ITEMSIZE[geom.in_dtype], ITEMSIZE[geom.out_dtype],
                        geom.inplace, num_threads, options.planning_effort, log, auto_threads)


class FFTWPlan:
    """FFTW plans for one problem layout (the ``CPUPlan`` of ``fft/_backends``).

    ``entries``: sign -> (FFTW's execute function, plan) for SIMD-aligned arrays (``align_mask``), called as
    ``fn(plan, in_ptr, out_ptr)``; it may be emptied at any time. ``execute(in_ptr, out_ptr, sign)`` works for
    any arrays: it picks (or makes) the plan for the direction and the alignment of the pointers, and fills
    ``entries`` again.
    """

    nbytes = 0

    def __init__(self, kind, precision, provider, dims, howmany, in_dtype_size, out_dtype_size, inplace,
                 num_threads, effort, log=logger, auto_threads=True):
        self.lib = _fftw.get_fftw(precision, provider)
        self.kind = kind
        self.dims = [tuple(d) for d in dims]
        self.howmany = [tuple(d) for d in howmany]
        self._offsets = None  # byte offsets of the batch loops run here (MKL's wrappers take one loop)
        self._wisdom = provider == "fftw"  # oneMKL's FFTW3 wrappers have no wisdom and do not measure
        if provider in ("mkl", "nvpl"):  # one batch loop in the library; the outer ones are looped here
            loops = _merge_loops(self.howmany)
            if len(loops) > 1:
                self.howmany, outer = loops[-1:], loops[:-1]
                self._offsets = [
                    (sum(i * s * in_dtype_size for i, (_, s, _o) in zip(idx, outer)),
                     sum(i * o * out_dtype_size for i, (_, _s, o) in zip(idx, outer)))
                    for idx in itertools.product(*(range(n) for n, _, _ in outer))]
        self.inplace = inplace
        self._sizes = (in_dtype_size, out_dtype_size)
        points = 1
        for d in self.dims + self.howmany:
            points *= d[0]
        self.num_threads = threads_for(points, num_threads) if auto_threads else num_threads
        self.effort = effort
        self.log = log
        self.align = self.lib.simd_alignment
        self._mask = self.align - 1  # the alignment is a power of two
        # the loops over the outer batches check each batch's alignment themselves
        self.align_mask = 0 if self._offsets else self._mask
        self.entries: dict = {}
        self._plans: dict = {}  # (sign, in residue, out residue) -> plan
        self._estimated: set = set()  # keys of plans made heuristically, for want of wisdom
        self._how: dict = {}  # key -> how its plan was made ('wisdom', 'estimate', 'measure', ...)
        self._generation = WISDOM.generation
        self._finalizer = weakref.finalize(self, _destroy_all, self.lib, self._plans)
        # the compiled caller of FFTW's new-array execute function (the ctypes function without the extension)
        self._exec = call3({"C2C": self.lib.execute_dft, "R2C": self.lib.execute_dft_r2c,
                            "C2R": self.lib.execute_dft_c2r}[kind])
        if self._wisdom:
            _load_wisdom(self.lib)

    def prepare(self, sign: int, in_residue: int = 0, out_residue: int = 0) -> int:
        """Make (or fetch) the plan for ``sign`` and pointer alignments ``in/out_residue``."""
        key = (sign, in_residue, out_residue)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make(sign, in_residue, out_residue)
        if not in_residue and not out_residue:
            self.entries[sign] = (self._loop, sign) if self._offsets else (self._exec, plan)
        return plan

    def from_wisdom(self, sign: int) -> bool:
        """Make the plan of ``sign`` for SIMD-aligned arrays from wisdom alone (replacing a heuristic one);
        False, planning nothing, when the process has no wisdom for it."""
        key = (sign, 0, 0)
        if not self._wisdom:
            return False
        if key in self._plans and key not in self._estimated:
            return True
        plan = self._make(sign, 0, 0, wisdom_only=True)
        if not plan:
            return False
        old = self._plans.pop(key, None)
        self._plans[key] = plan
        self._estimated.discard(key)
        if old:
            with _fftw.planner_lock:
                self.lib.destroy_plan(old)
        return True

    def execute(self, in_ptr, out_ptr, sign, stream=None):
        if self._offsets is None:
            self._execute_one(in_ptr, out_ptr, sign)
        else:
            self._loop(sign, in_ptr, out_ptr)

    def _loop(self, sign, in_ptr, out_ptr):
        """The outer batch loops run here (the engine takes one loop only)."""
        for di, do in self._offsets:
            self._execute_one(in_ptr + di, out_ptr + do, sign)

    def _execute_one(self, in_ptr, out_ptr, sign):
        if self._generation != WISDOM.generation:
            self._upgrade()
        if (in_ptr | out_ptr) & self._mask:  # an alignment other than the SIMD one: its own plan
            plan = self.prepare(sign, in_ptr % self.align, out_ptr % self.align)
        else:
            plan = self.prepare(sign)
        self._exec(plan, in_ptr, out_ptr)

    def _upgrade(self):
        """Replace heuristic plans by measured ones where wisdom for them has appeared since."""
        self._generation = WISDOM.generation
        for key in list(self._estimated):
            plan = self._make(*key, wisdom_only=True)
            if plan:
                old, self._plans[key] = self._plans[key], plan
                self._estimated.discard(key)
                if not key[1] and not key[2]:
                    self.entries[key[0]] = (self._loop, key[0]) if self._offsets else (self._exec, plan)
                with _fftw.planner_lock:
                    self.lib.destroy_plan(old)
        if not self._estimated:
            with _fftw.planner_lock:
                WISDOM.waiting.discard(self)

    def _make(self, sign, in_residue, out_residue, wisdom_only=False):
        lib = self.lib
        in_size, out_size = self._sizes
        in_dims = [(n, i) for n, i, _ in self.dims + self.howmany]
        out_dims = [(n, o) for n, _, o in self.dims + self.howmany]
        if self.kind == "R2C":  # the complex side holds n//2+1 along the last transformed axis
            last = self.dims[-1]
            out_dims[len(self.dims) - 1] = (last[0] // 2 + 1, last[2])
        elif self.kind == "C2R":
            last = self.dims[-1]
            in_dims[len(self.dims) - 1] = (last[0] // 2 + 1, last[1])
        in_buf, in_ptr = _scratch(in_dims, in_size, in_residue, self.align)
        if self.inplace:
            out_buf, out_ptr = in_buf, in_ptr
        else:
            out_buf, out_ptr = _scratch(out_dims, out_size, out_residue, self.align)
        if wisdom_only:
            attempts = ("wisdom",)
        elif self.effort:
            attempts = (self.effort,)
        else:  # default: a measured plan from wisdom if there is one, else a heuristic plan
            attempts = ("wisdom", "estimate") if self._wisdom else ("estimate",)
        t0 = time.perf_counter()
        measured = any(a in ("measure", "patient", "exhaustive") for a in attempts)
        with _fftw.planner_lock, (busy(f"FFTW: measuring the {self.kind} plan dims={self.dims} "
                                       f"howmany={self.howmany}") if measured else nullcontext()):
            lib.plan_with_nthreads(self.num_threads)
            for used in attempts:
                flags = _fftw.FFTW_MEASURE | _fftw.FFTW_WISDOM_ONLY if used == "wisdom" else _EFFORT_FLAGS[used]
                plan = self._plan_call(sign, in_ptr, out_ptr, flags)
                if plan:
                    break
        if not plan and wisdom_only:
            return 0
        seconds = time.perf_counter() - t0
        del in_buf, out_buf
        if used == "estimate" and self.effort is None and self._wisdom:
            self._estimated.add((sign, in_residue, out_residue))
            with _fftw.planner_lock:
                WISDOM.waiting.add(self)
        if not plan:
            raise _fftw.FFTWError(0, "NULL plan", f"FFTW could not plan {self.kind} dims={self.dims} "
                                                  f"howmany={self.howmany}")
        if self.log.isEnabledFor(logging.INFO):
            self.log.info("FFTW (%s, %s) %s plan dims=%s howmany=%s sign=%+d, %d thread(s), planned with %s "
                          "in %.1f ms", lib.provider, lib.precision, self.kind, self.dims, self.howmany, sign,
                          self.num_threads, used, 1e3 * seconds)
        if self._wisdom and used in ("measure", "patient", "exhaustive"):
            _save_wisdom(lib)
        self._how[(sign, in_residue, out_residue)] = used
        return plan

    def served_by(self, sign: int) -> str | None:
        """What runs direction ``sign`` on SIMD-aligned arrays: 'fftw:wisdom' (a measured plan from wisdom),
        'fftw:estimate', 'fftw:measure', ... ; the provider's name for MKL's and NVPL's wrappers (they do not
        plan); None while it is not planned."""
        how = self._how.get((sign, 0, 0))
        if how is None or (sign, 0, 0) not in self._plans:
            return None
        return f"fftw:{how}" if self._wisdom else self.lib.provider

    def _plan_call(self, sign, in_ptr, out_ptr, flags):
        lib = self.lib
        if self.kind == "C2C":
            return lib.plan_guru64_dft(self.dims, self.howmany, in_ptr, out_ptr, sign, flags)
        if self.kind == "R2C":
            return lib.plan_guru64_dft_r2c(self.dims, self.howmany, in_ptr, out_ptr, flags)
        return lib.plan_guru64_dft_c2r(self.dims, self.howmany, in_ptr, out_ptr, flags | _fftw.FFTW_DESTROY_INPUT)

    def free(self):
        self.entries.clear()
        self._finalizer()


def _merge_loops(loops):
    """Batch loops (n, in stride, out stride) without size-1 loops, with loops that are one loop in disguise
    fused; outermost (largest stride) first."""
    merged = []
    for n, i, o in sorted((d for d in loops if d[0] != 1), key=lambda d: (abs(d[1]), abs(d[2])), reverse=True):
        if merged and merged[-1][1] == n * i and merged[-1][2] == n * o:
            merged[-1] = (merged[-1][0] * n, i, o)
        else:
            merged.append((n, i, o))
    return merged


def _destroy_all(lib, plans):
    with _fftw.planner_lock:
        for plan in plans.values():
            try:
                lib.destroy_plan(plan)
            except Exception:
                pass
        plans.clear()
