"""Operands of distributed operations: this rank's piece, as a NumPy array (PyTorch CPU tensors are viewed as
one, without a copy), and results given back in the operand's package. GPU arrays go to the GPU engines."""

from __future__ import annotations

import math

import numpy as np

from ._group import ProcessGroup
from ._redistribute import all_indices, check_cover, resolve
from ._distributions import BlockCyclic, Box, Distribution, Slab

__all__ = ["host_view", "wrap_result", "gather_layout", "package_of"]


def package_of(x) -> str:
    mod = type(x).__module__.split(".")[0]
    return {"numpy": "numpy", "torch": "torch", "cupy": "cupy"}.get(mod, mod)


def host_view(x, name: str) -> tuple[np.ndarray, str]:
    """(NumPy view of ``x``, its package) for a NumPy array or a PyTorch CPU tensor; TypeError otherwise."""
    package = package_of(x)
    if package == "numpy" and isinstance(x, np.ndarray):
        return x, package
    if package == "torch":
        if x.device.type != "cpu":
            raise TypeError(f"{name}: a {x.device.type} tensor needs the GPU engines (initialize with a device_id)")
        return x.detach().numpy(), package
    if package == "cupy":
        raise TypeError(f"{name}: CuPy arrays need the GPU engines (initialize with a device_id)")
    raise TypeError(f"{name} must be a NumPy array or a PyTorch CPU tensor, got {type(x).__name__}")


def wrap_result(arr: np.ndarray, package: str):
    if package == "torch":
        import torch

        return torch.from_numpy(arr)
    return arr


def gather_layout(group: ProcessGroup, local_shape, dist: Distribution, what: str, global_shape=None):
    """(global shape, per-rank index sets) of ``dist`` as the ranks hold it; checks shapes and coverage.

    Collective: every rank calls it at the same point (the caller agreed on the call first).
    """
    local_shape = tuple(int(s) for s in local_shape)
    if isinstance(dist, Slab):
        shapes = group.allgather(local_shape)
        shape, _, indices = resolve(dist, shapes, what)
        return shape, indices
    if isinstance(dist, Box):
        gathered = group.allgather((dist, local_shape))  # first, so that every rank sees every rank's error
        for r, (box, shape) in enumerate(gathered):
            if box.shape != shape:
                raise ValueError(f"the {what} operand on rank {r} has shape {shape} but its Box "
                                 f"{box.lower}-{box.upper} has shape {box.shape}")
        boxes = [b for b, _ in gathered]
        shape = tuple(max(b.upper[a] for b in boxes) for a in range(len(local_shape)))
        if global_shape is not None and tuple(global_shape) != shape:
            raise ValueError(f"the {what} boxes span {shape}, not the global shape {tuple(global_shape)}")
        indices = all_indices(dist, shape, group.nranks, boxes)
        check_cover(indices, shape, what)
        return shape, indices
    if isinstance(dist, BlockCyclic):
        shapes = group.allgather(local_shape)
        grid = dist.process_grid
        grid.check(group.nranks)
        if global_shape is None:
            global_shape = tuple(
                sum(shapes[grid.rank_at(tuple(i if a == ax else 0 for a in range(len(grid.shape))))][ax]
                    for i in range(grid.shape[ax])) for ax in range(len(grid.shape)))
        global_shape = tuple(int(s) for s in global_shape)
        indices = all_indices(dist, global_shape, group.nranks)
        for r, (got, ix) in enumerate(zip(shapes, indices)):
            want = tuple(len(i) for i in ix)
            if tuple(got) != want:
                raise ValueError(f"the {what} operand on rank {r} has shape {tuple(got)}, but {type(dist).__name__} "
                                 f"of the global shape {global_shape} gives it {want}; the global shapes of the "
                                 "ranks do not match")
        return global_shape, indices
    raise TypeError(f"the {what} distribution must be a Slab, Box, BlockCyclic or BlockNonCyclic, got "
                    f"{type(dist).__name__}")


def target_indices(group: ProcessGroup, dist: Distribution, global_shape, what: str) -> list:
    """Per-rank index sets of a distribution a result is to have (Box: every rank gives its own)."""
    if isinstance(dist, Box):
        boxes = group.allgather(dist)
        indices = all_indices(dist, global_shape, group.nranks, boxes)
        check_cover(indices, global_shape, what)
        return indices
    indices = all_indices(dist, global_shape, group.nranks)
    if not isinstance(dist, Slab):
        check_cover(indices, global_shape, what)
    return indices


def nbytes(shape, dtype) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize
