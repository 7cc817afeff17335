"""The compiled hit path of the stateless advanced matmul (``hot_mm`` in cumath/_core/_fast) on the CPU stand-in of
cuBLASLt (tests/linalg/advanced/fake_cublaslt.py) with torch-like GPU operands: served calls equal NumPy's and
the Python path's, and everything it cannot prove equal goes to the Python path."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath._core import _fast
from cumath.config import plan_cache
from cumath.linalg.advanced import _functions
from helpers.hot_paths import FakeCudaTensor, fake_gpu_tensors, run_gpu_check, spy_cached_call

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "linalg", "advanced"))
from fake_cublaslt import fake_library  # noqa: E402,F401 - an autouse fixture: cuBLASLt in NumPy

pytestmark = pytest.mark.skipif(_fast.hot_mm is None, reason="the C extension is not built (ctypes fallback)")
RNG = np.random.default_rng(5)


@pytest.fixture
def fake(monkeypatch):
    with fake_gpu_tensors(monkeypatch):
        yield


@pytest.fixture
def python_path(monkeypatch):
    return spy_cached_call(monkeypatch, _functions)


def table():
    return plan_cache._local.cache.fast


def r(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def close(d, ref):
    d = np.asarray(d)
    assert d.shape == ref.shape
    assert np.linalg.norm(d - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.parametrize("shapes", [((64, 64), (64, 64)), ((7, 5), (5, 3)), ((13, 17), (17, 1)), ((3, 7, 5), (5, 2))])
def test_served_calls_equal_numpy(fake, python_path, shapes):
    a, b = r(shapes[0]), r(shapes[1])
    A, B = FakeCudaTensor(a), FakeCudaTensor(b)
    outs = [la.matmul(A, B) for _ in range(4)]
    assert len(python_path) == 1 and table().hits == 3
    for d in outs:
        close(d, np.matmul(a, b))
    assert not np.shares_memory(outs[2], outs[3])
    assert plan_cache.stats()["hits"] == 3 and plan_cache.stats()["misses"] == 1


def _at(values, offset):
    """``values`` copied to an address ``offset`` bytes past a 256-byte boundary."""
    raw = np.empty(values.nbytes + 512, dtype=np.uint8)
    start = (-raw.ctypes.data) % 256 + offset
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def test_new_operands_of_the_key_are_read_every_call(fake):
    a, b = r((9, 4)), r((4, 6))
    la.matmul(FakeCudaTensor(_at(a, 0)), FakeCudaTensor(_at(b, 0)))
    for _ in range(3):  # new arrays of the planned alignment (256 bytes): served
        a2, b2 = r((9, 4)), r((4, 6))
        close(la.matmul(FakeCudaTensor(_at(a2, 0)), FakeCudaTensor(_at(b2, 0))), a2 @ b2)
    assert table().hits == 3


def test_what_it_does_not_serve(fake, python_path):
    a, b, c = r((6, 5)), r((5, 4)), r((6, 4))
    A, B = FakeCudaTensor(a), FakeCudaTensor(b)
    la.matmul(A, B)
    close(la.matmul(A, B, alpha=2.0), 2.0 * (a @ b))  # a non-default argument: the Python path
    assert table().hits == 0
    # the previous call left alpha = 2 on the plan: the compiled path declines, and the Python path sets it back
    close(la.matmul(A, B), a @ b)
    assert len(python_path) == 3
    close(la.matmul(A, B), a @ b)
    assert table().hits == 1
    close(la.matmul(A, B, FakeCudaTensor(c), beta=0.5), a @ b + 0.5 * c)
    close(la.matmul(a, b), a @ b)  # host operands (staged): never served
    la.matmul(a, b)
    hits = table().hits
    close(la.matmul(FakeCudaTensor(a, neg=True), B), a @ b)  # a lazily negated tensor is not read in C
    assert table().hits == hits


def test_a_misaligned_operand_takes_the_python_path(fake, python_path):
    a, b = r((8, 8)), r((8, 8))
    A, B = FakeCudaTensor(_at(a, 0)), FakeCudaTensor(_at(b, 0))
    close(la.matmul(A, B), a @ b)  # planned for 256-byte aligned operands
    close(la.matmul(A, B), a @ b)
    assert len(python_path) == 1 and table().hits == 1
    close(la.matmul(FakeCudaTensor(_at(a, 4)), B), a @ b)  # 4 bytes off the planned alignment
    assert len(python_path) == 2 and table().hits == 1


def test_eviction_and_clear_drop_its_entries(fake):
    old = plan_cache.max_plans
    try:
        plan_cache.set_limits(max_plans=1)
        a, b = r((4, 4)), r((4, 4))
        a2, b2 = r((5, 5)), r((5, 5))
        for _ in range(2):
            close(la.matmul(FakeCudaTensor(a), FakeCudaTensor(b)), a @ b)
            close(la.matmul(FakeCudaTensor(a), FakeCudaTensor(b)), a @ b)
            close(la.matmul(FakeCudaTensor(a2), FakeCudaTensor(b2)), a2 @ b2)
        assert len(table()) <= 1 and set(table().keys) <= set(plan_cache._local.cache.entries)
        plan_cache.clear()
        assert len(table()) == 0
    finally:
        plan_cache.set_limits(max_plans=old)


def test_disabled_cache_is_not_read(fake, python_path):
    a, b = r((3, 3)), r((3, 3))
    A, B = FakeCudaTensor(a), FakeCudaTensor(b)
    la.matmul(A, B)
    plan_cache.enabled = False
    try:
        close(la.matmul(A, B), a @ b)
    finally:
        plan_cache.enabled = True
    assert table().hits == 0 and len(python_path) == 2


def test_argument_errors():
    native = _fast._native
    with pytest.raises(TypeError, match="hot_mm"):
        native.hot_mm(1)
    with pytest.raises(TypeError, match="hot_put_mm"):
        native.hot_put_mm(1)
    assert native.hot_mm(np.zeros(2), np.zeros(2), 1) is None


GPU_CHECK = """
import cumath.linalg.advanced as la
rng = np.random.default_rng(4)
def check(d, ref):
    err = np.linalg.norm(d - ref) / np.linalg.norm(ref)
    assert err < 1e-3, err  # float32 (TF32 is off by default)
for m, k, n in [(64, 64, 64), (7, 5, 3), (33, 17, 9)]:
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    A, B = dev(a), dev(b)
    for x, y, ref in [(A, B, a @ b), (dev(np.ascontiguousarray(a.T)).T, B, a @ b)]:
        ds = [la.matmul(x, y) for _ in range(4)]
        sync()
        for d in ds:
            check(host(d), ref)
        assert len({ptr(d) for d in ds}) == 4
        check(host(la.matmul(x, y, alpha=2.0)), 2 * ref)
        for _ in range(2):
            d = la.matmul(x, y)
        sync()
        check(host(d), ref)
        with on_other():
            for _ in range(3):
                d = la.matmul(x, y)
            sync()
            check(host(d), ref)
    for _ in range(3):  # new operands of a cached key, read every call
        a2 = rng.standard_normal((m, k)).astype(np.float32)
        check(host(la.matmul(dev(a2), B)), a2 @ b)
"""


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["torch", "cupy"])
def test_gpu_stateless_matmul_hits_equal_numpy_in_a_subprocess(package):
    """Crash-class: CUDA operands of PyTorch and CuPy through the compiled matmul path, every result checked."""
    run_gpu_check(GPU_CHECK, package)
