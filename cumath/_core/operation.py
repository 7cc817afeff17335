"""The skeleton every stateful operation is written on: operands, placement, state, plan template, binding.

An operation (``fft.FFT``, ``linalg.Matmul``, ``linalg.advanced.Matmul``, the solvers, ...) is::

    construct (wrap operands, check them, place the work)  ->  plan()  ->  execute() ...  ->  free()
                 reset_operands() / release_operands() between executions

What it has in common lives here:

- the operand set: ``_NAMES`` (in order), the planned signatures, resets that compare them (checked: package,
  device, shape, strides, dtype; unchecked: shape, strides and dtype only, which is cheap and keeps memory
  safe), writeability of the operands written in place, ``release_operands()`` and the released state;
- the placement (:class:`~cumath._core.placement.Placement`): package, device, execution space, stream (and
  whether the caller named it), blocking; ``_ordered()`` runs work on a stream as the caller asked;
- the states (``_STATES``, read by ``@requires``) and their messages;
- ``plan()`` as a template (``_plan``): the one planning hook ``_make_executor()`` builds the executor, and a
  failure after it frees what was made;
- ``_bind(ops, ...)`` / ``_unbind()``: how the plan cache (``cached_call``) lends a planned object to one
  stateless call without touching its private fields.

``execute()`` stays in each class: it is the hot path, and its frame budget (at most four Python frames from
a stateless public function to the native call) leaves no room for a generic layer.
"""

from __future__ import annotations

from ..errors import OperandMismatchError
from . import nvtx
from .lifecycle import Stateful
from .operand import Operand, wrap_operand
from .placement import Placement, place
from .streams import ordered, stream_handle

__all__ = ["Operation", "mismatch_message"]

_LABELS = ("package", "device", "shape", "strides", "dtype")


def mismatch_message(name: str, op: Operand, planned: tuple, what: str) -> str:
    """The message for a new operand whose signature differs from the planned one."""
    diffs = [f"{label} {x} (planned: {y})" for label, x, y in zip(_LABELS, op.signature, planned) if x != y]
    return f"the new {name} does not match the planned one: " + ", ".join(diffs) + f"; create a new {what} for it"


