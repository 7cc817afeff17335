"""The engines of the sparse matmul: CPU (MKL's inspector-executor sparse BLAS, SciPy) and GPU (cuSPARSE).

A CPU engine has ``name``, ``load()`` (LibraryNotFoundError naming the extra when its library is missing) and
``product(csr, op, dtype, ncols, layout, expected_calls, log)``, which returns a product object with
``run(values, b, d, alpha, beta)`` and ``free()``; see ``mkl.py`` and ``scipy.py``. The engine is chosen by
``MatmulOptions.cpu_engine``, else ``CUMATH_SPARSE_CPU_ENGINE``, else the first that loads (logged).
"""

from __future__ import annotations

from ...._core.engines import EngineRegistry

__all__ = ["CPU_ENGINES", "cpu_engine"]


def _mkl():
    from .mkl import MKLEngine

    return MKLEngine()


def _scipy():
    from .scipy import SciPyEngine

    return SciPyEngine()


CPU_ENGINES = EngineRegistry({"mkl": _mkl, "scipy": _scipy}, ("mkl", "scipy"), "CUMATH_SPARSE_CPU_ENGINE",
                             "sparse matmul CPU engine")


def cpu_engine(requested: str, log=None):
    return CPU_ENGINES.get(requested, log)
