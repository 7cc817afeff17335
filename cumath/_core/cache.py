"""The plan cache behind stateless calls: an LRU bounded by count and bytes, one per thread.

Keys hold everything a plan depends on (problem, options, execution space and device, stream), so a
per-thread cache is also per device. Evicted plans are freed.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

__all__ = ["PlanCache", "plan_cache"]

logger = logging.getLogger(__name__)


class _ThreadCache:
    __slots__ = ("entries", "nbytes", "hits", "misses", "evictions")

    def __init__(self):
        self.entries: OrderedDict = OrderedDict()  # key -> (plan, nbytes)
        self.nbytes = 0
        self.hits = self.misses = self.evictions = 0


class PlanCache:
    """Plan cache with limits ``max_plans`` and ``max_bytes`` (per thread), ``enabled``, ``clear()`` and
    ``stats()``."""

    def __init__(self, max_plans: int = 64, max_bytes: int = 2 << 30):
        self._local = threading.local()
        self._all: list[_ThreadCache] = []
        self._lock = threading.Lock()
        self.max_plans = max_plans
        self.max_bytes = max_bytes
        self.enabled = True

    def _mine(self) -> _ThreadCache:
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = _ThreadCache()
            with self._lock:
                self._all.append(cache)
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
        cache.entries[key] = (plan, nbytes)
        cache.nbytes += nbytes
        self._trim(cache)

    def _trim(self, cache: _ThreadCache) -> None:
        while cache.entries and (len(cache.entries) > self.max_plans or cache.nbytes > self.max_bytes):
            key, (plan, nbytes) = cache.entries.popitem(last=False)
            cache.nbytes -= nbytes
            cache.evictions += 1
            logger.debug("plan cache evicts %r", key)
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

    def clear(self) -> None:
        """Free every plan of the calling thread's cache."""
        cache = self._mine()
        while cache.entries:
            _, (plan, _n) = cache.entries.popitem()
            plan.free()
        cache.nbytes = 0

    def stats(self) -> dict:
        """Counts of the calling thread's cache: hits, misses, evictions, plans and bytes held."""
        c = self._mine()
        return {"hits": c.hits, "misses": c.misses, "evictions": c.evictions,
                "plans": len(c.entries), "bytes": c.nbytes}

    def reset_stats(self) -> None:
        c = self._mine()
        c.hits = c.misses = c.evictions = 0


plan_cache = PlanCache()
