"""ctypes binding of the LAPACK routines of cumath's dense direct solver, 1:1 with their Fortran interface.

Routines (precisions s, d, c, z): ``?getrf`` (LU with partial pivoting), ``?getrs`` (solve with its factors),
``?gesv`` (both in one call), ``?potrf`` (Cholesky), ``?potrs``, ``?posv``. The libraries are the BLAS
providers of :mod:`cumath._bindings.blas` (NumPy's or SciPy's OpenBLAS, a system OpenBLAS, oneMKL): the same
library, loaded once, so BLAS and LAPACK share one thread pool. Only the LAPACK symbol names differ from the
CBLAS ones (read from the libraries with ``nm -D``):

    provider          LAPACK symbol         integers
    openblas64_       scipy_dgetrf_64_      64-bit (ILP64)
    openblas          scipy_dgetrf_         32-bit
    openblas-system   dgetrf_               as the library's configuration says
    openblas64_-numpy1 dgetrf_64_           64-bit (NumPy 1.x wheels)
    openblas-scipy1   dgetrf_               32-bit (SciPy 1.x wheels)
    mkl               dgetrf_64             64-bit (oneMKL's ILP64 entry points)
    nvpl              dgetrf_               64-bit (NVPL LAPACK's ILP64 library, apart from its BLAS)

Fortran calling convention: every argument is passed by address (ints are addresses of integers of the
library's width); a character argument (``trans``, ``uplo``) is the address of one character, and its length
follows all the other arguments as a hidden ``size_t`` (gfortran's convention; OpenBLAS's own C versions of
getrf/getrs/potrf ignore it, its reference-LAPACK ones read it). The bound functions take exactly those
arguments, hidden lengths included, as Python ints; they return nothing: ``info`` (written through its address)
is 0 on success, ``-i`` when argument i is invalid, ``i > 0`` when the factorization met a zero pivot at
``U(i, i)`` (getrf, gesv) or the leading minor of order i is not positive definite (potrf, posv). Signatures
are those of LAPACK 3.12 (the reference LAPACK inside OpenBLAS 0.3.31).

Nothing is loaded at import: ``find_lapack(requested)`` returns a cached :class:`LAPACKLibrary`.
``untyped(name, release_gil)`` gives the same routine bound without argument types: it takes ctypes instances
(``c_void_p`` addresses, ``c_size_t`` lengths) as they are, and releases the GIL during the call or keeps it.
It serves loops over many short calls, where converting ints costs as much as LAPACK's work and where handing the
GIL back and forth (when one thread loops) or holding it long (when threads share the loop) is what costs.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import c_size_t, c_void_p

from ..errors import LibraryNotFoundError
from . import blas
from ._loader import load_library

__all__ = ["ROUTINES", "FUNCTIONS", "SUFFIXES", "LAPACKLibrary", "find_lapack", "get_lapack"]

# routine -> (number of address arguments, number of character arguments; their hidden lengths come last)
ROUTINES = {
    "getrf": (6, 0),   # m n a lda ipiv info
    "getrs": (9, 1),   # trans n nrhs a lda ipiv b ldb info
    "gesv": (8, 0),    # n nrhs a lda ipiv b ldb info
    "potrf": (5, 1),   # uplo n a lda info
    "potrs": (8, 1),   # uplo n nrhs a lda b ldb info
    "posv": (8, 1),    # uplo n nrhs a lda b ldb info
}

#: canonical Fortran name (``dgetrf``) -> (precision letter, routine)
FUNCTIONS = {f"{p}{r}": (p, r) for r in ROUTINES for p in "sdcz"}

#: BLAS provider -> how its LAPACK names are spelled: (prefix, suffix) around the canonical name
SUFFIXES = {"openblas64_": ("scipy_", "_64_"), "openblas": ("scipy_", "_"), "openblas-system": ("", "_"),
            "openblas64_-numpy1": ("", "_64_"), "openblas-scipy1": ("", "_"), "mkl": ("", "_64"), "nvpl": ("", "_")}


class LAPACKLibrary:
    """One provider's LAPACK routines, bound on ``load()``; attributes are the canonical names (``dgetrf`` ...).

    ``ilp64`` says whether integers are 64-bit (``int_dtype``: 'int64' or 'int32', the type of ``ipiv`` and
    of every integer argument); ``blas`` is the provider's :class:`~cumath._bindings.blas.BLASLibrary` (its
    thread controls apply to LAPACK too)."""

    def __init__(self, blas_lib: blas.BLASLibrary):
        self.blas = blas_lib
        self.provider = blas_lib.provider
        self.ilp64 = blas_lib.ilp64
        self._loaded = False

    @property
    def name(self) -> str:
        return self.provider.name

    @property
    def description(self) -> str:
        return self.provider.description

    @property
    def int_dtype(self) -> str:
        return "int64" if self.ilp64 else "int32"

    def load(self) -> "LAPACKLibrary":
        if self._loaded:
            return self
        lib = load_library(self.provider.lapack_library or self.provider.library)
        prefix, suffix = SUFFIXES[self.provider.name]
        for cname, (_p, routine) in FUNCTIONS.items():
            try:
                fn = getattr(lib, f"{prefix}{cname}{suffix}")
            except AttributeError:
                continue
            addresses, chars = ROUTINES[routine]
            fn.restype = None
            fn.argtypes = [c_void_p] * addresses + [c_size_t] * chars
            self.__dict__[cname] = fn
        if "dgetrf" not in self.__dict__:
            raise LibraryNotFoundError(
                f"{self.provider.description} exports no LAPACK dgetrf under the expected name "
                f"({prefix}dgetrf{suffix}); install NumPy or SciPy from their wheels (they bundle OpenBLAS with "
                f"LAPACK: `pip install \"cumath[cpu]\"`) or `pip install \"cumath[mkl]\"` (from a checkout: pip install "
                f"\".[cpu]\" or \".[mkl]\")")
        self._loaded = True
        return self

    def has(self, name: str) -> bool:
        self.load()
        return name in self.__dict__

    def untyped(self, name: str, release_gil: bool = True):
        """Routine ``name`` bound without argument types (it takes ctypes instances as they are), releasing the
        GIL during the call or keeping it (see the module's docstring); cached."""
        key = f"_untyped_{name}_{int(release_gil)}"
        fn = self.__dict__.get(key)
        if fn is None:
            address = ctypes.cast(getattr(self, name), c_void_p).value
            prototype = ctypes.CFUNCTYPE(None) if release_gil else ctypes.PYFUNCTYPE(None)
            fn = self.__dict__[key] = prototype(address)
        return fn

    def __getattr__(self, name: str):
        if name in FUNCTIONS and not self._loaded:
            self.load()
            return getattr(self, name)
        raise AttributeError(f"{name} is not available in {self.provider.description}")

    def set_num_threads_local(self, n: int) -> int | None:
        """Set the calling thread's thread count of the library; returns the previous one (None: unsupported)."""
        return self.blas.set_num_threads_local(n)


_lock = threading.Lock()
_libraries: dict[str, LAPACKLibrary] = {}


def get_lapack(provider: str) -> LAPACKLibrary:
    """The (loaded) LAPACK of BLAS provider ``provider``; raises LibraryNotFoundError."""
    blas_lib = blas.get_blas(provider)
    with _lock:
        lib = _libraries.get(provider)
        if lib is None:
            lib = _libraries[provider] = LAPACKLibrary(blas_lib)
    return lib.load()


def find_lapack(requested: str = "auto") -> LAPACKLibrary:
    """The LAPACK of the BLAS ``blas.find_blas(requested)`` finds ('auto', 'openblas', 'mkl' or a provider)."""
    return get_lapack(blas.find_blas(requested).provider.name)
