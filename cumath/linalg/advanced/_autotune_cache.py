"""Persistent matmul autotune cache (opt-in): the best algorithm found for a problem, reused across processes.

How to use (for the Matmul operation)
-------------------------------------
- Opt in with ``cumath.config.matmul_autotune_cache = True`` or the environment variable
  ``CUMATH_MATMUL_AUTOTUNE_CACHE=1``; ``enabled()`` says whether it is on.
- ``problem_key`` is a str or a (nested) tuple/list of plain values (str, int, float, bool, None) that fully
  describes the problem: dtypes, shapes, strides/orders, transposes, epilog, compute/scale types, alignment...
- ``lookup(problem_key)`` -> a fresh ``Algorithm`` (with ``measured_time``) or None, in plan();
  ``store(problem_key, algorithm, time_ms)`` after autotune(); a stored entry is replaced only by a faster one.
- Entries are keyed by the environment (GPU name, compute capability, cuBLASLt version; ``environment=`` for
  tests) and live under ``cumath.config.cache_dir("matmul-autotune")`` as one JSON file each
  (``<environment slug>/<sha256 of the key>.json``, a :class:`~cumath._core.disk_cache.JsonStore`), written
  atomically (temporary file + rename), so concurrent processes never see a torn file; a store compares with
  the entry on disk and writes under an inter-process lock, so the fastest entry wins a race. An in-memory
  layer serves repeated lookups. A corrupt or foreign file is ignored with a warning. ``clear()`` empties both
  layers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
import warnings

from ..._core.disk_cache import JsonStore
from ._algorithms import Algorithm, current_environment

__all__ = ["enabled", "lookup", "store", "clear", "problem_digest", "cache_folder"]

logger = logging.getLogger(__name__)

ENV_VAR = "CUMATH_MATMUL_AUTOTUNE_CACHE"
ENTRY_FORMAT = "cumath.matmul-autotune-entry"
ENTRY_VERSION = 1

_files = JsonStore("matmul-autotune")
_lock = threading.Lock()
_memory: dict[str, tuple[dict, float]] = {}  # file path -> (algorithm dict, time in ms)


def enabled() -> bool:
    """Whether the persistent cache is on: ``cumath.config.matmul_autotune_cache`` (True/False) wins, else the
    environment variable ``CUMATH_MATMUL_AUTOTUNE_CACHE`` (1/true/yes/on)."""
    from ... import config

    value = getattr(config, "matmul_autotune_cache", None)
    if value is None:
        return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _canonical(problem_key) -> str:
    def plain(v, path="problem_key"):
        if v is None or isinstance(v, (str, bool, int)):
            return v
        if isinstance(v, float):
            return repr(v)  # exact and JSON-safe (inf/nan too)
        if isinstance(v, (tuple, list)):
            return [plain(x, f"{path}[{i}]") for i, x in enumerate(v)]
        raise TypeError(f"{path} must hold only str, int, float, bool, None, tuples and lists; got "
                        f"{type(v).__name__} {v!r}")

    return json.dumps(plain(problem_key), separators=(",", ":"))


def problem_digest(problem_key) -> str:
    """The sha256 hex digest naming a problem's cache file."""
    return hashlib.sha256(_canonical(problem_key).encode()).hexdigest()


def _slug(environment: dict) -> str:
    cc = "".join(str(x) for x in environment.get("compute_capability") or ())
    name = re.sub(r"[^A-Za-z0-9]+", "-", str(environment.get("gpu_name", "gpu"))).strip("-") or "gpu"
    return f"{name}-sm{cc}-cublaslt{environment.get('cublaslt_version')}"


def cache_folder(environment: dict | None = None) -> str:
    """The folder holding the entries of one environment (created on demand)."""
    return _files.directory(_slug(_normal_env(environment)))


