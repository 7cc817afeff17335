"""Helpers for block-scaled (MXFP8, NVFP4) products: scale tensors in cuBLASLt's interleaved layout.

cuBLASLt reads block scales as a 1-D tensor of 128 x 4 tiles (128 rows or columns of the operand that are not
blocked, 4 groups of the blocked dimension); tiles follow each other along the blocked dimension, then along
the other, then per batch. Inside a tile the scale of (row r, group g) sits at ``(r % 32) * 16 + (r // 32) * 4
+ g``. MXFP8 scales are UE8M0 bytes (the scale is ``2 ** (byte - 127)``) over 32 elements; NVFP4 scales are
float8_e4m3fn over 16 elements. Block scaling runs on GPUs of compute capability 10.0 or newer.
"""

from __future__ import annotations

import enum

from ...._core.operand import adapter, wrap_operand

__all__ = ["BlockScalingFormat", "create_mxfp8_scale", "invert_mxfp8_scale", "get_block_scale_offset",
           "to_block_scale", "expand_block_scale", "apply_mxfp8_scale", "quantize_to_fp4", "unpack_fp4"]

_TILE_OUTER = 128  # rows (or columns) of the operand per scale tile
_TILE_GROUPS = 4   # blocks of the blocked dimension per scale tile


class BlockScalingFormat(str, enum.Enum):
    """Block scaling format of a narrow-precision operand."""

    NVFP4 = "NVFP4"
    MXFP8 = "MXFP8"


_BLOCK = {BlockScalingFormat.NVFP4: 16, BlockScalingFormat.MXFP8: 32}
_OPERAND_DTYPES = {BlockScalingFormat.NVFP4: ("float4_e2m1fn_x2",),
                   BlockScalingFormat.MXFP8: ("float8_e4m3fn", "float8_e5m2")}


def _format(value) -> BlockScalingFormat:
    try:
        return BlockScalingFormat(value.upper() if isinstance(value, str) else value)
    except ValueError:
        raise ValueError(f"block_scaling_format={value!r} is not supported; the allowed values are "
                         f"{[m.value for m in BlockScalingFormat]}") from None


