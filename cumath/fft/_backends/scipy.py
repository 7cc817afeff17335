"""The fallback CPU engine: SciPy's pocketfft (always there with SciPy; NumPy's pocketfft without it)."""

from __future__ import annotations

import logging

from ..._core.frameworks.numpy import from_pointer

__all__ = ["ScipyEngine", "ScipyPlan"]

logger = logging.getLogger(__name__)


class ScipyEngine:
    """SciPy's pocketfft as a CPU engine: nothing to load."""

    name = "scipy"

    def load(self) -> None:
        pass

    def plan(self, geom, in_strides, out_strides, num_threads, auto_threads, options, log) -> "ScipyPlan":
        return ScipyPlan(geom.fft_type, geom, in_strides, out_strides, num_threads, log)


class ScipyPlan:
    """Executes through scipy.fft with ``workers=num_threads`` and copies into the output array (the
    ``CPUPlan`` of ``fft/_backends``: its entries call :meth:`run` with the sign as the plan)."""

    nbytes = 0
    align_mask = 0

    def __init__(self, kind, geom, in_strides, out_strides, num_threads, log=logger):
        try:
            import scipy.fft as fftmod

            self._kw = {"workers": num_threads}
        except ImportError:  # pragma: no cover - SciPy absent
            import numpy.fft as fftmod

            self._kw = {}
        self._fft = fftmod
        self.kind = kind
        self.geom = geom
        self.in_strides = in_strides
        self.out_strides = out_strides
        self.entries = {-1: (self.run, -1), 1: (self.run, 1)}
        log.info("SciPy pocketfft %s plan axes=%s sizes=%s with %d worker(s)", kind, geom.axes, geom.sizes,
                 num_threads)

    def prepare(self, sign: int) -> None:
        pass

    def served_by(self, sign: int) -> str:
        return "scipy"

    def execute(self, in_ptr, out_ptr, sign, stream=None):
        self.run(sign, in_ptr, out_ptr)

    def run(self, sign, in_ptr, out_ptr):
        g = self.geom
        x = from_pointer(in_ptr, g.in_shape, self.in_strides, g.in_dtype)
        out = from_pointer(out_ptr, g.out_shape, self.out_strides, g.out_dtype)
        f = self._fft
        if self.kind == "C2C":
            fn = f.fftn if sign < 0 else f.ifftn
            res = fn(x, axes=g.axes, norm="backward" if sign < 0 else "forward", **self._kw)
        elif self.kind == "R2C":
            res = f.rfftn(x, axes=g.axes, **self._kw)
        else:
            res = f.irfftn(x, s=g.sizes, axes=g.axes, norm="forward", **self._kw)
        out[...] = res

    def free(self):
        pass
