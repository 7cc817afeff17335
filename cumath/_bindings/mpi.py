"""The MPI library of the running process, made visible to the libraries that expect its symbols globally.

mpi4py loads its MPI (``libmpi.so.12`` for MPICH and Intel MPI, ``libmpi.so.40`` for Open MPI) as a dependency of
its extension module, which Python opens with ``RTLD_LOCAL``; MKL's BLACS and Cluster DFT have no ``NEEDED`` entry
for MPI and resolve ``MPI_*`` from the global scope. ``load_global()`` reopens that same library (found in
``/proc/self/maps``, so it is the very copy mpi4py uses) with ``RTLD_GLOBAL``. ``abi()`` says which ABI it is
(``"mpich"`` or ``"openmpi"``), which picks the BLACS flavour. ``comm_handle()`` gives the C ``MPI_Comm`` of a
mpi4py communicator as an int (an ``int`` handle for MPICH, a pointer for Open MPI). Nothing happens at import.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading

from ..errors import LibraryNotFoundError

__all__ = ["load_global", "abi", "comm_handle", "library_path"]

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_state: dict = {}


def library_path() -> str:
    """The path of the MPI library mpi4py loaded (imports ``mpi4py.MPI``)."""
    try:
        from mpi4py import MPI  # noqa: F401  (loads libmpi)
    except ImportError as exc:
        raise LibraryNotFoundError(
            "mpi4py is not installed: install it with `pip install cumath[distributed]` (mpi4py and MPICH)") from exc
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.rstrip().split(" ")[-1]
            name = os.path.basename(path)
            if name.startswith("libmpi.so") or name.startswith("libmpi_abi.so"):
                return path
    raise LibraryNotFoundError("mpi4py is loaded but no libmpi.so is mapped in this process; "
                               "install an MPI with `pip install cumath[distributed]`")


def load_global() -> ctypes.CDLL:
    """Reopen mpi4py's MPI library with RTLD_GLOBAL (once) and return it."""
    with _lock:
        lib = _state.get("lib")
        if lib is None:
            path = library_path()
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            _state["lib"] = lib
            _state["path"] = path
            logger.info("MPI library %s made global for MKL's cluster libraries", path)
        return lib


def abi() -> str:
    """``"openmpi"`` for Open MPI's ABI (libmpi.so.40), ``"mpich"`` for MPICH / Intel MPI (libmpi.so.12)."""
    path = _state.get("path") or library_path()
    return "openmpi" if ".so.40" in os.path.basename(path) else "mpich"


def comm_handle(comm) -> int:
    """The C ``MPI_Comm`` handle of mpi4py communicator ``comm`` as an int."""
    from mpi4py import MPI

    return int(MPI._handleof(comm))
