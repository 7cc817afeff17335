"""The CUDA runtime functions cumath calls, over cuda-bindings' ``cuda.bindings.runtime``.

One Python function per C function, named after it: pointers, streams and events are Python ints (0 is NULL, and
the legacy default stream); outputs are returned instead of taken as out-pointers; a failure status raises
``CUDARuntimeError`` (the status and its name, e.g. ``cudaErrorInvalidValue``). The enums ``cudaError_t``,
``cudaMemcpyKind``, ``cudaMemoryType``, ``cudaDeviceAttr`` are cuda-bindings' own, read on first use (module
``__getattr__``); ``cudaDataType`` and ``libraryPropertyType`` (``library_types.h``, taken by the ctypes-bound math
libraries) come from :mod:`.library_types`; the flag values below are the header's ``#define``s.

Nothing is imported or loaded at import time. cuda-bindings links the runtime into itself (it loads no
libcudart); its runtime and the libcudart the math libraries load share the driver's primary contexts, streams,
events and memory pools, so handles pass freely between them.

Four calls that take only handles (``cudaStreamSynchronize``, ``cudaStreamQuery``, ``cudaEventRecord``,
``cudaEventQuery``) go through a ctypes binding of libcudart instead: cuda-bindings turns each int handle into a
``cudaStream_t``/``cudaEvent_t`` object before the call, which measured 70-110 ns (about 40%) more per call than
ctypes (benchmarks/bindings.py, benchmarks/NOTES.md); they sit on the execute path (a blocking execute ends with
``cudaStreamSynchronize``; events order work between streams). Every other call is cheaper through cuda-bindings.
"""

from __future__ import annotations

from ctypes import c_int, c_void_p

from ..errors import CUDARuntimeError
from ._cuda_bindings import LazyModule, lazy_attributes, status_checker
from ._loader import LazyFunctions
from .library_types import cudaDataType, cudaDataType_t, libraryPropertyType

__all__ = [
    "check",
    # enums
    "cudaError_t",
    "cudaError",
    "cudaMemcpyKind",
    "cudaMemoryType",
    "cudaDeviceAttr",
    "cudaDataType",
    "cudaDataType_t",
    "libraryPropertyType",
    # flags
    "cudaHostAllocDefault",
    "cudaHostAllocPortable",
    "cudaHostAllocMapped",
    "cudaHostAllocWriteCombined",
    "cudaHostRegisterDefault",
    "cudaHostRegisterPortable",
    "cudaHostRegisterMapped",
    "cudaHostRegisterIoMemory",
    "cudaHostRegisterReadOnly",
    "cudaStreamDefault",
    "cudaStreamNonBlocking",
    "cudaStreamLegacy",
    "cudaStreamPerThread",
    "cudaEventDefault",
    "cudaEventBlockingSync",
    "cudaEventDisableTiming",
    "cudaEventInterprocess",
    "cudaEventRecordDefault",
    "cudaEventRecordExternal",
    "cudaEventWaitDefault",
    "cudaEventWaitExternal",
    "cudaMemAttachGlobal",
    "cudaMemAttachHost",
    "cudaMemAttachSingle",
    "cudaCpuDeviceId",
    "cudaInvalidDeviceId",
    # functions
    "cudaGetDeviceCount",
    "cudaGetDevice",
    "cudaSetDevice",
    "cudaDeviceGetAttribute",
    "cudaRuntimeGetVersion",
    "cudaDriverGetVersion",
    "cudaGetErrorName",
    "cudaGetErrorString",
    "cudaGetDeviceName",
    "cudaMemGetInfo",
    "cudaDeviceSynchronize",
    "cudaStreamCreateWithFlags",
    "cudaStreamDestroy",
    "cudaStreamSynchronize",
    "cudaStreamQuery",
    "cudaStreamWaitEvent",
    "cudaEventCreateWithFlags",
    "cudaEventDestroy",
    "cudaEventRecord",
    "cudaEventSynchronize",
    "cudaEventQuery",
    "cudaEventElapsedTime",
    "cudaMalloc",
    "cudaFree",
    "cudaMallocAsync",
    "cudaFreeAsync",
    "cudaMallocHost",
    "cudaFreeHost",
    "cudaHostRegister",
    "cudaHostUnregister",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cudaMemcpy2DAsync",
    "cudaMemsetAsync",
    "cudaPointerGetAttributes",
    "cudaGetLastError",
    "cudaPeekAtLastError",
]

_rt = LazyModule("cuda.bindings.runtime", what="the CUDA runtime")

