"""Device memory allocators: a small protocol and the default implementations.

An allocator is any object with ``memalloc(size) -> MemoryPointer`` (the nvmath-python shape); one that
also has ``memalloc_async(size, stream)`` gets stream-ordered allocations. The default allocator follows the
operand's package (CuPy's pool, PyTorch's caching allocator), and for host operands executed on the GPU
it is the CUDA runtime's stream-ordered pool (``cudaMallocAsync``), so no CuPy is needed.
"""

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
