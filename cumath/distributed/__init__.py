"""Distributed FFT, matrix product and direct solver over many processes: GPUs (cuFFTMp, cuBLASMp, cuSOLVERMp
over NVSHMEM and NCCL) and CPU-only clusters (per-rank FFT plans with MPI all-to-all transposes, MKL ScaLAPACK).
The shape of nvmath-python's ``nvmath.distributed``.

``import cumath.distributed`` imports no MPI, no framework and loads no library: mpi4py is imported by
``initialize`` (or when a communicator is wrapped), the native libraries by the first operation that needs them.
Submodules ``fft``, ``linalg`` and ``distribution`` are imported on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._context import DistributedContext, finalize, get_context, initialize
from ._group import MPIProcessGroup, ProcessGroup, TorchProcessGroup

if TYPE_CHECKING:  # imported on first access by __getattr__ below
    from . import distribution, fft, linalg
    from ._redistribute_op import Redistribute, redistribute
    from ._symmetric import allocate_symmetric_memory, free_symmetric_memory

__all__ = ["initialize", "finalize", "get_context", "DistributedContext", "ProcessGroup", "MPIProcessGroup",
           "TorchProcessGroup", "Redistribute", "redistribute", "allocate_symmetric_memory",
           "free_symmetric_memory", "distribution", "fft", "linalg"]

_LAZY = {"Redistribute": "._redistribute_op", "redistribute": "._redistribute_op",
         "allocate_symmetric_memory": "._symmetric", "free_symmetric_memory": "._symmetric"}


def __getattr__(name: str) -> object:
    if name in ("distribution", "fft", "linalg"):
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'cumath.distributed' has no attribute {name!r}")
