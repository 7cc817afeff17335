"""The stateful generic matmul: construct -> plan -> execute (repeatedly, with reset_operands) -> free."""

from __future__ import annotations

import logging

import numpy as np

from ..._core.execution import check_execution, names_threads
from ..._core.layout import dense_strides
from ..._core.lifecycle import Stateful, requires_alive
from ..._core.operand import Operand, adapter, check_same_place, wrap_operand
from ..._core.options import check_options
from ..._core.streams import default_stream, run_ordered, stream_handle
from ...errors import InvalidStateError
from ...memory import default_allocator
from .executors import _host_array, make_executor, staging_perm
from .options import MatmulOptions
from .qualifiers import ABBREVIATIONS, check_qualifiers
from .traits import geometry, plan_layout

__all__ = ["Matmul"]

logger = logging.getLogger("cumath.linalg")

_NAMES = ("a", "b", "c")


def _is_sequence(x) -> bool:
    return isinstance(x, (list, tuple))


def _wrap(x, name: str) -> Operand:
    return x if type(x) is Operand else wrap_operand(x, name)


def _scalar(value, default, dtype: str, name: str):
    """``value`` (or ``default`` for None) as a NumPy scalar of ``dtype``; ValueError when it does not fit."""
    v = default if value is None else value
    try:
        if not dtype.startswith("complex") and np.iscomplexobj(v):
            if complex(v).imag != 0:
                raise TypeError
            v = complex(v).real
        return np.dtype(dtype).type(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is not convertible to the operands' dtype {dtype}") from None


class Matmul(Stateful):
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

    def __init__(self, a, b, /, c=None, *, alpha=None, beta=None, qualifiers=None, options=None, execution=None,
                 stream=None):
        opts = check_options(options, MatmulOptions, "matmul options")
        self._options = opts
        self._log = opts.logger or logger
        self._children = None
        self._executor = None
        self._released = False
        self._handle = None  # explicit batches on the GPU: the cuBLAS handle all problems share
        self._batch = None  # ... and their BatchExecutor
        if _is_sequence(a) or _is_sequence(b):
            self._init_explicit(a, b, c, alpha, beta, qualifiers, opts, execution, stream)
            return
        if c is None and opts.inplace:
            raise ValueError("options.inplace=True writes the result into c, but no c was given")
        if c is not None and beta is None:
            raise ValueError("beta must be given with c (the result is alpha * a @ b + beta * c)")
        ops = {"a": _wrap(a, "a"), "b": _wrap(b, "b"), "c": None if c is None else _wrap(c, "c")}
        check_same_place(ops)
        quals = check_qualifiers(qualifiers, c is not None)
        C = ops["c"]
        self._geom = g = geometry(ops["a"].shape, ops["b"].shape, None if C is None else C.shape,
                                  tuple(None if o is None else o.dtype for o in ops.values()), quals, opts.inplace)
        if opts.inplace and C.readonly:
            raise ValueError("options.inplace=True needs a writeable c, but c is read-only")
        if beta is not None and C is None:
            self._log.warning("beta=%r is ignored: no c was given", beta)
        self._alpha = _scalar(alpha, 1, g.dtype, "alpha")
        self._beta = _scalar(beta if C is not None else None, 0, g.dtype, "beta")
        first = ops["a"]
        self._execution = check_execution(execution, first.device_id)
        self._user_threads = names_threads(execution)
        self._on_gpu = self._execution.name == "cuda"
        if self._on_gpu:
            from ..._core.cuda import require_device

            require_device(self._execution.device_id)
        if self._on_gpu or first.device_id is not None:
            self._device = self._execution.device_id if self._on_gpu else first.device_id
            self._stream = stream_handle(stream) if stream is not None else default_stream(first.package,
                                                                                             self._device)
        else:
            self._device = self._stream = None
        self._explicit_stream = stream is not None
        self._ops = ops
        self._signatures = {k: (None if o is None else o.signature) for k, o in ops.items()}
        self._keys = {k: (None if o is None else (o.shape, o.strides, o.dtype)) for k, o in ops.items()}
        self._host_only = not self._on_gpu and first.device_id is None
        self._blocking = opts.blocking is True or first.device_id is None
        if self._log.isEnabledFor(logging.INFO):
            q = ", ".join(f"{n}: {ABBREVIATIONS[qq[0]]}{' (conjugated)' if qq[1] else ''}" for n, qq in zip("ab", quals)
                          if qq[0] != "ge" or qq[1])
            where = "CPU" if not self._on_gpu else f"GPU {self._device}"
            self._log.info("matmul (%s) of %s %s: a %s @ b %s%s -> %s%s%s, on %s", g.kind, first.package, g.dtype,
                           list(first.shape), list(ops["b"].shape), "" if C is None else f" + c {list(C.shape)}",
                           list(g.result_shape), " in place" if opts.inplace else "", f"; {q}" if q else "", where)

    def _init_explicit(self, a, b, c, alpha, beta, qualifiers, opts, execution, stream):
        seqs = {"a": a, "b": b}
        if c is not None:
            seqs["c"] = c
        for name, value in seqs.items():
            if not _is_sequence(value):
                raise TypeError(f"explicit batching takes sequences for a, b (and c); {name} is a "
                                f"{type(value).__name__}")
        n = len(a)
        for name, value in seqs.items():
            if len(value) != n:
                raise ValueError(f"a has {n} operands but {name} has {len(value)}: explicit batching needs one "
                                 f"{name} per a")
        if n == 0:
            raise ValueError("explicit batching needs at least one problem; a and b are empty sequences")

        def per(value, what):
            if _is_sequence(value):
                if len(value) != n:
                    raise ValueError(f"{what} has {len(value)} entries for {n} problems")
                return list(value)
            return [value] * n
        alphas, betas = per(alpha, "alpha"), per(beta, "beta")
        if qualifiers is None or (isinstance(qualifiers, np.ndarray) and qualifiers.dtype.names):
            quals = [qualifiers] * n
        else:
            quals = per(qualifiers, "qualifiers")
        children = []
        try:
            for i in range(n):
                children.append(Matmul(a[i], b[i], None if c is None else c[i], alpha=alphas[i], beta=betas[i],
                                       qualifiers=quals[i], options=opts, execution=execution, stream=stream))
        except BaseException:
            for ch in children:
                ch.free()
            raise
        first = children[0]._ops["a"]
        for i, ch in enumerate(children[1:], 1):
            other = ch._ops["a"]
            if other.package != first.package or other.device_id != first.device_id:
                for x in children:
                    x.free()
                raise ValueError(f"problem {i} is a {other.package} array on "
                                 f"{'the host' if other.device_id is None else f'GPU {other.device_id}'}; all "
                                 f"problems of an explicit batch must share the package and device of problem 0")
        self._children = children
        self._on_gpu = children[0]._on_gpu

    # ------------------------------------------------------------------------------------------ lifecycle
    @requires_alive
    def plan(self, *, stream=None):
        """Choose the BLAS routines, transposes and copies for the operands' layouts (and create the
        library handle and the staging buffers). Planning twice does nothing."""
        if self._children is not None:
            return self._plan_explicit(stream)
        if self._planned:
            return
        if stream is not None:
            self._use_stream(stream)
        g, ops, opts = self._geom, self._ops, self._options
        engine = self._make_engine()
        try:
            strides = {k: (None if o is None else o.strides) for k, o in ops.items()}
            staged, host_ops = {}, None
            crosses = (ops["a"].device_id is None) == self._on_gpu
            if crosses:
                for k, o in ops.items():
                    if o is not None:
                        staged[k] = staging_perm(o.shape, o.strides)
                        strides[k] = dense_strides(o.shape, staged[k])
                if not self._on_gpu:
                    host_ops = {k: (None if o is None else adapter("numpy").wrap(
                        _host_array(o.shape, g.dtype, staged[k]))) for k, o in ops.items()}
            layout = plan_layout(g, strides["a"], strides["b"], strides["c"], opts.inplace, engine.caps)
            allocator = None
            if self._on_gpu:
                allocator = opts.allocator or default_allocator(ops["a"].package, self._device)
            self._executor = make_executor(g, layout, ops, engine, self._log, allocator=allocator,
                                           stream=self._stream, staged=staged, host_ops=host_ops)
        except BaseException:
            engine.free()
            raise
        self._layout = layout
        engine.scalars.set(self._alpha, self._beta)
        self._engine = engine
        self._planned = True
        if self._log.isEnabledFor(logging.INFO):
            routines = sorted({s.routine for s in layout.steps})
            self._log.info("matmul planned on %s: %s (%d call%s per execution)", engine.description,
                           ", ".join(routines) or "nothing to compute",
                           sum(len(s.offsets) for s in layout.steps), "" if len(layout.steps) == 1 else "s")

    def _plan_explicit(self, stream):
        """Plan every problem; on the GPU they share one cuBLAS handle and run through one BatchExecutor."""
        if self._planned:
            return
        children = self._children
        first = children[0]
        if self._on_gpu and self._handle is None:
            from .._backends.cublas import CublasHandle

            self._handle = CublasHandle(first._device, first._stream)
            if self._log.isEnabledFor(logging.INFO):
                self._log.info("cuBLAS %s on GPU %d (one handle for the %d problems of the explicit batch)",
                               self._handle.version_string(), first._device, len(children))
        for ch in children:
            ch._handle = self._handle
            ch.plan(stream=stream)
        if self._on_gpu:
            from .batch import BatchExecutor

            allocator = self._options.allocator or default_allocator(first._ops["a"].package, first._device)
            self._batch = BatchExecutor([ch._executor for ch in children], self._handle, allocator, first._stream,
                                        self._log)
        self._planned = True

    def _make_engine(self):
        if self._on_gpu:
            from .._backends.cublas import CublasEngine

            return CublasEngine(self._geom.dtype, self._device, self._stream, self._log, handle=self._handle)
        from .._backends.blas import BlasEngine

        threads = self._execution.num_threads if self._user_threads else None
        return BlasEngine(self._geom.dtype, self._options.cpu_blas, threads, self._log)

    def execute(self, *, stream=None):
        """Compute the product with the current operands and return the result (an array of the operands'
        package on their device; c itself in place; a list of results for explicit batching)."""
        ex = self._executor
        if ex is not None and not self._released and self._host_only and stream is None:  # the CPU hot path
            return ex.execute(self._ops)
        if self._children is not None:
            if self._freed:
                self._not_ready("execute")
            if self._batch is None:
                return [ch.execute(stream=stream) for ch in self._children]
            return self._execute_batch(stream)
        if ex is None or self._released:
            self._not_ready("execute")
        if stream is None:
            stream_arg, explicit = self._stream, self._explicit_stream
        else:
            stream_arg, explicit = stream_handle(stream), True
        return run_ordered(self._ops["a"], stream_arg, explicit, self._blocking, ex.execute, self._ops, stream_arg)

    def _execute_batch(self, stream):
        """An explicit batch on the GPU: every problem prepared, computed (one grouped launch for the general
        products) and finished on one stream and one cuBLAS handle."""
        children = self._children
        for ch in children:
            if ch._released:
                ch._not_ready("execute")
        first = children[0]
        if stream is None:
            stream_arg, explicit = first._stream, first._explicit_stream
        else:
            stream_arg, explicit = stream_handle(stream), True
        opses = [ch._ops for ch in children]
        return run_ordered(first._ops["a"], stream_arg, explicit, first._blocking, self._batch.execute, opses,
                           stream_arg)

    def _use_stream(self, stream):
        self._stream = stream_handle(stream)
        self._explicit_stream = True

    def _not_ready(self, what):
        if self._freed:
            raise InvalidStateError(f"Matmul.{what}() was called after free(); create a new object")
        if self._children is None and self._executor is None:
            raise InvalidStateError(f"Matmul.{what}() needs a plan: call plan() first")
        raise InvalidStateError("the operands were released; call reset_operands(a=..., b=...) with all of them "
                                f"before {what}()")

    # ------------------------------------------------------------------------------------------- operands
    @requires_alive
    def reset_operands(self, *, a=None, b=None, c=None, alpha=None, beta=None, stream=None):
        """Point the plan at new operands (and/or new alpha, beta) of the same package, device, shapes,
        strides and dtype. Operands not given keep their current values (after release_operands(), all
        of them must be given). Explicit batches take sequences."""
        if self._children is not None:
            return self._reset_children(a, b, c, alpha, beta, stream, checked=True)
        given = {"a": a, "b": b, "c": c}
        if c is not None and self._ops_planned("c") is None:
            raise ValueError("this Matmul was created without c, so c cannot be reset; create a new Matmul with c")
        if self._released:
            missing = [k for k in _NAMES if self._signatures[k] is not None and given[k] is None]
            if missing:
                raise ValueError(f"after release_operands(), reset_operands() needs all operands; missing "
                                 f"{', '.join(missing)}")
        new = {}
        for name, value in given.items():
            if value is None:
                continue
            op = wrap_operand(value, name)
            if op.signature != self._signatures[name]:
                raise ValueError(self._mismatch(name, op))
            if name == "c" and self._options.inplace and op.readonly:
                raise ValueError("options.inplace=True needs a writeable c, but the new c is read-only")
            new[name] = op
        self._ops.update(new)
        self._released = False
        self._set_scalars(alpha, beta)
        if stream is not None:
            self._use_stream(stream)

    @requires_alive
    def reset_operands_unchecked(self, *, a=None, b=None, c=None, alpha=None, beta=None, stream=None):
        """Like reset_operands() for hot loops: only the shape, strides and dtype are compared (a layout change
        would make the plan read the wrong memory, so it is still refused)."""
        if self._children is not None:
            return self._reset_children(a, b, c, alpha, beta, stream, checked=False)
        for name, value in (("a", a), ("b", b), ("c", c)):
            if value is None:
                continue
            op = value if type(value) is Operand else wrap_operand(value, name)
            if (op.shape, op.strides, op.dtype) != self._keys[name]:
                raise ValueError(self._mismatch(name, op))
            self._ops[name] = op
        self._released = False
        if alpha is not None or beta is not None:
            self._set_scalars(alpha, beta)
        if stream is not None:
            self._use_stream(stream)

    def _reset_children(self, a, b, c, alpha, beta, stream, checked):
        n = len(self._children)
        cols = {}
        for name, value in (("a", a), ("b", b), ("c", c), ("alpha", alpha), ("beta", beta)):
            if value is None:
                cols[name] = [None] * n
            elif _is_sequence(value) and len(value) == n:
                cols[name] = list(value)
            elif name in ("alpha", "beta") and not _is_sequence(value):
                cols[name] = [value] * n
            else:
                raise ValueError(f"{name} must be a sequence of {n} entries (one per problem of the explicit batch)")
        try:
            for i, ch in enumerate(self._children):
                fn = ch.reset_operands if checked else ch.reset_operands_unchecked
                fn(a=cols["a"][i], b=cols["b"][i], c=cols["c"][i], alpha=cols["alpha"][i], beta=cols["beta"][i],
                   stream=stream)
        finally:
            if self._batch is not None and (alpha is not None or beta is not None):
                self._batch.scalars_changed()

    def _scalar_of(self, value, default, name):
        return _scalar(value, default, self._geom.dtype, name)

    def _ops_planned(self, name):
        return self._signatures.get(name)

    def _set_scalars(self, alpha, beta):
        dtype = self._geom.dtype
        if alpha is not None:
            self._alpha = _scalar(alpha, 1, dtype, "alpha")
        if beta is not None:
            if self._signatures["c"] is None:
                self._log.warning("beta=%r is ignored: this Matmul has no c", beta)
            else:
                self._beta = _scalar(beta, 0, dtype, "beta")
        if self._executor is not None:
            self._engine.scalars.set(self._alpha, self._beta)

    @requires_alive
    def release_operands(self):
        """Drop the references to the operands (so their memory can be freed); reset_operands() with all of
        them before the next execute()."""
        if self._children is not None:
            for ch in self._children:
                ch.release_operands()
            return
        self._ops = {k: None for k in _NAMES}
        self._released = True

    def _mismatch(self, name, op) -> str:
        labels = ("package", "device", "shape", "strides", "dtype")
        planned = self._signatures[name]
        diffs = [f"{n} {x} (planned: {y})" for n, x, y in zip(labels, op.signature, planned) if x != y]
        return (f"the new {name} does not match the planned one: " + ", ".join(diffs) +
                "; create a new Matmul for it")

    def _release(self):
        if self._children is not None:
            for ch in self._children:
                ch.free()
            batch, self._batch = self._batch, None
            if batch is not None:
                batch.free()
            handle, self._handle = self._handle, None
            if handle is not None:
                handle.free()
            return
        ex, self._executor = self._executor, None
        self._ops = {k: None for k in _NAMES}
        if ex is not None:
            ex.free()

    @property
    def nbytes(self) -> int:
        """Bytes the plan holds (staging buffers, workspaces, a recycled result)."""
        if self._children is not None:
            return sum(ch.nbytes for ch in self._children) + (0 if self._batch is None else self._batch.nbytes)
        return self._executor.nbytes if self._executor is not None else 0

    @property
    def layout(self):
        """The plan's layout decisions (copies, result layout, BLAS steps); None before plan()."""
        return getattr(self, "_layout", None)
