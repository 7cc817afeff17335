"""Options of the dense direct solver: nvmath-python's ``DirectSolverOptions`` plus cumath's additions."""

from __future__ import annotations

import dataclasses
import enum
import logging
from typing import Literal

from ..._core.options import check_choice

__all__ = ["DirectSolverOptions", "DirectSolverMatrixType", "CPU_LAPACK", "BATCH_METHODS", "matrix_type_of"]

CPU_LAPACK = ("auto", "openblas", "mkl", "nvpl")
BATCH_METHODS = ("auto", "loop", "batched", "kernel")


class DirectSolverMatrixType(enum.IntEnum):
    """What ``a`` is, which decides the factorization (values are cuDSS's ``cudssMatrixType_t``, as in
    ``nvmath.sparse.advanced.DirectSolverMatrixType``; the dense solver takes these three).

    GENERAL: any square matrix, LU with partial pivoting (getrf/getrs). SPD: real symmetric positive definite,
    HPD: Hermitian positive definite (complex; for real dtypes the same as SPD): Cholesky (potrf/potrs), about
    half the work of LU, reading only the lower triangle of ``a``.
    """

    GENERAL = 0
    SPD = 3
    HPD = 4


def matrix_type_of(value) -> DirectSolverMatrixType:
    """``value`` (a DirectSolverMatrixType, its int value, or its name in any case) as the enum."""
    if isinstance(value, DirectSolverMatrixType):
        return value
    if isinstance(value, str):
        member = DirectSolverMatrixType.__members__.get(value.upper())
        if member is not None:
            return member
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return DirectSolverMatrixType(value)
        except ValueError:
            pass
    allowed = ", ".join(f"'{m.name.lower()}'" for m in DirectSolverMatrixType)
    raise ValueError(f"matrix_type={value!r} is not supported; the allowed values are {allowed} "
                     f"(or cumath.linalg.DirectSolverMatrixType members)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DirectSolverOptions:
    """Options of :class:`cumath.linalg.DirectSolver` and :func:`cumath.linalg.direct_solver`.

    ``allocator`` to ``inplace_b`` are nvmath-python's; ``matrix_type``, ``cpu_lapack``, ``batch_method`` and
    ``deterministic`` are cumath's additions.

    Attributes:
        allocator: device memory for workspaces, pivots and staging (see :mod:`cumath.memory`); by default the
            operands' package's pool (the CUDA runtime's stream-ordered pool for host operands).
        blocking: True waits for GPU work to finish; 'auto' returns at once from solve() for GPU operands (host
            operands always wait so that the result can be read). factorize() always waits: it reads the
            factorization's status (``info``) back once, to report singular matrices.
        logger: a ``logging.Logger``; by default the ``cumath.linalg`` loggers.
        handle: a cuSOLVER handle (an int) to use instead of one the plan creates; the plan neither frees it nor
            changes anything but its stream. Batches of small LU problems run on cuBLAS and use a cuBLAS handle
            of the plan's own.
        inplace_a: factorize() overwrites ``a`` with its factors (LU: the unit lower triangle L below the
            diagonal and U on and above it, of ``P a = L U``; Cholesky: L in the lower triangle, ``a = L L^H``,
            the strict upper triangle left as it was). Without it ``a`` is never written.
        inplace_b: solve() writes the solution into ``b`` and returns ``b``. Without it ``b`` is never written
            and solve() returns a new array.
        matrix_type: 'general' (LU, the default), 'spd' (real symmetric positive definite) or 'hpd' (Hermitian
            positive definite; complex, or real meaning 'spd'): Cholesky. A DirectSolverMatrixType or its name in
            any case.
        cpu_lapack: the CPU LAPACK: 'auto' (NVPL on Arm where installed, then NumPy's OpenBLAS, SciPy's, the
            system's, MKL), 'openblas', 'mkl' or 'nvpl' (Arm only, untested on Arm hardware). The environment variable CUMATH_BLAS sets the default for 'auto' (as for the matmul's BLAS).
        batch_method: how a GPU batch of problems runs: 'loop' (one cuSOLVER 64-bit call per problem), 'batched'
            (one call for all: cuBLAS getrfBatched/getrsBatched for LU, cuSOLVER potrfBatched/potrsBatched for
            Cholesky; sizes below 2^31), 'kernel' (cumath's own kernels for systems of order at most 32, LU or
            Cholesky: one launch factorizes, checks and solves every system, a warp each), or 'auto' (the
            default): the kernels for order at most 32 (``_traits.KERNEL_UP_TO``; the environment variable
            ``CUMATH_SOLVER_KERNEL=0`` turns them off), else chosen per problem size from a table of measurements
            (``cumath.linalg._solver._traits.BATCHED_UP_TO``). The choice is logged (INFO, 'solver engine').
        deterministic: True (the default, cuSOLVER's own): the same input gives bit-identical results on every
            run. False lets cuSOLVER use non-deterministic algorithms where it has faster ones
            (``cusolverDnSetDeterministicMode(CUSOLVER_ALLOW_NON_DETERMINISTIC_RESULTS)``, CUDA 12.2 and later;
            set on the handles the plan creates, never on the caller's ``handle``). Host solves ignore it.
    """

    allocator: object | None = dataclasses.field(default=None, compare=False)
    blocking: Literal[True, "auto"] = "auto"
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)
    handle: int | None = None
    inplace_a: bool = False
    inplace_b: bool = False
    matrix_type: DirectSolverMatrixType | str = DirectSolverMatrixType.GENERAL
    cpu_lapack: Literal["auto", "openblas", "mkl", "nvpl"] = "auto"
    batch_method: Literal["auto", "loop", "batched", "kernel"] = "auto"
    deterministic: bool = True

    def __post_init__(self):
        check_choice("inplace_a", self.inplace_a, (True, False))
        check_choice("inplace_b", self.inplace_b, (True, False))
        if self.blocking is not True and self.blocking != "auto":
            raise ValueError(f"blocking={self.blocking!r} is not supported; the allowed values are [True, 'auto']")
        if self.handle is not None and (not isinstance(self.handle, int) or isinstance(self.handle, bool)):
            raise TypeError(f"handle must be a cuSOLVER handle (an int) or None, not {type(self.handle).__name__}")
        object.__setattr__(self, "matrix_type", matrix_type_of(self.matrix_type))
        check_choice("cpu_lapack", self.cpu_lapack, CPU_LAPACK)
        check_choice("batch_method", self.batch_method, BATCH_METHODS)
        check_choice("deterministic", self.deterministic, (True, False))
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise TypeError(f"logger must be a logging.Logger, not {type(self.logger).__name__}")
