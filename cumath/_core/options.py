"""Options are keyword-only dataclasses accepted as the object, a dict or None.

Options take part in plan-cache keys, so what a plan sees must not change under it. nvmath-python's option
objects can nevertheless be modified after construction (``o.memory_limit = 0.9``); classes decorated with
:func:`settable` allow that: an assignment is validated as the constructor validates it, and the operations
work on a frozen snapshot of the object taken when they receive it (:func:`check_options`), so a later
assignment affects later calls only.
"""

from __future__ import annotations

import dataclasses

__all__ = ["check_options", "check_choice", "set_choice", "check_enum", "check_allocator", "settable", "snapshot"]


def check_options(options, cls, what: str = "options"):
    """Return an instance of ``cls`` from ``options`` (an instance, a dict of its fields, or None); a settable
    instance is returned as its frozen snapshot."""
    if options is None:
        return cls()
    if isinstance(options, cls):
        return snapshot(options)
    if isinstance(options, dict):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise TypeError(
                f"unknown {what} {unknown} for {cls.__name__}; the allowed names are {sorted(names)}"
            )
        return cls(**options)
    raise TypeError(f"{what} must be a {cls.__name__}, a dict of its fields or None, not {type(options).__name__}")


def check_choice(name: str, value, allowed):
    """``value`` if it is one of ``allowed``; a string matches a string choice in any case and is returned
    spelled as the choice is ('C2C' for 'c2c'). ValueError naming the allowed values otherwise."""
    if value in allowed:
        return value
    if isinstance(value, str):
        folded = value.casefold()
        for choice in allowed:
            if isinstance(choice, str) and choice.casefold() == folded:
                return choice
    raise ValueError(f"{name}={value!r} is not supported; the allowed values are {list(allowed)} (in any case)")


def set_choice(obj, name: str, allowed) -> None:
    """In a dataclass's ``__post_init__``: check the field ``name`` with :func:`check_choice` and store the
    choice as spelled in ``allowed`` (so 'NATURAL' is kept as 'natural' and options compare equal)."""
    value = getattr(obj, name)
    choice = check_choice(name, value, allowed)
    if choice is not value:
        object.__setattr__(obj, name, choice)


def check_enum(name: str, value, cls):
    """``value`` as a member of the enum ``cls``: the member itself, its int value, or its name in any case (None
    stays None); ValueError naming the allowed members otherwise."""
    if value is None or type(value) is cls:
        return value
    if isinstance(value, str):
        member = cls.__members__.get(value.upper())
        if member is not None:
            return member
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            pass
    raise ValueError(f"{name}={value!r} is not supported; the allowed values are "
                     f"{[f'{cls.__name__}.{m.name}' for m in cls]} (or their names as strings, in any case)")


def check_allocator(value, name: str = "allocator"):
    """None or a device memory manager (an object with ``memalloc(size)`` or ``memalloc_async(size, stream)``,
    see :mod:`cumath.memory`); TypeError otherwise, raised when the options are made."""
    if value is None or callable(getattr(value, "memalloc_async", None)) or callable(getattr(value, "memalloc", None)):
        return value
    raise TypeError(f"{name} must be a memory manager with memalloc(size) or memalloc_async(size, stream) (see "
                    f"cumath.memory, e.g. cumath.memory.CudaRuntimeMemoryManager(device_id)) or None, not "
                    f"{type(value).__name__}")


# ------------------------------------------------------------------------------------------- settable options
_SNAPSHOT = "_snapshot"  # the frozen copy of a settable instance, made on first use, dropped on assignment
_FROZEN = "_frozen"      # set in a snapshot's __dict__: it refuses assignments


def _setattr(self, name, value):
    if self.__dict__.get(_FROZEN):
        raise dataclasses.FrozenInstanceError(
            f"these {type(self).__name__} belong to a planned operation and cannot change; modify the object "
            f"you passed (or a copy) and give it to a new call")
    if name not in self.__dataclass_fields__:
        raise AttributeError(f"{type(self).__name__} has no option {name!r}; the options are "
                             f"{sorted(self.__dataclass_fields__)}")
    checked = dataclasses.replace(self, **{name: value})  # the constructor's checks (and normalisations)
    for field in dataclasses.fields(self):
        object.__setattr__(self, field.name, checked.__dict__[field.name])
    self.__dict__.pop(_SNAPSHOT, None)
    self.__dict__.pop("_hash", None)


def _delattr(self, name):
    raise AttributeError(f"options of {type(self).__name__} cannot be deleted; assign the default instead")


def _getstate(self):
    state = {k: v for k, v in self.__dict__.items() if k not in (_SNAPSHOT, _FROZEN, "_hash")}
    return state


def _hash(self):
    h = self.__dict__.get("_hash")
    if h is None:  # the fields that take part in equality, hashed once per state (an assignment drops it)
        h = hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self) if f.compare))
        object.__setattr__(self, "_hash", h)
    return h


def settable(cls):
    """Class decorator for a ``frozen=True`` options dataclass: instances accept attribute assignment (checked
    as the constructor checks its arguments); :func:`snapshot` gives the frozen copy operations key on; the hash
    is computed once per state."""
    cls.__setattr__ = _setattr
    cls.__hash__ = _hash
    cls.__delattr__ = _delattr
    cls.__getstate__ = _getstate
    cls._settable = True
    return cls


def snapshot(options):
    """The frozen copy of a settable options object (made once per state of the object); others unchanged."""
    if not getattr(type(options), "_settable", False) or options.__dict__.get(_FROZEN):
        return options
    copy = options.__dict__.get(_SNAPSHOT)
    if copy is None:
        copy = object.__new__(type(options))
        for field in dataclasses.fields(options):
            object.__setattr__(copy, field.name, options.__dict__[field.name])
        object.__setattr__(copy, _FROZEN, True)
        object.__setattr__(options, _SNAPSHOT, copy)
    return copy
