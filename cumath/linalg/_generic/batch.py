"""Explicit batches: sequences of problems, each a planned ``Matmul`` of its own (``MatmulBatch``); on the GPU one
cuBLAS handle for every member, and the members' general products in one grouped launch.

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
from ..._core.lifecycle import requires_alive
from ..._core.options import check_options
from ...memory import default_allocator
from .._backends.cublas import CublasHandle, GroupedGemm
from .executors import HostToDeviceExecutor
from .options import MatmulOptions
from .planner import Matmul, is_sequence

__all__ = ["MatmulBatch", "BatchExecutor", "SerialExecutor", "writes_conflict"]

logger = logging.getLogger(__name__)
_matmul_logger = logging.getLogger("cumath.linalg")  # where a Matmul logs unless its options name a logger


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


class SerialExecutor:
    """The members' executors (on CPU engines) one after the other, in order; returns the list of their
    results. The members' plans belong to their Matmul objects."""

    nbytes = 0

    def __init__(self, executors):
        self.executors = executors

    def execute(self, opses, stream):
        return [ex.execute(ops, stream) for ex, ops in zip(self.executors, opses)]

    def scalars_changed(self) -> None:
        pass

    def free(self) -> None:
        pass


class BatchExecutor:
    """Runs the members' executors (DeviceExecutor or HostToDeviceExecutor, all on one ``CublasHandle``, which
    this executor owns) as one explicit batch; returns the list of their results."""

    def __init__(self, executors, handle, allocator, stream, log=logger):
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
        """Free the grouped launch's pointer arrays and the shared handle (the members' plans are freed first,
        by their owner)."""
        if self.grouped is not None:
            self.grouped.free()
            self.grouped = None
        self.handle.free()


def _per_problem(value, n: int, what: str) -> list:
    if is_sequence(value):
        if len(value) != n:
            raise ValueError(f"{what} has {len(value)} entries for {n} problems")
        return list(value)
    return [value] * n


