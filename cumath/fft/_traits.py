"""Pure plan arithmetic of the FFT: axes, sizes, types and memory layouts. No side effects, no GPU.

Strides are in elements of each array's own dtype. A "perm" lists axes from outermost to innermost.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from .._core.dtypes import COMPLEX_OF, REAL_OF
from .._core.layout import dense_strides, natural_perm
from ..errors import UnsupportedDtypeError
from .._core.overlap import self_overlapping

__all__ = ["FFTGeometry", "fft_geometry", "check_axes", "dense_strides", "natural_perm", "cufft_embed", "cufft_layout",
           "c2r_in_place_ok", "device_layouts", "device_strides", "host_strides", "layout_key",
           "LayoutKey", "FFTKey", "key_geometry", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = ("float16", "float32", "float64", "complex32", "complex64", "complex128")
FFT_TYPES = ("C2C", "R2C", "C2R")


@dataclass(frozen=True)
class FFTGeometry:
    fft_type: str
    axes: tuple  # transformed axes, in the order given (the last one is halved by R2C/C2R)
    sizes: tuple  # logical transform size along each axis of ``axes``
    in_shape: tuple
    in_dtype: str
    out_shape: tuple
    out_dtype: str
    out_perm: tuple  # memory order of the result (outermost first)
    canonical_perm: tuple  # batch axes (in input order), then the transformed axes
    inplace: bool

    @property
    def batch_axes(self) -> tuple:
        return tuple(a for a in range(len(self.in_shape)) if a not in self.axes)

    @property
    def batch_size(self) -> int:
        n = 1
        for a in self.batch_axes:
            n *= self.in_shape[a]
        return n

    @property
    def extents(self) -> tuple:
        """Extents of the input and of the output along the transformed axes (in ``axes`` order): the
        complex side of R2C/C2R holds n//2+1 along the last one."""
        ins, outs = list(self.sizes), list(self.sizes)
        if self.fft_type == "R2C":
            outs[-1] = outs[-1] // 2 + 1
        elif self.fft_type == "C2R":
            ins[-1] = ins[-1] // 2 + 1
        return ins, outs

    @property
    def precision(self) -> str:
        return REAL_OF.get(self.in_dtype, self.in_dtype)

    def transform_dims(self, in_strides, out_strides):
        """FFTW-style (n, in stride, out stride) for each transformed axis, in ``axes`` order."""
        return [(n, in_strides[a], out_strides[a]) for a, n in zip(self.axes, self.sizes)]

    def batch_dims(self, in_strides, out_strides):
        return [(self.in_shape[a], in_strides[a], out_strides[a]) for a in self.batch_axes
                if self.in_shape[a] != 1]


def check_axes(axes):
    """``axes`` as a tuple of ints (None stays None): a list, tuple, range or 1-D integer array of integers;
    TypeError for anything else (strings, dicts, sets, generators, floats, bools)."""
    if axes is None or (type(axes) is tuple and all(type(a) is int for a in axes)):
        return axes
    if isinstance(axes, (str, bytes, dict, set, frozenset)) or not hasattr(axes, "__len__") \
            or not hasattr(axes, "__getitem__"):
        raise TypeError(f"axes must be a sequence of ints (a list or tuple), not {type(axes).__name__}"
                        + ("; pass list(...) of it" if hasattr(axes, "__next__") else ""))
    out = []
    for a in axes:
        if isinstance(a, bool) or type(a).__name__ == "bool_":
            raise TypeError(f"axes must be ints, not bools (axes={list(axes)!r})")
        try:
            out.append(operator.index(a))
        except TypeError:
            raise TypeError(f"axes must be ints, but {a!r} is a {type(a).__name__} (axes={list(axes)!r})") from None
    return tuple(out)


