"""Linear algebra: the generic matrix product on the CPU (BLAS) and the GPU (cuBLAS), with structured operands
(symmetric, Hermitian, triangular, diagonal) through qualifiers, and the dense direct solver (LAPACK on the CPU,
cuSOLVER and cuBLAS's batched LU on the GPU). The shape of nvmath-python's ``nvmath.linalg``.

``cumath.linalg.advanced`` (cuBLASLt: epilogs, autotuning, narrow precisions) loads on first use.
"""

from typing import TYPE_CHECKING

from ..errors import InvalidStateError
from .._core.execution import ExecutionCPU, ExecutionCUDA
from ._generic import batch as _batch  # noqa: F401 - defines the class of Matmul(sequences, ...) (explicit batches)
from ._generic.functions import matmul
from ._generic.options import MatmulOptions
from ._generic.planner import Matmul
from ._solver import (
    DirectSolver,
    DirectSolverMatrixType,
    DirectSolverOptions,
    IllConditionedWarning,
    InvalidDirectSolverState,
    SingularMatrixError,
    direct_solver,
)
from ._solver import DirectSolverBatch as _DirectSolverBatch  # noqa: F401 - the class of DirectSolver(lists, ...)
from ._generic.qualifiers import (
    DiagonalMatrixQualifier,
    DiagType,
    FillMode,
    GeneralMatrixQualifier,
    HermitianMatrixQualifier,
    MatrixQualifier,
    SideMode,
    SymmetricMatrixQualifier,
    TriangularMatrixQualifier,
    matrix_qualifiers_dtype,
)

if TYPE_CHECKING:  # what the lazy __getattr__ below loads, visible to type checkers
    from . import advanced
    from .advanced._options import MatmulComputeType as ComputeType

#: Raised when a Matmul is used after free(), or executed before plan() (nvmath-python's name).
InvalidMatmulState = InvalidStateError

__all__ = ["matmul", "Matmul", "MatmulOptions", "matrix_qualifiers_dtype", "MatrixQualifier",
           "GeneralMatrixQualifier", "SymmetricMatrixQualifier", "HermitianMatrixQualifier",
           "TriangularMatrixQualifier", "DiagonalMatrixQualifier", "FillMode", "DiagType", "SideMode",
           "ExecutionCPU", "ExecutionCUDA", "InvalidMatmulState", "advanced", "DirectSolver", "direct_solver",
           "DirectSolverOptions", "DirectSolverMatrixType", "SingularMatrixError", "IllConditionedWarning",
           "InvalidDirectSolverState", "ComputeType", "generic"]


def __getattr__(name: str) -> object:
    # the cuBLASLt module loads on first use (it is written separately and may be absent)
    if name in ("advanced", "generic"):
        import importlib

        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    if name == "ComputeType":  # cublasComputeType_t, the compute type of cuBLAS and cuBLASLt
        from .advanced._options import MatmulComputeType

        globals()[name] = MatmulComputeType
        return MatmulComputeType
    raise AttributeError(f"module 'cumath.linalg' has no attribute {name!r}")
