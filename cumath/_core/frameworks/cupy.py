"""CuPy adapter (GPU memory, CuPy's memory pool and current stream)."""

from __future__ import annotations

import functools
import warnings

import cupy

from ..dtypes import ARRAY_DTYPES
from ..layout import element_strides, inverse_perm, is_identity
from ..operand import Operand

_NAMES = {cupy.dtype(n): n for n in ARRAY_DTYPES}


def wrap(x) -> Operand:
    dt = x.dtype
    name = _NAMES.get(dt)
    if name is None:
        raise TypeError(f"CuPy dtype {dt} is not supported")
    return Operand(x, x.data.ptr, x.shape, element_strides(x.strides, dt.itemsize), name, x.device.id, "cupy")


def current_stream(device_id: int) -> int:
    return cupy.cuda.get_current_stream(device_id).ptr


_get_device = cupy.cuda.runtime.getDevice


def empty(shape, dtype: str, device_id=0, perm=None):
    if dtype == "complex32":
        raise TypeError("CuPy has no complex32 dtype; use PyTorch's torch.complex32 for half-precision complex")
    if _get_device() != device_id:
        with cupy.cuda.Device(device_id):
            return empty(shape, dtype, device_id, perm)
    if is_identity(perm):
        return cupy.empty(shape, dtype=dtype)
    return cupy.empty([shape[p] for p in perm], dtype=dtype).transpose(inverse_perm(perm))


def copy_into(dst, src) -> None:
    with cupy.cuda.Device(dst.device.id):
        dst[...] = src


def pointer(x) -> int:
    return x.data.ptr


class _StreamRef:
    """A bare cudaStream_t presented through the CUDA stream protocol."""

    __slots__ = ("handle",)

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def stream_context(device_id: int, stream: int):
    """Make ``stream`` CuPy's current stream on ``device_id`` inside a ``with`` block."""
    from_external = getattr(cupy.cuda.Stream, "from_external", None)  # CuPy >= 14
    if from_external is not None:
        try:
            return from_external(_StreamRef(stream))
        except Exception:  # an older signature: fall back to ExternalStream
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(stream, device_id)


def empty_factory(shape, dtype: str, device_id=0, perm=None):
    """A zero-argument callable returning a new array like ``empty(...)``, as cheap as CuPy allows."""
    if dtype != "complex32" and is_identity(perm) and cupy.cuda.runtime.getDeviceCount() == 1:
        return functools.partial(cupy.empty, tuple(shape), cupy.dtype(dtype))
    return functools.partial(empty, shape, dtype, device_id, perm)
