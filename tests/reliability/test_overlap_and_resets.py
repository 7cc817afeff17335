"""Overlapping, unaligned and reversed operands, and resets: a correct result or a clear error, never garbage.
(The cases that crashed the process before are run in subprocesses by test_faults.py.)"""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import cumath
from cumath._core.overlap import byte_extent, extents_overlap, self_overlapping
from cumath.errors import InvalidStateError
from helpers.matrix import random_array


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300)


# ------------------------------------------------------------------------------------------- pure arithmetic
@pytest.mark.parametrize("shape,strides,expected", [
    ((4, 5), (5, 1), False), ((4, 5), (1, 4), False), ((4, 5), (-5, -1), False), ((3,), (0,), True),
    ((57, 8), (1, 1), True), ((4, 1), (0, 1), True), ((1, 4), (0, 1), False), ((2, 3), (3, 2), True),
    ((2, 3, 4), (24, 4, 1), False), ((5,), (2,), False),
])
def test_self_overlapping(shape, strides, expected):
    assert self_overlapping(shape, strides) is expected


def test_extents():
    class Op:
        def __init__(self, ptr, shape, strides, itemsize=8):
            self.ptr, self.shape, self.strides, self.itemsize = ptr, shape, strides, itemsize

    assert byte_extent(1000, (3, 4), (4, 1), 8) == (1000, 1096)
    assert byte_extent(1000, (3,), (-1,), 8) == (984, 1008)
    assert extents_overlap(Op(1000, (4,), (1,)), Op(1024, (4,), (1,)))
    assert not extents_overlap(Op(1000, (4,), (1,)), Op(1032, (4,), (1,)))


# ------------------------------------------------------------------------------------------- FFT in place
@pytest.mark.parametrize("make", [
    lambda z: sliding_window_view(z, 8, writeable=True),
    lambda z: as_strided(z, shape=(4, 8), strides=(0, 16)),
    lambda z: as_strided(z, shape=(6, 8), strides=(32, 16)),
])
def test_inplace_fft_of_a_self_overlapping_view_is_refused(make):
    z = random_array((64,), "complex128")
    v = make(z)
    with pytest.raises(ValueError, match="share memory"):
        cumath.fft.fft(v, axes=[-1], options={"inplace": True})
    with pytest.raises(ValueError, match="share memory"):
        cumath.fft.FFT(v, axes=[-1], options={"inplace": True})


def test_out_of_place_fft_of_a_self_overlapping_view_is_right():
    z = random_array((64,), "complex128")
    v = sliding_window_view(z, 8)
    assert rel(cumath.fft.fft(v, axes=[-1]), np.fft.fft(v, axis=-1)) < 1e-13


@pytest.mark.parametrize("index", [(slice(None, None, -1), slice(None, None, -1)), (slice(None, None, -1),),
                                   (Ellipsis, slice(None, None, -2))])
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1]])
def test_inplace_fft_with_negative_strides(index, axes):
    base = random_array((4, 3, 6), "complex128")
    z = base.copy()[index]
    ref = np.fft.fftn(z, axes=axes)
    r = cumath.fft.fft(z, axes=axes, options={"inplace": True})
    assert r is z and rel(z, ref) < 1e-13


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("offset", [1, 3, 4, 8])
def test_unaligned_c2c(dtype, offset):
    n = 12
    item = np.dtype(dtype).itemsize
    values = random_array((n,), dtype)
    buf = bytearray(n * item + 16)
    x = np.frombuffer(buf, dtype, n, offset=offset)
    x[...] = values
    tol = 1e-5 if dtype == "complex64" else 1e-13
    assert rel(cumath.fft.fft(x), np.fft.fft(values)) < tol
    f = cumath.fft.FFT(x.copy())
    f.plan()
    f.reset_operand(x)
    assert rel(f.execute(), np.fft.fft(values)) < tol
    y = np.frombuffer(bytearray(n * item + 16), dtype, n, offset=offset)
    y[...] = values
    r = cumath.fft.fft(y, options={"inplace": True})
    assert r is y and rel(y, np.fft.fft(values)) < tol


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("offset", range(1, 8))
def test_unaligned_rfft_irfft(dtype, offset):
    n = 33
    item = np.dtype(dtype).itemsize
    values = random_array((n,), dtype)
    x = np.frombuffer(bytearray(n * item + 16), dtype, n, offset=offset)
    x[...] = values
    tol = 1e-5 if dtype == "float32" else 1e-13
    assert rel(cumath.fft.rfft(x), np.fft.rfft(values)) < tol
    spec = np.fft.rfft(values).astype("complex64" if dtype == "float32" else "complex128")
    c = np.frombuffer(bytearray(spec.nbytes + 16), spec.dtype, spec.size, offset=offset)
    c[...] = spec
    assert rel(cumath.fft.irfft(c, options={"last_axis_parity": "odd"}), values * n) < tol * 10


