"""Device APIs: library math inside your own numba-cuda kernels (the shape of ``nvmath.device``).

- :class:`FFT` / :func:`fft`: cuFFTDx block and thread FFTs;
- :class:`Matmul` / :func:`matmul`: cuBLASDx block GEMMs on shared-memory tiles;
- :class:`Solver` and its adapters (:class:`CholeskySolver`, :class:`LUSolver`, :class:`LUPivotSolver`,
  :class:`QRFactorize`, :class:`QRMultiply`, :class:`LQFactorize`, :class:`LQMultiply`,
  :class:`TriangularSolver`, :class:`LeastSquaresSolver`): cuSOLVERDx dense solvers, batched per block;
- :mod:`cumath.device.random`: cuRAND's device generators and distributions;
- :data:`float16x2`, :data:`float16x4`: the half-precision vector types of half-precision FFTs;
- :func:`make_tensor`, :func:`copy`, :func:`copy_fragment`, :func:`clear`, :func:`axpby`, :func:`copy_wait`:
  cuBLASDx's tensor API for :class:`Matmul` (register-fragment accumulators, see ``Matmul.suggest_partitioner``);
- :func:`load`, :func:`store`: one vector access per element of a global array (complex64 in one 8-byte load,
  where numba's ``x[i]`` issues two 4-byte ones).

The device code is generated on the host (libmathdx for the Dx libraries, NVRTC for the cuRAND shim) as
LTO-IR, cached in memory and on disk, and linked into the kernel by numba-cuda through nvJitLink. Needs the
``dx`` extra (``pip install "cumath[dx]"``: numba-cuda and libmathdx) and the ``cu13`` extra.

Importing this package imports neither numba nor any native library; everything loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.lazy import lazy_getattr

if TYPE_CHECKING:  # what __getattr__ below loads on first use, visible to type checkers
    from . import random
    from ._access import load, store
    from ._common import CodeType, ComputeCapability, Dim3, LeadingDimension, TransposeMode
    from ._fft import FFT, fft
    from ._matmul import Matmul, matmul
    from ._solver import (CholeskySolver, LeastSquaresSolver, LQFactorize, LQMultiply, LUPivotSolver, LUSolver,
                          QRFactorize, QRMultiply, Solver, TriangularSolver)
    from ._tensors import (Accumulator, Layout, OpaqueTensor, Partitioner, axpby, clear, copy, copy_fragment,
                           copy_wait, make_tensor)
    from ._vector import float16x2, float16x4

__all__ = ["FFT", "fft", "Matmul", "matmul", "Solver", "CholeskySolver", "LUSolver", "LUPivotSolver", "QRFactorize",
           "QRMultiply", "LQFactorize", "LQMultiply", "TriangularSolver", "LeastSquaresSolver", "random",
           "ComputeCapability", "CodeType", "Dim3", "LeadingDimension", "TransposeMode", "clear_cache",
           "unavailable_reason", "float16x2", "float16x4", "make_tensor", "copy", "copy_fragment", "clear", "axpby",
           "copy_wait", "OpaqueTensor", "Layout", "Partitioner", "Accumulator", "load", "store"]

_LAZY = {
    "FFT": "._fft", "fft": "._fft",
    "Matmul": "._matmul", "matmul": "._matmul",
    "Solver": "._solver", "CholeskySolver": "._solver", "LUSolver": "._solver", "LUPivotSolver": "._solver",
    "QRFactorize": "._solver", "QRMultiply": "._solver", "LQFactorize": "._solver", "LQMultiply": "._solver",
    "TriangularSolver": "._solver", "LeastSquaresSolver": "._solver",
    "ComputeCapability": "._common", "CodeType": "._common", "Dim3": "._common", "LeadingDimension": "._common",
    "TransposeMode": "._common", "float16x2": "._vector", "float16x4": "._vector",
    "load": "._access", "store": "._access",
    "make_tensor": "._tensors", "copy": "._tensors", "copy_fragment": "._tensors", "clear": "._tensors",
    "axpby": "._tensors", "copy_wait": "._tensors", "OpaqueTensor": "._tensors", "Layout": "._tensors",
    "Partitioner": "._tensors", "Accumulator": "._tensors",
}


__getattr__ = lazy_getattr(__name__, globals(), _LAZY, ("random",))


def unavailable_reason(*needs: str) -> str | None:
    """Why the device APIs cannot run here, or None: ``needs`` from 'gpu', 'numba', 'mathdx' (FFT, Matmul,
    solvers) and 'curand' (the random module's headers); all four when none is given."""
    needs = needs or ("gpu", "numba", "mathdx", "curand")
    unknown = set(needs) - {"gpu", "numba", "mathdx", "curand"}
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; the allowed values are 'gpu', 'numba', 'mathdx', 'curand'")
    if "numba" in needs:
        from .._core.numba_compat import import_numba_cuda

        try:
            import_numba_cuda(feature="cumath.device")
        except ImportError as exc:
            return str(exc)
    if "gpu" in needs:
        from .._core.cuda import device_count

        if device_count() == 0:
            return "no CUDA GPU is usable here"
    if "mathdx" in needs:
        from .._bindings import mathdx

        try:
            mathdx.load()
        except OSError as exc:
            return str(exc)
    if "curand" in needs:
        from .._core import jit
        from .random import _shim

        try:
            jit.nvrtc_version()
            _shim.include_dirs()
        except OSError as exc:
            return str(exc)
    return None


def clear_cache(*, disk: bool = False) -> None:
    """Forget generated device code held in memory (and on disk with ``disk=True``)."""
    from . import _codegen

    _codegen.clear_memory_cache()
    if disk:
        import shutil

        from .._core.disk_cache import cache_dir

        shutil.rmtree(cache_dir("device"), ignore_errors=True)
