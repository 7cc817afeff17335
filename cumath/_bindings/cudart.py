"""ctypes bindings of the CUDA runtime (libcudart), 1:1 with the C functions cumath uses.

Enum values and signatures were read from ``cuda_runtime_api.h`` (CUDART_VERSION 13050), ``driver_types.h``
and ``library_types.h`` of the ``nvidia-cuda-runtime`` 13.5.37 wheel (CUDA 13.5).

Nothing is loaded at import time: the functions of ``TABLE`` are bound on the first call of any wrapper.
Pointers, streams and events are Python ints (0 is NULL, and the legacy default stream). The plain (legacy
default stream) entry points are bound, not the ``_ptsz``/``_ptds`` per-thread variants. Every wrapper
returns its outputs instead of taking out-pointers and raises ``CUDARuntimeError`` on a failure status.
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_long, c_size_t, c_uint, c_void_p

from ..errors import CUDARuntimeError
from ._loader import LazyFunctions
from ._status import make_checker

__all__ = [
    "CUDART_VERSION",
    "TABLE",
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
    "cudaPointerAttributes",
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

CUDART_VERSION = 13050  # of the header the values below were read from


def _compact_enum(name: str, prefix: str, table: str, extra: tuple = ()) -> type[enum.IntEnum]:
    """An IntEnum from ``"value Suffix value Suffix ..."``; member names are ``prefix + Suffix``."""
    words = table.split()
    members = list(extra) + [(prefix + words[i + 1], int(words[i])) for i in range(0, len(words), 2)]
    return enum.IntEnum(name, members, module=__name__)


# ---------------------------------------------------------------------------------------------- enums

# enum cudaError (driver_types.h); cudaErrorApiFailureBase is deprecated but still part of the enum.
cudaError_t = _compact_enum(
    "cudaError_t",
    "cudaError",
    """
    1 InvalidValue 2 MemoryAllocation 3 InitializationError 4 CudartUnloading 5 ProfilerDisabled
    6 ProfilerNotInitialized 7 ProfilerAlreadyStarted 8 ProfilerAlreadyStopped 9 InvalidConfiguration
    10 VersionTranslation 12 InvalidPitchValue 13 InvalidSymbol 16 InvalidHostPointer 17 InvalidDevicePointer
    18 InvalidTexture 19 InvalidTextureBinding 20 InvalidChannelDescriptor 21 InvalidMemcpyDirection
    22 AddressOfConstant 23 TextureFetchFailed 24 TextureNotBound 25 SynchronizationError 26 InvalidFilterSetting
    27 InvalidNormSetting 28 MixedDeviceExecution 31 NotYetImplemented 32 MemoryValueTooLarge 34 StubLibrary
    35 InsufficientDriver 36 CallRequiresNewerDriver 37 InvalidSurface 43 DuplicateVariableName
    44 DuplicateTextureName 45 DuplicateSurfaceName 46 DevicesUnavailable 49 IncompatibleDriverContext
    52 MissingConfiguration 53 PriorLaunchFailure 65 LaunchMaxDepthExceeded 66 LaunchFileScopedTex
    67 LaunchFileScopedSurf 68 SyncDepthExceeded 69 LaunchPendingCountExceeded 98 InvalidDeviceFunction
    100 NoDevice 101 InvalidDevice 102 DeviceNotLicensed 103 SoftwareValidityNotEstablished 127 StartupFailure
    200 InvalidKernelImage 201 DeviceUninitialized 205 MapBufferObjectFailed 206 UnmapBufferObjectFailed
    207 ArrayIsMapped 208 AlreadyMapped 209 NoKernelImageForDevice 210 AlreadyAcquired 211 NotMapped
    212 NotMappedAsArray 213 NotMappedAsPointer 214 ECCUncorrectable 215 UnsupportedLimit 216 DeviceAlreadyInUse
    217 PeerAccessUnsupported 218 InvalidPtx 219 InvalidGraphicsContext 220 NvlinkUncorrectable
    221 JitCompilerNotFound 222 UnsupportedPtxVersion 223 JitCompilationDisabled 224 UnsupportedExecAffinity
    225 UnsupportedDevSideSync 226 Contained 227 InsufficientLoaderVersion 300 InvalidSource 301 FileNotFound
    302 SharedObjectSymbolNotFound 303 SharedObjectInitFailed 304 OperatingSystem 400 InvalidResourceHandle
    401 IllegalState 402 LossyQuery 500 SymbolNotFound 600 NotReady 700 IllegalAddress 701 LaunchOutOfResources
    702 LaunchTimeout 703 LaunchIncompatibleTexturing 704 PeerAccessAlreadyEnabled 705 PeerAccessNotEnabled
    708 SetOnActiveProcess 709 ContextIsDestroyed 710 Assert 711 TooManyPeers 712 HostMemoryAlreadyRegistered
    713 HostMemoryNotRegistered 714 HardwareStackError 715 IllegalInstruction 716 MisalignedAddress
    717 InvalidAddressSpace 718 InvalidPc 719 LaunchFailure 720 CooperativeLaunchTooLarge 721 TensorMemoryLeak
    800 NotPermitted 801 NotSupported 802 SystemNotReady 803 SystemDriverMismatch 804 CompatNotSupportedOnDevice
    805 MpsConnectionFailed 806 MpsRpcFailure 807 MpsServerNotReady 808 MpsMaxClientsReached
    809 MpsMaxConnectionsReached 810 MpsClientTerminated 811 CdpNotSupported 812 CdpVersionMismatch
    900 StreamCaptureUnsupported 901 StreamCaptureInvalidated 902 StreamCaptureMerge 903 StreamCaptureUnmatched
    904 StreamCaptureUnjoined 905 StreamCaptureIsolation 906 StreamCaptureImplicit 907 CapturedEvent
    908 StreamCaptureWrongThread 909 Timeout 910 GraphExecUpdateFailure 911 ExternalDevice 912 InvalidClusterSize
    913 FunctionNotLoaded 914 InvalidResourceType 915 InvalidResourceConfiguration 917 StreamDetached
    918 GraphRecaptureFailure 919 FabricNotReady 999 Unknown 10000 ApiFailureBase
    """,
    extra=(("cudaSuccess", 0),),
)
cudaError = cudaError_t


class cudaMemcpyKind(enum.IntEnum):
    cudaMemcpyHostToHost = 0
    cudaMemcpyHostToDevice = 1
    cudaMemcpyDeviceToHost = 2
    cudaMemcpyDeviceToDevice = 3
    cudaMemcpyDefault = 4


class cudaMemoryType(enum.IntEnum):
    cudaMemoryTypeUnregistered = 0
    cudaMemoryTypeHost = 1
    cudaMemoryTypeDevice = 2
    cudaMemoryTypeManaged = 3


# enum cudaDeviceAttr (driver_types.h), all members but the cudaDevAttrMax sentinel.
cudaDeviceAttr = _compact_enum(
    "cudaDeviceAttr",
    "cudaDevAttr",
    """
    1 MaxThreadsPerBlock 2 MaxBlockDimX 3 MaxBlockDimY 4 MaxBlockDimZ 5 MaxGridDimX 6 MaxGridDimY 7 MaxGridDimZ
    8 MaxSharedMemoryPerBlock 9 TotalConstantMemory 10 WarpSize 11 MaxPitch 12 MaxRegistersPerBlock 13 ClockRate
    14 TextureAlignment 15 GpuOverlap 16 MultiProcessorCount 17 KernelExecTimeout 18 Integrated
    19 CanMapHostMemory 20 ComputeMode 21 MaxTexture1DWidth 22 MaxTexture2DWidth 23 MaxTexture2DHeight
    24 MaxTexture3DWidth 25 MaxTexture3DHeight 26 MaxTexture3DDepth 27 MaxTexture2DLayeredWidth
    28 MaxTexture2DLayeredHeight 29 MaxTexture2DLayeredLayers 30 SurfaceAlignment 31 ConcurrentKernels
    32 EccEnabled 33 PciBusId 34 PciDeviceId 35 TccDriver 36 MemoryClockRate 37 GlobalMemoryBusWidth
    38 L2CacheSize 39 MaxThreadsPerMultiProcessor 40 AsyncEngineCount 41 UnifiedAddressing
    42 MaxTexture1DLayeredWidth 43 MaxTexture1DLayeredLayers 45 MaxTexture2DGatherWidth
    46 MaxTexture2DGatherHeight 47 MaxTexture3DWidthAlt 48 MaxTexture3DHeightAlt 49 MaxTexture3DDepthAlt
    50 PciDomainId 51 TexturePitchAlignment 52 MaxTextureCubemapWidth 53 MaxTextureCubemapLayeredWidth
    54 MaxTextureCubemapLayeredLayers 55 MaxSurface1DWidth 56 MaxSurface2DWidth 57 MaxSurface2DHeight
    58 MaxSurface3DWidth 59 MaxSurface3DHeight 60 MaxSurface3DDepth 61 MaxSurface1DLayeredWidth
    62 MaxSurface1DLayeredLayers 63 MaxSurface2DLayeredWidth 64 MaxSurface2DLayeredHeight
    65 MaxSurface2DLayeredLayers 66 MaxSurfaceCubemapWidth 67 MaxSurfaceCubemapLayeredWidth
    68 MaxSurfaceCubemapLayeredLayers 69 MaxTexture1DLinearWidth 70 MaxTexture2DLinearWidth
    71 MaxTexture2DLinearHeight 72 MaxTexture2DLinearPitch 73 MaxTexture2DMipmappedWidth
    74 MaxTexture2DMipmappedHeight 75 ComputeCapabilityMajor 76 ComputeCapabilityMinor
    77 MaxTexture1DMipmappedWidth 78 StreamPrioritiesSupported 79 GlobalL1CacheSupported
    80 LocalL1CacheSupported 81 MaxSharedMemoryPerMultiprocessor 82 MaxRegistersPerMultiprocessor
    83 ManagedMemory 84 IsMultiGpuBoard 85 MultiGpuBoardGroupID 86 HostNativeAtomicSupported
    87 SingleToDoublePrecisionPerfRatio 88 PageableMemoryAccess 89 ConcurrentManagedAccess
    90 ComputePreemptionSupported 91 CanUseHostPointerForRegisteredMem 92 Reserved92 93 Reserved93
    94 Reserved94 95 CooperativeLaunch 96 Reserved96 97 MaxSharedMemoryPerBlockOptin 98 CanFlushRemoteWrites
    99 HostRegisterSupported 100 PageableMemoryAccessUsesHostPageTables 101 DirectManagedMemAccessFromHost
    106 MaxBlocksPerMultiprocessor 108 MaxPersistingL2CacheSize 109 MaxAccessPolicyWindowSize
    111 ReservedSharedMemoryPerBlock 112 SparseCudaArraySupported 113 HostRegisterReadOnlySupported
    114 TimelineSemaphoreInteropSupported 115 MemoryPoolsSupported 116 GPUDirectRDMASupported
    117 GPUDirectRDMAFlushWritesOptions 118 GPUDirectRDMAWritesOrdering 119 MemoryPoolSupportedHandleTypes
    120 ClusterLaunch 121 DeferredMappingCudaArraySupported 122 Reserved122 123 Reserved123 124 Reserved124
    125 IpcEventSupport 126 MemSyncDomainCount 127 Reserved127 128 Reserved128 129 Reserved129 130 NumaConfig
    131 NumaId 132 Reserved132 133 MpsEnabled 134 HostNumaId 135 D3D12CigSupported 138 VulkanCigSupported
    139 GpuPciDeviceId 140 GpuPciSubsystemId 141 Reserved141 142 HostNumaMemoryPoolsSupported
    143 HostNumaMultinodeIpcSupported 144 HostMemoryPoolsSupported 145 Reserved145
    147 OnlyPartialHostNativeAtomicSupported 148 AtomicReductionSupported 149 LocalityDomainCount
    150 OversizedSharedMemoryPerBlock 151 CigStreamsSupported 157 LocalityDomainMultiprocessorCount
    160 TensorMapLargeTensorMinSize
    """,
)

# enum cudaDataType_t (library_types.h); CUDA_R_8F_UE4M3 is an alias of CUDA_R_8F_E4M3 there and here.
cudaDataType = _compact_enum(
    "cudaDataType",
    "CUDA_",
    """
    2 R_16F 6 C_16F 14 R_16BF 15 C_16BF 0 R_32F 4 C_32F 1 R_64F 5 C_64F 16 R_4I 17 C_4I 18 R_4U 19 C_4U
    3 R_8I 7 C_8I 8 R_8U 9 C_8U 20 R_16I 21 C_16I 22 R_16U 23 C_16U 10 R_32I 11 C_32I 12 R_32U 13 C_32U
    24 R_64I 25 C_64I 26 R_64U 27 C_64U 28 R_8F_E4M3 28 R_8F_UE4M3 29 R_8F_E5M2 30 R_8F_UE8M0 31 R_6F_E2M3
    32 R_6F_E3M2 33 R_4F_E2M1 34 R_8F_UE5M3
    """,
)
cudaDataType_t = cudaDataType


class libraryPropertyType(enum.IntEnum):
    """library_types.h; cuFFT's cufftGetProperty takes it too."""

    MAJOR_VERSION = 0
    MINOR_VERSION = 1
    PATCH_LEVEL = 2


