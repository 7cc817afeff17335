"""NVTX ranges on cumath's planning, autotuning, execution and staging copies, for Nsight Systems timelines.

Ranges are on when a profiler that reads NVTX is attached (Nsight Systems and Nsight Compute set
``NVTX_INJECTION64_PATH``), or when ``CUMATH_NVTX=1``; ``CUMATH_NVTX=0`` turns them off. Off, a range is one
shared no-op context manager and the hot paths test one module-level bool (``ENABLED``): a few tens of
nanoseconds per call. On, each range is an ``nvtxRangePushA``/``nvtxRangePop`` pair of the NVTX library
(``libnvtx3interop``, from the ``cu13``/``cu12`` extras), named after the operation and its shape, e.g.
``cumath FFT.plan complex64[4096, 4096]``. Where the library is missing, ranges stay off (logged once).
"""

from __future__ import annotations

import ctypes
import logging
import os

__all__ = ["ENABLED", "range", "operation_range", "enable"]

logger = logging.getLogger(__name__)


def _wanted() -> bool:
    env = os.environ.get("CUMATH_NVTX", "").strip()
    if env:
        return env not in ("0", "false", "no", "off")
    return bool(os.environ.get("NVTX_INJECTION64_PATH"))


ENABLED = _wanted()
_lib = None


class _Null:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


NULL = _Null()


def _load():
    global _lib, ENABLED
    if _lib is None:
        try:
            from .._bindings._loader import load_library

            lib = load_library("nvtx")
            lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
            lib.nvtxRangePushA.restype = ctypes.c_int
            lib.nvtxRangePop.argtypes = []
            lib.nvtxRangePop.restype = ctypes.c_int
            _lib = lib
        except Exception as exc:  # noqa: BLE001 - no NVTX library: no ranges, the work goes on
            logger.info("NVTX ranges are off: %s", exc)
            ENABLED = False
            return None
    return _lib


class _Range:
    __slots__ = ("name", "lib")

    def __init__(self, name: str, lib):
        self.name, self.lib = name, lib

    def __enter__(self):
        self.lib.nvtxRangePushA(self.name.encode())
        return self

    def __exit__(self, *exc):
        self.lib.nvtxRangePop()
        return False


def range(name: str):  # noqa: A001 - the NVTX word
    """A context manager that marks ``name`` on the profiler's timeline (a no-op when ranges are off)."""
    if not ENABLED:
        return NULL
    lib = _load()
    return NULL if lib is None else _Range(name, lib)


def operation_range(op, what: str):
    """The range ``cumath <Class>.<what> <dtype>[shape]`` of an operation (its first operand's dtype and shape)."""
    if not ENABLED:
        return NULL
    first = next((o for o in getattr(op, "_ops", {}).values() if o is not None), None)
    detail = f" {first.dtype}{list(first.shape)}" if first is not None else ""
    return range(f"cumath {type(op).__name__}.{what}{detail}")


def enable(on: bool = True) -> None:
    """Turn ranges on or off for this process (``CUMATH_NVTX`` decides at import)."""
    global ENABLED
    ENABLED = bool(on)
