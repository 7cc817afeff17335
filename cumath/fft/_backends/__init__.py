"""FFT engines: cuFFT on the GPU (``cufft.py``); on the CPU, a registry of engines behind one small protocol.

CPU engines, in the order 'auto' tries them: FFTW3 where the process has wisdom and, where it has none,
FFTW_ESTIMATE or oneMKL's DFTI by the no-wisdom rule ('fftw+dfti', ``dfti.py`` and ``_rule.py``: first calls
at tuned speed without measured planning), NVPL FFT on Arm ('nvpl', through
``fftw.py``; never looked for on other machines), FFTW3 ('fftw', ``fftw.py``), oneMKL's FFTW3 interface ('mkl',
the same module), SciPy's pocketfft ('scipy', ``scipy.py``, always there);
oneMKL's DFTI alone is 'dfti'. ``FFTOptions.cpu_engine`` names one;
'auto' reads the environment variable ``CUMATH_FFT_CPU_ENGINE`` first.

A CPU engine (:class:`CPUEngine`) loads its library and makes a plan of one problem layout
(:class:`CPUPlan`); executors call the plan's raw execute function themselves (``entries``) and fall back to
``execute()`` for anything else, so the hot path is one native call.
"""

from __future__ import annotations

import importlib
from typing import Callable, Protocol

from ..._core.engines import EngineRegistry

__all__ = ["CPUEngine", "CPUPlan", "ENGINES", "AUTO_ORDER", "cpu_backend", "cpu_engine"]


class CPUPlan(Protocol):
    """A CPU engine's plan of one FFT layout.

    ``entries``: sign -> (raw execute function, plan handle), called as ``fn(handle, in_ptr, out_ptr)`` for
    pointers with no bit of ``align_mask`` set; the engine may empty it at any time (``execute`` fills it
    again). ``nbytes``: memory the plan holds.
    """

    entries: dict
    align_mask: int
    nbytes: int

    def prepare(self, sign: int) -> None:
        """Plan the direction ``sign`` now (others are planned on first use)."""

    def execute(self, in_ptr: int, out_ptr: int, sign: int) -> None:
        """Transform at any pointers (any alignment), planning what is missing."""

    def free(self) -> None:
        """Destroy the native plans (idempotent)."""

    def served_by(self, sign: int) -> str | None:
        """What runs direction ``sign`` now ('fftw:wisdom', 'fftw:estimate', 'dfti', 'mkl', 'scipy', ...;
        None while it is not planned): for logs, tests and benchmarks."""


class CPUEngine(Protocol):
    name: str

    def load(self) -> None:
        """Load the engine's library; raises LibraryNotFoundError (naming the extra) when it is missing."""

    def plan(self, geom, in_strides, out_strides, num_threads: int, auto_threads: bool, options, log) -> CPUPlan:
        """A plan of ``geom`` (``fft/_traits.FFTGeometry``) reading ``in_strides`` and writing ``out_strides``
        (in elements); ``auto_threads``: ``num_threads`` is cumath's choice, which the engine may lower for
        small problems."""


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


#: engine name -> a factory of the engine (its module is imported on first use)
ENGINES: dict[str, Callable[[], CPUEngine]] = {
    "fftw": lambda: _module("fftw").FFTWEngine("fftw"),
    "mkl": lambda: _module("fftw").FFTWEngine("mkl"),
    "scipy": lambda: _module("scipy").ScipyEngine(),
    "dfti": lambda: _module("dfti").DftiEngine(),
    "fftw+dfti": lambda: _module("dfti").TunedEngine(REGISTRY),
    "nvpl": lambda: _module("fftw").FFTWEngine("nvpl"),
}
AUTO_ORDER = ("fftw+dfti", "nvpl", "fftw", "mkl", "scipy")

REGISTRY = EngineRegistry(ENGINES, AUTO_ORDER, "CUMATH_FFT_CPU_ENGINE", "FFT CPU engine")


def cpu_backend(requested: str) -> CPUEngine:
    """The CPU engine to use for ``requested`` ('auto', or an engine's name), loaded."""
    return REGISTRY.get(requested)


def cpu_engine(requested: str) -> str:
    """The name of the CPU engine :func:`cpu_backend` picks for ``requested``."""
    return cpu_backend(requested).name
