"""Where the host time of a sparse direct solver's phases goes: ``Steps`` times the named steps of one phase with
``time.perf_counter`` (always: a few calls per phase) and, when the solver's logger is enabled for DEBUG, logs
one line per step and one for the phase, waiting for the stream after each step first (``sync``) so that a step
that queues GPU work is charged with it. The durations of the last run of each phase are kept by the executor
(``timings``) and shown by :attr:`DirectSolver.timings`: benchmarks/solvers_sparse.py prints them.
"""

from __future__ import annotations

import logging
import time

__all__ = ["Steps"]


class Steps:
    """The steps of one ``phase`` ('plan', 'factorize', 'solve'), in milliseconds, kept in ``into[phase]``."""

    __slots__ = ("log", "phase", "debug", "sync", "steps", "start", "last")

    def __init__(self, into: dict, phase: str, log: logging.Logger, sync=None):
        self.log, self.phase = log, phase
        self.debug = log.isEnabledFor(logging.DEBUG)
        self.sync = sync if self.debug else None
        self.steps = into[phase] = {}
        self.start = self.last = time.perf_counter()

    def step(self, name: str) -> None:
        """The step ``name`` ends now (durations of a name met twice add up)."""
        if self.sync is not None:
            self.sync()
        now = time.perf_counter()
        ms = (now - self.last) * 1e3
        self.steps[name] = self.steps.get(name, 0.0) + ms
        self.last = now
        if self.debug:
            self.log.debug("%s step %s: %.3f ms", self.phase, name, ms)

    def done(self) -> dict:
        """The steps of the phase, with their total under 'total'."""
        total = (time.perf_counter() - self.start) * 1e3
        self.steps["total"] = total
        if self.debug:
            self.log.debug("%s: %.3f ms in all (%s)", self.phase, total,
                           ", ".join(f"{k} {v:.3f}" for k, v in self.steps.items() if k != "total"))
        return self.steps
