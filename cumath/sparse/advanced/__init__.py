"""The sparse direct solver (the shape of nvmath-python 1.0's ``nvmath.sparse.advanced``).

``direct_solver(a, b)`` and the stateful ``DirectSolver(a, b)`` (plan -> factorize -> solve, refactorizing new
values of the same sparsity pattern without planning again) on cuDSS (GPU), MKL PARDISO or SciPy's SuperLU (CPU).
Options: :class:`DirectSolverOptions`; configuration and information of each phase: ``plan_config``,
``factorization_config``, ``solution_config``, ``plan_info``, ``factorization_info``; execution spaces:
``ExecutionCUDA`` (with hybrid memory), ``ExecutionHybrid``, or ``cumath.ExecutionCPU``. No engine is loaded
until a problem is planned.
"""

from ..._core.execution import ExecutionCPU
from ._config import (DirectSolverFactorizationConfig, DirectSolverFactorizationInfo, DirectSolverPlanConfig,
                      DirectSolverPlanInfo, DirectSolverSolutionConfig)
from ._execution import ExecutionCUDA, ExecutionHybrid, HybridMemoryModeOptions
from ._functions import direct_solver
from ._options import (DirectSolverFactorizationAlg, DirectSolverFactorizationPreferences, DirectSolverMatchingAlg,
                       DirectSolverMatrixType, DirectSolverMatrixViewType, DirectSolverOptions,
                       DirectSolverPivotEpsilonAlg, DirectSolverPivotType, DirectSolverPlanPreferences,
                       DirectSolverReorderingAlg, DirectSolverSolutionPreferences, DirectSolverSolveAlg)
from ._planner import DirectSolver
from ._traits import memory_estimates_dtype

__all__ = [
    "direct_solver", "DirectSolver", "DirectSolverOptions", "DirectSolverPlanPreferences",
    "DirectSolverFactorizationPreferences", "DirectSolverSolutionPreferences", "DirectSolverPlanConfig",
    "DirectSolverFactorizationConfig", "DirectSolverSolutionConfig", "DirectSolverPlanInfo",
    "DirectSolverFactorizationInfo", "DirectSolverMatrixType", "DirectSolverMatrixViewType",
    "DirectSolverReorderingAlg", "DirectSolverMatchingAlg", "DirectSolverFactorizationAlg", "DirectSolverSolveAlg",
    "DirectSolverPivotEpsilonAlg", "DirectSolverPivotType", "ExecutionCUDA", "ExecutionHybrid", "ExecutionCPU",
    "HybridMemoryModeOptions", "memory_estimates_dtype",
]
