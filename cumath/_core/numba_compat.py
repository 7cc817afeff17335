"""numba-cuda, imported through one narrow, documented compatibility step.

Features that compile Python functions for the GPU (FFT callbacks, device APIs) import numba-cuda through
:func:`import_numba_cuda` and nowhere else.

The compatibility step: numba-cuda releases up to 0.30 (seen with 0.30.4) refer to ``numpy.row_stack``,
which NumPy 2.5 removed, so their first compile fails with ``AttributeError: module 'numpy' has no
attribute 'row_stack'``. ``row_stack`` was an alias of ``numpy.vstack`` (deprecated in NumPy 2.0), so when
NumPy lacks it *and* the installed numba-cuda is one of those releases, cumath puts the alias back before
importing numba-cuda, and says so once at INFO level. Nothing is changed for any other combination.

Versions are read from the installed distributions' metadata folders, without importing the packages (and
without ``importlib.metadata``, whose import alone costs ~50 ms), so caches can be checked before numba is
imported.
"""

from __future__ import annotations

import glob
import importlib
import importlib.util
import logging
import os
import re

__all__ = ["import_numba_cuda", "numba_cuda_version", "distribution_version", "needs_row_stack_alias",
           "EXTRA_HINT"]

logger = logging.getLogger(__name__)

EXTRA_HINT = ('pip install "cumath[dx]" (device APIs; pip install "cumath[numba]" is enough for FFT callbacks); '
              'from a checkout: pip install ".[dx]" or ".[numba]"')
# numba-cuda releases before this one refer to numpy.row_stack (seen: 0.30.4 with NumPy 2.5.2)
ROW_STACK_NEEDED_BEFORE = (0, 31)

_versions: dict[str, str | None] = {}
_alias_logged = False


def _parse(version: str) -> tuple:
    parts = []
    for p in version.split("."):
        m = re.match(r"\d+", p)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def distribution_version(module: str, distribution: str | None = None) -> str | None:
    """Version of the installed distribution providing top-level ``module`` (None when not installed),
    read from its ``*.dist-info`` folder next to the package; nothing is imported."""
    if module in _versions:
        return _versions[module]
    version = None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        version = "unknown"
        locations = list(spec.submodule_search_locations or []) or ([spec.origin] if spec.origin else [])
        dist = (distribution or module).replace("-", "_")
        for loc in locations:
            site = os.path.dirname(os.path.abspath(loc))
            found = glob.glob(os.path.join(site, f"{glob.escape(dist)}-*.dist-info"))
            if found:
                name = os.path.basename(sorted(found)[-1])
                version = name[len(dist) + 1: -len(".dist-info")]
                break
    _versions[module] = version
    return version


def numba_cuda_version() -> str | None:
    """The installed numba-cuda's version, None when it is not installed ('unknown' without metadata)."""
    return distribution_version("numba_cuda", "numba_cuda")


def needs_row_stack_alias(np_module, version: str | None) -> bool:
    """Whether ``np_module`` lacks ``row_stack`` and numba-cuda ``version`` is known to need it."""
    if version is None or hasattr(np_module, "row_stack"):
        return False
    parsed = _parse(version)
    return bool(parsed) and parsed < ROW_STACK_NEEDED_BEFORE


def import_numba_cuda(*, feature: str = "this feature", np_module=None):
    """Return the ``numba.cuda`` module, applying the NumPy compatibility step first when needed.

    Raises ImportError naming the extra that installs numba-cuda when it is missing.
    """
    global _alias_logged
    version = numba_cuda_version()
    if version is None:
        raise ImportError(f"{feature} needs numba-cuda, which is not installed; install it with {EXTRA_HINT}")
    if np_module is None:
        import numpy as np_module
    if needs_row_stack_alias(np_module, version):
        np_module.row_stack = np_module.vstack
        if not _alias_logged:
            _alias_logged = True
            logger.info("numba-cuda %s refers to numpy.row_stack, which NumPy %s removed: aliased it to "
                        "numpy.vstack (its old meaning) before importing numba-cuda", version,
                        getattr(np_module, "__version__", "?"))
    try:
        return importlib.import_module("numba.cuda")
    except ImportError as exc:
        raise ImportError(f"{feature} needs numba-cuda, which could not be imported ({exc}); install it with "
                          f"{EXTRA_HINT}") from exc
