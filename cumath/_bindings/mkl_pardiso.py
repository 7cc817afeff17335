"""ctypes bindings of oneMKL PARDISO (through ``libmkl_rt``), 1:1 with the C functions of ``mkl_pardiso.h``.

Facts from Intel's oneMKL Developer Reference (C): ``pardiso``, ``pardiso_64``, ``pardisoinit``,
``pardiso_getdiag``; the matrix types (``mtype``), phases and ``error`` codes below; the ``iparm`` entries
cumath sets are named in ``IPARM`` (0-based indices as in the C reference).

``pardiso`` takes ``MKL_INT`` arguments: 32-bit integers with the LP64 interface layer that cumath selects
(``MKL_Set_Interface_Layer``), 64-bit ones if the process had already chosen ILP64 (``mkl_int_bits()`` says
which). ``pardiso_64`` always takes 64-bit integers. Every array argument is a pointer (a Python int); the
internal solver handle ``pt`` is an array of 64 pointers that must start zeroed and never be changed.
Nothing is loaded at import time.
"""

from __future__ import annotations

import enum
from ctypes import byref, c_char_p, c_int, c_int64, c_void_p

from ..errors import PARDISOError
from ._loader import LazyFunctions

__all__ = ["MatrixType", "Phase", "PardisoStatus", "IPARM", "MKL_DOMAIN_PARDISO", "TABLE", "check",
           "mkl_int_bits", "pardisoinit", "pardiso", "pardiso_64", "pardiso_getdiag", "mkl_domain_set_num_threads",
           "mkl_domain_get_max_threads", "mkl_get_max_threads", "mkl_get_version_string"]


class MatrixType(enum.IntEnum):
    """PARDISO's ``mtype``."""

    REAL_STRUCTURALLY_SYMMETRIC = 1
    REAL_SPD = 2
    REAL_SYMMETRIC_INDEFINITE = -2
    COMPLEX_STRUCTURALLY_SYMMETRIC = 3
    COMPLEX_HPD = 4
    COMPLEX_HERMITIAN_INDEFINITE = -4
    COMPLEX_SYMMETRIC = 6
    REAL_NONSYMMETRIC = 11
    COMPLEX_NONSYMMETRIC = 13


class Phase(enum.IntEnum):
    ANALYSIS = 11
    ANALYSIS_FACTORIZATION = 12
    ANALYSIS_FACTORIZATION_SOLVE = 13
    FACTORIZATION = 22
    FACTORIZATION_SOLVE = 23
    SOLVE = 33  # with iterative refinement
    SOLVE_FORWARD = 331
    SOLVE_DIAGONAL = 332
    SOLVE_BACKWARD = 333
    RELEASE_FACTORS = 0
    RELEASE_ALL = -1


class PardisoStatus(enum.IntEnum):
    """PARDISO's ``error`` output."""

    NO_ERROR = 0
    INPUT_INCONSISTENT = -1
    NOT_ENOUGH_MEMORY = -2
    REORDERING_PROBLEM = -3
    ZERO_PIVOT = -4  # zero pivot, numerical factorization or iterative refinement problem
    INTERNAL_ERROR = -5
    PREORDERING_FAILED = -6  # matrix types 11 and 13 only
    DIAGONAL_MATRIX_PROBLEM = -7
    INTEGER_OVERFLOW = -8  # 32-bit integer overflow: use pardiso_64
    NOT_ENOUGH_MEMORY_OOC = -9
    OOC_FILE_OPEN_ERROR = -10
    OOC_FILE_IO_ERROR = -11
    PARDISO_64_FROM_32_BIT_LIBRARY = -12
    INTERRUPTED = -13  # by the mkl_progress function


class IPARM(enum.IntEnum):
    """The ``iparm`` entries cumath reads or writes (0-based, as in the C reference)."""

    USE_NON_DEFAULTS = 0  # 0: iparm[1..63] take their defaults
    REORDERING = 1  # 0 minimum degree, 2 METIS nested dissection, 3 parallel METIS
    IR_STEPS = 7  # max iterative refinement steps (0: two steps when pivots were perturbed); output: done
    PIVOT_PERTURBATION = 9  # eps = 10**-value
    SCALING = 10  # 1: scaling vectors (with MATCHING)
    TRANSPOSE = 11  # 0: A x = b, 1: A^H x = b, 2: A^T x = b
    MATCHING = 12  # 1: (symmetric) weighted matching
    PERTURBED_PIVOTS = 13  # output: number of perturbed pivots
    PEAK_MEMORY_ANALYSIS_KB = 14  # output
    PERMANENT_MEMORY_KB = 15  # output
    FACTORIZATION_MEMORY_KB = 16  # output: memory of numerical factorization and solution
    FACTOR_NNZ = 17  # input < 0 asks for it; output: non-zeros in the factors
    MFLOPS = 18  # input < 0 asks for it; output: MFLOP of the factorization
    SYMMETRIC_PIVOTING = 20  # 0: 1x1 diagonal pivots, 1: 1x1 and 2x2 Bunch-Kaufman
    POSITIVE_EIGENVALUES = 21  # output (symmetric indefinite)
    NEGATIVE_EIGENVALUES = 22  # output (symmetric indefinite)
    PARALLEL_FACTORIZATION = 23  # 0 classic, 1 two-level, 10 improved two-level
    PARALLEL_SOLVE = 24  # 0 sequential or parallel forward/backward solve
    MATRIX_CHECKER = 26  # 1: check the matrix (sorted columns, indices in range)
    SINGLE_PRECISION = 27  # 1: the values are float32 / complex64
    ZERO_PIVOTS_SPD = 29  # output: the equation where the SPD factorization met a zero or negative pivot
    ZERO_BASED = 34  # 1: 0-based (C-style) indices
    DIAGONAL_PIVOTING_CONTROL = 55  # 1: pardiso_getdiag can report the diagonal


