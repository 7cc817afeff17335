"""ctypes bindings of oneMKL's Cluster DFT (``mkl_cdft.h``, ``mkl_cdft_types.h``, ``libmkl_cdft_core``).

Facts from ``mkl_cdft.h`` / ``mkl_cdft_types.h`` (mkl-include 2026.2) and Intel's oneMKL Developer Reference (C),
"Cluster FFT Functions":

* ``DftiCreateDescriptorDM(MPI_Comm, DFTI_DESCRIPTOR_DM_HANDLE*, precision, domain, MKL_LONG dim, ...)``: the
  lengths follow as one ``MKL_LONG`` (1-D) or an ``MKL_LONG*`` array; ``DftiGetValueDM(h, int param, ...)`` and
  ``DftiSetValueDM(h, int param, ...)`` (variadic: a pointer to the answer / the value);
  ``DftiCommitDescriptorDM(h)``, ``DftiComputeForwardDM(h, in[, out])``, ``DftiComputeBackwardDM``,
  ``DftiFreeDescriptorDM(&h)``; every function returns an ``MKL_LONG`` status (0 on success, DFTI's error classes,
  ``CDFT_MPI_ERROR`` 1000, ``CDFT_SPREAD_ERROR`` 1001).
* Data are row-major and split along the first axis: each rank holds ``CDFT_LOCAL_NX`` consecutive rows from
  ``CDFT_LOCAL_X_START``, in a buffer of ``CDFT_LOCAL_SIZE`` elements (which may be more than the rows themselves:
  the library works in it); the partition is the library's, read back after the descriptor is made.

The names of the header are split between two libraries: ``libmkl_cdft_core`` defines the compute and set-value
functions and ``mkl_cdft_DftiCreateDescriptorDM`` / ``..GetValueDM`` / ``..CommitDescriptorDM`` /
``..FreeDescriptorDM``; the LP64 interface layer's ``DftiCreateDescriptorDM`` (and the others) forwards to those
through weak stubs that win the global symbol lookup whenever that layer was loaded first (it is: BLACS and
ScaLAPACK need it), and then only print "Computational layer library for Cluster FFT not loaded". So every
function is called from ``libmkl_cdft_core`` itself, with the header's arguments.
The library has no ``NEEDED`` entries for MPI or MKL's layers: ``load()`` opens them first, globally, through the
BLACS loader (the same MPI ABI flavour). ``MPI_Comm`` is passed as a pointer-sized value (an ``int`` handle for
MPICH and Intel MPI, a pointer for Open MPI: both travel in one register). Nothing is loaded at import time.
"""

from __future__ import annotations

import enum
import threading
from ctypes import POINTER, byref, c_int, c_long, c_void_p

from ..errors import DFTIError

__all__ = ["Param", "load", "available", "create", "get_long", "set_long", "commit", "compute", "free"]

_lock = threading.Lock()
_lib: dict = {}

#: ``CDFT_MPI_ERROR`` / ``CDFT_SPREAD_ERROR`` of mkl_cdft_types.h
MPI_ERROR = 1000
SPREAD_ERROR = 1001


class Param(enum.IntEnum):
    """``enum CDFT_CONFIG_PARAM`` and the DFTI settings used with cluster descriptors."""

    PLACEMENT = 11
    TRANSPOSE = 19
    LOCAL_SIZE = 1000
    LOCAL_X_START = 1001
    LOCAL_NX = 1002
    MPI_COMM = 1003
    WORKSPACE = 1004
    LOCAL_OUT_X_START = 1005
    LOCAL_OUT_NX = 1006


