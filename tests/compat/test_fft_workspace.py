"""cumath.fft.estimate_workspace_size(key): 0 for CPU keys, cuFFT's workspace for GPU keys (GPU test)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumath as nvmath

F = nvmath.fft


@pytest.mark.parametrize("technique", ["default", "refined"])
def test_cpu_keys_need_no_workspace(technique):
    x = np.ones((8, 33), np.complex128)
    assert F.estimate_workspace_size(F.FFT.create_key(x, execution="cpu"), technique=technique) == 0
    with F.FFT(x) as f:
        assert F.estimate_workspace_size(f.get_key()) == 0


@pytest.mark.parametrize("key,technique,exc,fragment", [
    ("nope", "default", ValueError, "key must be a key made by cumath.fft.FFT.create_key"),
    ((1, 2, 3), "default", ValueError, "key must be a key"),
    (None, "fast", ValueError, "technique='fast' is not supported"),
])
def test_errors(key, technique, exc, fragment):
    with pytest.raises(exc, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        F.estimate_workspace_size(key, technique=technique)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,axes", [((64, 1024), [1]), ((127, 131), None), ((4, 256, 256), [1, 2])])
def test_gpu_key(shape, axes):
    cp = pytest.importorskip("cupy")
    x = cp.ones(shape, cp.complex64)
    key = F.FFT.create_key(x, axes=axes)
    size = F.estimate_workspace_size(key)
    assert isinstance(size, int) and size >= 0
    assert F.estimate_workspace_size(key, technique="refined") == size
    with F.FFT(x, axes=axes) as f:  # the key of a planned FFT gives the same estimate
        f.plan()
        assert F.estimate_workspace_size(f.get_key()) == size
        y = f.execute()
    assert cp.allclose(y, cp.fft.fftn(x, axes=axes))


@settings(max_examples=20, deadline=None, database=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.sampled_from(["complex64", "complex128", "float64"]))
def test_property_cpu_keys(shape, dtype):
    x = np.ones(shape, dtype)
    assert F.estimate_workspace_size(F.FFT.create_key(x)) == 0
