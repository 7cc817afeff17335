"""Registries of the interchangeable engines of a domain (FFT, sparse direct solver, ...) and the rule that picks
one: the caller's option, else an environment variable, else the first engine of the registry's order that
loads; the choice is logged."""

from __future__ import annotations

import os

from ..errors import LibraryNotFoundError

__all__ = ["EngineRegistry"]


class EngineRegistry:
    """Engines by name (``factories``: name -> a zero-argument factory, called once), tried in ``order`` for
    'auto'; ``env`` is the environment variable that names the default; ``what`` names the engines in the log
    ("FFT CPU engine"). An engine has ``name`` and ``load()`` (which raises LibraryNotFoundError, naming the extra
    to install, when its library is missing)."""

    def __init__(self, factories: dict, order: tuple, env: str, what: str = "engine"):
        self.factories, self.order, self.env, self.what = factories, tuple(order), env, what
        self._made: dict = {}

    def engine(self, name: str):
        made = self._made.get(name)
        if made is None:
            made = self._made[name] = self.factories[name]()
        return made

    def get(self, requested: str, log=None):
        """The engine for ``requested`` ('auto' or a name), loaded."""
        how = "asked for"
        if requested == "auto":
            requested = os.environ.get(self.env, "auto").strip().lower() or "auto"
            how = f"{self.env}={requested}" if requested != "auto" else "the first available"
        names = self.order if requested == "auto" else ((requested,) if requested in self.factories else None)
        if names is None:
            allowed = ["auto", *self.factories]
            raise ValueError(f"{self.env}={requested!r} is not supported; use {', '.join(allowed[:-1])} or "
                             f"{allowed[-1]}")
        last = None
        for name in names:
            engine = self.engine(name)
            try:
                engine.load()
            except LibraryNotFoundError as exc:
                last = exc
                if log is not None:
                    log.info("%s %s is not available: %s", self.what, name, exc)
                continue
            if log is not None:
                log.info("%s: %s (%s)", self.what, name, how)
            return engine
        raise last
