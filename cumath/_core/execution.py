"""Execution spaces: where an operation runs. Inferred from the operands, overridable by the caller."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

__all__ = ["ExecutionCPU", "ExecutionCUDA", "check_execution", "available_cpus"]


def available_cpus() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True, kw_only=True)
class ExecutionCPU:
    """Run on the host. ``num_threads`` defaults to the cores the process may run on."""

    num_threads: int | None = None
    name: Literal["cpu"] = "cpu"

    def __post_init__(self):
        if self.num_threads is not None and (not isinstance(self.num_threads, int) or self.num_threads < 1):
            raise ValueError(f"num_threads must be a positive int or None, not {self.num_threads!r}")


@dataclass(frozen=True, kw_only=True)
class ExecutionCUDA:
    """Run on a CUDA GPU. ``device_id`` defaults to the operand's GPU (or GPU 0 for host operands)."""

    device_id: int | None = None
    name: Literal["cuda"] = "cuda"

    def __post_init__(self):
        if self.device_id is not None and (not isinstance(self.device_id, int) or self.device_id < 0):
            raise ValueError(f"device_id must be a non-negative int or None, not {self.device_id!r}")


_ALLOWED = "'cpu', 'cuda', ExecutionCPU(...), ExecutionCUDA(...), a dict with a 'name' key, or None"


def check_execution(execution, device_id):
    """Resolve ``execution`` against an operand living on ``device_id`` (None for host memory).

    Returns a fully specified ExecutionCPU (num_threads set) or ExecutionCUDA (device_id set).
    """
    if execution is None:
        return ExecutionCPU(num_threads=available_cpus()) if device_id is None else ExecutionCUDA(device_id=device_id)
    if isinstance(execution, str):
        if execution not in ("cpu", "cuda"):
            raise ValueError(f"execution={execution!r} is not supported; pass {_ALLOWED}")
        execution = ExecutionCPU() if execution == "cpu" else ExecutionCUDA()
    elif isinstance(execution, dict):
        fields = dict(execution)
        name = fields.pop("name", None)
        if name not in ("cpu", "cuda"):
            raise ValueError(f"an execution dict needs 'name': 'cpu' or 'cuda', got {name!r}")
        execution = (ExecutionCPU if name == "cpu" else ExecutionCUDA)(**fields)
    elif not isinstance(execution, (ExecutionCPU, ExecutionCUDA)):
        raise TypeError(f"execution must be {_ALLOWED}; got {type(execution).__name__}")
    if isinstance(execution, ExecutionCPU):
        if execution.num_threads is None:
            execution = ExecutionCPU(num_threads=available_cpus())
        return execution
    if execution.device_id is None:
        return ExecutionCUDA(device_id=0 if device_id is None else device_id)
    if device_id is not None and execution.device_id != device_id:
        raise ValueError(
            f"the operand is on GPU {device_id} but execution asks for GPU {execution.device_id}; "
            f"move the operand or leave device_id unset"
        )
    return execution


def names_threads(execution) -> bool:
    """Whether the caller's ``execution`` (before check_execution) names a thread count."""
    if isinstance(execution, dict):
        return execution.get("num_threads") is not None
    return getattr(execution, "num_threads", None) is not None


def execution_key(execution):
    """``execution`` as the caller gave it, hashable (a dict becomes its sorted items), for plan-cache keys."""
    if isinstance(execution, dict):
        items = tuple(sorted(execution.items(), key=lambda kv: str(kv[0])))
        try:
            hash(items)
        except TypeError:
            bad = [k for k, v in items if not _hashable(v)]
            raise TypeError(f"execution options must be single values (names, numbers, None), but "
                            f"{', '.join(map(repr, bad))} is a {type(dict(items)[bad[0]]).__name__}") from None
        return items
    return execution


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True
