"""Pure layout helpers of _core.layout (and the FFT's use of them in _traits)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cumath._core.layout import dense_strides, inverse_perm, is_identity, natural_perm
from cumath.fft._traits import cufft_embed, fft_geometry


@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))))
def test_inverse_perm(perm):
    inv = inverse_perm(perm)
    assert [perm[i] for i in inv] == list(range(4)) and [inv[p] for p in perm] == list(range(4))
    assert list(inv) == list(np.argsort(perm))


def test_is_identity():
    assert is_identity(None) and is_identity((0, 1, 2)) and is_identity(range(3)) and is_identity(())
    assert not is_identity((1, 0)) and not is_identity((0, 2, 1))


@pytest.mark.parametrize("shape", [(3,), (3, 4), (2, 3, 4), (5, 1, 2)])
def test_dense_strides_match_numpy(shape):
    for perm in itertools.permutations(range(len(shape))):
        a = np.empty([shape[p] for p in perm]).transpose(np.argsort(perm))
        assert a.shape == shape
        assert dense_strides(shape, perm) == tuple(s // 8 for s in a.strides)


@pytest.mark.parametrize("strides,perm", [((12, 4, 1), (0, 1, 2)), ((1, 3, 12), (2, 1, 0)), ((-12, 4, 1), (0, 1, 2)),
                                          ((4, -1, 12), (2, 0, 1)), ((5, 5), (0, 1)), ((1,), (0,))])
def test_natural_perm(strides, perm):
    assert natural_perm(strides) == perm


def test_natural_perm_of_dense_strides_roundtrips():
    shape = (2, 3, 4, 5)
    for perm in itertools.permutations(range(4)):
        assert natural_perm(dense_strides(shape, perm)) == perm


# ---------------------------------------------------------------------------------------------- FFT geometry

@pytest.mark.parametrize("shape,strides,axes,layout,out_perm", [
    ((4, 6, 8), (48, 8, 1), (1,), "optimized", (0, 2, 1)),
    ((4, 6, 8), (48, 8, 1), (1,), "natural", (0, 1, 2)),
    ((4, 6, 8), (1, 4, 24), (0, 2), "optimized", (1, 0, 2)),
    ((4, 6, 8), (1, 4, 24), None, "natural", (2, 1, 0)),
    ((4, 6, 8), (48, 8, 1), (2, 0, 1), "optimized", (2, 0, 1)),
])
def test_fft_geometry_result_layouts(shape, strides, axes, layout, out_perm):
    g = fft_geometry(shape, strides, "complex64", axes, result_layout=layout)
    assert g.out_perm == out_perm and g.fft_type == "C2C" and g.out_dtype == "complex64"


@pytest.mark.parametrize("parity,n", [("even", 10), ("odd", 11)])
def test_fft_geometry_c2r_sizes(parity, n):
    g = fft_geometry((3, 6), (6, 1), "complex128", None, "C2R", parity)
    assert g.sizes == (3, n) and g.out_shape == (3, n) and g.out_dtype == "float64"
    r = fft_geometry((3, n), (n, 1), "float32", (1,))
    assert r.fft_type == "R2C" and r.out_shape == (3, 6) and r.out_dtype == "complex64" and r.batch_axes == (0,)


def test_cufft_embed():
    # dense 2-D transform over the last two axes of (5, 4, 8): embed (4, 8), stride 1, dist 32, batch 5
    assert cufft_embed([4, 8], [8, 1], [(5, 32)]) == ((4, 8), 1, 32, 5)
    # a padded row pitch of 10
    assert cufft_embed([4, 8], [10, 1], [(5, 40)]) == ((4, 10), 1, 40, 5)
    # inner stride 2 (every other element)
    assert cufft_embed([8], [2], [(3, 16)]) == ((8,), 2, 16, 3)
    # negative strides and two irregular batch loops cannot be described
    assert cufft_embed([8], [-1], []) is None
    assert cufft_embed([8], [1], [(3, 100), (2, 7)]) is None
    # a row pitch smaller than the row cannot be described
    assert cufft_embed([4, 8], [4, 1], []) is None
