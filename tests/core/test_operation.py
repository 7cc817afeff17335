"""The operation skeleton on a stand-in operation: states and their messages, resets, the plan template,
cached_call's miss/hit/disabled paths, and plans of ended threads being freed."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from cumath._core.lifecycle import requires
from cumath._core.operand import wrap_operand
from cumath._core.operation import Operation
from cumath._core.plan_cache import PlanCache, cached_call, plan_cache
from cumath.errors import InvalidStateError


class Executor:
    def __init__(self, fail=False):
        self.freed = 0
        self.nbytes = 8
        self.fail = fail

    def free(self):
        self.freed += 1


class Scale(Operation):
    """y = k * x on the host: the smallest operation written on the skeleton."""

    _NAMES = ("x",)
    _RESET_HINT = "reset_operands(x=...)"
    made = 0

    def __init__(self, x, k=2.0, fail_in_plan=False):
        op = wrap_operand(x, "x")
        self._init_operands({"x": op})
        self._init_placement(op)
        self.k = k
        self.fail_in_plan = fail_in_plan

    def plan(self, *, stream=None):
        return self._plan(stream)

    def _make_executor(self):
        Scale.made += 1
        self.last_executor = Executor()
        return self.last_executor

    def _planned_with(self, executor):
        if self.fail_in_plan:
            raise RuntimeError("planning failed on purpose")

    def execute(self):
        if self._executor is None or self._released:
            self._not_ready("execute")
        return self.k * self._ops["x"].obj

    def _bind(self, ops, k):
        super()._bind(ops)
        self.k = k

    @requires("planned")
    def reset_operands(self, *, x=None):
        self._reset_operands({"x": x})

    @requires("planned")
    def reset_operands_unchecked(self, *, x=None):
        self._reset_operands({"x": x}, checked=False)


def test_states_and_messages():
    x = np.arange(5.0)
    s = Scale(x)
    with pytest.raises(InvalidStateError, match=r"Scale.execute\(\) needs a plan: call plan\(\) first"):
        s.execute()
    with pytest.raises(InvalidStateError, match=r"reset_operands\(\) needs a plan"):
        s.reset_operands(x=x)
    s.plan()
    assert np.array_equal(s.execute(), 2 * x)
    s.release_operands()
    with pytest.raises(InvalidStateError, match=r"released; call reset_operands\(x=...\) before execute\(\)"):
        s.execute()
    with pytest.raises(ValueError, match="missing x"):
        s.reset_operands()
    s.reset_operands(x=x + 1)
    assert np.array_equal(s.execute(), 2 * (x + 1))
    s.free()
    s.free()
    with pytest.raises(InvalidStateError, match=r"after free\(\); create a new object"):
        s.execute()
    with pytest.raises(InvalidStateError, match=r"Scale.reset_operands\(\) was called after free\(\)"):
        s.reset_operands(x=x)


def test_resets_compare_what_keeps_memory_safe():
    x = np.arange(6.0)
    s = Scale(x)
    s.plan()
    with pytest.raises(ValueError, match=r"shape \(7,\) \(planned: \(6,\)\)"):
        s.reset_operands(x=np.arange(7.0))
    with pytest.raises(ValueError, match="dtype float32"):
        s.reset_operands_unchecked(x=np.arange(6.0, dtype=np.float32))
    with pytest.raises(ValueError, match="strides"):
        s.reset_operands_unchecked(x=np.arange(12.0)[::2])
    s.reset_operands_unchecked(x=np.ones(6))
    assert np.array_equal(s.execute(), 2 * np.ones(6))


def test_failed_plan_frees_what_it_made():
    s = Scale(np.ones(3), fail_in_plan=True)
    with pytest.raises(RuntimeError, match="on purpose"):
        s.plan()
    assert s.last_executor.freed == 1 and s._executor is None and not s._planned


def _run(x, k):
    def make():
        op = Scale(x, k)
        op.plan()
        return op

    return cached_call((Scale, x.shape, x.dtype.str), make, {"x": wrap_operand(x)}, k)


def test_cached_call_plans_once_binds_and_unbinds():
    plan_cache.clear()
    Scale.made = 0
    x = np.arange(4.0)
    assert np.array_equal(_run(x, 3.0), 3 * x)
    assert np.array_equal(_run(x + 1, 5.0), 5 * (x + 1))
    assert Scale.made == 1
    (op, _), = [v for k, v in plan_cache._mine().entries.items() if k[0] is Scale]
    assert op._released and op._ops == {"x": None}  # nothing of the call is kept
    plan_cache.enabled = False
    try:
        assert np.array_equal(_run(x, 2.0), 2 * x)
        assert Scale.made == 2
    finally:
        plan_cache.enabled = True
    plan_cache.clear()


def test_plans_of_an_ended_thread_are_freed():
    cache = PlanCache()
    executors = []

    def work():
        op = Scale(np.ones(3))
        op.plan()
        executors.append(op.last_executor)
        cache.put("k", op, op.nbytes)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    del t
    gc.collect()
    assert executors[0].freed == 1
    assert len(cache._all) == 0


def test_clear_all_threads():
    cache = PlanCache()
    done, go = threading.Event(), threading.Event()
    ops = []

    def work():
        op = Scale(np.ones(3))
        op.plan()
        ops.append(op)
        cache.put("k", op, op.nbytes)
        done.set()
        go.wait(10)

    t = threading.Thread(target=work)
    t.start()
    done.wait(10)
    cache.clear(all_threads=True)
    assert ops[0].last_executor.freed == 1 and ops[0]._freed
    go.set()
    t.join()
