"""The stateful sparse direct solver: construct -> plan() -> factorize() -> solve() (repeatedly, with
reset_operands) -> free()."""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

from ..._core.lifecycle import requires
from ..._core.operand import Operand, wrap_operand
from ..._core.operation import Operation
from ..._core.options import check_options
from .._common import check_given_after_release
from .._operand import pattern_fingerprint, wrap_sparse_operands
from ._config import (ALL_FIELDS, DirectSolverFactorizationConfig, DirectSolverFactorizationInfo,
                      DirectSolverPlanConfig, DirectSolverPlanInfo, DirectSolverSolutionConfig)
from ._execution import SparseExecution, resolve_execution
from ._executors import Setup, make_executor
from ._options import DirectSolverOptions
from ._traits import problem

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["DirectSolver", "wrap_rhs", "wrap_lhs", "fingerprint", "OperandTuple"]

logger = logging.getLogger(__name__)


class OperandTuple(tuple):
    """An explicit batch of operands (CSR matrices or dense Operands) with the attributes a plan compares."""

    @property
    def signature(self) -> tuple:
        return tuple(o.signature for o in self)

    @property
    def shape(self) -> tuple:
        return tuple(o.shape for o in self)

    @property
    def strides(self) -> tuple:
        return tuple(o.strides for o in self)

    @property
    def dtype(self) -> str:
        return self[0].dtype

    @property
    def readonly(self) -> bool:
        return False


def wrap_rhs(b, name: str = "b"):
    """``b`` as an Operand, or an OperandTuple of them for a list or tuple (an explicit batch)."""
    if isinstance(b, (list, tuple)):
        if not b:
            raise ValueError(f"{name} is an empty sequence; pass at least one right-hand side")
        return OperandTuple(x if type(x) is Operand else wrap_operand(x, f"{name}[{i}]") for i, x in enumerate(b))
    return b if type(b) is Operand else wrap_operand(b, name)


def wrap_lhs(a, name: str = "a"):
    a = wrap_sparse_operands(a, name)
    return OperandTuple(a) if isinstance(a, tuple) else a


def fingerprint(a, stream=None, hosts: list | None = None) -> tuple:
    """The sparsity pattern's fingerprint (per matrix of an explicit batch); ``hosts`` receives the host copies
    of the index arrays that were read, per matrix."""
    if isinstance(a, tuple):
        return tuple(pattern_fingerprint(x, stream, hosts) for x in a)
    return pattern_fingerprint(a, stream, hosts)


def _addresses(a) -> tuple:
    items = a if isinstance(a, tuple) else (a,)
    return tuple((x.indptr.ptr, x.indices.ptr) for x in items)


