"""Quantization scales of narrow-precision (FP8) products: device scalars cuBLASLt reads at execution."""

from __future__ import annotations

import ctypes

from ..._core import cuda
from ..._core.frameworks.numpy import view as host_view
from ..._core.operand import wrap_operand
from ...memory import allocate

__all__ = ["Scales", "check", "key"]

_NAMES = ("a", "b", "c", "d")


def _as_dict(scales):
    if scales is None:
        return {}
    if isinstance(scales, dict):
        unknown = sorted(set(scales) - set(_NAMES))
        if unknown:
            raise ValueError(f"unknown quantization scales {unknown}; the allowed names are {list(_NAMES)}")
        return {k: v for k, v in scales.items() if v is not None}
    fields = [getattr(scales, n, None) for n in _NAMES]
    if not hasattr(scales, "a"):
        raise TypeError(f"quantization_scales must be a MatmulQuantizationScales, a dict or None, not "
                        f"{type(scales).__name__}")
    return {n: v for n, v in zip(_NAMES, fields) if v is not None}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def key(scales) -> tuple | None:
    """What a plan depends on in ``scales`` (for the plan cache): the names given, and for each whether it is a
    number (its value is bound per call) or a GPU tensor (package, device, dtype: its address is)."""
    values = _as_dict(scales)
    if not values:
        return None
    out = []
    for name, value in sorted(values.items()):
        if _is_number(value):
            out.append((name, "number"))
            continue
        op = wrap_operand(value, f"quantization scale {name}")
        out.append((name, "number") if op.device_id is None else (name, op.package, op.device_id, op.dtype,
                                                                  op.size))
    return tuple(out)


def check(dt, scales):
    """Which scales a product needs (pure): FP8 needs a and b (and d for an FP8 result); others take none."""
    values = _as_dict(scales)
    if not dt.narrow:
        if values:
            raise ValueError(f"quantization_scales apply to narrow-precision (FP8) operands only; these are "
                             f"{dt.a} x {dt.b}")
        return values
    need = ["a", "b"] + (["d"] if dt.d.startswith("float8") else [])
    missing = [n for n in need if n not in values]
    if missing:
        raise ValueError(f"FP8 matmul needs quantization_scales for {need} (missing {missing}): e.g. "
                         f"quantization_scales={{{', '.join(repr(n) + ': 1.0' for n in need)}}}")
    if "c" in values and not dt.c.startswith("float8"):
        raise ValueError(f"a scale for c applies to an FP8 c only; c is {dt.c}")
    if "d" in values and not dt.d.startswith("float8"):
        raise ValueError(f"a scale for d applies to an FP8 result only; the result is {dt.d}")
    return values


class Scales:
    """The scales of A, B (and C, D) as device pointers: a number lives in a 4-byte device buffer of the plan; a
    one-element float32 tensor on the operands' device is read where it is (so it may change between runs).

    ``ctx`` is the Matmul's context (``_variant.Context``: dtypes, allocator, package, device); the buffers
    are written on ``stream``.
    """

    def __init__(self, ctx, scales, stream):
        self.ctx = ctx
        self.ptrs = {}
        self.bufs = {}
        self.host = {}
        self.values = check(ctx.dt, scales)
        for name, value in self.values.items():
            self._set(name, value, stream)

    def _set(self, name, value, stream):
        ctx = self.ctx
        if _is_number(value):
            buf = self.bufs.get(name)
            if buf is None:
                buf = self.bufs[name] = allocate(ctx.allocator, 4, stream)
            host = self.host[name] = ctypes.c_float(float(value))
            cuda.copy(buf.device_ptr, ctypes.addressof(host), 4, cuda.H2D, stream)
            cuda.synchronize(stream)
            self.ptrs[name] = buf.device_ptr
            return
        op = wrap_operand(value, f"quantization scale {name}")
        if op.size != 1:
            raise ValueError(f"quantization scale {name} must be a number or a one-element tensor, got shape "
                             f"{list(op.shape)}")
        if op.device_id is None:  # a host array: its value
            self._set(name, float(host_view(op).reshape(-1)[0]), stream)
            return
        if op.dtype != "float32":
            raise TypeError(f"quantization scale {name} must be float32 (the compute type), not {op.dtype}")
        if op.device_id != ctx.device or op.package != ctx.package:
            raise ValueError(f"quantization scale {name} must be a {ctx.package} tensor on GPU {ctx.device}")
        self.host[name] = op  # keep it alive
        self.ptrs[name] = op.ptr

    def bind(self, problem):
        """Point a planned problem (``LtProblem``) at the scales."""
        for name, ptr in self.ptrs.items():
            problem.set_scale(name, ptr)

    def reset(self, scales, stream) -> bool:
        """New scale values (numbers or tensors); returns whether a scale moved (then the caller binds every
        planned problem again). A number equal to the one in place is not copied again."""
        values = _as_dict(scales)
        if not self.ctx.dt.narrow and values:
            raise ValueError("quantization_scales apply to narrow-precision (FP8) operands only")
        before = dict(self.ptrs)
        for name, value in values.items():
            if _is_number(value) and _is_number(self.values.get(name)) and value == self.values[name]:
                continue
            self._set(name, value, stream)
            self.values[name] = value
        return self.ptrs != before

    def free(self):
        for buf in self.bufs.values():
            buf.free()
        self.bufs = {}
        self.ptrs = {}