def create_mxfp8_scale(x, exponent: int, stream=None):
    """An MXFP8 block-scale tensor (uint8, 1-D, one scale per 32 elements of ``x``) that scales all of ``x`` by
    ``2 ** exponent``; the same package and device as ``x``. ``exponent``: an int in [-127, 128]. ``stream`` is
    accepted for nvmath-python compatibility; the fill runs on the package's current stream."""
    op = wrap_operand(x, "x")
    if isinstance(exponent, bool) or not isinstance(exponent, int):
        raise TypeError(f"exponent must be an int in [-127, 128], not {type(exponent).__name__}")
    if not -127 <= exponent <= 128:
        raise ValueError(f"exponent={exponent} is outside [-127, 128] (the scale is 2 ** exponent)")
    if op.size % 32:
        raise ValueError(f"x has {op.size} elements; MXFP8 scales one block of 32 elements, so the size must be "
                         f"a multiple of 32")
    scales = adapter(op.package).empty((op.size // 32,), "uint8", op.device_id)
    scales[...] = exponent + 127
    return scales


def invert_mxfp8_scale(mx_scales):
    """The reciprocal of an MXFP8 block-scale tensor (UE8M0 bytes): a new tensor of the same package, device and
    shape whose scales are ``2 ** -e`` where ``mx_scales`` has ``2 ** e`` (255, NaN in UE8M0, is read as 254)."""
    op = wrap_operand(mx_scales, "mx_scales")
    if op.dtype != "uint8":
        raise ValueError(f"mx_scales must be uint8 (UE8M0 exponents), not {op.dtype}")
    out = adapter(op.package).empty(op.shape, "uint8", op.device_id)
    out[...] = mx_scales
    out[out == 255] = 254
    out[...] = 254 - out
    return out


def _shape_and_axis(operand_or_shape, axis):
    if isinstance(operand_or_shape, tuple) and all(isinstance(n, int) for n in operand_or_shape):
        if axis is None:
            raise ValueError("axis (-1 or -2, the blocked dimension) is required when a shape is given")
        return operand_or_shape, axis, None
    op = wrap_operand(operand_or_shape, "operand")
    shape, dtype = op.shape, op.dtype
    if dtype == "float4_e2m1fn_x2":  # two values per byte, packed along the blocked dimension
        packed = -1 if op.strides[-1] == 1 else -2
        shape = tuple(n * 2 if i == len(shape) + packed else n for i, n in enumerate(shape))
    if axis is None:  # A is blocked along its rows (K last, row-major), B along its columns
        axis = -1 if op.strides[-1] == 1 else -2
    return tuple(shape), axis, dtype


def get_block_scale_offset(index, operand_or_shape, block_scaling_format, *, axis=None):
    """The offset, in cuBLASLt's interleaved 1-D scale tensor, of the scale of block ``index`` of an operand.

    ``index``: one index per dimension of the operand, the blocked dimension's counting blocks (ints, or
    integer arrays of one shape for many queries: the result is then an array). ``operand_or_shape``: the
    operand, or its logical shape (then ``axis`` is required). ``axis``: the blocked dimension, -1 (A: rows
    are blocked) or -2 (B: columns are); inferred from an operand's layout when not given.
    """
    fmt = _format(block_scaling_format)
    shape, axis, dtype = _shape_and_axis(operand_or_shape, axis)
    if dtype is not None and dtype not in _OPERAND_DTYPES[fmt]:
        raise ValueError(f"an operand of dtype {dtype} does not use {fmt.value} scales; {fmt.value} operands are "
                         f"{list(_OPERAND_DTYPES[fmt])}")
    ndim = len(shape)
    if ndim < 2:
        raise ValueError(f"block scales apply to matrices (2 or more dimensions), not shape {shape}")
    if axis not in (-1, -2, ndim - 1, ndim - 2):
        raise ValueError(f"axis={axis} must be one of the last two dimensions (-1 or -2)")
    blocked = axis if axis < 0 else axis - ndim
    unblocked = -1 if blocked == -2 else -2
    block = _BLOCK[fmt]
    if any(n <= 0 for n in shape):
        raise ValueError(f"the operand's shape {shape} must have positive extents")
    if shape[unblocked] % _TILE_OUTER:
        raise ValueError(f"the extent {shape[unblocked]} of axis {unblocked} must be a multiple of {_TILE_OUTER} "
                         f"(cuBLASLt's scale tiles are {_TILE_OUTER} x {_TILE_GROUPS})")
    if shape[blocked] % (block * _TILE_GROUPS):
        raise ValueError(f"the extent {shape[blocked]} of axis {blocked} must be a multiple of "
                         f"{block * _TILE_GROUPS} ({_TILE_GROUPS} groups of {block} elements per scale tile row)")
    if len(index) != ndim:
        raise ValueError(f"index has {len(index)} entries; give one per dimension of the operand ({ndim})")
    row, group = index[unblocked], index[blocked]
    groups = shape[blocked] // block
    tile = (row // _TILE_OUTER) * (groups // _TILE_GROUPS) + group // _TILE_GROUPS
    inner = (row % 32) * 16 + ((row % _TILE_OUTER) // 32) * 4 + group % _TILE_GROUPS
    offset = tile * (_TILE_OUTER * _TILE_GROUPS) + inner
    if ndim > 2:  # each matrix of a batch has its own run of scales
        per_matrix = shape[-1] * shape[-2] // block
        stride = per_matrix
        for i in range(ndim - 3, -1, -1):
            offset = offset + index[i] * stride
            stride *= shape[i]
    return offset


def _scale_grid(operand_or_shape, fmt, axis):
    """(logical operand shape, blocked axis, block size, offsets of every block as a NumPy int64 array of the
    scale tensor's shape: the operand's with the blocked dimension divided by the block size)."""
    import numpy as np

    fmt = _format(fmt)
    shape, axis, _dtype = _shape_and_axis(operand_or_shape, axis)
    ndim, block = len(shape), _BLOCK[fmt]
    blocked = (axis if axis < 0 else axis - ndim) + ndim
    grid_shape = tuple(n // block if i == blocked else n for i, n in enumerate(shape))
    index = np.indices(grid_shape, dtype=np.int64) if grid_shape else ()
    offsets = get_block_scale_offset(tuple(index), shape, fmt, axis=blocked - ndim)
    return shape, blocked, block, np.asarray(offsets, np.int64)


def _like(indices, x):
    """``indices`` (NumPy) as an index array of ``x``'s package and device."""
    package = type(x).__module__.split(".")[0]
    if package == "cupy":
        import cupy

        with cupy.cuda.Device(x.device.id):
            return cupy.asarray(indices)
    if package == "torch":
        import torch

        return torch.as_tensor(indices, device=x.device)
    return indices


def to_block_scale(scale_tensor, operand_or_shape, block_scaling_format, *, axis=None, out=None):
    """``scale_tensor`` (one scale per block, of the operand's shape with the blocked dimension divided by the
    block size: 16 for NVFP4, 32 for MXFP8) copied into cuBLASLt's interleaved 1-D layout; a new tensor of its
    package, device and dtype, or ``out`` (1-D, as many elements) filled in place."""
    shape, _blocked, _block, offsets = _scale_grid(operand_or_shape, block_scaling_format, axis)
    op = wrap_operand(scale_tensor, "scale_tensor")
    if tuple(op.shape) != offsets.shape:
        raise ValueError(f"scale_tensor has shape {tuple(op.shape)}; an operand of shape {shape} has scales of "
                         f"shape {offsets.shape}")
    if out is None:
        out = adapter(op.package).empty((offsets.size,), op.dtype, op.device_id)
    else:
        o = wrap_operand(out, "out")
        if tuple(o.shape) != (offsets.size,) or o.dtype != op.dtype or (o.package, o.device_id) != (
                op.package, op.device_id):
            raise ValueError(f"out must be a 1-D {op.package} array of {offsets.size} {op.dtype} elements on the "
                             f"scale tensor's device")
    out[_like(offsets.reshape(-1), out)] = scale_tensor.reshape(-1)
    return out


def expand_block_scale(scales_1d, operand_or_shape, block_scaling_format, *, axis=None):
    """The interleaved 1-D scales of an operand expanded to the operand's logical shape: element ``[..., i, j]``
    holds the scale of its block (the scales' own dtype and package). Deliberate difference: the scales are not
    converted (nvmath-python's ``output_dtype`` and ``device`` are not offered); multiply after converting."""
    shape, blocked, block, offsets = _scale_grid(operand_or_shape, block_scaling_format, axis)
    op = wrap_operand(scales_1d, "scales_1d")
    if len(op.shape) != 1 or op.shape[0] != offsets.size:
        raise ValueError(f"scales_1d must be 1-D with {offsets.size} elements for an operand of shape {shape}, "
                         f"not of shape {tuple(op.shape)}")
    import numpy as np

    full = np.repeat(offsets, block, axis=blocked)
    return scales_1d[_like(full, scales_1d)]


_FLOAT_RANGES = (("float16", 2.0 ** -14, 65504.0), ("float32", 2.0 ** -126, 3.4028234663852886e38),
                 ("float64", 2.0 ** -1022, 1.7976931348623157e308))  # smallest normal, largest finite


def _astype(x, dtype: str):
    if type(x).__module__.split(".")[0] == "torch":
        import torch

        return x.to(getattr(torch, dtype))
    return x.astype(dtype)


def apply_mxfp8_scale(x, scales_1d, output_dtype="smallest"):
    """``x`` (an MXFP8 operand or result) times its block scales (UE8M0 bytes in cuBLASLt's interleaved layout),
    computed in float64 and returned as ``output_dtype``: 'float16', 'float32', 'float64' (names or the
    package's dtypes), or 'smallest', the narrowest of them that holds every value without overflow or
    underflow (a nonzero magnitude below the dtype's smallest normal number counts as underflow). ValueError when
    the values do not fit the dtype asked for. For checking results, not speed."""
    names = [n for n, _lo, _hi in _FLOAT_RANGES]
    if output_dtype != "smallest":
        name = str(output_dtype).split(".")[-1]
        if name not in names:
            raise TypeError(f"output_dtype must be 'smallest' or one of {names}, not {output_dtype!r}")
    op = wrap_operand(scales_1d, "scales_1d")
    if op.dtype != "uint8":
        raise ValueError(f"MXFP8 scales are uint8 (UE8M0 exponents), not {op.dtype}")
    exponents = _astype(expand_block_scale(scales_1d, x, BlockScalingFormat.MXFP8), "float64")
    out = _astype(x, "float64") * (2.0 ** (exponents - 127.0))
    nonzero = abs(out)[out != 0]
    hi = float(nonzero.max()) if nonzero.shape[0] else 0.0
    lo = float(nonzero.min()) if nonzero.shape[0] else 0.0
    fits = [n for n, small, big in _FLOAT_RANGES if hi <= big and (lo == 0.0 or lo >= small)]
    if output_dtype == "smallest":
        if not fits:
            raise ValueError("the scaled values fit no float dtype (float16, float32, float64)")
        return _astype(out, fits[0])
    if name not in fits:
        raise ValueError(f"the scaled values (magnitudes {lo:g} to {hi:g}) do not fit {name}; "
                         f"the narrowest that fits is {fits[0] if fits else 'none'}")
    return _astype(out, name)


# FP4 E2M1 (OCP microscaling): 1 sign bit, 2 exponent bits, 1 mantissa bit; code -> value
_FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
_FP4_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)  # between consecutive magnitudes
_TIES_UP = (1, 3, 5)  # midpoints whose upper neighbour has the even code (round half to even)


def _torch_for(x, what):
    if type(x).__module__.split(".")[0] != "torch":
        raise TypeError(f"{what} must be a torch.Tensor (PyTorch has the float4_e2m1fn_x2 dtype), not "
                        f"{type(x).__name__}")
    import torch

    return torch


def _check_axis(axis, ndim):
    if axis not in (-1, -2) or (axis == -2 and ndim < 2):
        raise ValueError(f"axis={axis!r} must be -1 or -2 (-2 needs 2 or more dimensions)")


def quantize_to_fp4(x, axis):
    """A float32 torch tensor rounded to the nearest FP4 E2M1 value (ties to even, magnitudes above 6 saturate to
    6) and packed two codes per byte along ``axis`` (the first in the low 4 bits) as ``torch.float4_e2m1fn_x2``:
    ``axis=-1`` gives ``(..., Q // 2)`` row-major, ``axis=-2`` gives ``(..., P // 2, Q)`` with the packed
    dimension contiguous (column-major)."""
    torch = _torch_for(x, "x")
    if x.dtype != torch.float32:
        raise ValueError(f"x must be float32, not {x.dtype}")
    _check_axis(axis, x.ndim)
    if x.shape[axis] % 2:
        raise ValueError(f"the packed dimension (axis {axis}) has odd size {x.shape[axis]}; it must be even")
    v = (x.transpose(-1, -2) if axis == -2 else x).contiguous()
    mag = v.abs()
    mids = torch.tensor(_FP4_MIDPOINTS, dtype=torch.float32, device=x.device)
    code = torch.bucketize(mag, mids, right=False)
    for i in _TIES_UP:
        code = code + (mag == _FP4_MIDPOINTS[i]).to(code.dtype)
    code = torch.where(torch.isnan(mag), torch.full_like(code, 7), code)
    code = (code | (torch.signbit(v).to(code.dtype) << 3)).to(torch.uint8).contiguous()
    packed = (code[..., 0::2] | (code[..., 1::2] << 4)).contiguous().view(torch.float4_e2m1fn_x2)
    return packed.transpose(-1, -2) if axis == -2 else packed


def unpack_fp4(fp4_tensor, axis):
    """A ``torch.float4_e2m1fn_x2`` tensor decoded to float32, the packed ``axis`` doubled (see
    :func:`quantize_to_fp4`)."""
    torch = _torch_for(fp4_tensor, "fp4_tensor")
    if fp4_tensor.dtype != torch.float4_e2m1fn_x2:
        raise ValueError(f"fp4_tensor must be torch.float4_e2m1fn_x2, not {fp4_tensor.dtype}")
    _check_axis(axis, fp4_tensor.ndim)
    t = fp4_tensor.transpose(-1, -2) if axis == -2 else fp4_tensor
    u = t.contiguous().view(torch.uint8).to(torch.long)
    codes = torch.stack((u & 0xF, u >> 4), dim=-1).reshape(u.shape[:-1] + (2 * u.shape[-1],))
    out = torch.tensor(_FP4_VALUES, dtype=torch.float32, device=fp4_tensor.device)[codes]
    return out.transpose(-1, -2) if axis == -2 else out
