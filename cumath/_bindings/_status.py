"""One status check for every library: turn a non-zero status into the library's typed error."""

from __future__ import annotations

import enum

__all__ = ["make_checker"]


def make_checker(error_class, status_enum: type[enum.IntEnum], success: int = 0):
    """Return ``check(status)``: returns None for ``success``, raises ``error_class(status, NAME)`` otherwise."""
    names = {int(m): m.name for m in status_enum}

    def check(status: int, detail: str | None = None) -> None:
        if status != success:
            raise error_class(status, names.get(int(status)), detail)

    return check
