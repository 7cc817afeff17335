"""Where an operation runs and on which stream: decided once, from the operands and the caller's arguments."""

from __future__ import annotations

from dataclasses import dataclass

from .execution import check_execution, merge_device_option, names_threads
from .streams import default_stream, stream_handle

__all__ = ["Placement", "place", "SYNC_PACKAGES"]

# Packages whose queued work cumath cannot order with (JAX does not expose its streams): operations on their
# GPU operands always wait for their work before returning.
SYNC_PACKAGES = frozenset({"jax"})


@dataclass(slots=True)
class Placement:
    """The package and device of the operands, the execution space, the stream and the blocking rule.

    ``device`` is the GPU the work (or the operands) live on, None for host-only work; ``stream`` is None for
    host-only work; ``explicit_stream`` says the caller named the stream (work then runs inside the package's
    stream context); ``blocking`` says execute() waits for the result (always for host operands);
    ``user_threads`` says the caller named a CPU thread count (else cumath chooses per problem size).
    """

    package: str
    operand_device: int | None
    execution: object
    on_gpu: bool
    device: int | None
    stream: int | None
    explicit_stream: bool
    blocking: bool
    host_only: bool
    user_threads: bool


def place(op, execution=None, stream=None, blocking=None, *, device_id=None) -> Placement:
    """The placement of an operation whose first operand is ``op`` (an Operand).

    ``execution``: as the caller gave it ('cpu', 'cuda', an Execution object, a dict, None: where the operand
    is). ``device_id``: a GPU named elsewhere (an option) used when ``execution`` is None. ``blocking``: the
    option's value (True, or 'auto'/None: wait only when the operands are on the host).
    """
    execution = merge_device_option(execution, device_id)
    resolved = check_execution(execution, op.device_id)
    on_gpu = resolved.name == "cuda"
    if on_gpu:
        from .cuda import require_device

        require_device(resolved.device_id)
    if on_gpu or op.device_id is not None:
        device = resolved.device_id if on_gpu else op.device_id
        handle = stream_handle(stream) if stream is not None else default_stream(op.package, device)
    else:
        device = handle = None
    blocks = blocking is True or op.device_id is None or op.package in SYNC_PACKAGES
    return Placement(op.package, op.device_id, resolved, on_gpu, device, handle, stream is not None, blocks,
                     not on_gpu and op.device_id is None,
                     names_threads(execution))
