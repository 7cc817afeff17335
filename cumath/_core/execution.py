"""Execution spaces: where an operation runs. Inferred from the operands, overridable by the caller."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

__all__ = ["ExecutionCPU", "ExecutionCUDA", "check_execution", "merge_device_option", "available_cpus"]


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


_ALLOWED = ("'cpu', 'cuda' (in any case), ExecutionCPU(...), ExecutionCUDA(...), a dict of their fields (with "
            "or without 'name'), or None")
_NAMES = {"cpu": ExecutionCPU, "cuda": ExecutionCUDA}


def _execution_class(name, what):
    cls = _NAMES.get(name.lower()) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"{what}={name!r} is not supported; pass {_ALLOWED}")
    return cls


def _from_dict(fields, device_id):
    """An execution dict as nvmath-python reads it: 'name' in any case, or without 'name' the CPU when it
    names num_threads, the GPU when it names device_id, else where the operand is."""
    fields = dict(fields)
    name = fields.pop("name", None)
    if name is not None:
        cls = _execution_class(name, "execution['name']")
    elif "num_threads" in fields and "device_id" in fields:
        raise ValueError("an execution dict names both num_threads (CPU) and device_id (GPU); give one, or 'name'")
    elif "num_threads" in fields:
        cls = ExecutionCPU
    elif "device_id" in fields:
        cls = ExecutionCUDA
    else:
        cls = ExecutionCPU if device_id is None else ExecutionCUDA
    allowed = {"num_threads"} if cls is ExecutionCPU else {"device_id"}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise TypeError(f"unknown {cls.__name__} fields {unknown}; the allowed names are {sorted(allowed | {'name'})}")
    return cls(**fields)


def merge_device_option(execution, device_id):
    """``execution`` given together with an options' ``device_id`` (nvmath-python's older way of naming the GPU):
    the GPU when execution is None; ValueError when execution names the CPU or another GPU."""
    if device_id is None:
        return execution
    if execution is None:
        return ExecutionCUDA(device_id=device_id)
    if isinstance(execution, str):
        named = _execution_class(execution, "execution")
        other = None
    elif isinstance(execution, dict):
        named = _from_dict(execution, device_id)
        other = getattr(named, "device_id", None)
        named = type(named)
    else:
        named, other = type(execution), getattr(execution, "device_id", None)
    if named is ExecutionCPU:
        raise ValueError(f"options name device_id={device_id} (a GPU) but execution asks for the CPU; "
                         f"drop device_id from the options or pass execution=ExecutionCUDA(device_id={device_id})")
    if other is not None and other != device_id:
        raise ValueError(f"options name device_id={device_id} but execution asks for GPU {other}; name the GPU once")
    return execution if other is not None else ExecutionCUDA(device_id=device_id)


def check_execution(execution, device_id):
    """Resolve ``execution`` against an operand living on ``device_id`` (None for host memory).

    Returns a fully specified ExecutionCPU (num_threads set) or ExecutionCUDA (device_id set).
    """
    if execution is None:
        return ExecutionCPU(num_threads=available_cpus()) if device_id is None else ExecutionCUDA(device_id=device_id)
    if isinstance(execution, str):
        execution = _execution_class(execution, "execution")()
    elif isinstance(execution, dict):
        execution = _from_dict(execution, device_id)
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
