"""No call writes into memory the caller can still reach unless the caller asked for it: every result is new
memory (results are reused only when ``CUMATH_RECYCLE_RESULTS=1`` asks for it), whatever the caller kept of
the previous ones (views, ``.real``, ``.T``, ``.base``, weak references, arrays in other threads)."""
import gc
import queue
import threading
import weakref

import numpy as np
import pytest

import cumath
from cumath._core import recycle
from helpers.matrix import random_array


@pytest.fixture(autouse=True)
def _default_recycling():
    assert recycle.RECYCLE is False  # the default of this test run (no CUMATH_RECYCLE_RESULTS)


X = random_array((6, 5), "complex128")

KEEPERS = {
    "row of an axes=[0] result": lambda y: y[0],
    ".real": lambda y: y.real,
    ".T": lambda y: y.T,
    ".base": lambda y: y if y.base is None else y.base,
    "slice": lambda y: y[1:, ::2],
}

CALLS = {
    "fft axes=[0]": lambda x: cumath.fft.fft(x, axes=[0]),
    "fft": lambda x: cumath.fft.fft(x),
    "ifft axes=[0]": lambda x: cumath.fft.ifft(x, axes=[0]),
    "rfft axes=[0]": lambda x: cumath.fft.rfft(x.real.copy(), axes=[0]),
    "matmul column-major": lambda x: cumath.linalg.matmul(np.asfortranarray(x.real), np.asfortranarray(x.imag.T)),
}


@pytest.mark.parametrize("keep", list(KEEPERS))
@pytest.mark.parametrize("call", list(CALLS))
def test_kept_parts_of_a_dropped_result_stay(call, keep):
    fn = CALLS[call]
    y = fn(X)
    part = KEEPERS[keep](y)
    snapshot = np.array(part, copy=True)
    del y
    gc.collect()
    for k in range(4):
        z = fn(X * (k + 2))
        assert not np.shares_memory(z, part)
    np.testing.assert_array_equal(part, snapshot)


def test_a_weak_reference_to_a_dropped_result_sees_it_unchanged_or_gone():
    y = cumath.fft.fft(X)
    w = weakref.ref(y)
    snapshot = y.copy()
    del y
    for k in range(4):
        cumath.fft.fft(X * (k + 2))
    assert w() is None or np.array_equal(w(), snapshot)


def test_stateful_execute_returns_new_memory_each_time():
    with cumath.fft.FFT(X, axes=[0]) as f:
        f.plan()
        views = []
        for k in range(5):
            v = f.execute()[1:]
            views.append((v, v.copy()))
        f.reset_operand(X * 3)
        f.execute()
        for v, snap in views:
            np.testing.assert_array_equal(v, snap)
        assert f.nbytes == 0  # nothing kept for reuse


def test_views_handed_to_another_thread_are_never_overwritten():
    q: queue.Queue = queue.Queue()
    bad = []

    def consumer():
        while (item := q.get()) is not None:
            view, snap = item
            if not np.array_equal(view, snap):
                bad.append(1)

    t = threading.Thread(target=consumer)
    t.start()
    for i in range(200):
        y = cumath.fft.fft(X * (i + 1), axes=[0])
        v = y[0]
        q.put((v, v.copy()))
        del y, v
    q.put(None)
    t.join()
    assert not bad, f"{len(bad)} of 200 views were overwritten"


def test_recycling_is_there_when_asked_for(recycling_on):
    with cumath.fft.FFT(X) as f:
        f.plan()
        first = f.execute().ctypes.data
        assert f.execute().ctypes.data == first  # dropped, then reused
