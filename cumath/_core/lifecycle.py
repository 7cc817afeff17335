"""Lifetimes and states of stateful objects: one owner per native handle, idempotent free()."""

from __future__ import annotations

import functools

from ..errors import InvalidStateError

__all__ = ["requires_alive", "Stateful"]


class Stateful:
    """Base of stateful operations: context manager, idempotent ``free()``, state flags for the guards.

    Subclasses implement ``_release()`` (free native resources; must tolerate partial construction) and
    register ``weakref.finalize`` safety nets for native handles in their backends.
    """

    _freed = False
    _planned = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def free(self) -> None:
        """Release every resource of this object. Calling it again does nothing."""
        if self._freed:
            return
        self._freed = True
        self._planned = False
        self._release()

    def _release(self) -> None:  # pragma: no cover - overridden
        pass


def requires_alive(method):
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        if self._freed:
            raise InvalidStateError(
                f"{type(self).__name__}.{method.__name__}() was called after free(); create a new object"
            )
        return method(self, *args, **kwargs)

    return guarded
