"""ctypes binding to the FFTW3 C API (double ``fftw_`` and single ``fftwf_`` precision), 1:1 with the C names.

Two providers export this API:

* ``"fftw"``: FFTW 3.3.x itself (the copies bundled by the pyFFTW wheel under ``pyfftw.libs/``, or the system's
  ``libfftw3.so.3``), with its OpenMP threading library (``libfftw3_omp``/``libfftw3f_omp``) for
  ``init_threads``/``plan_with_nthreads``;
* ``"mkl"``: Intel oneMKL's FFTW3 wrappers in ``libmkl_rt`` (plans are MKL DFTI descriptors; wisdom calls are
  empty there, see ``FFTWLibrary`` below).
* ``"nvpl"``: NVIDIA NVPL FFT on Arm (``libnvpl_fftw.so.0``, both precisions and threads in one library). NVPL
  plans through FFTW's basic and advanced interfaces only (its guru planners are stubs that return NULL): the
  guru64 layouts are translated to ``plan_many_dft*`` (see ``_many_layout``); no wisdom, the flags are ignored.
  Untested on Arm hardware: the translation is checked with FFTW's own plan_many on x86.

Nothing is loaded at import. ``get_fftw(precision, provider)`` returns a cached ``FFTWLibrary`` whose methods are
named after the C functions without their prefix and take Python ints for pointers and plans.

Thread safety (FFTW manual, "Thread safety"): only the execute functions are thread-safe. Every other call
(planning, destroying plans, wisdom, ``init_threads``, ``plan_with_nthreads``, ``set_timelimit``,
``forget_wisdom``, ``cleanup``) reads or writes the planner's shared state and must be made while holding the
module-level ``planner_lock``. The lock is per process, not per provider or precision: it also covers other
users of the same library in this process only if they take it too (pyFFTW, for instance, loads the same bundled
FFTW and keeps its own lock, so planning through pyFFTW and through this module from two threads at once is not
safe).

Symbol interposition: once oneMKL's FFTW wrappers have made a plan, ``libmkl_rt`` has loaded
``libmkl_intel_lp64`` with RTLD_GLOBAL, which puts MKL's own ``fftw_*``/``fftwf_*`` entry points in the process's global scope. Any library
loaded *after* that which calls FFTW by symbol name binds to MKL instead of its own FFTW (pyFFTW's extension
imported after MKL, for instance, silently runs MKL). This module is not affected: every function is looked up
with dlsym on the handle of the library it belongs to (``LazyFunctions``), and the entry points it uses (guru64
planners, execute, wisdom, threads) were checked to still reach FFTW when FFTW is loaded after MKL (tests).
"""

from __future__ import annotations

import ctypes
import enum
import os
import threading
from ctypes import POINTER, c_char_p, c_double, c_int, c_ssize_t, c_uint, c_void_p

from ..errors import FFTWError
from ._loader import LazyFunctions, load_library, loaded_libraries
from ._status import make_checker

__all__ = [
    "FFTW_FORWARD",
    "FFTW_BACKWARD",
    "FFTW_NO_TIMELIMIT",
    "FFTW_MEASURE",
    "FFTW_DESTROY_INPUT",
    "FFTW_UNALIGNED",
    "FFTW_CONSERVE_MEMORY",
    "FFTW_EXHAUSTIVE",
    "FFTW_PRESERVE_INPUT",
    "FFTW_PATIENT",
    "FFTW_ESTIMATE",
    "FFTW_WISDOM_ONLY",
    "FFTWStatus",
    "FFTWNotAvailableError",
    "IODim64",
    "FFTWLibrary",
    "get_fftw",
    "planner_lock",
]

# Values from fftw3.h (FFTW 3.3.10).
FFTW_FORWARD = -1
FFTW_BACKWARD = +1
FFTW_NO_TIMELIMIT = -1.0
FFTW_MEASURE = 0
FFTW_DESTROY_INPUT = 1 << 0
FFTW_UNALIGNED = 1 << 1
FFTW_CONSERVE_MEMORY = 1 << 2
FFTW_EXHAUSTIVE = 1 << 3
FFTW_PRESERVE_INPUT = 1 << 4
FFTW_PATIENT = 1 << 5
FFTW_ESTIMATE = 1 << 6
FFTW_WISDOM_ONLY = 1 << 21

#: Hold this around every FFTW call except the execute functions (planning, destroy_plan, wisdom, threads setup).
#: Re-entrant, so a caller holding it may call methods that take it themselves.
planner_lock = threading.RLock()


class FFTWStatus(enum.IntEnum):
    """FFTW has no status codes; its int-returning calls give 1 (or non-zero) for success and 0 for failure.

    The negative values are this binding's own conditions.
    """

    FFTW_FAILURE = 0
    FFTW_SUCCESS = 1
    FFTW_NOT_AVAILABLE = -1  # the function or feature is not exported by this provider/library version
    FFTW_THREADS_UNAVAILABLE = -2  # no usable threading library for this FFTW


_check = make_checker(FFTWError, FFTWStatus, success=FFTWStatus.FFTW_SUCCESS)


class FFTWNotAvailableError(FFTWError, NotImplementedError):
    """A function or feature that this provider (or this version of the library) does not have."""

    def __init__(self, detail: str, status: int = FFTWStatus.FFTW_NOT_AVAILABLE):
        super().__init__(status, FFTWStatus(status).name, detail)


class IODim64(ctypes.Structure):
    """``fftw_iodim64``: ``ptrdiff_t n, is, os`` (strides in elements, not bytes)."""

    _fields_ = [("n", c_ssize_t), ("is", c_ssize_t), ("os", c_ssize_t)]


_P_DIMS = POINTER(IODim64)
_P_INT = POINTER(c_int)
_P_DOUBLE = POINTER(c_double)


def _tables(prefix: str) -> tuple[dict, dict]:
    """(main library table, threading library table) for one precision prefix."""
    p = prefix
    v = c_void_p
    main = {
        p + "execute": (None, [v]),
        p + "execute_dft": (None, [v, v, v]),
        p + "execute_dft_r2c": (None, [v, v, v]),
        p + "execute_dft_c2r": (None, [v, v, v]),
        p + "plan_guru64_dft": (v, [c_int, _P_DIMS, c_int, _P_DIMS, v, v, c_int, c_uint]),
        p + "plan_guru64_dft_r2c": (v, [c_int, _P_DIMS, c_int, _P_DIMS, v, v, c_uint]),
        p + "plan_guru64_dft_c2r": (v, [c_int, _P_DIMS, c_int, _P_DIMS, v, v, c_uint]),
        # the advanced interface (NVPL plans only through it): rank, n, howmany, in, inembed, istride, idist,
        # out, onembed, ostride, odist[, sign], flags
        p + "plan_many_dft": (v, [c_int, _P_INT, c_int, v, _P_INT, c_int, c_int, v, _P_INT, c_int, c_int, c_int,
                                  c_uint]),
        p + "plan_many_dft_r2c": (v, [c_int, _P_INT, c_int, v, _P_INT, c_int, c_int, v, _P_INT, c_int, c_int, c_uint]),
        p + "plan_many_dft_c2r": (v, [c_int, _P_INT, c_int, v, _P_INT, c_int, c_int, v, _P_INT, c_int, c_int, c_uint]),
        p + "destroy_plan": (None, [v]),
        p + "forget_wisdom": (None, []),
        p + "cleanup": (None, []),
        p + "set_timelimit": (None, [c_double]),
        p + "export_wisdom_to_string": (v, []),  # char *, released with <prefix>free
        p + "import_wisdom_from_string": (c_int, [c_char_p]),
        p + "export_wisdom_to_filename": (c_int, [c_char_p]),
        p + "import_wisdom_from_filename": (c_int, [c_char_p]),
        p + "sprint_plan": (v, [v]),  # char *, released with <prefix>free
        p + "flops": (None, [v, _P_DOUBLE, _P_DOUBLE, _P_DOUBLE]),
        p + "estimate_cost": (c_double, [v]),
        p + "cost": (c_double, [v]),
        p + "alignment_of": (c_int, [v]),
        p + "malloc": (v, [ctypes.c_size_t]),
        p + "free": (None, [v]),
        # FFTW >= 3.3.9 keeps planner_nthreads in the threading library; looked up in both.
        p + "planner_nthreads": (c_int, []),
    }
    threads = {
        p + "init_threads": (c_int, []),
        p + "plan_with_nthreads": (None, [c_int]),
        p + "planner_nthreads": (c_int, []),
        p + "make_planner_thread_safe": (None, []),
        p + "cleanup_threads": (None, []),
    }
    return main, threads


