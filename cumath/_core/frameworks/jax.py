"""JAX adapter (``jax.Array`` on CPU and CUDA devices).

JAX arrays are immutable and their work is queued asynchronously on streams cumath cannot see, so:

- an operand is waited for (``block_until_ready``) when it is wrapped, read through its buffer address and
  marked read-only: in-place operations on JAX arrays are refused;
- a result is a new JAX array on the operand's device, made (and waited for) before cumath writes it, which
  nobody else can have seen yet; operations on JAX operands always wait for their GPU work before returning
  (``placement.SYNC_PACKAGES``), so JAX never reads a result that is still being written;
- results that a plan wants in another memory order than row-major (a column-major matrix of LAPACK or
  cuBLASLt) are JAX arrays with that memory layout (``jax.Format``), which JAX reads like any other;
- a tracer (an argument of a function under ``jax.jit``, ``jax.grad``, ``jax.vmap``) has no memory: calling
  cumath on one raises a TypeError that says to wrap the call in ``jax.pure_callback``.
"""

from __future__ import annotations

import functools
import logging
import math

import jax
import numpy as np

from ..dtypes import ARRAY_DTYPES
from ..layout import is_identity
from ..operand import Operand

logger = logging.getLogger(__name__)

_NAMES = {np.dtype(n): n for n in ARRAY_DTYPES}
_NAMES[np.dtype(jax.numpy.bfloat16)] = "bfloat16"  # an ml_dtypes type, registered with NumPy by JAX

_Tracer = jax.core.Tracer

TRACER_MESSAGE = (
    "{name} is a JAX tracer (an argument of a function being traced by jax.jit, jax.grad or jax.vmap), which "
    "has no memory cumath can read; call cumath outside the traced function, or from inside it through "
    "jax.pure_callback(lambda x: cumath.<function>(x), jax.ShapeDtypeStruct(shape, dtype), x) (the callback "
    "receives NumPy arrays on the host)"
)


def _device_id(x):
    devices = x.devices()
    if len(devices) != 1:
        raise ValueError(f"the JAX array is sharded over {len(devices)} devices; cumath takes arrays on one device "
                         f"(gather it with jax.device_put(x, jax.devices()[0]) or use cumath.distributed)")
    (dev,) = devices
    if dev.platform == "cpu":
        return None, dev
    if dev.platform in ("gpu", "cuda"):
        return dev.local_hardware_id if getattr(dev, "local_hardware_id", None) is not None else dev.id, dev
    raise TypeError(f"JAX arrays on {dev.platform} devices are not supported; use CPU or CUDA devices")


def _row_major(shape) -> tuple:
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= s
    return tuple(reversed(strides))


def wrap(x, name: str = "operand") -> Operand:
    if isinstance(x, _Tracer):
        raise TypeError(TRACER_MESSAGE.format(name=name))
    dt = x.dtype
    dname = _NAMES.get(dt)
    if dname is None:
        raise TypeError(f"JAX dtype {dt} is not supported")
    device_id, _ = _device_id(x)
    x.block_until_ready()
    shape = tuple(x.shape)
    ptr = x.unsafe_buffer_pointer() if math.prod(shape) else 0
    return Operand(x, ptr, shape, array_strides(x), dname, device_id, "jax", True)


def array_strides(x) -> tuple:
    """The element strides of a JAX array's memory (its ``format``'s layout; row-major without one). JAX arrays
    have no ``strides``: the staging copies (``_core/executors.py``) ask the adapter for them."""
    shape = tuple(x.shape)
    layout = getattr(getattr(x, "format", None), "layout", None)
    m2m = getattr(layout, "major_to_minor", None)
    if m2m is None or tuple(m2m) == tuple(range(len(shape))):
        return _row_major(shape)
    strides = [0] * len(shape)
    n = 1
    for axis in reversed(tuple(m2m)):
        strides[axis] = n
        n *= shape[axis]
    return tuple(strides)


_DEVICES: dict = {}


def _device(device_id):
    dev = _DEVICES.get(device_id)
    if dev is None:
        if device_id is None:
            dev = jax.devices("cpu")[0]
        else:
            gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda")]
            match = [d for d in gpus if getattr(d, "local_hardware_id", d.id) == device_id]
            if not match:
                raise ValueError(f"JAX sees no CUDA device {device_id} (its devices: {jax.devices()})")
            dev = match[0]
        _DEVICES[device_id] = dev
    return dev


def _jax_dtype(dtype: str):
    if dtype == "complex32":
        raise TypeError("JAX has no complex32 (half-precision complex) dtype; use PyTorch's torch.complex32")
    for dt, n in _NAMES.items():
        if n == dtype:
            return dt
    raise TypeError(f"JAX has no {dtype} dtype")


def _format(perm, dev):
    """A JAX Format placing an array's memory dense with axes ``perm`` from outermost to innermost."""
    try:
        from jax import Format, Layout
    except ImportError:  # JAX < 0.7
        from jax.experimental.layout import Format, Layout
    from jax.sharding import SingleDeviceSharding

    return Format(Layout(major_to_minor=tuple(perm)), SingleDeviceSharding(dev))


def empty(shape, dtype: str, device_id=None, perm=None):
    """A new JAX array on the device (dense with axes ``perm`` from outermost to innermost: a JAX array with that
    memory layout), its buffer ready and seen by nobody else, for cumath to write."""
    dev = _device(device_id)
    shape = tuple(shape)
    if device_id is None:  # host: a NumPy buffer handed to JAX (fresh memory either way)
        src = np.empty(shape, _jax_dtype(dtype))
    else:
        src = jax.numpy.empty(shape, _jax_dtype(dtype), device=dev)
    arr = jax.device_put(src, dev if is_identity(perm) else _format(perm, dev))
    arr.block_until_ready()
    return arr


def empty_factory(shape, dtype: str, device_id=None, perm=None):
    """A zero-argument callable returning a new array like ``empty(...)``."""
    return functools.partial(empty, tuple(shape), dtype, device_id, None if is_identity(perm) else tuple(perm))


def pointer(x) -> int:
    return x.unsafe_buffer_pointer() if x.size else 0


def copy_into(dst, src) -> None:
    """Copy ``src`` (an array of the same shape on the same device, any package) into the new result ``dst``."""
    from .. import cuda

    op = wrap(dst, "result")
    if op.device_id is None:
        from .numpy import from_pointer

        src_view = src if isinstance(src, np.ndarray) else np.asarray(src)
        np.copyto(from_pointer(op.ptr, op.shape, op.strides, op.dtype), src_view)
        return
    # on the GPU: JAX relayouts ``src`` into dst's format, then one device-to-device copy
    staged = jax.device_put(jax.numpy.asarray(src, dtype=dst.dtype), dst.format).block_until_ready()
    nbytes = op.size * op.itemsize
    if nbytes:
        cuda.copy(op.ptr, staged.unsafe_buffer_pointer(), nbytes, cuda.D2D, 0, "JAX result")
        cuda.synchronize(0)


def current_stream(device_id: int) -> int:
    """JAX does not expose its streams: cumath works on the legacy default stream and waits for its work before
    returning (JAX operands are waited for when wrapped)."""
    return 0


class _NoStreamContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def stream_context(device_id: int, stream: int):
    """JAX has no current stream to set: a caller's stream orders cumath's own work only."""
    return _NoStreamContext()


def finite_per_system(x, count: int):
    """One bool per system of ``x`` (a NumPy array on the host): all entries finite."""
    import numpy as np

    return np.asarray(jax.numpy.isfinite(x).reshape(count, -1).all(axis=1))
