"""A kernel of cumath's own as an engine of the advanced matmul (``_backends/__init__.py``): the kernel's problem
read from a planned product (None: the kernel cannot run it), then the kernel's own selection rule; any failure
leaves the product to cuBLASLt, logged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["KernelEngine"]


@dataclass(frozen=True)
class KernelEngine:
    name: str  # the engine's name (``Variant.engine``)
    what: str  # the kernel, as the log says it
    problem_of: Callable  # product -> the kernel's problem, or None
    select_kernel: Callable  # problem -> a planned kernel, or None

    def select(self, product, log):
        problem = self.problem_of(product)
        if problem is None:
            return None
        try:
            kernel = self.select_kernel(problem)
        except Exception as exc:  # the kernel is an optimisation: cuBLASLt remains
            log.info("the %s kernel is not available (%s); cuBLASLt runs the matmul", self.what, exc)
            return None
        if kernel is not None:
            g = product.geom
            log.info("the %s kernel runs this problem (M=%d, N=%d, K=%d, batch=%d)", self.what, g.m, g.n, g.k,
                     g.batch)
        return kernel