class DirectSolver(Operation):
    """Solve ``a @ x = b`` for a sparse ``a``: plan (reorder, analyse) once, factorize, solve, and again with new
    values of the same sparsity pattern without planning anew.

    ``a``: a CSR matrix (``scipy.sparse.csr_matrix``/``csr_array``, ``cupyx.scipy.sparse.csr_matrix``,
    ``torch.sparse_csr_tensor``, batched ``(..., n, n)`` for PyTorch), int32 or int64 indices, or a list of them
    (an explicit batch). ``b``: the right-hand side(s), a vector ``(n,)``, a matrix ``(n, k)`` (column-major, e.g.
    ``(k, n).T``, is read in place; others are copied, logged), a batch ``(..., n, k)``, or a list. The solution
    has ``b``'s shape, package and device (each matrix column-major); a list for a list.

    Where it runs: CPU operands on the CPU (MKL PARDISO, else SciPy's SuperLU: ``options.cpu_engine``), GPU
    operands on the GPU with cuDSS; ``execution`` ('cpu', 'cuda', 'hybrid', ExecutionCPU, ExecutionCUDA,
    ExecutionHybrid) overrides it.

    Example (CPU, SciPy)::

        import numpy as np, scipy.sparse as sp, cumath
        a = sp.random_array((1000, 1000), density=0.01, format="csr") + sp.eye_array(1000, format="csr")
        b = np.random.rand(1000)
        with cumath.sparse.advanced.DirectSolver(a, b) as solver:
            solver.plan()
            solver.factorize()
            x = solver.solve()
            a.data *= 2                          # new values, same pattern
            solver.factorize()                   # no new plan
            x2 = solver.solve()

    Example (GPU, CuPy)::

        import cupy as cp, cupyx.scipy.sparse as csp, cumath
        a = csp.random(1000, 1000, density=0.01, format="csr") + csp.eye(1000, format="csr")
        b = cp.random.rand(1000, 3, order="F")
        with cumath.sparse.advanced.DirectSolver(a, b) as solver:
            solver.plan_config.reordering_algorithm = "amd"
            solver.plan()
            solver.factorize()
            x = solver.solve()

    A solution computed from a factorization that perturbed pivots (or, on cuDSS, left a NaN or inf pivot) is
    checked; a (numerically) singular ``a`` raises ``cumath.errors.SingularMatrixError`` rather than returning
    garbage. (cumath) A structurally singular ``a`` (a row or column with no stored entry) raises it from
    ``plan()`` already on cuDSS (and, for general matrices, on PARDISO): no values can make it solvable.
    """

    _NAMES = ("a", "b")
    _RESET_HINT = "reset_operands(a=..., b=...)"
    _STATES = {
        **Operation._STATES,
        "analysed": ("_analysed", "needs a plan of the current sparsity pattern: a was reset with another "
                                  "pattern; call plan() first"),
        "factorized": ("_factorized", "needs a factorization of the current a: call factorize() first"),
    }

    _factorized = False
    _analysed = False
    _executor = None

    def __init__(self, a: AnyTensor, b: AnyTensor, *, options: DirectSolverOptions | Mapping[str, Any] | None = None,
                 execution: ExecutionLike | None = None, stream: StreamLike = None) -> None:
        opts = options if type(options) is DirectSolverOptions else check_options(
            options, DirectSolverOptions, "sparse direct solver options")
        self._options = opts
        self._log = opts.logger or logger
        A, B = wrap_lhs(a), wrap_rhs(b)
        self._problem = problem(A, B)
        core_exec, spexec = resolve_execution(execution)
        p = self._init_placement(B[0] if isinstance(B, tuple) else B, core_exec, stream, opts.blocking)
        self._sparse_execution = spexec or SparseExecution("cuda" if p.on_gpu else "cpu")
        self._init_operands({"a": A, "b": B})
        self._settings = dict.fromkeys(ALL_FIELDS)
        self._pattern = None  # (addresses, fingerprint) of the planned sparsity pattern
        self._plan_config = DirectSolverPlanConfig(self)
        self._factorization_config = DirectSolverFactorizationConfig(self)
        self._solution_config = DirectSolverSolutionConfig(self)
        self._plan_info = DirectSolverPlanInfo(self)
        self._factorization_info = DirectSolverFactorizationInfo(self)
        if self._log.isEnabledFor(logging.INFO):
            pr = self._problem
            where = "CPU" if not p.on_gpu else f"GPU {p.device}"
            self._log.info("sparse direct solver: %d system(s) of order %s, %s, %s, %s view, %d right-hand side(s); "
                           "%s operands, executing on %s (%s)", pr.count, pr.sizes[0] if pr.count == 1 else
                           list(pr.sizes), pr.dtype, opts.sparse_system_type.name, opts.sparse_system_view.name,
                           pr.nrhs, p.package, where, self._sparse_execution.kind)

    # ---------------------------------------------------------------------------------------- configs
    @property
    def plan_config(self) -> DirectSolverPlanConfig:
        """The planning settings, a :class:`DirectSolverPlanConfig` (set them before plan())."""
        return self._plan_config

    @property
    def factorization_config(self) -> DirectSolverFactorizationConfig:
        """The factorization settings, a :class:`DirectSolverFactorizationConfig`."""
        return self._factorization_config

    @property
    def solution_config(self) -> DirectSolverSolutionConfig:
        """The solution settings, a :class:`DirectSolverSolutionConfig`."""
        return self._solution_config

    @property
    def plan_info(self) -> DirectSolverPlanInfo:
        """What plan() found, a :class:`DirectSolverPlanInfo`."""
        return self._plan_info

    @property
    def factorization_info(self) -> DirectSolverFactorizationInfo:
        """What factorize() found, a :class:`DirectSolverFactorizationInfo`."""
        return self._factorization_info

    @property
    def options(self) -> DirectSolverOptions:
        """The :class:`DirectSolverOptions` of this solver."""
        return self._options

    @property
    def timings(self) -> dict[str, dict[str, float]]:
        """(cumath) Where the host time of the last plan(), factorize() and solve() went, as
        ``{phase: {step: milliseconds, ..., 'total': ms}}`` (``time.perf_counter``), e.g. for cuDSS the handle, the
        config and data objects, the threading layer and settings, the matrix objects and each ``cudssExecute``.
        With the solver's logger at DEBUG each step is also logged, after a wait for the stream, so that GPU work
        is charged to the step that queued it. Empty before plan()."""
        ex = self._executor
        return {k: dict(v) for k, v in getattr(ex, "timings", {}).items()}

    @property
    def engine(self) -> str | None:
        """(cumath) The engine of the plan, 'cudss', 'pardiso' or 'superlu' (None before plan())."""
        ex = self._executor
        if ex is None:
            return None
        return getattr(getattr(ex, "engine", None), "name", None) or "cudss"

    def _get_setting(self, name: str):
        if self._freed:
            self._not_ready(f"{name} of a config", ())
        value = self._settings[name]
        if value is None and self._executor is not None:
            return self._executor.setting(name)
        return value

    def _set_setting(self, name: str, value) -> None:
        if self._freed:
            self._not_ready(f"{name} of a config", ())
        self._settings[name] = value
        if self._executor is not None:
            self._executor.apply_setting(name, value)

    def _info(self, name: str, state: str):
        states = ("planned", "factorized") if state == "factorized" else ("planned",)
        if self._freed or not all(getattr(self, self._STATES[s][0]) for s in states):
            self._not_ready(name, states)
        if self._released and name == "diag":
            self._not_ready(name, ("operands",))
        try:
            return self._executor.info(name, self._ops)
        except KeyError:
            return None  # the engine does not report it

    # ---------------------------------------------------------------------------------------- lifecycle
    @requires("operands")
    def plan(self, *, stream: StreamLike = None) -> DirectSolverPlanInfo:
        """Reorder ``a`` to reduce fill-in and analyse its factors (cuDSS's analysis phase, PARDISO's phase 11).
        Planning again re-analyses (taking new plan_config settings). Returns :attr:`plan_info`. (cumath) On cuDSS
        it raises SingularMatrixError for a structurally singular ``a`` (an empty row or column), where
        nvmath-python plans it and leaves the failure to the factorization or a garbage solution."""
        if not self._planned:
            self._plan(stream)
        else:
            s, explicit = self._stream_arg(stream)
            if stream is not None:
                self._use_stream(stream)
            self._ordered(s, explicit, self._executor.analyse, self._ops, s)
        self._analysed = True
        self._factorized = False
        self._pattern = (_addresses(self._ops["a"]), None)
        return self._plan_info

    def _make_executor(self):
        setup = Setup(self._problem, self._options, self._settings, self._place, self._sparse_execution, self._log)
        return make_executor(setup, self._ops)

    def _planned_with(self, executor) -> None:
        executor.known_patterns = self.__dict__.pop("_host_patterns", None)  # (the stateless call's host copies)
        self._ordered(self._stream, self._explicit_stream, executor.analyse, self._ops, self._stream)
        if self._log.isEnabledFor(logging.INFO):
            self._log.info("planned on the %s engine", getattr(getattr(executor, "engine", None), "name", "cudss"))

    @requires("planned", "operands", "analysed")
    def factorize(self, *, stream: StreamLike = None) -> DirectSolverFactorizationInfo:
        """Factorize the current values of ``a`` (a refactorization of the planned analysis after new values).
        Returns :attr:`factorization_info`."""
        s, explicit = self._stream_arg(stream)
        self._factorized = False
        self._ordered(s, explicit, self._executor.factorize, self._ops, s)
        self._factorized = True
        return self._factorization_info

    @requires("planned", "operands", "factorized")
    def solve(self, *, stream: StreamLike = None) -> AnyTensor:
        """Solve with the current factorization for the current ``b``; returns ``x`` (``b``'s shape, package and
        device; each matrix column-major). With GPU operands and ``blocking='auto'`` it returns once the work is
        queued on the stream."""
        s, explicit = self._stream_arg(stream)
        return self._ordered(s, explicit, self._executor.solve, self._ops, s)

    def execute(self, *, stream: StreamLike = None) -> AnyTensor:
        """(cumath) factorize() and solve() in one call: the stateless function's body, also a shortcut."""
        ex = self._executor
        if ex is None or self._released or not self._analysed:  # the state check inline (the hot path)
            self._not_ready("execute", ("planned", "operands", "analysed"))
        s, explicit = self._stream_arg(stream)
        self._factorized = False
        self._ordered(s, explicit, ex.factorize, self._ops, s)
        self._factorized = True
        return self._ordered(s, explicit, ex.solve, self._ops, s)

    # ---------------------------------------------------------------------------------------- operands
    def _bind(self, ops: dict, *params) -> None:
        super()._bind(ops)
        self._factorized = False

    def reset_operands(self, a: AnyTensor = None, b: AnyTensor = None, *, stream: StreamLike = None) -> None:
        """New operands of the same kind: ``a`` of the same package, device, shape, dtypes and number of stored
        entries (new values need factorize() again; another sparsity pattern needs plan() again), ``b`` of the
        same package, device, shape, strides and dtype. Passing neither releases the operands
        (release_operands())."""
        if self._freed:
            self._not_ready("reset_operands", ())
        if a is None and b is None:
            self.release_operands()
            return
        self._reset(a, b, stream, checked=True)

    def reset_operands_unchecked(self, a: AnyTensor = None, b: AnyTensor = None, *, stream: StreamLike = None) -> None:
        """Like reset_operands, comparing only shapes, strides and dtypes, and trusting ``a`` to have the planned
        sparsity pattern (cheaper; the caller guarantees it)."""
        if self._freed:
            self._not_ready("reset_operands_unchecked", ())
        self._reset(a, b, stream, checked=False)

    def _reset(self, a, b, stream, checked: bool) -> None:
        given = {"a": None if a is None else wrap_lhs(a), "b": None if b is None else wrap_rhs(b)}
        check_given_after_release(self._released, given, self._NAMES)
        for name, op in given.items():
            if op is None:
                continue
            planned = self._signatures[name]
            now = op.signature if checked else (op.shape, op.strides, op.dtype)
            if now != (planned if checked else self._quick[name]):
                raise ValueError(self._mismatch(name, op))
        if checked and given["a"] is not None and self._analysed:
            self._check_pattern(given["a"])
        self._ops = {**self._ops, **{k: v for k, v in given.items() if v is not None}}
        self._released = False
        if given["a"] is not None:
            self._factorized = False
        if stream is not None:
            self._use_stream(stream)

    def _mismatch(self, name: str, op) -> str:
        old = self._ops_shape(name)
        return (f"the new {name} does not match the planned one (package, device, shape, strides, dtypes and number "
                f"of stored entries must be the same): got {op!r}, planned {old}; create a new DirectSolver for it")

    def _ops_shape(self, name: str) -> str:
        sig = self._signatures[name]
        return repr(sig)

    def _check_pattern(self, a) -> None:
        """A new ``a`` whose index arrays are not the planned ones: compare its pattern with the planned one (a new
        pattern needs plan() again)."""
        addresses, fp = self._pattern
        if _addresses(a) == addresses:
            return
        if fp is None:
            old = self._ops["a"]
            if old is None:  # released: nothing to compare with, so the caller must plan again
                self._analysed = False
                return
            fp = fingerprint(old, self._stream)
            self._pattern = (addresses, fp)
        if fingerprint(a, self._stream) != fp:
            self._log.info("the new a has another sparsity pattern: plan() must run again")
            self._analysed = False

    def release_operands(self) -> None:
        if self._freed:
            self._not_ready("release_operands", ())
        if self._pattern is not None and self._pattern[1] is None and self._ops.get("a") is not None:
            self._pattern = (self._pattern[0], fingerprint(self._ops["a"], self._stream))
        super().release_operands()

    def _release(self) -> None:
        super()._release()
        self._factorized = self._analysed = False

