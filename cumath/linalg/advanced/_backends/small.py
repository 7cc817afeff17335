"""The small-GEMM kernel (``_small_gemm.py``) as an engine of the advanced matmul: it takes a planned variant's
default execution over when every extent is small, the product is plain (no epilog, no conjugation, not in
place, c absent or a full matrix, read where it is) and the compute type is the plain one of the dtype (COMPUTE_32F for
float32, float16 and bfloat16, COMPUTE_64F for float64: never TF32 or another reduced or emulated type)."""

from __future__ import annotations

from .._options import MatmulComputeType as CT
from .._small_gemm import SmallProblem, select as select_kernel
from .kernel_engine import KernelEngine

__all__ = ["ENGINE", "small_problem"]

_DEFAULT_EPILOG = 1  # MatmulEpilog.DEFAULT
_COMPUTE = {int(CT.COMPUTE_32F): "float32", int(CT.COMPUTE_32F_PEDANTIC): "float32",
            int(CT.COMPUTE_64F): "float64", int(CT.COMPUTE_64F_PEDANTIC): "float64"}


def small_problem(product) -> SmallProblem | None:
    """The kernel's problem for ``product`` (a ``_backends.Product``), or None when the kernel cannot run it."""
    geom, dt, form = product.geom, product.dt, product.form
    if product.epilog != _DEFAULT_EPILOG or dt.narrow or any(product.conj) or product.inplace:
        return None
    compute = _COMPUTE.get(int(dt.compute))
    if compute is None or dt.a != dt.b or dt.c != dt.d or geom.a.copy or geom.b.copy:
        return None
    c = geom.c
    if c is not None and (geom.c_copy or c.copy):
        return None  # a broadcast c (copied into the result first) stays with cuBLASLt; any other c is read in place
    d_strides = (geom.n, 1) if form.d_order == "row" else (1, geom.m)
    return SmallProblem(geom.m, geom.n, geom.k, dt.a, (geom.a.rs, geom.a.cs), (geom.b.rs, geom.b.cs),
                        (c.rs, c.cs) if c is not None else None, d_strides, geom.batch, geom.a.batch_stride,
                        geom.b.batch_stride, c.batch_stride if c is not None else 0, geom.m * geom.n, product.device,
                        d_dtype=dt.d, compute=compute)


ENGINE = KernelEngine("small", "small-GEMM", small_problem, lambda problem: select_kernel(problem))
