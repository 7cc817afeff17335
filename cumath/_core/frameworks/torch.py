"""PyTorch adapter (CPU and CUDA tensors; PyTorch's caching allocator and current stream)."""

from __future__ import annotations

import functools
import logging
import sys

import torch

from ..layout import inverse_perm, is_identity
from ..allocators import MemoryPointer
from ..operand import Operand

logger = logging.getLogger(__name__)

_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
          torch.float64: "float64", torch.complex32: "complex32", torch.complex64: "complex64",
          torch.complex128: "complex128", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
          torch.int64: "int64", torch.uint8: "uint8", torch.bool: "bool"}
for _name in ("float8_e4m3fn", "float8_e5m2"):  # PyTorch >= 2.1
    if hasattr(torch, _name):
        _NAMES[getattr(torch, _name)] = _name
_DTYPES = {v: k for k, v in _NAMES.items()}
_DEVICES: dict = {}

try:
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - older PyTorch
    _raw_stream = None


def wrap(x) -> Operand:
    name = _NAMES.get(x.dtype)
    if name is None:
        raise TypeError(f"PyTorch dtype {x.dtype} is not supported")
    if x.is_conj() or x.is_neg():
        logger.info("resolving the lazy conjugation/negation of a %s tensor (one copy)", name)
        x = x.resolve_conj().resolve_neg()
    if x.is_cuda:
        device_id = x.get_device()
    elif x.is_cpu:
        device_id = None
    else:
        raise TypeError(f"PyTorch tensors on {x.device.type} are not supported; use CPU or CUDA tensors")
    return Operand(x, x.data_ptr(), x.shape, x.stride(), name, device_id, "torch")  # torch.Size is a tuple


def current_stream(device_id: int) -> int:
    if _raw_stream is not None:
        return _raw_stream(device_id)
    return torch.cuda.current_stream(device_id).cuda_stream


def _device(device_id):
    dev = _DEVICES.get(device_id)
    if dev is None:
        dev = _DEVICES[device_id] = torch.device("cpu" if device_id is None else f"cuda:{device_id}")
    return dev


def empty(shape, dtype: str, device_id=None, perm=None):
    dev = _device(device_id)
    if is_identity(perm):
        return torch.empty(shape, dtype=_DTYPES[dtype], device=dev)
    return torch.empty([shape[p] for p in perm], dtype=_DTYPES[dtype], device=dev).permute(inverse_perm(perm))


def copy_into(dst, src) -> None:
    dst.copy_(src)


def pointer(x) -> int:
    return x.data_ptr()


def stream_context(device_id: int, stream: int):
    """Make ``stream`` PyTorch's current stream on ``device_id`` inside a ``with`` block."""
    return torch.cuda.stream(torch.cuda.ExternalStream(stream, device=_device(device_id)))


def permuted_strides(shape, perm) -> tuple:
    """The element strides of ``empty(shape, perm=perm)``: dense in the memory order ``perm`` (outermost first),
    extents of 0 counted as 1 as PyTorch counts them."""
    strides, step = [0] * len(shape), 1
    for axis in reversed(perm):
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def empty_factory(shape, dtype: str, device_id=None, perm=None):
    """A zero-argument callable returning a new tensor like ``empty(...)``, as cheap as PyTorch allows: the sizes
    as positional ints (PyTorch parses them faster than one tuple: 0.83 against 1.19 us a call for a CPU 64 x 64,
    benchmarks/NOTES.md "Small matmuls"), one ``empty_strided`` for a permuted memory order instead of
    ``empty`` and ``permute``."""
    dt, dev = _DTYPES[dtype], _device(device_id)
    if is_identity(perm):
        if len(shape):
            return functools.partial(torch.empty, *shape, dtype=dt, device=dev)
        return functools.partial(torch.empty, (), dtype=dt, device=dev)
    return functools.partial(torch.empty_strided, tuple(shape), permuted_strides(tuple(shape), tuple(perm)), dtype=dt,
                             device=dev)


_rc = sys.getrefcount
_storage_count = getattr(torch._C, "_storage_Use_Count", None)


if _storage_count is not None and getattr(torch.Tensor, "_use_count", None) is not None:
    def recycle_snapshot(e):
        """What must stay unchanged for the result ``e[0]`` to be reused (``_core/recycle.py``): Python references;
        references to the TensorImpl (views' bases, autograd, DLPack capsules); to the storage (views, set_(),
        NumPy arrays over CPU storage) and to its Python object; the metadata."""
        x = e[0]
        s = x.untyped_storage()
        return (_rc(x), x._use_count(), _storage_count(s._cdata), _rc(s), x.data_ptr(), x.stride(), x.shape,
                x.dtype, x.requires_grad)
# else: no way to see references held in C++, so results are never reused


class TorchMemoryManager:
    """PyTorch's caching allocator as a cumath allocator (stream-ordered ``memalloc_async``) on one GPU."""

    def __init__(self, device_id: int):
        self.device_id = device_id

    def memalloc_async(self, size: int, stream: int):
        ptr = torch.cuda.caching_allocator_alloc(size, self.device_id, stream) if size else 0
        return MemoryPointer(ptr, size, (lambda: torch.cuda.caching_allocator_delete(ptr)) if ptr else None)

    def memalloc(self, size: int):
        return self.memalloc_async(size, torch.cuda.current_stream(self.device_id).cuda_stream)


memory_manager = TorchMemoryManager  # the default allocator of this package's operands (cumath.memory.default_allocator)


def finite_per_system(x, count: int):
    """One bool per system of ``x`` (a NumPy array on the host): all entries finite."""
    return torch.isfinite(x).reshape(count, -1).all(dim=1).cpu().numpy()
