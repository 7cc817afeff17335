"""cumath: NVIDIA's CUDA-X math libraries and the fastest CPU equivalents behind one Pythonic API.

Pass NumPy, CuPy or PyTorch arrays and get the same kind back; work runs on the CPU or a GPU. The API has
the shape of nvmath-python's, so ``import cumath as nvmath`` runs code written for it.
Importing cumath imports no optional framework and loads no native library.
"""

from typing import TYPE_CHECKING

from . import config, errors, memory
from ._core.execution import ExecutionCPU, ExecutionCUDA
from ._core.enums import ComputeType, CudaDataType, LibraryPropertyType
from .errors import CumathError, InvalidStateError, LibraryError, LibraryNotFoundError
from .memory import BaseCUDAMemoryManager, BaseCUDAMemoryManagerAsync, MemoryPointer

if TYPE_CHECKING:  # what the lazy __getattr__ below loads, visible to type checkers
    from . import device, fft, linalg, sparse, tensor

__version__ = "0.1.0"

__all__ = ["fft", "linalg", "sparse", "tensor", "device", "config", "errors", "memory", "ExecutionCPU", "ExecutionCUDA", "CumathError",
           "LibraryError", "LibraryNotFoundError", "InvalidStateError", "__version__", "CudaDataType", "ComputeType",
           "LibraryPropertyType", "BaseCUDAMemoryManager", "BaseCUDAMemoryManagerAsync", "MemoryPointer"]


def __getattr__(name: str) -> object:
    # Domains load on first use, so `import cumath` stays cheap.
    if name in ("fft", "linalg", "sparse", "tensor", "device"):
        import importlib

        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'cumath' has no attribute {name!r}")
