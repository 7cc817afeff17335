"""Small CUDA runtime helpers used by the layers above: devices, copies, events, synchronisation."""

from __future__ import annotations

import logging

from .._bindings import cudart
from ..errors import CUDAUnavailableError
from . import nvtx
from .logging import format_bytes

__all__ = ["device_count", "require_device", "copy", "memset", "synchronize", "set_device", "pinned_word"]

logger = logging.getLogger(__name__)

H2D = 1  # cudaMemcpyHostToDevice
D2H = 2  # cudaMemcpyDeviceToHost
D2D = 3  # cudaMemcpyDeviceToDevice


def device_count() -> int:
    """Number of visible GPUs; 0 when there is no driver, no GPU or no CUDA runtime library."""
    try:
        return cudart.cudaGetDeviceCount()
    except Exception:
        return 0


def require_device(device_id: int) -> None:
    """Raise CUDAUnavailableError (a RuntimeError and a ValueError) that says what to do when GPU ``device_id``
    cannot be used."""
    try:
        n = cudart.cudaGetDeviceCount()
    except Exception as exc:
        raise CUDAUnavailableError(
            f"CUDA execution is not available: execution on GPU {device_id} was asked for, but no CUDA GPU is "
            f"usable here ({exc}); run on the CPU with execution='cpu' or install a driver and "
            f"`pip install \"cumath[cu13]\"` (from a checkout: pip install \".[cu13]\"; drivers older than CUDA 13: "
            f"the cu12 extra)"
        ) from exc
    if not 0 <= device_id < n:
        raise CUDAUnavailableError(f"CUDA execution is not available on GPU {device_id}: this machine has {n} GPU(s)")


def set_device(device_id: int) -> None:
    if cudart.cudaGetDevice() != device_id:
        cudart.cudaSetDevice(device_id)


def copy(dst: int, src: int, nbytes: int, kind: int, stream: int, what: str = "") -> None:
    """Stream-ordered copy of ``nbytes``; cross-space copies are logged with their size."""
    if kind != D2D and logger.isEnabledFor(logging.INFO):
        logger.info("copy %s %s (%s)", "host->GPU" if kind == H2D else "GPU->host", what, format_bytes(nbytes))
    if nvtx.ENABLED:
        with nvtx.range(f"cumath copy {('?', 'host->GPU', 'GPU->host', 'GPU->GPU')[kind]} {what} "
                        f"{format_bytes(nbytes)}"):
            cudart.cudaMemcpyAsync(dst, src, nbytes, kind, stream)
        return
    cudart.cudaMemcpyAsync(dst, src, nbytes, kind, stream)


def memset(ptr: int, value: int, nbytes: int, stream: int) -> None:
    """Stream-ordered fill of ``nbytes`` bytes at device address ``ptr`` with the byte ``value``."""
    if nbytes:
        cudart.cudaMemsetAsync(ptr, value, nbytes, stream)


def synchronize(stream: int) -> None:
    cudart.cudaStreamSynchronize(stream)


def pinned_word(owner, count: int = 1):
    """An 8-byte word (``count`` of them) of page-locked host memory (a uint64 NumPy view) that lives as long as
    ``owner``: a device-to-host copy into it needs no staging through the driver's buffer, and a kernel can write
    it directly (page-locked memory is mapped for the device under unified addressing). NumPy words where it
    cannot be had (no CUDA runtime: the CPU emulation)."""
    import ctypes
    import weakref

    import numpy as np

    from .lifecycle import release_quietly

    try:
        ptr = cudart.cudaMallocHost(8 * count)
    except Exception:  # noqa: BLE001 - no CUDA runtime (the CPU emulation): pageable memory works too
        ptr = 0
    if not ptr:
        return np.zeros(count, np.uint64)
    weakref.finalize(owner, release_quietly, cudart.cudaFreeHost, ptr)
    word = np.ctypeslib.as_array((ctypes.c_uint64 * count).from_address(ptr))
    word[:] = 0
    return word
