"""ctypes bindings of cuFFTMp (``libcufftMp.so.12``), the multi-process cuFFT over NVSHMEM.

Facts from the nvidia-cufftmp-cu13 12.1.3 wheel's headers (``cufftMp.h``, ``cufftXt.h``, ``cufft.h``):

* libcufftMp is a whole cuFFT of its own (``cufftCreate``, ``cufftMakePlan2d/3d``, ``cufftExec*``,
  ``cufftSetStream``, ``cufftDestroy``), with the multi-process calls added:
  ``cufftMpAttachComm(cufftHandle, cufftMpCommType, void *comm_handle)`` (``CUFFT_COMM_MPI = 0``: a pointer to
  an MPI communicator; ``CUFFT_COMM_NONE = 1``: NULL, NVSHMEM already initialized by the caller),
  ``cufftXtSetDistribution(plan, int rank, const long long *lower_input, *upper_input, *lower_output,
  *upper_output, *strides_input, *strides_output)`` (this process's boxes; called before the plan is made),
  ``cufftXtSetSubformatDefault(plan, cufftXtSubFormat forward, cufftXtSubFormat inverse)`` (which slab the input
  of each direction is in: ``CUFFT_XT_FORMAT_INPLACE = 2``, X slabs, ``CUFFT_XT_FORMAT_INPLACE_SHUFFLED = 3``,
  Y slabs).
* ``cufftMpMakePlan2d/3d`` and ``cufftMpMakePlanDecomposition`` are inline functions of the header: attach,
  (set the distribution,) make the plan; the same sequence is written here.
* Data live in NVSHMEM's symmetric heap (``nvshmem_malloc``); the transforms are in place.

The library is opened with ``RTLD_DEEPBIND`` and kept local, so that its cuFFT entry points never meet the
single-GPU libcufft's (same names) in either direction. It links ``libnvshmem_host.so.3``; that library must be
the one NVSHMEM was initialized with, so it is loaded first (``cumath.distributed._nvshmem``). Nothing is loaded
at import time.
"""

from __future__ import annotations

import enum
from ctypes import POINTER, byref, c_int, c_longlong, c_size_t, c_void_p

from ..errors import LibraryNotFoundError
from ._loader import LazyFunctions, load_library
from .cufft import check, cufftType

__all__ = ["CommType", "SubFormat", "cufftType", "available", "create", "destroy", "attach_comm_none",
           "set_distribution", "set_subformat_default", "make_plan", "set_stream", "execute", "version"]


class CommType(enum.IntEnum):
    CUFFT_COMM_MPI = 0x00
    CUFFT_COMM_NONE = 0x01


class SubFormat(enum.IntEnum):
    CUFFT_XT_FORMAT_INPUT = 0x00
    CUFFT_XT_FORMAT_OUTPUT = 0x01
    CUFFT_XT_FORMAT_INPLACE = 0x02
    CUFFT_XT_FORMAT_INPLACE_SHUFFLED = 0x03
    CUFFT_XT_FORMAT_DISTRIBUTED_INPUT = 0x05
    CUFFT_XT_FORMAT_DISTRIBUTED_OUTPUT = 0x06


_p = c_void_p
_ll = POINTER(c_longlong)
TABLE = {
    "cufftCreate": (c_int, [POINTER(c_int)]),
    "cufftDestroy": (c_int, [c_int]),
    "cufftGetVersion": (c_int, [POINTER(c_int)]),
    "cufftMpAttachComm": (c_int, [c_int, c_int, _p]),
    "cufftXtSetDistribution": (c_int, [c_int, c_int, _ll, _ll, _ll, _ll, _ll, _ll]),
    "cufftXtSetSubformatDefault": (c_int, [c_int, c_int, c_int]),
    "cufftMakePlan2d": (c_int, [c_int, c_int, c_int, c_int, POINTER(c_size_t)]),
    "cufftMakePlan3d": (c_int, [c_int, c_int, c_int, c_int, c_int, POINTER(c_size_t)]),
    "cufftSetStream": (c_int, [c_int, _p]),
    "cufftExecC2C": (c_int, [c_int, _p, _p, c_int]),
    "cufftExecZ2Z": (c_int, [c_int, _p, _p, c_int]),
    "cufftExecR2C": (c_int, [c_int, _p, _p]),
    "cufftExecD2Z": (c_int, [c_int, _p, _p]),
    "cufftExecC2R": (c_int, [c_int, _p, _p]),
    "cufftExecZ2D": (c_int, [c_int, _p, _p]),
}

