"""The stateful FFT: construct -> plan -> execute (repeatedly, with reset_operand) -> free."""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

from .._core import cuda
from .._core._fast import fast_execute
from .._core.execution import check_execution, execution_key, merge_device_option
from .._core.lifecycle import requires
from .._core.operand import Operand, immutable_hint, wrap_operand
from .._core.operation import Operation
from .._core.options import check_options
from ..errors import UnsupportedDtypeError
from ._callbacks import TensorLayout, callback_key, resolve_callbacks
from ._executors import DeviceExecutor, HostExecutor, Setup, make_executor
from ._options import FFTDirection, FFTOptions
from ._traits import FFTKey, check_axes, device_strides, fft_geometry, host_strides, layout_key

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any
    from .._core.typing import AnyTensor, ExecutionLike, StreamLike
    from ._callbacks import DeviceCallable

__all__ = ["FFT"]

logger = logging.getLogger(__name__)

_DIRECTIONS = {None: None, FFTDirection.FORWARD: -1, FFTDirection.INVERSE: 1, "forward": -1, "inverse": 1,
               -1: -1, 1: 1}


def _sign(direction) -> int | None:
    try:
        return _DIRECTIONS[direction.lower() if type(direction) is str else direction]
    except (KeyError, TypeError):
        raise ValueError(
            f"direction={direction!r} is not supported; the allowed values are FFTDirection.FORWARD, "
            f"FFTDirection.INVERSE, 'forward', 'inverse' (in any case), -1 and 1"
        ) from None


def _callbacks_check(prolog, epilog, on_gpu, geom):
    """The AttachedCallbacks of ``prolog``/``epilog`` for a plan of ``geom`` (checked before planning)."""
    if prolog is None and epilog is None:
        return ()
    if not on_gpu:
        raise ValueError("prolog/epilog callbacks run inside cuFFT on the GPU; they are not supported with "
                         "CPU execution (use execution='cuda' or drop the callbacks)")
    return resolve_callbacks(prolog, epilog, geom.fft_type, geom.precision)


