"""One support matrix for the tests: array packages, dtypes, CPU engines, and random data makers.

Packages: NumPy always, PyTorch (CPU tensors) when it imports; GPU packages are handled by the GPU tests.
CPU engines: 'fftw' (pyFFTW's bundled FFTW), 'mkl' (oneMKL's FFTW3 wrappers), 'scipy' (pocketfft); each is
skipped when its library is missing. Random data comes from one seeded generator, so every call gives fresh
(never zero) values and a run is reproducible.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytest

SEED = 20250101
rng = np.random.default_rng(SEED)

REAL_DTYPES = ("float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")
DTYPES = REAL_DTYPES + COMPLEX_DTYPES
COMPLEX_OF = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}
REAL_OF = {v: k for k, v in COMPLEX_OF.items()}
ENGINES = ("fftw", "mkl", "scipy")


# ---------------------------------------------------------------------------------------------- availability

@functools.cache
def have_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def engine_available(engine: str) -> bool:
    """Whether the CPU FFT engine can run here (its native library loads)."""
    if engine == "scipy":
        return have_module("scipy")
    from cumath._bindings import fftw

    try:
        fftw.get_fftw("double", engine).load()
        fftw.get_fftw("single", engine).load()
    except Exception:
        return False
    return True


def _param(value, available: bool, why: str):
    return pytest.param(value, id=str(value), marks=pytest.mark.skipif(not available, reason=why))


def engine_params(engines=ENGINES):
    return [_param(e, engine_available(e), f"CPU engine {e!r} is not installed") for e in engines]


def package_params(packages=("numpy", "torch")):
    """Host (CPU) array packages."""
    return [_param(p, p == "numpy" or have_module(p), f"{p} is not installed") for p in packages]


# ---------------------------------------------------------------------------------------------- random data

def random_array(shape, dtype, generator=None) -> np.ndarray:
    """Fresh standard-normal values (complex: independent real and imaginary parts); never all zeros."""
    g = generator or rng
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        x = g.standard_normal(shape) + 1j * g.standard_normal(shape)
    else:
        x = g.standard_normal(shape)
    x = x.astype(dtype)
    assert x.size == 0 or np.any(x != 0)
    return x


def c2r_length(m: int, parity: str) -> int:
    """Logical (real) size of a C2R transform over an axis of m complex values."""
    return 2 * (m - 1) + (1 if parity == "odd" else 0)


def hermitian_array(shape, dtype, axes=None, parity="even", generator=None) -> np.ndarray:
    """A complex array of ``shape`` that is the R2C transform of random real data over ``axes`` (the last one
    halved), so a C2R transform of it is well defined; returns the complex array."""
    shape = tuple(shape)
    axes = tuple(range(len(shape))) if axes is None else tuple(a % len(shape) for a in axes)
    real_shape = list(shape)
    real_shape[axes[-1]] = c2r_length(shape[axes[-1]], parity)
    real = random_array(real_shape, "float64", generator)
    return np.fft.rfftn(real, axes=axes).astype(dtype)


# ---------------------------------------------------------------------------------------------- layouts

LAYOUTS = ("C", "F", "reversed", "step", "permuted")


def _permutation(ndim: int):
    return tuple(range(ndim))[1:] + (0,) if ndim > 1 else (0,)


def _xp(package):
    if package == "numpy":
        return np
    if package == "cupy":
        import cupy

        return cupy
    raise ValueError(package)


def with_layout(values: np.ndarray, layout: str, package: str = "numpy", device=None):
    """An array of ``package`` (on ``device`` for torch: None or 'cuda') holding ``values`` in memory
    ``layout``: 'C' contiguous, 'F' Fortran order, 'reversed' negative strides (first and last axes run
    backwards), 'step' every other element of a larger buffer along each axis, 'permuted' a transposed view."""
    shape, nd = values.shape, values.ndim
    if package == "torch":
        import torch

        if layout == "reversed":
            pytest.skip("PyTorch tensors cannot have negative strides")
        src = torch.from_numpy(np.ascontiguousarray(values)).to(device or "cpu")
        if layout == "C":
            return src.clone()
        if layout in ("F", "permuted"):
            perm = tuple(reversed(range(nd))) if layout == "F" else _permutation(nd)
            inv = tuple(int(i) for i in np.argsort(perm))
            base = torch.empty([shape[p] for p in perm], dtype=src.dtype, device=src.device)
            view = base.permute(inv)
        else:  # step
            base = torch.empty([2 * n for n in shape], dtype=src.dtype, device=src.device)
            view = base[tuple(slice(1, None, 2) for _ in shape)]
        view.copy_(src)
        return view
    xp = _xp(package)
    src = xp.asarray(np.ascontiguousarray(values))
    if layout == "C":
        return src.copy()
    if layout == "F":
        return xp.asfortranarray(src).copy(order="F")
    if layout == "reversed":
        base = xp.empty_like(src)
        index = [slice(None)] * nd
        index[0] = index[-1] = slice(None, None, -1)
        view = base[tuple(index)]
    elif layout == "step":
        base = xp.empty([2 * n for n in shape], dtype=src.dtype)
        view = base[tuple(slice(1, None, 2) for _ in shape)]
    elif layout == "permuted":
        perm = _permutation(nd)
        base = xp.empty([shape[p] for p in perm], dtype=src.dtype)
        view = base.transpose(tuple(int(i) for i in np.argsort(perm)))
    else:
        raise ValueError(layout)
    view[...] = src
    return view


def to_package(values: np.ndarray, package: str, device=None):
    """A fresh, contiguous copy of ``values`` in ``package`` (torch: on ``device``, None for the CPU)."""
    if package == "numpy":
        return np.array(values)
    if package == "torch":
        import torch

        return torch.from_numpy(np.array(values)).to(device or "cpu")
    if package == "cupy":
        import cupy

        return cupy.asarray(values)
    raise ValueError(package)


def to_numpy(x) -> np.ndarray:
    """A NumPy copy of an array of any package and device (complex32 widened to complex64)."""
    mod = type(x).__module__.partition(".")[0]
    if mod == "torch":
        import torch

        if x.dtype == torch.complex32:
            x = x.to(torch.complex64)
        return x.detach().cpu().numpy().copy()
    if mod == "cupy":
        return x.get()
    return np.array(x)


def package_of(x) -> str:
    return type(x).__module__.partition(".")[0]


def dtype_of(x) -> str:
    """dtype name as cumath spells it (torch.complex64 -> 'complex64', torch.chalf -> 'complex32')."""
    from cumath._core.dtypes import dtype_name

    return dtype_name(x.dtype)


def strides_of(x) -> tuple:
    """Strides in elements."""
    if package_of(x) == "torch":
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def memory_order(x) -> tuple:
    """Axes from outermost to innermost by |stride| (size-1 axes ignored)."""
    strides = strides_of(x)
    return tuple(a for a in sorted(range(len(strides)), key=lambda a: -abs(strides[a])) if x.shape[a] != 1)


def is_dense(x) -> bool:
    """Whether the array covers a contiguous block of memory (in any axis order)."""
    strides, shape = strides_of(x), x.shape
    step = 1
    for a in sorted(range(len(shape)), key=lambda a: abs(strides[a])):
        if shape[a] != 1 and abs(strides[a]) != step:
            return False
        step *= shape[a]
    return True
