"""The plan cache behind the stateless functions: hits, misses, eviction, limits, streams and threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import cumath.fft as F
from cumath.config import plan_cache
from cumath.errors import InvalidStateError
from helpers.matrix import hermitian_array, random_array
from helpers.reference import assert_close, fft_ref, ifft_ref, irfft_ref, rfft_ref


@pytest.fixture(autouse=True)
def fresh_cache():
    limits = (plan_cache.max_plans, plan_cache.max_bytes, plan_cache.enabled)
    plan_cache.clear()
    plan_cache.reset_stats()
    yield
    plan_cache.clear()
    plan_cache.max_plans, plan_cache.max_bytes, plan_cache.enabled = limits
    plan_cache.reset_stats()


def _plans():
    """The FFT objects of the calling thread's cache, oldest first."""
    return [plan for plan, _ in plan_cache._mine().entries.values()]


def test_repeated_calls_hit_and_reuse_the_plan():
    x = random_array((8, 30), "complex128")
    assert_close(F.fft(x), fft_ref(x), "complex128")
    # results are not kept (recycling is opt-in), so a C2C plan on the caller's arrays holds nothing
    assert plan_cache.stats() == {"hits": 0, "misses": 1, "evictions": 0, "plans": 1, "bytes": 0}
    (plan,) = _plans()
    for _ in range(5):
        x = random_array((8, 30), "complex128")
        assert_close(F.fft(x), fft_ref(x), "complex128")
    assert plan_cache.stats()["hits"] == 5 and plan_cache.stats()["misses"] == 1
    assert _plans() == [plan] and not plan._freed
    assert plan._ops["operand"] is None  # the cached plan does not keep the caller's array alive


def test_directions_share_one_plan():
    x = random_array((8, 30), "complex128")
    F.fft(x)
    y = F.ifft(x)
    z = F.fft(x, direction="inverse")
    assert_close(y, ifft_ref(x), "complex128")
    np.testing.assert_allclose(y, z, rtol=1e-12)
    assert plan_cache.stats()["plans"] == 1 and plan_cache.stats()["hits"] == 2


def test_different_problems_miss():
    problems = [
        lambda: F.fft(random_array((8, 30), "complex128")),
        lambda: F.fft(random_array((8, 31), "complex128")),
        lambda: F.fft(random_array((8, 30), "complex64")),
        lambda: F.fft(random_array((8, 30), "complex128"), axes=(1,)),
        lambda: F.fft(random_array((8, 30), "complex128"), options={"cpu_engine": "scipy"}),
        lambda: F.fft(np.asfortranarray(random_array((8, 30), "complex128"))),
        lambda: F.rfft(random_array((8, 30), "float64")),
        lambda: F.irfft(hermitian_array((8, 30), "complex128")),
    ]
    for p in problems:
        p()
    assert plan_cache.stats()["misses"] == len(problems) and plan_cache.stats()["hits"] == 0
    for p in problems:
        p()
    assert plan_cache.stats()["hits"] == len(problems) and plan_cache.stats()["plans"] == len(problems)


def test_eviction_by_max_plans_frees_the_evicted_plan():
    plan_cache.set_limits(max_plans=2)
    F.fft(random_array((4, 10), "complex128"))
    first = _plans()[0]
    F.fft(random_array((4, 11), "complex128"))
    assert plan_cache.stats()["evictions"] == 0
    x = random_array((4, 12), "complex128")
    assert_close(F.fft(x), fft_ref(x), "complex128")
    assert plan_cache.stats()["evictions"] == 1 and plan_cache.stats()["plans"] == 2
    assert first._freed and first not in _plans()
    with pytest.raises(InvalidStateError):
        first.execute()
    x = random_array((4, 10), "complex128")  # the evicted problem is planned again
    assert_close(F.fft(x), fft_ref(x), "complex128")
    assert plan_cache.stats()["misses"] == 4


def test_lru_order():
    plan_cache.set_limits(max_plans=2)
    a, b, c = (random_array((4, n), "complex128") for n in (10, 11, 12))
    F.fft(a)
    F.fft(b)
    F.fft(a)  # a is now the most recently used
    F.fft(c)  # evicts b
    F.fft(a)
    assert plan_cache.stats()["hits"] == 2 and plan_cache.stats()["misses"] == 3


