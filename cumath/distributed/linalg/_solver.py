"""Distributed dense direct solver: LU with partial pivoting of a block-cyclic matrix, then solves.

CPU engine: ScaLAPACK ``p?getrf`` (factorize, once) and ``p?getrs`` (solve, per right-hand side set).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

import numpy as np

from ..._core.lifecycle import Stateful, requires
from ...errors import SingularMatrixError
from .._context import require_context
from .._operands import host_view, wrap_result
from ._blocks import MatrixOperand

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, StreamLike

__all__ = ["DirectSolver", "direct_solver", "DirectSolverOptions"]

logger = logging.getLogger(__name__)


class DirectSolverOptions:
    """Options of the distributed direct solver: ``transpose`` ('N', 'T' or 'C': solve op(A) X = B)."""

    def __init__(self, transpose: str = "N", logger: logging.Logger | None = None) -> None:
        transpose = str(transpose).upper()
        if transpose not in ("N", "T", "C"):
            raise ValueError(f"transpose={transpose!r}; the allowed values are 'N', 'T', 'C'")
        self.transpose = transpose
        self.logger = logger


class DirectSolver(Stateful):
    """Solve ``A X = B`` for a distributed square ``A`` (LU with partial pivoting) and right-hand sides ``B``.

    ``distributions=[dA, dB]`` are BlockCyclic/BlockNonCyclic on one 2-D ProcessGrid with square blocks of A
    (ScaLAPACK needs MB_A = NB_A and B's row blocks equal to A's). ``plan()`` checks, ``factorize()`` runs
    ``p?getrf`` on a copy of A (the caller's A is never written), ``solve()`` returns this rank's block of X,
    distributed as B. ``reset_operands(a=, b=)`` takes new blocks; a new A needs ``factorize()`` again.

    Example (every rank)::

        with DirectSolver(a_local, b_local, distributions=[d, d]) as s:
            s.plan(); s.factorize(); x_local = s.solve()
    """

    _STATES = {"planned": ("_planned", "needs a plan: call plan() first"),
               "factorized": ("_factorized", "needs the factors: call factorize() first")}
    _factorized = False

    def __init__(self, a: AnyTensor, b: AnyTensor, *, distributions: Any,
                 options: DirectSolverOptions | Mapping[str, Any] | None = None, stream: StreamLike = None) -> None:
        self._ctx = ctx = require_context()
        self.options = options if isinstance(options, DirectSolverOptions) else DirectSolverOptions(
            **(options or {}))
        if not isinstance(distributions, (list, tuple)) or len(distributions) != 2:
            raise ValueError("distributions must be [dA, dB]: one BlockCyclic/BlockNonCyclic per operand")
        if distributions[0].process_grid != distributions[1].process_grid:
            raise ValueError("the distributions of A and B must share one ProcessGrid; redistribute B first")
        b_arr, _ = host_view(b, "b")
        vector = b_arr.ndim == 1
        if vector:
            b = b_arr.reshape(-1, 1)
        self._vector = vector
        ctx.process_group.agree("DirectSolver", dtypes=[str(np.asarray(a).dtype), str(b_arr.dtype)], vector=vector,
                                ndim=getattr(a, "ndim", None))
        self._a = MatrixOperand(ctx, a, distributions[0], "a")
        self._b = MatrixOperand(ctx, b, distributions[1], "b")
        n, n2 = self._a.global_shape
        if n != n2:
            raise ValueError(f"a must be square; its global shape is {self._a.global_shape}")
        if self._b.global_shape[0] != n:
            raise ValueError(f"b has {self._b.global_shape[0]} rows globally, a has {n}")
        da, db = self._a.desc, self._b.desc
        if da[4] != da[5] or da[4] != db[4] or da[6] != db[6]:
            raise ValueError(f"ScaLAPACK needs square blocks of a ({da[4]}x{da[5]} given) and b's row blocks "
                             f"({db[4]}) and first process row equal to a's; choose block_sizes accordingly")
        self.dtype = np.dtype(np.result_type(self._a.array.dtype, self._b.array.dtype))

    def plan(self) -> None:
        from ..._bindings import scalapack

        self._ctx.process_group.agree("DirectSolver.plan")
        self._prefix = scalapack.PREFIX[self.dtype]
        self._planned = True
        logger.info("distributed LU solve n=%d, nrhs=%d (%s) planned on ScaLAPACK p%sgetrf/p%sgetrs",
                    self._a.global_shape[0], self._b.global_shape[1], self.dtype, self._prefix, self._prefix)

    @requires("planned")
    def factorize(self) -> None:
        from ..._bindings import scalapack

        self._ctx.process_group.agree("DirectSolver.factorize")
        n = self._a.global_shape[0]
        self._lu = self._a.fortran(self.dtype, copy=True)
        self._ipiv = np.zeros(self._lu.shape[0] + int(self._a.desc[4]), dtype=np.int32)
        info = scalapack.getrf(self._prefix, n, n, self._lu.ctypes.data, self._a.desc, self._ipiv.ctypes.data)
        # MKL's p?getrf was seen returning info = 0 with an exactly zero U(n, n): look at the diagonal too
        info = min([i for i in self._ctx.process_group.allgather(max(info, 0) or self._zero_pivot()) if i] or [0])
        if info > 0:
            self._factorized = False
            raise SingularMatrixError(f"the matrix is singular: U({info}, {info}) is exactly zero after LU with "
                                      "partial pivoting; check the matrix or regularize it")
        self._factorized = True

    def _zero_pivot(self) -> int:
        """The 1-based index of the first exactly zero diagonal entry of U this rank holds (0: none)."""
        group = self._ctx.process_group
        rows, cols = self._a.dist.indices(self._a.global_shape, group.rank, group.nranks)
        common, ir, ic = np.intersect1d(np.asarray(rows), np.asarray(cols), return_indices=True)
        zero = np.flatnonzero(self._lu[ir, ic] == 0)
        return int(common[zero[0]]) + 1 if zero.size else 0

    @requires("planned", "factorized")
    def solve(self) -> AnyTensor:
        """This rank's block of X (a new array, distributed as B)."""
        from ..._bindings import scalapack

        self._ctx.process_group.agree("DirectSolver.solve")
        n, nrhs = self._b.global_shape
        x = self._b.fortran(self.dtype, copy=True)
        scalapack.getrs(self._prefix, self.options.transpose, n, nrhs, self._lu.ctypes.data, self._a.desc,
                        self._ipiv.ctypes.data, x.ctypes.data, self._b.desc)
        if self._vector:
            x = x.reshape(-1)
        return wrap_result(x, self._b.package)

    @requires("planned")
    def reset_operands(self, a: AnyTensor = None, b: AnyTensor = None) -> None:
        for name, x in (("a", a), ("b", b)):
            if x is None:
                continue
            op = getattr(self, f"_{name}")
            arr, _ = host_view(x, name)
            if name == "b" and self._vector:
                arr = arr.reshape(-1, 1)
            if arr.shape != op.array.shape or arr.dtype != op.array.dtype:
                raise ValueError(f"reset_operands: {name} has shape {arr.shape} and dtype {arr.dtype}, the planned "
                                 f"one {op.array.shape} and {op.array.dtype}")
            op.array = arr
            if name == "a":
                self._factorized = False

    def _release(self) -> None:
        self._a = self._b = self._lu = None


def direct_solver(a: AnyTensor, b: AnyTensor, /, *, distributions: Any,
                  options: DirectSolverOptions | Mapping[str, Any] | None = None,
                  stream: StreamLike = None) -> AnyTensor:
    """Solve ``A X = B`` for distributed A and B; returns this rank's block of X (distributed as B)."""
    with DirectSolver(a, b, distributions=distributions, options=options, stream=stream) as s:
        s.plan()
        s.factorize()
        return s.solve()
