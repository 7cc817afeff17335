"""Lifetimes and states of stateful operations: one owner per native handle, idempotent free(), state guards.

A state is a name ("planned", "operands", a domain's own such as "factorized") that an operation class maps to
the attribute that holds it and to what the caller must do to reach it (``_STATES``). ``@requires(...)`` checks
them before a method runs and raises :class:`InvalidStateError` saying what to call first.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..errors import InvalidStateError

_Method = TypeVar("_Method", bound=Callable[..., Any])

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Stateful", "requires", "requires_alive", "release_quietly"]


def release_quietly(fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)``, a native release run by a finalizer (``weakref.finalize(owner, release_quietly, destroy,
    handle)``): at interpreter shutdown or with the CUDA context gone it may fail, and there is nobody to tell."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - interpreter shutdown, context gone
        pass


class Stateful:
    """Base of stateful objects: context manager, idempotent ``free()``, the state table the guards read.

    Subclasses implement ``_release()`` (free native resources; must tolerate partial construction) and
    register ``weakref.finalize`` safety nets for native handles in their backends.
    """

    _freed = False
    _planned = False
    #: state name -> (attribute that is truthy in that state, what to do to get there)
    _STATES: dict = {"planned": ("_planned", "needs a plan: call plan() first")}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
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

    def _not_ready(self, what: str, states=("planned",)):
        """Raise the InvalidStateError for ``what()`` called outside ``states`` (the first state missing)."""
        name = type(self).__name__
        if self._freed:
            raise InvalidStateError(f"{name}.{what}() was called after free(); create a new object")
        for state in states:
            attr, todo = self._STATES[state]
            if not getattr(self, attr):
                raise InvalidStateError(todo.format(what=what) if "{what}" in todo else f"{name}.{what}() {todo}")
        raise InvalidStateError(f"{name}.{what}() cannot run in this state")  # pragma: no cover


def requires(*states: str) -> Callable[[_Method], _Method]:
    """Decorator: the object must be alive (not freed) and in every one of ``states`` when the method runs."""
    def decorate(method: _Method) -> _Method:
        what = method.__name__

        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            if self._freed:
                self._not_ready(what)  # freed is the first thing every _not_ready reports
            for state in states:
                if not getattr(self, self._STATES[state][0]):
                    self._not_ready(what, states)
            return method(self, *args, **kwargs)

        return guarded  # type: ignore[return-value]  # same signature (functools.wraps)

    return decorate


requires_alive = requires()
