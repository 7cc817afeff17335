"""The dense direct solver (the shape of nvmath-python's ``nvmath.linalg.DirectSolver`` and ``direct_solver``):
LU or Cholesky factorizations and solves of square systems and batches of them, on the CPU (LAPACK) and the GPU
(cuSOLVER, cuBLAS's batched LU).

Layers: ``_functions`` (the stateless call) -> ``_planner`` / ``_batch`` (the stateful object, explicit batches)
-> ``_executors`` (one per operand / engine placement) -> ``_backends`` (lapack, cusolver, cublas_batched) ->
``cumath._bindings`` (lapack, cusolver, cublas); ``_traits`` is the pure plan arithmetic, ``_options`` the options.
"""

from ...errors import InvalidStateError
from ._batch import DirectSolverBatch
from ._functions import direct_solver
from ._options import DirectSolverMatrixType, DirectSolverOptions
from ._planner import DirectSolver
from ._traits import IllConditionedWarning, SingularMatrixError

#: Raised when a DirectSolver is used after free(), or out of order (nvmath-python's name).
InvalidDirectSolverState = InvalidStateError

__all__ = ["DirectSolver", "DirectSolverBatch", "direct_solver", "DirectSolverOptions", "DirectSolverMatrixType",
           "SingularMatrixError", "IllConditionedWarning", "InvalidDirectSolverState"]
