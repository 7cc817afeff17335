"""The configuration and information interfaces of a DirectSolver (``plan_config``, ``factorization_config``,
``solution_config``, ``plan_info``, ``factorization_info``), with nvmath-python 1.0's attribute names.

A config attribute set by the caller is kept by the solver (``DirectSolver._settings``) and given to the engine
when it plans, factorizes or solves: plan settings take effect at the next ``plan()``, the others at the next
``factorize()``/``solve()``. Read back, an attribute is the caller's value, else the engine's own (cuDSS's
current configuration once planned), else None (the engine's default). The CPU engines use what they have an
equivalent for (see ``_backends``). The info objects read the engine after ``plan()`` / ``factorize()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._options import FACTORIZATION_FIELDS, PLAN_FIELDS, SOLUTION_FIELDS, check_setting
from ._traits import memory_estimates_dtype

if TYPE_CHECKING:
    from typing import Any

__all__ = ["DirectSolverPlanConfig", "DirectSolverFactorizationConfig", "DirectSolverSolutionConfig",
           "DirectSolverPlanInfo", "DirectSolverFactorizationInfo", "ALL_FIELDS"]

ALL_FIELDS = {**PLAN_FIELDS, **FACTORIZATION_FIELDS, **SOLUTION_FIELDS}


class _Config:
    """Attributes of one phase's settings (``_FIELDS``), read and written through the solver."""

    _FIELDS: dict = {}
    __slots__ = ("_solver",)

    def __init__(self, solver: Any) -> None:
        object.__setattr__(self, "_solver", solver)

    def __getattr__(self, name):
        if name not in type(self)._FIELDS:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}; its attributes are "
                                 f"{sorted(type(self)._FIELDS)}")
        return self._solver._get_setting(name)

    def __setattr__(self, name, value):
        fields = type(self)._FIELDS
        if name not in fields:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}; its attributes are "
                                 f"{sorted(fields)}")
        kind, low = fields[name]
        self._solver._set_setting(name, check_setting(name, value, kind, low))

    def __dir__(self):
        return sorted(type(self)._FIELDS)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in type(self)._FIELDS)})"


class DirectSolverPlanConfig(_Config):
    """Settings of :meth:`DirectSolver.plan` (reordering and symbolic factorization): ``host_nthreads``,
    ``reordering_algorithm``, ``pivot_type``, ``pivot_threshold``, ``max_nnz``, ``matching_algorithm``,
    ``nd_min_levels``, ``use_superpanels`` (cuDSS's parameters of the same meaning)."""

    _FIELDS = PLAN_FIELDS
    __slots__ = ()


class DirectSolverFactorizationConfig(_Config):
    """Settings of :meth:`DirectSolver.factorize`: ``factorization_algorithm``, ``pivot_eps_algorithm``,
    ``pivot_eps``."""

    _FIELDS = FACTORIZATION_FIELDS
    __slots__ = ()


class DirectSolverSolutionConfig(_Config):
    """Settings of :meth:`DirectSolver.solve`: ``solution_algorithm``, ``ir_num_steps`` (iterative refinement
    steps)."""

    _FIELDS = SOLUTION_FIELDS
    __slots__ = ()


class _Info:
    __slots__ = ("_solver",)
    _STATE = "planned"

    def __init__(self, solver: Any) -> None:
        self._solver = solver

    def _get(self, name: str):
        return self._solver._info(name, self._STATE)


class DirectSolverPlanInfo(_Info):
    """What :meth:`DirectSolver.plan` found: ``memory_estimates`` (a record of ``memory_estimates_dtype``, bytes),
    ``row_permutation`` and ``col_permutation`` (of the reordering), ``matching_col_permutation``,
    ``num_superpanels``. Permutations are not available for batched systems."""

    __slots__ = ()

    @property
    def memory_estimates(self) -> np.recarray:
        """The memory the next phases need in bytes, a record of ``memory_estimates_dtype``."""
        raw = self._get("memory_estimates")
        out = np.zeros((), dtype=memory_estimates_dtype).view(np.recarray)
        if isinstance(raw, dict):  # a CPU engine: the host memory it reports
            for key, value in raw.items():
                out[key] = value
        else:
            out[...] = np.frombuffer(np.asarray(raw, dtype=np.int64).astype("<u8").tobytes(),
                                     dtype=memory_estimates_dtype)[0]
        return out

    @property
    def row_permutation(self) -> np.ndarray | None:
        """The row permutation of the reordering (not for batches)."""
        return self._get("plan_row_permutation")

    @property
    def col_permutation(self) -> np.ndarray | None:
        """The column permutation of the reordering (not for batches)."""
        return self._get("plan_col_permutation")

    @property
    def matching_col_permutation(self) -> np.ndarray | None:
        """The column permutation of matching (not for batches)."""
        return self._get("matching_col_permutation")

    @property
    def num_superpanels(self) -> int | None:
        """Superpanels of the symbolic factorization (None where the engine does not report it)."""
        return self._get("num_superpanels")


class DirectSolverFactorizationInfo(_Info):
    """What :meth:`DirectSolver.factorize` found: ``info`` (the engine's error indicator, 0 for success),
    ``lu_nnz`` (stored entries of the factors), ``npivots`` (perturbed pivots), ``inertia`` (positive and negative
    pivots of symmetric and Hermitian indefinite types), ``diag`` (of the factors), ``row_permutation``,
    ``col_permutation``, ``row_scale_factors``, ``col_scale_factors`` (of matching). Arrays are not available
    for batched systems."""

    __slots__ = ()
    _STATE = "factorized"

    @property
    def info(self) -> int | None:
        """The engine's error indicator, 0 for success (None where the engine does not report it)."""
        return self._get("info")

    @property
    def lu_nnz(self) -> int | None:
        """Stored entries of the factors (a batch's total)."""
        return self._get("lu_nnz")

    @property
    def npivots(self) -> int | None:
        """Perturbed (or tiny) pivots of the factorization (a batch's total)."""
        return self._get("npivots")

    @property
    def inertia(self) -> np.ndarray | None:
        """Positive and negative pivots (int32, two of them) of symmetric and Hermitian indefinite types."""
        return self._get("inertia")

    @property
    def diag(self) -> np.ndarray | None:
        """The diagonal of the factors (host array of the system's dtype; not for batches)."""
        return self._get("diag")

    @property
    def row_permutation(self) -> np.ndarray | None:
        """The row permutation of the factorization (not for batches)."""
        return self._get("row_permutation")

    @property
    def col_permutation(self) -> np.ndarray | None:
        """The column permutation of the factorization (not for batches)."""
        return self._get("col_permutation")

    @property
    def row_scale_factors(self) -> np.ndarray | None:
        """The row scale factors of matching (real; not for batches)."""
        return self._get("row_scale_factors")

    @property
    def col_scale_factors(self) -> np.ndarray | None:
        """The column scale factors of matching (real; not for batches)."""
        return self._get("col_scale_factors")
