"""Generic matmul: batch dimensions present only on c broadcast a and b over them (numpy's a @ b + c)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumath as nvmath
from helpers.reference import assert_close

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("a_shape,b_shape,c_shape", [
    ((7, 7), (7, 7), (5, 7, 7)), ((3, 5), (5, 2), (4, 3, 2)), ((3, 5), (5, 2), (2, 1, 3, 2)),
    ((2, 3, 5), (5, 2), (4, 1, 3, 2)), ((5,), (5, 2), (3, 2)), ((3, 5), (5,), (2, 3)),
    ((3, 5), (5, 2), (4, 1, 2)),
])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_c_batch_broadcasts(a_shape, b_shape, c_shape, dtype):
    a, b = RNG.standard_normal(a_shape).astype(dtype), RNG.standard_normal(b_shape).astype(dtype)
    c = RNG.standard_normal(c_shape).astype(dtype)
    d = nvmath.linalg.matmul(a, b, c, alpha=0.5, beta=2.0)
    ref = 0.5 * np.matmul(a.astype(np.complex128), b) + 2.0 * c
    assert d.shape == ref.shape
    assert_close(d, ref if np.iscomplexobj(a) else ref.real, np.dtype(dtype).name, a_shape[-1])


def test_c_batch_non_contiguous_and_stateful():
    a, b = RNG.standard_normal((6, 3))[::2], RNG.standard_normal((3, 9))[:, ::-3]
    c = RNG.standard_normal((4, 3, 3, 2))[..., 0]
    with nvmath.linalg.Matmul(a, b, c, beta=1.0) as mm:
        mm.plan()
        assert_close(mm.execute(), a @ b + c, "float64", 3)


def test_c_batch_that_conflicts_is_refused():
    a, b = RNG.standard_normal((2, 3, 5)), RNG.standard_normal((5, 2))
    with pytest.raises(ValueError, match="does not broadcast to the result's shape"):
        nvmath.linalg.matmul(a, b, RNG.standard_normal((3, 3, 2)), beta=1.0)


@settings(max_examples=25, deadline=None, database=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.lists(st.integers(1, 3), min_size=1, max_size=2))
def test_property_c_batch(m, n, k, batch):
    a, b = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    c = RNG.standard_normal(tuple(batch) + (m, n))
    assert_close(nvmath.linalg.matmul(a, b, c, beta=1.0), a @ b + c, "float64", k)
