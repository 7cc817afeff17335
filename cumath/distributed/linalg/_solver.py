"""Distributed dense direct solver: LU with partial pivoting of a block-cyclic matrix, then solves.

CPU engine: ScaLAPACK ``p?getrf`` (factorize, once) and ``p?getrs`` (solve, per right-hand side set); ranks that
share one node gather the system on rank 0 and solve it there on the node's cores (``_gathered``).
GPU engine (a context with a ``device_id``): cuSOLVERMp ``cusolverMpGetrf`` / ``cusolverMpGetrs`` over NCCL
(``_gpu_solver``); NumPy / PyTorch CPU operands are staged to the device and X copied back. A GPU run of one
rank solves with the single-GPU solver (``_one_rank``).
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
from ._gathered import gathered_solver

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

    CPU runs whose ranks all share one node (and rank 0 may use a core per rank) gather A and B on rank 0, which
    factorizes and solves with cumath's threaded dense solver while the others wait idle, and scatter X: one
    node's LAPACK beats ScaLAPACK's panel-by-panel factorization there (``CUMATH_DIST_SOLVE=scalapack`` keeps
    ScaLAPACK; the results agree to rounding). Elsewhere ScaLAPACK ``p?getrf`` / ``p?getrs`` run.

    On GPU runs (``initialize(device_id, ..., backends=("nccl",))``) the same calls run cuSOLVERMp's
    ``cusolverMpGetrf`` / ``cusolverMpGetrs`` (a run of one rank: the single-GPU solver on its piece, which
    is the whole system, 2.5x faster; ``CUMATH_DIST_SOLVE=scalapack`` keeps cuSOLVERMp): the blocks are CuPy
    arrays or PyTorch CUDA tensors on this rank's GPU (NumPy arrays and CPU tensors are staged there and X copied
    back), ``stream`` orders the work, and X is a new array of the operands' package.

    Example (every rank)::

        with DirectSolver(a_local, b_local, distributions=[d, d]) as s:
            s.plan(); s.factorize(); x_local = s.solve()
    """

    _STATES = {"planned": ("_planned", "needs a plan: call plan() first"),
               "factorized": ("_factorized", "needs the factors: call factorize() first")}
    _factorized = False
    _gathered = None

    def __init__(self, a: AnyTensor, b: AnyTensor, *, distributions: Any,
                 options: DirectSolverOptions | Mapping[str, Any] | None = None, stream: StreamLike = None) -> None:
        self._ctx = ctx = require_context()
        self._stream = stream
        self._engine = None
        self._gpu = ctx.device_id is not None
        self.options = options if isinstance(options, DirectSolverOptions) else DirectSolverOptions(
            **(options or {}))
        if not isinstance(distributions, (list, tuple)) or len(distributions) != 2:
            raise ValueError("distributions must be [dA, dB]: one BlockCyclic/BlockNonCyclic per operand")
        if distributions[0].process_grid != distributions[1].process_grid:
            raise ValueError("the distributions of A and B must share one ProcessGrid; redistribute B first")
        if self._gpu:
            from ._device import DeviceMatrix as Operand

            b_arr = b
        else:
            Operand = MatrixOperand
            b_arr, _ = host_view(b, "b")
        vector = getattr(b_arr, "ndim", None) == 1
        if vector:
            b = b_arr.reshape(-1, 1)
        self._vector = vector
        ctx.process_group.agree("DirectSolver", dtypes=[str(getattr(a, "dtype", None)), str(b_arr.dtype)],
                                vector=vector, ndim=getattr(a, "ndim", None))
        self._a = Operand(ctx, a, distributions[0], "a")
        self._b = Operand(ctx, b, distributions[1], "b")
        n, n2 = self._a.global_shape
        if n != n2:
            raise ValueError(f"a must be square; its global shape is {self._a.global_shape}")
        if self._b.global_shape[0] != n:
            raise ValueError(f"b has {self._b.global_shape[0]} rows globally, a has {n}")
        if self._gpu:
            (mba, nba), (mbb, _) = self._a.blocks, self._b.blocks
            rows = (self._a.dist.first_process[0], self._b.dist.first_process[0])
        else:
            da, db = self._a.desc, self._b.desc
            (mba, nba, mbb), rows = (da[4], da[5], db[4]), (da[6], db[6])
        if mba != nba or mba != mbb or rows[0] != rows[1]:
            raise ValueError(f"{'cuSOLVERMp' if self._gpu else 'ScaLAPACK'} needs square blocks of a ({mba}x{nba} "
                             f"given) and b's row blocks ({mbb}) and first process row equal to a's; choose "
                             "block_sizes accordingly")
        self.dtype = np.dtype(np.result_type(np.dtype(self._a.dtype), np.dtype(self._b.dtype)))

    def plan(self) -> None:
        from ..._bindings import scalapack

        self._ctx.process_group.agree("DirectSolver.plan")
        if self._gpu:
            from ._gpu_solver import CuSOLVERMpLU
            from ._one_rank import OneRankLU, takes_one_rank

            if self._engine is not None:
                self._engine.free()
            self._engine = OneRankLU(self) if takes_one_rank(self) else CuSOLVERMpLU(self)
            self._planned = True
            return
        self._prefix = scalapack.PREFIX[self.dtype]
        if self._gathered is not None:
            self._gathered.free()
        self._gathered = gathered_solver(self, self._ctx.process_group, self.options.logger or logger)
        self._planned = True
        engine = (f"ScaLAPACK p{self._prefix}getrf/p{self._prefix}getrs" if self._gathered is None
                  else self._gathered.describe())
        (self.options.logger or logger).info("distributed LU solve n=%d, nrhs=%d (%s) planned: %s",
                                             self._a.global_shape[0], self._b.global_shape[1], self.dtype, engine)

    @requires("planned")
    def factorize(self) -> None:
        from ..._bindings import scalapack

        self._ctx.process_group.agree("DirectSolver.factorize")
        if self._engine is not None:
            self._factorized = False
            self._engine.factorize()
            self._factorized = True
            return
        if self._gathered is not None:
            self._factorized = False
            self._gathered.factorize(self._a.array)
            self._factorized = True
            return
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
        if self._engine is not None:
            x = self._engine.solve(self.options.transpose)
            return x.reshape(-1) if self._vector else x
        if self._gathered is not None:
            x = self._gathered.solve(self._b.array)
            return wrap_result(x.reshape(-1) if self._vector else x, self._b.package)
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
            if self._gpu:
                op.reset(x.reshape(-1, 1) if name == "b" and self._vector else x)
                if name == "a":
                    self._factorized = False
                continue
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
        if self._engine is not None:
            self._engine.free()
            self._engine = None
        if self._gathered is not None:
            self._gathered.free()
        self._a = self._b = self._lu = self._gathered = None


def direct_solver(a: AnyTensor, b: AnyTensor, /, *, distributions: Any,
                  options: DirectSolverOptions | Mapping[str, Any] | None = None,
                  stream: StreamLike = None) -> AnyTensor:
    """Solve ``A X = B`` for distributed A and B; returns this rank's block of X (distributed as B)."""
    with DirectSolver(a, b, distributions=distributions, options=options, stream=stream) as s:
        s.plan()
        s.factorize()
        return s.solve()
