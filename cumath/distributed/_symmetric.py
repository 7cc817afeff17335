"""``allocate_symmetric_memory`` / ``free_symmetric_memory``: buffers of the same shape on every rank.

On GPU runs (``initialize`` with a ``device_id``) these are NVSHMEM symmetric-heap buffers (``nvshmem_malloc``:
the same number of bytes on every rank; ``make_symmetric=True`` lets the ranks ask for different shapes and
allocates the largest everywhere), given as CuPy arrays or PyTorch CUDA tensors over the buffer
(``package`` cupy or torch). On CPU-only runs the
"symmetric" buffer is a host array of the requested shape on each rank (MPI needs nothing more); the calls are
collective all the same (every rank allocates and frees in the same order, checked), so code written for GPUs
runs unchanged. Buffers still allocated at ``finalize()`` are reported as a leak (one warning with the count
and bytes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import math
import warnings

import numpy as np

from ._context import require_context

if TYPE_CHECKING:
    from types import ModuleType
    from collections.abc import Sequence
    from typing import Any
    from .._core.typing import AnyTensor, DTypeLike

__all__ = ["allocate_symmetric_memory", "free_symmetric_memory"]

logger = logging.getLogger(__name__)


class _Registry:
    def __init__(self):
        self.live = {}

    def release(self, _):
        if self.live:
            n = sum(a.nbytes for a in self.live.values())
            warnings.warn(f"cumath.distributed.finalize(): {len(self.live)} symmetric buffer(s) ({n} bytes) were "
                          "never freed; call free_symmetric_memory() on each before finalize()", ResourceWarning,
                          stacklevel=3)
        self.live.clear()


def _registry(ctx) -> _Registry:
    return ctx.resource("symmetric", _Registry, lambda r: r.release(r))


def allocate_symmetric_memory(shape: int | Sequence[int], package: str | ModuleType, *, dtype: DTypeLike = None,
                              axis_order: str = "C", make_symmetric: bool = False,
                              logger: logging.Logger | None = None) -> Any:
    """A buffer of ``shape`` and ``dtype`` on every rank (collective), of ``package``: numpy or torch on CPU runs,
    cupy or torch (CUDA tensors) on GPU runs."""
    ctx = require_context()
    name = package if isinstance(package, str) else getattr(package, "__name__", str(package))
    if ctx.device_id is not None:
        return _allocate_gpu(ctx, shape, name, dtype, axis_order, make_symmetric)
    if name not in ("numpy", "torch"):
        raise ValueError(f"allocate_symmetric_memory: package must be numpy or torch on CPU runs, got {name!r}")
    if axis_order not in ("C", "F"):
        raise ValueError(f"axis_order={axis_order!r}; the allowed values are 'C', 'F'")
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    dtype = np.dtype(dtype if dtype is not None else np.float32)
    ctx.process_group.agree("allocate_symmetric_memory", dtype=dtype.str,
                            shape=None if make_symmetric else None, ndim=len(shape))
    arr = np.empty(shape, dtype=dtype, order=axis_order)
    _registry(ctx).live[id(arr)] = arr
    logging.getLogger(__name__).debug("symmetric buffer %s %s (%d bytes)", shape, dtype, math.prod(shape) * dtype.itemsize)
    if name == "torch":
        import torch

        t = torch.from_numpy(arr)
        _registry(ctx).live[id(t)] = _registry(ctx).live.pop(id(arr))
        return t
    return arr


def free_symmetric_memory(*tensors: AnyTensor) -> None:
    """Free buffers made by ``allocate_symmetric_memory`` (collective); ValueError for any other array."""
    ctx = require_context()
    ctx.process_group.agree("free_symmetric_memory", count=len(tensors))
    if ctx.device_id is not None:
        from ._nvshmem import bring_up_nvshmem

        state = bring_up_nvshmem(ctx)
        for t in tensors:
            state.free(_device_pointer(t))
        return
    live = _registry(ctx).live
    for t in tensors:
        if id(t) not in live:
            raise ValueError("free_symmetric_memory: this array was not allocated by allocate_symmetric_memory "
                             "(or was freed already)")
        del live[id(t)]


def _device_pointer(t) -> int:
    if hasattr(t, "data_ptr") and callable(t.data_ptr):  # torch
        return int(t.data_ptr())
    data = getattr(t, "data", None)
    if hasattr(data, "ptr"):  # cupy
        return int(data.ptr)
    raise ValueError(f"free_symmetric_memory: expected a CuPy array or a PyTorch CUDA tensor from "
                     f"allocate_symmetric_memory, got {type(t).__name__}")


def _allocate_gpu(ctx, shape, name, dtype, axis_order, make_symmetric):
    from ._nvshmem import bring_up_nvshmem

    if name not in ("cupy", "torch"):
        raise ValueError(f"allocate_symmetric_memory: package must be cupy or torch on GPU runs, got {name!r}")
    if axis_order not in ("C", "F"):
        raise ValueError(f"axis_order={axis_order!r}; the allowed values are 'C', 'F'")
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    if dtype is not None and not isinstance(dtype, (str, np.dtype, type)):
        dtype = str(dtype).replace("torch.", "")  # a torch dtype
    dtype = np.dtype(dtype if dtype is not None else np.float32)
    nbytes = math.prod(shape) * dtype.itemsize
    group = ctx.process_group
    group.agree("allocate_symmetric_memory", dtype=dtype.str, ndim=len(shape), make_symmetric=bool(make_symmetric))
    sizes = group.allgather(nbytes)
    if len(set(sizes)) > 1 and not make_symmetric:
        raise ValueError(f"allocate_symmetric_memory: the ranks ask for different sizes ({sorted(set(sizes))} "
                         "bytes); symmetric buffers are the same size on every rank: pass make_symmetric=True to "
                         "allocate the largest on all of them")
    state = bring_up_nvshmem(ctx)
    ptr = state.malloc(max(sizes))
    logging.getLogger(__name__).debug("symmetric GPU buffer %s %s (%d bytes, %d allocated)", shape, dtype, nbytes,
                                      max(sizes))
    return state.array(ptr, shape, dtype, name, axis_order)
