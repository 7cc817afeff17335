"""The engines of the advanced matmul, behind one small protocol, and the registry that picks one per variant.

cuBLASLt (``cublaslt.py``) plans every variant: descriptors, heuristics, and the algorithms that ``autotune()``
and ``execute(algorithm=...)`` run. An engine may take a planned variant's default execution over with a kernel
of its own (``small.py``: every extent small, launch-bound; ``memory_bound.py``: tall-skinny products); ``kernel_for`` asks the engines of ``ENGINES`` in
order, once per variant, and the first kernel offered runs the variant. cuBLASLt, last, offers none: the
variant's planned ``cublasLtMatmul`` call runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from . import cublaslt, memory_bound, small

__all__ = ["Product", "Kernel", "Engine", "ENGINES", "kernel_for"]


@dataclass(frozen=True)
class Product:
    """What an engine sees of a planned variant (pure data): the geometry and formulation (``_traits``), the
    dtype plan, the epilog (a MatmulEpilog value), the conjugations of a and b, whether the result is c, and
    the GPU."""

    geom: object
    form: object
    dt: object
    epilog: int
    conj: tuple
    inplace: bool
    device: int


class Kernel(Protocol):
    """A planned kernel: ``D = alpha * A @ B + beta * C`` on device pointers, queued on ``stream``."""

    def launch(self, a_ptr: int, b_ptr: int, c_ptr: int, d_ptr: int, alpha, beta, stream: int) -> None: ...

    def free(self) -> None: ...


class Engine(Protocol):
    """An engine: ``name``, and ``select(product, log)``: its kernel for the product, or None to leave it to the
    variant's planned cuBLASLt call. ``log`` is the operation's logger (its decisions are INFO)."""

    name: str

    def select(self, product: Product, log) -> Kernel | None: ...


#: asked in this order; the first kernel offered runs the variant
ENGINES: tuple = (small.ENGINE, memory_bound.ENGINE, cublaslt.ENGINE)


def kernel_for(product: Product, log) -> tuple:
    """``(engine name, kernel or None)`` for a planned variant."""
    for engine in ENGINES:
        kernel = engine.select(product, log)
        if kernel is not None:
            return engine.name, kernel
    return cublaslt.ENGINE.name, None
