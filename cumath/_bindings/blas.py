"""ctypes binding of the CBLAS level-3 routines cumath's CPU matrix products use, 1:1 with the C functions.

Providers (each a shared library that exports the CBLAS interface under its own symbol names):

* ``"openblas64_"``: the ILP64 OpenBLAS bundled by the NumPy wheel (``numpy.libs/libscipy_openblas64_-*.so``,
  or the ``scipy-openblas64`` wheel): symbols ``scipy_cblas_dgemm64_`` ..., 64-bit integers. It is the very
  library NumPy's ``a @ b`` calls, so both share one thread pool.
* ``"openblas"``: the LP64 OpenBLAS bundled by the SciPy wheel (``scipy.libs/libscipy_openblas-*.so``):
  symbols ``scipy_cblas_dgemm`` ..., 32-bit integers.
* ``"openblas-system"``: a system ``libopenblas.so.0`` (plain ``cblas_dgemm``; ILP64 when its configuration
  string says ``USE64BITINT``).
* ``"mkl"``: Intel oneMKL's ``libmkl_rt`` through its ILP64 entry points (``cblas_dgemm_64`` ...).
* ``"nvpl"``: NVIDIA NVPL BLAS on Arm (the ``nvpl-blas`` wheel's ILP64 OpenMP interface library
  ``libnvpl_blas_ilp64_gomp.so.0``: plain ``cblas_dgemm`` ... with 64-bit integers, thread control
  ``nvpl_blas_set_num_threads_local``); its LAPACK is the separate ``libnvpl_lapack_ilp64_gomp.so.0``. Never
  looked for on other machines; untested on Arm hardware.

Values of the enums and the signatures come from ``cblas.h`` and ``openblas_config.h`` of the
``scipy-openblas64`` 0.3.31.188.0 wheel (the header NumPy 2.4 was built against); symbol names were read
from the libraries with ``nm -D``. Some exports miss the renaming the header announces:
``openblas_set_num_threads_local`` is looked for under several names; NumPy's copy also exports an unrenamed
``cblas_dgemm_batch_strided`` that rejects valid arguments (xerbla: parameter 8), so strided-batched gemm is
bound only under the provider's own names (absent there: batches are looped).

Nothing is loaded at import. ``get_blas(provider)`` returns a cached ``BLASLibrary`` whose attributes are
named after the canonical C functions (``cblas_dgemm``, ``cblas_zhemm``, ...) and take Python ints for
pointers. Real scalars (alpha, beta) are passed by value, complex ones by address (as in C). CBLAS
returns nothing: arguments are validated by the caller (an invalid one makes the library print an
``xerbla`` message and skip the call).
"""

from __future__ import annotations

import enum
import logging
import os
import threading
from ctypes import c_char_p, c_double, c_float, c_int, c_int32, c_int64, c_void_p
from dataclasses import dataclass

from ..errors import LibraryNotFoundError
from ._loader import load_library, loaded_libraries

__all__ = [
    "CBLAS_ORDER",
    "CBLAS_TRANSPOSE",
    "CBLAS_UPLO",
    "CBLAS_DIAG",
    "CBLAS_SIDE",
    "PROVIDERS",
    "BLASProvider",
    "BLASLibrary",
    "get_blas",
    "find_blas",
    "FUNCTIONS",
]

logger = logging.getLogger(__name__)


class CBLAS_ORDER(enum.IntEnum):
    CblasRowMajor = 101
    CblasColMajor = 102


class CBLAS_TRANSPOSE(enum.IntEnum):
    CblasNoTrans = 111
    CblasTrans = 112
    CblasConjTrans = 113
    CblasConjNoTrans = 114  # an OpenBLAS extension (conjugate without transposition)


class CBLAS_UPLO(enum.IntEnum):
    CblasUpper = 121
    CblasLower = 122


class CBLAS_DIAG(enum.IntEnum):
    CblasNonUnit = 131
    CblasUnit = 132


class CBLAS_SIDE(enum.IntEnum):
    CblasLeft = 141
    CblasRight = 142


@dataclass(frozen=True)
class BLASProvider:
    """How one library exports CBLAS: its loader key, symbol prefix/suffix and integer width."""

    name: str
    library: str  # key of _loader.LIBRARIES
    prefix: str
    suffix: str
    ilp64: bool | None  # None: read from the library's configuration string
    set_threads_local: tuple[str, ...]  # candidate names of `int f(int)` returning the previous count
    get_threads: tuple[str, ...]
    config: tuple[str, ...] = ()
    conj_no_trans: bool = False  # gemm/trmm accept CblasConjNoTrans
    description: str = ""
    lapack_library: str | None = None  # key of _loader.LIBRARIES holding LAPACK, when not ``library`` itself


