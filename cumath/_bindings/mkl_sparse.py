"""ctypes bindings of oneMKL's inspector-executor sparse BLAS (through ``libmkl_rt``), 1:1 with ``mkl_spblas.h``.

Facts from Intel's oneMKL Developer Reference (C), "Inspector-executor Sparse BLAS routines": the enums
``sparse_status_t``, ``sparse_operation_t``, ``sparse_matrix_type_t``, ``sparse_index_base_t``,
``sparse_fill_mode_t``, ``sparse_diag_type_t``, ``sparse_layout_t``, ``sparse_memory_usage_t``, the struct
``matrix_descr`` (three enums, passed by value) and the routines ``mkl_sparse_?_create_{csr,csc,bsr}``,
``mkl_sparse_?_mm``, ``mkl_sparse_?_mv``, ``mkl_sparse_set_{mm,mv}_hint``, ``mkl_sparse_set_memory_hint``,
``mkl_sparse_optimize`` and ``mkl_sparse_destroy``.

Two integer widths: the plain names take ``MKL_INT`` (32-bit under the LP64 interface layer cumath selects,
see ``mkl_pardiso.mkl_int_bits``), the ``_64`` names (oneMKL 2024+) always take 64-bit integers and indices.
A wrapper takes ``bits`` (32 or 64) and calls the matching C function. Complex scalars (``MKL_Complex8``,
``MKL_Complex16``) are structs of two reals passed by value. Pointers are Python ints; ``handle`` is the
``sparse_matrix_t`` (an opaque pointer). Nothing is loaded at import time.
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import byref, c_double, c_float, c_int, c_int64, c_void_p

from ..errors import MKLSparseError
from ._loader import LazyFunctions
from ._status import make_checker

__all__ = ["Status", "Operation", "MatrixType", "IndexBase", "FillMode", "DiagType", "Layout", "MemoryUsage",
           "MatrixDescr", "TABLE", "check", "PREFIX", "create_csr", "create_csc", "create_bsr", "mm", "mv",
           "set_mm_hint", "set_mv_hint", "set_memory_hint", "optimize", "destroy", "available"]


class Status(enum.IntEnum):
    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 2
    INVALID_VALUE = 3
    EXECUTION_FAILED = 4
    INTERNAL_ERROR = 5
    NOT_SUPPORTED = 6


class Operation(enum.IntEnum):
    NON_TRANSPOSE = 10
    TRANSPOSE = 11
    CONJUGATE_TRANSPOSE = 12


class MatrixType(enum.IntEnum):
    GENERAL = 20
    SYMMETRIC = 21
    HERMITIAN = 22
    TRIANGULAR = 23
    DIAGONAL = 24
    BLOCK_TRIANGULAR = 25
    BLOCK_DIAGONAL = 26


class IndexBase(enum.IntEnum):
    ZERO = 0
    ONE = 1


class FillMode(enum.IntEnum):
    LOWER = 40
    UPPER = 41
    FULL = 42


class DiagType(enum.IntEnum):
    NON_UNIT = 50
    UNIT = 51


class Layout(enum.IntEnum):
    ROW_MAJOR = 101
    COLUMN_MAJOR = 102


class MemoryUsage(enum.IntEnum):
    NONE = 80  # SPARSE_MEMORY_NONE: no extra memory for optimization
    AGGRESSIVE = 81


class MatrixDescr(ctypes.Structure):
    """``struct matrix_descr``."""

    _fields_ = [("type", c_int), ("mode", c_int), ("diag", c_int)]


class _C8(ctypes.Structure):
    _fields_ = [("real", c_float), ("imag", c_float)]


class _C16(ctypes.Structure):
    _fields_ = [("real", c_double), ("imag", c_double)]


#: the routine letter and the C scalar type of each dtype
PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_SCALAR = {"s": c_float, "d": c_double, "c": _C8, "z": _C16}

_p = c_void_p


def _table() -> dict:
    t = {}
    for suffix, I in (("", c_int), ("_64", c_int64)):
        for x, S in _SCALAR.items():
            # A*, indexing, rows, cols, rows_start, rows_end, col_indx, values
            t[f"mkl_sparse_{x}_create_csr{suffix}"] = (c_int, [_p, c_int, I, I, _p, _p, _p, _p])
            t[f"mkl_sparse_{x}_create_csc{suffix}"] = (c_int, [_p, c_int, I, I, _p, _p, _p, _p])
            # A*, indexing, block_layout, rows, cols, block_size, rows_start, rows_end, col_indx, values
            t[f"mkl_sparse_{x}_create_bsr{suffix}"] = (c_int, [_p, c_int, c_int, I, I, I, _p, _p, _p, _p])
            # operation, alpha, A, descr, layout, B, columns, ldb, beta, C, ldc
            t[f"mkl_sparse_{x}_mm{suffix}"] = (c_int, [c_int, S, _p, MatrixDescr, c_int, _p, I, I, S, _p, I])
            # operation, alpha, A, descr, x, beta, y
            t[f"mkl_sparse_{x}_mv{suffix}"] = (c_int, [c_int, S, _p, MatrixDescr, _p, S, _p])
        # A, operation, descr, layout, dense_matrix_size, expected_calls
        t[f"mkl_sparse_set_mm_hint{suffix}"] = (c_int, [_p, c_int, MatrixDescr, c_int, I, I])
        # A, operation, descr, expected_calls
        t[f"mkl_sparse_set_mv_hint{suffix}"] = (c_int, [_p, c_int, MatrixDescr, I])
        t[f"mkl_sparse_set_memory_hint{suffix}"] = (c_int, [_p, c_int])
        t[f"mkl_sparse_optimize{suffix}"] = (c_int, [_p])
        t[f"mkl_sparse_destroy{suffix}"] = (c_int, [_p])
    return t


TABLE = _table()
_L = LazyFunctions("mkl_rt", TABLE)
check = make_checker(MKLSparseError, Status)


def _sfx(bits: int) -> str:
    return "_64" if bits == 64 else ""


def available() -> bool:
    """Whether libmkl_rt loads and has the 64-bit-index routines (oneMKL 2024 or newer)."""
    return _L.has("mkl_sparse_d_mm_64")


def scalar(dtype: str, value):
    """``value`` as the C scalar of ``dtype`` (a struct for the complex types)."""
    S = _SCALAR[PREFIX[dtype]]
    if dtype.startswith("complex"):
        v = complex(value)
        return S(v.real, v.imag)
    return S(value)


def _create(kind: str, dtype: str, bits: int, *args) -> int:
    handle = c_void_p()
    fn = getattr(_L, f"mkl_sparse_{PREFIX[dtype]}_create_{kind}{_sfx(bits)}")
    check(fn(byref(handle), *args), f"mkl_sparse_?_create_{kind}")
    return handle.value


def create_csr(dtype: str, bits: int, indexing: int, rows: int, cols: int, rows_start: int, rows_end: int,
               col_indx: int, values: int) -> int:
    """A ``sparse_matrix_t`` over the caller's CSR arrays (no copy); ``rows_end`` is usually rows_start + 1."""
    return _create("csr", dtype, bits, indexing, rows, cols, rows_start, rows_end, col_indx, values)