def test_eviction_by_max_bytes():
    h = hermitian_array((16, 17), "complex128")  # C2R plans own a staging copy of the input
    y = F.irfft(h)
    (first,) = _plans()
    one = plan_cache.stats()["bytes"]
    assert one == h.nbytes  # the staging copy (results are not kept: recycling is opt-in)
    plan_cache.set_limits(max_bytes=one + one // 2)
    h2 = hermitian_array((16, 18), "complex128")
    y2 = F.irfft(h2)
    assert_close(y2, irfft_ref(h2), "float64")
    stats = plan_cache.stats()
    assert stats["evictions"] == 1 and stats["plans"] == 1 and stats["bytes"] == h2.nbytes
    assert first._freed


def test_set_limits_frees_plans_over_the_new_limits():
    for n in (10, 11, 12):
        F.fft(random_array((3, n), "complex128"))
    old = _plans()
    plan_cache.set_limits(max_plans=1)
    assert plan_cache.stats()["plans"] == 1 and [p._freed for p in old] == [True, True, False]
    with pytest.raises(ValueError, match="max_plans must be >= 0"):
        plan_cache.set_limits(max_plans=-1)
    with pytest.raises(ValueError, match="max_bytes must be >= 0"):
        plan_cache.set_limits(max_bytes=-1)


def test_max_plans_zero_still_computes():
    plan_cache.set_limits(max_plans=0)
    x = random_array((5, 7), "complex128")
    assert_close(F.fft(x), fft_ref(x), "complex128")
    assert plan_cache.stats()["plans"] == 0


def test_disabled_cache_is_bypassed():
    plan_cache.enabled = False
    for _ in range(3):
        x = random_array((6, 9), "complex128")
        assert_close(F.fft(x), fft_ref(x), "complex128")
        r = random_array((6, 9), "float64")
        assert_close(F.rfft(r), rfft_ref(r), "complex128")
    assert plan_cache.stats() == {"hits": 0, "misses": 0, "evictions": 0, "plans": 0, "bytes": 0}


def test_clear_empties_and_frees():
    F.fft(random_array((3, 10), "complex128"))
    F.irfft(hermitian_array((3, 10), "complex128"))
    old = _plans()
    plan_cache.clear()
    assert plan_cache.stats()["plans"] == 0 and plan_cache.stats()["bytes"] == 0
    assert all(p._freed for p in old)
    x = random_array((3, 10), "complex128")
    assert_close(F.fft(x), fft_ref(x), "complex128")


def test_reset_stats():
    F.fft(random_array((3, 10), "complex128"))
    plan_cache.reset_stats()
    stats = plan_cache.stats()
    assert stats["hits"] == stats["misses"] == stats["evictions"] == 0 and stats["plans"] == 1


def test_failed_plan_is_not_cached():
    with pytest.raises(ValueError):
        F.fft(random_array((3, 10), "complex128"), prolog=b"ltoir")
    assert plan_cache.stats()["plans"] == 0


# ---------------------------------------------------------------------------------------------- keys

class _StreamLike:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _keys():
    """The keys of the calling thread's cache, oldest first."""
    return list(plan_cache._mine().entries)


def test_the_stream_is_part_of_the_key():
    x = random_array((4, 8), "complex128")
    for stream in (None, 5, _StreamLike(7), 5):
        assert_close(F.fft(x, stream=stream), fft_ref(x), "complex128")
    keys = _keys()
    assert plan_cache.stats()["misses"] == 3 and plan_cache.stats()["hits"] == 1  # the second 5: the same key
    assert len(keys) == 3 and len(set(keys)) == 3
    assert None in keys[0] and 7 in keys[1] and 5 in keys[2]  # LRU order: the second 5 used its plan last


def test_key_holds_the_problem():
    x = random_array((4, 8), "complex128")
    F.fft(x, axes=[1])
    F.fft(x, axes=(1,))
    F.fft(x, options={"cpu_engine": "scipy"})
    F.fft(x, execution={"name": "cpu", "num_threads": 1})
    keys = _keys()
    assert plan_cache.stats()["hits"] == 1  # a list of axes and the same tuple give one key
    assert len(keys) == 3 and len(set(keys)) == 3
    for key in keys:
        hash(key)


# ---------------------------------------------------------------------------------------------- threads

def test_threads_at_once_have_their_own_caches():
    n_threads, calls = 8, 50
    shapes = [(4, 16), (3, 17), (2, 30)]
    inputs = {s: [random_array(s, "complex128") for _ in range(4)] for s in shapes}
    real = [random_array((5, 12), "float64") for _ in range(4)]
    errors, stats = [], {}
    barrier = threading.Barrier(n_threads)

    def work(t):
        try:
            barrier.wait()
            for i in range(calls):
                s = shapes[(t + i) % len(shapes)]
                x = inputs[s][i % 4]
                assert_close(F.fft(x), fft_ref(x), "complex128")
                if i % 5 == 0:
                    r = real[i % 4]
                    assert_close(F.rfft(r), rfft_ref(r), "complex128")
            stats[t] = plan_cache.stats()
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            plan_cache.clear()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    for t in range(n_threads):
        assert stats[t]["misses"] == len(shapes) + 1, stats[t]
        assert stats[t]["hits"] == calls + calls // 5 - len(shapes) - 1, stats[t]
        assert stats[t]["plans"] == len(shapes) + 1
    assert plan_cache.stats()["misses"] == 0 and plan_cache.stats()["plans"] == 0  # this thread's cache
