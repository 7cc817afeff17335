"""The stateful dense direct solver: construct -> plan -> factorize -> solve (repeatedly, with reset_operands)
-> free.

``DirectSolver`` is one problem set on the operation skeleton (``_core/operation.py``): its operands are a and
b, its plan an executor (``_executors.py``) over an engine (``_backends``) for the layouts of ``_traits``, its
domain state "factorized". Sequences of operands make an explicit batch: ``DirectSolver(list_a, list_b)``
builds the subclass that declares itself with ``explicit_batch=True`` (``_batch.DirectSolverBatch``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

from ..._core import cuda
from ..._core.executors import choose
from ..._core.lifecycle import requires, requires_alive
from ..._core.operand import Operand, check_same_place, immutable_hint, wrap_operand
from ..._core.operation import Operation
from ..._core.options import check_options
from ...memory import default_allocator
from ._executors import FACTORIES
from ._options import DirectSolverOptions
from ._traits import geometry, overlapping

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["DirectSolver", "is_sequence", "wrap"]

logger = logging.getLogger("cumath.linalg")


def is_sequence(x) -> bool:
    """Whether ``x`` is a sequence of operands (explicit batching)."""
    return isinstance(x, (list, tuple))


def wrap(x, name: str) -> Operand:
    """``x`` as an Operand (wrapped once: an Operand is passed through)."""
    return x if type(x) is Operand else wrap_operand(x, name)


class DirectSolver(Operation):
    """A planned dense direct solver of ``a @ x = b`` for operands of fixed shapes, layouts, dtype, package and
    device, on the CPU (LAPACK) or a GPU (cumath's own kernels for systems of order up to 32, one warp each;
    cuSOLVER, or cuBLAS's batched LU for batches of larger small systems: ``DirectSolverOptions.batch_method``).

    ``a``: a square matrix ``(n, n)`` or a batch of them ``(*batch, n, n)``; ``b``: ``(*batch, n)`` (one vector
    per system) or ``(*batch, n, k)`` (k right-hand sides per system), with a's batch shape. Any strides; float32,
    float64, complex64, complex128; NumPy, CuPy or PyTorch (CPU or CUDA) arrays. Lists of matrices and of
    right-hand sides (sizes may differ) make an explicit batch, and give lists of solutions.
    ``options``: :class:`DirectSolverOptions` or a dict (``matrix_type='spd'`` or ``'hpd'``: Cholesky;
    ``inplace_a`` / ``inplace_b``: write the factors into a / the solution into b). ``execution``: 'cpu', 'cuda',
    ExecutionCPU(...), ExecutionCUDA(...); by default where the operands are.

    The solution x has b's shape and package, on b's device, each matrix column-major (as LAPACK and cuSOLVER
    write it), batch axes outermost. A singular matrix (a zero pivot; for Cholesky, a matrix that is not
    positive definite) raises :class:`SingularMatrixError` (also a ``numpy.linalg.LinAlgError``) from
    factorize(), naming the system and the pivot; one whose pivots are uneven beyond the dtype's precision
    gives an :class:`IllConditionedWarning`, and so does one with a NaN or inf anywhere in ``a`` or in the part
    of its factor the factorization wrote (on the CPU and every GPU engine alike; nvmath-python does not check;
    such a system warns rather than raising even where LAPACK's potrf stopped at the NaN).

    Example (CPU, NumPy)::

        import numpy as np, cumath
        a, b = np.random.rand(500, 500) + 500 * np.eye(500), np.random.rand(500, 2)
        with cumath.linalg.DirectSolver(a, b) as solver:
            solver.plan()
            solver.factorize()
            x = solver.solve()                        # a @ x == b
            solver.reset_operands(b=np.random.rand(500, 2))
            x2 = solver.solve()                       # the same factorization, a new right-hand side

    Example (GPU, CuPy, a batch of systems)::

        import cupy as cp, cumath
        a = cp.random.rand(1000, 32, 32) + 32 * cp.eye(32)
        b = cp.random.rand(1000, 32)
        with cumath.linalg.DirectSolver(a, b) as solver:
            solver.plan()
            solver.factorize()
            x = solver.solve()                        # (1000, 32), on the GPU
    """

    _NAMES = ("a", "b")
    _RESET_HINT = "reset_operands(a=..., b=...)"
    _MISMATCH_WHAT = "DirectSolver"
    _STATES = {
        **Operation._STATES,
        "factorized": ("_factorized", "needs a factorization: call factorize() first"),
    }
    _factorized = False
    _problem = None  # the index an explicit batch gives this solver (for the messages)
    _explicit_batch = None  # the class built for sequences of operands

    def __init_subclass__(cls, explicit_batch: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        if explicit_batch:
            DirectSolver._explicit_batch = cls

    def __new__(cls, a=None, b=None, *args, **kwargs):
        if cls is DirectSolver and (is_sequence(a) or is_sequence(b)):
            cls = DirectSolver._explicit_batch
        return super().__new__(cls)

    def __init__(self, a: AnyTensor, b: AnyTensor, options: DirectSolverOptions | Mapping[str, Any] | None = None,
                 execution: ExecutionLike | None = None, stream: StreamLike = None) -> None:
        opts = check_options(options, DirectSolverOptions, "direct solver options")
        self._options = opts
        self._log = log = opts.logger or logger
        ops = {"a": wrap(a, "a"), "b": wrap(b, "b")}
        check_same_place(ops)
        A, B = ops["a"], ops["b"]
        self._geom = g = geometry(A.shape, A.dtype, B.shape, B.dtype, opts.matrix_type)
        for name, op, asked in (("a", A, opts.inplace_a), ("b", B, opts.inplace_b)):
            if asked:
                _check_writable(name, op)
        self._init_placement(A, execution, stream, opts.blocking)
        self._init_operands(ops)
        if log.isEnabledFor(logging.INFO):
            where = "CPU" if not self._on_gpu else f"GPU {self._device}"
            rhs = "one vector" if g.vector else f"{g.nrhs} right-hand sides"
            batch = f"{g.count} systems {list(g.batch_shape)}" if g.batch_shape else "one system"
            log.info("direct solver (%s) of %s %s: %s of order %d, %s each, on %s%s", g.kind, A.package, g.dtype,
                     batch, g.n, rhs, where,
                     "".join(f", {w} in place" for w, on in (("a", opts.inplace_a), ("b", opts.inplace_b)) if on))

    # ------------------------------------------------------------------------------------------ planning
    @requires_alive
    def plan(self, *, stream: StreamLike = None) -> None:
        """Choose the engine, the layouts and the copies for the operands, and create the library handle,
        workspaces and buffers. Planning twice does nothing."""
        if not self._planned:
            self._plan(stream)

    def _make_executor(self):
        ops, opts, p = self._ops, self._options, self._place
        allocator = None
        if p.on_gpu:
            allocator = opts.allocator or default_allocator(ops["a"].package, self._device)
        operands_on_gpu = ops["a"].device_id is not None
        return choose(FACTORIES, operands_on_gpu, p.on_gpu, self._geom, ops, opts, p, self._log, allocator,
                      self._stream, problem=self._problem)

    def _planned_with(self, executor) -> None:
        engine = executor.engine
        if engine is not None and self._log.isEnabledFor(logging.INFO):
            self._log.info("direct solver planned on %s: %s; %s held", engine.description, ", ".join(engine.routines),
                           f"{executor.nbytes} bytes")

    # ----------------------------------------------------------------------------------------- execution
    def _run(self, what: str, stream):
        ex = self._executor
        fn = getattr(ex, what)
        if self._host_only and stream is None:
            return fn(self._ops)
        stream, explicit = self._stream_arg(stream)
        if explicit:
            return self._ordered(stream, True, fn, self._ops, stream)
        result = fn(self._ops, stream)
        if self._blocking and self._place.operand_device is not None:
            cuda.synchronize(stream)
        return result

    @requires("planned", "operands")
    def factorize(self, *, stream: StreamLike = None) -> None:
        """Factorize a (LU with partial pivoting, or Cholesky): the factors are kept by the plan (or written into
        a with inplace_a). Reads the factorization's status back once (on the GPU, a wait for the stream):
        raises SingularMatrixError naming the first system that failed; warns (IllConditionedWarning) for
        systems singular to working precision."""
        self._factorized = False
        self._run("factorize", stream)
        self._factorized = True

    @requires("planned", "operands", "factorized")
    def solve(self, *, stream: StreamLike = None) -> AnyTensor:
        """Solve ``a @ x = b`` with the factorization of the last factorize() for the current b; returns x (a new
        array of b's package on its device; b itself with inplace_b; a list for explicit batches)."""
        return self._run("solve", stream)

    def execute(self, *, stream: StreamLike = None) -> AnyTensor:
        """factorize() and solve() in one call (one LAPACK call per system where LAPACK has one, one read-back of
        the status on the GPU): what :func:`direct_solver` runs. Returns x."""
        ex = self._executor
        self._factorized = False
        if self._host_only and stream is None and ex is not None and not self._released:  # the CPU hot path
            result = ex.execute(self._ops)
            self._factorized = True
            return result
        if ex is None or self._released:
            self._not_ready("execute")
        stream, explicit = self._stream_arg(stream)
        if explicit:  # inside the package's stream context when the stream is not its current one
            result = self._ordered(stream, True, ex.execute, self._ops, stream)
        else:  # (the non-explicit case of _ordered, one frame less)
            result = ex.execute(self._ops, stream)
            if self._blocking and self._place.operand_device is not None:
                cuda.synchronize(stream)
        self._factorized = True
        return result

    # ------------------------------------------------------------------------------------------ operands
    @requires_alive
    def reset_operands(self, a: AnyTensor = None, b: AnyTensor = None, *, stream: StreamLike = None) -> None:
        """Point the plan at new operands of the same package, device, shapes, strides and dtype. A new a
        must be factorized again (factorize()); a new b alone is solved with the kept factorization. After
        release_operands() both must be given."""
        self._reset({"a": a, "b": b}, True)
        if stream is not None:
            self._use_stream(stream)

    @requires_alive
    def reset_operands_unchecked(self, a: AnyTensor = None, b: AnyTensor = None, *, stream: StreamLike = None) -> None:
        """Like reset_operands() for hot loops: only the shape, strides and dtype are compared (a layout change
        would make the plan read the wrong memory, so it is still refused)."""
        self._reset({"a": a, "b": b}, False)
        if stream is not None:
            self._use_stream(stream)

    def _reset(self, given: dict, checked: bool) -> None:
        writes = tuple(n for n, on in (("a", self._options.inplace_a), ("b", self._options.inplace_b)) if on)
        self._reset_operands(given, checked=checked, writes=writes)
        if given.get("a") is not None:
            self._factorized = False

    def release_operands(self) -> None:
        """Drop the references to a and b (so their memory can be freed); give both again (reset_operands)
        before the next factorize() or solve()."""
        super().release_operands()
        self._factorized = False

    def _bind(self, ops: dict, *params) -> None:
        super()._bind(ops)
        self._factorized = False

    def _unbind(self) -> None:
        super()._unbind()
        self._factorized = False

    def _drop_plan(self) -> None:
        self._factorized = False
        super()._drop_plan()

    @property
    def geometry(self) -> Any:
        """The problem set (order n, right-hand sides, batch shape, dtype, 'lu' or 'cholesky')."""
        return self._geom


def _check_writable(name: str, op: Operand) -> None:
    """An operand written in place must be writeable and free of overlapping (broadcast) elements."""
    if op.readonly:
        raise ValueError(f"options.inplace_{name}=True writes into {name}, but {name} is read-only"
                         + immutable_hint(op))
    if overlapping(op.shape, op.strides):
        raise ValueError(f"options.inplace_{name}=True writes into {name}, but elements of {name} share memory "
                         f"(a broadcast or overlapping view, strides {tuple(op.strides)}); pass a copy")