def normalize_axes(axes, ndim: int) -> tuple:
    axes = check_axes(axes)
    if axes is None:
        if ndim > 3:
            raise ValueError(
                f"the operand has {ndim} dimensions; without `axes` all of them would be transformed, but at "
                f"most 3 FFT axes are supported: pass axes=, e.g. axes=(-2, -1)"
            )
        return tuple(range(ndim))
    if not axes:
        raise ValueError("axes must name at least one axis")
    if len(axes) > 3:
        raise ValueError(f"at most 3 FFT axes are supported, got {len(axes)} (axes={axes})")
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for an operand with {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"axes {axes} repeat an axis; each axis may appear once")
    return tuple(out)


def fft_geometry(shape, strides, dtype, axes, fft_type=None, last_axis_parity="even",
                 result_layout="optimized", inplace=False, readonly=False) -> FFTGeometry:
    """Check an FFT problem and work out its sizes, types and result layout."""
    if dtype not in SUPPORTED_DTYPES:
        raise UnsupportedDtypeError(f"dtype {dtype} is not supported for FFT; the supported dtypes are {list(SUPPORTED_DTYPES)}")
    ndim = len(shape)
    if ndim == 0:
        raise ValueError("the operand is a scalar (0-d); FFTs need at least one dimension")
    if any(n == 0 for n in shape):
        raise ValueError(f"the operand of shape {tuple(shape)} is empty; every dimension must be at least 1")
    axes = normalize_axes(axes, ndim)
    complex_in = dtype.startswith("complex")
    if fft_type is None:
        fft_type = "C2C" if complex_in else "R2C"
    if fft_type not in FFT_TYPES:
        raise ValueError(f"fft_type={fft_type!r} is not supported; the allowed values are {list(FFT_TYPES)}")
    if fft_type in ("C2C", "C2R") and not complex_in:
        raise UnsupportedDtypeError(
            f"{fft_type} FFTs need a complex operand (complex32, complex64, complex128), got {dtype}; "
            f"use rfft / fft_type='R2C' for real input"
        )
    if fft_type == "R2C" and complex_in:
        raise UnsupportedDtypeError(f"R2C FFTs need a real operand (float16, float32, float64), got {dtype}")
    if last_axis_parity not in ("even", "odd"):
        raise ValueError(f"last_axis_parity={last_axis_parity!r} is not supported; the allowed values are ['even', 'odd']")
    if result_layout not in ("natural", "optimized"):
        raise ValueError(f"result_layout={result_layout!r} is not supported; the allowed values are ['natural', 'optimized']")
    if inplace:
        if fft_type != "C2C":
            raise ValueError(f"inplace=True is supported for C2C FFTs only (this is {fft_type}); use inplace=False")
        if readonly:
            raise ValueError("inplace=True needs a writeable operand, but this array is read-only; pass a writeable copy")
        if self_overlapping(shape, strides):
            raise ValueError(f"inplace=True writes the result over the operand, but elements of this operand share "
                             f"memory (strides {tuple(strides)} over shape {tuple(shape)}: a zero-stride, "
                             f"sliding-window or as_strided view); pass a copy or use inplace=False")

    sizes = [shape[a] for a in axes]
    out_shape = list(shape)
    last = axes[-1]
    if fft_type == "C2C":
        out_dtype = dtype
    elif fft_type == "R2C":
        out_dtype = COMPLEX_OF[dtype]
        out_shape[last] = shape[last] // 2 + 1
    else:
        m = shape[last]
        n = 2 * (m - 1) + (1 if last_axis_parity == "odd" else 0)
        if n < 1:
            raise ValueError(
                f"a C2R FFT of an axis of size {m} with last_axis_parity='{last_axis_parity}' would produce an "
                f"empty result; use last_axis_parity='odd' (result size 1)"
            )
        sizes[-1] = n
        out_shape[last] = n
        out_dtype = REAL_OF[dtype]

    in_perm = natural_perm(strides)
    batch = [a for a in in_perm if a not in axes]
    canonical = tuple(batch) + axes
    out_perm = canonical if (result_layout == "optimized" and not inplace) else in_perm
    return FFTGeometry(fft_type, axes, tuple(sizes), tuple(shape), dtype, tuple(out_shape), out_dtype,
                       tuple(out_perm), canonical, bool(inplace))


