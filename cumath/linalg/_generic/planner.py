"""The stateful generic matmul: construct -> plan -> execute (repeatedly, with reset_operands) -> free.

``Matmul`` is one problem on the operation skeleton (``_core/operation.py``): its operand set is a, b and c,
its plan an executor (``executors.py``) over an engine (``_backends``) compiling a layout (``traits.py``).
Sequences of operands make an explicit batch: ``Matmul(list_a, list_b)`` builds the subclass that declares
itself with ``explicit_batch=True`` (``batch.MatmulBatch``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

import numpy as np

from ..._core import cuda
from ..._core.executors import choose
from ..._core.layout import dense_strides
from ..._core.lifecycle import requires_alive
from ..._core.operand import Operand, check_same_place, immutable_hint, wrap_operand
from ..._core.operation import Operation
from ..._core.options import check_options
from ..._core.streams import stream_handle
from ...memory import default_allocator
from .._backends import create_engine
from .executors import FACTORIES, staging_perm
from .options import MatmulOptions
from .qualifiers import ABBREVIATIONS, check_qualifiers
from .traits import geometry, plan_layout

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["Matmul", "BETA_WITHOUT_C", "SEQUENCES", "is_sequence"]

logger = logging.getLogger("cumath.linalg")

BETA_WITHOUT_C = "beta must be given with c (the result is alpha * a @ b + beta * c)"


SEQUENCES = (list, tuple)  # what explicit batching takes for a, b and c


def is_sequence(x) -> bool:
    """Whether ``x`` is a sequence of operands (explicit batching)."""
    return isinstance(x, SEQUENCES)


def _wrap(x, name: str) -> Operand:
    return x if type(x) is Operand else wrap_operand(x, name)


def _scalar(value, default, dtype: str, name: str):
    """``value`` (or ``default`` for None) as a NumPy scalar of ``dtype``; ValueError when it does not fit."""
    v = default if value is None else value
    if np.ndim(v) != 0:
        raise ValueError(f"{name} must be a scalar (a Python number or a 0-d array), not an array of shape "
                         f"{np.shape(v)}")
    try:
        if not dtype.startswith("complex") and np.iscomplexobj(v):
            if complex(v).imag != 0:
                raise TypeError
            v = complex(v).real
        return np.dtype(dtype).type(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is not convertible to the operands' dtype {dtype}") from None


class Matmul(Operation):
    """A planned matrix product ``alpha * a @ b + beta * c`` over operands of fixed shapes, layouts, dtype,
    package and device, on the CPU (BLAS) or a GPU (cuBLAS).

    ``a`` and ``b`` follow ``numpy.matmul``: 1-D operands are promoted (and the unit axis dropped from the
    result), leading axes are batch axes that broadcast. ``c`` (optional, with ``beta``) broadcasts to the
    result; with ``options={'inplace': True}`` it must have the result's shape and receives the result.
    ``qualifiers`` (an array of ``matrix_qualifiers_dtype``) marks a or b as symmetric, Hermitian,
    triangular or diagonal (a diagonal operand is the vector of its diagonal), or conjugated.
    Sequences of operands (explicit batching) give a list of results, one per problem.

    Example (CPU, NumPy)::

        import numpy as np, cumath
        a, b = np.random.rand(1000, 64), np.random.rand(64, 32)
        with cumath.linalg.Matmul(a, b) as mm:
            mm.plan()
            d = mm.execute()                      # a @ b
            mm.reset_operands(a=np.random.rand(1000, 64))
            d2 = mm.execute()

    Example (GPU, CuPy)::

        import cupy as cp, cumath
        a, b, c = cp.random.rand(8, 256, 128), cp.random.rand(128, 64), cp.random.rand(8, 256, 64)
        with cumath.linalg.Matmul(a, b, c, alpha=2.0, beta=0.5, options={"inplace": True}) as mm:
            mm.plan()
            mm.execute()                          # c = 2 a @ b + 0.5 c, in place
    """

    _NAMES = ("a", "b", "c")
    _RESET_HINT = "reset_operands(a=..., b=...) with all of them"
    _handle = None  # a cuBLAS handle shared with the other problems of an explicit batch (None: the plan's own)
    _layout = None
    _explicit_batch = None  # the class built for sequences of operands

    def __init_subclass__(cls, explicit_batch: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        if explicit_batch:
            Matmul._explicit_batch = cls

    def __new__(cls, a=None, b=None, /, *args, **kwargs):
        if cls is Matmul and (is_sequence(a) or is_sequence(b)):
            cls = Matmul._explicit_batch
        return super().__new__(cls)

    def __init__(self, a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, alpha: complex | None = None,
                 beta: complex | None = None, qualifiers: Any = None,
                 options: MatmulOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
                 stream: StreamLike = None) -> None:
        opts = check_options(options, MatmulOptions, "matmul options")
        self._options = opts
        self._log = log = opts.logger or logger
        if c is None and opts.inplace:
            raise ValueError("options.inplace=True writes the result into c, but no c was given")
        if c is not None and beta is None:
            raise ValueError(BETA_WITHOUT_C)
        ops = {"a": _wrap(a, "a"), "b": _wrap(b, "b"), "c": None if c is None else _wrap(c, "c")}
        check_same_place(ops)
        quals = check_qualifiers(qualifiers, c is not None)
        A, C = ops["a"], ops["c"]
        self._geom = g = geometry(A.shape, ops["b"].shape, None if C is None else C.shape,
                                  tuple(None if o is None else o.dtype for o in ops.values()), quals, opts.inplace)
        if opts.inplace and C.readonly:
            raise ValueError("options.inplace=True needs a writeable c, but c is read-only" + immutable_hint(C))
        if beta is not None and C is None:
            log.warning("beta=%r is ignored: no c was given", beta)
        self._alpha = _scalar(alpha, 1, g.dtype, "alpha")
        self._beta = _scalar(beta if C is not None else None, 0, g.dtype, "beta")
        self._last_scalars = (alpha, beta)  # as given: a stateless call converts only when they change
        self._init_placement(A, execution, stream, opts.blocking)
        self._init_operands(ops)
        self._no_operands = dict.fromkeys(self._NAMES)
        if log.isEnabledFor(logging.INFO):
            q = ", ".join(f"{n}: {ABBREVIATIONS[qq[0]]}{' (conjugated)' if qq[1] else ''}" for n, qq in zip("ab", quals)
                          if qq[0] != "ge" or qq[1])
            where = "CPU" if not self._on_gpu else f"GPU {self._device}"
            log.info("matmul (%s) of %s %s: a %s @ b %s%s -> %s%s%s, on %s", g.kind, A.package, g.dtype,
                     list(A.shape), list(ops["b"].shape), "" if C is None else f" + c {list(C.shape)}",
                     list(g.result_shape), " in place" if opts.inplace else "", f"; {q}" if q else "", where)

    # ------------------------------------------------------------------------------------------ planning
    @requires_alive
    def plan(self, *, stream: StreamLike = None) -> None:
        """Choose the BLAS routines, transposes and copies for the operands' layouts (and create the
        library handle and the staging buffers). Planning twice does nothing."""
        if not self._planned:
            self._plan(stream)

    def _plan_sharing(self, handle, stream) -> None:
        """Plan with ``handle``, a cuBLAS handle of an explicit batch (the plan does not own it)."""
        self._handle = handle
        self.plan(stream=stream)

    def _make_executor(self):
        """The engine of the execution space, the layout for the strides the engine reads (the operands' own,
        or their staging mirrors' when they cross the bus), and the executor of that crossing."""
        g, ops, opts, p = self._geom, self._ops, self._options, self._place
        engine = create_engine(p.execution.name, g.dtype, p, opts, self._log, self._handle)
        try:
            operands_on_gpu = ops["a"].device_id is not None
            strides = {k: (None if o is None else o.strides) for k, o in ops.items()}
            staged = {}
            if operands_on_gpu != p.on_gpu:  # staged across the bus, dense in the order they cross in
                for k, o in ops.items():
                    if o is not None:
                        staged[k] = staging_perm(o.shape, o.strides)
                        strides[k] = dense_strides(o.shape, staged[k])
            layout = plan_layout(g, strides["a"], strides["b"], strides["c"], opts.inplace, engine.caps)
            allocator = None
            if p.on_gpu:
                allocator = opts.allocator or default_allocator(ops["a"].package, self._device)
            return choose(FACTORIES, operands_on_gpu, p.on_gpu, g, layout, ops, engine, self._log, allocator,
                          self._stream, staged)
        except BaseException:
            engine.free()
            raise

    def _planned_with(self, executor) -> None:
        layout = self._layout = executor.layout
        engine = executor.engine
        engine.scalars.set(self._alpha, self._beta)
        if self._log.isEnabledFor(logging.INFO):
            routines = sorted({s.routine for s in layout.steps})
            self._log.info("matmul planned on %s: %s (%d call%s per execution)", engine.description,
                           ", ".join(routines) or "nothing to compute",
                           sum(len(s.offsets) for s in layout.steps), "" if len(layout.steps) == 1 else "s")

    # ----------------------------------------------------------------------------------------- execution
    def execute(self, *, stream: StreamLike = None) -> AnyTensor:
        """Compute the product with the current operands and return the result (an array of the operands'
        package on their device; c itself in place; a list of results for explicit batching)."""
        ex = self._executor
        if self._host_only and stream is None and ex is not None and not self._released:  # the CPU hot path
            return ex.execute(self._ops)
        if ex is None or self._released:
            self._not_ready("execute")
        if stream is None:
            stream, explicit = self._stream, self._explicit_stream
        else:
            stream, explicit = stream_handle(stream), True
        if explicit:  # inside the package's stream context when the stream is not its current one
            return self._ordered(stream, True, ex.execute, self._ops, stream)
        result = ex.execute(self._ops, stream)  # (the non-explicit case of _ordered, one frame less)
        if self._blocking and self._place.operand_device is not None:
            cuda.synchronize(stream)
        return result

    # ------------------------------------------------------------------------------------------ operands
    @requires_alive
    def reset_operands(self, *, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None,
                       alpha: complex | None = None, beta: complex | None = None, stream: StreamLike = None) -> None:
        """Point the plan at new operands (and/or new alpha, beta) of the same package, device, shapes,
        strides and dtype. Operands not given keep their current values (after release_operands(), all
        of them must be given). Explicit batches take sequences."""
        self._reset({"a": a, "b": b, "c": c}, checked=True)
        self._set_scalars(alpha, beta)
        if stream is not None:
            self._use_stream(stream)

    @requires_alive
    def reset_operands_unchecked(self, *, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None,
                                 alpha: complex | None = None, beta: complex | None = None,
                                 stream: StreamLike = None) -> None:
        """Like reset_operands() for hot loops: only the shape, strides and dtype are compared (a layout change
        would make the plan read the wrong memory, so it is still refused)."""
        self._reset({"a": a, "b": b, "c": c}, checked=False)
        if alpha is not None or beta is not None:
            self._set_scalars(alpha, beta)
        if stream is not None:
            self._use_stream(stream)

    def _reset(self, given: dict, checked: bool) -> None:
        """Replace the operands given through the operand set (checked: the whole signature, and c writeable
        in place; unchecked: shape, strides and dtype); nothing changes when one of them is refused."""
        if self._released:
            missing = [k for k in self._NAMES if self._signatures[k] is not None and given[k] is None]
            if missing:
                raise ValueError(f"after release_operands(), reset_operands() needs all operands; missing "
                                 f"{', '.join(missing)}")
        if checked and given["c"] is not None and self._options.inplace:
            c = self._checked("c", given["c"])
            if c.readonly:
                raise ValueError("options.inplace=True needs a writeable c, but the new c is read-only")
            given = {**given, "c": c}
        self._reset_operands(given, checked=checked)

    def _set_scalars(self, alpha, beta) -> None:
        dtype = self._geom.dtype
        if alpha is not None:
            self._alpha = _scalar(alpha, 1, dtype, "alpha")
        if beta is not None:
            if self._signatures["c"] is None:
                self._log.warning("beta=%r is ignored: this Matmul has no c", beta)
            else:
                self._beta = _scalar(beta, 0, dtype, "beta")
        if self._executor is not None:
            self._executor.engine.scalars.set(self._alpha, self._beta)

    def _bind(self, ops: dict, alpha=None, beta=None) -> None:
        """A stateless call's operands and scalars (converted only when they differ from the last call's)."""
        try:
            changed = (alpha, beta) != self._last_scalars
        except (TypeError, ValueError):  # an array compared element-wise: converted (and refused) below
            changed = True
        if changed:
            dtype = self._geom.dtype
            new_alpha = _scalar(alpha, 1, dtype, "alpha")
            new_beta = _scalar(beta if self._signatures["c"] is not None else None, 0, dtype, "beta")
            self._alpha, self._beta = new_alpha, new_beta
            self._executor.engine.scalars.set(new_alpha, new_beta)
            self._last_scalars = (alpha, beta)
        Operation._bind(self, ops)  # (the base class named: a super() lookup costs more than the rest)

    def _unbind(self) -> None:
        self._ops = self._no_operands  # (never changed in place; cheaper than a new dict per call)
        self._released = True

    @property
    def layout(self) -> Any:
        """The plan's layout decisions (copies, result layout, BLAS steps); None before plan()."""
        return self._layout
