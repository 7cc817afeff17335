"""SciPy's SuperLU (``scipy.sparse.linalg.splu``): the CPU engine that is always there.

SuperLU factorizes a CSC matrix; the CSR arrays of ``A`` are the CSC arrays of ``A^T``, so the plan factorizes
``A^T`` without copying the pattern and solves with ``trans='T'``. SuperLU has no separate symbolic analysis:
every factorization orders and factorizes (``plan()`` only checks and prepares the pattern). Partial pivoting
with threshold 1 (SciPy's default) for general matrices; for symmetric types the symmetric mode (diagonal
pivots preferred, minimum degree on ``A^T + A``), a triangle being mirrored into the full matrix first.

Pivots are never perturbed: an exactly singular matrix fails to factorize (SingularMatrixError), and tiny
pivots (below ``n * eps`` of the largest) are reported through ``perturbed`` so that the solution gets
checked.
"""

from __future__ import annotations

import logging

import numpy as np

from ....errors import LibraryNotFoundError, SingularMatrixError
from .._options import DirectSolverReorderingAlg as RA
from .._options import DirectSolverMatrixType as MT
from .._options import DirectSolverMatrixViewType as MV
from .._traits import is_canonical, pattern_map, symmetric_type

__all__ = ["SuperLUEngine", "SuperLUPlan"]

logger = logging.getLogger(__name__)

_PERMC = {RA.DEFAULT: None, RA.COLAMD: "COLAMD", RA.BTF_COLAMD: "COLAMD", RA.AMD: "MMD_AT_PLUS_A",
          RA.NESTED_DISSECTION: None, RA.NONE: "NATURAL"}


class SuperLUEngine:
    name = "superlu"
    _linalg = None

    def load(self) -> None:
        if SuperLUEngine._linalg is None:
            try:
                import scipy.sparse
                import scipy.sparse.linalg
            except ImportError as exc:
                raise LibraryNotFoundError(f"SciPy is not installed ({exc}); install it with "
                                           f"`pip install \"cumath[cpu]\"` (from a checkout: pip install \".[cpu]\")") from exc
            SuperLUEngine._linalg = (scipy.sparse, scipy.sparse.linalg)

    def plan(self, n, dtype, index_dtype, mtype, view, settings, threads, log):
        return SuperLUPlan(n, dtype, mtype, view, settings, log)


class SuperLUPlan:
    """One system's SuperLU factorization (see the module's docstring)."""

    nbytes = 0

    def __init__(self, n: int, dtype: str, mtype, view, settings: dict, log):
        self.n, self.dtype, self.mtype, self.view = n, dtype, mtype, view
        self.settings, self.log = settings, log or logger
        self.sparse, self.linalg = SuperLUEngine._linalg
        self.map = None
        self.values = None
        self.lu = None
        self.perturbed = 0

    def analyse(self, indptr, indices, values, canonical=None) -> None:
        self.lu = None
        if symmetric_type(self.mtype) and self.view != MV.FULL:
            herm = self.mtype in (MT.HERMITIAN, MT.HPD) or (self.mtype == MT.SPD and self.dtype.startswith("complex"))
            keep = "upper" if self.view == MV.UPPER else "lower"
            self.map = pattern_map(indptr, indices, self.n, keep=keep, mirror=True, hermitian=herm)
            self.values = np.empty(self.map.nnz, dtype=self.dtype)
            self.log.info("SuperLU factorizes the full matrix: the %s triangle of a is mirrored (pattern mapped once "
                          "per plan, values per factorization)", keep)
        elif not (canonical or is_canonical(indptr, indices)):
            self.map = pattern_map(indptr, indices, self.n, keep="all")
            self.values = np.empty(self.map.nnz, dtype=self.dtype)
        else:
            self.map = None
        self.nbytes = 0 if self.map is None else (self.map.indptr.nbytes + self.map.indices.nbytes
                                                   + self.values.nbytes)

    def factorize(self, indptr, indices, values) -> None:
        if self.map is not None:
            vals, indptr, indices = self.map.values(values, self.values), self.map.indptr, self.map.indices
        else:
            vals = values
        at = self.sparse.csc_matrix((vals, indices, indptr), shape=(self.n, self.n))  # = A^T, no copy
        symmetric = symmetric_type(self.mtype)
        alg = self.settings.get("reordering_algorithm")
        permc = _PERMC.get(alg) if alg is not None else None
        if permc is None:
            permc = "MMD_AT_PLUS_A" if symmetric else "COLAMD"
        threshold = self.settings.get("pivot_threshold")
        if threshold is None:
            threshold = 0.0 if self.mtype in (MT.SPD, MT.HPD) else (0.1 if symmetric else 1.0)
        options = {"SymmetricMode": True} if symmetric else {}
        try:
            self.lu = self.linalg.splu(at, permc_spec=permc, diag_pivot_thresh=min(1.0, threshold), options=options)
        except RuntimeError as exc:
            self.lu = None
            raise SingularMatrixError(f"a is singular: SuperLU found an exactly zero pivot ({exc})") from exc
        d = self.lu.U.diagonal()
        mag = np.abs(d)
        top = float(mag.max()) if mag.size else 0.0
        eps = float(np.finfo(np.dtype(self.dtype)).eps)
        self.perturbed = int((mag <= self.n * eps * top).sum()) if top > 0 else self.n
        if self.mtype in (MT.SPD, MT.HPD) and (np.real(d) <= 0).any():
            self.lu = None
            raise SingularMatrixError("a is not positive definite (SuperLU's symmetric-mode factorization met a "
                                      "non-positive pivot); use sparse_system_type=SYMMETRIC (or HERMITIAN) for "
                                      "indefinite matrices")
        if self.perturbed:
            self.log.info("SuperLU met %d tiny pivots; the solution will be checked", self.perturbed)

    def solve(self, values, b, x) -> None:
        x[...] = self.lu.solve(np.asarray(b), trans="T")

    def info(self, name: str):
        lu = self.lu
        if name == "info":
            return 0
        if lu is None:
            if name in ("lu_nnz", "npivots"):
                return 0
            raise KeyError(name)
        if name == "lu_nnz":
            return int(lu.nnz)
        if name == "npivots":
            return self.perturbed
        if name == "row_permutation":  # of A: SuperLU's Pr A^T Pc = L U is Pc^T A Pr^T = U^T L^T
            return lu.perm_c.astype(np.int32)
        if name == "col_permutation":
            return lu.perm_r.astype(np.int32)
        if name == "diag":
            return lu.U.diagonal().astype(self.dtype)
        if name == "inertia":
            d = np.real(lu.U.diagonal()) if symmetric_type(self.mtype) else None
            if d is None:
                return np.zeros(2, dtype=np.int32)
            return np.array([(d > 0).sum(), (d < 0).sum()], dtype=np.int32)
        raise KeyError(name)

    def free(self) -> None:
        self.lu = None
        self.map = self.values = None
