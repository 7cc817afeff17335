"""Engines of the generic matmul: ``blas`` (CPU CBLAS: OpenBLAS or MKL) and ``cublas`` (GPU)."""