PROVIDERS: dict[str, BLASProvider] = {
    "openblas64_": BLASProvider(
        "openblas64_", "scipy_openblas64", "scipy_", "64_", True,
        ("openblas_set_num_threads_local", "scipy_openblas_set_num_threads_local64_"),
        ("scipy_openblas_get_num_threads64_",), ("scipy_openblas_get_config64_",), True,
        "NumPy's OpenBLAS (ILP64)"),
    "openblas": BLASProvider(
        "openblas", "scipy_openblas32", "scipy_", "", False,
        ("openblas_set_num_threads_local", "scipy_openblas_set_num_threads_local"),
        ("scipy_openblas_get_num_threads",), ("scipy_openblas_get_config",), True, "SciPy's OpenBLAS (LP64)"),
    "openblas-system": BLASProvider(
        "openblas-system", "openblas", "", "", None, ("openblas_set_num_threads_local",),
        ("openblas_get_num_threads",), ("openblas_get_config",), True, "the system's OpenBLAS"),
    "openblas64_-numpy1": BLASProvider(
        "openblas64_-numpy1", "numpy_openblas64_legacy", "", "64_", True,
        ("openblas_set_num_threads_local64_", "openblas_set_num_threads_local"),
        ("openblas_get_num_threads64_",), ("openblas_get_config64_",), True, "NumPy 1.x's OpenBLAS (ILP64)"),
    "openblas-scipy1": BLASProvider(
        "openblas-scipy1", "scipy_openblas_legacy", "", "", False, ("openblas_set_num_threads_local",),
        ("openblas_get_num_threads",), ("openblas_get_config",), True, "SciPy 1.x's OpenBLAS (LP64)"),
    "mkl": BLASProvider(
        "mkl", "mkl_rt", "", "_64", True, ("MKL_Set_Num_Threads_Local", "mkl_set_num_threads_local"),
        ("MKL_Get_Max_Threads",), (), False, "Intel oneMKL (ILP64 entry points)"),
    "nvpl": BLASProvider(
        "nvpl", "nvpl_blas", "", "", True, ("nvpl_blas_set_num_threads_local",), ("nvpl_blas_get_max_threads",),
        (), False, "NVIDIA NVPL BLAS (ILP64)", lapack_library="nvpl_lapack"),
}

# Search order of "auto": NVPL where it is installed (Arm only: the cpu extra brings it there, and it is never
# looked for elsewhere), then NumPy's own BLAS (the peer every user compares with), SciPy's, the system's, MKL.
AUTO_ORDER = ("nvpl", "openblas64_", "openblas64_-numpy1", "openblas", "openblas-scipy1", "openblas-system", "mkl")

_REAL = {"s": c_float, "d": c_double}

# canonical name -> (precisions, argument kinds); kinds: e enum, i integer, a scalar, p pointer
_SIGNATURES = {
    "gemm": ("sdcz", "eeeiiiapipiapi"),
    "symm": ("sdcz", "eeeiiapipiapi"),
    "hemm": ("cz", "eeeiiapipiapi"),
    "trmm": ("sdcz", "eeeeeiiapipi"),
    "gemm_batch_strided": ("sdcz", "eeeiiiapiipiiapiii"),
}

#: canonical C name -> (precision letter, routine) of every function this binding offers
FUNCTIONS = {f"cblas_{p}{r}": (p, r) for r, (ps, _) in _SIGNATURES.items() for p in ps}


def _argtypes(kinds: str, precision: str, integer):
    scalar = _REAL.get(precision, c_void_p)
    table = {"e": c_int, "i": integer, "a": scalar, "p": c_void_p}
    return [table[k] for k in kinds]


