"""The stateful FFT: construct -> plan -> execute (repeatedly, with reset_operand) -> free."""

from __future__ import annotations

import logging

from .._core.execution import ExecutionCUDA, check_execution, execution_key, names_threads
from .._core.lifecycle import Stateful, requires_alive
from .._core.operand import Operand, wrap_operand
from .._core.options import check_options
from .._core.streams import default_stream, stream_handle
from ..errors import InvalidStateError
from ..memory import default_allocator
from ._executors import make_executor
from ._callbacks import TensorLayout, callback_key, resolve_callbacks
from ._options import FFTDirection, FFTOptions
from ._traits import fft_geometry

__all__ = ["FFT"]

logger = logging.getLogger(__name__)

_DIRECTIONS = {None: None, FFTDirection.FORWARD: -1, FFTDirection.INVERSE: 1, "forward": -1, "inverse": 1,
               -1: -1, 1: 1}


def _sign(direction) -> int | None:
    try:
        return _DIRECTIONS[direction]
    except (KeyError, TypeError):
        raise ValueError(
            f"direction={direction!r} is not supported; the allowed values are FFTDirection.FORWARD, "
            f"FFTDirection.INVERSE, 'forward', 'inverse', -1 and 1"
        ) from None


def _callbacks_check(prolog, epilog, on_gpu, geom):
    """The AttachedCallbacks of ``prolog``/``epilog`` for a plan of ``geom`` (checked before planning)."""
    if prolog is None and epilog is None:
        return ()
    if not on_gpu:
        raise ValueError("prolog/epilog callbacks run inside cuFFT on the GPU; they are not supported with "
                         "CPU execution (use execution='cuda' or drop the callbacks)")
    return resolve_callbacks(prolog, epilog, geom.fft_type, geom.precision)


