"""Explicit batches of the dense direct solver: ``DirectSolver([a0, a1, ...], [b0, b1, ...])``.

Each system keeps a plan of its own (sizes, layouts and even dtypes may differ), all on one placement; on the
GPU they share one cuSOLVER handle (the caller's ``options.handle``, else one the batch creates and frees).
Every method runs the members in order and returns lists; a failed factorization names the member
(``a[3]``) and leaves the batch unfactorized.
"""

from __future__ import annotations

import dataclasses

from ..._core.lifecycle import requires, requires_alive
from ..._core.options import check_options
from ._backends.cusolver import SolverHandle
from ._options import DirectSolverOptions
from ._planner import DirectSolver, is_sequence

__all__ = ["DirectSolverBatch"]


def _as_list(x, name: str) -> list:
    if not is_sequence(x):
        raise TypeError(f"{name} must be a list or tuple of arrays when the other operand is one (explicit "
                        f"batching); got {type(x).__name__}")
    return list(x)


class DirectSolverBatch(DirectSolver, explicit_batch=True):
    """An explicit batch of systems ``a[i] @ x[i] = b[i]`` (see the module's docstring); built by DirectSolver
    for sequences of operands."""

    _handle = None

    def __init__(self, a, b, options=None, execution=None, stream=None):
        opts = check_options(options, DirectSolverOptions, "direct solver options")
        self._options = opts
        self._log = opts.logger
        la, lb = _as_list(a, "a"), _as_list(b, "b")
        if len(la) != len(lb):
            raise ValueError(f"an explicit batch needs as many right-hand sides as matrices; got {len(la)} a and "
                             f"{len(lb)} b")
        if not la:
            raise ValueError("an explicit batch needs at least one system; got empty lists")
        self._members = []
        try:
            for i, (ai, bi) in enumerate(zip(la, lb)):
                member = DirectSolver(ai, bi, options=opts, execution=execution, stream=stream)
                member._problem = i
                self._members.append(member)
            first = self._members[0]
            for i, m in enumerate(self._members[1:], 1):
                if (m._place.package, m._place.device, m._on_gpu) != (first._place.package, first._place.device,
                                                                      first._on_gpu):
                    raise ValueError(f"the systems of an explicit batch must live in one package on one device, and "
                                     f"run in one place; system {i} differs from system 0")
        except BaseException:
            self._free_members()
            raise
        self._on_gpu = first._on_gpu
        self._host_only = first._host_only

    @property
    def _released(self) -> bool:
        return any(m._released for m in self._members)

    @_released.setter
    def _released(self, value) -> None:  # the base class's initial value; the members keep their own
        pass

    # ------------------------------------------------------------------------------------------ planning
    @requires_alive
    def plan(self, *, stream=None):
        """Plan every system (on the GPU sharing one cuSOLVER handle). Planning twice does nothing."""
        if self._planned:
            return
        if self._on_gpu and self._options.handle is None and self._handle is None:
            self._handle = SolverHandle(self._members[0]._device, self._members[0]._stream)
            shared = dataclasses.replace(self._options, handle=self._handle.value)
            for m in self._members:
                m._options = shared
        for m in self._members:
            m.plan(stream=stream)
        self._planned = True

    # ----------------------------------------------------------------------------------------- execution
    @requires("planned", "operands")
    def factorize(self, *, stream=None) -> None:
        """Factorize every system, in order (the first failure raises, naming the system)."""
        self._factorized = False
        for m in self._members:
            m.factorize(stream=stream)
        self._factorized = True

    @requires("planned", "operands", "factorized")
    def solve(self, *, stream=None) -> list:
        """The solutions, one per system."""
        return [m.solve(stream=stream) for m in self._members]

    @requires("planned", "operands")
    def execute(self, *, stream=None) -> list:
        """factorize() and solve() of every system: the solutions."""
        self._factorized = False
        out = [m.execute(stream=stream) for m in self._members]
        self._factorized = True
        return out

    # ------------------------------------------------------------------------------------------ operands
    @requires_alive
    def reset_operands(self, a=None, b=None, *, stream=None):
        """New operands for every system (lists as long as the batch; None keeps the current ones)."""
        self._reset_members(a, b, stream, "reset_operands")

    @requires_alive
    def reset_operands_unchecked(self, a=None, b=None, *, stream=None):
        self._reset_members(a, b, stream, "reset_operands_unchecked")

    def _reset_members(self, a, b, stream, method: str) -> None:
        count = len(self._members)
        lists = []
        for name, x in (("a", a), ("b", b)):
            if x is None:
                lists.append([None] * count)
                continue
            x = _as_list(x, name)
            if len(x) != count:
                raise ValueError(f"the batch has {count} systems but {len(x)} new {name} were given")
            lists.append(x)
        if self._released and (a is None or b is None):
            raise ValueError("after release_operands(), every operand must be given again; missing "
                             + ", ".join(n for n, x in (("a", a), ("b", b)) if x is None))
        for m, ai, bi in zip(self._members, *lists):
            getattr(m, method)(a=ai, b=bi, stream=stream)
        if a is not None:
            self._factorized = False

    def release_operands(self) -> None:
        """Drop the references to every system's operands."""
        if self._freed:
            self._not_ready("release_operands", ())
        for m in self._members:
            m.release_operands()
        self._factorized = False

    def _bind(self, ops, *params) -> None:  # pragma: no cover - explicit batches are not cached
        raise TypeError("explicit batches are planned per call")

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for m in self._members)

    @property
    def geometry(self):
        return [m.geometry for m in self._members]

    def _free_members(self) -> None:
        members, self._members = getattr(self, "_members", []), []
        for m in members:
            m.free()

    def _release(self) -> None:
        self._factorized = False
        self._free_members()
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.free()
