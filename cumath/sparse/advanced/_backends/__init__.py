"""Sparse direct solver engines: cuDSS on the GPU (``cudss.py``); on the CPU, a registry behind one small protocol.

CPU engines, in the order 'auto' tries them: oneMKL PARDISO ('pardiso', ``pardiso.py``), SciPy's SuperLU
('superlu', ``superlu.py``, there whenever SciPy is). ``DirectSolverOptions.cpu_engine`` names one; 'auto' reads
the environment variable ``CUMATH_SPARSE_SOLVER_CPU_ENGINE`` first, then takes the first engine that loads.

A CPU engine (:class:`CPUEngine`) makes the plan of one system (:class:`CPUSystemPlan`), which analyses,
factorizes and solves NumPy arrays (views of the caller's memory, or staging copies made by the executors).
"""

from __future__ import annotations

import importlib
from typing import Protocol

from ...._core.engines import EngineRegistry
from ...._core.execution import available_cpus

__all__ = ["CPUEngine", "CPUSystemPlan", "ENGINES", "ENV", "cpu_backend", "default_threads"]

ENV = "CUMATH_SPARSE_SOLVER_CPU_ENGINE"


class CPUSystemPlan(Protocol):
    """A CPU engine's plan of one system ``A x = B`` of order ``n``.

    ``analyse``/``factorize`` take the CSR arrays of ``A`` as the caller stores them (NumPy arrays; the plan maps
    them to what its library wants); ``solve`` reads ``b`` and writes ``x``, both column-major ``(n, k)`` arrays
    (``x`` dense), and gets ``A``'s values again (engines that refine the solution read them). ``canonical``: the
    caller's package already says the columns are sorted within rows and free of duplicates (None: unknown). ``perturbed``: pivots the last factorization perturbed or found tiny (0: none). ``settings``
    is the solver's settings dict (name -> value or None), read at each phase.
    """

    perturbed: int
    nbytes: int

    def analyse(self, indptr, indices, values, canonical=None) -> None: ...

    def factorize(self, indptr, indices, values) -> None: ...

    def solve(self, values, b, x) -> None: ...

    def info(self, name: str):
        """A value of DirectSolverPlanInfo / DirectSolverFactorizationInfo (the same names); KeyError if the
        engine has none."""

    def free(self) -> None: ...


class CPUEngine(Protocol):
    name: str

    def load(self) -> None:
        """Load the engine's library; raises LibraryNotFoundError (naming the extra) when it is missing."""

    def plan(self, n: int, dtype: str, index_dtype: str, mtype, view, settings: dict, threads: int,
             log) -> CPUSystemPlan: ...


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


#: the CPU engines (their modules are imported on first use), in the order 'auto' tries them
ENGINES = EngineRegistry({
    "pardiso": lambda: _module("pardiso").PardisoEngine(),
    "superlu": lambda: _module("superlu").SuperLUEngine(),
}, ("pardiso", "superlu"), ENV, "sparse direct solver CPU engine")


def cpu_backend(requested: str, log=None) -> CPUEngine:
    """The CPU engine for ``requested`` ('auto' or an engine's name), loaded; the choice is logged."""
    return ENGINES.get(requested, log)


def default_threads() -> int:
    """The threads a CPU engine uses when the caller names none: the cores the process may run on."""
    return available_cpus()