def load():
    """Load MPI (global), MKL's layers (through BLACS's loader) and ``libmkl_cdft_core``; return the library."""
    with _lock:
        lib = _lib.get("cdft")
        if lib is not None:
            return lib
        from . import blacs

        blacs.load()  # MPI made global, libmkl_core, the threading and LP64 layers
        lib = blacs.mkl_library("libmkl_cdft_core")
        lib.mkl_cdft_DftiCreateDescriptorDM.restype = c_long
        lib.mkl_cdft_DftiCreateDescriptorDM.argtypes = [c_void_p, POINTER(c_void_p), c_int, c_int, c_long]
        lib.mkl_cdft_DftiGetValueDM.restype = c_long
        lib.mkl_cdft_DftiGetValueDM.argtypes = [c_void_p, c_int]
        lib.DftiSetValueDM.restype = c_long
        lib.DftiSetValueDM.argtypes = [c_void_p, c_int]
        lib.mkl_cdft_DftiCommitDescriptorDM.restype = c_long
        lib.mkl_cdft_DftiCommitDescriptorDM.argtypes = [c_void_p]
        for name in ("DftiComputeForwardDM", "DftiComputeBackwardDM"):
            fn = getattr(lib, name)
            fn.restype = c_long
            fn.argtypes = [c_void_p, c_void_p]
        lib.mkl_cdft_DftiFreeDescriptorDM.restype = c_long
        lib.mkl_cdft_DftiFreeDescriptorDM.argtypes = [POINTER(c_void_p)]
        _lib["cdft"] = lib
        return lib


def available() -> bool:
    """Whether the Cluster DFT library and an MPI for it can be loaded (loads them)."""
    try:
        load()
        return True
    except (OSError, ImportError):  # LibraryNotFoundError is an OSError
        return False


def check(status: int, what: str) -> None:
    """Raise DFTIError for a non-zero status, with DFTI's message (or the cluster-specific meaning)."""
    if not status:
        return
    if status == MPI_ERROR:
        raise DFTIError(status, "CDFT_MPI_ERROR", f"{what}: an MPI call inside the Cluster DFT failed")
    if status == SPREAD_ERROR:
        raise DFTIError(status, "CDFT_SPREAD_ERROR", f"{what}: the data cannot be spread over this many ranks "
                        "(more ranks than rows of the first axis, or of the second axis after the transpose)")
    from . import mkl_dfti

    try:
        msg, cls = mkl_dfti.error_message(status), mkl_dfti._class_name(status)
    except OSError:
        msg, cls = "", None
    raise DFTIError(status, cls, f"{what}: {msg}" if msg else what)


def create(comm_handle: int, precision: int, domain: int, lengths) -> int:
    """``DftiCreateDescriptorDM`` on communicator ``comm_handle`` (the C handle as an int); returns the handle."""
    lib = load()
    handle = c_void_p()
    lengths = [int(n) for n in lengths]
    if len(lengths) == 1:
        status = lib.mkl_cdft_DftiCreateDescriptorDM(c_void_p(comm_handle), byref(handle), precision, domain, 1,
                                            c_long(lengths[0]))
    else:
        arr = (c_long * len(lengths))(*lengths)
        status = lib.mkl_cdft_DftiCreateDescriptorDM(c_void_p(comm_handle), byref(handle), precision, domain,
                                            len(lengths), arr)
    check(status, f"DftiCreateDescriptorDM(lengths={lengths})")
    return handle.value


def get_long(handle: int, param: int) -> int:
    """``DftiGetValueDM`` of an ``MKL_LONG`` setting (CDFT_LOCAL_SIZE, CDFT_LOCAL_NX, ...)."""
    out = c_long()
    check(load().mkl_cdft_DftiGetValueDM(handle, int(param), byref(out)), f"DftiGetValueDM({Param(param).name})")
    return out.value


def set_long(handle: int, param: int, value: int) -> None:
    """``DftiSetValueDM`` of an enum-valued setting (DFTI_PLACEMENT, DFTI_TRANSPOSE)."""
    check(load().DftiSetValueDM(handle, int(param), c_long(value)), f"DftiSetValueDM({Param(param).name}={value})")


def commit(handle: int) -> None:
    check(load().mkl_cdft_DftiCommitDescriptorDM(handle), "DftiCommitDescriptorDM")


def compute(handle: int, data_ptr: int, forward: bool) -> None:
    """In-place ``DftiComputeForwardDM`` / ``DftiComputeBackwardDM`` on a buffer of CDFT_LOCAL_SIZE elements
    (collective: every rank of the descriptor's communicator calls it)."""
    lib = load()
    fn = lib.DftiComputeForwardDM if forward else lib.DftiComputeBackwardDM
    check(fn(handle, data_ptr), "DftiComputeForwardDM" if forward else "DftiComputeBackwardDM")


def free(handle: int) -> None:
    """``DftiFreeDescriptorDM`` (ignores 0)."""
    if handle:
        check(load().mkl_cdft_DftiFreeDescriptorDM(byref(c_void_p(handle))), "DftiFreeDescriptorDM")
