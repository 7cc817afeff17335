"""ctypes bindings of MKL's BLACS (``mkl_blacs.h``), the C interface (``Cblacs_*``, ``Csys2blacs_handle``).

BLACS comes in one flavour per MPI ABI: ``libmkl_blacs_intelmpi_lp64`` for MPICH and Intel MPI,
``libmkl_blacs_openmpi_lp64`` for Open MPI; the flavour is picked from the MPI mpi4py loaded. MKL's cluster
libraries have no ``NEEDED`` entries: they resolve MPI, BLAS/LAPACK and MKL's service functions from the global
scope, so ``load()`` opens, with ``RTLD_GLOBAL`` and in dependency order, the MPI library, ``libmkl_core``, a
threading layer (``libmkl_sequential``: one thread per rank, the usual choice under MPI; ``CUMATH_MKL_CLUSTER_THREADS``
``=gnu`` picks ``libmkl_gnu_thread``), the LP64 interface layer and BLACS. All integers are LP64 ``int``.
Nothing is loaded at import time.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import sys
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_void_p

from ..errors import LibraryNotFoundError
from . import mpi

__all__ = ["load", "mkl_library", "sys2blacs_handle", "gridinit", "gridinfo", "gridexit", "free_blacs_handle"]

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_libs: dict = {}


def _mkl_dirs() -> list[str]:
    dirs = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX", ""))):
        if prefix:
            dirs.append(os.path.join(prefix, "lib"))
    dirs += [p for p in sys.path if p and os.path.isdir(p)]
    return dirs


def _dlopen_lazy_global(path: str) -> bool:
    libc = _libs.get("libc")
    if libc is None:
        libc = ctypes.CDLL(None)
        libc.dlopen.restype = c_void_p
        libc.dlopen.argtypes = [c_char_p, c_int]
        libc.dlerror.restype = c_char_p
        _libs["libc"] = libc
    if libc.dlopen(path.encode(), os.RTLD_LAZY | os.RTLD_GLOBAL):
        return True
    logger.debug("could not open %s: %s", path, libc.dlerror())
    return False


def mkl_library(stem: str) -> ctypes.CDLL:
    """Open MKL library ``stem`` (e.g. ``"libmkl_core"``) with RTLD_GLOBAL, from the mkl wheel's folder."""
    lib = _libs.get(stem)
    if lib is not None:
        return lib
    for folder in _mkl_dirs():
        for path in sorted(glob.glob(os.path.join(folder, stem + ".so*")), reverse=True):
            # MKL's layers refer to each other (core <-> threading layer): open lazily, then take the handle.
            if not _dlopen_lazy_global(path):
                continue
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            _libs[stem] = lib
            logger.info("loaded %s from %s", stem, path)
            return lib
    raise LibraryNotFoundError(f"could not load {stem} (MKL's cluster libraries); install them with "
                               "`pip install cumath[distributed]` (it brings the mkl wheel)")


def load() -> ctypes.CDLL:
    """Load MPI (global), MKL's core, threading and LP64 layers, and the BLACS matching the MPI; return BLACS."""
    with _lock:
        if "blacs" in _libs:
            return _libs["blacs"]
        mpi.load_global()
        threads = os.environ.get("CUMATH_MKL_CLUSTER_THREADS", "sequential").strip().lower()
        layer = {"gnu": "libmkl_gnu_thread", "intel": "libmkl_intel_thread"}.get(threads, "libmkl_sequential")
        mkl_library("libmkl_core")
        mkl_library(layer)
        mkl_library("libmkl_intel_lp64")
        flavour = "openmpi" if mpi.abi() == "openmpi" else "intelmpi"
        lib = mkl_library(f"libmkl_blacs_{flavour}_lp64")
        lib.Csys2blacs_handle.restype = c_int
        lib.Csys2blacs_handle.argtypes = [c_void_p]
        lib.Cfree_blacs_system_handle.restype = None
        lib.Cfree_blacs_system_handle.argtypes = [c_int]
        lib.Cblacs_gridinit.restype = None
        lib.Cblacs_gridinit.argtypes = [POINTER(c_int), c_char_p, c_int, c_int]
        lib.Cblacs_gridinfo.restype = None
        lib.Cblacs_gridinfo.argtypes = [c_int] + [POINTER(c_int)] * 4
        lib.Cblacs_gridexit.restype = None
        lib.Cblacs_gridexit.argtypes = [c_int]
        _libs["blacs"] = lib
        logger.info("BLACS flavour %s (MPI ABI %s, MKL threading %s)", flavour, mpi.abi(), layer)
        return lib


def sys2blacs_handle(comm_handle: int) -> int:
    """``Csys2blacs_handle(MPI_Comm)``: a BLACS system handle for an MPI communicator (C handle as an int)."""
    return load().Csys2blacs_handle(c_void_p(comm_handle))


def free_blacs_handle(handle: int) -> None:
    load().Cfree_blacs_system_handle(handle)


def gridinit(system_handle: int, order: str, nprow: int, npcol: int) -> int:
    """``Cblacs_gridinit``: a process grid on the given system handle; returns its context."""
    ctx = c_int(system_handle)
    load().Cblacs_gridinit(byref(ctx), order.encode(), nprow, npcol)
    return ctx.value


def gridinfo(context: int) -> tuple[int, int, int, int]:
    """``Cblacs_gridinfo``: (nprow, npcol, myrow, mycol); -1s for a process outside the grid."""
    v = [c_int() for _ in range(4)]
    load().Cblacs_gridinfo(context, *(byref(x) for x in v))
    return tuple(x.value for x in v)


def gridexit(context: int) -> None:
    load().Cblacs_gridexit(context)
