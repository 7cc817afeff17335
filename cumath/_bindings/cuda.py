"""ctypes bindings of the CUDA driver API (libcuda.so.1), 1:1 with the C functions cumath uses.

Enum values and signatures were read from ``cuda.h`` (CUDA_VERSION 13050) of the ``nvidia-cuda-runtime`` /
``nvidia-cuda-crt`` 13.x wheels. Where the header maps a name to a versioned symbol (``#define
cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2``) the versioned symbol is bound under the plain
name. The plain (legacy default stream) entry points are bound, not the ``_ptsz``/``_ptds`` variants.

Nothing is loaded at import time. Contexts, modules, functions and streams are Python ints; every wrapper
returns its outputs instead of taking out-pointers and raises ``CUDADriverError`` (with the name from
``cuGetErrorName``) on a failure status.

cumath uses the primary context that the CUDA runtime (or CuPy, PyTorch) makes current; it creates none.
"""

from __future__ import annotations

import enum
from ctypes import CFUNCTYPE, POINTER, byref, c_char_p, c_int, c_size_t, c_uint, c_void_p

from ..errors import CUDADriverError
from ._loader import LazyFunctions

__all__ = [
    "CUDA_VERSION",
    "TABLE",
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

CUDA_VERSION = 13050  # of the header the values below were read from


def _compact_enum(name: str, table: str, extra: tuple = ()) -> type[enum.IntEnum]:
    """An IntEnum from ``"value NAME value NAME ..."`` (aliases allowed, as in the header)."""
    words = table.split()
    members = list(extra) + [(words[i + 1], int(words[i])) for i in range(0, len(words), 2)]
    return enum.IntEnum(name, members, module=__name__)


# enum cudaError_enum (CUresult)
CUresult = _compact_enum(
    "CUresult",
    """
    0 CUDA_SUCCESS 1 CUDA_ERROR_INVALID_VALUE 2 CUDA_ERROR_OUT_OF_MEMORY 3 CUDA_ERROR_NOT_INITIALIZED
    4 CUDA_ERROR_DEINITIALIZED 5 CUDA_ERROR_PROFILER_DISABLED 6 CUDA_ERROR_PROFILER_NOT_INITIALIZED
    7 CUDA_ERROR_PROFILER_ALREADY_STARTED 8 CUDA_ERROR_PROFILER_ALREADY_STOPPED 34 CUDA_ERROR_STUB_LIBRARY
    36 CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER 46 CUDA_ERROR_DEVICE_UNAVAILABLE 47 CUDA_ERROR_MULTICAST_RESOURCE_FULL
    100 CUDA_ERROR_NO_DEVICE 101 CUDA_ERROR_INVALID_DEVICE 102 CUDA_ERROR_DEVICE_NOT_LICENSED
    200 CUDA_ERROR_INVALID_IMAGE 201 CUDA_ERROR_INVALID_CONTEXT 202 CUDA_ERROR_CONTEXT_ALREADY_CURRENT
    205 CUDA_ERROR_MAP_FAILED 206 CUDA_ERROR_UNMAP_FAILED 207 CUDA_ERROR_ARRAY_IS_MAPPED 208 CUDA_ERROR_ALREADY_MAPPED
    209 CUDA_ERROR_NO_BINARY_FOR_GPU 210 CUDA_ERROR_ALREADY_ACQUIRED 211 CUDA_ERROR_NOT_MAPPED
    212 CUDA_ERROR_NOT_MAPPED_AS_ARRAY 213 CUDA_ERROR_NOT_MAPPED_AS_POINTER 214 CUDA_ERROR_ECC_UNCORRECTABLE
    215 CUDA_ERROR_UNSUPPORTED_LIMIT 216 CUDA_ERROR_CONTEXT_ALREADY_IN_USE 217 CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
    218 CUDA_ERROR_INVALID_PTX 219 CUDA_ERROR_INVALID_GRAPHICS_CONTEXT 220 CUDA_ERROR_NVLINK_UNCORRECTABLE
    221 CUDA_ERROR_JIT_COMPILER_NOT_FOUND 222 CUDA_ERROR_UNSUPPORTED_PTX_VERSION 223 CUDA_ERROR_JIT_COMPILATION_DISABLED
    224 CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY 225 CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC 226 CUDA_ERROR_CONTAINED
    227 CUDA_ERROR_INSUFFICIENT_LOADER_VERSION 300 CUDA_ERROR_INVALID_SOURCE 301 CUDA_ERROR_FILE_NOT_FOUND
    302 CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND 303 CUDA_ERROR_SHARED_OBJECT_INIT_FAILED
    304 CUDA_ERROR_OPERATING_SYSTEM 400 CUDA_ERROR_INVALID_HANDLE 401 CUDA_ERROR_ILLEGAL_STATE
    402 CUDA_ERROR_LOSSY_QUERY 500 CUDA_ERROR_NOT_FOUND 600 CUDA_ERROR_NOT_READY 700 CUDA_ERROR_ILLEGAL_ADDRESS
    701 CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES 702 CUDA_ERROR_LAUNCH_TIMEOUT 703 CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING
    704 CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED 705 CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    708 CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE 709 CUDA_ERROR_CONTEXT_IS_DESTROYED 710 CUDA_ERROR_ASSERT
    711 CUDA_ERROR_TOO_MANY_PEERS 712 CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    713 CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 714 CUDA_ERROR_HARDWARE_STACK_ERROR 715 CUDA_ERROR_ILLEGAL_INSTRUCTION
    716 CUDA_ERROR_MISALIGNED_ADDRESS 717 CUDA_ERROR_INVALID_ADDRESS_SPACE 718 CUDA_ERROR_INVALID_PC
    719 CUDA_ERROR_LAUNCH_FAILED 720 CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE 721 CUDA_ERROR_TENSOR_MEMORY_LEAK
    800 CUDA_ERROR_NOT_PERMITTED 801 CUDA_ERROR_NOT_SUPPORTED 802 CUDA_ERROR_SYSTEM_NOT_READY
    803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH 804 CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
    805 CUDA_ERROR_MPS_CONNECTION_FAILED 806 CUDA_ERROR_MPS_RPC_FAILURE 807 CUDA_ERROR_MPS_SERVER_NOT_READY
    808 CUDA_ERROR_MPS_MAX_CLIENTS_REACHED 809 CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED
    810 CUDA_ERROR_MPS_CLIENT_TERMINATED 811 CUDA_ERROR_CDP_NOT_SUPPORTED 812 CUDA_ERROR_CDP_VERSION_MISMATCH
    900 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 901 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    902 CUDA_ERROR_STREAM_CAPTURE_MERGE 903 CUDA_ERROR_STREAM_CAPTURE_UNMATCHED 904 CUDA_ERROR_STREAM_CAPTURE_UNJOINED
    905 CUDA_ERROR_STREAM_CAPTURE_ISOLATION 906 CUDA_ERROR_STREAM_CAPTURE_IMPLICIT 907 CUDA_ERROR_CAPTURED_EVENT
    908 CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD 909 CUDA_ERROR_TIMEOUT 910 CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
    911 CUDA_ERROR_EXTERNAL_DEVICE 912 CUDA_ERROR_INVALID_CLUSTER_SIZE 913 CUDA_ERROR_FUNCTION_NOT_LOADED
    914 CUDA_ERROR_INVALID_RESOURCE_TYPE 915 CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION 916 CUDA_ERROR_KEY_ROTATION
    917 CUDA_ERROR_STREAM_DETACHED 918 CUDA_ERROR_GRAPH_RECAPTURE_FAILURE 919 CUDA_ERROR_FABRIC_NOT_READY
    999 CUDA_ERROR_UNKNOWN
    """,
)

# enum CUdevice_attribute_enum: the members cumath reads (the header has 160; values as there).
CUdevice_attribute = _compact_enum(
    "CUdevice_attribute",
    """
    1 CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 2 CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
    5 CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X 6 CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y 7 CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z
    8 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK 10 CU_DEVICE_ATTRIBUTE_WARP_SIZE
    12 CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK 13 CU_DEVICE_ATTRIBUTE_CLOCK_RATE
    16 CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 36 CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
    37 CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH 38 CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
    39 CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR 75 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    76 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 81 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    82 CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR 97 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    106 CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR
    """,
)


class CUfunction_attribute(enum.IntEnum):
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4
    CU_FUNC_ATTRIBUTE_PTX_VERSION = 5
    CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6
    CU_FUNC_ATTRIBUTE_CACHE_MODE_CA = 7
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9
    CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET = 10
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH = 11
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT = 12
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH = 13
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
    CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15
    CU_FUNC_ATTRIBUTE_DEVICE_NODE_UPDATE_SUPPORTED = 16
    CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE = 17


# typedef size_t (CUDA_CB *CUoccupancyB2DSize)(int blockSize);
CUoccupancyB2DSize = CFUNCTYPE(c_size_t, c_int)

_p_int = POINTER(c_int)
_p_ptr = POINTER(c_void_p)
_p_str = POINTER(c_char_p)

TABLE = {
    "cuInit": (c_int, [c_uint]),
    "cuDriverGetVersion": (c_int, [_p_int]),
    "cuGetErrorName": (c_int, [c_int, _p_str]),
    "cuGetErrorString": (c_int, [c_int, _p_str]),
    "cuDeviceGet": (c_int, [_p_int, c_int]),
    "cuDeviceGetCount": (c_int, [_p_int]),
    "cuDeviceGetAttribute": (c_int, [_p_int, c_int, c_int]),
    "cuDevicePrimaryCtxRetain": (c_int, [_p_ptr, c_int]),
    "cuDevicePrimaryCtxRelease_v2": (c_int, [c_int]),
    "cuCtxGetCurrent": (c_int, [_p_ptr]),
    "cuCtxSetCurrent": (c_int, [c_void_p]),
    "cuCtxGetDevice": (c_int, [_p_int]),
    "cuCtxSynchronize": (c_int, []),
    "cuModuleLoadData": (c_int, [_p_ptr, c_char_p]),
    "cuModuleUnload": (c_int, [c_void_p]),
    "cuModuleGetFunction": (c_int, [_p_ptr, c_void_p, c_char_p]),
    "cuFuncGetAttribute": (c_int, [_p_int, c_int, c_void_p]),
    "cuFuncSetAttribute": (c_int, [c_void_p, c_int, c_int]),
    # f, gridDimX/Y/Z, blockDimX/Y/Z, sharedMemBytes, hStream, kernelParams, extra
    "cuLaunchKernel": (c_int, [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p,
                               c_void_p, c_void_p]),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (c_int, [_p_int, c_void_p, c_int, c_size_t]),
    "cuOccupancyMaxPotentialBlockSize": (c_int, [_p_int, _p_int, c_void_p, CUoccupancyB2DSize, c_size_t, c_int]),
}

_L = LazyFunctions("cuda", TABLE)
_names = {int(m): m.name for m in CUresult}


def check(status: int, detail: str | None = None) -> None:
    """Raise ``CUDADriverError`` for a failure status, named by ``cuGetErrorName`` where the driver knows it."""
    if status == 0:
        return
    name = _names.get(int(status))
    if name is None:
        try:
            name = cuGetErrorName(status)
        except Exception:  # the name lookup itself failed: keep the number
            name = None
    raise CUDADriverError(status, name, detail)


# ------------------------------------------------------------------------------------ initialisation


def cuInit(flags: int = 0) -> None:
    s = _L.cuInit(flags)
    if s:
        check(s)


def cuDriverGetVersion() -> int:
    """The driver's CUDA version (e.g. 13000)."""
    v = c_int()
    s = _L.cuDriverGetVersion(byref(v))
    if s:
        check(s)
    return v.value


def cuGetErrorName(error: int) -> str:
    out = c_char_p()
    s = _L.cuGetErrorName(error, byref(out))
    if s:
        raise CUDADriverError(s, _names.get(int(s)), f"cuGetErrorName({error}) failed")
    return out.value.decode()


def cuGetErrorString(error: int) -> str:
    out = c_char_p()
    s = _L.cuGetErrorString(error, byref(out))
    if s:
        raise CUDADriverError(s, _names.get(int(s)), f"cuGetErrorString({error}) failed")
    return out.value.decode()


# ------------------------------------------------------------------------------------------ devices


def cuDeviceGet(ordinal: int) -> int:
    d = c_int()
    s = _L.cuDeviceGet(byref(d), ordinal)
    if s:
        check(s)
    return d.value


def cuDeviceGetCount() -> int:
    n = c_int()
    s = _L.cuDeviceGetCount(byref(n))
    if s:
        check(s)
    return n.value


def cuDeviceGetAttribute(attrib: int, dev: int) -> int:
    v = c_int()
    s = _L.cuDeviceGetAttribute(byref(v), attrib, dev)
    if s:
        check(s)
    return v.value


# ----------------------------------------------------------------------------------------- contexts


def cuDevicePrimaryCtxRetain(dev: int) -> int:
    ctx = c_void_p()
    s = _L.cuDevicePrimaryCtxRetain(byref(ctx), dev)
    if s:
        check(s)
    return ctx.value or 0


def cuDevicePrimaryCtxRelease(dev: int) -> None:
    s = _L.cuDevicePrimaryCtxRelease_v2(dev)
    if s:
        check(s)


def cuCtxGetCurrent() -> int:
    """The current context of the calling thread, 0 when there is none."""
    ctx = c_void_p()
    s = _L.cuCtxGetCurrent(byref(ctx))
    if s:
        check(s)
    return ctx.value or 0


def cuCtxSetCurrent(ctx: int) -> None:
    s = _L.cuCtxSetCurrent(ctx)
    if s:
        check(s)


def cuCtxGetDevice() -> int:
    d = c_int()
    s = _L.cuCtxGetDevice(byref(d))
    if s:
        check(s)
    return d.value


def cuCtxSynchronize() -> None:
    s = _L.cuCtxSynchronize()
    if s:
        check(s)


# ---------------------------------------------------------------------------------------- modules


def cuModuleLoadData(image: bytes) -> int:
    """Load a CUBIN, fatbin or NUL-terminated PTX image into the current context; returns the module."""
    mod = c_void_p()
    s = _L.cuModuleLoadData(byref(mod), image)
    if s:
        check(s)
    return mod.value or 0


def cuModuleUnload(hmod: int) -> None:
    s = _L.cuModuleUnload(hmod)
    if s:
        check(s)


def cuModuleGetFunction(hmod: int, name: str | bytes) -> int:
    fn = c_void_p()
    s = _L.cuModuleGetFunction(byref(fn), hmod, name.encode() if isinstance(name, str) else name)
    if s:
        check(s, f"function {name!r}")
    return fn.value or 0


def cuFuncGetAttribute(attrib: int, hfunc: int) -> int:
    v = c_int()
    s = _L.cuFuncGetAttribute(byref(v), attrib, hfunc)
    if s:
        check(s)
    return v.value


def cuFuncSetAttribute(hfunc: int, attrib: int, value: int) -> None:
    s = _L.cuFuncSetAttribute(hfunc, attrib, value)
    if s:
        check(s)


# --------------------------------------------------------------------------------------- launching


def cuLaunchKernel(f: int, gridDimX: int, gridDimY: int, gridDimZ: int, blockDimX: int, blockDimY: int,
                   blockDimZ: int, sharedMemBytes: int, hStream: int, kernelParams, extra=None) -> None:
    """Launch ``f``. ``kernelParams`` is a ``void *[]`` (a ctypes array of pointers to the argument values,
    or its int address); ``extra`` is NULL or a CU_LAUNCH_PARAM_* array."""
    s = _L.cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                          hStream, kernelParams, extra)
    if s:
        check(s)


def cuOccupancyMaxActiveBlocksPerMultiprocessor(func: int, blockSize: int, dynamicSMemSize: int = 0) -> int:
    n = c_int()
    s = _L.cuOccupancyMaxActiveBlocksPerMultiprocessor(byref(n), func, blockSize, dynamicSMemSize)
    if s:
        check(s)
    return n.value


def cuOccupancyMaxPotentialBlockSize(func: int, dynamicSMemSize: int = 0, blockSizeLimit: int = 0,
                                     blockSizeToDynamicSMemSize=None) -> tuple[int, int]:
    """(minGridSize, blockSize) for the best occupancy; the callback (a ``CUoccupancyB2DSize``) may be None."""
    grid, block = c_int(), c_int()
    cb = blockSizeToDynamicSMemSize if blockSizeToDynamicSMemSize is not None else CUoccupancyB2DSize()
    s = _L.cuOccupancyMaxPotentialBlockSize(byref(grid), byref(block), func, cb, dynamicSMemSize, blockSizeLimit)
    if s:
        check(s)
    return grid.value, block.value
