"""Stateless FFT functions: an FFT object, planned once and kept in the plan cache, executed per call.

Each function is ``cached_call(key, make, operands)``: on a hit, the Python frames between the public call and
FFTW's (or cuFFT's) execute function are the function, ``cached_call``, ``FFT.execute`` and the executor.

With the compiled extension, a call on a NumPy array (exactly ``numpy.ndarray``), a CUDA ``torch.Tensor`` or a
``cupy.ndarray`` with every optional argument left at its default is first offered to ``hot_fft``: one C call that
builds the operand's key, finds the cached plan, allocates the result and runs the engine, or returns None for
anything it cannot serve as the Python path would (no plan yet, an unaligned operand, results reused, a GPU plan
not bound to the current stream yet, the cache disabled, a profiler attached). After a call
the Python path served, ``hot_remember`` lets the compiled path serve the next ones of its key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from functools import partial

from .._core.execution import execution_key
from .._core.operand import wrap_operand
from .._core.options import check_options
from .._core._fast import hot_fft as _hot
from .._core.plan_cache import cached_call, hot_remember
from .._core.streams import stream_key
from ._callbacks import callback_key
from ._options import FFTDirection, FFTOptions
from ._planner import FFT
from ._traits import check_axes

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any
    from .._core.typing import AnyTensor, ExecutionLike, StreamLike
    from ._callbacks import DeviceCallable

__all__ = ["fft", "ifft", "rfft", "irfft"]

_INVERSE = FFTDirection.INVERSE
_C2C, _R2C = 0, 1  # the compiled path's codes of the keys' kinds (the rest of such a key is all defaults)


def _remember(kind, operand, key, axes, options, execution, stream, prolog, epilog):
    """After a call the Python path served: let the compiled path serve the next ones of ``key`` where this
    call's arguments were all defaults (the key is then the array's fields and ``kind``)."""
    if (axes is None and options is None and execution is None and stream is None and prolog is None
            and epilog is None):
        hot_remember(key, operand, kind)


def _key(fft_type, op, axes, options, execution, stream, prolog, epilog) -> tuple:
    """The plan-cache key of a call: everything its plan depends on, built from what is at hand."""
    return (FFT, fft_type, op.package, op.device_id, op.shape, op.strides, op.dtype, op.readonly,
            axes if axes is None or type(axes) is tuple else _axes_key(axes),
            options if options is None or type(options) is FFTOptions else check_options(options, FFTOptions,
                                                                                          "FFT options"),
            execution if type(execution) is not dict else execution_key(execution),
            None if stream is None and op.device_id is None else stream_key(stream, op),
            # bytes or a DeviceCallable (hashable, equal by content and data pointer)
            None if prolog is None else callback_key(prolog), None if epilog is None else callback_key(epilog))


def _axes_key(axes) -> tuple:
    return check_axes(axes)  # a generator is not consumed by the key, floats and strings are refused


def _planned(fft_type, op, axes, direction, options, execution, stream, prolog, epilog) -> FFT:
    """A new FFT of the call, planned (a miss of the plan cache); freed if planning fails."""
    f = FFT._of_type(fft_type, op, axes, options, execution, stream)
    try:
        f.plan(prolog=prolog, epilog=epilog, direction=direction)
    except BaseException:
        f.free()
        raise
    return f


def fft(operand: AnyTensor, axes: Sequence[int] | None = None, *, direction: FFTDirection | str | None = None,
        options: FFTOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
        prolog: DeviceCallable | bytes | Mapping[str, Any] | None = None,
        epilog: DeviceCallable | bytes | Mapping[str, Any] | None = None, stream: StreamLike = None) -> AnyTensor:
    """N-D complex-to-complex FFT (forward by default; unnormalized), over ``axes`` (at most 3; default all).

    ``operand``: a complex NumPy/CuPy/PyTorch array (or any DLPack / array-interface producer). The result
    is an array of the same package on the same device. ``execution`` ('cpu', 'cuda', ExecutionCPU(...),
    ExecutionCUDA(...)) overrides where it runs. Plans are cached (``cumath.config.plan_cache``), callbacks
    included: a repeated call with the same callback (same LTO-IR and user data pointer) reuses its plan.
    ``prolog``/``epilog``: callbacks fused into cuFFT (GPU execution; see :meth:`FFT.plan`,
    :func:`compile_prolog`, :func:`compile_epilog`).

    >>> import numpy as np, cumath
    >>> x = np.exp(2j * np.pi * np.arange(8) / 8)
    >>> np.allclose(cumath.fft.fft(x), np.fft.fft(x))
    True
    """
    if _hot is not None:
        result = _hot(operand, _C2C, -1, axes, direction, options, execution, prolog, epilog, stream)
        if result is not None:
            return result
    op = wrap_operand(operand)
    make = partial(_planned, "C2C", op, axes, direction, options, execution, stream, prolog, epilog)
    key = _key("C2C", op, axes, options, execution, stream, prolog, epilog)
    if direction is None:  # no keyword arguments to pass on: the common call is cheaper
        result = cached_call(key, make, {"operand": op})
        if _hot is not None:
            _remember(_C2C, operand, key, axes, options, execution, stream, prolog, epilog)
        return result
    return cached_call(key, make, {"operand": op}, direction=direction)


def ifft(operand: AnyTensor, axes: Sequence[int] | None = None, *,
         options: FFTOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
         prolog: DeviceCallable | bytes | Mapping[str, Any] | None = None,
         epilog: DeviceCallable | bytes | Mapping[str, Any] | None = None, stream: StreamLike = None) -> AnyTensor:
    """N-D inverse complex-to-complex FFT, unnormalized (``numpy.fft.ifft(x) * n``)."""
    if _hot is not None:
        result = _hot(operand, _C2C, 1, axes, options, execution, prolog, epilog, stream)
        if result is not None:
            return result
    op = wrap_operand(operand)
    key = _key("C2C", op, axes, options, execution, stream, prolog, epilog)
    result = cached_call(key, partial(_planned, "C2C", op, axes, _INVERSE, options, execution, stream, prolog,
                                      epilog), {"operand": op}, direction=_INVERSE)
    if _hot is not None:
        _remember(_C2C, operand, key, axes, options, execution, stream, prolog, epilog)
    return result


def rfft(operand: AnyTensor, axes: Sequence[int] | None = None, *,
         options: FFTOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
         prolog: DeviceCallable | bytes | Mapping[str, Any] | None = None,
         epilog: DeviceCallable | bytes | Mapping[str, Any] | None = None, stream: StreamLike = None) -> AnyTensor:
    """N-D real-to-complex FFT; the last of ``axes`` is halved to n//2+1 (``numpy.fft.rfftn``)."""
    if _hot is not None:
        result = _hot(operand, _R2C, -1, axes, options, execution, prolog, epilog, stream)
        if result is not None:
            return result
    op = wrap_operand(operand)
    key = _key("R2C", op, axes, options, execution, stream, prolog, epilog)
    result = cached_call(key, partial(_planned, "R2C", op, axes, None, options, execution, stream, prolog, epilog),
                         {"operand": op})
    if _hot is not None:
        _remember(_R2C, operand, key, axes, options, execution, stream, prolog, epilog)
    return result


def irfft(operand: AnyTensor, axes: Sequence[int] | None = None, *,
          options: FFTOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
          prolog: DeviceCallable | bytes | Mapping[str, Any] | None = None,
          epilog: DeviceCallable | bytes | Mapping[str, Any] | None = None, stream: StreamLike = None) -> AnyTensor:
    """N-D complex-to-real inverse FFT, unnormalized; the last axis of the result has size 2*(m-1), or
    2*(m-1)+1 with ``options={'last_axis_parity': 'odd'}``. The operand is never overwritten."""
    op = wrap_operand(operand)
    return cached_call(_key("C2R", op, axes, options, execution, stream, prolog, epilog),
                       partial(_planned, "C2R", op, axes, None, options, execution, stream, prolog, epilog),
                       {"operand": op})  # C2R's only direction, the inverse, is its default
