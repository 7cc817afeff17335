"""Quantization scales of narrow-precision (FP8) products: device scalars cuBLASLt reads at execution."""

from __future__ import annotations

import ctypes

from ..._core.operand import wrap_operand
from ...memory import allocate

__all__ = ["Scales", "check"]

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
    one-element float32 tensor on the operands' device is read where it is (so it may change between runs)."""

    def __init__(self, mm, scales):
        self.mm = mm
        self.ptrs = {}
        self.bufs = {}
        self.host = {}
        self.values = check(mm._dt, scales)
        for name, value in self.values.items():
            self._set(name, value)

    def _set(self, name, value):
        mm = self.mm
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            buf = self.bufs.get(name)
            if buf is None:
                buf = self.bufs[name] = allocate(mm._allocator, 4, mm._stream)
            host = self.host[name] = ctypes.c_float(float(value))
            from ..._core.cuda import H2D, copy, synchronize

            copy(buf.device_ptr, ctypes.addressof(host), 4, H2D, mm._stream)
            synchronize(mm._stream)
            self.ptrs[name] = buf.device_ptr
            return
        op = wrap_operand(value, f"quantization scale {name}")
        if op.size != 1:
            raise ValueError(f"quantization scale {name} must be a number or a one-element tensor, got shape "
                             f"{list(op.shape)}")
        if op.device_id is None:  # a host array: its value
            from ..._core.operand import adapter

            self._set(name, float(adapter("numpy").view(op).reshape(-1)[0]) if op.package == "numpy"
                      else float(op.obj.reshape(-1)[0]))
            return
        if op.dtype != "float32":
            raise TypeError(f"quantization scale {name} must be float32 (the compute type), not {op.dtype}")
        if op.device_id != mm._device or op.package != mm._package:
            raise ValueError(f"quantization scale {name} must be a {mm._package} tensor on GPU {mm._device}")
        self.host[name] = op  # keep it alive
        self.ptrs[name] = op.ptr

    def bind(self, problem):
        from ._executor import _attrs

        A = _attrs()
        attrs = {"a": A.CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, "b": A.CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                 "c": A.CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, "d": A.CUBLASLT_MATMUL_DESC_D_SCALE_POINTER}
        for name, ptr in self.ptrs.items():
            problem.set_pointer(attrs[name], ptr)

    def reset(self, scales):
        values = _as_dict(scales)
        if not self.mm._dt.narrow and values:
            raise ValueError("quantization_scales apply to narrow-precision (FP8) operands only")
        for name, value in values.items():
            self._set(name, value)
        for v in self.mm._variants.values():
            self.bind(v.problem)

    def free(self):
        for buf in self.bufs.values():
            buf.free()
        self.bufs = {}
        self.ptrs = {}