_L = LazyFunctions("cufftMp", TABLE)


def _preload() -> None:
    # libcufftMp links libnvshmem_host.so.3 by soname: load cumath's copy first, so that cuFFTMp runs over the
    # very NVSHMEM that cumath.distributed initialized (and not a second copy found through its RPATH).
    load_library("nvshmem_host")


def _ok(status: int, what: str) -> None:
    if status:
        check(status, f"{what} (cuFFTMp)")


def available() -> bool:
    """Whether libcufftMp can be loaded (loads it, and with it libnvshmem_host)."""
    try:
        _preload()
        return _L.has("cufftMpAttachComm")
    except (OSError, LibraryNotFoundError):
        return False


def version() -> int:
    v = c_int()
    _ok(_L.cufftGetVersion(byref(v)), "cufftGetVersion")
    return v.value


def create() -> int:
    _preload()
    h = c_int()
    _ok(_L.cufftCreate(byref(h)), "cufftCreate")
    return h.value


def destroy(plan: int) -> None:
    _ok(_L.cufftDestroy(plan), "cufftDestroy")


def attach_comm_none(plan: int) -> None:
    """``cufftMpAttachComm(plan, CUFFT_COMM_NONE, NULL)``: run over the NVSHMEM the caller initialized."""
    _ok(_L.cufftMpAttachComm(plan, int(CommType.CUFFT_COMM_NONE), None), "cufftMpAttachComm(CUFFT_COMM_NONE)")


def _ll_array(values):
    return (c_longlong * len(values))(*[int(v) for v in values])


def set_distribution(plan: int, lower_in, upper_in, lower_out, upper_out, strides_in, strides_out) -> None:
    """``cufftXtSetDistribution``: this rank's input and output boxes ``[lower, upper)`` and their strides."""
    rank = len(lower_in)
    _ok(_L.cufftXtSetDistribution(plan, rank, _ll_array(lower_in), _ll_array(upper_in), _ll_array(lower_out),
                                  _ll_array(upper_out), _ll_array(strides_in), _ll_array(strides_out)),
        f"cufftXtSetDistribution(in [{lower_in}, {upper_in}), out [{lower_out}, {upper_out}))")


def set_subformat_default(plan: int, forward: int, inverse: int) -> None:
    _ok(_L.cufftXtSetSubformatDefault(plan, int(forward), int(inverse)), "cufftXtSetSubformatDefault")


def make_plan(plan: int, shape, fft_type: int) -> int:
    """``cufftMakePlan2d`` / ``cufftMakePlan3d`` of the global ``shape``; returns the work size in bytes."""
    ws = c_size_t()
    if len(shape) == 2:
        _ok(_L.cufftMakePlan2d(plan, int(shape[0]), int(shape[1]), int(fft_type), byref(ws)),
            f"cufftMakePlan2d{tuple(shape)}")
    elif len(shape) == 3:
        _ok(_L.cufftMakePlan3d(plan, int(shape[0]), int(shape[1]), int(shape[2]), int(fft_type), byref(ws)),
            f"cufftMakePlan3d{tuple(shape)}")
    else:
        raise ValueError(f"cuFFTMp plans are 2-D or 3-D, got shape {tuple(shape)}")
    return ws.value


def set_stream(plan: int, stream: int) -> None:
    _ok(_L.cufftSetStream(plan, stream or None), "cufftSetStream")


_EXEC = {
    cufftType.CUFFT_C2C: "cufftExecC2C", cufftType.CUFFT_Z2Z: "cufftExecZ2Z",
    cufftType.CUFFT_R2C: "cufftExecR2C", cufftType.CUFFT_D2Z: "cufftExecD2Z",
    cufftType.CUFFT_C2R: "cufftExecC2R", cufftType.CUFFT_Z2D: "cufftExecZ2D",
}


def execute(plan: int, fft_type: int, data: int, direction: int) -> None:
    """In-place execution on the symmetric buffer ``data`` (C2C/Z2Z take ``direction``: -1 forward, +1 inverse)."""
    name = _EXEC[cufftType(fft_type)]
    fn = getattr(_L, name)
    if fft_type in (cufftType.CUFFT_C2C, cufftType.CUFFT_Z2Z):
        _ok(fn(plan, data, data, direction), name)
    else:
        _ok(fn(plan, data, data), name)