class BLASLibrary:
    """One provider's CBLAS functions, bound on ``load()``; attributes are named ``cblas_<p><routine>``.

    ``ilp64`` tells whether integers are 64-bit; ``max_int`` is the largest dimension or leading dimension
    the library accepts; ``has(name)`` says whether a function is exported (``cblas_?gemm_batch_strided``
    is missing from older libraries).
    """

    def __init__(self, provider: BLASProvider):
        self.provider = provider
        self._lib = None
        self.ilp64 = provider.ilp64
        self._set_local = None
        self._get_threads = None

    @property
    def name(self) -> str:
        return self.provider.name

    @property
    def conj_no_trans(self) -> bool:
        return self.provider.conj_no_trans

    def load(self) -> "BLASLibrary":
        if self._lib is not None:
            return self
        lib = load_library(self.provider.library)
        p = self.provider
        if self.ilp64 is None:
            self.ilp64 = "USE64BITINT" in (self._config(lib) or "")
        integer = c_int64 if self.ilp64 else c_int32
        found = 0
        for cname, (prec, routine) in FUNCTIONS.items():
            fn = _lookup(lib, _candidates(p, prec, routine))
            if fn is None:
                continue
            fn.restype = None
            fn.argtypes = _argtypes(_SIGNATURES[routine][1], prec, integer)
            self.__dict__[cname] = fn
            found += 1
        if "cblas_dgemm" not in self.__dict__:
            raise LibraryNotFoundError(
                f"{p.description} ({loaded_libraries().get(p.library, p.library)}) exports no CBLAS dgemm under "
                f"the expected names ({_candidates(p, 'd', 'gemm')[0]})")
        self._set_local = _lookup(lib, p.set_threads_local)
        if self._set_local is not None:
            self._set_local.restype = c_int
            self._set_local.argtypes = [c_int]
        self._get_threads = _lookup(lib, p.get_threads)
        if self._get_threads is not None:
            self._get_threads.restype = c_int
            self._get_threads.argtypes = []
        self._lib = lib
        logger.info("BLAS: %s from %s (%s integers, %d functions)", p.description,
                    loaded_libraries().get(p.library, "?"), "64-bit" if self.ilp64 else "32-bit", found)
        return self

    def _config(self, lib) -> str | None:
        fn = _lookup(lib, self.provider.config)
        if fn is None:
            return None
        fn.restype = c_char_p
        fn.argtypes = []
        value = fn()
        return value.decode(errors="replace") if value else None

    @property
    def config(self) -> str | None:
        """The library's configuration string (OpenBLAS), or None."""
        return self._config(self.load()._lib)

    @property
    def max_int(self) -> int:
        return (1 << 63) - 1 if self.load().ilp64 else (1 << 31) - 1

    def has(self, name: str) -> bool:
        self.load()
        return name in self.__dict__

    def __getattr__(self, name: str):
        if name.startswith("cblas_") and self._lib is None:
            self.load()
            return getattr(self, name)
        raise AttributeError(f"{name} is not available in {self.provider.description}")

    # -------------------------------------------------------------------------------------- threads
    def set_num_threads_local(self, n: int) -> int | None:
        """Set the calling thread's BLAS thread count; returns the previous one (None when unsupported)."""
        fn = self.load()._set_local
        return None if fn is None else fn(int(n))

    def get_num_threads(self) -> int | None:
        fn = self.load()._get_threads
        return None if fn is None else fn()


def _candidates(p: BLASProvider, precision: str, routine: str) -> tuple[str, ...]:
    return (f"{p.prefix}cblas_{precision}{routine}{p.suffix}",)


def _lookup(lib, names):
    for n in names:
        try:
            return getattr(lib, n)
        except AttributeError:
            continue
    return None


_lock = threading.Lock()
_libraries: dict[str, BLASLibrary] = {}


def get_blas(provider: str) -> BLASLibrary:
    """The (loaded) BLAS library of ``provider``, a key of ``PROVIDERS``; raises LibraryNotFoundError."""
    if provider not in PROVIDERS:
        raise ValueError(f"BLAS provider {provider!r} is not supported; the allowed values are {list(PROVIDERS)}")
    with _lock:
        lib = _libraries.get(provider)
        if lib is None:
            lib = _libraries[provider] = BLASLibrary(PROVIDERS[provider])
    return lib.load()


def find_blas(requested: str = "auto") -> BLASLibrary:
    """The first provider that loads: ``"auto"`` tries AUTO_ORDER; ``"openblas"`` any OpenBLAS; ``"mkl"`` MKL."""
    orders = {"auto": AUTO_ORDER, "openblas": ("openblas64_", "openblas64_-numpy1", "openblas", "openblas-scipy1",
                                                    "openblas-system"), "mkl": ("mkl",), "nvpl": ("nvpl",)}
    if requested == "auto" and os.environ.get("CUMATH_BLAS"):
        requested = os.environ["CUMATH_BLAS"]
    if requested not in orders and requested not in PROVIDERS:
        raise ValueError(f"BLAS {requested!r} is not supported; the allowed values are {list(orders)} or a provider "
                         f"of {list(PROVIDERS)}")
    order = orders.get(requested, (requested,))
    last = None
    for name in order:
        try:
            return get_blas(name)
        except LibraryNotFoundError as exc:
            last = exc
    raise LibraryNotFoundError(
        f"no CBLAS library found for {requested!r} (tried {', '.join(order)}: the OpenBLAS bundled by NumPy's or "
        f"SciPy's wheels, a system libopenblas, MKL): install NumPy or SciPy from their wheels (they bundle OpenBLAS: "
        f"`pip install \"cumath[cpu]\"`) or `pip install \"cumath[mkl]\"` (from a checkout: pip install \".[cpu]\" or "
        f"\".[mkl]\")" + (f". Last error: {last}" if last else ""))


