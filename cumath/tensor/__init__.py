"""Tensor contractions: ``alpha * einsum(expr, a, b) + beta * c`` and its ternary form, on cuTENSOR (GPU) and
on CBLAS GEMMs (CPU), with the API of nvmath-python's ``nvmath.tensor``::

    import cumath
    r = cumath.tensor.binary_contraction("abcd,cdef->abef", a, b)
    with cumath.tensor.TernaryContraction("ij,jk,kl->il", a, b, c) as t:
        t.plan()
        r = t.execute()
"""

from .._core.execution import ExecutionCPU, ExecutionCUDA
from ._functions import binary_contraction, ternary_contraction
from ._options import (ComputeDesc, ContractionAlgo, ContractionAutotuneMode, ContractionCacheMode,
                       ContractionJitMode, ContractionOptions, Operator, tensor_qualifiers_dtype)
from ._planner import BinaryContraction, ContractionPlanPreference, TernaryContraction

__all__ = ["ExecutionCPU", "ExecutionCUDA", "binary_contraction", "ternary_contraction", "BinaryContraction", "TernaryContraction",
           "ContractionOptions", "ContractionPlanPreference", "ContractionAlgo", "ContractionAutotuneMode",
           "ContractionCacheMode", "ContractionJitMode", "ComputeDesc", "Operator", "tensor_qualifiers_dtype"]