# ---------------------------------------------------------------------------------- flag constants

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


# ------------------------------------------------------------------------------------------ structs


class _cudaPointerAttributesUnion(ctypes.Union):
    _fields_ = [("localityDomainOrdinal", c_int), ("unused", c_long)]


class cudaPointerAttributes(ctypes.Structure):
    """struct cudaPointerAttributes of driver_types.h (88 bytes on x86-64 Linux, as the header compiles)."""

    _anonymous_ = ("_u",)
    _fields_ = [
        ("type", c_int),  # enum cudaMemoryType
        ("device", c_int),
        ("devicePointer", c_void_p),
        ("hostPointer", c_void_p),
        ("_u", _cudaPointerAttributesUnion),
        ("reserved", c_long * 7),
    ]


# struct cudaDeviceProp is 1008 bytes in CUDA 13.5 and starts with ``char name[256]``; cudaGetDeviceName reads
# only the name, through a buffer several times larger than the struct so that a newer runtime's larger
# struct still fits.
_DEVICE_PROP_BUFFER = 8192
_DEVICE_NAME_LEN = 256

# ------------------------------------------------------------------------------------------- table

_p_int = POINTER(c_int)
_p_size = POINTER(c_size_t)
_p_ptr = POINTER(c_void_p)

TABLE = {
    "cudaGetDeviceCount": (c_int, [_p_int]),
    "cudaGetDevice": (c_int, [_p_int]),
    "cudaSetDevice": (c_int, [c_int]),
    "cudaDeviceGetAttribute": (c_int, [_p_int, c_int, c_int]),
    "cudaRuntimeGetVersion": (c_int, [_p_int]),
    "cudaDriverGetVersion": (c_int, [_p_int]),
    "cudaGetErrorName": (c_char_p, [c_int]),
    "cudaGetErrorString": (c_char_p, [c_int]),
    "cudaGetDeviceProperties": (c_int, [c_void_p, c_int]),
    "cudaMemGetInfo": (c_int, [_p_size, _p_size]),
    "cudaDeviceSynchronize": (c_int, []),
    "cudaStreamCreateWithFlags": (c_int, [_p_ptr, c_uint]),
    "cudaStreamDestroy": (c_int, [c_void_p]),
    "cudaStreamSynchronize": (c_int, [c_void_p]),
    "cudaStreamQuery": (c_int, [c_void_p]),
    "cudaStreamWaitEvent": (c_int, [c_void_p, c_void_p, c_uint]),
    "cudaEventCreateWithFlags": (c_int, [_p_ptr, c_uint]),
    "cudaEventDestroy": (c_int, [c_void_p]),
    "cudaEventRecord": (c_int, [c_void_p, c_void_p]),
    "cudaEventSynchronize": (c_int, [c_void_p]),
    "cudaEventQuery": (c_int, [c_void_p]),
    "cudaEventElapsedTime": (c_int, [POINTER(c_float), c_void_p, c_void_p]),
    "cudaMalloc": (c_int, [_p_ptr, c_size_t]),
    "cudaFree": (c_int, [c_void_p]),
    "cudaMallocAsync": (c_int, [_p_ptr, c_size_t, c_void_p]),
    "cudaFreeAsync": (c_int, [c_void_p, c_void_p]),
    "cudaMallocHost": (c_int, [_p_ptr, c_size_t]),
    "cudaFreeHost": (c_int, [c_void_p]),
    "cudaHostRegister": (c_int, [c_void_p, c_size_t, c_uint]),
    "cudaHostUnregister": (c_int, [c_void_p]),
    "cudaMemcpy": (c_int, [c_void_p, c_void_p, c_size_t, c_int]),
    "cudaMemcpyAsync": (c_int, [c_void_p, c_void_p, c_size_t, c_int, c_void_p]),
    "cudaMemcpy2DAsync": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, c_int, c_void_p]),
    "cudaMemsetAsync": (c_int, [c_void_p, c_int, c_size_t, c_void_p]),
    "cudaPointerGetAttributes": (c_int, [POINTER(cudaPointerAttributes), c_void_p]),
    "cudaGetLastError": (c_int, []),
    "cudaPeekAtLastError": (c_int, []),
}