# ------------------------------------------------------------------------------------------- FFT resets
def test_reset_unchecked_refuses_another_shape_or_dtype():
    x = random_array((6, 5), "complex128")
    with cumath.fft.FFT(x) as f:
        f.plan()
        for other in (np.ones((3, 3), complex), np.ones((6, 5), np.complex64), np.ones((6, 4), complex),
                      np.ones((12, 10), complex)[::2, ::2]):
            with pytest.raises(ValueError, match="does not match the planned one"):
                f.reset_operand_unchecked(other)
        f.reset_operand_unchecked(x * 2)
        assert rel(f.execute(), np.fft.fft2(x * 2)) < 1e-13


def test_inplace_reset_onto_a_read_only_memmap_is_refused(tmp_path):
    x = random_array((4, 6), "complex128")
    path = tmp_path / "m.bin"
    np.memmap(path, dtype=complex, mode="w+", shape=(4, 6)).flush()
    ro = np.memmap(path, dtype=complex, mode="r", shape=(4, 6))
    with cumath.fft.FFT(x.copy(), options={"inplace": True}) as f:
        f.plan()
        for reset in (f.reset_operand, f.reset_operand_unchecked):
            with pytest.raises(ValueError, match="read-only"):
                reset(ro)


def test_reset_with_batch_axes_rearranged():
    """Operands whose batch axes are rearranged have the planned layout: accepted, with equal keys, and the
    result takes the new operand's shape."""
    x = random_array((4, 6, 10), "complex128")
    y = np.ascontiguousarray(random_array((4, 6, 10), "complex128")).transpose(1, 0, 2)
    key = cumath.fft.FFT.create_key(x, axes=[-1])
    assert key == cumath.fft.FFT.create_key(y, axes=[-1])
    assert key != cumath.fft.FFT.create_key(x, axes=[0])
    assert key != cumath.fft.FFT.create_key(np.ascontiguousarray(y), axes=[-1])
    with cumath.fft.FFT(x, axes=[-1]) as f:
        f.plan()
        assert f.get_key() == key
        f.reset_operand(y)
        r = f.execute()
        assert r.shape == y.shape and rel(r, np.fft.fft(y, axis=-1)) < 1e-13
        assert f.get_key() == key
        f.reset_operand_unchecked(x)
        r = f.execute()
        assert r.shape == x.shape and rel(r, np.fft.fft(x, axis=-1)) < 1e-13
        f.reset_operand_unchecked(y)
        assert f.execute().shape == y.shape
        with pytest.raises(ValueError, match="does not match"):
            f.reset_operand(np.ascontiguousarray(y))


def test_reset_with_batch_axes_rearranged_before_planning():
    x = random_array((3, 5, 8), "complex128")
    y = np.ascontiguousarray(random_array((3, 5, 8), "complex128")).transpose(1, 0, 2)
    with cumath.fft.FFT(x, axes=[2]) as f:
        f.reset_operand(y)
        f.plan()
        assert rel(f.execute(), np.fft.fft(y, axis=2)) < 1e-13


# ------------------------------------------------------------------------------------------- matmul overlap
def test_matmul_inplace_c_that_is_b():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    ref = a @ b + b
    r = cumath.linalg.matmul(a, b, b, beta=1, options={"inplace": True})
    assert r is b and rel(r, ref) < 1e-13


@pytest.mark.parametrize("rows", [(0, 40, 20, 60), (20, 60, 0, 40), (0, 40, 0, 40)])
def test_matmul_inplace_c_overlapping_a(rows):
    rng = np.random.default_rng(4)
    buf = rng.standard_normal((80, 40))
    a = buf[rows[0]:rows[1]]
    c = buf[rows[2]:rows[3]]
    b = rng.standard_normal((40, 40))
    ref = a @ b + 0.5 * c
    r = cumath.linalg.matmul(a, b, c, beta=0.5, options={"inplace": True})
    assert r is c and rel(r, ref) < 1e-12


def test_matmul_inplace_c_overlapping_itself_is_refused():
    c = as_strided(np.zeros(8), shape=(4, 4), strides=(8, 8))
    with pytest.raises(ValueError, match="overlaps itself"):
        cumath.linalg.matmul(np.ones((4, 4)), np.ones((4, 4)), c, beta=1, options={"inplace": True})


def test_release_then_unchecked_reset_then_execute():
    a, b = np.random.rand(4, 4), np.random.rand(4, 4)
    with cumath.linalg.Matmul(a, b) as m:
        m.plan()
        m.execute()
        m.release_operands()
        with pytest.raises((ValueError, InvalidStateError)):
            m.reset_operands_unchecked(a=a)
            m.execute()
        m.reset_operands_unchecked(a=a, b=b)
        assert rel(m.execute(), a @ b) < 1e-13
