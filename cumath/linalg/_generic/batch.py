"""Explicit batches (sequences of problems) on the GPU: one cuBLAS handle for every member, and the members'
general products in one grouped launch.

Each member keeps its own plan (layout, copies, result, executor), so shapes, dtypes, layouts and qualifiers
may differ between members. At execution the members are prepared (copies, results, pointers), members whose
steps are all general products (gemm, strided-batched gemm) contribute their products to one ``GroupedGemm``
(cublas<t>gemmGroupedBatched for real dtypes, cublas<t>gemmBatched per group for complex ones), the others
(symm, hemm, trmm, dgmm, K = 0) run their own steps on the shared handle, and then the members finish (copies
back, results to the host). Members that write into a c which another member reads or writes run one after
the other instead, in order, as a loop of single products would.
"""

from __future__ import annotations

import logging

import numpy as np

from ..._core import cuda
from .executors import HostToDeviceExecutor

__all__ = ["BatchExecutor"]

logger = logging.getLogger(__name__)


def _span(op):
    """[lo, hi) byte addresses an operand touches, or None for an empty one."""
    lo = hi = 0
    for n, s in zip(op.shape, op.strides):
        if n == 0:
            return None
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    item = op.itemsize
    return op.ptr + lo * item, op.ptr + (hi + 1) * item


def writes_conflict(opses, writers) -> bool:
    """Whether a c written by a member (``writers[i]``) overlaps a c written by another member or an operand
    read by any member (a member's own a or b overlapping its own c also counts: cautious, never wrong)."""
    writes, reads = [], []
    for ops, w in zip(opses, writers):
        for name in ("a", "b", "c"):
            op = ops.get(name)
            if op is None:
                continue
            span = _span(op)
            if span is not None:
                (writes if (w and name == "c") else reads).append(span)
    if not writes:
        return False
    w = np.array(sorted(writes), dtype=np.int64).reshape(-1, 2)
    if len(w) > 1 and np.any(w[1:, 0] < w[:-1, 1]):
        return True
    if not reads:
        return False
    r = np.array(sorted(reads), dtype=np.int64).reshape(-1, 2)
    reach = np.maximum.accumulate(r[:, 1])  # the highest end among reads starting at or before each one
    idx = np.searchsorted(r[:, 0], w[:, 1], side="left")  # reads starting before each write ends
    hit = idx > 0
    return bool(np.any(reach[np.maximum(idx - 1, 0)][hit] > w[hit, 0]))


class BatchExecutor:
    """Runs the members' executors (DeviceExecutor or HostToDeviceExecutor, all on one ``CublasHandle``) as one
    explicit batch; returns the list of their results."""

    def __init__(self, executors, handle, allocator, stream, log=logger):
        from .._backends.cublas import GroupedGemm

        self.executors = executors
        self.handle = handle
        self.staged = isinstance(executors[0], HostToDeviceExecutor)
        per = [ex.engine.gemm_problems(ex.layout.steps) for ex in executors]
        self.in_group = [False] * len(executors)
        self.grouped = None
        if sum(len(p) for p in per if p) >= 2:
            problems, row = [], 0
            for i, (ex, probs) in enumerate(zip(executors, per)):
                if probs:
                    self.in_group[i] = True
                    problems += [(row, ex.engine, key, slots) for key, slots in probs]
                    row += 1
            self.grouped = GroupedGemm(handle, problems, allocator, stream, log)
        self.writers = [ex.layout.d_is_c or ex.layout.copy_back for ex in executors]
        self.writes = any(self.writers)
        self._conflict_key = None
        self._conflict = False
        self.nbytes = 0 if self.grouped is None else self.grouped.nbytes
        if log.isEnabledFor(logging.INFO):
            grouped = sum(self.in_group)
            log.info("explicit batch of %d problem%s on GPU %d, one cuBLAS handle: %d in one grouped launch, %d on "
                     "their own", len(executors), "" if len(executors) == 1 else "s", handle.device_id, grouped,
                     len(executors) - grouped)

    def scalars_changed(self) -> None:
        if self.grouped is not None:
            self.grouped.invalidate()

    def _conflicts(self, opses) -> bool:
        key = tuple(0 if op is None else op.ptr for ops in opses for op in (ops["a"], ops["b"], ops.get("c")))
        if key != self._conflict_key:
            self._conflict = writes_conflict(opses, self.writers)
            self._conflict_key = key
            if self._conflict:
                logger.info("explicit batch: a c written in place overlaps another problem's operands; the "
                            "problems run one after the other")
        return self._conflict

    def execute(self, opses, stream):
        executors = self.executors
        if self.writes and self._conflicts(opses):
            return [ex.execute(ops, stream) for ex, ops in zip(executors, opses)]
        self.handle.set_stream(stream)
        states, triples = [], []
        in_group = self.in_group
        for i, ex in enumerate(executors):
            ptrs, state = ex.prepare(opses[i], stream)
            states.append(state)
            if in_group[i]:
                triples += (ptrs["A"], ptrs["B"], ptrs["D"])
            else:
                for run in ex.runs:
                    run(ptrs)
        if self.grouped is not None:
            self.grouped.launch(triples, stream)
        if self.staged:
            for ex, state in zip(executors, states):
                ex.download(state, stream)
            cuda.synchronize(stream)
        return [ex.finish(ops, state) for ex, ops, state in zip(executors, opses, states)]

    def free(self) -> None:
        if self.grouped is not None:
            self.grouped.free()
            self.grouped = None