_LIBS = {
    ("double", "fftw"): ("fftw3", "fftw3_omp"),
    ("single", "fftw"): ("fftw3f", "fftw3f_omp"),
    ("double", "mkl"): ("mkl_rt", "mkl_rt"),
    ("single", "mkl"): ("mkl_rt", "mkl_rt"),
    ("double", "nvpl"): ("nvpl_fftw", "nvpl_fftw"),
    ("single", "nvpl"): ("nvpl_fftw", "nvpl_fftw"),
}
PROVIDERS = ("fftw", "mkl", "nvpl")


def library_name(precision: str, provider: str) -> str:
    """The loader's name of the main library of (precision, provider) ('fftw3', 'fftw3f', 'mkl_rt', ...)."""
    return _LIBS[(precision, provider)][0]


_INT_MAX = (1 << 31) - 1

_HOT = ("execute", "execute_dft", "execute_dft_r2c", "execute_dft_c2r")

def _address(fn) -> int:
    return ctypes.cast(fn, c_void_p).value or 0


def _as_dims(dims) -> tuple[int, object]:
    """A sequence of (n, is, os) -> (rank, IODim64 array or None)."""
    dims = list(dims)
    if not dims:
        return 0, None
    arr = (IODim64 * len(dims))()
    for i, (n, istride, ostride) in enumerate(dims):
        arr[i].n = n
        setattr(arr[i], "is", istride)
        arr[i].os = ostride
    return len(dims), arr


def _merge_howmany(howmany) -> list[tuple[int, int, int]]:
    """Drop size-1 loops and fuse loops that are one loop in disguise (outer stride == inner n * inner stride,
    for both input and output). The order of the howmany loops does not matter to FFTW's semantics."""
    loops = sorted(((int(n), int(i), int(o)) for n, i, o in howmany if int(n) != 1),
                   key=lambda d: (abs(d[1]), abs(d[2])), reverse=True)
    merged: list[tuple[int, int, int]] = []
    for n, i, o in loops:
        if merged:
            pn, pi, po = merged[-1]
            if pi == n * i and po == n * o:
                merged[-1] = (pn * n, i, o)
                continue
        merged.append((n, i, o))
    return merged


_MKL_MAX_RANK = 7


def _many_layout(kind, dims, howmany_dims):
    """A guru64 layout (dims and howmany loops as (n, is, os) in elements) in the terms of the advanced interface:
    (n, inembed, istride, onembed, ostride, howmany, idist, odist).

    ``plan_many`` places element (i_0 .. i_r-1) of batch b at ``b * dist + stride * (i_r-1 + embed[r-1] *
    (i_r-2 + embed[r-2] * ...))``: the dimensions must nest (each stride a positive multiple of the next one, the
    quotient at least that dimension's extent: the embedding), and there is one batch loop at most (loops that
    are one in disguise are fused first). Other layouts raise FFTWNotAvailableError (the caller loops over the
    outer batches itself; ``FFTWPlan`` does). Extents are in the element type of each side: for R2C the input
    holds n reals and the output n // 2 + 1 complex values along the last dimension, for C2R the reverse.
    """
    dims = [tuple(int(v) for v in d) for d in dims]
    loops = _merge_howmany(howmany_dims)
    if len(loops) > 1:
        raise FFTWNotAvailableError(f"NVPL FFT plans one batch loop; this layout needs {len(loops)}: {loops}")
    if not 1 <= len(dims) <= 3:
        raise FFTWNotAvailableError(f"NVPL FFT plans transforms of rank 1 to 3, not {len(dims)}")
    n = [d[0] for d in dims]
    half = n[-1] // 2 + 1
    in_last = half if kind == "C2R" else n[-1]
    out_last = half if kind == "R2C" else n[-1]

    def embed(strides, last):
        extents = n[:-1] + [last]
        if any(s <= 0 for s in strides):
            raise FFTWNotAvailableError(f"NVPL FFT's advanced interface needs positive strides, not {strides}")
        out = [extents[0]]
        for d in range(1, len(strides)):
            q, r = divmod(strides[d - 1], strides[d])
            if r or q < extents[d]:
                raise FFTWNotAvailableError(
                    f"strides {strides} do not nest (each a multiple of the next, covering its extent): NVPL FFT's "
                    f"advanced interface cannot express this layout")
            out.append(q)
        return out, strides[-1]

    inembed, istride = embed([d[1] for d in dims], in_last)
    onembed, ostride = embed([d[2] for d in dims], out_last)
    howmany, idist, odist = loops[0] if loops else (1, 0, 0)
    values = n + inembed + onembed + [istride, ostride, howmany, abs(idist), abs(odist)]
    if max(values) > _INT_MAX:
        raise FFTWNotAvailableError("NVPL FFT's advanced interface takes 32-bit sizes and strides; this layout "
                                    "needs larger ones")
    return n, inembed, istride, onembed, ostride, howmany, idist, odist