# The enums cuda-bindings defines, read from it on first use (``cudart.cudaDeviceAttr.cudaDevAttr...``).
__getattr__ = lazy_attributes(__name__, {
    name: (lambda source=source: getattr(_rt, source)) for name, source in (
        ("cudaError_t", "cudaError_t"), ("cudaError", "cudaError_t"), ("cudaMemcpyKind", "cudaMemcpyKind"),
        ("cudaMemoryType", "cudaMemoryType"), ("cudaDeviceAttr", "cudaDeviceAttr"))})


# ---------------------------------------------------------------------------------- flag constants
# (driver_types.h #defines; tests/bindings/test_cudart.py checks them against cuda-bindings)

cudaHostAllocDefault = 0x00
cudaHostAllocPortable = 0x01
cudaHostAllocMapped = 0x02
cudaHostAllocWriteCombined = 0x04

cudaHostRegisterDefault = 0x00
cudaHostRegisterPortable = 0x01
cudaHostRegisterMapped = 0x02
cudaHostRegisterIoMemory = 0x04
cudaHostRegisterReadOnly = 0x08

cudaStreamDefault = 0x00
cudaStreamNonBlocking = 0x01
cudaStreamLegacy = 0x1  # ((cudaStream_t)0x1): the legacy default stream as a handle
cudaStreamPerThread = 0x2  # ((cudaStream_t)0x2): the per-thread default stream as a handle

cudaEventDefault = 0x00
cudaEventBlockingSync = 0x01
cudaEventDisableTiming = 0x02
cudaEventInterprocess = 0x04
cudaEventRecordDefault = 0x00
cudaEventRecordExternal = 0x01
cudaEventWaitDefault = 0x00
cudaEventWaitExternal = 0x01

cudaMemAttachGlobal = 0x01
cudaMemAttachHost = 0x02
cudaMemAttachSingle = 0x04

cudaCpuDeviceId = -1
cudaInvalidDeviceId = -2

_NOT_READY = 600  # cudaErrorNotReady

# The handle-only calls kept on ctypes (see the module's docstring): cudaError_t f(handle[, handle]).
FAST_TABLE = {
    "cudaStreamSynchronize": (c_int, [c_void_p]),
    "cudaStreamQuery": (c_int, [c_void_p]),
    "cudaEventRecord": (c_int, [c_void_p, c_void_p]),
    "cudaEventQuery": (c_int, [c_void_p]),
}
_fast = LazyFunctions("cudart", FAST_TABLE)


check = status_checker(CUDARuntimeError, _rt, "cudaError_t")
check.__doc__ = "Raise ``CUDARuntimeError(status, name, detail)`` unless ``status`` (an int or a cudaError_t) is 0."


# ---------------------------------------------------------------------------------------- devices


def cudaGetDeviceCount() -> int:
    err, n = _rt.cudaGetDeviceCount()
    if err:
        check(err)
    return n


def cudaGetDevice() -> int:
    err, d = _rt.cudaGetDevice()
    if err:
        check(err)
    return d


def cudaSetDevice(device: int) -> None:
    err, = _rt.cudaSetDevice(device)
    if err:
        check(err)


def cudaDeviceGetAttribute(attr: int, device: int) -> int:
    err, v = _rt.cudaDeviceGetAttribute(attr, device)
    if err:
        check(err)
    return v


def cudaRuntimeGetVersion() -> int:
    """The version of the runtime cuda-bindings links (e.g. 13050)."""
    err, v = _rt.cudaRuntimeGetVersion()
    if err:
        check(err)
    return v


def cudaDriverGetVersion() -> int:
    """The driver's CUDA version (e.g. 13000), 0 where no driver is installed."""
    err, v = _rt.cudaDriverGetVersion()
    if err:
        check(err)
    return v


def cudaGetErrorName(error: int) -> str:
    err, name = _rt.cudaGetErrorName(error)
    return name.decode()


def cudaGetErrorString(error: int) -> str:
    err, text = _rt.cudaGetErrorString(error)
    return text.decode()


def cudaGetDeviceName(device: int) -> str:
    """The device's name: a helper (no such C function), the ``name`` field of ``cudaGetDeviceProperties``."""
    err, prop = _rt.cudaGetDeviceProperties(device)
    if err:
        check(err)
    name = prop.name
    return (name if isinstance(name, bytes) else bytes(name)).split(b"\0", 1)[0].decode(errors="replace")


def cudaMemGetInfo() -> tuple[int, int]:
    """(free, total) bytes of the current device."""
    err, free, total = _rt.cudaMemGetInfo()
    if err:
        check(err)
    return free, total


def cudaDeviceSynchronize() -> None:
    err, = _rt.cudaDeviceSynchronize()
    if err:
        check(err)


# ---------------------------------------------------------------------------------------- streams


def cudaStreamCreateWithFlags(flags: int = cudaStreamDefault) -> int:
    err, stream = _rt.cudaStreamCreateWithFlags(flags)
    if err:
        check(err)
    return int(stream)


