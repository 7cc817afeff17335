"""Stateless FFT functions: an FFT object, planned once and kept in the plan cache, executed per call."""

from __future__ import annotations

from .._core.cache import plan_cache
from .._core.operand import wrap_operand
from .._core.options import check_options
from .._core.execution import execution_key
from .._core.streams import stream_key
from ._callbacks import callback_key
from ._options import FFTDirection, FFTOptions
from ._planner import FFT

__all__ = ["fft", "ifft", "rfft", "irfft"]


def _run(fft_type, operand, axes, direction, options, execution, prolog, epilog, stream):
    op = wrap_operand(operand)
    if not plan_cache.enabled:
        with FFT(op, axes=axes, options=options, execution=execution, stream=stream, _fft_type=fft_type) as f:
            f.plan(prolog=prolog, epilog=epilog, direction=direction)
            return f.execute(direction=direction)
    if options is not None and type(options) is not FFTOptions:
        options = check_options(options, FFTOptions, "FFT options")
    skey = stream_key(stream, op)
    if prolog is not None:  # bytes or a DeviceCallable (hashable, equal by content and data pointer)
        prolog = callback_key(prolog)
    if epilog is not None:
        epilog = callback_key(epilog)
    key = (fft_type, op.package, op.device_id, op.shape, op.strides, op.dtype, op.readonly,
           axes if axes is None or type(axes) is tuple else _axes_key(axes), options,
           execution if type(execution) is not dict else execution_key(execution), skey, prolog, epilog)
    f = plan_cache.get(key)
    if f is None:
        f = FFT(op, axes=axes, options=options, execution=execution, stream=stream, _fft_type=fft_type)
        try:
            f.plan(prolog=prolog, epilog=epilog, direction=direction)
            result = f.execute(direction=direction)
        except BaseException:
            f.free()
            raise
        f._operand = None
        plan_cache.put(key, f, f.nbytes)  # after executing: put() may evict (and free) this very plan
        return result
    f._operand = op
    try:
        return f.execute(direction=direction)
    finally:
        f._operand = None


def _axes_key(axes) -> tuple:
    try:
        return tuple(axes)
    except TypeError:
        raise TypeError(f"axes must be a sequence of ints, not {type(axes).__name__}") from None


def fft(operand, axes=None, *, direction=None, options=None, execution=None, prolog=None, epilog=None,
        stream=None):
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
    return _run("C2C", operand, axes, direction, options, execution, prolog, epilog, stream)


def ifft(operand, axes=None, *, options=None, execution=None, prolog=None, epilog=None, stream=None):
    """N-D inverse complex-to-complex FFT, unnormalized (``numpy.fft.ifft(x) * n``)."""
    return _run("C2C", operand, axes, FFTDirection.INVERSE, options, execution, prolog, epilog, stream)


def rfft(operand, axes=None, *, options=None, execution=None, prolog=None, epilog=None, stream=None):
    """N-D real-to-complex FFT; the last of ``axes`` is halved to n//2+1 (``numpy.fft.rfftn``)."""
    return _run("R2C", operand, axes, None, options, execution, prolog, epilog, stream)


def irfft(operand, axes=None, *, options=None, execution=None, prolog=None, epilog=None, stream=None):
    """N-D complex-to-real inverse FFT, unnormalized; the last axis of the result has size 2*(m-1), or
    2*(m-1)+1 with ``options={'last_axis_parity': 'odd'}``. The operand is never overwritten."""
    return _run("C2R", operand, axes, FFTDirection.INVERSE, options, execution, prolog, epilog, stream)