class MatmulBatch(Matmul, explicit_batch=True):
    """An explicit batch: ``Matmul(list_a, list_b, list_c, ...)``. Each problem is a Matmul of its own (shapes,
    dtypes, layouts and qualifiers may differ between problems); ``alpha``, ``beta`` and ``qualifiers`` are one
    value for all or a sequence with one per problem. ``execute()`` returns the list of results. On the GPU the
    problems share one cuBLAS handle and run through one ``BatchExecutor``; on the CPU one after the other.

    Its states are its problems' (planned, operands released, freed together), and so are its messages.
    """

    def __init__(self, a, b, /, c=None, *, alpha=None, beta=None, qualifiers=None, options=None, execution=None,
                 stream=None):
        opts = check_options(options, MatmulOptions, "matmul options")
        self._options = opts
        self._log = opts.logger or _matmul_logger
        seqs = {"a": a, "b": b}
        if c is not None:
            seqs["c"] = c
        for name, value in seqs.items():
            if not is_sequence(value):
                raise TypeError(f"explicit batching takes sequences for a, b (and c); {name} is a "
                                f"{type(value).__name__}")
        n = len(a)
        for name, value in seqs.items():
            if len(value) != n:
                raise ValueError(f"a has {n} operands but {name} has {len(value)}: explicit batching needs one "
                                 f"{name} per a")
        if n == 0:
            raise ValueError("explicit batching needs at least one problem; a and b are empty sequences")
        alphas, betas = _per_problem(alpha, n, "alpha"), _per_problem(beta, n, "beta")
        if qualifiers is None or (isinstance(qualifiers, np.ndarray) and qualifiers.dtype.names):
            quals = [qualifiers] * n
        else:
            quals = _per_problem(qualifiers, n, "qualifiers")
        problems = []
        try:
            for i in range(n):
                problems.append(Matmul(a[i], b[i], None if c is None else c[i], alpha=alphas[i], beta=betas[i],
                                       qualifiers=quals[i], options=opts, execution=execution, stream=stream))
            first = problems[0]._ops["a"]
            for i, p in enumerate(problems[1:], 1):
                other = p._ops["a"]
                if other.package != first.package or other.device_id != first.device_id:
                    raise ValueError(f"problem {i} is a {other.package} array on "
                                     f"{'the host' if other.device_id is None else f'GPU {other.device_id}'}; all "
                                     f"problems of an explicit batch must share the package and device of "
                                     f"problem 0")
        except BaseException:
            for p in problems:
                p.free()
            raise
        self._problems = problems
        self._init_placement(first, execution, stream, opts.blocking)

    def _not_ready(self, what: str, states=("planned", "operands")):
        self._problems[0]._not_ready(what, states)

    @property
    def _has_operands(self) -> bool:
        return not any(p._released for p in self._problems)

    # ------------------------------------------------------------------------------------------ planning
    def _make_executor(self):
        """Plan every problem; on the GPU on one shared cuBLAS handle, run through one BatchExecutor."""
        problems = self._problems
        stream = self._stream if self._explicit_stream else None
        handle = None
        try:
            if self._on_gpu:
                handle = CublasHandle(self._device, self._stream)
                if self._log.isEnabledFor(logging.INFO):
                    self._log.info("cuBLAS %s on GPU %d (one handle for the %d problems of the explicit batch)",
                                   handle.version_string(), self._device, len(problems))
            for p in problems:
                p._plan_sharing(handle, stream)
            executors = [p._executor for p in problems]
            if handle is None:
                return SerialExecutor(executors)
            allocator = self._options.allocator or default_allocator(self._place.package, self._device)
            return BatchExecutor(executors, handle, allocator, self._stream, self._log)
        except BaseException:
            for p in problems:
                p._drop_plan()
            if handle is not None:
                handle.free()
            raise

    def _planned_with(self, executor) -> None:
        pass

    # ----------------------------------------------------------------------------------------- execution
    def execute(self, *, stream=None):
        """Compute every problem with its current operands; returns the list of results."""
        ex = self._executor
        if ex is None or not self._has_operands:
            self._not_ready("execute")
        stream, explicit = self._stream_arg(stream)
        return self._ordered(stream, explicit, ex.execute, [p._ops for p in self._problems], stream)

    # ------------------------------------------------------------------------------------------ operands
    @requires_alive
    def reset_operands(self, *, a=None, b=None, c=None, alpha=None, beta=None, stream=None):
        """Like Matmul.reset_operands(), with a sequence per operand (one entry per problem); alpha and beta
        are one value for all problems or a sequence."""
        self._reset_problems(a, b, c, alpha, beta, stream, checked=True)

    @requires_alive
    def reset_operands_unchecked(self, *, a=None, b=None, c=None, alpha=None, beta=None, stream=None):
        """Like Matmul.reset_operands_unchecked(), with a sequence per operand."""
        self._reset_problems(a, b, c, alpha, beta, stream, checked=False)

    def _reset_problems(self, a, b, c, alpha, beta, stream, checked):
        problems = self._problems
        n = len(problems)
        cols = {}
        for name, value in (("a", a), ("b", b), ("c", c), ("alpha", alpha), ("beta", beta)):
            if value is None:
                cols[name] = [None] * n
            elif is_sequence(value) and len(value) == n:
                cols[name] = list(value)
            elif name in ("alpha", "beta") and not is_sequence(value):
                cols[name] = [value] * n
            else:
                raise ValueError(f"{name} must be a sequence of {n} entries (one per problem of the explicit batch)")
        try:
            for i, p in enumerate(problems):
                reset = p.reset_operands if checked else p.reset_operands_unchecked
                reset(a=cols["a"][i], b=cols["b"][i], c=cols["c"][i], alpha=cols["alpha"][i], beta=cols["beta"][i],
                      stream=stream)
        finally:
            if self._executor is not None and (alpha is not None or beta is not None):
                self._executor.scalars_changed()
        if stream is not None:
            self._use_stream(stream)

    @requires_alive
    def release_operands(self) -> None:
        """Drop every problem's operands; reset_operands() with all of them before the next execute()."""
        for p in self._problems:
            p.release_operands()

    def _release(self) -> None:
        for p in self._problems:  # first: their engines use the handle the batch executor owns
            p.free()
        self._drop_plan()

    @property
    def nbytes(self) -> int:
        ex = self._executor
        return sum(p.nbytes for p in self._problems) + (0 if ex is None else ex.nbytes)

    @property
    def layout(self):
        """None: each problem of an explicit batch has a layout of its own."""
        return None
