"""``Compile``: the cuRAND device shim as LTO-IR for one compute capability, and the states' layouts, cached in
memory and on disk (``cache_dir('device')``) by the content they depend on: the shim's source, cuRAND's
headers, the NVRTC version and the compute capability."""

from __future__ import annotations

import logging
import threading
import time

from ..._core.disk_cache import digest
from .._codegen import STORE, memory_cache, write_link_file
from .._common import normalize_cc

__all__ = ["Compile", "state_layouts", "shim_files"]

logger = logging.getLogger(__name__)

_KEY_VERSION = 1
_LAYOUT_CC = (7, 5)  # state layouts do not depend on the target; read them once, compiled for this one
_lock = threading.RLock()
_layouts: dict | None = None
_shims: dict = memory_cache()  # cc -> link files (emptied by cumath.device.clear_cache)
_active_files: list = []  # files of the most recent Compile (linked into kernels that did not name them)


def _context():
    from ..._bindings import curand_device, nvrtc

    dirs = curand_device.include_dirs()
    return dirs, (curand_device.header_fingerprint(dirs), nvrtc.nvrtcVersion(), curand_device.shim_source())


def state_layouts() -> dict[str, tuple[int, int]]:
    """generator -> (size, alignment) of its cuRAND state, read from the installed header (cached)."""
    global _layouts
    if _layouts is not None:
        return _layouts
    from ..._bindings import curand_device

    with _lock:
        dirs, ctx = _context()
        key = digest("cumath.device.random layouts", _KEY_VERSION, ctx[:2])
        entry = STORE.get(key)
        if entry is not None:
            layouts = {g: tuple(v) for g, v in entry.meta["layouts"].items()}
        else:
            layouts = curand_device.state_layouts(_LAYOUT_CC, dirs)
            STORE.put(key, b"", {"layouts": {g: list(v) for g, v in layouts.items()}})
        _layouts = layouts
    return layouts


def shim_files(cc) -> list[str]:
    """Path of the shim's LTO-IR for ``cc`` (generated on first use, then read from the cache)."""
    cc = tuple(cc)
    files = _shims.get(cc)
    if files is not None:
        return files
    from ..._bindings import curand_device

    with _lock:
        dirs, ctx = _context()
        key = digest("cumath.device.random shim", _KEY_VERSION, ctx, cc)
        entry = STORE.get(key)
        if entry is not None:
            ltoir = entry.data
        else:
            t0 = time.perf_counter()
            ltoir = curand_device.compile_shim(cc, dirs)
            logger.info("compiled the cuRAND device shim for sm_%d%d in %.2f s (%d bytes of LTO-IR)", cc[0], cc[1],
                        time.perf_counter() - t0, len(ltoir))
            STORE.put(key, ltoir, {"what": "curand shim", "cc": list(cc)})
        files = [write_link_file(f"{key[:40]}-curand.ltoir", ltoir)]
        _shims[cc] = files
    return files


class _Extension:
    """numba-cuda kernel extension: hands a States object to the kernel as its device array."""

    def prepare_args(self, ty, val, stream=None, retr=None):
        from ._states import States

        if isinstance(val, States):
            return ty, val.array
        return ty, val


class Compile:
    """The cuRAND device functions compiled for compute capability ``cc`` (default: the current GPU's).

    ``files`` go to ``@cuda.jit(link=...)``, ``extension`` to ``@cuda.jit(extensions=...)`` (it passes the
    ``States*`` objects to kernels)."""

    def __init__(self, cc=None):
        self._cc = normalize_cc(cc, what="cc")
        self._files = None

    @property
    def cc(self):
        return self._cc

    @property
    def files(self) -> list[str]:
        if self._files is None:
            self._files = shim_files(self._cc)
            _active_files[:] = self._files
        return list(self._files)

    @property
    def extension(self) -> list:
        """For ``@cuda.jit(extensions=...)``: a list holding the extension that passes States objects."""
        return [_Extension()]

    def __repr__(self):
        return f"random.Compile(cc={tuple(self._cc)})"


def active_files() -> tuple:
    return tuple(_active_files)
