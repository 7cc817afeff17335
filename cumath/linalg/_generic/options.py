"""Options of the generic matmul (the shape of nvmath-python's ``nvmath.linalg.MatmulOptions``)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Literal

from ..._core.options import check_allocator, check_choice, settable

__all__ = ["MatmulOptions", "CPU_BLAS"]

CPU_BLAS = ("auto", "openblas", "mkl", "nvpl")


@settable
@dataclasses.dataclass(frozen=True, kw_only=True)
class MatmulOptions:
    """Options of :class:`cumath.linalg.Matmul` and :func:`cumath.linalg.matmul`.

    Attributes:
        inplace: write the result into ``c`` (which must then have the result's shape) and return ``c``.
        blocking: True waits for GPU work to finish; 'auto' returns at once for GPU operands (host operands
            always wait so that the result can be read).
        allocator: device memory for workspaces and staging (see :mod:`cumath.memory`).
        logger: a ``logging.Logger``; by default the ``cumath.linalg`` loggers.
        cpu_blas: (cumath) the CPU BLAS: 'auto' (NVPL on Arm where installed, then NumPy's OpenBLAS, SciPy's,
            the system's, MKL), 'openblas', 'mkl' or 'nvpl' (NVIDIA NVPL BLAS, Arm only, untested on Arm
            hardware). The environment variable CUMATH_BLAS sets the default for 'auto'.
    """

    inplace: bool = False
    blocking: Literal[True, "auto"] = "auto"
    allocator: object | None = dataclasses.field(default=None, compare=False)
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)
    cpu_blas: Literal["auto", "openblas", "mkl", "nvpl"] = "auto"

    def __post_init__(self):
        check_choice("inplace", self.inplace, (True, False))
        if self.blocking is not True and self.blocking != "auto":
            raise ValueError(f"blocking={self.blocking!r} is not supported; the allowed values are [True, 'auto']")
        check_choice("cpu_blas", self.cpu_blas, CPU_BLAS)
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise TypeError(f"logger must be a logging.Logger, not {type(self.logger).__name__}")
        check_allocator(self.allocator)
