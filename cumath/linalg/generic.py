"""The generic matrix product and the dense direct solver under the module path nvmath-python code imports
them from (``from nvmath.linalg.generic import matmul, MatmulOptions``): the same objects as in
:mod:`cumath.linalg`."""

from . import (
    DiagonalMatrixQualifier,
    DiagType,
    DirectSolver,
    DirectSolverOptions,
    ExecutionCPU,
    ExecutionCUDA,
    FillMode,
    GeneralMatrixQualifier,
    HermitianMatrixQualifier,
    InvalidDirectSolverState,
    InvalidMatmulState,
    Matmul,
    MatmulOptions,
    MatrixQualifier,
    SideMode,
    SymmetricMatrixQualifier,
    TriangularMatrixQualifier,
    direct_solver,
    matmul,
    matrix_qualifiers_dtype,
)

__all__ = ["DiagonalMatrixQualifier", "ExecutionCPU", "ExecutionCUDA", "GeneralMatrixQualifier",
           "HermitianMatrixQualifier", "InvalidMatmulState", "matmul", "Matmul", "MatmulOptions", "MatrixQualifier",
           "matrix_qualifiers_dtype", "SymmetricMatrixQualifier", "TriangularMatrixQualifier", "SideMode",
           "FillMode", "DiagType", "DirectSolverOptions", "DirectSolver", "direct_solver",
           "InvalidDirectSolverState"]
