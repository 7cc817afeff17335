"""Options are frozen, keyword-only dataclasses accepted as the object, a dict or None."""

from __future__ import annotations

import dataclasses

__all__ = ["check_options", "check_choice"]


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
