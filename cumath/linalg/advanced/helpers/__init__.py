"""Helpers of the advanced matmul (nvmath-python's ``nvmath.linalg.advanced.helpers``)."""

from . import matmul

__all__ = ["matmul"]
