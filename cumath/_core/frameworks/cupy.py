"""CuPy adapter (GPU memory, CuPy's memory pool and current stream)."""

from __future__ import annotations

import functools
import sys
import warnings

import cupy

from ..dtypes import ARRAY_DTYPES
from ..layout import element_strides, inverse_perm, is_identity
from ..allocators import MemoryPointer
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


_rc = sys.getrefcount


def recycle_snapshot(e):
    """What must stay unchanged for the result ``e[0]`` to be reused (``_core/recycle.py``): CuPy views share the
    array's Memory object and hold the array (or its owner) as their base."""
    x = e[0]
    base = x.base
    return (_rc(x), (0 if base is None else _rc(base)), _rc(x.data), _rc(x.data.mem), x.shape, x.strides,
            x.dtype)


class CupyMemoryManager:
    """CuPy's memory pool as a cumath allocator (``memalloc``) on one GPU."""

    def __init__(self, device_id: int):
        self.device_id = device_id

    def memalloc(self, size: int):
        with cupy.cuda.Device(self.device_id):
            mem = cupy.cuda.alloc(size)
        return MemoryPointer(mem.ptr, size, mem.mem.free if hasattr(mem.mem, "free") else (lambda: mem))


memory_manager = CupyMemoryManager  # the default allocator of this package's operands (cumath.memory.default_allocator)


def finite_per_system(x, count: int):
    """One bool per system of ``x`` (a NumPy array on the host): all entries finite."""
    return cupy.isfinite(x).reshape(count, -1).all(axis=1).get()
