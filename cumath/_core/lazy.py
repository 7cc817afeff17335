"""Attributes of a package loaded on first use (PEP 562): ``import cumath.<package>`` stays cheap and imports no
optional dependency; the first ``cumath.<package>.Name`` imports the module that defines it, once."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, namespace: dict, attributes: dict,
                 submodules: Sequence[str] = ()) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package`` (its ``__name__``; ``namespace``: its ``globals()``): a name of
    ``submodules`` imports ``package.<name>``; a name of ``attributes`` (name -> the relative module that defines
    it) imports that module and takes the attribute; either is kept in ``namespace``, so each loads once."""
    def __getattr__(name: str) -> object:
        if name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            source = attributes.get(name)
            if source is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(source, package), name)
        namespace[name] = value
        return value
    return __getattr__
