"""Options, preferences and enums of the sparse direct solver (the shape of nvmath-python 1.0's, plus cumath's CPU
engine choice).

The enums are cuDSS's own (``cumath._bindings.cudss``), as in nvmath-python; the CPU engines map them to their
nearest equivalents (see ``_backends``). Options and preferences are frozen dataclasses accepted as the object,
a dict or None; enum-valued fields take the member, its value or its name in any case.
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import logging
import os
from typing import Literal

from ..._bindings import cudss
from ..._core.options import check_choice, check_enum

__all__ = ["DirectSolverOptions", "DirectSolverPlanPreferences", "DirectSolverFactorizationPreferences",
           "DirectSolverSolutionPreferences", "DirectSolverMatrixType", "DirectSolverMatrixViewType",
           "DirectSolverReorderingAlg", "DirectSolverMatchingAlg", "DirectSolverFactorizationAlg",
           "DirectSolverSolveAlg", "DirectSolverPivotEpsilonAlg", "DirectSolverPivotType", "CPU_ENGINES",
           "as_enum", "check_cudss_config"]

DirectSolverMatrixType = cudss.MatrixType
DirectSolverMatrixViewType = cudss.MatrixViewType
DirectSolverReorderingAlg = cudss.ReorderingAlg
DirectSolverMatchingAlg = cudss.MatchingAlg
DirectSolverFactorizationAlg = cudss.FactorizationAlg
DirectSolverSolveAlg = cudss.SolveAlg
DirectSolverPivotEpsilonAlg = cudss.PivotEpsilonAlg
DirectSolverPivotType = cudss.PivotType

CPU_ENGINES = ("auto", "pardiso", "superlu")


def as_enum(cls: type[enum.IntEnum], value, name: str):
    """``value`` (a member, its int value or its name in any case) as a member of ``cls``; None stays None."""
    return check_enum(name, value, cls)


_P = cudss.ConfigParam
#: parameters cumath sets from other options, refused in cudss_config: what to use instead
_MANAGED = {_P.HYBRID_MEMORY_MODE: "execution=ExecutionCUDA(hybrid_memory_mode_options=...)",
            _P.HYBRID_DEVICE_MEMORY_LIMIT: "execution=ExecutionCUDA(hybrid_memory_mode_options=...)",
            _P.USE_CUDA_REGISTER_MEMORY: "execution=ExecutionCUDA(hybrid_memory_mode_options=...)",
            _P.HYBRID_EXECUTE_MODE: "execution=ExecutionHybrid(...)", _P.UBATCH_SIZE: "an explicit batch (a list)",
            _P.UBATCH_INDEX: "an explicit batch (a list)", _P.DEVICE_COUNT: "one solver per GPU",
            _P.DEVICE_INDICES: "one solver per GPU", _P.SCHUR_MODE: "a solver without a Schur complement"}
#: enum-valued parameters whose values may be given by name
_VALUE_ENUMS = {_P.REORDERING_ALG: cudss.ReorderingAlg, _P.MATCHING_ALG: cudss.MatchingAlg,
                _P.PIVOT_TYPE: cudss.PivotType, _P.FACTORIZATION_ALG: cudss.FactorizationAlg,
                _P.SOLVE_ALG: cudss.SolveAlg, _P.PIVOT_EPSILON_ALG: cudss.PivotEpsilonAlg,
                _P.SOLVE_MODE: cudss.SolveMode, _P.DOWNCAST_FACTORS: cudss.DowncastFactorsMode}


def check_cudss_config(value) -> tuple:
    """``DirectSolverOptions.cudss_config`` as sorted ``((ConfigParam, int or float), ...)`` pairs (hashable: the
    options are part of the plan cache's key); TypeError/ValueError that name the allowed values otherwise."""
    if value is None:
        return ()
    if isinstance(value, dict):
        items = list(value.items())
    else:
        try:
            items = [tuple(pair) for pair in value]
        except TypeError:
            items = None
        if items is None or any(len(pair) != 2 for pair in items):
            raise TypeError(f"cudss_config must be a dict of cuDSS config parameters to values (or (parameter, "
                            f"value) pairs), not {value!r}")
    out = {}
    for key, v in items:
        param = check_enum("cudss_config parameter", key, _P)
        if param in _MANAGED:
            raise ValueError(f"cudss_config cannot set {param.name}: cumath sets it from other options; use "
                             f"{_MANAGED[param]}")
        ctype = cudss.CONFIG_TYPES.get(param)
        if ctype is None:
            raise ValueError(f"cudss_config cannot set {param.name} (not a scalar parameter)")
        if v is None:
            raise TypeError(f"cudss_config[{param.name}] must be a number, not None (leave the parameter out to keep "
                            f"cuDSS's default)")
        if param in _VALUE_ENUMS and isinstance(v, str):
            v = check_enum(f"cudss_config[{param.name}]", v, _VALUE_ENUMS[param])
        if ctype is ctypes.c_double:
            out[param] = _number(v, f"cudss_config[{param.name}]", float)
        else:
            if isinstance(v, bool):
                v = int(v)
            out[param] = _number(v, f"cudss_config[{param.name}]", int)
    return tuple(sorted(out.items()))


def _number(value, name: str, kind, low=None):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise TypeError(f"{name} must be {'a number' if kind is float else 'an int'} or None, not {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, not {value!r}")
    return kind(value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DirectSolverOptions:
    """Options of :class:`DirectSolver` and :func:`direct_solver`.

    Attributes:
        sparse_system_type: the system's type, a :class:`DirectSolverMatrixType` (GENERAL, SYMMETRIC, HERMITIAN,
            SPD, HPD); the default GENERAL makes no assumption. Symmetric types use only the triangle that
            ``sparse_system_view`` names.
        sparse_system_view: which part of ``a`` holds the matrix, a :class:`DirectSolverMatrixViewType`: FULL
            (the default), LOWER or UPPER triangle.
        multithreading_lib: the path of the cuDSS threading layer. By default cumath loads the one that ships
            with cuDSS (``libcudss_mtlayer_gomp.so*``, next to ``libcudss``), so that cuDSS's CPU-side work
            (reordering, symbolic analysis) runs on all the cores the process may use.
        logger: a ``logging.Logger``; by default the ``cumath.sparse`` loggers.
        blocking: True waits for GPU work to finish; 'auto' returns from ``solve()`` at once for GPU operands
            (host operands always wait so that the result can be read).
        handle: a cuDSS library handle (an int) to use instead of one created by the solver (the caller keeps
            owning it).
        cpu_engine: (cumath) the CPU engine: 'auto' (MKL PARDISO when oneMKL is installed, else SciPy's SuperLU),
            'pardiso' or 'superlu'. The environment variable CUMATH_SPARSE_SOLVER_CPU_ENGINE sets the default.
        allocator: (cumath) device memory for the staging buffers of host operands solved on the GPU (see
            :mod:`cumath.memory`); cuDSS allocates its own workspace.
        cudss_config: (cumath) cuDSS configuration parameters set on every plan's config before its analysis,
            after cumath's own settings and the plan/factorization/solution configs: a dict (or pairs) of
            ``cumath._bindings.cudss.ConfigParam`` members or their names in any case (``"HOST_NTHREADS"``,
            ``"REORDERING_ALG"``, ``"ND_NLEVELS"``, ``"ND_UBFACTOR"``, ``"DETERMINISTIC_MODE"``, ...) to ints
            (enum members included) or, for the floating-point ones, numbers. The parameters cumath sets from
            other options (hybrid memory and execution: ``execution``; the batch and multi-GPU ones) are
            refused. E.g. ``{"host_nthreads": 8, "reordering_alg": "amd"}`` (an enum value may be given by its
            name for REORDERING_ALG, MATCHING_ALG, PIVOT_TYPE, FACTORIZATION_ALG, SOLVE_ALG, PIVOT_EPSILON_ALG).
            Ignored by the CPU engines.
    """

    sparse_system_type: int = DirectSolverMatrixType.GENERAL
    sparse_system_view: int = DirectSolverMatrixViewType.FULL
    multithreading_lib: str | None = None
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)
    blocking: Literal[True, "auto"] = "auto"
    handle: int | None = None
    cpu_engine: Literal["auto", "pardiso", "superlu"] = "auto"
    allocator: object | None = dataclasses.field(default=None, compare=False)
    cudss_config: tuple = ()

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "cudss_config", check_cudss_config(self.cudss_config))
        set_(self, "sparse_system_type", as_enum(DirectSolverMatrixType, self.sparse_system_type,
                                                 "sparse_system_type"))
        set_(self, "sparse_system_view", as_enum(DirectSolverMatrixViewType, self.sparse_system_view,
                                                 "sparse_system_view"))
        if self.blocking is not True and self.blocking != "auto":
            raise ValueError(f"blocking={self.blocking!r} is not supported; the allowed values are True and 'auto'")
        if isinstance(self.cpu_engine, str):
            set_(self, "cpu_engine", self.cpu_engine.lower())
        check_choice("cpu_engine", self.cpu_engine, CPU_ENGINES)
        if self.multithreading_lib is not None:
            if not isinstance(self.multithreading_lib, (str, os.PathLike)):
                raise TypeError(f"multithreading_lib must be a path (str) or None, not {self.multithreading_lib!r}")
            path = os.fspath(self.multithreading_lib)
            if not os.path.isfile(path):
                raise ValueError(f"multithreading_lib={path!r} is not a file; give the path of the cuDSS threading "
                                 f"layer (libcudss_mtlayer_gomp.so.*) or None for the one shipped with cuDSS")
            set_(self, "multithreading_lib", path)
        if self.handle is not None and (isinstance(self.handle, bool) or not isinstance(self.handle, int)):
            raise TypeError(f"handle must be a cuDSS handle (an int) or None, not {self.handle!r}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DirectSolverPlanPreferences:
    """Planning preferences of :func:`direct_solver` (the fields of :class:`DirectSolverPlanConfig`); None
    keeps the engine's default."""

    host_nthreads: int | None = None
    reordering_algorithm: DirectSolverReorderingAlg | None = None
    pivot_type: DirectSolverPivotType | None = None
    pivot_threshold: float | None = None
    max_nnz: int | None = None
    matching_algorithm: DirectSolverMatchingAlg | None = None
    nd_min_levels: int | None = None
    use_superpanels: bool | None = None

    def __post_init__(self):
        check_settings(self, PLAN_FIELDS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DirectSolverFactorizationPreferences:
    """Factorization preferences of :func:`direct_solver` (the fields of
    :class:`DirectSolverFactorizationConfig`); None keeps the engine's default."""

    factorization_algorithm: DirectSolverFactorizationAlg | None = None
    pivot_eps_algorithm: DirectSolverPivotEpsilonAlg | None = None
    pivot_eps: float | None = None

    def __post_init__(self):
        check_settings(self, FACTORIZATION_FIELDS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DirectSolverSolutionPreferences:
    """Solution preferences of :func:`direct_solver` (the fields of :class:`DirectSolverSolutionConfig`); None
    keeps the engine's default."""

    solution_algorithm: DirectSolverSolveAlg | None = None
    ir_num_steps: int | None = None

    def __post_init__(self):
        check_settings(self, SOLUTION_FIELDS)


#: setting name -> (kind: an enum class, int, float or bool; the smallest allowed value)
PLAN_FIELDS = {"host_nthreads": (int, 1), "reordering_algorithm": (DirectSolverReorderingAlg, None),
               "pivot_type": (DirectSolverPivotType, None), "pivot_threshold": (float, 0),
               "max_nnz": (int, 0), "matching_algorithm": (DirectSolverMatchingAlg, None),
               "nd_min_levels": (int, 1), "use_superpanels": (bool, None)}
FACTORIZATION_FIELDS = {"factorization_algorithm": (DirectSolverFactorizationAlg, None),
                        "pivot_eps_algorithm": (DirectSolverPivotEpsilonAlg, None), "pivot_eps": (float, 0)}
SOLUTION_FIELDS = {"solution_algorithm": (DirectSolverSolveAlg, None), "ir_num_steps": (int, 0)}


def check_setting(name: str, value, kind, low):
    """``value`` of setting ``name`` checked and converted (enum members, ints, floats, bools)."""
    if value is None:
        return None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return as_enum(kind, value, name)
    if kind is bool:
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise TypeError(f"{name} must be True or False, not {value!r}")
        return bool(value)
    return _number(value, name, kind, low)


def check_settings(obj, fields: dict) -> None:
    for name, (kind, low) in fields.items():
        object.__setattr__(obj, name, check_setting(name, getattr(obj, name), kind, low))
