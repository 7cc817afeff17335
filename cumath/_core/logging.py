"""Logging helpers: every module logs under the ``cumath`` hierarchy; options may carry their own logger."""

from __future__ import annotations

import logging

__all__ = ["get_logger", "format_bytes"]

logging.getLogger("cumath").addHandler(logging.NullHandler())


def get_logger(name: str, override: logging.Logger | None = None) -> logging.Logger:
    return override if override is not None else logging.getLogger(name)


def format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
