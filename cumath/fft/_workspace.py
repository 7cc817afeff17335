"""``estimate_workspace_size(key)``: the GPU workspace a plan of an ``FFT.create_key`` key needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

from .._core.execution import ExecutionCPU, ExecutionCUDA
from ._options import FFTOptions
from ._traits import FFTKey, LayoutKey, device_strides, key_geometry

if TYPE_CHECKING:
    from typing import Any

__all__ = ["estimate_workspace_size"]

logger = logging.getLogger(__name__)

_TECHNIQUES = ("default", "refined")


def estimate_workspace_size(key: Any, *, technique: str = "default", handle: int | None = None) -> int:
    """The workspace, in bytes, that cuFFT needs for the FFT of ``key`` (from :meth:`FFT.create_key`).

    0 for a key of CPU execution (the CPU engines manage their own memory) and for GPU problems that need
    none. ``technique``: 'default' or 'refined', as in nvmath-python. Deliberate difference: both make a cuFFT
    plan of the key's exact layouts without allocating its workspace and read its size (exact, not an upper
    bound), so half-precision keys work with either; ``handle`` is accepted and not used (the plan is
    cumath's own, destroyed before returning).
    """
    if technique not in _TECHNIQUES:
        raise ValueError(f"technique={technique!r} is not supported; the allowed values are {list(_TECHNIQUES)}")
    if handle is not None and not isinstance(handle, int):
        raise TypeError(f"handle must be a cuFFT handle (int) or None, not {type(handle).__name__}")
    if not isinstance(key, FFTKey) or not isinstance(key.layout, LayoutKey) \
            or not isinstance(key.options, FFTOptions) \
            or not isinstance(key.execution, (ExecutionCPU, ExecutionCUDA)):
        raise ValueError("key must be a key made by cumath.fft.FFT.create_key(...) or FFT.get_key()")
    options, execution = key.options, key.execution
    if isinstance(execution, ExecutionCPU):
        return 0
    from .._core.cuda import require_device
    from ._executors import _gpu_plan

    require_device(execution.device_id)
    geom, strides = key_geometry(key.layout, options.last_axis_parity)
    host_operand = key.operand[1] is None
    in_strides, out_strides = device_strides(geom, strides, host_operand, options.overwrite_input)
    plan = _gpu_plan(geom, in_strides, out_strides, execution.device_id, 0, None, options.logger or logger)
    try:
        return int(plan.workspace_size)
    finally:
        plan.free()
