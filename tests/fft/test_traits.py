"""The FFT's pure layout arithmetic (``fft/_traits.py``): cuFFT layouts, the memory orders cuFFT reads and writes,
when C2R may work on its operand, and the strides of CPU plans. No GPU, no library."""

from __future__ import annotations

import pytest

from cumath.fft._traits import (c2r_in_place_ok, cufft_layout, dense_strides, device_layouts, device_strides,
                                fft_geometry, host_strides)


def _geom(shape, dtype, axes=None, fft_type=None, strides=None, inplace=False, layout="optimized"):
    strides = strides or dense_strides(shape, range(len(shape)))
    return fft_geometry(shape, strides, dtype, axes, fft_type, "even", layout, inplace), strides


def test_cufft_layout_of_whole_arrays():
    g, s = _geom((4, 6, 8), "complex64", axes=(1, 2))
    in_ext, out_ext = g.extents
    assert cufft_layout(g, in_ext, g.in_shape, s) == ((6, 8), 1, 48, 4)
    # rows padded to 10 elements: embed says so
    assert cufft_layout(g, in_ext, g.in_shape, (60, 10, 1)) == ((6, 10), 1, 60, 4)
    # the batch axis innermost: one element apart, stride 4 inside a transform
    assert cufft_layout(g, in_ext, g.in_shape, (1, 32, 4)) == ((6, 8), 4, 1, 4)
    # axis 2 outside axis 1: not describable
    assert cufft_layout(g, in_ext, g.in_shape, (1, 4, 24)) is None


def test_cufft_layout_of_the_halved_side():
    g, s = _geom((3, 8), "float64", axes=(1,))
    in_ext, out_ext = g.extents
    assert (in_ext, out_ext) == ([8], [5])
    assert cufft_layout(g, out_ext, g.out_shape, dense_strides(g.out_shape, g.out_perm)) == ((5,), 1, 5, 3)


def test_c2r_in_place_needs_permission_and_the_canonical_dense_layout():
    g, s = _geom((4, 5), "complex128", axes=(1,), fft_type="C2R")
    assert c2r_in_place_ok(g, s, True)
    assert not c2r_in_place_ok(g, s, False)
    assert not c2r_in_place_ok(g, (10, 2), True)  # strided rows
    g2, s2 = _geom((4, 5), "complex128", axes=(0,), fft_type="C2R", strides=(1, 4))
    assert c2r_in_place_ok(g2, s2, True)  # canonical = batch axis 1 outermost: Fortran order is dense in it


@pytest.mark.parametrize("in_fixed", [True, False], ids=["gpu-operand", "staged"])
def test_device_layouts_of_a_dense_operand(in_fixed):
    g, s = _geom((4, 6, 8), "complex128", axes=(1, 2))
    in_perm, out_perm = device_layouts(g, s, in_fixed)
    assert in_perm == (None if in_fixed else (0, 1, 2))  # a GPU operand is read where it is
    assert out_perm == (0, 1, 2)


def test_device_layouts_copy_what_cufft_cannot_read():
    g, _ = _geom((4, 6, 8), "complex128", axes=(1, 2), strides=(1, 4, 24))
    assert device_layouts(g, (1, 4, 24), True) == ((0, 1, 2), (0, 1, 2))
    g, _ = _geom((4, 6, 8), "complex128", axes=(1, 2), strides=(1, 32, 4))
    assert device_layouts(g, (1, 32, 4), True) == (None, (0, 1, 2))  # describable: read in place


def test_device_layouts_of_c2r():
    g, s = _geom((4, 5), "complex128", axes=(1,), fft_type="C2R")
    assert device_layouts(g, s, True) == ((0, 1), (0, 1))  # cuFFT destroys its input: a copy
    assert device_layouts(g, s, True, overwrite_input=True) == (None, (0, 1))
    assert device_layouts(g, s, False, overwrite_input=True) == ((0, 1), (0, 1))  # staged: always a copy


def test_device_layouts_in_place_and_natural_results():
    g, s = _geom((5, 7), "complex64", inplace=True)
    assert device_layouts(g, s, True) == (None, None)
    assert device_strides(g, s, False) == ((7, 1), (7, 1))
    # a natural result of a Fortran-order operand over axis 0: cuFFT writes it as it is
    g, _ = _geom((6, 4), "complex128", axes=(0,), strides=(1, 6), layout="natural")
    assert g.out_perm == (1, 0)
    assert device_layouts(g, (1, 6), True)[1] == (1, 0)


def test_device_strides_of_staged_operands():
    g, s = _geom((4, 6, 5), "complex64", axes=(1, 2), fft_type="C2R")
    assert device_strides(g, s, host_operand=True) == ((30, 5, 1), (48, 8, 1))
    g, _ = _geom((4, 6), "complex64", axes=(1,), strides=(1, 4))
    assert device_strides(g, (1, 4), host_operand=True) == ((1, 4), (6, 1))  # staged in its own order
    g, _ = _geom((4, 6), "complex64", strides=(1, 4))  # axis 1 outside axis 0: cuFFT cannot read that order
    assert device_strides(g, (1, 4), host_operand=True) == ((6, 1), (6, 1))


def test_host_strides():
    g, s = _geom((3, 8), "float64", axes=(1,))
    assert host_strides(g, s) == ((8, 1), (5, 1))
    g, _ = _geom((3, 8), "complex128", strides=(1, 3), inplace=True)
    assert host_strides(g, (1, 3)) == ((1, 3), (1, 3))
    g, _ = _geom((6, 4), "complex128", axes=(0,), strides=(1, 6))
    assert host_strides(g, (1, 6)) == ((1, 6), (1, 6))  # optimized: batch axis 1 outermost
