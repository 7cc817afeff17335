"""Streams: accept an int handle, any ``__cuda_stream__`` object, a CuPy or a PyTorch stream."""

from __future__ import annotations

from . import cuda
from .operand import adapter

__all__ = ["stream_handle", "default_stream", "stream_key", "ordered"]


def stream_handle(stream) -> int:
    """The cudaStream_t of ``stream`` as an int."""
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int(proto()[1])
    for attr in ("ptr", "cuda_stream", "handle"):  # CuPy, PyTorch, cuda.core
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise TypeError(
        f"stream must be an int (cudaStream_t), an object with __cuda_stream__, a cupy.cuda.Stream or a "
        f"torch.cuda.Stream; got {type(stream).__name__}"
    )


_CURRENT: dict = {}  # package -> its adapter's current_stream, or None for host packages


def default_stream(package: str, device_id: int) -> int:
    """The current stream of the operand's package on ``device_id`` (the legacy default stream for host
    packages, whose operands are staged to the GPU)."""
    try:
        current = _CURRENT[package]
    except KeyError:
        current = _CURRENT[package] = getattr(adapter(package), "current_stream", None)
    return 0 if current is None else current(device_id)


def stream_key(stream, op):
    """The stream part of a plan-cache key for operand ``op``: the caller's stream handle, else the current stream
    of the operand's package when the operand is on a GPU, else None (host operands)."""
    if stream is not None:
        return stream_handle(stream)
    if op.device_id is not None:
        return default_stream(op.package, op.device_id)
    return None


def ordered(package: str, device_id, stream: int, explicit: bool, blocking: bool, fn, *args):
    """``fn(*args)`` ordered on ``stream`` for operands of ``package`` on ``device_id`` (None: host memory):
    inside the package's stream context when the caller named a stream other than the package's current one
    (so the package's own allocations and copies are ordered on it too), then a wait for the stream when
    ``blocking``."""
    if explicit and device_id is not None and stream != default_stream(package, device_id):
        with adapter(package).stream_context(device_id, stream):
            result = fn(*args)
    else:
        result = fn(*args)
    if blocking and device_id is not None:
        cuda.synchronize(stream)  # looked up per call (tests replace cuda.synchronize)
    return result
