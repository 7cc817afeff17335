"""oneMKL PARDISO: the fast CPU engine (analysis phase 11, numerical factorization 22, solve 33).

The plan keeps PARDISO's handle ``pt`` and ``iparm`` for one system. Defaults (``pardisoinit`` for the matrix
type, then): 0-based indices (``iparm[34]``), single precision for float32/complex64 (``iparm[27]``), the
permutation returned (``iparm[4] = 2``), and for nonsymmetric types of order ``TWO_LEVEL_MIN_N`` or more the
improved two-level factorization (``iparm[23] = 10``; factorizations 15-30% faster measured on 2 cores) while no
GNU OpenMP runtime (libgomp: PyTorch's, cuDSS's threading layer's, MKL's GNU threading layer's) is loaded in the
process: oneMKL 2026.2 crashes in it then, so a plan checks again before each factorization and falls back to
the classic factorization (analysing again) once one appears. The diagonal of the factors needs ``iparm[55]`` set before the analysis,
which costs time: it is set, and the system analysed and factorized again, the first time ``diag`` is asked for.
Pivoting: PARDISO
perturbs small pivots (eps = 10**-iparm[9]: 1e-13 for nonsymmetric, 1e-8 for symmetric types) and follows
with two steps of iterative refinement when it did; general matrices use maximum weight matching and scaling
(``iparm[12]``, ``iparm[10]``), and so do symmetric indefinite ones here (PARDISO's recommendation for
indefinite systems; its own default leaves them off), which is what makes random systems without diagonal
dominance come out right. A general matrix whose values are diagonally dominant needs no pivoting: it is analysed
without matching and scaling (they come back, analysing again, for new values that are not, or when a
factorization perturbs a pivot).

Handles: a freed plan's handle is kept (one per matrix type and precision, per thread, while its memory stays
under ``POOL_BYTES``) and the next plan analyses on it: PARDISO then reuses the memory it holds rather than
allocating and releasing tens of megabytes per fresh solve, which is what a solver object kept for many matrices
(pypardiso's) gains. ``release_pooled_handles()`` gives that memory back; so does the end of the thread.

The matching is computed in the analysis from the values at hand. A refactorization with new values that has
to perturb more pivots than the plan's first factorization did analyses again with the new values (logged), so
the stateless call, which refactorizes the cached analysis, stays as accurate as a fresh solve.

PARDISO wants sorted column indices and, for symmetric types, the upper triangle with every diagonal entry
stored: other patterns are mapped once per plan (``_traits.pattern_map``) and their values gathered per
factorization.
"""

from __future__ import annotations

import logging
import math
import threading
import weakref

import numpy as np

from ...._bindings import mkl_pardiso as P
from ...._core.dtypes import is_complex
from ....errors import PARDISOError, SingularMatrixError
from .._options import DirectSolverMatchingAlg, DirectSolverReorderingAlg
from .._options import DirectSolverMatrixType as MT
from .._options import DirectSolverMatrixViewType as MV
from .._traits import DiagonalDominance, is_canonical, pardiso_mtype, pattern_map, structurally_singular

__all__ = ["PardisoEngine", "PardisoPlan", "release_pooled_handles", "POOL_BYTES"]

logger = logging.getLogger(__name__)

_I = P.IPARM
_REORDERING = {DirectSolverReorderingAlg.DEFAULT: None, DirectSolverReorderingAlg.NESTED_DISSECTION: 2,
               DirectSolverReorderingAlg.AMD: 0}

#: the largest memory (bytes) a freed plan's handle may hold to be kept for the next plan
POOL_BYTES = 1 << 30
#: the smallest order that gets PARDISO's improved two-level factorization (checking for libgomp costs ~1 ms)
TWO_LEVEL_MIN_N = 20000


def _gnu_openmp_loaded() -> bool:
    """Whether GNU OpenMP (libgomp) is mapped into the process (True where that cannot be read)."""
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return True


