"""Results of a stateful host FFT handed out again once the caller has dropped them (the compiled runner,
``_core/_fast/_hot_host.c``; the rule is in ``_core/recycle.py``): a result is reused only when nothing but the
runner reaches it (no name, container, view, buffer, ctypes object or weak reference) and it is as it was made;
every reused result holds the new transform; ``CUMATH_RECYCLE_RESULTS=0`` and large results get new memory."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cumath.fft as F
from cumath._core import _fast, recycle
from helpers.matrix import random_array, with_layout
from helpers.reference import assert_close, fft_ref, ifft_ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(_fast.hot_runner is None, reason="the C extension is not built (ctypes fallback)")


def addr(y) -> int:
    return y.__array_interface__["data"][0]


def planned(x, **options):
    f = F.FFT(x, options=options or None)
    f.plan()
    return f


def runner(f):
    return f._executor.__dict__["execute"]


def test_a_dropped_result_is_reused_and_holds_the_new_transform():
    values = random_array((97,), "complex128")
    with planned(values.copy()) as f:
        assert runner(f).recycle == 1
        first = f.execute()
        p = addr(first)
        del first
        other = random_array((97,), "complex128")
        f.reset_operand(other)
        y = f.execute()
        assert addr(y) == p  # nothing referred to it: the same memory again
        assert_close(y, fft_ref(other), "complex128")
        z = f.execute(direction="inverse")
        assert addr(z) != p and not np.shares_memory(y, z)  # y is held: never overwritten
        assert_close(y, fft_ref(other), "complex128")
        assert_close(z, ifft_ref(other), "complex128")


def test_a_loop_that_holds_the_previous_result_alternates_two_buffers():
    x = random_array((64,), "complex128")
    ref = fft_ref(x)
    with planned(x) as f:
        seen = set()
        prev = None
        for _ in range(8):
            y = f.execute()
            assert prev is None or not np.shares_memory(y, prev)
            assert_close(y, ref, "complex128")
            seen.add(addr(y))
            prev = y
        assert len(seen) == 2 and runner(f).kept() == 2


def _kept_alive(kind, y):
    """Something that reaches ``y`` without a name for it, or changes it in place."""
    if kind == "view":
        return y[1:]
    if kind == "list":
        return [y]
    if kind == "memoryview":
        return memoryview(y)
    if kind == "ctypes":
        return y.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
    if kind == "weakref":
        return weakref.ref(y)
    if kind == "dlpack":
        return y.__dlpack__()
    if kind == "readonly":
        y.flags.writeable = False
        return None
    if kind == "reshape":
        y.shape = (y.size // 2, 2)
        return None
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["view", "list", "memoryview", "ctypes", "weakref", "dlpack", "readonly",
                                  "reshape"])
def test_results_still_reached_or_changed_are_never_reused(kind):
    x = random_array((30,), "complex128")
    with planned(x.copy()) as f:
        y = f.execute()
        keep = _kept_alive(kind, y)
        saved = np.array(y, copy=True).reshape(-1)
        p = addr(y)
        del y
        for _ in range(3):
            new = random_array((30,), "complex128")
            f.reset_operand(new)
            o = f.execute()
            assert_close(o, fft_ref(new), "complex128")
            assert o.shape == (30,) and o.flags.writeable  # never the changed array
            del o
        if kind == "weakref":
            assert keep() is None  # let go at the next call (its memory may then serve anyone, as freed memory)
        elif kind in ("readonly", "reshape"):
            assert keep is None
        else:  # still reached: never written
            seen = np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctypes.c_double)), (60,)).view(np.complex128)
            np.testing.assert_array_equal(seen, saved)
        del keep


def test_the_weak_reference_callback_runs_when_the_result_is_let_go():
    x = random_array((12,), "complex128")
    died = []
    with planned(x) as f:
        y = f.execute()
        w = weakref.ref(y, lambda _: died.append(True))
        del y
        gc.collect()
        f.execute()
        assert died == [True] and w() is None


def test_free_and_release_let_the_kept_results_go():
    x = random_array((40,), "complex128")
    f = planned(x)
    r = runner(f)
    f.execute()
    f.execute()
    assert r.kept() == 1  # each result dropped at once: one buffer serves every call
    assert f._executor.nbytes >= 2 * 40 * 16  # the two results it may keep are counted
    f.free()
    assert r.kept() == 0


def test_large_results_and_the_off_switch_get_new_memory(monkeypatch):
    x = random_array((33,), "complex128")
    monkeypatch.setattr(recycle, "COMPILED_HOST_BYTES", 33 * 16 - 1)
    with planned(x) as f:
        assert runner(f).recycle == 0
        y = f.execute()
        p = addr(y)
        del y
        assert_close(f.execute(), fft_ref(x), "complex128")
        assert runner(f).kept() == 0
    monkeypatch.setattr(recycle, "COMPILED_HOST_BYTES", 33 * 16)
    with planned(x) as f:
        assert runner(f).recycle == 1
    monkeypatch.setattr(recycle, "COMPILED", False)
    with planned(x) as f:
        assert runner(f).recycle == 0
        del p


def test_the_environment_switch_in_a_subprocess():
    code = textwrap.dedent("""
        import numpy as np, cumath.fft as F
        x = np.arange(1.0, 17.0) * (1 - 0.5j)
        f = F.FFT(x)
        f.plan()
        y = f.execute(); p = y.__array_interface__["data"][0]; del y
        print(f._executor.execute.recycle, f._executor.execute.kept())
    """)
    for value, want in (("0", "0 0"), ("off", "0 0"), ("1", "1 1"), ("", "1 1")):
        env = dict(os.environ, CUMATH_RECYCLE_RESULTS=value, PYTHONPATH=ROOT)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[-2:] == want.split(), (value, out.stdout)


def test_stateless_calls_always_return_new_memory():
    x = random_array((48,), "complex128")
    y = F.fft(x)
    del y
    outs = [F.fft(x) for _ in range(4)]
    assert len({addr(o) for o in outs}) == 4


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 70), layout=st.sampled_from(["C", "reversed", "step"]), calls=st.integers(1, 6),
       hold=st.lists(st.booleans(), min_size=6, max_size=6), single=st.booleans())
def test_property_reused_results_equal_numpy_and_held_ones_stay(n, layout, calls, hold, single):
    dtype = "complex64" if single else "complex128"
    values = random_array((3, n), dtype)
    with planned(with_layout(values, layout)) as f:
        held = []
        for i in range(calls):
            new = random_array((3, n), dtype)
            f.reset_operand(with_layout(new, layout))
            y = f.execute()
            assert_close(y, fft_ref(new), dtype)
            if hold[i]:
                held.append((y, np.array(y, copy=True)))
            del y
        for y, saved in held:
            np.testing.assert_array_equal(y, saved)  # never written after it was handed out
