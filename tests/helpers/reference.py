"""NumPy float64/complex128 references of cumath's (unnormalized) transforms, and the accuracy check."""

from __future__ import annotations

import math

import numpy as np

from .matrix import to_numpy

__all__ = ["fft_ref", "ifft_ref", "rfft_ref", "irfft_ref", "rel_error", "tolerance", "assert_close"]

_EPS = {"float16": 1e-2, "complex32": 1e-2, "float32": 1e-5, "complex64": 1e-5,
        "float64": 1e-12, "complex128": 1e-12}


def _axes(x, axes):
    return tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)


def fft_ref(x, axes=None):
    x = to_numpy(x).astype(np.complex128)
    return np.fft.fftn(x, axes=_axes(x, axes))


def ifft_ref(x, axes=None):
    """Unnormalized inverse: numpy.fft.ifftn(x) * N."""
    x = to_numpy(x).astype(np.complex128)
    axes = _axes(x, axes)
    return np.fft.ifftn(x, axes=axes) * math.prod(x.shape[a] for a in axes)


def rfft_ref(x, axes=None):
    x = to_numpy(x).astype(np.float64)
    return np.fft.rfftn(x, axes=_axes(x, axes))


def irfft_ref(x, axes=None, parity="even"):
    """Unnormalized C2R: numpy.fft.irfftn(x, s=...) * N, with the last axis of size 2(m-1) (+1 if odd)."""
    x = to_numpy(x).astype(np.complex128)
    axes = _axes(x, axes)
    s = [x.shape[a] for a in axes]
    s[-1] = 2 * (s[-1] - 1) + (1 if parity == "odd" else 0)
    return np.fft.irfftn(x, s=s, axes=axes) * math.prod(s)


def rel_error(result, ref) -> float:
    """norm(result - ref) / norm(ref), in float64."""
    result = to_numpy(result).astype(ref.dtype)
    return float(np.linalg.norm((result - ref).ravel()) / np.linalg.norm(ref.ravel()))


def tolerance(dtype: str, n: int) -> float:
    """Relative-error bound for a transform of ``n`` points in ``dtype``: the precision's base, scaled
    mildly with log2(n)."""
    return _EPS[str(dtype)] * max(1.0, math.log2(max(n, 2)) / 4)


def assert_close(result, ref, dtype, n=None):
    """Check the shape and the relative error of ``result`` against the float64 ``ref``."""
    assert tuple(result.shape) == ref.shape, f"shape {tuple(result.shape)} != reference {ref.shape}"
    n = ref.size if n is None else n
    err, tol = rel_error(result, ref), tolerance(dtype, n)
    assert err <= tol, f"relative error {err:.3e} > {tol:.1e} ({dtype}, n={n})"
