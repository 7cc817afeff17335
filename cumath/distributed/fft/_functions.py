"""Stateless distributed FFTs: ``fft``, ``ifft``, ``rfft``, ``irfft``, and ``allocate_operand``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

import numpy as np

from .._operands import wrap_result
from .._distributions import Box, Slab
from ._options import FFTOptions, check_options
from ._planner import FFT

if TYPE_CHECKING:
    from types import ModuleType
    import logging
    from collections.abc import Mapping, Sequence
    from typing import Any
    from ..._core.typing import AnyTensor, DTypeLike, StreamLike
    from ...fft._options import FFTDirection

__all__ = ["fft", "ifft", "rfft", "irfft", "allocate_operand"]


def _run(operand, distribution, options, direction, fft_type, stream, sync=True):
    options = check_options(options)
    if fft_type is not None:
        if options.fft_type not in (None, fft_type):
            raise ValueError(f"options.fft_type={options.fft_type!r} contradicts this function ({fft_type})")
        options = FFTOptions(**{**options.__dict__, "fft_type": fft_type})
    with FFT(operand, distribution=distribution, options=options, stream=stream) as f:
        f.plan()
        return f.execute(direction=direction, sync_symmetric_memory=sync)


def fft(operand: AnyTensor, /, distribution: Any, *, direction: FFTDirection | str | None = None,
        sync_symmetric_memory: bool = True, options: FFTOptions | Mapping[str, Any] | None = None,
        stream: StreamLike = None) -> AnyTensor:
    """Forward (or ``direction=``) C2C FFT of a distributed 2-D/3-D array; this rank's piece of the result.
    ``sync_symmetric_memory``: see :meth:`FFT.execute`."""
    return _run(operand, distribution, options, direction, None, stream, sync_symmetric_memory)


def ifft(operand: AnyTensor, /, distribution: Any, *, sync_symmetric_memory: bool = True,
         options: FFTOptions | Mapping[str, Any] | None = None, stream: StreamLike = None) -> AnyTensor:
    """Inverse C2C FFT (not normalized) of a distributed array; this rank's piece of the result."""
    return _run(operand, distribution, options, "inverse", "C2C", stream, sync_symmetric_memory)


def rfft(operand: AnyTensor, /, distribution: Any, *, sync_symmetric_memory: bool = True,
         options: FFTOptions | Mapping[str, Any] | None = None, stream: StreamLike = None) -> AnyTensor:
    """R2C FFT of a distributed real array (the last axis halved to n//2+1)."""
    return _run(operand, distribution, options, "forward", "R2C", stream, sync_symmetric_memory)


def irfft(operand: AnyTensor, /, distribution: Any, *, sync_symmetric_memory: bool = True,
          options: FFTOptions | Mapping[str, Any] | None = None, stream: StreamLike = None) -> AnyTensor:
    """C2R FFT (not normalized) of a distributed complex array; ``options.last_axis_parity`` sets the length."""
    return _run(operand, distribution, options, "inverse", "C2R", stream, sync_symmetric_memory)


def allocate_operand(shape: int | Sequence[int], package: str | ModuleType, *, input_dtype: DTypeLike = None,
                     distribution: Any = None, memory_space: str = "cpu", fft_type: str | None = None,
                     logger: logging.Logger | None = None) -> Any:
    """An uninitialized local operand of ``shape`` (this rank's piece) for a distributed FFT.

    For R2C and C2R the buffer is padded so that it can also hold this rank's piece of the complex (R2C) or
    real (C2R) side of the transform, the size an in-place transform of the GPU engine needs; the array
    returned is a view of the requested shape on that buffer. ``package`` is ``numpy`` or ``torch`` (a module
    or its name) for ``memory_space='cpu'``; ``cupy`` or ``torch`` for ``memory_space='cuda'`` on GPU runs,
    where the buffer is NVSHMEM symmetric memory (collective: every rank calls it; free it with
    ``cumath.distributed.free_symmetric_memory`` on the array's base). C2C operands from it are transformed in
    place where the buffer also holds this rank's result piece (else they are staged).
    """
    name = package if isinstance(package, str) else getattr(package, "__name__", str(package))
    gpu = str(memory_space).lower() in ("cuda", "device", "gpu")
    if name not in (("cupy", "torch") if gpu else ("numpy", "torch")):
        raise ValueError(f"allocate_operand: package must be {'cupy or torch' if gpu else 'numpy or torch'} (or "
                         f"their names) for memory_space={memory_space!r}, got {name!r}")
    if not gpu and str(memory_space).lower() not in ("cpu", "host"):
        raise ValueError(f"allocate_operand: memory_space={memory_space!r}; CPU runs allocate 'cpu' operands, GPU "
                         "operands come from cumath.distributed.allocate_symmetric_memory")
    if distribution is not None and not isinstance(distribution, (Slab, Box, list, tuple)):
        raise TypeError(f"allocate_operand: distribution must be a Slab or Boxes, got {distribution!r}")
    dtype = np.dtype(input_dtype if input_dtype is not None else np.complex128)
    if hasattr(dtype, "type") and name == "torch" and not isinstance(input_dtype, (str, np.dtype, type)):
        dtype = np.dtype(str(input_dtype).replace("torch.", ""))
    shape = tuple(int(s) for s in shape)
    fft_type = (fft_type or ("C2C" if dtype.kind == "c" else "R2C")).upper()
    count = math.prod(shape)
    if fft_type in ("R2C", "C2R") and shape:
        last = shape[-1]
        other = math.prod(shape[:-1])
        if fft_type == "R2C":  # real n -> complex n//2+1: two reals per complex element
            count = max(count, other * 2 * (last // 2 + 1))
        else:  # complex m -> real up to 2m-1: half a complex element per real
            count = max(count, -(-other * (2 * last - 1) // 2))
    if gpu:  # symmetric memory on the NVSHMEM heap, the largest request on every rank (collective)
        from .._symmetric import allocate_symmetric_memory

        buffer = allocate_symmetric_memory((count,), name, dtype=dtype, make_symmetric=True)
        return buffer[:math.prod(shape)].reshape(shape)
    buffer = np.empty(count, dtype=dtype)
    return wrap_result(buffer[:math.prod(shape)].reshape(shape), name)