_L = LazyFunctions("cudart", TABLE)
check = make_checker(CUDARuntimeError, cudaError_t)

_NOT_READY = 600  # cudaErrorNotReady

# ---------------------------------------------------------------------------------------- devices


def cudaGetDeviceCount() -> int:
    n = c_int()
    s = _L.cudaGetDeviceCount(byref(n))
    if s:
        check(s)
    return n.value


def cudaGetDevice() -> int:
    d = c_int()
    s = _L.cudaGetDevice(byref(d))
    if s:
        check(s)
    return d.value


def cudaSetDevice(device: int) -> None:
    s = _L.cudaSetDevice(device)
    if s:
        check(s)


def cudaDeviceGetAttribute(attr: int, device: int) -> int:
    v = c_int()
    s = _L.cudaDeviceGetAttribute(byref(v), attr, device)
    if s:
        check(s)
    return v.value


def cudaRuntimeGetVersion() -> int:
    v = c_int()
    s = _L.cudaRuntimeGetVersion(byref(v))
    if s:
        check(s)
    return v.value


def cudaDriverGetVersion() -> int:
    """The driver's CUDA version (e.g. 13000), 0 where no driver is installed."""
    v = c_int()
    s = _L.cudaDriverGetVersion(byref(v))
    if s:
        check(s)
    return v.value