def _normal_env(environment: dict | None) -> dict:
    env = environment if environment is not None else current_environment()
    return {"cublaslt_version": int(env["cublaslt_version"]), "gpu_name": str(env["gpu_name"]),
            "compute_capability": [int(x) for x in env["compute_capability"]]}


def _path(problem_key, environment) -> tuple[str, str, dict]:
    env = _normal_env(environment)
    canonical = _canonical(problem_key)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return _files.path(digest, _slug(env)), canonical, env


def _read(path: str, canonical: str, env: dict):
    """(algorithm dict, time) of a valid entry file, None when absent; a corrupt/foreign file warns -> None."""
    try:
        entry = _files.read(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        warnings.warn(f"ignoring the unreadable matmul autotune cache file {path}: {exc}", RuntimeWarning,
                      stacklevel=3)
        return None
    try:
        if entry.get("format") != ENTRY_FORMAT or entry.get("version") != ENTRY_VERSION:
            raise ValueError("unknown format")
        if entry["problem"] != canonical:
            raise ValueError("the file is for another problem")
        if entry["environment"] != env:
            raise ValueError("the file is for another GPU or cuBLASLt version")
        alg_dict, t = entry["algorithm"], float(entry["time_ms"])
        Algorithm.from_dict(alg_dict)  # validates the saved form
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        warnings.warn(f"ignoring the matmul autotune cache file {path}: {exc}", RuntimeWarning, stacklevel=3)
        return None
    return alg_dict, t


def lookup(problem_key, *, environment: dict | None = None) -> Algorithm | None:
    """The best algorithm stored for ``problem_key`` in this environment (a fresh object), or None."""
    path, canonical, env = _path(problem_key, environment)
    with _lock:
        hit = _memory.get(path)
    if hit is None:
        hit = _read(path, canonical, env)
        if hit is None:
            logger.debug("matmul autotune cache: no entry for %s", canonical)
            return None
        with _lock:
            _memory[path] = hit
    alg = Algorithm.from_dict(hit[0])
    alg.measured_time = hit[1]
    logger.info("matmul autotune cache: reusing algorithm %d (%.4g ms) for %s", alg.algorithm_id, hit[1], canonical)
    return alg


def store(problem_key, algorithm: Algorithm, time_ms: float | None = None, *,
          environment: dict | None = None) -> bool:
    """Record ``algorithm`` (timed ``time_ms``, default its ``measured_time``) as the best for ``problem_key``.

    An existing entry with a shorter time is kept (returns False); otherwise the entry is written atomically
    (returns True).
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"store takes an Algorithm, got {type(algorithm).__name__}")
    t = algorithm.measured_time if time_ms is None else time_ms
    if t is None or not float(t) >= 0:
        raise ValueError(f"store needs a measured time in ms (non-negative), got {t!r}")
    t = float(t)
    path, canonical, env = _path(problem_key, environment)
    with _files.locked(path):  # read-compare-write must not interleave with another process's
        existing = _read(path, canonical, env)
        if existing is not None and existing[1] <= t:
            with _lock:
                _memory[path] = existing
            logger.debug("matmul autotune cache: kept the stored %.4g ms entry over %.4g ms", existing[1], t)
            return False
        alg_dict = algorithm.to_dict()
        alg_dict["measured_time_ms"] = t
        entry = {"format": ENTRY_FORMAT, "version": ENTRY_VERSION, "problem": canonical, "environment": env,
                 "time_ms": t, "stored_at": time.time(), "algorithm": alg_dict}
        _files.write(path, entry)
    with _lock:
        _memory[path] = (alg_dict, t)
    logger.info("matmul autotune cache: stored algorithm %d (%.4g ms) for %s", algorithm.algorithm_id, t, canonical)
    return True


def clear(*, memory_only: bool = False) -> None:
    """Forget the in-memory layer and (unless ``memory_only``) delete every entry file on disk."""
    with _lock:
        _memory.clear()
    if not memory_only:
        _files.remove_all()
