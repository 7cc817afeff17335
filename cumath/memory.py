"""Device memory allocators (the public names; they live in ``cumath._core.allocators``, whose docstring says
how an allocator is chosen): ``memalloc(size) -> MemoryPointer``, optionally ``memalloc_async(size, stream)``."""

from __future__ import annotations

from ._core import allocators as _allocators
from ._core.allocators import (BaseCUDAMemoryManager, BaseCUDAMemoryManagerAsync, CudaRuntimeMemoryManager,  # noqa: F401
                               MemoryPointer, allocate, default_allocator)

__all__ = list(_allocators.__all__)  # the public names are those of the module that defines them
