"""ctypes bindings of cuFFT (libcufft), 1:1 with the C functions cumath uses.

Enum values and signatures were read from ``cufft.h`` (CUFFT_VERSION 12500) and ``cufftXt.h`` of the
``nvidia-cufft`` 12.5.0.14 wheel (the cuFFT of CUDA 13.x); ``libraryPropertyType`` and ``cudaDataType`` come
from ``library_types.h`` and live in ``cudart``.

Nothing is loaded at import time: the functions of ``TABLE`` are bound on the first call of any wrapper.
Plans (``cufftHandle``) are C ints; pointers and streams are Python ints. Every wrapper returns its outputs
instead of taking out-pointers and raises ``CUFFTError`` on a failure status.
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import POINTER, byref, c_char_p, c_int, c_longlong, c_size_t, c_void_p

from ..errors import CUFFTError
from ._loader import LazyFunctions
from ._status import make_checker
from .cudart import cudaDataType, cudaDataType_t, libraryPropertyType

__all__ = [
    "CUFFT_VERSION",
    "CUFFT_FORWARD",
    "CUFFT_INVERSE",
    "CUFFT_PLAN_NULL",
    "TABLE",
    "check",
    "cufftResult",
    "cufftType",
    "cufftXtCallbackType",
    "cufftProperty",
    "libraryPropertyType",
    "cudaDataType",
    "cudaDataType_t",
    "cufftCreate",
    "cufftDestroy",
    "cufftSetAutoAllocation",
    "cufftSetWorkArea",
    "cufftSetStream",
    "cufftGetSize",
    "cufftXtMakePlanMany",
    "cufftMakePlanMany64",
    "cufftXtExec",
    "cufftExecC2C",
    "cufftExecZ2Z",
    "cufftExecR2C",
    "cufftExecD2Z",
    "cufftExecC2R",
    "cufftExecZ2D",
    "cufftGetVersion",
    "cufftGetProperty",
    "cufftXtSetJITCallback",
    "cufftXtClearCallback",
    "cufftXtSetCallbackSharedSize",
    "cufftSetPlanPropertyInt64",
    "cufftGetPlanPropertyInt64",
    "cufftResetPlanProperty",
]

CUFFT_VERSION = 12500  # of the header the values below were read from

CUFFT_FORWARD = -1
CUFFT_INVERSE = 1
CUFFT_PLAN_NULL = -1  # an uninitialized cufftHandle that is safe to pass to cufftDestroy


class cufftResult(enum.IntEnum):
    CUFFT_SUCCESS = 0x0
    CUFFT_INVALID_PLAN = 0x1
    CUFFT_ALLOC_FAILED = 0x2
    CUFFT_INVALID_TYPE = 0x3
    CUFFT_INVALID_VALUE = 0x4
    CUFFT_INTERNAL_ERROR = 0x5
    CUFFT_EXEC_FAILED = 0x6
    CUFFT_SETUP_FAILED = 0x7
    CUFFT_INVALID_SIZE = 0x8
    CUFFT_UNALIGNED_DATA = 0x9
    CUFFT_INVALID_DEVICE = 0xB
    CUFFT_NO_WORKSPACE = 0xD
    CUFFT_NOT_IMPLEMENTED = 0xE
    CUFFT_NOT_SUPPORTED = 0x10
    CUFFT_MISSING_DEPENDENCY = 0x11
    CUFFT_NVRTC_FAILURE = 0x12
    CUFFT_NVJITLINK_FAILURE = 0x13
    CUFFT_NVSHMEM_FAILURE = 0x14


class cufftType(enum.IntEnum):
    CUFFT_R2C = 0x2A
    CUFFT_C2R = 0x2C
    CUFFT_C2C = 0x29
    CUFFT_D2Z = 0x6A
    CUFFT_Z2D = 0x6C
    CUFFT_Z2Z = 0x69


class cufftXtCallbackType(enum.IntEnum):
    CUFFT_CB_LD_COMPLEX = 0x0
    CUFFT_CB_LD_COMPLEX_DOUBLE = 0x1
    CUFFT_CB_LD_REAL = 0x2
    CUFFT_CB_LD_REAL_DOUBLE = 0x3
    CUFFT_CB_ST_COMPLEX = 0x4
    CUFFT_CB_ST_COMPLEX_DOUBLE = 0x5
    CUFFT_CB_ST_REAL = 0x6
    CUFFT_CB_ST_REAL_DOUBLE = 0x7
    CUFFT_CB_UNDEFINED = 0x8


class cufftProperty(enum.IntEnum):
    """Per-plan properties of cufftSetPlanPropertyInt64 / cufftGetPlanPropertyInt64 / cufftResetPlanProperty."""

    NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT = 0x1
    NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS = 0x2
    NVFFT_PLAN_PROPERTY_INT64_BLUESTEIN_ONLY = 0x3
    NVFFT_PLAN_PROPERTY_INT64_DISABLE_FMA = 0x4


_p_int = POINTER(c_int)
_p_ll = POINTER(c_longlong)
_p_size = POINTER(c_size_t)

TABLE = {
    "cufftCreate": (c_int, [_p_int]),
    "cufftDestroy": (c_int, [c_int]),
    "cufftSetAutoAllocation": (c_int, [c_int, c_int]),
    "cufftSetWorkArea": (c_int, [c_int, c_void_p]),
    "cufftSetStream": (c_int, [c_int, c_void_p]),
    "cufftGetSize": (c_int, [c_int, _p_size]),
    # plan, rank, n, inembed, istride, idist, inputtype, onembed, ostride, odist, outputtype, batch,
    # workSize, executiontype (workSize comes before executiontype in the C signature)
    "cufftXtMakePlanMany": (
        c_int,
        [c_int, c_int, _p_ll, _p_ll, c_longlong, c_longlong, c_int, _p_ll, c_longlong, c_longlong, c_int,
         c_longlong, _p_size, c_int],
    ),
    "cufftMakePlanMany64": (
        c_int,
        [c_int, c_int, _p_ll, _p_ll, c_longlong, c_longlong, _p_ll, c_longlong, c_longlong, c_int, c_longlong,
         _p_size],
    ),
    "cufftXtExec": (c_int, [c_int, c_void_p, c_void_p, c_int]),
    "cufftExecC2C": (c_int, [c_int, c_void_p, c_void_p, c_int]),
    "cufftExecZ2Z": (c_int, [c_int, c_void_p, c_void_p, c_int]),
    "cufftExecR2C": (c_int, [c_int, c_void_p, c_void_p]),
    "cufftExecD2Z": (c_int, [c_int, c_void_p, c_void_p]),
    "cufftExecC2R": (c_int, [c_int, c_void_p, c_void_p]),
    "cufftExecZ2D": (c_int, [c_int, c_void_p, c_void_p]),
    "cufftGetVersion": (c_int, [_p_int]),
    "cufftGetProperty": (c_int, [c_int, _p_int]),
    # CUDA 13 signature: (plan, const char *symbol_name, const void *fatbin, size_t fatbin_size,
    # cufftXtCallbackType type, void **caller_info). cuFFT 11.x (CUDA 12) lacks the symbol name.
    "cufftXtSetJITCallback": (c_int, [c_int, c_char_p, c_void_p, c_size_t, c_int, c_void_p]),
    "cufftXtClearCallback": (c_int, [c_int, c_int]),
    "cufftXtSetCallbackSharedSize": (c_int, [c_int, c_int, c_size_t]),
    "cufftSetPlanPropertyInt64": (c_int, [c_int, c_int, c_longlong]),
    "cufftGetPlanPropertyInt64": (c_int, [c_int, c_int, _p_ll]),
    "cufftResetPlanProperty": (c_int, [c_int, c_int]),
}

_L = LazyFunctions("cufft", TABLE)
check = make_checker(CUFFTError, cufftResult)


def _dims(values, rank: int, what: str, optional: bool = True):
    """A ``long long[rank]`` from a sequence of ints, or None (NULL) for None where allowed."""
    if values is None:
        if optional:
            return None
        raise ValueError(f"{what} is required")
    if len(values) != rank:
        raise ValueError(f"{what} has {len(values)} entries, expected rank = {rank}")
    return (c_longlong * rank)(*[int(v) for v in values])


# ------------------------------------------------------------------------------------ plan handles


def cufftCreate() -> int:
    h = c_int()
    s = _L.cufftCreate(byref(h))
    if s:
        check(s)
    return h.value


def cufftDestroy(plan: int) -> None:
    s = _L.cufftDestroy(plan)
    if s:
        check(s)


def cufftSetAutoAllocation(plan: int, flag: int) -> None:
    s = _L.cufftSetAutoAllocation(plan, flag)
    if s:
        check(s)


def cufftSetWorkArea(plan: int, ptr: int) -> None:
    s = _L.cufftSetWorkArea(plan, ptr)
    if s:
        check(s)


def cufftSetStream(plan: int, stream: int) -> None:
    s = _L.cufftSetStream(plan, stream)
    if s:
        check(s)


def cufftGetSize(plan: int) -> int:
    ws = c_size_t()
    s = _L.cufftGetSize(plan, byref(ws))
    if s:
        check(s)
    return ws.value


# ---------------------------------------------------------------------------------------- planning


def cufftXtMakePlanMany(
    plan: int,
    rank: int,
    n,
    inembed,
    istride: int,
    idist: int,
    inputtype: int,
    onembed,
    ostride: int,
    odist: int,
    outputtype: int,
    batch: int,
    executiontype: int,
) -> int:
    """Make the plan; returns the work area size in bytes. ``inembed``/``onembed`` may be None (NULL).

    Types are cudaDataType values. In C, ``size_t *workSize`` sits between ``batch`` and ``executiontype``.
    """
    ws = c_size_t()
    s = _L.cufftXtMakePlanMany(
        plan,
        rank,
        _dims(n, rank, "n", optional=False),
        _dims(inembed, rank, "inembed"),
        istride,
        idist,
        inputtype,
        _dims(onembed, rank, "onembed"),
        ostride,
        odist,
        outputtype,
        batch,
        byref(ws),
        executiontype,
    )
    if s:
        check(s)
    return ws.value


def cufftMakePlanMany64(
    plan: int,
    rank: int,
    n,
    inembed,
    istride: int,
    idist: int,
    onembed,
    ostride: int,
    odist: int,
    type: int,
    batch: int,
) -> int:
    """Make the plan; returns the work area size in bytes. ``inembed``/``onembed`` may be None (NULL)."""
    ws = c_size_t()
    s = _L.cufftMakePlanMany64(
        plan,
        rank,
        _dims(n, rank, "n", optional=False),
        _dims(inembed, rank, "inembed"),
        istride,
        idist,
        _dims(onembed, rank, "onembed"),
        ostride,
        odist,
        type,
        batch,
        byref(ws),
    )
    if s:
        check(s)
    return ws.value


# --------------------------------------------------------------------------------------- execution


def _exec(name: str, directed: bool):
    """The binding of one cuFFT execute function: ``name(plan, idata, odata[, direction])`` (device addresses;
    ``direction`` CUFFT_FORWARD or CUFFT_INVERSE for the complex-to-complex ones), raising CUFFTError."""
    if directed:
        def run(plan: int, idata: int, odata: int, direction: int) -> None:
            s = getattr(_L, name)(plan, idata, odata, direction)
            if s:
                check(s)
    else:
        def run(plan: int, idata: int, odata: int) -> None:
            s = getattr(_L, name)(plan, idata, odata)
            if s:
                check(s)
    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"{name}(plan, idata, odata{', direction' if directed else ''}): see cufft.h / cufftXt.h."
    return run


cufftXtExec = _exec("cufftXtExec", True)
cufftExecC2C = _exec("cufftExecC2C", True)
cufftExecZ2Z = _exec("cufftExecZ2Z", True)
cufftExecR2C = _exec("cufftExecR2C", False)
cufftExecD2Z = _exec("cufftExecD2Z", False)
cufftExecC2R = _exec("cufftExecC2R", False)
cufftExecZ2D = _exec("cufftExecZ2D", False)


# ----------------------------------------------------------------------------------------- version


def cufftGetVersion() -> int:
    """CUFFT_VERSION of the loaded library (12500 for cuFFT 12.5)."""
    v = c_int()
    s = _L.cufftGetVersion(byref(v))
    if s:
        check(s)
    return v.value


def cufftGetProperty(prop: int) -> int:
    """A libraryPropertyType value (MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL) of the loaded library."""
    v = c_int()
    s = _L.cufftGetProperty(prop, byref(v))
    if s:
        check(s)
    return v.value


# --------------------------------------------------------------------------------------- callbacks

_jit_signature_ok: bool | None = None  # whether the loaded cuFFT has the CUDA 13 cufftXtSetJITCallback


def _host_pointer(obj, size: int):
    """``obj`` as a value for a ``const void *`` argument: an int address, bytes, or a contiguous buffer."""
    if obj is None or isinstance(obj, int):
        return obj
    if isinstance(obj, bytes):
        if size > len(obj):
            raise ValueError(f"lto_callback_fatbin_size {size} exceeds the {len(obj)} bytes given")
        return obj
    mv = memoryview(obj)
    if size > mv.nbytes:
        raise ValueError(f"lto_callback_fatbin_size {size} exceeds the {mv.nbytes} bytes given")
    if mv.readonly:
        return mv.tobytes()
    return (ctypes.c_char * mv.nbytes).from_buffer(mv.cast("B"))


def cufftXtSetJITCallback(
    plan: int,
    lto_callback_symbol_name: bytes | str,
    lto_callback_fatbin,
    lto_callback_fatbin_size: int,
    callback_type: int,
    caller_info: int = 0,
) -> None:
    """Attach an LTO callback (LTO-IR, e.g. from nvrtc with -dlto) to a plan before it is made.

    ``lto_callback_fatbin`` is bytes, a contiguous buffer or an int host address; ``caller_info`` is the
    address of a ``void *`` array (one entry per GPU) or 0. Keep the fatbin and the caller_info array alive
    until the plan is made (cufftXtMakePlanMany), and the caller_info array's targets until it is destroyed.
    cuFFT keeps the *pointer* to the symbol name (seen on cuFFT 12.0: a freed name links a garbled symbol),
    so pass a ``bytes`` object that lives as long as the plan. The name is the plain (unmangled) name;
    cuFFT's generated code declares the callback as a C++ function, so the LTO-IR must define its
    Itanium-mangled name (e.g. ``_Z7my_loadPvyS_S_`` for a load callback named ``my_load``).

    The CUDA 13 signature takes the callback's symbol name; cuFFT 11.x (CUDA 12) exports the same symbol
    without it, so an older library is refused with CUFFT_NOT_SUPPORTED instead of being called wrongly.
    """
    global _jit_signature_ok
    if _jit_signature_ok is None:
        _jit_signature_ok = cufftGetVersion() >= 12000
    if not _jit_signature_ok:
        check(
            cufftResult.CUFFT_NOT_SUPPORTED,
            "cufftXtSetJITCallback needs cuFFT 12 or newer (CUDA 13); the loaded library has another signature",
        )
    if isinstance(lto_callback_symbol_name, str):
        lto_callback_symbol_name = lto_callback_symbol_name.encode()
    fatbin = _host_pointer(lto_callback_fatbin, lto_callback_fatbin_size)
    s = _L.cufftXtSetJITCallback(
        plan, lto_callback_symbol_name, fatbin, lto_callback_fatbin_size, callback_type, caller_info
    )
    if s:
        check(s)


def cufftXtClearCallback(plan: int, cbtype: int) -> None:
    s = _L.cufftXtClearCallback(plan, cbtype)
    if s:
        check(s)


def cufftXtSetCallbackSharedSize(plan: int, cbtype: int, size: int) -> None:
    s = _L.cufftXtSetCallbackSharedSize(plan, cbtype, size)
    if s:
        check(s)


# ---------------------------------------------------------------------------------- plan properties


def cufftSetPlanPropertyInt64(plan: int, prop: int, value: int) -> None:
    s = _L.cufftSetPlanPropertyInt64(plan, prop, value)
    if s:
        check(s)


def cufftGetPlanPropertyInt64(plan: int, prop: int) -> int:
    v = c_longlong()
    s = _L.cufftGetPlanPropertyInt64(plan, prop, byref(v))
    if s:
        check(s)
    return v.value


def cufftResetPlanProperty(plan: int, prop: int) -> None:
    s = _L.cufftResetPlanProperty(plan, prop)
    if s:
        check(s)
