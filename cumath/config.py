"""Process-wide settings.

``cumath.config.plan_cache``: the cache behind stateless calls (``max_plans``, ``max_bytes``, ``enabled``,
``set_limits()``, ``clear()``, ``stats()``).
``cumath.config.cache_dir()``: where persistent artefacts (FFTW wisdom, ...) live; ``CUMATH_CACHE_DIR``
overrides it.
``cumath.config.matmul_autotune_cache``: opt-in persistent cache of matmul autotuning results (see below).
"""

from __future__ import annotations

from ._core.disk_cache import cache_dir
from ._core.plan_cache import plan_cache

__all__ = ["plan_cache", "cache_dir", "matmul_autotune_cache"]

#: Persistent matmul autotune cache (``cumath.linalg.advanced``): True turns it on, False off, None (the default)
#: defers to the environment variable ``CUMATH_MATMUL_AUTOTUNE_CACHE`` (``1``/``true``/``yes``/``on`` turn it on).
#: When on, ``Matmul.autotune()`` records the fastest algorithm for its problem (keyed by GPU name and compute
#: capability, cuBLASLt version and the problem: dtypes, shapes, layouts, epilog, compute type...) under
#: ``cache_dir("matmul-autotune")`` as JSON, and ``matmul(...)`` and new ``Matmul`` objects reuse it in
#: ``plan()``, across processes.
matmul_autotune_cache: bool | None = None

