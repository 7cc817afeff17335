"""cumath._core.lazy: a package's attributes and submodules loaded on first use, once."""

from __future__ import annotations

import sys
import types

import pytest

from cumath._core.lazy import lazy_getattr


def test_attributes_and_submodules_load_once_and_stay():
    ns = {}
    get = lazy_getattr("cumath._core", ns, {"lazy_getattr": ".lazy", "Steps": ".nope"}, ("options",))
    assert get("lazy_getattr") is lazy_getattr and ns["lazy_getattr"] is lazy_getattr
    mod = get("options")
    assert mod is sys.modules["cumath._core.options"] and ns["options"] is mod
    with pytest.raises(AttributeError, match=r"module 'cumath._core' has no attribute 'missing'"):
        get("missing")
    with pytest.raises(ModuleNotFoundError):
        get("Steps")  # a table entry whose module is not there says so
    assert "Steps" not in ns


def test_device_packages_use_it():
    import cumath.device as device
    import cumath.device.random as random

    for pkg in (device, random):
        assert isinstance(pkg.__getattr__, types.FunctionType) and pkg.__getattr__.__module__ == "cumath._core.lazy"
    assert device.random is random and random.random_helpers.__name__ == "cumath.device.random.random_helpers"
    with pytest.raises(AttributeError, match="module 'cumath.device.random' has no attribute 'nope'"):
        random.nope
