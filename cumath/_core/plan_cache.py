"""The plan cache behind stateless calls: an LRU bounded by count and bytes, one per thread.

Keys hold everything a plan depends on (the operation's class first, then the problem, options, execution
space and device, stream), so a per-thread cache is also per device. Evicted plans are freed, and so are a
thread's plans when the thread ends. ``cached_call`` is the body of every stateless function.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict

from . import nvtx
from ._fast import hot_attach, hot_gpu_type, hot_put, hot_put_gpu, hot_put_mm, hot_setup, hot_table

__all__ = ["PlanCache", "plan_cache", "cached_call", "hot_remember", "hot_numpy"]

logger = logging.getLogger(__name__)


def _free_all(entries: OrderedDict, fast=None) -> None:
    if fast is not None:  # the compiled path's entries go first: none may outlive its plan
        fast.clear()
    while entries:
        _, (plan, _n) = entries.popitem()
        try:
            plan.free()
        except Exception:  # pragma: no cover - a plan that cannot be freed must not stop the others
            logger.warning("freeing a cached plan failed", exc_info=True)


class _ThreadCache:
    """One thread's plans. When the thread ends its ``threading.local`` slot drops the last reference, and
    the finalizer frees the plans (they are not reachable from any other thread)."""

    __slots__ = ("entries", "nbytes", "hits", "misses", "evictions", "fast", "__weakref__")

    def __init__(self):
        self.entries: OrderedDict = OrderedDict()  # key -> (plan, nbytes)
        self.nbytes = 0
        self.hits = self.misses = self.evictions = 0
        # the compiled hit path's view of these entries (None without the extension): every entry of it
        # belongs to a key of ``entries`` and is dropped before that key's plan is freed
        self.fast = hot_table()
        weakref.finalize(self, _free_all, self.entries, self.fast)


class PlanCache:
    """Plan cache with limits ``max_plans`` and ``max_bytes`` (per thread), ``enabled``, ``clear()`` and
    ``stats()``."""

    _hot = False  # the cache the stateless functions use (its threads' tables serve the compiled path)

    def __init__(self, max_plans: int = 64, max_bytes: int = 2 << 30):
        self._local = threading.local()
        self._all: weakref.WeakSet = weakref.WeakSet()  # every live thread's cache
        self._lock = threading.Lock()
        self.max_plans = max_plans
        self.max_bytes = max_bytes
        self.enabled = True

    def _mine(self) -> _ThreadCache:
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = _ThreadCache()
            if self._hot and cache.fast is not None:
                hot_attach(cache.fast)  # this thread's compiled path reads this cache's table
            with self._lock:
                self._all.add(cache)
        return cache

    def get(self, key):
        try:
            cache = self._local.cache
        except AttributeError:
            cache = self._mine()
        entry = cache.entries.get(key)
        if entry is None:
            cache.misses += 1
            return None
        cache.entries.move_to_end(key)
        cache.hits += 1
        return entry[0]

    def put(self, key, plan, nbytes: int = 0) -> None:
        cache = self._mine()
        if cache.fast is not None:
            cache.fast.discard(key)  # a plan replaced under its key
        cache.entries[key] = (plan, nbytes)
        cache.nbytes += nbytes
        self._trim(cache)

    def _trim(self, cache: _ThreadCache) -> None:
        while cache.entries and (len(cache.entries) > self.max_plans or cache.nbytes > self.max_bytes):
            key, (plan, nbytes) = cache.entries.popitem(last=False)
            cache.nbytes -= nbytes
            cache.evictions += 1
            logger.debug("plan cache evicts %r", key)
            if cache.fast is not None:
                cache.fast.discard(key)
            plan.free()

    def set_limits(self, max_plans: int | None = None, max_bytes: int | None = None) -> None:
        """Change the limits; plans over the new limits are freed (in the calling thread's cache)."""
        if max_plans is not None:
            if max_plans < 0:
                raise ValueError("max_plans must be >= 0")
            self.max_plans = max_plans
        if max_bytes is not None:
            if max_bytes < 0:
                raise ValueError("max_bytes must be >= 0")
            self.max_bytes = max_bytes
        self._trim(self._mine())

    def clear(self, all_threads: bool = False) -> None:
        """Free every plan of the calling thread's cache (``all_threads=True``: of every thread's; only safe
        while the other threads make no stateless calls)."""
        if all_threads:
            with self._lock:
                caches = list(self._all)
        else:
            caches = [self._mine()]
        for cache in caches:
            _free_all(cache.entries, cache.fast)
            cache.nbytes = 0

    def stats(self) -> dict:
        """Counts of the calling thread's cache: hits, misses, evictions, plans and bytes held."""
        c = self._mine()
        hits = c.hits + (c.fast.hits if c.fast is not None else 0)  # the compiled path counts its own
        return {"hits": hits, "misses": c.misses, "evictions": c.evictions,
                "plans": len(c.entries), "bytes": c.nbytes}

    def reset_stats(self) -> None:
        c = self._mine()
        c.hits = c.misses = c.evictions = 0
        if c.fast is not None:
            c.fast.hits = 0


plan_cache = PlanCache()
plan_cache._hot = True


def _setup_hot(ndarray=None) -> None:
    if hot_setup is None:
        return
    # the compiled path serves only while the cache is enabled (exactly True) and no profiler ranges calls
    hot_setup(ndarray, ((plan_cache.__dict__, "enabled", True), (nvtx.__dict__, "ENABLED", False)),
              f"{__name__}.hot")


_setup_hot()  # NumPy is not imported here (``import cumath.sparse`` loads none): the host path waits for it
_hot_numpy = []


def hot_numpy() -> None:
    """Give the compiled path ``numpy.ndarray`` (its host operands), once; called where NumPy is in use."""
    if not _hot_numpy and hot_setup is not None:
        import numpy as np

        _setup_hot(np.ndarray)
        _hot_numpy.append(True)


def hot_remember(key, array, kind: int, other=None) -> None:
    """Let the compiled hit path serve the next calls of ``key`` on operands like ``array`` (and ``other``, a
    matmul's ``b``): a call with default arguments whose key is ``key``; ``kind`` is the domain's code of the key's
    other parts. Where the cached plan says it can (``plan._hot_spec()``: None where it cannot serve its calls
    exactly as ``execute`` would; a tuple for a host FFT plan, ``(runner, package)`` for a GPU FFT plan,
    ``("matmul", package, ...)`` for an advanced matmul; False: not now, ask again). Called after a stateless call ran the Python path; a
    key that cannot be served is remembered as such (one dict lookup next time)."""
    if hot_put is None or plan_cache.enabled is not True:
        return
    hot_numpy()
    mine = getattr(plan_cache._local, "cache", None)
    if mine is None or key in mine.fast.keys:
        return
    entry = mine.entries.get(key)
    if entry is None:
        return
    spec = entry[0]._hot_spec()
    if spec is False:  # not servable yet: asked again after a later call
        return
    put = False
    if spec is not None and type(spec[0]) is str and spec[0] == "matmul":  # ("matmul", package, mm, ...)
        if other is not None and hot_gpu_type(type(array), spec[1]) and hot_gpu_type(type(other), spec[1]):
            put = hot_put_mm(mine.fast, array, other, key, mine.entries.move_to_end, *spec[2:])
    elif spec is not None and len(spec) == 2:  # a GPU plan: (DevRunner, package)
        if hot_gpu_type(type(array), spec[1]):
            put = hot_put_gpu(mine.fast, array, kind, key, mine.entries.move_to_end, spec[0])
    elif spec is not None:  # a host plan: served for NumPy arrays (False for any other type)
        put = hot_put(mine.fast, array, kind, key, mine.entries.move_to_end, *spec)
    if not put:
        mine.fast.keys[key] = None  # not served: not looked at again while the plan is cached


def cached_call(key, make, ops: dict, *bind_args, **execute_kwargs):
    """The body of a stateless function: execute the planned operation of ``key`` on ``ops``.

    A hit lends the cached operation to this call (``_bind(ops, *bind_args)``, ``execute(**execute_kwargs)``,
    ``_unbind()``); a miss calls ``make()``, which constructs and plans the operation, executes it and keeps it
    (after executing: ``put`` may evict, and free, this very plan). With the cache disabled the operation is
    freed after the call. ``key`` starts with the operation's class; the rest is everything the plan depends
    on, as cheap to build as the domain can make it.
    """
    if nvtx.ENABLED:  # a profiler is attached: the call inside a range (one bool test otherwise)
        if not getattr(_ranging, "on", False):
            return _ranged_call(key, make, ops, bind_args, execute_kwargs)
        _ranging.on = False
    cache = plan_cache
    if cache.enabled:  # PlanCache.get, inlined: this is every stateless call's path
        try:
            mine = cache._local.cache
        except AttributeError:
            mine = cache._mine()
        entry = mine.entries.get(key)
        if entry is not None:
            mine.entries.move_to_end(key)
            mine.hits += 1
            op = entry[0]
            try:
                op._bind(ops, *bind_args)
                return op.execute(**execute_kwargs)
            finally:
                op._unbind()
        mine.misses += 1
    op = make()
    try:
        result = op.execute(**execute_kwargs)
    except BaseException:
        op.free()
        raise
    if not cache.enabled:
        op.free()
        return result
    op._unbind()
    cache.put(key, op, op.nbytes)
    return result



_ranging = threading.local()


def _ranged_call(key, make, ops, bind_args, execute_kwargs):
    """cached_call inside an NVTX range named after the operation and its first operand (a profiler is attached)."""
    first = next((o for o in ops.values() if o is not None), None)
    name = getattr(key[0], "__name__", "call") if key else "call"
    detail = f" {first.dtype}{list(first.shape)}" if first is not None else ""
    with nvtx.range(f"cumath {name} (stateless call){detail}"):
        _ranging.on = True
        try:
            return cached_call(key, make, ops, *bind_args, **execute_kwargs)
        finally:
            _ranging.on = False