def cudaGetErrorName(error: int) -> str:
    return _L.cudaGetErrorName(error).decode()


def cudaGetErrorString(error: int) -> str:
    return _L.cudaGetErrorString(error).decode()


def cudaGetDeviceName(device: int) -> str:
    """The device's name: a helper (no such C function) over ``cudaGetDeviceProperties``.

    The name is the first field of ``struct cudaDeviceProp`` (``char name[256]``). The struct is filled into
    a zeroed buffer of ``_DEVICE_PROP_BUFFER`` bytes (much larger than the 1008 bytes of CUDA 13.5) so the
    rest of the struct needs no mirror here.
    """
    buf = ctypes.create_string_buffer(_DEVICE_PROP_BUFFER)
    s = _L.cudaGetDeviceProperties(buf, device)
    if s:
        check(s)
    return buf.raw[:_DEVICE_NAME_LEN].split(b"\0", 1)[0].decode(errors="replace")


def cudaMemGetInfo() -> tuple[int, int]:
    """(free, total) bytes of the current device."""
    free, total = c_size_t(), c_size_t()
    s = _L.cudaMemGetInfo(byref(free), byref(total))
    if s:
        check(s)
    return free.value, total.value


def cudaDeviceSynchronize() -> None:
    s = _L.cudaDeviceSynchronize()
    if s:
        check(s)


