"""NumPy adapter (host memory)."""

from __future__ import annotations

import ctypes
import functools
import platform
import sys

import numpy as np

from .._fast import numpy_fields_reader
from ..dtypes import ARRAY_DTYPES
from ..layout import element_strides, inverse_perm, is_identity
from ..operand import Operand

_NAMES = {np.dtype(n): n for n in ARRAY_DTYPES}
# (pointer, shape, element strides, readonly) in one call where the compiled hot path is built (checked on live
# arrays first); the attribute reads below otherwise
_FIELDS = numpy_fields_reader()


def wrap(x) -> Operand:
    dt = x.dtype
    name = _NAMES.get(dt)
    if name is None:
        raise TypeError(f"NumPy dtype {dt} is not supported")
    if _FIELDS is not None and isinstance(x, np.ndarray):  # one compiled read of the array struct
        got = _FIELDS(x, dt.itemsize)
        if got is not None:
            return Operand(x, got[0], got[1], got[2], name, None, "numpy", got[3])
    if isinstance(x, np.generic):
        # a NumPy scalar is not an array: its "data" attribute is no address to read (the value's bits would be
        # taken as one); it is read as a 0-d array of its own, which nothing may write into
        x = np.array(x)
        x.flags.writeable = False
    return Operand(x, pointer(x), x.shape, element_strides(x.strides, dt.itemsize), name, None, "numpy",
                   not x.flags.writeable)


def empty(shape, dtype: str, device_id=None, perm=None):
    if dtype == "complex32":
        raise TypeError("NumPy has no complex32 (half-precision complex) dtype; use CuPy or PyTorch on the GPU")
    if is_identity(perm):
        return np.empty(shape, dtype=dtype)
    return np.empty([shape[p] for p in perm], dtype=dtype).transpose(inverse_perm(perm))


def copy_into(dst, src) -> None:
    np.copyto(dst, src)


def _data_offset():
    """Offset of the data pointer in NumPy's array struct (``PyArrayObject_fields.data``, right after the
    object header), found and checked on two live arrays; None where ``id()`` is not an address."""
    if platform.python_implementation() != "CPython":
        return None
    probe = np.empty(4)
    for offset in range(8, 81, 8):
        if ctypes.c_void_p.from_address(id(probe) + offset).value == probe.__array_interface__["data"][0]:
            view = probe[1:]
            if ctypes.c_void_p.from_address(id(view) + offset).value == view.__array_interface__["data"][0]:
                return offset
    return None


_DATA_OFFSET = _data_offset()

if _DATA_OFFSET is not None:
    _voidp_at = ctypes.c_void_p.from_address

    def pointer(x) -> int:
        """The address of a NumPy array's first element (read from the array struct: ~0.15 us, where
        ``__array_interface__`` takes ~1 us)."""
        return _voidp_at(id(x) + _DATA_OFFSET).value or 0

else:  # pragma: no cover - other Python implementations

    def pointer(x) -> int:
        return x.__array_interface__["data"][0]


def view(op: Operand):
    """A NumPy view of a host operand from any package (e.g. a PyTorch CPU tensor)."""
    if op.package == "numpy":
        return op.obj
    # through the address, not np.asarray(): that fails on PyTorch tensors that require grad
    return from_pointer(op.ptr, op.shape, op.strides, op.dtype)


def from_pointer(ptr: int, shape, strides, dtype: str):
    """A NumPy array over host memory at ``ptr`` (strides in elements); the caller keeps the memory alive."""
    dt = np.dtype(dtype)
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    span = (hi - lo + 1) * dt.itemsize
    import ctypes

    buf = (ctypes.c_char * span).from_address(ptr + lo * dt.itemsize)
    base = np.frombuffer(buf, dtype=dt)
    return np.lib.stride_tricks.as_strided(base[-lo:] if lo else base, shape=shape,
                                           strides=[s * dt.itemsize for s in strides])


def empty_factory(shape, dtype: str, device_id=None, perm=None):
    """A zero-argument callable returning a new array like ``empty(...)``, as cheap as the package allows."""
    if dtype != "complex32" and is_identity(perm):
        return functools.partial(np.empty, tuple(shape), np.dtype(dtype))
    return functools.partial(empty, shape, dtype, device_id, perm)


def aligned_empty(shape, dtype, align: int = 64):
    """An empty NumPy array whose data starts on an ``align``-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes].view(dtype).reshape(shape)


def strided_empty(shape, strides, dtype: str, align: int = 64):
    """``(array, pointer)``: a new host array with element ``strides`` (any signs, as an operand's), its first
    element on an ``align``-byte boundary."""
    dt = np.dtype(dtype)
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    raw = np.empty((hi - lo + 1) * dt.itemsize + align, np.uint8)
    first = raw.ctypes.data + (-raw.ctypes.data) % align
    ptr = first - lo * dt.itemsize
    off = first - raw.ctypes.data
    base = raw[off:off + (hi - lo + 1) * dt.itemsize].view(dt)
    arr = np.lib.stride_tricks.as_strided(base[-lo:] if lo else base, shape=tuple(shape),
                                          strides=[s * dt.itemsize for s in strides], writeable=True)
    return arr, ptr


_rc = sys.getrefcount


def recycle_snapshot(e):
    """What must stay unchanged for the result ``e[0]`` to be reused (``_core/recycle.py``): the references to it
    and to the owner of its memory (a view of a transposed or sliced result refers to the owner, not to the
    result), its shape, strides and dtype."""
    x = e[0]
    base = x.base
    return _rc(x), (0 if base is None else _rc(base)), x.shape, x.strides, x.dtype


def finite_per_system(x, count: int):
    """One bool per system of ``x`` (its ``count`` leading batch entries, the rest flattened): all entries finite."""
    import numpy as np

    return np.isfinite(np.asarray(x)).reshape(count, -1).all(axis=1)