class FFT(Operation):
    """A planned FFT over operands of one shape, layout, dtype, package and device.

    Example (CPU, NumPy)::

        import numpy as np, cumath
        x = np.random.rand(64, 1024) + 1j * np.random.rand(64, 1024)
        with cumath.fft.FFT(x, axes=[-1]) as f:
            f.plan()
            y = f.execute()                       # forward, like numpy.fft.fft(x)
            x2 = f.execute(direction="inverse")   # unnormalized: equals x * 1024

    Example (GPU, CuPy)::

        import cupy as cp, cumath
        x = cp.random.rand(512, 512).astype(cp.complex64)
        with cumath.fft.FFT(x) as f:
            f.plan()
            y = f.execute()
            f.reset_operand(cp.random.rand(512, 512).astype(cp.complex64))
            y2 = f.execute()

    Transforms are unnormalized in both directions (as in cuFFT and FFTW): an inverse of a forward
    transform returns the input times the product of the transform sizes.

    ``execute()`` on NumPy arrays may hand out again the memory of a result the caller has dropped (nothing
    refers to it any more: no name, view, buffer or weak reference; see ``cumath/_core/recycle.py``), as pyFFTW
    writes into one output array; nvmath-python returns new memory each call. Results held anywhere are never
    written again. ``CUMATH_RECYCLE_RESULTS=0`` turns this off.
    """

    _reuse_results = True  # False for the stateless functions' cached plans (they return new memory)

    _NAMES = ("operand",)
    _RESET_HINT = "reset_operand(new_operand)"
    _RELEASED_MESSAGE = "the operand was released; call {hint} before {what}()"
    _MISMATCH_WHAT = "FFT object"
    _STATES = {**Operation._STATES,
               "operands": ("_has_operands", "needs its operand: it was released; call reset_operand(new_operand) "
                                             "first")}

    def __init__(self, operand: AnyTensor, *, axes: Sequence[int] | None = None,
                 options: FFTOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
                 stream: StreamLike = None) -> None:
        self._setup(operand, axes, options, execution, stream, None)

    @classmethod
    def _of_type(cls, fft_type: str, operand: AnyTensor, axes: Sequence[int] | None, options: Any, execution: Any,
                 stream: StreamLike) -> FFT:
        """An FFT of the stateless function's type ('C2C', 'R2C', 'C2R'; options.fft_type may only agree)."""
        self = cls.__new__(cls)
        self._reuse_results = False  # a cached plan keeps no results between calls
        self._setup(operand, axes, options, execution, stream, fft_type)
        return self

    def _setup(self, operand: AnyTensor, axes: Sequence[int] | None, options: Any, execution: Any,
               stream: StreamLike, _fft_type: str | None) -> None:
        opts = options if type(options) is FFTOptions else check_options(options, FFTOptions, "FFT options")
        self._options = opts
        self._log = opts.logger or logger
        op = operand if type(operand) is Operand else wrap_operand(operand)
        axes = check_axes(axes)
        p = self._init_placement(op, execution, stream, opts.blocking, device_id=opts.device_id)
        fft_type = opts.fft_type
        if _fft_type is not None:
            if fft_type is not None and fft_type != _fft_type:
                raise ValueError(f"this function performs {_fft_type} FFTs but options.fft_type={fft_type!r}")
            fft_type = _fft_type
        if opts.inplace and op.readonly and op.package == "jax":
            raise ValueError("inplace=True writes into the operand" + immutable_hint(op))
        self._geom = geom = fft_geometry(op.shape, op.strides, op.dtype, axes, fft_type, opts.last_axis_parity,
                                         opts.result_layout, opts.inplace, op.readonly)
        if not p.on_gpu and geom.precision == "float16":
            raise UnsupportedDtypeError(f"{op.dtype} FFTs run on the GPU only; pass execution='cuda' or a float32/complex64 "
                            f"operand")
        if p.on_gpu:
            from ._backends.cufft import check_half_sizes

            check_half_sizes(geom.sizes, geom.precision)
        self._init_operands({"operand": op})
        self._no_operand = {"operand": None}
        self._axes_arg = None if axes is None else tuple(axes)
        self._callbacks_planned = (None, None)  # callback_key() of the prolog and epilog planned with
        self._callbacks = ()  # and the callbacks themselves (a new layout is planned with them again)
        self._default_sign = 1 if geom.fft_type == "C2R" else -1
        self._plan_sign = self._default_sign
        if self._log.isEnabledFor(logging.INFO):
            where = "CPU" if not p.on_gpu else f"GPU {p.device}"
            self._log.info("FFT %s of %s %s%s over axes %s, executing on %s (%s threads)", geom.fft_type,
                           op.package, op.dtype, list(op.shape), list(geom.axes), where,
                           getattr(p.execution, "num_threads", "-"))

    # ------------------------------------------------------------------------------------------- keys
    @staticmethod
    def create_key(operand: AnyTensor, *, axes: Sequence[int] | None = None,
                   options: FFTOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
                   prolog: DeviceCallable | bytes | Mapping[str, Any] | None = None,
                   epilog: DeviceCallable | bytes | Mapping[str, Any] | None = None) -> Any:
        """A hashable key of everything a plan depends on (for user-side caches of FFT objects)."""
        op = wrap_operand(operand)
        axes = check_axes(axes)
        opts = check_options(options, FFTOptions, "FFT options")
        execution = merge_device_option(execution, opts.device_id)
        # resolved as FFT() resolves it, so that create_key(x, ...) == FFT(x, ...).get_key()
        execution = check_execution(execution, op.device_id)
        geom = fft_geometry(op.shape, op.strides, op.dtype, axes, opts.fft_type, opts.last_axis_parity,
                            opts.result_layout, opts.inplace, op.readonly)
        return FFTKey((op.package, op.device_id), layout_key(geom, op.strides), opts, execution,
                      callback_key(prolog), callback_key(epilog))

    @requires()
    def get_key(self, *, prolog: DeviceCallable | bytes | Mapping[str, Any] | None = None,
                epilog: DeviceCallable | bytes | Mapping[str, Any] | None = None) -> Any:
        """The key of this FFT (equal to ``create_key`` of its operand): operands of the same plan layout have
        equal keys even when their batch axes are arranged differently (see :meth:`reset_operand`)."""
        signature = self._signatures["operand"]
        return FFTKey(tuple(signature[:2]), layout_key(self._geom, signature[3]), self._options,
                      execution_key(self._execution), callback_key(prolog), callback_key(epilog))

    # ------------------------------------------------------------------------------------------- layouts
    def _layouts(self):
        signature = self._signatures["operand"]
        if self._on_gpu:
            return device_strides(self._geom, signature[3], signature[1] is None, self._options.overwrite_input)
        return host_strides(self._geom, signature[3])

    @requires()
    def get_input_layout(self) -> TensorLayout:
        """``(shape, strides)`` (strides in elements) of the array the FFT reads: the operand, or the copy
        cumath makes when cuFFT cannot read the operand's layout (and for C2R, whose input cuFFT destroys).
        A prolog's ``offset`` indexes this layout: element ``i`` of it is at ``sum(i[k] * strides[k])``."""
        return TensorLayout(self._geom.in_shape, self._layouts()[0])

    @requires()
    def get_output_layout(self) -> TensorLayout:
        """``(shape, strides)`` (in elements) of the array the FFT writes; an epilog's ``offset`` indexes it."""
        return TensorLayout(self._geom.out_shape, self._layouts()[1])

    # ------------------------------------------------------------------------------------------- lifecycle
    @requires()
    def plan(self, *, prolog: DeviceCallable | bytes | Mapping[str, Any] | None = None,
             epilog: DeviceCallable | bytes | Mapping[str, Any] | None = None, stream: StreamLike = None,
             direction: FFTDirection | str | None = None) -> None:
        """Create the engine's plan (and staging buffers). ``direction`` pre-plans that direction on
        engines whose plans depend on it (FFTW); other directions are planned on first use.

        ``prolog`` / ``epilog``: callbacks applied as the FFT loads its input / stores its result (GPU
        execution): LTO-IR from :func:`compile_prolog` / :func:`compile_epilog`, a :class:`DeviceCallable`
        (LTO-IR plus the user data pointer), or a dict of DeviceCallable's fields. Their offsets index the
        layouts of :meth:`get_input_layout` / :meth:`get_output_layout`, whichever way they run: fused into
        cuFFT's kernels or as a pass of their own (``FFTOptions.callback_fusion``; 'auto' picks the faster
        per plan and logs why). Planning again with other callbacks replaces the plan.
        """
        callbacks = _callbacks_check(prolog, epilog, self._on_gpu, self._geom)
        ident = (callback_key(prolog), callback_key(epilog))
        if self._planned:
            if ident == self._callbacks_planned:
                return
            self._log.info("planning again with other callbacks")
            self._drop_plan()
        if direction is not None and self._geom.fft_type != "C2C":
            self._check_direction(direction)
        self._plan_sign = _sign(direction) or self._default_sign
        self._plan(stream, callbacks)
        self._callbacks_planned = ident
        self._callbacks = callbacks

    def _make_executor(self, callbacks):
        op = self._ops["operand"]
        if op is None:
            self._not_ready("plan", ("operands",))
        setup = Setup(self._execution, self._options, self._log, self._stream, not self._place.user_threads,
                      callbacks, self._reuse_results)
        return make_executor(self._geom, op, setup)

    def _planned_with(self, executor) -> None:
        executor.prepare(self._plan_sign)

    def _hot_spec(self):
        """What the compiled hit path of the stateless functions needs to run this plan, or None: a host plan's
        ``HostExecutor.hot_spec()``, or ``(runner, package)`` for a GPU plan whose executor runs its plain case in C
        (non-blocking, on the operand's current stream, as every stateless GPU call of its key is)."""
        ex = self._executor
        if self._host_only:
            if type(ex) is not HostExecutor or ex.runner_reuses:
                return None  # results reused on request (CUMATH_RECYCLE_RESULTS=1): the plan's runner serves
            return ex.hot_spec()
        if type(ex) is DeviceExecutor and not self._blocking and not self._explicit_stream:
            runner = ex.__dict__.get("execute")  # the plain case's C runner, where the executor has one
            if runner is not None and type(runner).__name__ == "DevRunner":
                return runner, self._place.package
        return None

    def _unbind(self) -> None:
        # as Operation._unbind, with one prebuilt empty operand set (FFT replaces _ops, never changes it in
        # place): this runs after every stateless call
        self._ops = self._no_operand
        self._released = True

    # a call without arguments runs what the two branches below run for it (host; the plan's own stream) from C
    @fast_execute("operand", "_default_sign")
    def execute(self, *, direction: FFTDirection | str | None = None, stream: StreamLike = None,
                release_workspace: bool = False) -> AnyTensor:
        """Run the FFT on the current operand and return the result (the caller's package and device).

        ``direction``: FFTDirection.FORWARD (default for C2C and R2C) or INVERSE (C2R's only one).
        ``release_workspace``: give the workspace (and any result kept for reuse) back after this call.
        """
        # the state check inline (one frame less than @requires); a released operand is None
        executor, op = self._executor, self._ops["operand"]
        if executor is None or op is None:
            self._not_ready("execute")
        if self._host_only and direction is None and stream is None and not release_workspace:
            return executor.execute(op, self._default_sign, None)  # the CPU hot path
        if direction is None:
            sign = self._default_sign
        else:
            sign = _sign(direction)
            if sign != self._default_sign and self._geom.fft_type != "C2C":
                self._check_direction(direction)
        stream, explicit = self._stream_arg(stream)
        if explicit:  # ordered as the caller asked (in the package's stream context), waited for if blocking
            result = self._ordered(stream, True, executor.execute, op, sign, stream)
        else:
            result = executor.execute(op, sign, stream)
            if self._blocking and op.device_id is not None:
                cuda.synchronize(stream)
        if release_workspace:
            executor.release_workspace()
        return result

    def _check_direction(self, direction):
        sign = _sign(direction)
        kind = self._geom.fft_type
        if kind == "R2C" and sign != -1:
            raise ValueError("an R2C FFT is a forward transform; direction must be FFTDirection.FORWARD")
        if kind == "C2R" and sign != 1:
            raise ValueError("a C2R FFT is an inverse transform; direction must be FFTDirection.INVERSE")

    @requires()
    def reset_operand(self, operand: AnyTensor = None, *, stream: StreamLike = None) -> None:
        """Point the plan at a new operand of the same package, device and dtype, and the same plan layout:
        the same shape and strides, or (as nvmath-python's key normalisation allows) the same transformed
        dimensions with the batch axes rearranged or their strides transposed, which ``create_key`` gives
        equal keys; the plan is then made again for the new layout (cumath's engines' plans are tied to their
        strides; FFTW's wisdom makes this cheap), and results take the new operand's shape. A difference of
        any other kind raises ValueError naming it. ``None`` releases the current one (like
        release_operand())."""
        if operand is None:
            self.release_operands()
            return
        op = operand if type(operand) is Operand else wrap_operand(operand, "operand")
        if self._options.inplace and op.readonly:
            raise ValueError("inplace=True needs a writeable operand, but this array is read-only; pass a "
                             "writeable array")
        if op.signature != self._signatures["operand"]:
            self._relayout(op)  # the same plan layout with the batch axes arranged otherwise, else ValueError
        self._reset_operands({"operand": op}, checked=False)
        if stream is not None:
            self._use_stream(stream)

    def _relayout(self, op: Operand) -> None:
        """Take ``op``, whose shape or strides differ from the planned operand's, if its plan layout is the same
        (``create_key`` equal): the geometry and the result's shape follow the new operand, and the plan is made
        again for it (engines' plans are tied to the arrays they were made for; FFTW's wisdom makes this cheap).
        Otherwise a ValueError says what differs."""
        planned = self._signatures["operand"]
        if op.signature[:2] == planned[:2] and op.dtype == planned[4]:
            o = self._options
            try:
                geom = fft_geometry(op.shape, op.strides, op.dtype, self._axes_arg, self._geom.fft_type,
                                    o.last_axis_parity, o.result_layout, o.inplace, op.readonly)
            except (ValueError, TypeError):
                geom = None
            if geom is not None and layout_key(geom, op.strides) == layout_key(self._geom, planned[3]):
                self._log.info("new operand %s has the planned layout with its batch axes arranged otherwise: "
                               "planning again for it", list(op.shape))
                planned_before = self._planned
                self._drop_plan()
                self._geom = geom
                self._init_operands({"operand": op})
                if planned_before:
                    self._plan(None, self._callbacks)
                return
        self._checked("operand", op)  # raises the ValueError naming the differences

    @requires()
    def reset_operand_unchecked(self, operand: AnyTensor, *, stream: StreamLike = None) -> None:
        """Like reset_operand() with only the cheap checks (shape, strides, dtype and, in place, writeability:
        what keeps the plan from reading or writing the wrong memory): for hot loops whose operands are known to
        match. An operand of another shape goes through reset_operand()'s checks."""
        op = operand if type(operand) is Operand else wrap_operand(operand, "operand")
        if (op.shape, op.strides, op.dtype) != self._quick["operand"] or (self._geom.inplace and op.readonly):
            self.reset_operand(op, stream=stream)
            return
        self._ops = {"operand": op}
        self._released = False
        if stream is not None:
            self._use_stream(stream)

    @requires()
    def release_operand(self) -> None:
        """Drop the reference to the operand (so its memory can be freed); reset_operand() before the next
        execute()."""
        self.release_operands()
