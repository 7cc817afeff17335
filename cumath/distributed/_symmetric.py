"""``allocate_symmetric_memory`` / ``free_symmetric_memory``: buffers of the same shape on every rank.

On GPU runs these are NVSHMEM symmetric-heap buffers (not in this version: see ``_gpu``). On CPU-only runs the
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
    """A buffer of ``shape`` and ``dtype`` on every rank (collective), of ``package`` (numpy or torch)."""
    ctx = require_context()
    name = package if isinstance(package, str) else getattr(package, "__name__", str(package))
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
    live = _registry(ctx).live
    for t in tensors:
        if id(t) not in live:
            raise ValueError("free_symmetric_memory: this array was not allocated by allocate_symmetric_memory "
                             "(or was freed already)")
        del live[id(t)]
