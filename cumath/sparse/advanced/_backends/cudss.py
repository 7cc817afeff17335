"""cuDSS 1.0: the GPU engine. One handle (the caller's or its own), one config and one data object, and the
matrix objects of one problem (a system or a batch of them, through cuDSS's batch matrices).

Handles: creating a cuDSS handle costs (it sets up cuBLAS and streams), so the solvers of one thread on one GPU
share one, kept for the process; the order in which handles and the objects made from them are destroyed is the
business of ``_cudss_lifetime`` (read it before changing anything here). A caller's handle
(``DirectSolverOptions.handle``) is used as given and never destroyed: keep it alive until its solvers are freed.

Threads: cuDSS does its reordering and symbolic analysis on the host, in parallel through a threading layer.
By default the one that ships with cuDSS (``libcudss_mtlayer_gomp.so*``, next to ``libcudss``) is loaded with
as many threads as the process may use (``CUDSS_CONFIG_HOST_NTHREADS``); ``multithreading_lib`` names another.
cuDSS 1.0 compiles some kernels at run time; they are cached under cumath's cache folder
(``cache_dir("cudss-jit")``) unless ``CUDSS_JIT_CACHE_DIR`` says otherwise, so a second process does not compile
them again.

Pivoting: cuDSS's default reordering (nested dissection) pivots only within supernodes and perturbs pivots
that stay small, which can leave wrong solutions for general matrices without diagonal dominance. After each
factorization the solver reads how many pivots were perturbed; the solutions of such a factorization are
checked (``_executors``), and for a general matrix whose reordering, pivoting and matching the caller left
alone, a solution that fails the check makes the plan switch to global pivoting (``pivot_globally``: the
BTF+COLAMD reordering, matching off, which cuDSS does not combine with it), analyse and factorize again, and
solve again (logged).

Matching: a general matrix whose values are (weakly) row diagonally dominant needs no pivoting, and cuDSS's
matching is ~10% of its analysis; such a matrix (checked by a GPU kernel, ``_cudss_checks.DominanceCheck``) is
analysed without it where the caller named no matching (``'auto'`` asks for cuDSS's own choice). Each later
factorization of new values checks them again (read with the factorization's status, no wait of its own), and
values that are not dominant, or perturbed pivots, bring cuDSS's matching back: analysed and factorized again
(logged). ``plan_config`` reads the matching cuDSS was configured with.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import os
import weakref

import numpy as np

from ...._bindings import cudss
from ...._bindings._loader import find_library
from ...._core import cuda
from ...._core.allocators import allocate
from ...._core.disk_cache import cache_dir
from ....errors import CUDSSError, SingularMatrixError
from .._options import DirectSolverMatrixType as MT
from . import _cudss_lifetime as _lifetime
from ._cudss_checks import DiagCheck, DominanceCheck, PatternCheck
from ._cudss_lifetime import Objects, acquire, bury, caller_handle, destroy, drain, on_device, release_shared_handles

__all__ = ["CudssSolver", "cudss_matrix_type", "SETTINGS", "PLAN_DEFAULTS", "ANALYSIS_PHASES", "bundled_threading_layer",
           "VALUE_TYPES", "release_shared_handles"]

logger = logging.getLogger(__name__)

_C = cudss.ConfigParam
#: setting name (of the plan/factorization/solution configs) -> cuDSS config parameter
SETTINGS = {
    "host_nthreads": _C.HOST_NTHREADS, "reordering_algorithm": _C.REORDERING_ALG, "pivot_type": _C.PIVOT_TYPE,
    "pivot_threshold": _C.PIVOT_THRESHOLD, "max_nnz": _C.MAX_LU_NNZ, "matching_algorithm": _C.MATCHING_ALG,
    "nd_min_levels": _C.ND_NLEVELS, "use_superpanels": _C.USE_SUPERPANELS,
    "factorization_algorithm": _C.FACTORIZATION_ALG, "pivot_eps_algorithm": _C.PIVOT_EPSILON_ALG,
    "pivot_eps": _C.PIVOT_EPSILON, "solution_algorithm": _C.SOLVE_ALG, "ir_num_steps": _C.IR_N_STEPS,
}
#: cumath's planning defaults by the order of the system, over cuDSS's own, for what the caller leaves unset:
#: ``((lowest order, {setting name or cudss.ConfigParam: value}), ...)`` in increasing order (the last class the
#: order reaches applies). A setting goes here only when benchmarks/solvers_sparse.py's ``sparse/gpu-plan-settings``
#: tables (90k and 1M Poisson) measured it planning much faster than cuDSS's default with factorize and solve
#: within 1.05x; the table prints the line to put here. Measured on an H200 (16 host threads, 90k Poisson):
#: ND_UBFACTOR=1 (the nested dissection's separators balanced strictly) planned in 0.82x cuDSS's default time
#: (111.9 against 136.0 ms: the reordering 92.5 against 117.0) with 1.16x the fill and factorize / solve at
#: 1.01x / 1.005x; orders below 50,000 keep cuDSS's own choices (not measured). On the 1M Poisson system the
#: same setting planned in 1625 against 1870 ms but factorized in 35.4 against 32.9 ms (1.08x, over the 1.05x
#: bound): from order 500,000 cuDSS's own choices again.
PLAN_DEFAULTS: tuple = ((50_000, {_C.ND_UBFACTOR: 1}), (500_000, {}))
#: the cuDSS phases of an analysis: ANALYSIS in one call, or (benchmarks) REORDERING then SYMBOLIC_FACTORIZATION
#: as two, so that the plan's step timings show each (the same work either way)
ANALYSIS_PHASES: tuple = (cudss.Phase.ANALYSIS,)
VALUE_TYPES = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}  # cudaDataType
_R_32I = 10
_REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
_D = cudss.DataParam


def bundled_threading_layer() -> str | None:
    """The threading layer shipped next to the loaded libcudss, or None: the one of the same major version
    (``libcudss.so.1`` takes ``libcudss_mtlayer_gomp.so.1``; cuDSS 0.x's ``.so.0`` may sit in the same folder,
    for another library's use), else any."""
    path = find_library("cudss")
    if not path or not os.path.isabs(path):
        return None
    return _layer_next_to(path)


@functools.lru_cache(maxsize=8)
def _layer_next_to(path: str) -> str | None:
    """(looked for once per library path: a folder listing per solver is a cost of every plan)"""
    folder, name = os.path.split(path)
    major = name.split(".so.", 1)[1].split(".")[0] if ".so." in name else ""
    patterns = [f"libcudss_mtlayer_gomp.so.{major}", f"libcudss_mtlayer_gomp.so.{major}.*"] if major else []
    for pattern in patterns + ["libcudss_mtlayer_gomp.so*"]:
        found = sorted(glob.glob(os.path.join(folder, pattern)))
        if found:
            return found[0]
    return None


def cudss_matrix_type(mtype, dtype: str):
    """cuDSS's matrix type for cumath's ``mtype`` of ``dtype`` values. cumath's SPD of complex values is Hermitian
    positive definite (as PARDISO, SuperLU and the residual check read it), while cuDSS's SPD means A = A^T
    (complex symmetric, its triangle mirrored without conjugation): complex SPD is handed over as HPD."""
    if mtype == MT.SPD and dtype.startswith("complex"):
        return MT.HPD
    return mtype


class CudssSolver:
    """cuDSS's objects for one problem of ``count`` systems (``sizes``, ``nnz`` per system) of ``dtype``.

    ``set_a``/``set_b``/``set_x`` give the arrays' addresses (per system: ``(indptr, indices, values)``, and
    ``(ptr, rows, cols, ld)`` column-major for dense ones): the matrix objects are made on the first call and
    pointed elsewhere afterwards. ``analyse``/``factorize``/``solve`` run the phases on ``stream``.
    """

    def __init__(self, *, count, sizes, nnz, dtype, mtype, view, device_id, handle, threading_lib, execution,
                 threads, allocator, settings, log, steps=None, cudss_config=()):
        self.count, self.sizes, self.nnz, self.dtype = count, tuple(sizes), tuple(nnz), dtype
        self.mtype, self.view, self.device_id, self.allocator = mtype, view, device_id, allocator
        self.cudss_mtype = cudss_matrix_type(mtype, dtype)
        self.settings, self.log = settings, log or logger
        self.cudss_config = dict(cudss_config)
        self.batch = count > 1
        drain()
        cuda.set_device(device_id)
        path = threading_lib or bundled_threading_layer()
        self._h = caller_handle(handle, device_id) if handle is not None else acquire(device_id, path)
        self.handle = self._h.handle
        if steps is not None:
            steps.step("handle")
        self._objs = objs = Objects(self._h)
        self._matrices, self._buffers = objs.matrices, objs.buffers
        self._finalizer = weakref.finalize(self, bury, objs)
        self._finalizer.atexit = False  # nothing is destroyed at interpreter exit
        self.A = self.B = self.X = 0
        self._ptrs = {}  # device arrays of pointers (batches): name -> [buffer, last uploaded, host copy]
        self._dense_shape = {}  # "B"/"X" -> the shape its matrix object was made for
        self._dense_arrays = {}  # "B"/"X" -> the host size arrays of a batch matrix (kept alive with it)
        self.home = None  # the stream of the last analysis (see _execute)
        self._diag_check = None  # the NaN/inf scan of the pivots (single systems; made at the first factorization)
        self.hybrid_execute = execution.kind == "hybrid"
        self.global_pivoting = False
        self.perturbed = 0
        self.factorized = False
        self.matching_off = False  # analysed without matching: a was diagonally dominant (see analyse)
        self._dominance = None  # the GPU dominance check (made at the first analysis that may use it)
        self._a_ptrs = None  # (indptr, indices, values) of a single system, as given to set_a
        self._pattern_check = None  # the GPU check of a's pattern for empty rows and columns (made at first use)
        try:
            with self._h:
                objs.config = cudss.cudssConfigCreate()
                objs.data = cudss.cudssDataCreate(self.handle)
                if steps is not None:
                    steps.step("config and data objects")
                self._configure(path, threading_lib is not None, execution, threads, settings, cudss_config)
                if steps is not None:
                    steps.step("threading layer and settings")
        except BaseException:
            self.free()
            raise

    def _configure(self, path, named: bool, execution, threads, settings, cudss_config=()) -> None:
        self._threading(path, named, execution, threads)
        self._jit_cache()
        hm = execution.hybrid_memory
        if hm.hybrid_memory_mode:
            self.config_set(_C.HYBRID_MEMORY_MODE, 1)
            if hm.hybrid_device_memory_limit is not None:
                from ...._bindings import cudart
                from .._execution import memory_limit_bytes

                limit = memory_limit_bytes(hm.hybrid_device_memory_limit, cudart.cudaMemGetInfo()[1])
                self.log.info("cuDSS hybrid memory mode, device memory limit %d bytes", limit)
                self.config_set(_C.HYBRID_DEVICE_MEMORY_LIMIT, limit)
            self.config_set(_C.USE_CUDA_REGISTER_MEMORY, int(hm.register_cuda_memory))
        if execution.kind == "hybrid":
            self.config_set(_C.HYBRID_EXECUTE_MODE, 1)
        self._size_defaults(settings, cudss_config)
        for name, value in settings.items():
            if value is not None:
                self.config_set(SETTINGS[name], value)
        for param, value in cudss_config:  # DirectSolverOptions.cudss_config: the caller's word goes last
            self.log.info("cuDSS config %s = %r (DirectSolverOptions.cudss_config)", param.name, value)
            self.config_set(param, value)

    def _size_defaults(self, settings, cudss_config) -> None:
        """cumath's planning defaults of the problem's size class (``PLAN_DEFAULTS``), where the caller set none."""
        chosen = {}
        for lowest, values in PLAN_DEFAULTS:
            if max(self.sizes) >= lowest:
                chosen = values
        named = {param for param, _ in cudss_config}
        for key, value in chosen.items():
            param = SETTINGS.get(key, key)
            if (key in SETTINGS and settings.get(key) is not None) or param in named:
                continue
            self.log.info("cuDSS config %s = %r (cumath's default for order %d)", cudss.ConfigParam(param).name,
                          value, max(self.sizes))
            self.config_set(param, value)

    # ------------------------------------------------------------------------------------------ setup
    def _threading(self, path, named: bool, execution, threads) -> None:
        h = self._h
        if h.threading is None or not h.own:  # once per handle of cumath's; every time on the caller's
            h.threading = (path, self._load_threading(path, named))
        self.threading = path if h.threading[1] else None
        if self.threading is None:
            return
        n = execution.num_threads or threads
        self.config_set(_C.HOST_NTHREADS, n)
        self.log.info("cuDSS threading layer %s (%s), %d host threads", os.path.basename(path),
                      "multithreading_lib" if named else "shipped with cuDSS", n)

    def _load_threading(self, path, named: bool) -> bool:
        if path is None:
            self.log.warning("cuDSS's threading layer (libcudss_mtlayer_gomp) was not found next to libcudss; its "
                             "reordering and analysis run on one core (give DirectSolverOptions.multithreading_lib)")
            return False
        try:
            cudss.cudssSetThreadingLayer(self.handle, path)
        except CUDSSError as exc:
            self.log.warning("cuDSS could not load the threading layer %s (%s); its reordering and analysis run on "
                             "one core", path, exc)
            return False
        return True

    def _jit_cache(self) -> None:
        if os.environ.get("CUDSS_JIT_CACHE_DIR") is not None or (self._h.jit and self._h.own):
            return
        self._h.jit = True
        try:
            cudss.cudssSetJitCacheDir(self.handle, cache_dir("cudss-jit"))
        except AttributeError:  # a cuDSS older than 1.0 compiles nothing at run time
            pass
        except (CUDSSError, OSError) as exc:  # a cache that cannot be used is skipped
            self.log.warning("cuDSS's kernel cache folder cannot be used (%s); kernels are compiled per process", exc)

    def config_set(self, param, value) -> None:
        cudss.cudssConfigSet(self._objs.config, param, int(value) if cudss.CONFIG_TYPES[param] is not ctypes.c_double
                             else float(value))

    def config_get(self, param):
        return cudss.cudssConfigGet(self._objs.config, param)

    # ---------------------------------------------------------------------------------------- matrices
    def _device_pointers(self, key: str, ptrs, stream) -> int:
        """A device array of the pointers ``ptrs`` (uploaded when they changed)."""
        host = np.asarray(ptrs, dtype=np.uint64)
        known = self._ptrs.get(key)
        if known is None:
            buf = allocate(self.allocator, host.nbytes, stream)
            self._buffers.append(buf)
            known = self._ptrs[key] = [buf, None, host]
        if known[1] is None or not np.array_equal(known[1], host):
            known[2] = host  # kept alive until the copy has run (stream-ordered)
            cuda.copy(known[0].device_ptr, host.ctypes.data, host.nbytes, cuda.H2D, stream, f"cuDSS {key} pointers")
            known[1] = host.copy()
        return known[0].device_ptr

    def set_a(self, systems, stream) -> None:
        vt = VALUE_TYPES[self.dtype]
        if not self.batch:
            (indptr, indices, values), = systems
            self._a_ptrs = (indptr, indices, values)
            if self.A:
                cudss.cudssMatrixSetCsrPointers(self.A, indptr, 0, indices, values)
                return
            n = self.sizes[0]
            self.A = cudss.cudssMatrixCreateCsr(n, n, self.nnz[0], indptr, 0, indices, values, _R_32I, _R_32I, vt,
                                                self.cudss_mtype, self.view, cudss.IndexBase.ZERO)
            self._matrices.append(self.A)
            return
        rows = self._device_pointers("row offsets", [s[0] for s in systems], stream)
        cols = self._device_pointers("column indices", [s[1] for s in systems], stream)
        vals = self._device_pointers("values", [s[2] for s in systems], stream)
        if self.A:
            cudss.cudssMatrixSetBatchCsrPointers(self.A, rows, 0, cols, vals)
            return
        self._sizes = np.asarray(self.sizes, dtype=np.int32)
        self._nnz = np.asarray(self.nnz, dtype=np.int32)
        self.A = cudss.cudssMatrixCreateBatchCsr(self.count, self._sizes.ctypes.data, self._sizes.ctypes.data,
                                                 self._nnz.ctypes.data, rows, 0, cols, vals, _R_32I, _R_32I, vt,
                                                 self.cudss_mtype, self.view, cudss.IndexBase.ZERO)
        self._matrices.append(self.A)

    def _dense(self, attr: str, items, stream) -> None:
        vt = VALUE_TYPES[self.dtype]
        current = getattr(self, attr)
        if not self.batch:
            (ptr, rows, cols, ld), = items
            if current and self._dense_shape.get(attr) == (rows, cols, ld):
                cudss.cudssMatrixSetValues(current, ptr)
                return
            if current:
                cudss.cudssMatrixDestroy(current)
                self._matrices.remove(current)
            m = cudss.cudssMatrixCreateDn(rows, cols, ld, ptr, vt, cudss.Layout.COL_MAJOR)
            self._dense_shape[attr] = (rows, cols, ld)
        else:
            p = self._device_pointers(attr, [i[0] for i in items], stream)
            shape = tuple((i[1], i[2], i[3]) for i in items)
            if current and self._dense_shape.get(attr) == shape:
                cudss.cudssMatrixSetBatchValues(current, p)
                return
            if current:
                cudss.cudssMatrixDestroy(current)
                self._matrices.remove(current)
            arrays = [np.asarray([s[k] for s in shape], dtype=np.int32) for k in range(3)]
            self._dense_arrays[attr] = arrays
            m = cudss.cudssMatrixCreateBatchDn(self.count, arrays[0].ctypes.data, arrays[1].ctypes.data,
                                               arrays[2].ctypes.data, p, _R_32I, vt, cudss.Layout.COL_MAJOR)
            self._dense_shape[attr] = shape
        self._matrices.append(m)
        setattr(self, attr, m)

    def set_b(self, items, stream) -> None:
        self._dense("B", items, stream)

    def set_x(self, items, stream) -> None:
        self._dense("X", items, stream)

    # ------------------------------------------------------------------------------------------ phases
    def _execute(self, stream, *phases, steps=None) -> None:
        """Run ``phases`` on ``stream`` (the handle's lock held, its device current), then record the event that
        says when their work is done; ``steps`` (a ``_timing.Steps``) times the stream's setting, each phase and
        the events.

        cuDSS's data object keeps using the stream it was analysed on (its *home*): it frees and allocates its
        buffers there during later phases, whatever stream the handle is set to (a destroyed analysis stream
        crashed a later solve on another stream). A phase on another stream is therefore joined with the home
        stream both ways: the home stream waits for what the caller queued on ``stream`` before the phase (a new
        ``b`` computed there), and ``stream`` waits for the home stream after it (the caller reads ``x`` there).
        Without the first join, cuDSS's part of a solve after ``reset_operands(b=b * 2, stream=other)`` can run
        before ``b * 2`` is written; without the second, the caller can read ``x`` before cuDSS's part is done.
        Same-stream phases (the usual case) pay nothing; another stream costs two event records and two waits."""
        if _graveyard_nonempty():
            drain()
        h, objs = self._h, self._objs
        home = self.home
        if cudss.Phase.REORDERING & phases[0]:
            home = self.home = stream  # (a new analysis: cuDSS's data object takes this stream as its own)
        with h, on_device(h.device_id):
            h.set_stream(stream)
            cross = home != stream
            if cross:  # what the caller queued on ``stream`` (b's values, a's) is done before cuDSS's work on home
                objs.join(0, stream, home)
            if steps is not None:
                steps.step("stream")
            for phase in phases:
                # before the first solve the solution's matrix object may not exist yet: the analysis and the
                # factorization do not touch it, so the right-hand side's stands in for it
                cudss.cudssExecute(self.handle, phase, objs.config, objs.data, self.A, self.X or self.B, self.B)
                if steps is not None:
                    steps.step(f"cudssExecute({cudss.Phase(phase).name})")
            if cross:  # and what the caller queues on ``stream`` next (reading x) waits for it
                objs.join(1, home, stream)
            objs.record(stream)
            h.queued(stream)
            if steps is not None:
                steps.step("events")

    def analyse(self, stream, steps=None) -> None:
        """cuDSS's analysis; a general matrix whose values are diagonally dominant is analysed without matching
        (``_matching_by_dominance``)."""
        self._matching_by_dominance(stream, steps)
        self._execute(stream, *ANALYSIS_PHASES, steps=steps)
        self.factorized = False

    def _dominance_applies(self) -> bool:
        """Whether matching is cumath's to leave out: one general system, the full matrix, on the device, no
        matching named by the caller (``plan_config.matching_algorithm = 'auto'`` asks for cuDSS's own choice),
        no global pivoting."""
        return (not self.batch and not self.hybrid_execute and self.mtype == MT.GENERAL and self._a_ptrs is not None
                and int(self.view) == int(cudss.MatrixViewType.FULL) and not self.global_pivoting
                and self.settings.get("matching_algorithm") is None and _C.MATCHING_ALG not in self.cudss_config)

    def _queue_dominance(self, stream) -> bool:
        with on_device(self.device_id):
            if self._dominance is None:
                self._dominance = DominanceCheck(self.dtype, self.device_id, self.allocator, stream, self._buffers)
            indptr, indices, values = self._a_ptrs
            return self._dominance.queue(indptr, indices, values, self.sizes[0], stream)

    def pattern_gaps(self, patterns, dtypes, stream):
        """The empty rows and columns of GPU patterns, found on the GPU (``_cudss_checks.PatternCheck``): per
        system ((first empty row, count) or None, (first empty column or line, count) or None); None when the
        kernels cannot run (the caller checks host copies then)."""
        if self.hybrid_execute or self.device_id is None:
            return None
        with on_device(self.device_id):
            if self._pattern_check is None:
                self._pattern_check = PatternCheck(self.allocator, self.device_id, self._buffers)
            lines = int(self.view) != int(cudss.MatrixViewType.FULL)
            names = tuple(str(np.dtype(d)) for d in dtypes)
            return self._pattern_check.gaps(patterns, names, self.sizes, lines, stream)

    def _matching_by_dominance(self, stream, steps=None) -> None:
        """Leave matching out of the analysis of a general matrix whose values are (weakly) row diagonally
        dominant: LU factors it stably without pivoting, and matching is ~10% of the analysis (13 of 136 ms on
        the 90k Poisson system, measured on the H200). One GPU kernel and a wait (``DominanceCheck``); a matrix
        that is not dominant is analysed with cuDSS's own matching choice."""
        was = self.matching_off
        dominant = self._dominance_applies() and self._queue_dominance(stream)
        if dominant:
            cuda.synchronize(stream)
            dominant = self._dominance.dominant()
        if steps is not None:
            steps.step("diagonal dominance check")
        if dominant and not was:
            self._matching_before = self.config_get(_C.MATCHING_ALG)
            self.config_set(_C.MATCHING_ALG, cudss.MatchingAlg.NONE)
            self.log.info("a is diagonally dominant: cuDSS analyses it without matching (it comes back for values "
                          "that are not, or for perturbed pivots)")
        elif was and not dominant:
            self._matching_back()
        self.matching_off = dominant

    def _matching_back(self) -> None:
        self.config_set(_C.MATCHING_ALG, self._matching_before)
        self.matching_off = False

    def factorize(self, stream, steps=None) -> None:
        """Factorize, then read cuDSS's status: a non-positive-definite SPD/HPD matrix raises; ``perturbed`` says
        how many pivots were perturbed (their solutions get checked). A plan analysed without matching checks
        each new matrix for dominance on the GPU before its factorization (read with the status, no wait of its
        own) and analyses and factorizes again with matching where the values are not dominant or pivots were
        perturbed."""
        checked = self.matching_off and self._queue_dominance(stream)
        self._execute(stream, cudss.Phase.FACTORIZATION, steps=steps)
        self.factorized = True
        self._read_status(stream)
        if steps is not None:
            steps.step("status (info, npivots, NaN/inf pivots: waits for the factorization)")
        if self.matching_off and ((checked and not self._dominance.dominant()) or self.perturbed):
            why = "new values of a are not diagonally dominant" if not self.perturbed else \
                f"the factorization without matching perturbed {self.perturbed} pivots"
            self.log.info("%s: cuDSS analyses and factorizes again with matching", why)
            self._matching_back()
            self._execute(stream, *ANALYSIS_PHASES, cudss.Phase.FACTORIZATION)
            self._read_status(stream)
            if steps is not None:
                steps.step("analysis and factorization again with matching")

    def _read_status(self, stream) -> None:
        """cuDSS's status of the last factorization, and (single systems) the GPU scan of its pivots for NaN and
        inf (``_cudss_checks``), read after one wait for the stream."""
        check = self._diag_check
        if check is None and not self.batch and not self.hybrid_execute:
            check = self._diag_check = DiagCheck(self.sizes[0], self.dtype, self.allocator, stream, self._buffers,
                                                 self.log)
        if check is not None:
            with self._h, on_device(self._h.device_id):
                self._h.set_stream(stream)
                check.queue(self.handle, self._objs.data, stream, self._h.device_id)
        # the factorization (and the scan) done before anything is read: cuDSS documents its data queries as
        # synchronous, but the status of a factorization still queued would be a stale one
        cuda.synchronize(stream)
        info, npivots = self._status()
        nonfinite = check is not None and check.flagged()
        if info and self.mtype in (MT.SPD, MT.HPD):
            raise SingularMatrixError(f"a is not positive definite (cuDSS reports info {info} after its Cholesky "
                                      f"factorization); use sparse_system_type=SYMMETRIC (or HERMITIAN) for "
                                      f"indefinite matrices")
        self.perturbed = npivots if npivots else (1 if info or nonfinite else 0)
        if self.perturbed:
            self.log.info("cuDSS factorization: %d perturbed pivots, info %d%s; the solution will be checked", npivots,
                          info, ", NaN or inf pivots" if nonfinite else "")

    def pivot_globally(self, stream) -> bool:
        """Switch a general matrix's plan to global pivoting (BTF+COLAMD, matching off), analyse and factorize
        again; False when the caller chose the reordering, pivoting or matching (a config or cudss_config), or
        it was done already."""
        s = self.settings
        named = self.cudss_config.keys() & {_C.REORDERING_ALG, _C.PIVOT_TYPE, _C.MATCHING_ALG}
        if (self.mtype != MT.GENERAL or self.global_pivoting or s.get("reordering_algorithm") is not None
                or s.get("pivot_type") is not None or s.get("matching_algorithm") is not None or named):
            return False
        self.log.info("cuDSS's default reordering perturbed %d pivots and the solution failed its check: analysing "
                      "and factorizing again with global pivoting (BTF+COLAMD reordering)", self.perturbed)
        self.global_pivoting = True
        self.config_set(_C.REORDERING_ALG, cudss.ReorderingAlg.BTF_COLAMD)
        self.config_set(_C.MATCHING_ALG, cudss.MatchingAlg.NONE)
        self._execute(stream, cudss.Phase.ANALYSIS, cudss.Phase.FACTORIZATION)
        self._read_status(stream)
        return True

    def _status(self):
        return int(self.data_scalar(_D.INFO)), int(self.data_scalar(_D.NPIVOTS))

    def solve(self, stream, steps=None) -> None:
        self._execute(stream, cudss.Phase.SOLVE, steps=steps)

    # -------------------------------------------------------------------------------------------- data
    def data_scalar(self, param, ctype=None):
        ctype = ctype or cudss.DATA_TYPES[param]
        v = ctype()
        with self._h:
            cudss.cudssDataGet(self.handle, self._objs.data, param, ctypes.addressof(v), ctypes.sizeof(v))
        return v.value

    def data_array(self, param, count: int, dtype) -> np.ndarray:
        out = np.zeros(count, dtype=dtype)
        with self._h:
            cudss.cudssDataGet(self.handle, self._objs.data, param, out.ctypes.data, out.nbytes)
        return out

    def info(self, name: str):
        n = self.sizes[0]
        if name == "memory_estimates":
            return self.data_array(_D.MEMORY_ESTIMATES, cudss.MEMORY_ESTIMATES_COUNT, np.int64)
        if name == "info":
            return int(self.data_scalar(_D.INFO))
        if name == "lu_nnz":
            return int(self.data_scalar(_D.LU_NNZ))
        if name == "npivots":
            return int(self.data_scalar(_D.NPIVOTS))
        if name == "inertia":
            return self.data_array(_D.INERTIA, 2, np.int32)
        if name == "num_superpanels":
            try:
                return int(self.data_scalar(_D.NSUPERPANELS))
            except CUDSSError:
                return int(self.data_scalar(_D.NSUPERPANELS, ctypes.c_int64))
        if self.batch:
            raise RuntimeError(f"{name} is not available for batched systems")
        arrays = {"plan_row_permutation": (_D.PERM_REORDER_ROW, np.int32),
                  "plan_col_permutation": (_D.PERM_REORDER_COL, np.int32),
                  "row_permutation": (_D.PERM_ROW, np.int32), "col_permutation": (_D.PERM_COL, np.int32),
                  "matching_col_permutation": (_D.PERM_MATCHING, np.int32), "diag": (_D.DIAG, self.dtype),
                  "row_scale_factors": (_D.SCALE_ROW, _REAL[self.dtype]),
                  "col_scale_factors": (_D.SCALE_COL, _REAL[self.dtype])}
        if name not in arrays:
            raise KeyError(name)
        param, dtype = arrays[name]
        return self.data_array(param, n, dtype)

    @property
    def nbytes(self) -> int:
        return sum(b.size for b in self._buffers)

    def free(self) -> None:
        """Destroy cuDSS's objects of this solver now (idempotent), and those of solvers dropped without free()."""
        self._finalizer.detach()
        destroy(self._objs)
        drain()


def _graveyard_nonempty() -> bool:
    return bool(_lifetime._graveyard)

