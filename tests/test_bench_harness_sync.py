"""The benchmark harness refuses a sync function that returns a function (``device_sync`` passed instead of
``device_sync()``): no sample would wait for the GPU, and calibration would pick its call counts from launch
times."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import harness  # noqa: E402


def test_sync_factory_is_refused():
    with pytest.raises(TypeError, match=r"device_sync\(\)"):
        harness.measure({"x": lambda: None}, sync=lambda: (lambda: None), number=1, rounds=1)


def test_sync_is_called_around_every_sample():
    calls = []
    out = harness.measure({"x": lambda: calls.append("f")}, sync=lambda: calls.append("s"), number=3, rounds=2)
    assert out["x"].number == 3 and len(out["x"].samples) == 4
    body = calls[2:]  # after the warm-up call and its sync
    assert body == ["s", "f", "f", "f", "s"] * 4