def create_csc(dtype: str, bits: int, indexing: int, rows: int, cols: int, cols_start: int, cols_end: int,
               row_indx: int, values: int) -> int:
    return _create("csc", dtype, bits, indexing, rows, cols, cols_start, cols_end, row_indx, values)


def create_bsr(dtype: str, bits: int, indexing: int, block_layout: int, rows: int, cols: int, block_size: int,
               rows_start: int, rows_end: int, col_indx: int, values: int) -> int:
    """``rows``/``cols`` count block rows and block columns; ``block_layout`` is a :class:`Layout` of each
    block's values."""
    return _create("bsr", dtype, bits, indexing, block_layout, rows, cols, block_size, rows_start, rows_end,
                   col_indx, values)


def mm_function(dtype: str, bits: int):
    """The raw ctypes ``mkl_sparse_?_mm`` (for a hot path that binds its arguments once)."""
    return getattr(_L, f"mkl_sparse_{PREFIX[dtype]}_mm{_sfx(bits)}")


def mv_function(dtype: str, bits: int):
    return getattr(_L, f"mkl_sparse_{PREFIX[dtype]}_mv{_sfx(bits)}")


def mm(dtype: str, bits: int, operation: int, alpha, handle: int, descr: MatrixDescr, layout: int, b: int,
       columns: int, ldb: int, beta, c: int, ldc: int) -> None:
    check(mm_function(dtype, bits)(operation, scalar(dtype, alpha), handle, descr, layout, b, columns, ldb,
                                   scalar(dtype, beta), c, ldc), "mkl_sparse_?_mm")


def mv(dtype: str, bits: int, operation: int, alpha, handle: int, descr: MatrixDescr, x: int, beta, y: int) -> None:
    check(mv_function(dtype, bits)(operation, scalar(dtype, alpha), handle, descr, x, scalar(dtype, beta), y),
          "mkl_sparse_?_mv")


def set_mm_hint(bits: int, handle: int, operation: int, descr: MatrixDescr, layout: int, dense_matrix_size: int,
                expected_calls: int) -> None:
    check(getattr(_L, f"mkl_sparse_set_mm_hint{_sfx(bits)}")(handle, operation, descr, layout, dense_matrix_size,
                                                             expected_calls), "mkl_sparse_set_mm_hint")


def set_mv_hint(bits: int, handle: int, operation: int, descr: MatrixDescr, expected_calls: int) -> None:
    check(getattr(_L, f"mkl_sparse_set_mv_hint{_sfx(bits)}")(handle, operation, descr, expected_calls),
          "mkl_sparse_set_mv_hint")


def set_memory_hint(bits: int, handle: int, policy: int) -> None:
    check(getattr(_L, f"mkl_sparse_set_memory_hint{_sfx(bits)}")(handle, policy), "mkl_sparse_set_memory_hint")


def optimize(bits: int, handle: int) -> None:
    check(getattr(_L, f"mkl_sparse_optimize{_sfx(bits)}")(handle), "mkl_sparse_optimize")


def destroy(bits: int, handle: int) -> None:
    check(getattr(_L, f"mkl_sparse_destroy{_sfx(bits)}")(handle), "mkl_sparse_destroy")
