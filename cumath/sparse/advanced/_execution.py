"""Execution spaces of the sparse direct solver: the core ones plus cuDSS's hybrid memory and hybrid execution.

- ``ExecutionCPU`` (``cumath.ExecutionCPU``, or 'cpu'): a CPU engine (MKL PARDISO or SuperLU).
- :class:`ExecutionCUDA` (or 'cuda'): cuDSS on a GPU; ``hybrid_memory_mode_options`` lets cuDSS keep the factors
  in host memory (:class:`HybridMemoryModeOptions`). ``cumath.ExecutionCUDA`` is accepted too.
- :class:`ExecutionHybrid` (or 'hybrid'): cuDSS's hybrid execution, which reads host operands where they are
  and runs part of the work on ``num_threads`` CPU threads.

``resolve_execution`` turns what the caller gave into the core execution that places the work
(``_core.placement``) and a :class:`SparseExecution` with what only cuDSS needs.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

from ..._core.execution import ExecutionCPU
from ..._core.options import check_options
from ..._core.execution import ExecutionCUDA as CoreExecutionCUDA

__all__ = ["ExecutionCUDA", "ExecutionHybrid", "HybridMemoryModeOptions", "SparseExecution", "resolve_execution",
           "memory_limit_bytes"]

_LIMIT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%|[kKmMgGtT]?(?:i?[bB])?)\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _check_limit(value) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"hybrid_device_memory_limit must be bytes (an int), a string such as '4GiB' or '50%', or "
                        f"None; not {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"hybrid_device_memory_limit must be positive, not {value}")
        return
    m = _LIMIT.match(value)
    if m is None or float(m.group(1)) <= 0 or (m.group(2) == "%" and float(m.group(1)) > 100):
        raise ValueError(f"hybrid_device_memory_limit={value!r} is not a memory size; use bytes (an int), a size "
                         f"with a unit such as '512MiB', '4G', '2GiB', or a percentage of the GPU's memory ('50%')")


def memory_limit_bytes(value, total_bytes: int) -> int:
    """``value`` (int bytes, '<n>[K|M|G|T][i][B]' or '<p>%') in bytes; percentages of ``total_bytes``."""
    if isinstance(value, int):
        return value
    m = _LIMIT.match(value)
    number, unit = float(m.group(1)), m.group(2)
    if unit == "%":
        return int(total_bytes * number / 100)
    return int(number * _UNITS[unit[:1].lower()])


@dataclasses.dataclass(frozen=True)
class HybridMemoryModeOptions:
    """Hybrid (host and device) memory for cuDSS's factors.

    Attributes:
        hybrid_memory_mode: keep the factors in host memory and only part of them on the GPU at a time.
        hybrid_device_memory_limit: the device memory cuDSS may use then: bytes, a size such as '8GiB', or a
            percentage of the GPU's memory such as '50%'; None lets cuDSS decide.
        register_cuda_memory: register the host memory with ``cudaHostRegister`` (faster transfers).
    """

    hybrid_memory_mode: bool = False
    hybrid_device_memory_limit: int | str | None = None
    register_cuda_memory: bool = True

    def __post_init__(self):
        for name in ("hybrid_memory_mode", "register_cuda_memory"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, not {getattr(self, name)!r}")
        _check_limit(self.hybrid_device_memory_limit)


def _hybrid_options(value) -> HybridMemoryModeOptions:
    return check_options(value, HybridMemoryModeOptions, "hybrid memory mode options")


def _device(device_id):
    if device_id is not None and (isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0):
        raise ValueError(f"device_id must be a non-negative int or None, not {device_id!r}")


@dataclasses.dataclass(frozen=True)
class ExecutionCUDA:
    """Solve on a GPU with cuDSS. ``device_id`` defaults to the operands' GPU (GPU 0 for host operands);
    ``hybrid_memory_mode_options``: :class:`HybridMemoryModeOptions` or a dict of its fields."""

    device_id: int | None = None
    hybrid_memory_mode_options: HybridMemoryModeOptions | None = None
    name: Literal["cuda"] = "cuda"

    def __post_init__(self):
        _device(self.device_id)
        object.__setattr__(self, "hybrid_memory_mode_options", _hybrid_options(self.hybrid_memory_mode_options))


@dataclasses.dataclass(frozen=True)
class ExecutionHybrid:
    """cuDSS's hybrid execution: host operands are read where they are, part of the work runs on the CPU.
    ``num_threads`` defaults to the cores the process may run on. One system and one right-hand side only."""

    device_id: int | None = None
    num_threads: int | None = None
    name: Literal["hybrid"] = "hybrid"

    def __post_init__(self):
        _device(self.device_id)
        if self.num_threads is not None and (isinstance(self.num_threads, bool) or
                                             not isinstance(self.num_threads, int) or self.num_threads < 1):
            raise ValueError(f"num_threads must be a positive int or None, not {self.num_threads!r}")


@dataclasses.dataclass(frozen=True)
class SparseExecution:
    """What the cuDSS engine needs beyond the placement: the kind ('cpu', 'cuda', 'hybrid'), the hybrid memory
    options, the hybrid execution's thread count."""

    kind: str
    hybrid_memory: HybridMemoryModeOptions = HybridMemoryModeOptions()
    num_threads: int | None = None


_ALLOWED = ("'cpu', 'cuda', 'hybrid', ExecutionCPU(...), ExecutionCUDA(...), ExecutionHybrid(...), a dict with a "
            "'name' key, or None")
_CLASSES = {"cpu": ExecutionCPU, "cuda": ExecutionCUDA, "hybrid": ExecutionHybrid}


def resolve_execution(execution):
    """``(core execution or None, SparseExecution or None)`` for the caller's ``execution``; None (the operands'
    space) leaves both to the placement."""
    if execution is None:
        return None, None
    if isinstance(execution, str):
        cls = _CLASSES.get(execution.lower())
        if cls is None:
            raise ValueError(f"execution={execution!r} is not supported; pass {_ALLOWED}")
        execution = cls()
    elif isinstance(execution, dict):
        fields = dict(execution)
        name = fields.pop("name", None)
        cls = _CLASSES.get(name.lower()) if isinstance(name, str) else None
        if cls is None:
            raise ValueError(f"an execution dict needs 'name': 'cpu', 'cuda' or 'hybrid', got {name!r}")
        execution = cls(**fields)
    if isinstance(execution, ExecutionCPU):
        return execution, SparseExecution("cpu")
    if isinstance(execution, CoreExecutionCUDA):
        return execution, SparseExecution("cuda")
    if isinstance(execution, ExecutionCUDA):
        return CoreExecutionCUDA(device_id=execution.device_id), SparseExecution(
            "cuda", execution.hybrid_memory_mode_options)
    if isinstance(execution, ExecutionHybrid):
        return CoreExecutionCUDA(device_id=execution.device_id), SparseExecution(
            "hybrid", num_threads=execution.num_threads)
    raise TypeError(f"execution must be {_ALLOWED}; got {type(execution).__name__}")
