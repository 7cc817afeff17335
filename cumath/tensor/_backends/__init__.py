"""Engines of the contractions: ``blas`` (CPU: CBLAS GEMMs) and ``cutensor`` (GPU: cuTENSOR 2.x). The engine is
chosen once, at plan(), by the execution space; each compiles the same pairwise steps of ``_traits``."""
