"""Distributed matrix product (the shape of nvmath-python's ``nvmath.distributed.linalg.advanced``)."""

from ._matmul import Matmul, MatmulAlgoType, MatmulEpilog, MatmulOptions, matmul, matrix_qualifiers_dtype

__all__ = ["Matmul", "matmul", "MatmulOptions", "MatmulAlgoType", "MatmulEpilog", "matrix_qualifiers_dtype"]
