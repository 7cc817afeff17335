"""Pre-defined tensor formats (the common ones, directly or through builders)."""

from __future__ import annotations

from ._dsl import Dimension, LevelFormat as F, LevelProperty as P, TensorFormat

__all__ = ["NamedFormats"]

_i, _j, _k, _b = Dimension("i"), Dimension("j"), Dimension("k"), Dimension("batch")


def _fmt(dims, levels, name):
    return TensorFormat(dims, levels, name=name)


class NamedFormats:
    """Common formats: ``Scalar``, ``DenseVector``, ``DenseMatrixRight`` (row-major), ``DenseMatrixLeft``
    (column-major), ``COO``, ``CSR``, ``CSC``, ``DCSR``, ``DCSC``, ``CROW``, ``CCOL``, ``DIAI``, ``DIAJ`` and
    their skew forms, ``BatchedCSR``, ``BatchedDIAIUniform``, ``BatchedDIAINonUniform``; builders ``BSRRight``,
    ``BSRLeft``, ``BSCRight``, ``BSCLeft``, ``COOd`` (COO of any order), ``CSFd`` (CSF of any order),
    ``DenseTensor``."""

    Scalar = _fmt((), {}, "Scalar")
    DenseVector = _fmt((_i,), {_i: F.DENSE}, "DenseVector")
    SparseVector = _fmt((_i,), {_i: F.COMPRESSED}, "SparseVector")
    DenseMatrixRight = _fmt((_i, _j), {_i: F.DENSE, _j: F.DENSE}, "DenseMatrixRight")
    DenseMatrixLeft = _fmt((_i, _j), {_j: F.DENSE, _i: F.DENSE}, "DenseMatrixLeft")
    COO = _fmt((_i, _j), {_i: (F.COMPRESSED, P.NONUNIQUE), _j: F.SINGLETON}, "COO")
    CSR = _fmt((_i, _j), {_i: F.DENSE, _j: F.COMPRESSED}, "CSR")
    CSC = _fmt((_i, _j), {_j: F.DENSE, _i: F.COMPRESSED}, "CSC")
    DCSR = _fmt((_i, _j), {_i: F.COMPRESSED, _j: F.COMPRESSED}, "DCSR")
    DCSC = _fmt((_i, _j), {_j: F.COMPRESSED, _i: F.COMPRESSED}, "DCSC")
    CROW = _fmt((_i, _j), {_i: F.COMPRESSED, _j: F.DENSE}, "CROW")
    CCOL = _fmt((_i, _j), {_j: F.COMPRESSED, _i: F.DENSE}, "CCOL")
    DIAI = _fmt((_i, _j), {_j - _i: F.COMPRESSED, _i: F.RANGE}, "DIAI")
    DIAJ = _fmt((_i, _j), {_j - _i: F.COMPRESSED, _j: F.RANGE}, "DIAJ")
    SkewDIAI = _fmt((_i, _j), {_i + _j: F.COMPRESSED, _i: F.RANGE}, "SkewDIAI")
    SkewDIAJ = _fmt((_i, _j), {_i + _j: F.COMPRESSED, _j: F.RANGE}, "SkewDIAJ")
    BatchedCSR = _fmt((_b, _i, _j), {_b: F.DENSE, _i: F.DENSE, _j: F.COMPRESSED}, "BatchedCSR")
    BatchedDIAINonUniform = _fmt((_b, _i, _j), {_b: F.DENSE, _j - _i: F.COMPRESSED, _i: F.RANGE},
                                 "BatchedDIAINonUniform")
    BatchedDIAIUniform = _fmt((_b, _i, _j), {_j - _i: F.COMPRESSED, _b: F.DENSE, _i: F.RANGE}, "BatchedDIAIUniform")

    @staticmethod
    def BSRRight(r: int, c: int) -> TensorFormat:
        """Block CSR with row-major ``r x c`` blocks."""
        return _fmt((_i, _j), {_i // r: F.DENSE, _j // c: F.COMPRESSED, _i % r: F.DENSE, _j % c: F.DENSE},
                    f"BSRRight{r}x{c}")

    @staticmethod
    def BSRLeft(r: int, c: int) -> TensorFormat:
        return _fmt((_i, _j), {_i // r: F.DENSE, _j // c: F.COMPRESSED, _j % c: F.DENSE, _i % r: F.DENSE},
                    f"BSRLeft{r}x{c}")

    @staticmethod
    def BSCRight(r: int, c: int) -> TensorFormat:
        return _fmt((_i, _j), {_j // c: F.DENSE, _i // r: F.COMPRESSED, _i % r: F.DENSE, _j % c: F.DENSE},
                    f"BSCRight{r}x{c}")

    @staticmethod
    def BSCLeft(r: int, c: int) -> TensorFormat:
        return _fmt((_i, _j), {_j // c: F.DENSE, _i // r: F.COMPRESSED, _j % c: F.DENSE, _i % r: F.DENSE},
                    f"BSCLeft{r}x{c}")

    @staticmethod
    def COOd(order: int) -> TensorFormat:
        """COO of an order-``order`` tensor."""
        dims = tuple(Dimension(f"i{n}") for n in range(order))
        levels = {dims[0]: (F.COMPRESSED, P.NONUNIQUE)}
        for n, d in enumerate(dims[1:], 1):
            levels[d] = (F.SINGLETON, P.NONUNIQUE) if n < order - 1 else F.SINGLETON
        return _fmt(dims, levels, f"COO{order}d")

    @staticmethod
    def CSFd(order: int) -> TensorFormat:
        """Compressed sparse fibres: every level compressed."""
        dims = tuple(Dimension(f"i{n}") for n in range(order))
        return _fmt(dims, {d: F.COMPRESSED for d in dims}, f"CSF{order}d")

    @staticmethod
    def DenseTensor(order: int) -> TensorFormat:
        dims = tuple(Dimension(f"i{n}") for n in range(order))
        return _fmt(dims, {d: F.DENSE for d in dims}, f"Dense{order}d")