# ---------------------------------------------------------------------------------------- streams


def cudaStreamCreateWithFlags(flags: int = cudaStreamDefault) -> int:
    st = c_void_p()
    s = _L.cudaStreamCreateWithFlags(byref(st), flags)
    if s:
        check(s)
    return st.value or 0


def cudaStreamDestroy(stream: int) -> None:
    s = _L.cudaStreamDestroy(stream)
    if s:
        check(s)


def cudaStreamSynchronize(stream: int) -> None:
    s = _L.cudaStreamSynchronize(stream)
    if s:
        check(s)


def cudaStreamQuery(stream: int) -> bool:
    """True when all work on the stream is done, False while some is pending (cudaErrorNotReady)."""
    s = _L.cudaStreamQuery(stream)
    if s:
        if s == _NOT_READY:
            return False
        check(s)
    return True


def cudaStreamWaitEvent(stream: int, event: int, flags: int = 0) -> None:
    s = _L.cudaStreamWaitEvent(stream, event, flags)
    if s:
        check(s)


# ----------------------------------------------------------------------------------------- events


def cudaEventCreateWithFlags(flags: int = cudaEventDefault) -> int:
    ev = c_void_p()
    s = _L.cudaEventCreateWithFlags(byref(ev), flags)
    if s:
        check(s)
    return ev.value or 0