class FFT(Stateful):
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
    """

    def __init__(self, operand, *, axes=None, options=None, execution=None, stream=None, _fft_type=None):
        opts = check_options(options, FFTOptions, "FFT options")
        self._options = opts
        self._log = opts.logger or logger
        op = operand if type(operand) is Operand else wrap_operand(operand)
        if execution is None and opts.device_id is not None:
            execution = ExecutionCUDA(device_id=opts.device_id)
        self._execution = check_execution(execution, op.device_id)
        # threads chosen by cumath (per problem size) unless the caller named a number
        self._auto_threads = not names_threads(execution)
        self._on_gpu = self._execution.name == "cuda"
        fft_type = opts.fft_type
        if _fft_type is not None:
            if fft_type is not None and fft_type != _fft_type:
                raise ValueError(f"this function performs {_fft_type} FFTs but options.fft_type={fft_type!r}")
            fft_type = _fft_type
        self._geom = geom = fft_geometry(op.shape, op.strides, op.dtype, axes, fft_type, opts.last_axis_parity,
                                         opts.result_layout, opts.inplace, op.readonly)
        if not self._on_gpu and geom.precision == "float16":
            raise TypeError(f"{op.dtype} FFTs run on the GPU only; pass execution='cuda' or a float32/complex64 "
                            f"operand")
        if self._on_gpu:
            from .._core.cuda import require_device
            from ._backends.cufft import check_half_sizes

            check_half_sizes(geom.sizes, geom.precision)
            require_device(self._execution.device_id)
        self._operand = op
        self._signature = op.signature
        self._axes_arg = None if axes is None else tuple(axes)
        if self._on_gpu or op.device_id is not None:
            device = self._execution.device_id if self._on_gpu else op.device_id
            self._device = device
            self._stream = stream_handle(stream) if stream is not None else default_stream(op.package, device)
        else:
            self._device = None
            self._stream = None
        self._explicit_stream = stream is not None
        self._host_only = not self._on_gpu and op.device_id is None
        self._blocking = opts.blocking is True or op.device_id is None
        self._executor = None
        self._callbacks_planned = (None, None)  # callback_key() of the prolog and epilog planned with
        self._default_sign = 1 if geom.fft_type == "C2R" else -1
        if self._log.isEnabledFor(logging.INFO):
            where = "CPU" if not self._on_gpu else f"GPU {self._device}"
            self._log.info("FFT %s of %s %s%s over axes %s, executing on %s (%s threads)", geom.fft_type,
                           op.package, op.dtype, list(op.shape), list(geom.axes), where,
                           getattr(self._execution, "num_threads", "-"))

    # ------------------------------------------------------------------------------------------- keys
    @staticmethod
    def create_key(operand, *, axes=None, options=None, execution=None, prolog=None, epilog=None):
        """A hashable key of everything a plan depends on (for user-side caches of FFT objects)."""
        op = wrap_operand(operand)
        opts = check_options(options, FFTOptions, "FFT options")
        if execution is None and opts.device_id is not None:
            execution = ExecutionCUDA(device_id=opts.device_id)
        # resolved as FFT() resolves it, so that create_key(x, ...) == FFT(x, ...).get_key()
        execution = check_execution(execution, op.device_id)
        return (op.signature, None if axes is None else tuple(axes), opts, execution, callback_key(prolog),
                callback_key(epilog))

    @requires_alive
    def get_key(self, *, prolog=None, epilog=None):
        return (self._signature, self._axes_arg, self._options, execution_key(self._execution),
                callback_key(prolog), callback_key(epilog))

    # ------------------------------------------------------------------------------------------- layouts
    def _layouts(self):
        geom, strides = self._geom, self._signature[3]
        if self._on_gpu:
            from ._executors import device_strides

            return device_strides(geom, strides, self._signature[1] is None, self._options.overwrite_input)
        from .._core.layout import dense_strides

        return tuple(strides), tuple(strides if geom.inplace else dense_strides(geom.out_shape, geom.out_perm))

    @requires_alive
    def get_input_layout(self) -> TensorLayout:
        """``(shape, strides)`` (strides in elements) of the array the FFT reads: the operand, or the copy
        cumath makes when cuFFT cannot read the operand's layout (and for C2R, whose input cuFFT destroys).
        A prolog's ``offset`` indexes this layout: element ``i`` of it is at ``sum(i[k] * strides[k])``."""
        return TensorLayout(self._geom.in_shape, self._layouts()[0])

    @requires_alive
    def get_output_layout(self) -> TensorLayout:
        """``(shape, strides)`` (in elements) of the array the FFT writes; an epilog's ``offset`` indexes it."""
        return TensorLayout(self._geom.out_shape, self._layouts()[1])

    # ------------------------------------------------------------------------------------------- lifecycle
    @requires_alive
    def plan(self, *, prolog=None, epilog=None, stream=None, direction=None):
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
            self._release_executor()
            self._planned = False
        if stream is not None:
            self._use_stream(stream)
        sign = _sign(direction) or self._default_sign
        if direction is not None and self._geom.fft_type != "C2C":
            self._check_direction(direction)
        allocator = None
        if self._on_gpu:
            allocator = self._options.allocator or default_allocator(self._operand.package, self._device)
        ex = make_executor(self._geom, self._operand, self._execution, self._options, self._log, self._stream,
                           allocator, self._auto_threads, callbacks)
        try:
            ex.prepare(sign)
        except BaseException:
            ex.free()
            raise
        self._executor = ex
        self._callbacks_planned = ident
        self._planned = True

    def execute(self, *, direction=None, stream=None, release_workspace=False):
        """Run the FFT on the current operand and return the result (the caller's package and device).

        ``direction``: FFTDirection.FORWARD (default for C2C and R2C) or INVERSE (C2R's only one).
        ``release_workspace``: give the workspace back to the allocator after this call.
        """
        executor, op = self._executor, self._operand
        if executor is None or op is None:
            self._not_ready("execute")
        if self._host_only and direction is None and stream is None:  # the CPU hot path
            return executor.execute(op, self._default_sign, None)
        if direction is None:
            sign = self._default_sign
        else:
            sign = _sign(direction)
            if sign != self._default_sign and self._geom.fft_type != "C2C":
                self._check_direction(direction)
        if stream is None:
            stream_arg = self._stream
            explicit = self._explicit_stream
        else:
            stream_arg = stream_handle(stream)
            explicit = True
        if explicit and op.device_id is not None and stream_arg != default_stream(op.package, op.device_id):
            from .._core.operand import adapter

            with adapter(op.package).stream_context(op.device_id, stream_arg):
                result = executor.execute(op, sign, stream_arg)
        else:
            result = executor.execute(op, sign, stream_arg)
        if self._on_gpu:
            if release_workspace:
                executor.release_workspace()
            if self._blocking and op.device_id is not None:
                from .._core.cuda import synchronize

                synchronize(stream_arg)
        return result

    def _use_stream(self, stream):
        """Order later executions on ``stream`` (any form stream_handle() accepts)."""
        self._stream = stream_handle(stream)
        self._explicit_stream = True

    def _not_ready(self, what):
        if self._freed:
            raise InvalidStateError(f"FFT.{what}() was called after free(); create a new object")
        if self._executor is None:
            raise InvalidStateError(f"FFT.{what}() needs a plan: call plan() first")
        raise InvalidStateError("the operand was released; call reset_operand(new_operand) before execute()")

    def _check_direction(self, direction):
        sign = _sign(direction)
        kind = self._geom.fft_type
        if kind == "R2C" and sign != -1:
            raise ValueError("an R2C FFT is a forward transform; direction must be FFTDirection.FORWARD")
        if kind == "C2R" and sign != 1:
            raise ValueError("a C2R FFT is an inverse transform; direction must be FFTDirection.INVERSE")

    @requires_alive
    def reset_operand(self, operand=None, *, stream=None):
        """Point the plan at a new operand of the same package, device, shape, strides and dtype.
        ``None`` releases the current one (like release_operand())."""
        if operand is None:
            self._operand = None
            return
        op = wrap_operand(operand)
        if op.signature != self._signature:
            raise ValueError(self._mismatch(op))
        if self._options.inplace and op.readonly:
            raise ValueError("inplace=True needs a writeable operand, but this array is read-only")
        self._operand = op
        if stream is not None:
            self._use_stream(stream)

    @requires_alive
    def reset_operand_unchecked(self, operand, *, stream=None):
        """Like reset_operand() without the checks: for hot loops whose operands are known to match."""
        self._operand = operand if type(operand) is Operand else wrap_operand(operand)
        if stream is not None:
            self._use_stream(stream)

    @requires_alive
    def release_operand(self):
        """Drop the reference to the operand (so its memory can be freed); reset_operand() before the next
        execute()."""
        self._operand = None

    def _mismatch(self, op) -> str:
        names = ("package", "device", "shape", "strides", "dtype")
        diffs = [f"{n} {a} (planned: {b})" for n, a, b in zip(names, op.signature, self._signature) if a != b]
        return ("the new operand does not match the planned one: " + ", ".join(diffs) +
                "; create a new FFT object for it")

    def _release_executor(self):
        ex, self._executor = self._executor, None
        if ex is not None:
            ex.free()

    def _release(self):
        self._operand = None
        self._release_executor()

    @property
    def nbytes(self) -> int:
        """Bytes the plan holds (workspace and staging buffers)."""
        return self._executor.nbytes if self._executor is not None else 0
