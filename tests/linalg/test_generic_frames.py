"""The frame budget of a cached stateless matmul: at most four Python frames from ``cumath.linalg.matmul`` to the
library call (CBLAS on the CPU; cuBLAS, here its NumPy emulation, for GPU operands). A stub in place of the
library function records the Python frames above it."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import cumath.linalg as L
from cumath.config import plan_cache
from helpers.matrix import random_array
from test_generic_emulated_gpu import HostAllocator, device, emulation

MAX_FRAMES = 4


def _frames_to_matmul(frame) -> list:
    """The Python frames from ``frame`` up to (and including) the public ``matmul``, innermost first."""
    out = []
    while frame is not None:
        out.append(f"{frame.f_code.co_filename.rsplit('/', 3)[-1]}:{frame.f_code.co_name}")
        if frame.f_code is L.matmul.__code__:
            return out
        frame = frame.f_back
    raise AssertionError("the library was not called from cumath.linalg.matmul")


def test_cached_cpu_call_reaches_cblas_within_four_frames(monkeypatch):
    from cumath._bindings import blas

    lib = blas.find_blas("auto")
    real = lib.cblas_dgemm
    seen = []

    def stub(*args):
        seen.append(_frames_to_matmul(sys._getframe(1)))
        return real(*args)

    monkeypatch.setitem(lib.__dict__, "cblas_dgemm", stub)
    plan_cache.clear()
    a, b = random_array((64, 64), "float64"), random_array((64, 64), "float64")
    for alpha in (1.0, 1.0, 2.0):  # a miss, a hit, a hit with a new alpha
        np.testing.assert_allclose(L.matmul(a, b, alpha=alpha), alpha * (a @ b), rtol=1e-12)
    assert len(seen) == 3
    for frames in seen[1:]:
        assert len(frames) <= MAX_FRAMES, frames
    plan_cache.clear()


@pytest.fixture
def emulated(monkeypatch):
    yield from emulation(monkeypatch)


def test_cached_gpu_call_reaches_cublas_within_four_frames(emulated, monkeypatch):
    raw = emulated.raw
    seen = []

    def traced(name):
        fn = raw(name)

        def call(*args):
            if "gemm" in name:
                seen.append(_frames_to_matmul(sys._getframe(1)))
            return fn(*args)
        return call

    from cumath.linalg._backends import cublas as engine_mod

    monkeypatch.setattr(engine_mod.cublas, "raw", traced)
    plan_cache.clear()
    a, b = random_array((8, 5), "float64"), random_array((5, 3), "float64")
    options = {"allocator": HostAllocator()}
    for _ in range(3):
        r = L.matmul(device(a), device(b), options=options)
        np.testing.assert_allclose(r, a @ b, rtol=1e-12)
    assert len(seen) == 3
    for frames in seen[1:]:
        assert len(frames) <= MAX_FRAMES, frames
    plan_cache.clear()
