"""cumath.linalg.advanced.helpers.matmul: block-scale formats, MXFP8 scales, offsets in cuBLASLt's interleaved
scale layout (checked against the documented layout: 128 x 4 tiles, (r % 32) * 16 + (r // 32) * 4 + g)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath.linalg.advanced.helpers import matmul as H


def reference_offsets(rows, groups):
    """Offsets of every (row, group) by walking the tiles in order: the layout written out, not a formula."""
    out = np.empty((rows, groups), np.int64)
    pos = 0
    for tile_r in range(rows // 128):
        for tile_g in range(groups // 4):
            for rr in range(32):
                for quarter in range(4):
                    for g in range(4):
                        out[tile_r * 128 + quarter * 32 + rr, tile_g * 4 + g] = pos
                        pos += 1
    return out


@pytest.mark.parametrize("fmt,block", [("NVFP4", 16), ("MXFP8", 32)])
@pytest.mark.parametrize("rows,cols_blocks", [(128, 4), (256, 8), (384, 12)])
def test_offsets_match_the_layout(fmt, block, rows, cols_blocks):
    shape = (rows, cols_blocks * block)
    ref = reference_offsets(rows, cols_blocks)
    r, g = np.meshgrid(np.arange(rows), np.arange(cols_blocks), indexing="ij")
    got = H.get_block_scale_offset((r, g), shape, fmt, axis=-1)
    assert np.array_equal(got, ref)
    assert sorted(got.ravel()) == list(range(rows * cols_blocks))  # a permutation: every scale once
    # B is blocked along its columns (axis=-2): the roles of the two axes swap
    got_b = H.get_block_scale_offset((g, r), shape[::-1], fmt, axis=-2)
    assert np.array_equal(got_b, ref)


def test_documented_examples():
    assert H.get_block_scale_offset((5, 2), (128, 128), H.BlockScalingFormat.NVFP4, axis=-1) == 82
    assert H.get_block_scale_offset((5, 5), (128, 128), "nvfp4", axis=-1) == 593


def test_batches_follow_each_other():
    one = 128 * 128 // 32
    assert H.get_block_scale_offset((2, 5, 1), (3, 128, 128), "MXFP8", axis=-1) == \
        2 * one + H.get_block_scale_offset((5, 1), (128, 128), "MXFP8", axis=-1)


@settings(max_examples=50, deadline=None, database=None)
@given(st.integers(1, 3), st.integers(1, 3), st.data())
def test_property_offsets_in_range(tr, tg, data):
    rows, groups = 128 * tr, 4 * tg
    r, g = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, groups - 1))
    off = H.get_block_scale_offset((r, g), (rows, groups * 32), "MXFP8", axis=-1)
    assert 0 <= off < rows * groups and off == reference_offsets(rows, groups)[r, g]


@pytest.mark.parametrize("kwargs,exc,fragment", [
    ({"operand_or_shape": (128, 64), "block_scaling_format": "MXFP8"}, ValueError, "axis (-1 or -2"),
    ({"operand_or_shape": (100, 128), "block_scaling_format": "MXFP8", "axis": -1}, ValueError, "multiple of 128"),
    ({"operand_or_shape": (128, 100), "block_scaling_format": "MXFP8", "axis": -1}, ValueError, "multiple of 128"),
    ({"operand_or_shape": (128, 128), "block_scaling_format": "FP6", "axis": -1}, ValueError, "'FP6' is not"),
    ({"operand_or_shape": (128, 128), "block_scaling_format": "MXFP8", "axis": 0, "index": (1, 1, 1)}, ValueError,
     "index has 3 entries"),
])
def test_offset_errors(kwargs, exc, fragment):
    index = kwargs.pop("index", (0, 0))
    with pytest.raises(exc) as info:
        H.get_block_scale_offset(index, **kwargs)
    assert fragment in str(info.value)


def test_operand_dtype_checked():
    with pytest.raises(ValueError, match="does not use MXFP8 scales"):
        H.get_block_scale_offset((0, 0), np.zeros((128, 128), np.float32), "MXFP8")


@pytest.mark.parametrize("exponent", [-127, -3, 0, 5, 128])
def test_mxfp8_scales(exponent):
    x = np.zeros((4, 64), np.float32)
    s = H.create_mxfp8_scale(x, exponent)
    assert s.dtype == np.uint8 and s.shape == (8,) and (s == exponent + 127).all()
    inv = H.invert_mxfp8_scale(s)
    want = 254 - min(exponent + 127, 254)
    assert (inv == want).all() and (s == exponent + 127).all()  # the input is left alone


def test_mxfp8_scale_errors():
    with pytest.raises(ValueError, match="outside"):
        H.create_mxfp8_scale(np.zeros(32), 129)
    with pytest.raises(TypeError, match="exponent must be an int"):
        H.create_mxfp8_scale(np.zeros(32), 1.5)
    with pytest.raises(ValueError, match="multiple of 32"):
        H.create_mxfp8_scale(np.zeros(31), 0)
    with pytest.raises(ValueError, match="must be uint8"):
        H.invert_mxfp8_scale(np.zeros(4, np.float32))


@pytest.mark.parametrize("fmt,block", [("NVFP4", 16), ("MXFP8", 32)])
@pytest.mark.parametrize("shape,axis", [((256, 128), -1), ((128, 256), -2), ((2, 128, 128), -1)])
def test_to_block_scale_and_back(fmt, block, shape, axis):
    rng = np.random.default_rng(0)
    grid = list(shape)
    grid[axis] //= block
    scales = rng.integers(0, 255, grid, dtype=np.uint8)
    flat = H.to_block_scale(scales, shape, fmt, axis=axis)
    assert flat.shape == (scales.size,) and sorted(flat) == sorted(scales.ravel())
    idx = tuple(int(i) for i in np.unravel_index(7, scales.shape))
    assert flat[H.get_block_scale_offset(idx, shape, fmt, axis=axis)] == scales[idx]
    out = np.empty_like(flat)
    assert H.to_block_scale(scales, shape, fmt, axis=axis, out=out) is out and np.array_equal(out, flat)
    full = H.expand_block_scale(flat, shape, fmt, axis=axis)
    assert full.shape == shape
    assert np.array_equal(np.take(full, np.arange(0, shape[axis], block), axis=axis), scales)
    assert np.array_equal(np.take(full, np.arange(block - 1, shape[axis], block), axis=axis), scales)


def test_block_scale_shape_errors():
    with pytest.raises(ValueError, match="has scales of shape"):
        H.to_block_scale(np.zeros((128, 3), np.uint8), (128, 128), "MXFP8", axis=-1)
    with pytest.raises(ValueError, match="out must be a 1-D numpy array of 512"):
        H.to_block_scale(np.zeros((128, 4), np.uint8), (128, 128), "MXFP8", axis=-1, out=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="scales_1d must be 1-D with 512 elements"):
        H.expand_block_scale(np.zeros(5, np.uint8), (128, 128), "MXFP8", axis=-1)


@pytest.mark.parametrize("exponent,want", [(3, "float16"), (-20, "float32"), (120, "float32"), (-127, "float64")])
def test_apply_mxfp8_scale(exponent, want):
    torch = pytest.importorskip("torch")
    x = (torch.rand(128, 128) + 0.5).to(torch.float8_e4m3fn)
    y = H.apply_mxfp8_scale(x, H.create_mxfp8_scale(x, exponent))
    assert y.dtype == getattr(torch, want)
    ref = x.double() * 2.0 ** exponent
    assert torch.allclose(y.double(), ref, rtol=1e-3)
    assert H.apply_mxfp8_scale(x, H.create_mxfp8_scale(x, exponent), "float64").dtype == torch.float64


def test_apply_mxfp8_scale_errors():
    torch = pytest.importorskip("torch")
    x = torch.ones(128, 128).to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="do not fit float16; the narrowest that fits is float32"):
        H.apply_mxfp8_scale(x, H.create_mxfp8_scale(x, 100), torch.float16)
    with pytest.raises(TypeError, match="output_dtype must be 'smallest' or one of"):
        H.apply_mxfp8_scale(x, H.create_mxfp8_scale(x, 0), "int8")
    with pytest.raises(ValueError, match="MXFP8 scales are uint8"):
        H.apply_mxfp8_scale(x, torch.zeros(512))


@pytest.mark.parametrize("axis", [-1, -2])
def test_fp4_round_trip(axis):
    torch = pytest.importorskip("torch")
    values = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0, -0.0])
    x = values.reshape(4, 4) if axis == -1 else values.reshape(4, 4).T.contiguous()
    q = H.quantize_to_fp4(x, axis)
    assert q.dtype == torch.float4_e2m1fn_x2
    assert q.shape == ((4, 2) if axis == -1 else (2, 4))
    assert q.stride(-1 if axis == -1 else -2) == 1
    assert torch.equal(H.unpack_fp4(q, axis), x)


def test_fp4_rounding_ties_to_even_and_saturation():
    torch = pytest.importorskip("torch")
    x = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, 100.0, -0.26, 0.1, -5.1])
    got = H.unpack_fp4(H.quantize_to_fp4(x, -1), -1)
    assert got.tolist() == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, -0.5, 0.0, -6.0]
    q = H.quantize_to_fp4(torch.tensor([1.0, 2.0]), -1)
    assert q.view(torch.uint8).item() == 0x2 | (0x4 << 4)  # the first value in the low 4 bits


@settings(max_examples=30, deadline=None, database=None)
@given(st.lists(st.floats(-8, 8, width=32), min_size=2, max_size=16).filter(lambda v: len(v) % 2 == 0))
def test_property_fp4_nearest(vals):
    torch = pytest.importorskip("torch")
    x = torch.tensor(vals, dtype=torch.float32)
    got = H.unpack_fp4(H.quantize_to_fp4(x, -1), -1)
    grid = torch.tensor(sorted(set(abs(v) for v in H._FP4_VALUES)))
    for v, g in zip(x.tolist(), got.tolist()):
        best = (grid - min(abs(v), 6.0)).abs().min().item()
        assert abs(abs(g) - min(abs(v), 6.0)) == pytest.approx(best)
        assert g == 0 or (g < 0) == (v < 0)


def test_fp4_errors():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        H.quantize_to_fp4(np.zeros(4, np.float32), -1)
    with pytest.raises(ValueError, match="x must be float32"):
        H.quantize_to_fp4(torch.zeros(4, dtype=torch.float64), -1)
    with pytest.raises(ValueError, match="odd size 3"):
        H.quantize_to_fp4(torch.zeros(3), -1)
    with pytest.raises(ValueError, match="axis=0 must be -1 or -2"):
        H.quantize_to_fp4(torch.zeros(4), 0)
    with pytest.raises(ValueError, match="must be torch.float4_e2m1fn_x2"):
        H.unpack_fp4(torch.zeros(4), -1)
