"""Specialised matrix multiplication through cuBLASLt (the shape of nvmath-python's ``linalg.advanced``).

``matmul(a, b, c, alpha=, beta=, epilog=, epilog_inputs=, ...)`` computes ``epilog(alpha * a @ b + beta * c)`` in
one library call; :class:`Matmul` plans once and executes many times (``plan`` / ``autotune`` / ``execute`` /
``reset_operands`` / ``free``). Operands are NumPy, CuPy or PyTorch arrays; results come back in the same
package, on the same device, and in the inputs' layout where cuBLASLt allows it.
"""

from typing import TYPE_CHECKING

from . import helpers
from ._algorithms import Algorithm
from ._functions import matmul
from ._options import (
    MatmulComputeType,
    MatmulEpilog,
    MatmulEpilogPreferences,
    MatmulInnerShape,
    MatmulNumericalImplFlags,
    MatmulOptions,
    MatmulPlanPreferences,
    MatmulQuantizationScales,
    MatmulReductionScheme,
)
from ._planner import Matmul

if TYPE_CHECKING:  # loaded by __getattr__ below
    from ._options import matrix_qualifiers_dtype

__all__ = [
    "matmul", "Matmul", "Algorithm", "MatmulOptions", "MatmulPlanPreferences", "MatmulEpilogPreferences",
    "MatmulQuantizationScales", "MatmulEpilog", "MatmulComputeType", "MatmulNumericalImplFlags",
    "MatmulReductionScheme", "MatmulInnerShape", "matrix_qualifiers_dtype", "helpers",
]


def __getattr__(name: str) -> object:
    if name == "matrix_qualifiers_dtype":  # a NumPy structured dtype: ("structure", object), ("is_conjugate", i2)
        from . import _options

        value = _options.matrix_qualifiers_dtype
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
