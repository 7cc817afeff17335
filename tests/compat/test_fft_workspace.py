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


def test_key_has_named_fields():
    x = np.ones((6, 5, 9), np.complex64)[:, ::-1, ::2].transpose(1, 0, 2)
    key = F.FFT.create_key(x, axes=[-1], execution="cpu")
    assert key.operand == ("numpy", None) and key.options.fft_type is None
    assert key.layout.fft_type == "C2C" and key.layout.transform_dims[0][0] == 5
    assert key.layout == key[1] and hash(key) == hash(tuple(key))


@settings(max_examples=60, deadline=None, database=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=4), st.data(),
       st.sampled_from(["C2C", "R2C", "C2R"]), st.sampled_from(["even", "odd"]),
       st.sampled_from(["natural", "optimized"]))
def test_property_key_geometry_round_trips(shape, data, fft_type, parity, result_layout):
    """The representative operand the estimate plans has the key's own layout, so the same cuFFT plan."""
    from cumath.fft._traits import key_geometry, layout_key

    dtype = "float64" if fft_type == "R2C" else "complex128"
    perm = data.draw(st.permutations(range(len(shape))))
    steps = data.draw(st.lists(st.sampled_from([1, 2, -1]), min_size=len(shape), max_size=len(shape)))
    x = np.random.default_rng(1).random(shape).astype(dtype).transpose(perm)
    x = x[tuple(slice(None, None, s) for s in steps)]
    naxes = data.draw(st.integers(1, min(3, x.ndim)))
    axes = data.draw(st.permutations(range(x.ndim)))[:naxes]
    if fft_type == "C2R" and parity == "even" and x.shape[axes[-1]] == 1:
        parity = "odd"
    options = {"fft_type": fft_type, "last_axis_parity": parity, "result_layout": result_layout,
               "inplace": fft_type == "C2C" and data.draw(st.booleans())}
    key = F.FFT.create_key(x, axes=axes, options=options, execution="cpu")
    geom, strides = key_geometry(key.layout, parity)
    assert layout_key(geom, strides) == key.layout
    assert geom.sizes == tuple(n for n, _, _ in key.layout.transform_dims)
