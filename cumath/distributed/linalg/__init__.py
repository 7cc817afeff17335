"""Distributed dense linear algebra (the shape of nvmath-python's ``nvmath.distributed.linalg``): the direct
solver here, the matrix product in ``advanced``. CPU engine: MKL ScaLAPACK; the operands are block-cyclic."""

import importlib
from typing import TYPE_CHECKING

from ._solver import DirectSolver, DirectSolverOptions, direct_solver

if TYPE_CHECKING:  # imported on first access by __getattr__ below
    from . import advanced

__all__ = ["DirectSolver", "DirectSolverOptions", "direct_solver", "advanced"]


def __getattr__(name: str) -> object:
    if name == "advanced":
        return importlib.import_module(".advanced", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
