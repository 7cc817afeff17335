"""The Universal Sparse Tensor (the shape of nvmath-python 1.0's ``nvmath.sparse.ust``): a format DSL
(:class:`Dimension`, level expressions, :class:`LevelFormat`, :class:`LevelProperty`, :class:`TensorFormat`,
:class:`NamedFormats`) and :class:`Tensor`, which binds a format to the arrays of a package."""

from ._dsl import Dimension, LevelExpr, LevelFormat, LevelProperty, TensorFormat
from ._named import NamedFormats
from ._tensor import Tensor

__all__ = ["Dimension", "LevelExpr", "LevelFormat", "LevelProperty", "TensorFormat", "NamedFormats", "Tensor"]