class LayoutKey(NamedTuple):
    """The plan layout of an FFT problem, normalised (see :func:`layout_key`)."""
    fft_type: str
    in_dtype: str
    out_dtype: str
    inplace: bool
    transform_dims: tuple  # (logical size, input stride, result stride) per transformed axis, in ``axes`` order
    batch_dims: tuple  # (size, input stride, result stride) of the batch axes of size > 1, sorted


class FFTKey(NamedTuple):
    """What ``FFT.create_key`` and ``FFT.get_key`` return: a hashable tuple with named fields."""
    operand: tuple  # (package, device id or None for host memory)
    layout: LayoutKey
    options: Any  # FFTOptions
    execution: Any  # ExecutionCPU / ExecutionCUDA (create_key) or the execution as the FFT was given it
    prolog: Any  # callback_key() of the prolog and of the epilog
    epilog: Any


def layout_key(geom: FFTGeometry, in_strides) -> LayoutKey:
    """What a CPU or GPU plan of ``geom`` depends on, normalised: the type, dtypes, the transformed dimensions
    (size, input stride, result stride, in ``axes`` order) and the batch dimensions as a sorted set (size-1 ones
    dropped). Operands whose batch axes are rearranged, or whose strides are transposed over the batch axes,
    have the same key: one plan serves them all (the result takes each operand's own shape)."""
    _, out_strides = host_strides(geom, in_strides)
    return LayoutKey(geom.fft_type, geom.in_dtype, geom.out_dtype, geom.inplace,
                     tuple(geom.transform_dims(in_strides, out_strides)),
                     tuple(sorted(geom.batch_dims(in_strides, out_strides))))


def key_geometry(layout: LayoutKey, last_axis_parity="even"):
    """(geometry, operand strides) of a representative operand of ``layout``, with the key's own layout (so the
    same plans as every operand of that key). Its axes are laid out in the result's memory order (outermost
    first; of equal result strides, a size-1 axis sits inside the other), which the geometry's result order
    then is, whatever ``result_layout`` made the key."""
    dims = [(n, si, so, False) for n, si, so in layout.batch_dims] + \
           [(n, si, so, True) for n, si, so in layout.transform_dims]
    order = sorted(range(len(dims)), key=lambda i: (-dims[i][2], dims[i][0] == 1))
    position = {i: p for p, i in enumerate(order)}
    shape = [dims[i][0] for i in order]
    strides = tuple(dims[i][1] for i in order)
    axes = tuple(position[len(layout.batch_dims) + k] for k in range(len(layout.transform_dims)))
    if layout.fft_type == "C2R":  # the complex input holds n//2+1 along the last transformed axis
        shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    geom = fft_geometry(tuple(shape), strides, layout.in_dtype, axes, layout.fft_type, last_axis_parity,
                        "natural", layout.inplace)
    if not layout.inplace:
        geom = replace(geom, out_perm=tuple(range(len(shape))))
    return geom, strides


def _merge_batch(dims):
    """Merge batch dims (n, stride) that form one regular sequence; returns the merged list."""
    dims = sorted((d for d in dims if d[0] != 1), key=lambda d: -d[1])
    merged = []
    for n, s in dims:
        if merged and merged[-1][1] == s * n:
            pn, _ = merged[-1]
            merged[-1] = (pn * n, s)
        else:
            merged.append((n, s))
    return merged


