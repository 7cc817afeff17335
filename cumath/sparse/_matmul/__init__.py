"""Sparse times dense matrix products: ``matmul`` and the stateful ``Matmul`` (the shape of nvmath-python 1.0's
``nvmath.sparse`` matmul), on cuSPARSE (GPU), oneMKL's sparse BLAS or SciPy (CPU)."""

from ._functions import matmul
from ._options import ComputeType, MatmulOptions
from ._planner import Matmul
from ._qualifiers import matmul_matrix_qualifiers_dtype

__all__ = ["matmul", "Matmul", "MatmulOptions", "ComputeType", "matmul_matrix_qualifiers_dtype"]
