"""The torch adapter's result factory (what the hot paths call once per result): the tensors it makes have the
shape, strides, dtype and device of ``empty(shape, dtype, device, perm)`` for every memory order, 0-d and empty
extents included, and are new memory each call."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")

from cumath._core.frameworks import torch as adapter  # noqa: E402


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 5), (0, 5), (5, 0, 2), (1, 1, 1, 2)])
@pytest.mark.parametrize("dtype", ["float32", "complex64", "float64", "bfloat16"])
def test_the_factory_makes_what_empty_makes(shape, dtype):
    for perm in [None] + list(itertools.permutations(range(len(shape)))):
        want = adapter.empty(shape, dtype, None, perm)
        new = adapter.empty_factory(shape, dtype, None, perm)
        x, y = new(), new()
        assert (x.shape, x.stride(), x.dtype, x.device) == (want.shape, want.stride(), want.dtype, want.device)
        if x.numel():
            assert x.data_ptr() != y.data_ptr()


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=4), data=st.data())
def test_property_permuted_strides(shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    ref = torch.empty([shape[p] for p in perm]).permute([perm.index(i) for i in range(len(shape))])
    assert adapter.permuted_strides(tuple(shape), tuple(perm)) == ref.stride()
