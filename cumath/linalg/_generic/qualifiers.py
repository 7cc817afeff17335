"""Matrix qualifiers of the generic matmul: what structure an operand has (general, symmetric, Hermitian,
triangular, diagonal) and whether it is conjugated. The shape of nvmath-python's ``nvmath.linalg`` qualifiers.

A qualifier is a NumPy scalar array of ``matrix_qualifiers_dtype``; an array of up to three of them (for a, b
and c) is passed to ``matmul(..., qualifiers=)``::

    q = np.full(2, GeneralMatrixQualifier.create(), dtype=matrix_qualifiers_dtype)
    q[0] = TriangularMatrixQualifier.create(uplo=FillMode.UPPER, diag=DiagType.UNIT)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import enum

import numpy as np

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FillMode",
    "DiagType",
    "SideMode",
    "matrix_qualifiers_dtype",
    "MatrixQualifier",
    "GeneralMatrixQualifier",
    "SymmetricMatrixQualifier",
    "HermitianMatrixQualifier",
    "TriangularMatrixQualifier",
    "DiagonalMatrixQualifier",
    "ABBREVIATIONS",
    "check_qualifiers",
]


class FillMode(enum.IntEnum):
    """Which triangle of a structured matrix holds its values (the values of cuBLAS's cublasFillMode_t)."""

    LOWER = 0
    UPPER = 1
    FULL = 2


class DiagType(enum.IntEnum):
    """Whether a triangular matrix has an implicit unit diagonal (cuBLAS's cublasDiagType_t)."""

    NON_UNIT = 0
    UNIT = 1


class SideMode(enum.IntEnum):
    """On which side of the product a structured matrix stands (cuBLAS's cublasSideMode_t)."""

    LEFT = 0
    RIGHT = 1


#: A NumPy structured dtype that describes a matrix: ``abbreviation`` ('ge', 'sy', 'he', 'tr', 'dg'),
#: ``conjugate`` (use the complex conjugate of the operand), ``uplo`` (a FillMode), ``diag`` (a DiagType) and
#: ``incx`` (+1 or -1: read a diagonal forward or backward; 0 for other structures).
matrix_qualifiers_dtype = np.dtype([("abbreviation", "U2"), ("conjugate", np.bool_), ("uplo", np.int64),
                                    ("diag", np.int64), ("incx", np.int64)])

#: A NumPy array of ``matrix_qualifiers_dtype`` (the type of what the ``create()`` methods return).
MatrixQualifier = np.ndarray

ABBREVIATIONS = {"ge": "general", "sy": "symmetric", "he": "Hermitian", "tr": "triangular", "dg": "diagonal"}


def _record(abbreviation, conjugate, uplo, diag, incx) -> np.ndarray:
    return np.array((abbreviation, bool(conjugate), int(uplo), int(diag), int(incx)), dtype=matrix_qualifiers_dtype)


class _Qualifier:
    abbreviation = "ge"

    def __init__(self) -> None:
        raise RuntimeError(f"{type(self).__name__} is not instantiated; call {type(self).__name__}.create()")

    @classmethod
    def is_valid(cls, other: Any) -> bool:
        """True when every element of ``other`` is a valid qualifier made by this class."""
        other = np.asarray(other)
        if other.dtype.names is None or "abbreviation" not in other.dtype.names:
            return False
        return bool(np.all(other["abbreviation"] == cls.abbreviation)) and bool(np.all(cls._fields_ok(other)))

    @classmethod
    def _fields_ok(cls, other):
        return np.ones(other.shape, dtype=bool)

    @classmethod
    def to_string(cls, other: Any) -> str:
        """A readable form of one qualifier."""
        q = np.asarray(other)
        return (f"({str(q['abbreviation'])}, conjugate={bool(q['conjugate'])}, uplo={_name(FillMode, q['uplo'])}, "
                f"diag={_name(DiagType, q['diag'])}, incx={int(q['incx'])})")


def _name(enum_cls, value) -> str:
    try:
        return enum_cls(int(value)).name
    except ValueError:
        return str(int(value))


class GeneralMatrixQualifier(_Qualifier):
    """A general (dense, unstructured) matrix; ``create(conjugate=False)``."""

    abbreviation = "ge"

    @classmethod
    def create(cls, conjugate: bool = False) -> np.ndarray:
        return _record(cls.abbreviation, conjugate, FillMode.FULL, DiagType.NON_UNIT, 0)


def _check_uplo(uplo):
    if uplo not in (FillMode.LOWER, FillMode.UPPER):
        raise ValueError(f"uplo={uplo!r} is not supported; the allowed values are FillMode.LOWER and FillMode.UPPER")


class _SquareQualifier(_Qualifier):
    @classmethod
    def create(cls, conjugate: bool = False, uplo: FillMode = FillMode.LOWER) -> np.ndarray:
        _check_uplo(uplo)
        return _record(cls.abbreviation, conjugate, uplo, DiagType.NON_UNIT, 0)

    @classmethod
    def _fields_ok(cls, other):
        return (other["uplo"] == FillMode.LOWER) | (other["uplo"] == FillMode.UPPER)


class SymmetricMatrixQualifier(_SquareQualifier):
    """A symmetric matrix whose ``uplo`` triangle is read (the other one is ignored);
    ``create(conjugate=False, uplo=FillMode.LOWER)``."""

    abbreviation = "sy"


class HermitianMatrixQualifier(_SquareQualifier):
    """A Hermitian matrix whose ``uplo`` triangle is read (the imaginary parts of its diagonal are taken as
    zero); ``create(conjugate=False, uplo=FillMode.LOWER)``."""

    abbreviation = "he"


class TriangularMatrixQualifier(_SquareQualifier):
    """A triangular matrix (``uplo`` triangle; ``diag=DiagType.UNIT`` takes the diagonal as ones);
    ``create(conjugate=False, uplo=FillMode.LOWER, diag=DiagType.NON_UNIT)``."""

    abbreviation = "tr"

    @classmethod
    def create(cls, conjugate: bool = False, uplo: FillMode = FillMode.LOWER,
               diag: DiagType = DiagType.NON_UNIT) -> np.ndarray:
        _check_uplo(uplo)
        if diag not in (DiagType.NON_UNIT, DiagType.UNIT):
            raise ValueError(f"diag={diag!r} is not supported; the allowed values are DiagType.NON_UNIT and "
                             f"DiagType.UNIT")
        return _record(cls.abbreviation, conjugate, uplo, diag, 0)

    @classmethod
    def _fields_ok(cls, other):
        return super()._fields_ok(other) & ((other["diag"] == DiagType.NON_UNIT) | (other["diag"] == DiagType.UNIT))


class DiagonalMatrixQualifier(_Qualifier):
    """A diagonal matrix given by the vector of its diagonal (the operand's last axis: shape (n,) stands for
    an n x n matrix); ``incx=-1`` reads the vector backwards. ``create(conjugate=False, incx=1)``."""

    abbreviation = "dg"

    @classmethod
    def create(cls, conjugate: bool = False, incx: int = 1) -> np.ndarray:
        if incx not in (-1, 1):
            raise ValueError(f"incx={incx!r} is not supported; the allowed values are 1 and -1")
        return _record(cls.abbreviation, conjugate, FillMode.FULL, DiagType.NON_UNIT, incx)

    @classmethod
    def _fields_ok(cls, other):
        return (other["incx"] == 1) | (other["incx"] == -1)


_CLASSES = {c.abbreviation: c for c in (GeneralMatrixQualifier, SymmetricMatrixQualifier, HermitianMatrixQualifier,
                                        TriangularMatrixQualifier, DiagonalMatrixQualifier)}


def check_qualifiers(qualifiers, has_c: bool) -> tuple:
    """Validate ``qualifiers`` (None, or an array-like of 2 or 3 ``matrix_qualifiers_dtype`` records; c is
    general when only 2 are given, with or without c) and return a tuple of three plain tuples
    ``(abbreviation, conjugate, uplo, diag, incx)`` for a, b and c."""
    general = ("ge", False, int(FillMode.FULL), int(DiagType.NON_UNIT), 0)
    if qualifiers is None:
        return (general, general, general)
    q = np.asarray(qualifiers)
    if q.dtype.names is None or not {"abbreviation", "conjugate"} <= set(q.dtype.names):
        raise TypeError(f"qualifiers must be a NumPy array of matrix_qualifiers_dtype (e.g. made with "
                        f"GeneralMatrixQualifier.create()), not an array of dtype {q.dtype}")
    q = q.reshape(-1)
    if len(q) not in (2, 3):
        raise ValueError(f"qualifiers has {len(q)} entries; it needs one per operand: 2 (a and b) or 3 (a, b and "
                         f"c; c is general)")
    out = []
    for name, rec in zip("abc", q):
        abbr = str(rec["abbreviation"])
        cls = _CLASSES.get(abbr)
        if cls is None:
            raise ValueError(f"the qualifier of {name} has abbreviation {abbr!r}; the allowed values are "
                             f"{list(_CLASSES)} ({', '.join(ABBREVIATIONS.values())})")
        get = (lambda f, d: int(rec[f]) if f in q.dtype.names else d)
        values = (abbr, bool(rec["conjugate"]), get("uplo", int(FillMode.FULL)), get("diag", 0), get("incx", 0))
        if not cls.is_valid(_record(*values)):
            raise ValueError(f"the qualifier of {name} is not a valid {ABBREVIATIONS[abbr]} qualifier: "
                             f"{cls.to_string(_record(*values))}; make it with {cls.__name__}.create()")
        out.append(values)
    if len(out) == 2:
        out.append(general)
    if out[2][0] != "ge":
        raise ValueError(f"c must be a general matrix; its qualifier is {ABBREVIATIONS[out[2][0]]} ('{out[2][0]}')")
    if out[2][1]:
        raise ValueError("the conjugate flag is not supported for c; conjugate c before the call")
    if out[0][0] != "ge" and out[1][0] != "ge":
        raise ValueError(f"at most one of a and b may be structured; a is {ABBREVIATIONS[out[0][0]]} and b is "
                         f"{ABBREVIATIONS[out[1][0]]} (pass one of them with GeneralMatrixQualifier)")
    return tuple(out)