def cudaEventDestroy(event: int) -> None:
    s = _L.cudaEventDestroy(event)
    if s:
        check(s)


def cudaEventRecord(event: int, stream: int = 0) -> None:
    s = _L.cudaEventRecord(event, stream)
    if s:
        check(s)


def cudaEventSynchronize(event: int) -> None:
    s = _L.cudaEventSynchronize(event)
    if s:
        check(s)


def cudaEventQuery(event: int) -> bool:
    """True when the work captured by the event is done, False while it is pending (cudaErrorNotReady)."""
    s = _L.cudaEventQuery(event)
    if s:
        if s == _NOT_READY:
            return False
        check(s)
    return True


def cudaEventElapsedTime(start: int, end: int) -> float:
    """Milliseconds between two recorded events."""
    ms = c_float()
    s = _L.cudaEventElapsedTime(byref(ms), start, end)
    if s:
        check(s)
    return ms.value


# ----------------------------------------------------------------------------------------- memory


def cudaMalloc(size: int) -> int:
    p = c_void_p()
    s = _L.cudaMalloc(byref(p), size)
    if s:
        check(s)
    return p.value or 0


def cudaFree(ptr: int) -> None:
    s = _L.cudaFree(ptr)
    if s:
        check(s)


def cudaMallocAsync(size: int, stream: int) -> int:
    p = c_void_p()
    s = _L.cudaMallocAsync(byref(p), size, stream)
    if s:
        check(s)
    return p.value or 0


def cudaFreeAsync(ptr: int, stream: int) -> None:
    s = _L.cudaFreeAsync(ptr, stream)
    if s:
        check(s)


def cudaMallocHost(size: int) -> int:
    p = c_void_p()
    s = _L.cudaMallocHost(byref(p), size)
    if s:
        check(s)
    return p.value or 0


def cudaFreeHost(ptr: int) -> None:
    s = _L.cudaFreeHost(ptr)
    if s:
        check(s)


def cudaHostRegister(ptr: int, size: int, flags: int = cudaHostRegisterDefault) -> None:
    s = _L.cudaHostRegister(ptr, size, flags)
    if s:
        check(s)


def cudaHostUnregister(ptr: int) -> None:
    s = _L.cudaHostUnregister(ptr)
    if s:
        check(s)


def cudaMemcpy(dst: int, src: int, count: int, kind: int) -> None:
    s = _L.cudaMemcpy(dst, src, count, kind)
    if s:
        check(s)


def cudaMemcpyAsync(dst: int, src: int, count: int, kind: int, stream: int = 0) -> None:
    s = _L.cudaMemcpyAsync(dst, src, count, kind, stream)
    if s:
        check(s)


def cudaMemcpy2DAsync(
    dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, kind: int, stream: int = 0
) -> None:
    s = _L.cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream)
    if s:
        check(s)


def cudaMemsetAsync(ptr: int, value: int, count: int, stream: int = 0) -> None:
    s = _L.cudaMemsetAsync(ptr, value, count, stream)
    if s:
        check(s)


def cudaPointerGetAttributes(ptr: int) -> tuple[int, int]:
    """(memory type as a cudaMemoryType value, device ordinal) of a pointer."""
    a = cudaPointerAttributes()
    s = _L.cudaPointerGetAttributes(byref(a), ptr)
    if s:
        check(s)
    return a.type, a.device


# ----------------------------------------------------------------------------------------- errors


def cudaGetLastError() -> None:
    """Read and reset the runtime's last error; raises it as CUDARuntimeError when it is not cudaSuccess."""
    s = _L.cudaGetLastError()
    if s:
        check(s)


def cudaPeekAtLastError() -> None:
    """Like cudaGetLastError without resetting the error."""
    s = _L.cudaPeekAtLastError()
    if s:
        check(s)