def _release(fn, pt, pmtype, iparm) -> None:
    """PARDISO's phase -1 on handle ``pt`` (the matrix arguments are not read then)."""
    one = np.zeros(2, dtype=iparm.dtype)
    one[1] = 1
    try:
        fn(pt.ctypes.data, 1, 1, pmtype, P.Phase.RELEASE_ALL, 1, one.ctypes.data, one.ctypes.data, one.ctypes.data,
           0, 1, iparm.ctypes.data, 0, 0, 0)
    except Exception:  # noqa: BLE001 - freeing must not raise
        logger.warning("releasing PARDISO's memory failed", exc_info=True)


class _Pool:
    """This thread's kept handles: ``PardisoPlan._key()`` -> (pt, iparm); released when the thread ends."""

    def __init__(self):
        self.handles: dict = {}
        weakref.finalize(self, _release_all, self.handles)


def _release_all(handles: dict) -> None:
    while handles:
        (fn, pmtype, _, _), (pt, iparm) = handles.popitem()
        _release(fn, pt, pmtype, iparm)


_local = threading.local()


def _pool() -> dict:
    pool = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = _Pool()
    return pool.handles


def release_pooled_handles() -> None:
    """Give back the memory of the PARDISO handles this thread keeps for its next plans."""
    _release_all(_pool())


class PardisoEngine:
    name = "pardiso"

    def load(self) -> None:
        P.mkl_int_bits()  # loads libmkl_rt; LibraryNotFoundError names the 'mkl' extra

    def plan(self, n, dtype, index_dtype, mtype, view, settings, threads, log):
        return PardisoPlan(n, dtype, index_dtype, mtype, view, settings, threads, log)


