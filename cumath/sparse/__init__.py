"""Sparse linear algebra: sparse times dense products (``matmul``, ``Matmul``), ``cumath.sparse.advanced`` (the
sparse direct solver, on cuDSS, MKL PARDISO or SuperLU) and ``cumath.sparse.ust`` (the Universal Sparse Tensor).

Importing this package loads no native library and imports no framework: every name is imported on first use,
and engines only when a problem is planned.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what __getattr__ below imports on first use, visible to type checkers
    from .._core.execution import ExecutionCPU, ExecutionCUDA
    from . import advanced, ust
    from ._matmul import ComputeType, Matmul, MatmulOptions, matmul, matmul_matrix_qualifiers_dtype
    from ._matmul._compile import (compile_matmul_add, compile_matmul_atomic_add, compile_matmul_epilog,
                                   compile_matmul_mul, compile_matmul_prolog)

__all__ = ["advanced", "ust", "matmul", "Matmul", "MatmulOptions", "ComputeType", "matmul_matrix_qualifiers_dtype",
           "compile_matmul_prolog", "compile_matmul_epilog", "compile_matmul_add", "compile_matmul_atomic_add",
           "compile_matmul_mul", "ExecutionCPU", "ExecutionCUDA"]

_FROM = {"matmul": "._matmul", "Matmul": "._matmul", "MatmulOptions": "._matmul", "ComputeType": "._matmul",
         "matmul_matrix_qualifiers_dtype": "._matmul", "compile_matmul_prolog": "._matmul._compile",
         "compile_matmul_epilog": "._matmul._compile", "compile_matmul_add": "._matmul._compile",
         "compile_matmul_atomic_add": "._matmul._compile", "compile_matmul_mul": "._matmul._compile",
         "ExecutionCPU": ".._core.execution", "ExecutionCUDA": ".._core.execution"}


def __getattr__(name: str) -> object:
    if name in ("advanced", "ust"):
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    where = _FROM.get(name)
    if where is not None:
        value = getattr(importlib.import_module(where, __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cumath.sparse' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
