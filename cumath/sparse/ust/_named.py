"""Pre-defined tensor formats (the common ones, directly or through builders)."""

from __future__ import annotations

from ._dsl import Dimension, LevelFormat as F, LevelProperty as P, TensorFormat

__all__ = ["NamedFormats"]

_i, _j, _k, _b = Dimension("i"), Dimension("j"), Dimension("k"), Dimension("batch")


def _fmt(dims, levels, name):
    return TensorFormat(dims, levels, name=name)


class _BlockBuilder:
    """A builder of block formats, called with the block's ``r x c``: 'BSR' (block rows dense, block columns
    compressed) or 'BSC' (the other way round), blocks stored row-major ('Right') or column-major ('Left')."""

    def __init__(self, kind: str, order: str, doc: str):
        self.kind, self.order, self.__doc__ = kind, order, doc
        self.__name__ = self.__qualname__ = f"{kind}{order}"

    def __call__(self, r: int, c: int) -> TensorFormat:
        outer = {"BSR": (_i // r, _j // c), "BSC": (_j // c, _i // r)}[self.kind]
        inner = {"Right": (_i % r, _j % c), "Left": (_j % c, _i % r)}[self.order]
        return _fmt((_i, _j), {outer[0]: F.DENSE, outer[1]: F.COMPRESSED, inner[0]: F.DENSE, inner[1]: F.DENSE},
                    f"{self.kind}{self.order}{r}x{c}")

    def __repr__(self):
        return f"NamedFormats.{self.__name__}"


class NamedFormats:
    """Common formats: ``Scalar``, ``DenseVector``, ``DenseMatrixRight`` (row-major), ``DenseMatrixLeft``
    (column-major), ``COO``, ``CSR``, ``CSC``, ``DCSR``, ``DCSC``, ``CROW``, ``CCOL``, ``DIAI``, ``DIAJ`` and
    their skew forms, ``BatchedCSR``, ``BatchedDIAIUniform``, ``BatchedDIAINonUniform``; builders ``BSRRight``,
    ``BSRLeft``, ``BSCRight``, ``BSCLeft``, ``Structured`` (N:M), ``Delta`` (a format with DELTA levels),
    ``COOd`` (COO of any order), ``CSFd`` (CSF of any order), ``DenseTensor``."""

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

    BSRRight = _BlockBuilder("BSR", "Right", "Block CSR with row-major ``r x c`` blocks.")
    BSRLeft = _BlockBuilder("BSR", "Left", "Block CSR with column-major ``r x c`` blocks.")
    BSCRight = _BlockBuilder("BSC", "Right", "Block CSC with row-major ``r x c`` blocks.")
    BSCLeft = _BlockBuilder("BSC", "Left", "Block CSC with column-major ``r x c`` blocks.")

    @staticmethod
    def Structured(n: int, m: int) -> TensorFormat:
        """N:M structured sparsity along the rows (2:4 is what sparse tensor cores multiply): in every block of
        ``m`` consecutive columns of a row at most ``n`` elements, stored as exactly ``n`` (column, value) pairs,
        zero-padded where a block holds fewer."""
        return _fmt((_i, _j), {_i: F.DENSE, _j // m: F.DENSE, _j % m: (F.STRUCTURED, n)}, f"Structured{n}x{m}")

    @staticmethod
    def Delta(base: TensorFormat) -> TensorFormat:
        """``base`` with its COMPRESSED levels stored as DELTA (each coordinate as the difference from the previous
        one of its parent): ``Delta(NamedFormats.CSR)`` keeps column gaps instead of columns."""
        levels = {}
        for expr, spec in base.levels.items():
            kind, rest = (spec, ()) if isinstance(spec, F) else (spec[0], spec[1:])
            if kind == F.COMPRESSED:
                if P.NONUNIQUE in rest:
                    raise ValueError(f"{base.name} has a NONUNIQUE compressed level ({expr!r}); a DELTA level keeps "
                                     f"unique coordinates: use a format with unique levels (CSR, DCSR, ...)")
                kind = F.DELTA
            levels[expr] = (kind, *rest) if rest else kind
        if not any((s if isinstance(s, F) else s[0]) == F.DELTA for s in levels.values()):
            raise ValueError(f"{base.name} has no COMPRESSED level to store as DELTA")
        return _fmt(base.dimensions, levels, f"Delta{base.name}")

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