def cudaStreamDestroy(stream: int) -> None:
    err, = _rt.cudaStreamDestroy(stream)
    if err:
        check(err)


def cudaStreamSynchronize(stream: int) -> None:
    s = _fast.cudaStreamSynchronize(stream)
    if s:
        check(s)


def cudaStreamQuery(stream: int) -> bool:
    """True when all work on the stream is done, False while some is pending (cudaErrorNotReady)."""
    s = _fast.cudaStreamQuery(stream)
    if s:
        if s == _NOT_READY:
            return False
        check(s)
    return True


def cudaStreamWaitEvent(stream: int, event: int, flags: int = 0) -> None:
    err, = _rt.cudaStreamWaitEvent(stream, event, flags)
    if err:
        check(err)


# ----------------------------------------------------------------------------------------- events


def cudaEventCreateWithFlags(flags: int = cudaEventDefault) -> int:
    err, event = _rt.cudaEventCreateWithFlags(flags)
    if err:
        check(err)
    return int(event)


def cudaEventDestroy(event: int) -> None:
    err, = _rt.cudaEventDestroy(event)
    if err:
        check(err)


def cudaEventRecord(event: int, stream: int = 0) -> None:
    s = _fast.cudaEventRecord(event, stream)
    if s:
        check(s)


def cudaEventSynchronize(event: int) -> None:
    err, = _rt.cudaEventSynchronize(event)
    if err:
        check(err)


def cudaEventQuery(event: int) -> bool:
    """True when the work captured by the event is done, False while it is pending (cudaErrorNotReady)."""
    s = _fast.cudaEventQuery(event)
    if s:
        if s == _NOT_READY:
            return False
        check(s)
    return True


def cudaEventElapsedTime(start: int, end: int) -> float:
    """Milliseconds between two recorded events."""
    err, ms = _rt.cudaEventElapsedTime(start, end)
    if err:
        check(err)
    return ms


# ----------------------------------------------------------------------------------------- memory


def cudaMalloc(size: int) -> int:
    err, ptr = _rt.cudaMalloc(size)
    if err:
        check(err)
    return ptr or 0


def cudaFree(ptr: int) -> None:
    err, = _rt.cudaFree(ptr)
    if err:
        check(err)


def cudaMallocAsync(size: int, stream: int) -> int:
    err, ptr = _rt.cudaMallocAsync(size, stream)
    if err:
        check(err)
    return ptr or 0


def cudaFreeAsync(ptr: int, stream: int) -> None:
    err, = _rt.cudaFreeAsync(ptr, stream)
    if err:
        check(err)


def cudaMallocHost(size: int) -> int:
    err, ptr = _rt.cudaMallocHost(size)
    if err:
        check(err)
    return ptr or 0


def cudaFreeHost(ptr: int) -> None:
    err, = _rt.cudaFreeHost(ptr)
    if err:
        check(err)


def cudaHostRegister(ptr: int, size: int, flags: int = cudaHostRegisterDefault) -> None:
    err, = _rt.cudaHostRegister(ptr, size, flags)
    if err:
        check(err)


def cudaHostUnregister(ptr: int) -> None:
    err, = _rt.cudaHostUnregister(ptr)
    if err:
        check(err)


def cudaMemcpy(dst: int, src: int, count: int, kind: int) -> None:
    err, = _rt.cudaMemcpy(dst, src, count, kind)
    if err:
        check(err)


def cudaMemcpyAsync(dst: int, src: int, count: int, kind: int, stream: int = 0) -> None:
    err, = _rt.cudaMemcpyAsync(dst, src, count, kind, stream)
    if err:
        check(err)


def cudaMemcpy2DAsync(
    dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, kind: int, stream: int = 0
) -> None:
    err, = _rt.cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream)
    if err:
        check(err)


def cudaMemsetAsync(ptr: int, value: int, count: int, stream: int = 0) -> None:
    err, = _rt.cudaMemsetAsync(ptr, value, count, stream)
    if err:
        check(err)


def cudaPointerGetAttributes(ptr: int) -> tuple[int, int]:
    """(memory type as a cudaMemoryType value, device ordinal) of a pointer."""
    err, a = _rt.cudaPointerGetAttributes(ptr)
    if err:
        check(err)
    return int(a.type), a.device


# ----------------------------------------------------------------------------------------- errors


def cudaGetLastError() -> None:
    """Read and reset the last error of cuda-bindings' runtime; raises it as CUDARuntimeError unless cudaSuccess.

    That runtime is cuda-bindings' own: errors of the libcudart the math libraries load are not seen here."""
    err, = _rt.cudaGetLastError()
    if err:
        check(err)


def cudaPeekAtLastError() -> None:
    """Like cudaGetLastError without resetting the error."""
    err, = _rt.cudaPeekAtLastError()
    if err:
        check(err)
