"""The shared numpy.matmul shape module against numpy.matmul's own shapes (random shapes through hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath.linalg._shapes import broadcast_batch, format_shape, matmul_shapes

dims = st.integers(0, 3)
batch_shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)


def _numpy_result(a_shape, b_shape):
    """numpy.matmul's result shape, or the ValueError it raises."""
    try:
        return np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape
    except ValueError as e:
        return e


@st.composite
def operand_pairs(draw):
    """(a_shape, b_shape): mostly compatible (a shared K, batch shapes made to broadcast), sometimes not."""
    k = draw(dims)
    kb = k if draw(st.booleans()) or draw(st.booleans()) else draw(dims)
    a_batch, b_batch = draw(batch_shapes), draw(batch_shapes)
    if draw(st.booleans()):  # make them broadcast: each dimension equal or 1
        n = min(len(a_batch), len(b_batch))
        b_batch = b_batch[:len(b_batch) - n] + tuple(
            1 if draw(st.booleans()) else x for x in a_batch[len(a_batch) - n:])
    a_vec, b_vec = draw(st.integers(0, 4)) == 0, draw(st.integers(0, 4)) == 0
    a_shape = (k,) if a_vec else a_batch + (draw(dims), k)
    b_shape = (kb,) if b_vec else b_batch + (kb, draw(dims))
    return a_shape, b_shape


@settings(max_examples=400, deadline=None, database=None)
@given(operand_pairs())
def test_result_shape_matches_numpy(shapes):
    a_shape, b_shape = shapes
    expected = _numpy_result(a_shape, b_shape)
    if isinstance(expected, ValueError):
        with pytest.raises(ValueError, match="cannot be multiplied|do not broadcast"):
            matmul_shapes(a_shape, b_shape)
        return
    s = matmul_shapes(a_shape, b_shape)
    assert s.result_shape == expected
    assert s.a_vec == (len(a_shape) == 1) and s.b_vec == (len(b_shape) == 1)
    assert s.matrix_shape == s.batch_shape + (s.m, s.n)
    assert s.batch == int(np.prod(s.batch_shape))
    assert s.k == a_shape[-1]


@settings(max_examples=300, deadline=None, database=None)
@given(operand_pairs(), st.data())
def test_c_broadcasts_as_numpy_adds(shapes, data):
    a_shape, b_shape = shapes
    expected = _numpy_result(a_shape, b_shape)
    if isinstance(expected, ValueError):
        return
    # c: a suffix of the result's shape with some dimensions replaced by 1, or a random shape
    n = data.draw(st.integers(0, len(expected)))
    suffix = expected[len(expected) - n:]
    c_shape = tuple(1 if data.draw(st.booleans()) else x for x in suffix)
    if data.draw(st.integers(0, 3)) == 0:
        c_shape = tuple(data.draw(st.lists(dims, max_size=4)))
    try:  # numpy's a @ b + c: batch dimensions of c alone extend the result's batch (as nvmath-python does)
        full = np.broadcast_shapes(c_shape, expected)
        fits = full[len(full) - len(expected):] == expected
    except ValueError:
        fits = False
    if fits:
        got = matmul_shapes(a_shape, b_shape, c_shape)
        assert got.c_shape == c_shape and got.result_shape == full
    else:
        with pytest.raises(ValueError, match="does not broadcast to the result's shape"):
            matmul_shapes(a_shape, b_shape, c_shape)
    if c_shape == expected or (fits and c_shape == full):
        matmul_shapes(a_shape, b_shape, c_shape, inplace=True)
    else:
        with pytest.raises(ValueError, match="c must have the result's shape"):
            matmul_shapes(a_shape, b_shape, c_shape, inplace=True)


@settings(max_examples=200, deadline=None, database=None)
@given(batch_shapes, batch_shapes)
def test_batch_broadcasting_matches_numpy(x, y):
    try:
        expected = np.broadcast_shapes(x, y)
    except ValueError:
        with pytest.raises(ValueError, match="do not broadcast at batch axis"):
            broadcast_batch(x, y)
        return
    assert broadcast_batch(x, y) == expected


