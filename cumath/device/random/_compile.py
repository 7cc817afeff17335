"""``Compile``: the cuRAND device shim as LTO-IR for one compute capability, as link files for numba-cuda.

The LTO-IR comes from :func:`cumath.device.random._shim.compile_shim` (cached in memory and on disk under
``cache_dir('device')`` by the content it depends on: the shim's source, cuRAND's headers, the NVRTC version and
the compute capability); its link file is written next to the device code's (``device/link/``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._codegen import STORE, memory_cache
from .._common import normalize_cc
from ._shim import compile_shim
from ._states import States

if TYPE_CHECKING:
    from typing import Any

    from .._common import ComputeCapability

__all__ = ["Compile", "shim_files", "active_files"]

_shims: dict = memory_cache()  # cc -> link files (emptied by cumath.device.clear_cache)
_active_files: list = []  # files of the most recent Compile (linked into kernels that did not name them)


def shim_files(cc) -> list[str]:
    """Path of the shim's LTO-IR for ``cc`` (generated on first use, then read from the cache)."""
    cc = tuple(cc)
    files = _shims.get(cc)
    if files is None:
        art = compile_shim(cc)
        files = _shims[cc] = [STORE.export(f"{art.key[:40]}-curand.ltoir", art.data)]
    return files


class _Extension:
    """numba-cuda kernel extension: hands a States object to the kernel as its device array."""

    def prepare_args(self, ty, val, stream=None, retr=None):
        if isinstance(val, States):
            return ty, val.array
        return ty, val


class Compile:
    """The cuRAND device functions compiled for compute capability ``cc`` (default: the current GPU's).

    ``files`` go to ``@cuda.jit(link=...)``, ``extension`` to ``@cuda.jit(extensions=...)`` (it passes the
    ``States*`` objects to kernels)."""

    def __init__(self, cc: Any = None) -> None:
        self._cc = normalize_cc(cc, what="cc")
        self._files = None

    @property
    def cc(self) -> ComputeCapability:
        """The compute capability the functions are compiled for."""
        return self._cc

    @property
    def files(self) -> list[str]:
        """The files to link (``@cuda.jit(link=files)``)."""
        if self._files is None:
            self._files = shim_files(self._cc)
            _active_files[:] = self._files
        return list(self._files)

    @property
    def extension(self) -> list:
        """For ``@cuda.jit(extensions=...)``, a list holding the extension that passes States objects."""
        return [_Extension()]

    def __repr__(self):
        return f"random.Compile(cc={tuple(self._cc)})"


def active_files() -> tuple:
    return tuple(_active_files)
