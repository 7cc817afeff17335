"""Sparse linear algebra: ``cumath.sparse.advanced`` (the sparse direct solver, on cuDSS, MKL PARDISO or SuperLU).

Importing this package loads no native library and imports no framework: ``advanced`` is imported on first
use, and its engines only when a problem is planned.
"""

__all__ = ["advanced"]


def __getattr__(name):
    if name == "advanced":
        import importlib

        module = importlib.import_module(f"{__name__}.advanced")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'cumath.sparse' has no attribute {name!r}")