@settings(max_examples=300, deadline=None, database=None)
@given(operand_pairs(), st.data())
def test_matrix_strides_address_numpy_broadcast_views(shapes, data):
    """matrix_strides reads the same elements as the operand broadcast by NumPy to the full matrix batch."""
    a_shape, b_shape = shapes
    if isinstance(_numpy_result(a_shape, b_shape), ValueError):
        return
    s = matmul_shapes(a_shape, b_shape)
    full = {"a": s.batch_shape + (s.m, s.k), "b": s.batch_shape + (s.k, s.n), "d": s.matrix_shape}
    for which, shape in (("a", a_shape), ("b", b_shape), ("d", s.result_shape)):
        x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        if data.draw(st.booleans()) and x.ndim:
            x = np.asfortranarray(x)
        strides = tuple(st_ // 8 for st_ in x.strides)
        got = s.matrix_strides(which, strides)
        assert len(got) == len(full[which])
        if which == "a" and s.a_vec:
            ref = np.broadcast_to(x[None, :], full[which])
        elif which == "b" and s.b_vec:
            ref = np.broadcast_to(x[:, None], full[which])
        elif which == "d":
            ref = x.reshape(full[which])
        else:
            ref = np.broadcast_to(x, full[which])
        view = np.lib.stride_tricks.as_strided(x, full[which], tuple(g * 8 for g in got))
        np.testing.assert_array_equal(view, ref)
        nb = len(s.batch_shape)
        vec = (which == "a" and s.a_vec) or (which == "b" and s.b_vec)
        own_batch = () if vec else (s.batch_shape if which == "d" else shape[:-2])
        own_batch = (1,) * (nb - len(own_batch)) + tuple(own_batch)
        assert all(g == 0 for g, n in zip(got[:nb], own_batch) if n == 1)  # broadcast or size-1 batch axes
        if vec:  # the promoted unit axis
            assert got[nb if which == "a" else nb + 1] == 0


def test_c_matrix_strides_follow_promotion_and_broadcasting():
    s = matmul_shapes((2, 4, 5), (5,), (4,))  # result (2, 4); c (4,) broadcasts over the batch
    assert s.result_shape == (2, 4)
    assert s.matrix_strides("c", (1,)) == (0, 1, 0)  # batch broadcast, rows, the promoted column axis
    s = matmul_shapes((7, 5), (5, 3), (7, 1))  # c (M, 1) is added to every column
    assert s.matrix_strides("c", (1, 1)) == (1, 0)
    s = matmul_shapes((5,), (3, 5, 2), (2,))  # a 1-D: the unit row axis is inserted after the batch
    assert s.result_shape == (3, 2)
    assert s.matrix_strides("c", (1,)) == (0, 0, 1)


def test_diagonal_operands():
    s = matmul_shapes((3, 4), (4, 2), diagonal=(False, False))
    assert (s.m, s.n, s.k) == (3, 2, 4)
    s = matmul_shapes((2, 4), (4, 3), diagonal=(True, False))  # a: 2 diagonals of 4 x 4 matrices
    assert (s.m, s.k, s.n, s.batch_shape, s.result_shape) == (4, 4, 3, (2,), (2, 4, 3))
    assert s.matrix_strides("a", (4, 1)) == (4, 0, 1)
    s = matmul_shapes((5, 3), (3,), diagonal=(False, True))  # a 1-D diagonal is not a promoted vector
    assert (s.result_shape, s.b_vec) == ((5, 3), False)
    with pytest.raises(ValueError, match=r"the diagonal of b has K=3 rows"):
        matmul_shapes((5, 4), (3,), diagonal=(False, True))


def test_messages_name_the_dimensions():
    with pytest.raises(ValueError, match=r"a has K=5 columns but b has K=6 rows") as e:
        matmul_shapes((4, 5), (6, 3))
    assert "a is 4 x 5 (shape (4, 5)) and b is 6 x 3 (shape (6, 3))" in str(e.value)
    assert "the number of columns of a (K=5) must equal the number of rows of b (K=6)" in str(e.value)
    with pytest.raises(ValueError, match=r"a \(1-D\) has K=4 .* promoted from 1-D"):
        matmul_shapes((4,), (3, 2))
    with pytest.raises(ValueError, match=r"batch axis 0 \(2 vs 3\): batch dimension 0 is 2 in a and 3 in b"):
        matmul_shapes((2, 3, 4), (3, 4, 2))
    with pytest.raises(ValueError, match=r"a is a scalar .* at least one dimension"):
        matmul_shapes((), (3,))
    with pytest.raises(ValueError, match=r"c of shape \(3, 3\) does not broadcast to the result's shape \(3, 2\)"):
        matmul_shapes((3, 4), (4, 2), (3, 3))
    with pytest.raises(ValueError, match=r"inplace=True writes the result into c, so c must have the result's "
                                         r"shape \(3, 2\); c has shape \(2,\)"):
        matmul_shapes((3, 4), (4, 2), (2,), inplace=True)
    with pytest.raises(ValueError, match="inplace=True writes the result into c: pass c"):
        matmul_shapes((3, 4), (4, 2), inplace=True)
    assert format_shape(()) == "()" and format_shape((3,)) == "(3,)" and format_shape([2, 3]) == "(2, 3)"


def test_c_adds_batch_dimensions_but_does_not_widen_the_results():
    """c's extra leading dimensions extend the batch; a size-1 batch dimension of a @ b stays (a c of the result's
    rank cannot widen it either)."""
    assert matmul_shapes((1, 3, 4), (4,), (5, 1, 3)).result_shape == (5, 1, 3)
    for c in ((0, 0, 0), (5, 2, 3)):
        with pytest.raises(ValueError, match="does not broadcast to the result's shape"):
            matmul_shapes((1, 3, 4) if c[-1] == 3 else (1, 0, 0), (4,) if c[-1] == 3 else (0,), c)
