"""Options are frozen, keyword-only dataclasses accepted as the object, a dict or None."""

from __future__ import annotations

import dataclasses

__all__ = ["check_options", "check_choice", "check_enum"]


def check_options(options, cls, what: str = "options"):
    """Return an instance of ``cls`` from ``options`` (an instance, a dict of its fields, or None)."""
    if options is None:
        return cls()
    if isinstance(options, cls):
        return options
    if isinstance(options, dict):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise TypeError(
                f"unknown {what} {unknown} for {cls.__name__}; the allowed names are {sorted(names)}"
            )
        return cls(**options)
    raise TypeError(f"{what} must be a {cls.__name__}, a dict of its fields or None, not {type(options).__name__}")


def check_choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported; the allowed values are {list(allowed)}")


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
                     f"{[f'{cls.__name__}.{m.name}' for m in cls]} (or their names as strings)")
