"""PlanCache unit tests with stand-in plans: LRU by count and bytes, frees on eviction, stats, threads."""

from __future__ import annotations

import threading

import pytest

from cumath._core.plan_cache import PlanCache
from cumath.config import plan_cache


class Plan:
    def __init__(self, name):
        self.name = name
        self.frees = 0

    def free(self):
        self.frees += 1


def test_get_put_and_stats():
    c = PlanCache()
    assert c.get("a") is None
    p = Plan("a")
    c.put("a", p, 10)
    assert c.get("a") is p and c.get("b") is None
    assert c.stats() == {"hits": 1, "misses": 2, "evictions": 0, "plans": 1, "bytes": 10}
    c.reset_stats()
    assert c.stats() == {"hits": 0, "misses": 0, "evictions": 0, "plans": 1, "bytes": 10}


def test_lru_eviction_by_count_frees():
    c = PlanCache(max_plans=2)
    a, b, d = Plan("a"), Plan("b"), Plan("d")
    c.put("a", a)
    c.put("b", b)
    c.get("a")  # a is the most recent
    c.put("d", d)
    assert c.get("b") is None and b.frees == 1
    assert c.get("a") is a and c.get("d") is d and a.frees == d.frees == 0
    assert c.stats()["evictions"] == 1 and c.stats()["plans"] == 2


def test_eviction_by_bytes():
    c = PlanCache(max_bytes=100)
    plans = [Plan(i) for i in range(4)]
    c.put(0, plans[0], 40)
    c.put(1, plans[1], 40)
    assert c.stats()["bytes"] == 80
    c.put(2, plans[2], 40)  # 120 > 100: the oldest goes
    assert plans[0].frees == 1 and c.stats()["bytes"] == 80 and c.stats()["plans"] == 2
    c.put(3, plans[3], 150)  # larger than the limit alone: everything goes, itself included
    assert [p.frees for p in plans] == [1, 1, 1, 1]
    assert c.stats()["plans"] == 0 and c.stats()["bytes"] == 0 and c.stats()["evictions"] == 4


def test_set_limits():
    c = PlanCache()
    plans = [Plan(i) for i in range(5)]
    for i, p in enumerate(plans):
        c.put(i, p, 10)
    c.set_limits(max_plans=3)
    assert [p.frees for p in plans] == [1, 1, 0, 0, 0] and c.max_plans == 3
    c.set_limits(max_bytes=15)
    assert [p.frees for p in plans] == [1, 1, 1, 1, 0] and c.stats()["bytes"] == 10
    c.set_limits()  # nothing changes
    assert c.max_plans == 3 and c.max_bytes == 15
    for kwargs, name in (({"max_plans": -1}, "max_plans"), ({"max_bytes": -5}, "max_bytes")):
        with pytest.raises(ValueError, match=f"{name} must be >= 0"):
            c.set_limits(**kwargs)


def test_clear_frees_everything():
    c = PlanCache()
    plans = [Plan(i) for i in range(3)]
    for i, p in enumerate(plans):
        c.put(i, p, 7)
    c.clear()
    assert all(p.frees == 1 for p in plans)
    assert c.stats()["plans"] == 0 and c.stats()["bytes"] == 0
    c.clear()  # again: nothing to do
    assert all(p.frees == 1 for p in plans)


def test_caches_are_per_thread():
    c = PlanCache()
    p = Plan("main")
    c.put("k", p, 5)
    seen = {}

    def other():
        seen["get"] = c.get("k")
        c.put("k", Plan("other"), 3)
        seen["stats"] = c.stats()
        c.clear()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen["get"] is None
    assert seen["stats"] == {"hits": 0, "misses": 1, "evictions": 0, "plans": 1, "bytes": 3}
    assert c.get("k") is p and p.frees == 0 and c.stats()["bytes"] == 5


def test_the_global_cache():
    assert isinstance(plan_cache, PlanCache)
    assert plan_cache.enabled is True and plan_cache.max_plans > 0 and plan_cache.max_bytes > 0
    import cumath.config

    assert cumath.config.plan_cache is plan_cache
