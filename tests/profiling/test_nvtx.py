"""NVTX ranges: off by default (one bool test), named after the operation and its shape when a profiler is on."""

import subprocess
import sys

import numpy as np
import pytest

import cumath
from cumath._core import nvtx


class FakeNVTX:
    def __init__(self):
        self.events = []

    class _Fn:
        def __init__(self, owner, kind):
            self.owner, self.kind = owner, kind

        def __call__(self, *args):
            self.owner.events.append((self.kind, args[0].decode() if args else None))
            return 0

    @property
    def nvtxRangePushA(self):
        return self._Fn(self, "push")

    @property
    def nvtxRangePop(self):
        return self._Fn(self, "pop")


@pytest.fixture
def fake(monkeypatch):
    lib = FakeNVTX()
    monkeypatch.setattr(nvtx, "_lib", lib)
    monkeypatch.setattr(nvtx, "ENABLED", True)
    return lib


def test_off_by_default_in_a_fresh_process():
    code = "import cumath._core.nvtx as n; print(n.ENABLED, n.range('x') is n.NULL)"
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("CUMATH_NVTX", "NVTX_INJECTION64_PATH")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", "True"]


@pytest.mark.parametrize("value,expected", [("1", "True"), ("0", "False")])
def test_environment_switch(value, expected):
    import os

    env = dict(os.environ, CUMATH_NVTX=value, NVTX_INJECTION64_PATH="/nonexistent")
    out = subprocess.run([sys.executable, "-c", "import cumath._core.nvtx as n; print(n.ENABLED)"],
                         capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == expected


def test_ranges_name_the_operation_and_shape(fake):
    x = np.random.default_rng(1).standard_normal(13) + 0j
    y = cumath.fft.fft(x, options={"fft_type": "C2C"})
    assert np.allclose(y, np.fft.fft(x))
    pushes = [name for kind, name in fake.events if kind == "push"]
    assert any(n.startswith("cumath FFT (stateless call) complex128[13]") for n in pushes), pushes
    assert any(n.startswith("cumath FFT.plan complex128[13]") for n in pushes), pushes
    assert sum(k == "push" for k, _ in fake.events) == sum(k == "pop" for k, _ in fake.events)
    fake.events.clear()
    cumath.fft.fft(x, options={"fft_type": "C2C"})  # a cached hit: one range for the call, no plan
    assert [n for k, n in fake.events if k == "push"] == ["cumath FFT (stateless call) complex128[13]"]


def test_ranges_on_matmul(fake):
    a = np.random.default_rng(2).standard_normal((5, 7))
    cumath.linalg.matmul(a, a.T)
    pushes = [name for kind, name in fake.events if kind == "push"]
    assert any("Matmul" in n and "float64[5, 7]" in n for n in pushes), pushes


def test_missing_library_turns_ranges_off(monkeypatch):
    from cumath._bindings import _loader
    from cumath.errors import LibraryNotFoundError

    monkeypatch.setattr(nvtx, "_lib", None)
    monkeypatch.setattr(nvtx, "ENABLED", True)

    def missing(name):
        raise LibraryNotFoundError("no NVTX here")

    monkeypatch.setattr(_loader, "load_library", missing)
    assert nvtx.range("x") is nvtx.NULL
    assert nvtx.ENABLED is False
    assert np.allclose(cumath.fft.fft(np.ones(4, complex)), np.fft.fft(np.ones(4)))


def test_disabled_range_is_shared_and_cheap():
    import timeit

    nvtx.enable(False)
    assert nvtx.range("a") is nvtx.range("b") is nvtx.NULL
    per = min(timeit.repeat("n.ENABLED", globals={"n": nvtx}, number=100000, repeat=3)) / 100000
    assert per < 1e-6  # one attribute read


@pytest.mark.gpu
def test_real_library_on_the_gpu_machine(monkeypatch, cufft_device):
    """With the NVTX library of the CUDA wheels (no profiler attached), ranges push and pop without error."""
    from cumath.errors import LibraryNotFoundError

    monkeypatch.setattr(nvtx, "_lib", None)
    monkeypatch.setattr(nvtx, "ENABLED", True)
    try:
        from cumath._bindings._loader import load_library

        load_library("nvtx")
    except LibraryNotFoundError:
        pytest.skip("no NVTX library installed")
    with nvtx.range("cumath test range"):
        pass
    assert nvtx.ENABLED