class Operation(Stateful):
    """Base of the stateful operations (see the module's docstring)."""

    #: operand names, in the order of the constructor's arguments
    _NAMES: tuple = ()
    #: what to call to give operands back after release_operands() (for the messages)
    _RESET_HINT = "reset_operands(...) with all of them"
    #: the InvalidStateError of a method that needs the released operands ({hint}: _RESET_HINT, {what}: the method)
    _RELEASED_MESSAGE = "the operands were released; call {hint} before {what}()"
    #: what a mismatch message says to create for a new operand (None: the class's name)
    _MISMATCH_WHAT: str | None = None
    _STATES = {
        "planned": ("_planned", "needs a plan: call plan() first"),
        "operands": ("_has_operands", "needs operands: they were released; give them again with reset_operands()"),
    }

    _executor = None
    _released = False
    _ops: dict = {}
    _signatures: dict = {}
    _place: Placement | None = None

    # --------------------------------------------------------------------------------------- operands
    def _init_operands(self, ops: dict) -> None:
        """Take the wrapped operands (name -> Operand or None) as the planned ones."""
        self._ops = ops
        self._signatures = {k: (None if o is None else o.signature) for k, o in ops.items()}
        self._quick = {k: (None if o is None else (o.shape, o.strides, o.dtype)) for k, o in ops.items()}
        self._released = False

    @property
    def _has_operands(self) -> bool:
        return not self._released

    def _not_ready(self, what: str, states=("planned", "operands")):
        if not self._freed and self._planned and self._released and "operands" in states:
            from ..errors import InvalidStateError

            raise InvalidStateError(self._RELEASED_MESSAGE.format(hint=self._RESET_HINT, what=what))
        super()._not_ready(what, states)

    def _checked(self, name: str, value, *, writes: bool = False) -> Operand:
        """``value`` wrapped and compared with the planned operand ``name`` (ValueError naming the difference);
        ``writes``: the operation writes into it, so it must be writeable."""
        op = value if type(value) is Operand else wrap_operand(value, name)
        planned = self._signatures.get(name)
        if planned is None:
            raise ValueError(f"this {type(self).__name__} was created without {name}, so {name} cannot be reset; "
                             f"create a new {type(self).__name__} with {name}")
        if op.signature != planned:
            # another package or device: a TypeError as nvmath-python raises it (and a ValueError)
            cls = OperandMismatchError if op.signature[:2] != planned[:2] else ValueError
            raise cls(mismatch_message(name, op, planned, self._MISMATCH_WHAT or type(self).__name__))
        if writes and op.readonly:
            raise ValueError(f"{name} is written in place, but the new {name} is read-only")
        return op

    def _unchecked(self, name: str, value) -> Operand:
        """``value`` wrapped; only its shape, strides and dtype are compared (cheap, and what keeps the plan
        from reading or writing the wrong memory)."""
        op = value if type(value) is Operand else wrap_operand(value, name)
        if (op.shape, op.strides, op.dtype) != self._quick.get(name):
            planned = self._signatures.get(name)
            if planned is None:
                raise ValueError(f"this {type(self).__name__} was created without {name}, so {name} cannot be "
                                 f"reset")
            raise ValueError(mismatch_message(name, op, planned, self._MISMATCH_WHAT or type(self).__name__))
        return op

    def _reset_operands(self, given: dict, *, checked: bool = True, writes=()) -> dict:
        """Replace the operands named in ``given`` (name -> array or None for "keep"); after
        release_operands() every planned operand must be given. Returns the new Operands by name."""
        if self._released:
            missing = [k for k in self._NAMES if self._signatures.get(k) is not None and given.get(k) is None]
            if missing:
                raise ValueError(f"after release_operands(), every operand must be given again; missing "
                                 f"{', '.join(missing)}")
        new = {}
        for name, value in given.items():
            if value is None:
                continue
            new[name] = (self._checked(name, value, writes=name in writes) if checked
                         else self._unchecked(name, value))
        self._ops = {**self._ops, **new}
        self._released = False
        return new

    def release_operands(self) -> None:
        """Drop the references to the operands (so their memory can be freed); give them all again
        (reset_operands) before the next execute()."""
        if self._freed:
            self._not_ready("release_operands", ())
        self._ops = dict.fromkeys(self._ops)
        self._released = True

    # ------------------------------------------------------------------------------ plan-cache protocol
    def _bind(self, ops: dict, *params) -> None:
        """Lend this planned object to one stateless call: ``ops`` (name -> Operand) match the plan (the cache
        key says so). Domains with per-call parameters (alpha, beta, ...) override this and call super."""
        self._ops = ops
        self._released = False

    def _unbind(self) -> None:
        """The stateless call is over: drop its operands."""
        self._ops = dict.fromkeys(self._ops)
        self._released = True

    # --------------------------------------------------------------------------------------- placement
    def _init_placement(self, op: Operand, execution=None, stream=None, blocking=None, *, device_id=None):
        """Decide where the work runs (see :func:`~cumath._core.placement.place`); sets the hot-path fields
        ``_stream``, ``_explicit_stream``, ``_blocking``, ``_host_only``, ``_on_gpu``, ``_device``."""
        p = self._place = place(op, execution, stream, blocking, device_id=device_id)
        self._execution = p.execution
        self._on_gpu = p.on_gpu
        self._device = p.device
        self._stream = p.stream
        self._explicit_stream = p.explicit_stream
        self._blocking = p.blocking
        self._host_only = p.host_only
        self._streams_kept = {}
        self._keep_stream(stream, p.stream)
        return p

    def _keep_stream(self, obj, handle) -> None:
        """Keep the caller's stream object ``obj`` alive while this operation lives: libraries keep using the
        stream their plan was made on (cuDSS frees its analysis memory on it; a destroyed stream there crashed
        a later solve on another stream). Plain integers are the caller's to keep; the first stream and the
        seven most recent ones are kept."""
        if obj is None or isinstance(obj, int):
            return
        kept = self.__dict__.setdefault("_streams_kept", {})
        if handle in kept:
            return
        if len(kept) >= 8:
            del kept[list(kept)[1]]
        kept[handle] = obj

    def _use_stream(self, stream) -> None:
        """Order later executions on ``stream`` (any form stream_handle() accepts)."""
        self._stream = stream_handle(stream)
        self._explicit_stream = True
        self._keep_stream(stream, self._stream)

    def _stream_arg(self, stream):
        """(stream handle, whether the caller named it) for one call given ``stream`` (None: the plan's)."""
        if stream is None:
            return self._stream, self._explicit_stream
        handle = stream_handle(stream)
        if not isinstance(stream, int):
            self._keep_stream(stream, handle)
        return handle, True

    def _ordered(self, stream: int, explicit: bool, fn, *args):
        """``fn(*args)`` ordered on ``stream`` as the caller asked, then waited for when blocking."""
        p = self._place
        return ordered(p.package, p.operand_device, stream, explicit, self._blocking, fn, *args)

    # ---------------------------------------------------------------------------------------- planning
    def _plan(self, stream, *args, **kwargs):
        """The planning template: take ``stream``, build the executor with ``_make_executor(*args, **kwargs)``
        and complete the plan with ``_planned_with(executor)``; what was made is freed if either fails."""
        if stream is not None:
            self._use_stream(stream)
        with nvtx.operation_range(self, "plan"):
            executor = self._make_executor(*args, **kwargs)
        try:
            self._planned_with(executor)
        except BaseException:
            executor.free()
            raise
        self._executor = executor
        self._planned = True
        return executor

    def _make_executor(self, *args, **kwargs):  # pragma: no cover - every operation defines it
        raise NotImplementedError

    def _planned_with(self, executor) -> None:
        """After the executor exists: finishing steps that may fail (preparing a direction, logging)."""

    def _drop_plan(self) -> None:
        """Free the executor (planning again replaces it)."""
        ex, self._executor = self._executor, None
        self._planned = False
        if ex is not None:
            ex.free()

    def _release(self) -> None:
        self._ops = dict.fromkeys(self._ops)
        self._drop_plan()

    @property
    def nbytes(self) -> int:
        """Bytes the plan holds (workspaces, staging buffers, kept results)."""
        ex = self._executor
        return ex.nbytes if ex is not None else 0
