"""The memory-bound GEMM (``_memory_bound.py``) as an engine of the advanced matmul: it takes a planned variant
over when the product is tall and skinny (small k and n), plain (no epilog, one dtype, no conjugation) and laid
out as its kernel reads it, and ``_memory_bound.select`` expects it to beat cuBLASLt there."""

from __future__ import annotations

from .._memory_bound import GemmProblem, select as select_kernel
from .kernel_engine import KernelEngine

__all__ = ["ENGINE"]

_DEFAULT_EPILOG = 1  # MatmulEpilog.DEFAULT


def gemm_problem(product) -> GemmProblem | None:
    """The kernel's problem for ``product`` (a ``_backends.Product``), or None when the kernel cannot run it."""
    geom, dt = product.geom, product.dt
    if product.epilog != _DEFAULT_EPILOG or dt.narrow or any(product.conj) or product.inplace:
        return None
    if not (dt.a == dt.b == dt.c == dt.d) or geom.a.copy or geom.b.copy:
        return None
    c = geom.c
    if c is not None and geom.c_copy and not (c.cs == 0 and (geom.batch == 1 or c.batch_stride)):
        return None  # of the broadcast forms of c, the kernel reads only a column broadcast in place
    d_strides = (geom.n, 1) if product.form.d_order == "row" else (1, geom.m)
    return GemmProblem(geom.m, geom.n, geom.k, dt.a, (geom.a.rs, geom.a.cs), (geom.b.rs, geom.b.cs),
                       (c.rs, c.cs) if c is not None else None, d_strides, geom.batch, geom.a.batch_stride,
                       geom.b.batch_stride, c.batch_stride if c is not None else 0, geom.m * geom.n, product.device)


ENGINE = KernelEngine("memory_bound", "memory-bound GEMM", gemm_problem, lambda problem: select_kernel(problem))