class PardisoPlan:
    """PARDISO's handle and parameters for one system (see the module's docstring)."""

    def __init__(self, n: int, dtype: str, index_dtype: str, mtype, view, settings: dict, threads: int, log):
        self.n, self.dtype, self.mtype, self.view = n, dtype, mtype, view
        self.settings, self.threads, self.log = settings, threads, log or logger
        self.pmtype = pardiso_mtype(mtype, dtype)
        bits = P.mkl_int_bits()
        # pardiso takes MKL_INT arrays: int32 ones go to pardiso under LP64, int64 ones to pardiso_64
        self.wide = index_dtype == "int64" or bits == 64
        self.fn = P.pardiso_64 if (index_dtype == "int64" and bits == 32) else P.pardiso
        self.idx = np.int64 if self.wide else np.int32
        init = np.zeros(64, dtype=np.int64 if bits == 64 else np.int32)
        self.pt = np.zeros(64, dtype=np.int64)
        P.pardisoinit(self.pt.ctypes.data, self.pmtype, init.ctypes.data)
        self.iparm = init.astype(np.int64 if self.fn is P.pardiso_64 else init.dtype)
        ip = self.iparm
        ip[_I.USE_NON_DEFAULTS] = 1
        ip[_I.ZERO_BASED] = 1
        ip[4] = 2  # return the fill-in reducing permutation in perm
        ip[_I.SINGLE_PRECISION] = 1 if dtype in ("float32", "complex64") else 0
        if self.pmtype in (-2, -4, 6):
            ip[_I.SCALING] = ip[_I.MATCHING] = 1
        self.two_level = self.pmtype in (11, 13) and n >= TWO_LEVEL_MIN_N
        if self.two_level and not _gnu_openmp_loaded():
            ip[_I.PARALLEL_FACTORIZATION] = 10
        self.defaults = ip.copy()
        kept = _pool().pop(self._key(), None)
        self.reused = kept is not None
        if kept is not None:  # PARDISO's handle of an earlier plan: its memory is reused by this one
            self.pt = kept[0]
        self.perm = np.zeros(n, dtype=self.idx)
        self.map = None  # a PatternMap when PARDISO cannot read the caller's pattern as it is
        self.pattern = None  # (indptr, indices) PARDISO reads (the caller's or the map's), in MKL_INT
        self.values = None  # the mapped values buffer
        self.analysed = False
        self.dominant = False  # analysed without matching and scaling: the values were diagonally dominant
        self._dominance = None  # the DiagonalDominance test of this plan's pattern, made on first use
        self._recovered: set = set()  # the settings recover() has tried
        self.factorized = 0  # factorizations since the last analysis
        self.first_perturbed = 0
        self.perturbed = self.lu_nnz = 0
        self.inertia = (0, 0)
        self.clean = True
        self.memory = [0, 0, 0]  # KiB: peak of the analysis, permanent, factorization and solution
        self.alive = True
        self.nbytes = 0

    # ---------------------------------------------------------------------------------------- phases
    def _call(self, phase: int, values, b=None, x=None, nrhs: int = 1) -> None:
        ia, ja = self.pattern
        self.clean = False  # a handle whose last phase failed is never kept for another plan
        self.fn(self.pt.ctypes.data, 1, 1, self.pmtype, phase, self.n, 0 if values is None else values.ctypes.data,
                ia.ctypes.data, ja.ctypes.data, self.perm.ctypes.data, nrhs, self.iparm.ctypes.data, 0,
                0 if b is None else b.ctypes.data, 0 if x is None else x.ctypes.data)
        self.clean = True

    def _threads(self) -> None:
        want = self.settings.get("host_nthreads") or self.threads
        if P.mkl_domain_get_max_threads() != want:
            P.mkl_domain_set_num_threads(want)

    def _prepare_pattern(self, indptr, indices, canonical) -> None:
        symmetric = self.pmtype not in (11, 13)
        if not symmetric:  # PARDISO may crash, or fail without saying why, on these
            why = structurally_singular(indptr, indices, self.n)
            if why is not None:
                raise SingularMatrixError(f"a is singular: {why}")
        canonical = canonical or (not symmetric and is_canonical(indptr, indices))
        if symmetric:
            keep = "lower" if self.view == MV.LOWER else "upper"
            herm = self.pmtype in (-4, 4) or (self.mtype == MT.SPD and is_complex(self.dtype))
            self.map = pattern_map(indptr, indices, self.n, keep=keep, hermitian=herm, diagonal=True,
                                   index_dtype=self.idx)
            what = "the upper triangle" + (" (transposed from the lower one)" if keep == "lower" else "")
            self.log.info("PARDISO reads %s of a with every diagonal entry (%d of %d stored entries; the pattern is "
                          "mapped once per plan, the values per factorization)", what, self.map.nnz, indices.size)
        elif not canonical:
            self.map = pattern_map(indptr, indices, self.n, keep="all", index_dtype=self.idx)
            self.log.info("a's column indices are unsorted or repeated: PARDISO reads a sorted copy of the pattern "
                          "(mapped once per plan, the values per factorization)")
        else:
            self.map = None
        if self.map is not None:
            self.pattern = (self.map.indptr, self.map.indices)
            self.values = np.empty(self.map.nnz, dtype=self.dtype)
        else:
            ia, ja = indptr, indices
            if ia.dtype != self.idx or ja.dtype != self.idx:
                self.log.info("PARDISO reads %s indices: the pattern is converted once per plan",
                              np.dtype(self.idx).name)
                ia, ja = ia.astype(self.idx), ja.astype(self.idx)
            self.pattern = (np.ascontiguousarray(ia), np.ascontiguousarray(ja))
            self.values = None
        self.nbytes = sum(a.nbytes for a in self.pattern) if self.map is not None else 0
        if self.values is not None:
            self.nbytes += self.values.nbytes

    def _values(self, values):
        if self.map is None:
            return values if values.flags.c_contiguous else np.ascontiguousarray(values)
        return self.map.values(values, self.values)

    def _apply_plan_settings(self) -> None:
        s, ip, d = self.settings, self.iparm, self.defaults
        alg = s.get("reordering_algorithm")
        if alg is not None and alg not in _REORDERING:
            self.log.info("PARDISO has no %s reordering; it uses its default (parallel METIS nested dissection)",
                          alg.name)
        code = _REORDERING.get(alg)
        ip[_I.REORDERING] = d[_I.REORDERING] if code is None else code
        matching = s.get("matching_algorithm")
        if matching is None or matching == DirectSolverMatchingAlg.AUTO:
            ip[_I.MATCHING], ip[_I.SCALING] = d[_I.MATCHING], d[_I.SCALING]
        elif matching == DirectSolverMatchingAlg.NONE:
            ip[_I.MATCHING] = ip[_I.SCALING] = 0
        else:
            ip[_I.MATCHING] = ip[_I.SCALING] = 1

    def _matching_by_dominance(self, indptr, indices, values) -> None:
        """Leave matching and scaling out of the analysis of a general matrix whose values are diagonally
        dominant (``_traits.DiagonalDominance``: no pivoting needed, and matching is what the analysis spends
        ~7% of its time on for the 2-D Poisson 90k system) where the user left the matching to the engine."""
        self.dominant = False
        if (self.pmtype not in (11, 13) or self.view != MV.FULL or not self.iparm[_I.MATCHING]
                or self.settings.get("matching_algorithm") not in (None, DirectSolverMatchingAlg.AUTO)):
            return
        if self._dominance is None:
            self._dominance = DiagonalDominance(indptr, indices, self.n)
        if self._dominance(values):
            self.iparm[_I.MATCHING] = self.iparm[_I.SCALING] = 0
            self.dominant = True
            self.log.info("a is diagonally dominant: PARDISO analyses it without matching and scaling (they come "
                          "back if new values are not, or if a factorization perturbs a pivot)")

    def _matching_back(self, vals, why: str) -> None:
        """Analyse again with the matching and scaling a dominant matrix was analysed without."""
        self.log.info("%s: PARDISO analyses again with matching and scaling", why)
        self.iparm[_I.MATCHING], self.iparm[_I.SCALING] = self.defaults[_I.MATCHING], self.defaults[_I.SCALING]
        self.dominant = False
        self._call(P.Phase.ANALYSIS, vals)
        self.factorized = 0

    def recover(self, indptr, indices, values) -> bool:
        """After a solution failed its residual check (perturbed pivots that iterative refinement could not fix):
        analyse and factorize again with the next setting not tried yet, True when there was one. Seen: a
        symmetric indefinite matrix with small diagonal entries analysed as GENERAL, where matching brings large
        off-diagonal entries onto the diagonal and 9 pivots get perturbed into a useless solution that the same
        analysis without matching (or a larger pivot perturbation) solves to 1e-14. Tried in order: matching and
        scaling switched (off where they were on, on where they were off), then pivots perturbed at 1e-8."""
        tried = self._recovered
        ip, vals = self.iparm, self._values(values)
        for what in ("matching", "eps"):
            if what in tried:
                continue
            tried.add(what)
            if what == "matching":
                on = 0 if ip[_I.MATCHING] else 1
                ip[_I.MATCHING] = ip[_I.SCALING] = self.defaults[_I.MATCHING] = self.defaults[_I.SCALING] = on
                self.dominant = False
                how = f"with matching and scaling {'on' if on else 'off'}"
            else:
                if ip[_I.PIVOT_PERTURBATION] <= 8:
                    continue
                ip[_I.PIVOT_PERTURBATION] = self.defaults[_I.PIVOT_PERTURBATION] = 8
                how = "with pivots perturbed at 1e-8"
            self.log.info("PARDISO's solution failed its residual check (%d perturbed pivots): analysing and "
                          "factorizing again %s", self.perturbed, how)
            self._call(P.Phase.ANALYSIS, vals)
            self.factorized = 0
            self._factorize(vals)
            return True
        return False

    def _apply_factorization_settings(self) -> None:
        eps = self.settings.get("pivot_eps")
        d = self.defaults[_I.PIVOT_PERTURBATION]
        self.iparm[_I.PIVOT_PERTURBATION] = d if not eps else max(1, min(30, round(-math.log10(eps))))

    def analyse(self, indptr, indices, values, canonical=None) -> None:
        self._threads()
        if self.analysed:
            self._call(P.Phase.RELEASE_ALL, None)
            self.analysed = self.reused = False
        self._prepare_pattern(indptr, indices, canonical)
        self._apply_plan_settings()
        self._matching_by_dominance(indptr, indices, values)
        self._call(P.Phase.ANALYSIS, self._values(values))
        self.analysed = True
        self.factorized = 0
        ip = self.iparm  # the memory figures, before later phases reuse these entries
        self.memory = [int(ip[_I.PEAK_MEMORY_ANALYSIS_KB]), int(ip[_I.PERMANENT_MEMORY_KB]),
                       int(ip[_I.FACTORIZATION_MEMORY_KB])]
        self.log.debug("PARDISO analysis: mtype %d, peak memory %d KiB, factors %d KiB", self.pmtype,
                       self.iparm[_I.PEAK_MEMORY_ANALYSIS_KB], self.iparm[_I.PERMANENT_MEMORY_KB])

    def factorize(self, indptr, indices, values) -> None:
        self._threads()
        self._apply_factorization_settings()
        vals = self._values(values)
        if self.iparm[_I.PARALLEL_FACTORIZATION] == 10 and _gnu_openmp_loaded():
            self.log.info("GNU OpenMP was loaded since the analysis: PARDISO analyses again for its classic "
                          "factorization (its two-level one crashes next to libgomp)")
            self.iparm[_I.PARALLEL_FACTORIZATION] = self.defaults[_I.PARALLEL_FACTORIZATION] = 0
            self._call(P.Phase.ANALYSIS, vals)
            self.factorized = 0
        if self.dominant and self.factorized and not self._dominance(values):
            self._matching_back(vals, "the new values of a are not diagonally dominant")
        self._factorize(vals)
        if self.dominant and self.perturbed:
            self._matching_back(vals, f"the factorization without matching perturbed {self.perturbed} pivots")
            self._factorize(vals)
        perturbed = self.perturbed
        if self.factorized > 1 and perturbed > self.first_perturbed and self.iparm[_I.MATCHING]:
            self.log.info("PARDISO perturbed %d pivots refactorizing with new values (%d with the analysed ones): "
                          "analysing again with the new values", perturbed, self.first_perturbed)
            self._call(P.Phase.ANALYSIS, vals)
            self.factorized = 0
            self._factorize(vals)

    def _factorize(self, vals) -> None:
        try:
            try:
                self._call(P.Phase.FACTORIZATION, vals)
            except PARDISOError as exc:
                if self.iparm[_I.PARALLEL_FACTORIZATION] != 10 or exc.status == P.PardisoStatus.ZERO_PIVOT:
                    raise
                # the two-level factorization gives up on some (near-)singular matrices: the classic one instead
                self.log.info("PARDISO's two-level factorization failed (%s): analysing and factorizing again with "
                              "the classic one", exc)
                self.iparm[_I.PARALLEL_FACTORIZATION] = self.defaults[_I.PARALLEL_FACTORIZATION] = 0
                self._call(P.Phase.ANALYSIS, vals)
                self._call(P.Phase.FACTORIZATION, vals)
        except PARDISOError as exc:
            if exc.status == P.PardisoStatus.ZERO_PIVOT:
                if self.pmtype in (2, 4):
                    raise SingularMatrixError(
                        f"a is not positive definite (PARDISO met a zero or negative pivot in its Cholesky "
                        f"factorization at equation {int(self.iparm[_I.ZERO_PIVOTS_SPD])}); use "
                        f"sparse_system_type=SYMMETRIC (or HERMITIAN) for indefinite matrices") from exc
                raise SingularMatrixError(f"a is singular: PARDISO found a zero pivot ({exc})") from exc
            raise
        self.factorized += 1
        self.perturbed = int(self.iparm[_I.PERTURBED_PIVOTS])
        self.lu_nnz = int(self.iparm[_I.FACTOR_NNZ])
        self.inertia = (int(self.iparm[_I.POSITIVE_EIGENVALUES]), int(self.iparm[_I.NEGATIVE_EIGENVALUES]))
        if self.iparm[_I.FACTORIZATION_MEMORY_KB]:
            self.memory[2] = int(self.iparm[_I.FACTORIZATION_MEMORY_KB])
        if self.factorized == 1:
            self.first_perturbed = self.perturbed
        if self.perturbed and self.log.isEnabledFor(logging.INFO):
            self.log.info("PARDISO perturbed %d pivots (eps 1e-%d); the solution will be refined and checked",
                          self.perturbed, self.iparm[_I.PIVOT_PERTURBATION])

    def solve(self, values, b, x) -> None:
        """``values``: the caller's values of ``A`` (PARDISO reads ``A`` again for iterative refinement; a mapped
        pattern uses the values mapped by the last factorization)."""
        self._threads()
        steps = self.settings.get("ir_num_steps")
        self.iparm[_I.IR_STEPS] = self.defaults[_I.IR_STEPS] if steps is None else steps
        nrhs = 1 if b.ndim == 1 else b.shape[1]
        vals = self.values if self.map is not None else self._values(values)
        self._call(P.Phase.SOLVE, vals, b, x, nrhs)

    def _key(self) -> tuple:
        """What a handle kept for another plan must share with it: the function, matrix type, precision and
        factorization algorithm."""
        ip = self.iparm
        return self.fn, self.pmtype, int(ip[_I.SINGLE_PRECISION]), int(ip[_I.PARALLEL_FACTORIZATION])

    def enable_diagonal(self) -> bool:
        """Ask PARDISO to keep the factors' diagonal (``iparm[55]``); True when the system must be analysed and
        factorized again for it."""
        if self.iparm[_I.DIAGONAL_PIVOTING_CONTROL]:
            return False
        self.iparm[_I.DIAGONAL_PIVOTING_CONTROL] = self.defaults[_I.DIAGONAL_PIVOTING_CONTROL] = 1
        return self.factorized > 0

    # ------------------------------------------------------------------------------------------ info
    def info(self, name: str):
        if name == "lu_nnz":
            return self.lu_nnz
        if name == "npivots":
            return self.perturbed
        if name == "inertia":
            return np.array(self.inertia, dtype=np.int32)
        if name == "info":
            return 0
        if name in ("row_permutation", "col_permutation"):
            return self.perm.astype(np.int32 if self.n < 2 ** 31 else np.int64)
        if name == "diag":
            df = np.empty(self.n, dtype=self.dtype)
            da = np.empty(self.n, dtype=self.dtype)
            P.pardiso_getdiag(self.pt.ctypes.data, df.ctypes.data, da.ctypes.data, 1)
            return df
        if name == "memory_estimates":
            peak, permanent, factorization = self.memory
            return {"permanent_host_memory": permanent * 1024,
                    "peak_host_memory": max(peak, permanent + factorization) * 1024}
        raise KeyError(name)

    def free(self) -> None:
        """Keep the handle for the next plan (see the module's docstring), or release its memory."""
        if self.alive:
            self.alive = False
            if self.analysed or self.reused:
                held = (self.memory[1] + self.memory[2]) * 1024
                pool = _pool()
                plain = self.clean and not self.iparm[_I.DIAGONAL_PIVOTING_CONTROL]
                key = self._key()
                if plain and held <= POOL_BYTES and key not in pool:
                    pool[key] = (self.pt, self.iparm.copy())
                else:
                    _release(self.fn, self.pt, self.pmtype, self.iparm)
            self.analysed = self.reused = False
