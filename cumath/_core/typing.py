"""The type aliases of cumath's public signatures (read by type checkers; nothing here runs on a hot path).

Public modules import these under ``TYPE_CHECKING`` only (their annotations are strings, ``from __future__ import
annotations``), so annotating costs ``import cumath`` nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from .execution import ExecutionCPU, ExecutionCUDA

__all__ = ["AnyTensor", "StreamLike", "ExecutionLike", "OptionsLike", "DTypeLike", "ComputeCapabilityLike"]

#: An operand or a result: a NumPy, CuPy, PyTorch or JAX array (any producer of DLPack, ``__array_interface__``
#: or ``__cuda_array_interface__`` is accepted as an operand). Results are of the operand's package.
AnyTensor = Any

#: A CUDA stream: a ``cupy.cuda.Stream``, a ``torch.cuda.Stream``, a ``cuda.core`` Stream, or a raw handle (int).
StreamLike = Any

#: Where an operation runs: an ``ExecutionCPU`` / ``ExecutionCUDA``, a dict of their fields (``{"name": "cuda",
#: "device_id": 1}``), or ``"cpu"`` / ``"cuda"`` (a string is checked when the operation is made).
ExecutionLike = Union["ExecutionCPU", "ExecutionCUDA", Mapping[str, Any], str]

#: An options dataclass of the operation or a dict of its fields.
OptionsLike = Union[Any, Mapping[str, Any]]

#: A dtype: a NumPy dtype, a type (``numpy.float32``) or its name (``"float32"``).
DTypeLike = Any

#: A compute capability: ``"sm_90"``, ``"9.0"``, ``(9, 0)`` or ``90``.
ComputeCapabilityLike = Union[str, tuple[int, int], int]
