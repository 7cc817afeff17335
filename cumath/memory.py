"""Device memory allocators (the public names; they live in ``cumath._core.allocators``, whose docstring says
how an allocator is chosen): ``memalloc(size) -> MemoryPointer``, optionally ``memalloc_async(size, stream)``."""

from __future__ import annotations

from ._core.allocators import (BaseCUDAMemoryManager, BaseCUDAMemoryManagerAsync, CudaRuntimeMemoryManager,
                               MemoryPointer, allocate, default_allocator)

__all__ = [
    "MemoryPointer",
    "BaseCUDAMemoryManager",
    "BaseCUDAMemoryManagerAsync",
    "CudaRuntimeMemoryManager",
    "default_allocator",
    "allocate",
]