MKL_DOMAIN_PARDISO = 4
_INTERFACE_LP64 = 0

_p = c_void_p
TABLE = {
    "pardisoinit": (None, [_p, _p, _p]),
    # pt, maxfct, mnum, mtype, phase, n, a, ia, ja, perm, nrhs, iparm, msglvl, b, x, error
    "pardiso": (None, [_p] * 16),
    "pardiso_64": (None, [_p] * 16),
    # pt, df, da, mnum, error
    "pardiso_getdiag": (None, [_p] * 5),
    "MKL_Set_Interface_Layer": (c_int, [c_int]),
    "MKL_Domain_Set_Num_Threads": (c_int, [c_int, c_int]),
    "MKL_Domain_Get_Max_Threads": (c_int, [c_int]),
    "MKL_Get_Max_Threads": (c_int, []),
    "MKL_Get_Version_String": (None, [c_char_p, c_int]),
}

_L = LazyFunctions("mkl_rt", TABLE)
_names = {int(m): m.name for m in PardisoStatus}
_bits = None


def check(error: int, phase: int) -> None:
    """Raise PARDISOError for a non-zero ``error`` of ``phase``."""
    if error:
        raise PARDISOError(error, _names.get(int(error)), f"phase {phase}")


def mkl_int_bits() -> int:
    """The width of ``MKL_INT`` for ``pardiso``: 32 (LP64, which cumath asks for) or 64 (ILP64 chosen earlier)."""
    global _bits
    if _bits is None:
        layer = _L.MKL_Set_Interface_Layer(_INTERFACE_LP64)
        _bits = 64 if layer >= 0 and layer & 1 else 32
    return _bits


def pardisoinit(pt: int, mtype: int, iparm: int) -> None:
    """Fill ``iparm`` (MKL_INT[64] at that address) with the defaults of ``mtype``; zero ``pt``."""
    mkl_int_bits()
    m = (c_int64 if _bits == 64 else c_int)(mtype)
    _L.pardisoinit(pt, byref(m), iparm)


def _call(fn, pt, maxfct, mnum, mtype, phase, n, a, ia, ja, perm, nrhs, iparm, msglvl, b, x, ctype) -> None:
    ints = [ctype(v) for v in (maxfct, mnum, mtype, phase, n, nrhs, msglvl)]
    err = ctype(0)
    fn(pt, byref(ints[0]), byref(ints[1]), byref(ints[2]), byref(ints[3]), byref(ints[4]), a, ia, ja, perm,
       byref(ints[5]), iparm, byref(ints[6]), b, x, byref(err))
    check(err.value, phase)


def pardiso(pt: int, maxfct: int, mnum: int, mtype: int, phase: int, n: int, a: int, ia: int, ja: int, perm: int,
            nrhs: int, iparm: int, msglvl: int, b: int, x: int) -> None:
    """One call of ``pardiso`` (MKL_INT arrays: see ``mkl_int_bits``); raises PARDISOError on error."""
    mkl_int_bits()
    _call(_L.pardiso, pt, maxfct, mnum, mtype, phase, n, a, ia, ja, perm, nrhs, iparm, msglvl, b, x,
          c_int64 if _bits == 64 else c_int)


def pardiso_64(pt: int, maxfct: int, mnum: int, mtype: int, phase: int, n: int, a: int, ia: int, ja: int,
               perm: int, nrhs: int, iparm: int, msglvl: int, b: int, x: int) -> None:
    """One call of ``pardiso_64`` (64-bit integer arrays, ``iparm`` included)."""
    _call(_L.pardiso_64, pt, maxfct, mnum, mtype, phase, n, a, ia, ja, perm, nrhs, iparm, msglvl, b, x, c_int64)


def pardiso_getdiag(pt: int, df: int, da: int, mnum: int) -> None:
    """The diagonal of the factors (``df``) and of the matrix (``da``), n values each of the matrix's type
    (needs ``iparm[55] = 1`` before the factorization)."""
    mkl_int_bits()
    ctype = c_int64 if _bits == 64 else c_int
    m, err = ctype(mnum), ctype(0)
    _L.pardiso_getdiag(pt, df, da, byref(m), byref(err))
    check(err.value, "getdiag")


def mkl_domain_set_num_threads(n: int, domain: int = MKL_DOMAIN_PARDISO) -> int:
    return _L.MKL_Domain_Set_Num_Threads(n, domain)


def mkl_domain_get_max_threads(domain: int = MKL_DOMAIN_PARDISO) -> int:
    return _L.MKL_Domain_Get_Max_Threads(domain)


def mkl_get_max_threads() -> int:
    return _L.MKL_Get_Max_Threads()


def mkl_get_version_string() -> str:
    from ctypes import create_string_buffer

    buf = create_string_buffer(256)
    _L.MKL_Get_Version_String(buf, 256)
    return buf.value.decode(errors="replace")