def cufft_embed(extents, strides, batch):
    """cuFFT's advanced layout for one array, or None when it cannot describe it.

    ``extents``: the array's extent along each transformed axis (in transform order), ``strides`` their
    strides, ``batch``: (n, stride) of the other axes. Returns (embed, stride, dist, count), where element
    (b, i0, i1, i2) sits at b*dist + ((i0*embed[1] + i1)*embed[2] + i2)*stride.
    """
    if any(s <= 0 for s in strides):
        return None
    rank = len(extents)
    stride = strides[-1]
    embed = [extents[0]] + [0] * (rank - 1)
    for k in range(rank - 1, 0, -1):
        q, r = divmod(strides[k - 1], strides[k])
        if r or q < extents[k]:
            return None
        embed[k] = q
    merged = _merge_batch(batch)
    if len(merged) > 1 or any(s <= 0 for _, s in merged):
        return None
    if merged:
        count, dist = merged[0]
    else:
        count, dist = 1, strides[0] * extents[0]
    return tuple(embed), stride, dist, count


# ----------------------------------------------------------------------------------------------- layouts

def cufft_layout(geom: FFTGeometry, extents, shape, strides):
    """cuFFT's advanced layout (:func:`cufft_embed`) of one array of the problem ``geom``: ``extents`` along the
    transformed axes, ``shape`` and ``strides`` (in elements) of the whole array; None when cuFFT cannot
    describe it."""
    return cufft_embed(extents, [strides[a] for a in geom.axes], [(shape[b], strides[b]) for b in geom.batch_axes])


def c2r_in_place_ok(geom: FFTGeometry, in_strides, overwrite_input: bool) -> bool:
    """Whether cuFFT's C2R may work on the operand itself (it overwrites its input): only when the caller
    allows it and the operand is dense in the canonical order (batch axes outermost)."""
    return overwrite_input and tuple(in_strides) == dense_strides(geom.in_shape, geom.canonical_perm)


def device_layouts(geom: FFTGeometry, in_strides, in_fixed: bool, overwrite_input: bool = False):
    """The memory orders cuFFT reads and writes: (input perm, or None to read the operand's ``in_strides`` as
    they are; output perm). ``in_fixed``: the operand is on the GPU (cuFFT reads it in place when it can);
    otherwise it is staged, and the staging buffer's order is chosen here."""
    in_ext, out_ext = geom.extents
    in_perm = None
    c2r_copy = geom.fft_type == "C2R" and not c2r_in_place_ok(geom, in_strides, overwrite_input)
    if not in_fixed or c2r_copy or cufft_layout(geom, in_ext, geom.in_shape, in_strides) is None:
        in_perm = natural_perm(in_strides)
        if geom.fft_type == "C2R" or cufft_layout(geom, in_ext, geom.in_shape,
                                                  dense_strides(geom.in_shape, in_perm)) is None:
            in_perm = geom.canonical_perm
    out_perm = geom.out_perm
    if geom.inplace:
        out_perm = in_perm
    elif cufft_layout(geom, out_ext, geom.out_shape, dense_strides(geom.out_shape, out_perm)) is None:
        out_perm = geom.canonical_perm
    return in_perm, out_perm


def device_strides(geom: FFTGeometry, op_strides, host_operand: bool, overwrite_input: bool = False):
    """Strides (in elements) of the arrays cuFFT reads and writes for an operand with ``op_strides``: what
    a callback's ``offset`` indexes (``FFT.get_input_layout`` / ``get_output_layout``)."""
    in_perm, out_perm = device_layouts(geom, op_strides, in_fixed=not host_operand, overwrite_input=overwrite_input)
    in_strides = tuple(op_strides) if in_perm is None else dense_strides(geom.in_shape, in_perm)
    out_strides = in_strides if geom.inplace else dense_strides(geom.out_shape, out_perm)
    return tuple(in_strides), tuple(out_strides)


def host_strides(geom: FFTGeometry, op_strides):
    """Strides (in elements) of the operand and of the result of a CPU plan: the result is dense in
    ``geom.out_perm``, or the operand itself in place."""
    in_strides = tuple(op_strides)
    return in_strides, (in_strides if geom.inplace else dense_strides(geom.out_shape, geom.out_perm))
