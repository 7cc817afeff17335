"""The distributed direct solver of a GPU run of one rank: the single-GPU solver on the rank's piece.

On a 1 x 1 grid the rank's block-cyclic piece is the whole matrix, and cuSOLVERMp's getrf on it runs 2.5x the
single-GPU cuSOLVER factorization of the same system (8192 float64 on an H200: 93.7 against 37.2 ms), so the
solve goes to :class:`cumath.linalg.DirectSolver` on the caller's arrays (NumPy and CPU tensors staged to the
rank's GPU by it). ``op(A)`` for ``transpose`` 'T' and 'C' is a view (or, for 'C', a conjugated copy) of the
piece. ``CUMATH_DIST_SOLVE=scalapack`` keeps cuSOLVERMp.
"""

from __future__ import annotations

import logging

from ._device import conjugated
from ._gathered import solve_mode

__all__ = ["OneRankLU", "takes_one_rank"]

logger = logging.getLogger(__name__)


def takes_one_rank(solver) -> bool:
    """Whether the distributed ``solver`` of a GPU run goes to the single-GPU solver (see the module)."""
    return (solver._ctx.process_group.nranks == 1 and solve_mode() != "scalapack"
            and solver._a.dtype == solver._b.dtype == solver.dtype.name)


def _op(x, package: str, transpose: str):
    """``op(x)`` of the rank's piece ``x`` for a solve with ``transpose``."""
    if transpose == "N":
        return x
    return (conjugated(x, package) if transpose == "C" else x).T


class OneRankLU:
    """LU with partial pivoting of a one-rank distributed A by the single-GPU solver, and solves with it."""

    def __init__(self, solver):
        self.solver, self.ctx = solver, solver._ctx
        self.inner = None
        a, b = solver._a, solver._b
        logger.info("distributed LU solve n=%d, nrhs=%d (%s) planned on one rank: the single-GPU solver on the "
                    "rank's piece (CUMATH_DIST_SOLVE=scalapack keeps cuSOLVERMp)", a.global_shape[0],
                    b.global_shape[1], solver.dtype.name)

    def factorize(self) -> None:
        from ... import linalg
        from ..._core.execution import ExecutionCUDA

        s = self.solver
        self.free()
        a = _op(s._a.op.obj, s._a.package, s.options.transpose)
        inner = linalg.DirectSolver(a, s._b.op.obj, execution=ExecutionCUDA(device_id=self.ctx.device_id),
                                    stream=s._stream)
        try:
            inner.plan()
            inner.factorize()
        except BaseException:
            inner.free()
            raise
        self.inner, self._b = inner, s._b.op.obj

    def solve(self, transpose: str):
        b = self.solver._b.op.obj
        if b is not self._b:
            try:
                self.inner.reset_operands(b=b)
            except ValueError:  # another layout of b than the planned one: a new plan for it
                self.factorize()
            self._b = b
        return self.inner.solve()

    def free(self) -> None:
        inner, self.inner = self.inner, None
        if inner is not None:
            inner.free()
