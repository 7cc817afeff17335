"""The CUDA driver API functions cumath calls, over cuda-bindings' ``cuda.bindings.driver``.

One Python function per C function, named after it (cuda-bindings resolves each one through ``cuGetProcAddress``
to the version the header maps the name to, e.g. ``cuDevicePrimaryCtxRelease_v2``). Contexts, modules,
functions and streams are Python ints; outputs are returned instead of taken as out-pointers; a failure status
raises ``CUDADriverError`` with the status's name (``CUDA_ERROR_INVALID_IMAGE``). The enums ``CUresult``,
``CUdevice_attribute``, ``CUfunction_attribute`` and the callback type ``CUoccupancyB2DSize`` are cuda-bindings'
own, read on first use.

Nothing is imported or loaded at import time; the first call loads libcuda with cumath's loader (an error that
says to install the NVIDIA driver when it is missing), then imports cuda-bindings. cumath uses the primary
context that the CUDA runtime (or CuPy, PyTorch) makes current; it creates none.
"""

from __future__ import annotations

import ctypes

from ..errors import CUDADriverError
from ._cuda_bindings import LazyModule, lazy_attributes, status_checker

__all__ = [
    "check",
    "CUresult",
    "CUdevice_attribute",
    "CUfunction_attribute",
    "CUoccupancyB2DSize",
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuCtxSynchronize",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxPotentialBlockSize",
]

_drv = LazyModule("cuda.bindings.driver", library="cuda", what="the CUDA driver")
_types = LazyModule("cuda.bindings.driver", what="the CUDA driver's enums")  # no libcuda needed for these

__getattr__ = lazy_attributes(__name__, {name: (lambda name=name: getattr(_types, name)) for name in (
    "CUresult", "CUdevice_attribute", "CUfunction_attribute", "CUoccupancyB2DSize")})

check = status_checker(CUDADriverError, _types, "CUresult")
check.__doc__ = "Raise ``CUDADriverError`` for a failure status (an int or a ``CUresult``), named as in ``cuda.h``."
_name = check.name


# ------------------------------------------------------------------------------------ initialisation


def cuInit(flags: int = 0) -> None:
    err, = _drv.cuInit(flags)
    if err:
        check(err)


def cuDriverGetVersion() -> int:
    """The driver's CUDA version (e.g. 13000)."""
    err, v = _drv.cuDriverGetVersion()
    if err:
        check(err)
    return v


def cuGetErrorName(error: int) -> str:
    err, out = _drv.cuGetErrorName(error)
    if err:
        raise CUDADriverError(int(err), _name(err), f"cuGetErrorName({int(error)}) failed")
    return out.decode()


def cuGetErrorString(error: int) -> str:
    err, out = _drv.cuGetErrorString(error)
    if err:
        raise CUDADriverError(int(err), _name(err), f"cuGetErrorString({int(error)}) failed")
    return out.decode()


# ------------------------------------------------------------------------------------------ devices


def cuDeviceGet(ordinal: int) -> int:
    err, dev = _drv.cuDeviceGet(ordinal)
    if err:
        check(err)
    return int(dev)


def cuDeviceGetCount() -> int:
    err, n = _drv.cuDeviceGetCount()
    if err:
        check(err)
    return n


def cuDeviceGetAttribute(attrib: int, dev: int) -> int:
    err, v = _drv.cuDeviceGetAttribute(attrib, dev)
    if err:
        check(err)
    return v


# ----------------------------------------------------------------------------------------- contexts


def cuDevicePrimaryCtxRetain(dev: int) -> int:
    err, ctx = _drv.cuDevicePrimaryCtxRetain(dev)
    if err:
        check(err)
    return int(ctx)


def cuDevicePrimaryCtxRelease(dev: int) -> None:
    err, = _drv.cuDevicePrimaryCtxRelease(dev)
    if err:
        check(err)


def cuCtxGetCurrent() -> int:
    """The current context of the calling thread, 0 when there is none."""
    err, ctx = _drv.cuCtxGetCurrent()
    if err:
        check(err)
    return int(ctx)


def cuCtxSetCurrent(ctx: int) -> None:
    err, = _drv.cuCtxSetCurrent(ctx)
    if err:
        check(err)


def cuCtxGetDevice() -> int:
    err, dev = _drv.cuCtxGetDevice()
    if err:
        check(err)
    return int(dev)


def cuCtxSynchronize() -> None:
    err, = _drv.cuCtxSynchronize()
    if err:
        check(err)


# ---------------------------------------------------------------------------------------- modules


def cuModuleLoadData(image: bytes) -> int:
    """Load a CUBIN, fatbin or NUL-terminated PTX image into the current context; returns the module."""
    err, mod = _drv.cuModuleLoadData(image)
    if err:
        check(err)
    return int(mod)


def cuModuleUnload(hmod: int) -> None:
    err, = _drv.cuModuleUnload(hmod)
    if err:
        check(err)


def cuModuleGetFunction(hmod: int, name: str | bytes) -> int:
    err, fn = _drv.cuModuleGetFunction(hmod, name.encode() if isinstance(name, str) else name)
    if err:
        check(err, f"function {name!r}")
    return int(fn)


def cuFuncGetAttribute(attrib: int, hfunc: int) -> int:
    err, v = _drv.cuFuncGetAttribute(attrib, hfunc)
    if err:
        check(err)
    return v


def cuFuncSetAttribute(hfunc: int, attrib: int, value: int) -> None:
    err, = _drv.cuFuncSetAttribute(hfunc, attrib, value)
    if err:
        check(err)


# --------------------------------------------------------------------------------------- launching


def cuLaunchKernel(f: int, gridDimX: int, gridDimY: int, gridDimZ: int, blockDimX: int, blockDimY: int,
                   blockDimZ: int, sharedMemBytes: int, hStream: int, kernelParams, extra=None) -> None:
    """Launch ``f``. ``kernelParams`` is a ``void *[]``: a ctypes array of pointers to the argument values (any
    object with the buffer protocol), or its int address; ``extra`` is NULL (None, 0) or the int address of a
    CU_LAUNCH_PARAM_* array."""
    err, = _drv.cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                               hStream, kernelParams, extra or 0)
    if err:
        check(err)


def cuOccupancyMaxActiveBlocksPerMultiprocessor(func: int, blockSize: int, dynamicSMemSize: int = 0) -> int:
    err, n = _drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, blockSize, dynamicSMemSize)
    if err:
        check(err)
    return n


def cuOccupancyMaxPotentialBlockSize(func: int, dynamicSMemSize: int = 0, blockSizeLimit: int = 0,
                                     blockSizeToDynamicSMemSize=None) -> tuple[int, int]:
    """(minGridSize, blockSize) for the best occupancy. The callback ``size_t (*)(int blockSize)`` may be None,
    a ``CUoccupancyB2DSize``, a ctypes function pointer or its int address."""
    cb = blockSizeToDynamicSMemSize
    if cb is not None and not isinstance(cb, _drv.CUoccupancyB2DSize):
        cb = _drv.CUoccupancyB2DSize(cb if isinstance(cb, int) else ctypes.cast(cb, ctypes.c_void_p).value)
    err, grid, block = _drv.cuOccupancyMaxPotentialBlockSize(func, cb, dynamicSMemSize,
                                                             blockSizeLimit)
    if err:
        check(err)
    return grid, block