class FFTWLibrary:
    """The FFTW3 API of one precision (``"double"`` -> ``fftw_``, ``"single"`` -> ``fftwf_``) from one provider.

    Libraries are loaded and functions bound on first use. Pointers and plans are Python ints; a plan is ``0``
    where FFTW returned NULL. Use ``get_fftw`` to share one instance per (precision, provider).

    The execute functions (``execute``, ``execute_dft``, ``execute_dft_r2c``, ``execute_dft_c2r``) are the ctypes
    function objects themselves, set as instance attributes on first use: one ctypes call per transform, no Python
    work around it; they release the GIL and are thread-safe (FFTW allows executing the same plan from several
    threads at once with the new-array functions, on arrays of the same alignment, strides and in-/out-of-place
    kind as the planning arrays).

    Every other method must be called with ``planner_lock`` held (they take it themselves too, the lock is
    re-entrant; hold it explicitly to make a sequence such as plan_with_nthreads + plan atomic).

    Provider ``"fftw"``: on first use the main library is loaded and ``init_threads`` is called before any other
    FFTW call when the matching OpenMP library loads (see ``_start`` for why wisdom depends on that).

    Provider ``"mkl"`` (oneMKL's FFTW3 wrappers, measured with mkl 2026.2): plans are made at once whatever the
    flags (MEASURE/PATIENT do not measure, WISDOM_ONLY is ignored and still gives a plan); there is no wisdom
    (export gives NULL, import 0: the wisdom methods here raise ``FFTWNotAvailableError``; ``forget_wisdom`` is a
    harmless no-op); ``flops``/``cost`` give zeros and ``sprint_plan`` "" ; ``planner_nthreads`` and
    ``make_planner_thread_safe`` are not exported (FFTWNotAvailableError); one batch loop only (howmany_rank
    <= 1 after fusing, else FFTWNotAvailableError) and ranks 1..7. The new-array execute functions work
    (checked against numpy for batched, strided, transposed and in-place layouts).
    """

    def __init__(self, precision: str = "double", provider: str = "fftw"):
        if precision not in ("double", "single"):
            raise ValueError(f"precision must be 'double' or 'single', not {precision!r}")
        if provider not in PROVIDERS:
            raise ValueError(f"provider must be one of {', '.join(map(repr, PROVIDERS))}, not {provider!r}")
        self.precision = precision
        self.provider = provider
        self.prefix = "fftw_" if precision == "double" else "fftwf_"
        self._main_name, self._threads_name = _LIBS[(precision, provider)]
        main_table, threads_table = _tables(self.prefix)
        self._main = LazyFunctions(self._main_name, main_table)
        self._threads = LazyFunctions(self._threads_name, threads_table)
        self._threads_loaded: bool | str | None = None  # None: not tried; True; or why it is unusable
        self._threads_initialised = False
        self._started = False
        self._starting = False
        self._simd_alignment: int | None = None

    def __repr__(self) -> str:
        return f"FFTWLibrary(precision={self.precision!r}, provider={self.provider!r})"

    # ----------------------------------------------------------------------------------------------- binding
    def __getattr__(self, name: str):
        # Reached only while the hot-path functions are not yet instance attributes.
        if name in _HOT:
            fn = self._fn(name)
            self.__dict__[name] = fn
            return fn
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    def _fn(self, name: str, threads: bool = False):
        """The bound C function ``<prefix><name>``, raising FFTWNotAvailableError when it is not exported.

        ``threads=True`` looks in the threading library (loaded and checked first, see ``_load_threads_library``).
        """
        if not self._started:
            self._start()
        cname = self.prefix + name
        if name == "planner_nthreads":  # main library in MKL, threading library in FFTW >= 3.3.9
            libs = [self._main]
            if self.provider == "fftw" and self._load_threads_library(raise_error=False):
                libs.append(self._threads)
        elif threads:
            self._load_threads_library()
            libs = [self._threads]
        else:
            libs = [self._main]
        for lib in libs:
            try:
                return getattr(lib, cname)
            except AttributeError:
                continue
        raise FFTWNotAvailableError(
            f"{cname} is not exported by the {self.provider} provider ({self.library_path or self._main_name})"
        )

    def _start(self) -> None:
        """First use: load the main library and, for "fftw", call init_threads before anything else.

        FFTW's wisdom header carries a signature of the planner's solver list, and ``fftw_init_threads`` adds
        solvers to it: wisdom exported by a process that called init_threads before its first planner call is
        rejected (import returns 0) by a process that did not, or that called it only after planning, and the
        reverse. Calling it first, always, as pyFFTW does at import, keeps wisdom exchangeable between cumath
        processes and with pyFFTW. Where no threading library can be used, FFTW runs single-threaded and its
        wisdom only matches other processes without one.
        """
        with planner_lock:
            if self._started or self._starting:
                return
            self._starting = True
            try:
                load_library(self._main_name)  # LibraryNotFoundError propagates
                if self.provider == "fftw":
                    try:
                        self.init_threads()
                    except FFTWError:
                        pass  # recorded in self._threads_loaded; plan_with_nthreads(n > 1) will raise
                self._started = True
            finally:
                self._starting = False

    def _load_threads_library(self, raise_error: bool = True) -> bool:
        """Load the threading library that belongs to the loaded main library, once.

        For "fftw", the loader takes it from the main library's folder (preloading the bundled OpenMP runtime there), and the
        threading library must resolve ``<prefix>execute`` to the main library's own: the loader falls back to
        the system's ``libfftw3_omp.so.3`` when the bundled one cannot load, and that one drives the system
        ``libfftw3.so.3``, a different planner. Raises FFTWError(FFTW_THREADS_UNAVAILABLE) otherwise.
        """
        if self._threads_loaded is None:
            with planner_lock:
                if self._threads_loaded is None:
                    self._threads_loaded = self._try_load_threads_library()
        if self._threads_loaded is True:
            return True
        if raise_error:
            raise FFTWError(FFTWStatus.FFTW_THREADS_UNAVAILABLE, "FFTW_THREADS_UNAVAILABLE", self._threads_loaded)
        return False

    def _try_load_threads_library(self):
        """True, or a text saying why the threading library is unusable."""
        main = load_library(self._main_name)  # LibraryNotFoundError propagates: nothing to thread
        if self.provider in ("mkl", "nvpl"):
            return True
        main_path = self.library_path or ""
        try:
            thr = load_library(self._threads_name)
        except OSError as exc:  # LibraryNotFoundError
            return f"no OpenMP threading library for {main_path}: {exc}"
        name = self.prefix + "execute"
        try:
            same = _address(getattr(main, name)) == _address(getattr(thr, name))
        except AttributeError:
            same = False
        if not same:
            return (
                f"the threading library {self.threads_library_path} belongs to another FFTW than {main_path} "
                f"(its {name} resolves elsewhere); the bundled one could not be loaded"
            )
        return True

    @property
    def started(self) -> bool:
        """Whether this library has been loaded and set up (its first use happened)."""
        return self._started

    def load(self) -> "FFTWLibrary":
        """Load the main library and bind the execute functions now (raises LibraryNotFoundError)."""
        for name in _HOT:
            getattr(self, name)
        return self

    @property
    def library_path(self) -> str | None:
        """Path of the loaded main library (None before it is loaded)."""
        return loaded_libraries().get(self._main_name)

    @property
    def threads_library_path(self) -> str | None:
        """Path of the loaded threading library (for "mkl": libmkl_rt itself)."""
        return loaded_libraries().get(self._threads_name)

    def has(self, name: str) -> bool:
        """Whether ``<prefix><name>`` is exported (loads the libraries; threading ones only for thread calls)."""
        try:
            self._fn(name, threads=name in ("init_threads", "plan_with_nthreads", "make_planner_thread_safe",
                                            "cleanup_threads"))
        except FFTWError:  # not exported, or no usable threading library
            return False
        return True

    # ---------------------------------------------------------------------------------------------- planning
    def _layout(self, dims, howmany_dims):
        """(rank, dims array, howmany_rank, howmany array); for "mkl", the limits of oneMKL's wrappers.

        oneMKL's fftw_plan_guru64_* return NULL for howmany_rank > 1 (even when the loops could be fused), for
        rank 0 and for rank > 7 (measured with mkl 2026.2). For "mkl" the howmany loops are fused where that is
        exact (see ``_merge_howmany``), and a layout still outside those limits raises FFTWNotAvailableError
        instead of giving a NULL plan that would read like "no wisdom".
        """
        if self.provider == "mkl":
            dims = list(dims)
            howmany_dims = list(howmany_dims)
            if len(howmany_dims) > 1:
                howmany_dims = _merge_howmany(howmany_dims)
            if len(howmany_dims) > 1:
                raise FFTWNotAvailableError(
                    f"oneMKL's FFTW3 wrappers support one batch loop (howmany_rank <= 1); this layout needs "
                    f"{len(howmany_dims)}: {howmany_dims}. Use provider 'fftw', or loop over the outer batch axes"
                )
            if not 1 <= len(dims) <= _MKL_MAX_RANK:
                raise FFTWNotAvailableError(
                    f"oneMKL's FFTW3 wrappers support transform ranks 1..{_MKL_MAX_RANK}, not {len(dims)}"
                )
        rank, d = _as_dims(dims)
        hrank, h = _as_dims(howmany_dims)
        return rank, d, hrank, h

    def plan_guru64_dft(self, dims, howmany_dims, in_ptr: int, out_ptr: int, sign: int, flags: int) -> int:
        """``fftw_plan_guru64_dft``: complex-to-complex plan; dims/howmany_dims are (n, is, os) in elements.

        Returns the plan, or 0 where FFTW returns NULL (e.g. FFTW_WISDOM_ONLY without matching wisdom, or an
        unsupported layout). Hold ``planner_lock``. FFTW_MEASURE/PATIENT/EXHAUSTIVE overwrite both arrays.
        """
        if self.provider == "nvpl":
            return self._plan_many("plan_many_dft", "C2C", dims, howmany_dims, in_ptr, out_ptr, (sign,), flags)
        rank, d, hrank, h = self._layout(dims, howmany_dims)
        fn = self._fn("plan_guru64_dft")
        with planner_lock:
            return fn(rank, d, hrank, h, in_ptr, out_ptr, sign, flags) or 0

    def _plan_many(self, name, kind, dims, howmany_dims, in_ptr, out_ptr, sign, flags) -> int:
        """A guru64 layout planned through the advanced interface (``fftw_plan_many_dft*``); returns 0 on NULL."""
        n, inembed, istride, onembed, ostride, howmany, idist, odist = _many_layout(kind, dims, howmany_dims)
        rank = len(n)
        arr = c_int * rank
        fn = self._fn(name)
        with planner_lock:
            return fn(rank, arr(*n), howmany, in_ptr, arr(*inembed), istride, idist, out_ptr, arr(*onembed),
                      ostride, odist, *sign, flags) or 0

    def plan_guru64_dft_r2c(self, dims, howmany_dims, in_ptr: int, out_ptr: int, flags: int) -> int:
        """``fftw_plan_guru64_dft_r2c``: real input (n real), Hermitian half output (last dim n//2+1 complex).

        Strides: ``is`` in reals, ``os`` in complex elements. Returns 0 on NULL. Hold ``planner_lock``.
        """
        if self.provider == "nvpl":
            return self._plan_many("plan_many_dft_r2c", "R2C", dims, howmany_dims, in_ptr, out_ptr, (), flags)
        rank, d, hrank, h = self._layout(dims, howmany_dims)
        fn = self._fn("plan_guru64_dft_r2c")
        with planner_lock:
            return fn(rank, d, hrank, h, in_ptr, out_ptr, flags) or 0

    def plan_guru64_dft_c2r(self, dims, howmany_dims, in_ptr: int, out_ptr: int, flags: int) -> int:
        """``fftw_plan_guru64_dft_c2r``: dims give the logical (real) sizes; ``is`` in complex, ``os`` in reals.

        c2r destroys its input unless FFTW_PRESERVE_INPUT is given (FFTW supports that for rank 1 only; the plan
        is 0 otherwise). Returns 0 on NULL. Hold ``planner_lock``.
        """
        if self.provider == "nvpl":
            return self._plan_many("plan_many_dft_c2r", "C2R", dims, howmany_dims, in_ptr, out_ptr, (), flags)
        rank, d, hrank, h = self._layout(dims, howmany_dims)
        fn = self._fn("plan_guru64_dft_c2r")
        with planner_lock:
            return fn(rank, d, hrank, h, in_ptr, out_ptr, flags) or 0

    def destroy_plan(self, plan: int) -> None:
        """``fftw_destroy_plan`` (ignores 0). Hold ``planner_lock``."""
        if plan:
            fn = self._fn("destroy_plan")
            with planner_lock:
                fn(plan)

    # -------------------------------------------------------------------------------------------- threading
    def init_threads(self) -> None:
        """``fftw_init_threads``, once per instance (later calls return at once).

        For "fftw" this loads the OpenMP threading library that matches the loaded main library; raises
        FFTWError(FFTW_THREADS_UNAVAILABLE) when there is none, FFTWError(FFTW_FAILURE) when init_threads returns
        0. For "mkl" the exported function is called (MKL threads its plans itself). Hold ``planner_lock``.
        """
        with planner_lock:
            if self._threads_initialised:
                return
            fn = self._fn("init_threads", threads=True)
            _check(FFTWStatus.FFTW_SUCCESS if fn() else FFTWStatus.FFTW_FAILURE, f"{self.prefix}init_threads")
            self._threads_initialised = True

    @property
    def threads_available(self) -> bool:
        """Whether ``init_threads`` succeeds (tries it once)."""
        try:
            self.init_threads()
        except FFTWError:
            return False
        return True

    def plan_with_nthreads(self, nthreads: int) -> None:
        """``fftw_plan_with_nthreads``: thread count for plans created afterwards (calls init_threads first).

        ``nthreads == 1`` never fails (it is a no-op where threads are unavailable). Hold ``planner_lock``.
        """
        nthreads = int(nthreads)
        if nthreads < 1:
            raise ValueError("nthreads must be >= 1")
        with planner_lock:
            try:
                self.init_threads()
            except FFTWError:
                if nthreads == 1:
                    return
                raise
            self._fn("plan_with_nthreads", threads=True)(nthreads)

    def planner_nthreads(self) -> int:
        """``fftw_planner_nthreads`` (FFTW >= 3.3.9 only; not in FFTW 3.3.5 nor MKL). Hold ``planner_lock``."""
        fn = self._fn("planner_nthreads")
        with planner_lock:
            return int(fn())

    def make_planner_thread_safe(self) -> None:
        """``fftw_make_planner_thread_safe`` (FFTW >= 3.3.5 threading library; MKL does not export it).

        Makes FFTW's planner take its own lock; ``planner_lock`` is still the way to serialise callers here.
        """
        with planner_lock:
            self.init_threads()
            self._fn("make_planner_thread_safe", threads=True)()

    # ----------------------------------------------------------------------------------------------- wisdom
    def _no_wisdom_in_mkl(self, what: str) -> None:
        if self.provider == "mkl":
            raise FFTWNotAvailableError(f"{self.prefix}{what}: oneMKL's FFTW3 wrappers have no wisdom (empty stub)")

    def export_wisdom_to_string(self) -> bytes:
        """``fftw_export_wisdom_to_string``; the C string is released with ``fftw_free``. Hold ``planner_lock``."""
        self._no_wisdom_in_mkl("export_wisdom_to_string")
        fn = self._fn("export_wisdom_to_string")
        free = self._fn("free")
        with planner_lock:
            ptr = fn()
            if not ptr:
                raise FFTWError(FFTWStatus.FFTW_FAILURE, "FFTW_FAILURE", f"{self.prefix}export_wisdom_to_string")
            try:
                return ctypes.string_at(ptr)
            finally:
                free(ptr)

    def import_wisdom_from_string(self, wisdom: bytes) -> bool:
        """``fftw_import_wisdom_from_string``: True when the wisdom was read. Hold ``planner_lock``."""
        self._no_wisdom_in_mkl("import_wisdom_from_string")
        if isinstance(wisdom, str):
            wisdom = wisdom.encode("ascii")
        fn = self._fn("import_wisdom_from_string")
        with planner_lock:
            return bool(fn(bytes(wisdom)))

    def export_wisdom_to_filename(self, filename) -> None:
        """``fftw_export_wisdom_to_filename``; raises FFTWError when FFTW cannot write. Hold ``planner_lock``."""
        self._no_wisdom_in_mkl("export_wisdom_to_filename")
        fn = self._fn("export_wisdom_to_filename")
        with planner_lock:
            _check(1 if fn(os.fsencode(filename)) else 0, f"{self.prefix}export_wisdom_to_filename({filename!s})")

    def import_wisdom_from_filename(self, filename) -> bool:
        """``fftw_import_wisdom_from_filename``: True when the file was read. Hold ``planner_lock``."""
        self._no_wisdom_in_mkl("import_wisdom_from_filename")
        fn = self._fn("import_wisdom_from_filename")
        with planner_lock:
            return bool(fn(os.fsencode(filename)))

    def forget_wisdom(self) -> None:
        """``fftw_forget_wisdom`` (a no-op in MKL). Hold ``planner_lock``."""
        fn = self._fn("forget_wisdom")
        with planner_lock:
            fn()

    def set_timelimit(self, seconds: float) -> None:
        """``fftw_set_timelimit`` for later plans (FFTW_NO_TIMELIMIT = -1.0 removes it). Hold ``planner_lock``."""
        fn = self._fn("set_timelimit")
        with planner_lock:
            fn(float(seconds))

    def cleanup(self) -> None:
        """``fftw_cleanup``: frees wisdom and planner caches; every plan must be destroyed first."""
        fn = self._fn("cleanup")
        with planner_lock:
            fn()

    # -------------------------------------------------------------------------------------------- plan info
    # FFTW lists only the execute functions as thread-safe, so these take planner_lock too.
    def flops(self, plan: int) -> tuple[float, float, float]:
        """``fftw_flops``: (additions, multiplications, fused multiply-adds) of one execution (MKL: zeros)."""
        add, mul, fma = c_double(), c_double(), c_double()
        fn = self._fn("flops")
        with planner_lock:
            fn(plan, ctypes.byref(add), ctypes.byref(mul), ctypes.byref(fma))
        return add.value, mul.value, fma.value

    def cost(self, plan: int) -> float:
        """``fftw_cost``: the planner's measured (or estimated) cost of the plan (MKL: 0)."""
        fn = self._fn("cost")
        with planner_lock:
            return float(fn(plan))

    def estimate_cost(self, plan: int) -> float:
        """``fftw_estimate_cost`` (MKL: 0)."""
        fn = self._fn("estimate_cost")
        with planner_lock:
            return float(fn(plan))

    def sprint_plan(self, plan: int) -> str:
        """``fftw_sprint_plan``: the plan's description (released with ``fftw_free``); "" where NULL (MKL)."""
        fn, free = self._fn("sprint_plan"), self._fn("free")
        with planner_lock:
            ptr = fn(plan)
            if not ptr:
                return ""
            try:
                return ctypes.string_at(ptr).decode("ascii", "replace")
            finally:
                free(ptr)

    def alignment_of(self, ptr: int) -> int:
        """``fftw_alignment_of``: ``ptr`` modulo the SIMD alignment; new-array execute needs equal values."""
        return int(self._fn("alignment_of")(ptr))

    @property
    def simd_alignment(self) -> int:
        """The alignment (bytes) that alignment_of measures against, found by probing; 1 means none."""
        if self._simd_alignment is None:
            buf = ctypes.create_string_buffer(8192)
            base = (ctypes.addressof(buf) + 4095) & ~4095
            fn = self._fn("alignment_of")
            found = 1
            if fn(base) == 0:
                k = 1
                while k <= 1024 and fn(base + k) != 0:
                    k *= 2
                found = k if k <= 1024 else 1
            self._simd_alignment = found
        return self._simd_alignment

    @property
    def version(self) -> str:
        """The exported ``fftw_version`` string (``fftwf_version`` for single), or a fixed text where absent."""
        handle = load_library(self._main_name)
        if self.provider == "nvpl":
            try:
                fn = handle.nvpl_fft_get_version
            except AttributeError:
                return "NVPL FFT"
            fn.restype, fn.argtypes = c_int, []
            v = fn()
            return f"NVPL FFT {v // 10000}.{v // 100 % 100}.{v % 100}"
        for name in (self.prefix + "version", "fftw_version"):
            try:
                text = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(handle, name))).decode("ascii", "replace")
            except ValueError:  # symbol not exported
                continue
            if self.provider == "mkl":
                return f"oneMKL FFTW3 wrappers ({text})"
            return text
        return "oneMKL FFTW3 wrappers" if self.provider == "mkl" else "FFTW (unknown version)"

    mkl_limitations = (
        "oneMKL FFTW3 wrappers: no wisdom (export gives NULL, import 0), no planning by measurement "
        "(WISDOM_ONLY ignored), flops/cost zero, no planner_nthreads, no make_planner_thread_safe, "
        "howmany_rank <= 1, rank 1..7."
    )


_instances: dict[tuple[str, str], FFTWLibrary] = {}
_instances_lock = threading.Lock()


def get_fftw(precision: str = "double", provider: str = "fftw") -> FFTWLibrary:
    """The shared ``FFTWLibrary`` for (precision, provider); nothing is loaded until it is first used."""
    key = (precision, provider)
    lib = _instances.get(key)
    if lib is None:
        with _instances_lock:
            lib = _instances.get(key)
            if lib is None:
                lib = _instances[key] = FFTWLibrary(precision, provider)
    return lib
