"""Device memory allocators: a small protocol and the default implementations (``cumath.memory`` shows them).

An allocator is any object with ``memalloc(size) -> MemoryPointer`` (the nvmath-python shape); one that
also has ``memalloc_async(size, stream)`` gets stream-ordered allocations. The default allocator follows the
operand's package (CuPy's pool, PyTorch's caching allocator), and for host operands executed on the GPU
it is the CUDA runtime's stream-ordered pool (``cudaMallocAsync``), so no CuPy is needed.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .operand import adapter

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "MemoryPointer",
    "BaseCUDAMemoryManager",
    "BaseCUDAMemoryManagerAsync",
    "CudaRuntimeMemoryManager",
    "default_allocator",
    "allocate",
]

logger = logging.getLogger(__name__)


class MemoryPointer:
    """An owned device allocation: ``device_ptr``, ``size``; ``free()`` is idempotent and also runs when the
    object is collected."""

    __slots__ = ("device_ptr", "size", "_finalizer", "__weakref__")

    def __init__(self, device_ptr: int, size: int, finalizer: Callable[[], None] = None) -> None:
        self.device_ptr = int(device_ptr)
        self.size = int(size)
        self._finalizer = weakref.finalize(self, finalizer) if finalizer is not None else None

    def free(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


@runtime_checkable
class BaseCUDAMemoryManager(Protocol):
    def memalloc(self, size: int) -> MemoryPointer: ...


@runtime_checkable
class BaseCUDAMemoryManagerAsync(Protocol):
    def memalloc_async(self, size: int, stream: int) -> MemoryPointer: ...


class CudaRuntimeMemoryManager:
    """Stream-ordered allocations from the device's default memory pool (cudaMallocAsync/cudaFreeAsync)."""

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = device_id

    def memalloc_async(self, size: int, stream: int) -> MemoryPointer:
        from .._bindings import cudart
        from .cuda import set_device

        set_device(self.device_id)
        ptr = cudart.cudaMallocAsync(size, stream) if size else 0
        return MemoryPointer(ptr, size, (lambda: cudart.cudaFreeAsync(ptr, stream)) if ptr else None)

    def memalloc(self, size: int) -> MemoryPointer:
        return self.memalloc_async(size, 0)


def default_allocator(package: str, device_id: int) -> Any:
    """The allocator cumath uses for an operand of ``package`` on GPU ``device_id``: the package's own pool where
    its adapter offers one (``memory_manager``), else the CUDA runtime's stream-ordered pool."""
    manager = getattr(adapter(package), "memory_manager", None)
    return manager(device_id) if manager is not None else CudaRuntimeMemoryManager(device_id)


def allocate(allocator: Any, size: int, stream: int) -> MemoryPointer:
    """Allocate ``size`` bytes with ``allocator``, stream-ordered where it can be."""
    if hasattr(allocator, "memalloc_async"):
        return allocator.memalloc_async(size, stream)
    if hasattr(allocator, "memalloc"):
        return allocator.memalloc(size)
    raise TypeError(
        f"allocator {type(allocator).__name__} has neither memalloc(size) nor memalloc_async(size, stream)"
    )
