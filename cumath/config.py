"""Process-wide settings.

``cumath.config.plan_cache``: the cache behind stateless calls (``max_plans``, ``max_bytes``, ``enabled``,
``set_limits()``, ``clear()``, ``stats()``).
``cumath.config.cache_dir()``: where persistent artefacts (FFTW wisdom, ...) live; ``CUMATH_CACHE_DIR``
overrides it.
"""

from __future__ import annotations

import os

from ._core.cache import plan_cache

__all__ = ["plan_cache", "cache_dir"]


def cache_dir(*parts: str) -> str:
    """The user cache folder of cumath (created on demand), or a sub-folder of it."""
    base = os.environ.get("CUMATH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "cumath"
    )
    path = os.path.join(base, *parts)
    os.makedirs(path, exist_ok=True)
    return path
