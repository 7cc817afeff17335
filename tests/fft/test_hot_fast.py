"""The compiled hit path of the stateless FFT functions (``hot_fft`` in cumath/_core/_fast): the results it serves
equal NumPy's, it serves only what it can prove equal to the Python path and falls back for the rest, and its
tables follow the plan cache (LRU order, stats, eviction, clear, enabled, threads)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cumath.fft as F
from cumath._core import _fast, nvtx
from cumath.config import plan_cache
from cumath.fft import _functions
from helpers.hot_paths import FakeCudaTensor, fake_gpu_tensors, run_gpu_check, spy_cached_call
from helpers.matrix import random_array, with_layout
from helpers.reference import assert_close, fft_ref, ifft_ref, rfft_ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(_fast.hot_fft is None, reason="the C extension is not built (ctypes fallback)")


@pytest.fixture(autouse=True)
def fresh_cache():
    plan_cache.clear()
    plan_cache.reset_stats()
    yield
    plan_cache.clear()


@pytest.fixture
def python_path(monkeypatch):
    return spy_cached_call(monkeypatch, _functions)


def table():
    return plan_cache._local.cache.fast


def served(fn, x, ref, dtype="complex128", calls=3):
    """Calls ``fn(x)`` ``calls`` times, each result checked against ``ref``; returns the compiled path's hits."""
    before = table().hits if getattr(plan_cache._local, "cache", None) is not None else 0
    results = []
    for _ in range(calls):
        y = fn(x)
        assert type(y) is np.ndarray
        assert_close(y, ref, dtype)
        results.append(y)
    # every result is new memory, none of it the operand's
    for i, y in enumerate(results):
        assert not np.shares_memory(y, x)
        assert all(not np.shares_memory(y, z) for z in results[i + 1:])
    return table().hits - before


@pytest.mark.parametrize("n", [2, 3, 16, 17, 97, 2048, 4099])
def test_sizes_are_served_and_equal_numpy(n, python_path):
    x = random_array((n,), "complex128")
    assert served(F.fft, x, fft_ref(x)) == 2
    assert len(python_path) == 1  # the first call planned; the others never reached Python's cache
    assert served(F.ifft, x, ifft_ref(x)) == 3  # the same plan, the other direction
    r = random_array((n,), "float64")
    assert served(F.rfft, r, rfft_ref(r)) == 2


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("layout", ["C", "F", "reversed", "step", "permuted"])
def test_layouts_and_batches(layout, dtype):
    values = random_array((3, 5, 7), dtype)
    x = with_layout(values, layout)
    assert served(F.fft, x, fft_ref(values), dtype) == 2
    real = random_array((4, 11), "float32" if dtype == "complex64" else "float64")
    xr = with_layout(real, layout)
    assert served(F.rfft, xr, rfft_ref(real), dtype) == 2


def test_read_only_operands_have_their_own_entries():
    x = random_array((6, 9), "complex128")
    ro = x.copy()
    ro.flags.writeable = False
    assert served(F.fft, x, fft_ref(x)) == 2
    assert served(F.fft, ro, fft_ref(x)) == 2  # a key of its own (readonly is in the plan cache key)
    assert plan_cache.stats()["plans"] == 2 and len(table()) == 2
    assert not ro.flags.writeable


def test_unaligned_operands_take_the_python_path(python_path):
    """An operand off its element alignment is copied by the Python path (the compiled one declines); one off
    the SIMD alignment only is run by the engine's any-alignment execute (no new plan per call)."""
    buf = np.empty(8 * 31 + 1, dtype=np.complex128)
    odd = buf.view(np.uint8)[3:3 + 16 * 31].view(np.complex128)  # 3 bytes off: not element-aligned
    odd[...] = random_array((31,), "complex128")
    assert served(F.fft, odd, fft_ref(odd)) == 0
    assert len(python_path) == 3
    half = buf.view(np.uint8)[8:8 + 16 * 31].view(np.complex128)  # element-aligned, off FFTW's 16 bytes
    half[...] = random_array((31,), "complex128")
    assert served(F.fft, half, fft_ref(half)) == 3  # the same key: the entry the Python path left serves it
    assert len(python_path) == 3


def test_non_default_arguments_and_other_types_take_the_python_path(python_path):
    x = random_array((12,), "complex128")
    F.fft(x)
    calls = [lambda: F.fft(x, axes=(0,)), lambda: F.fft(x, direction="forward"), lambda: F.fft(x, options={}),
             lambda: F.fft(x, execution="cpu"), lambda: F.fft(x.view(np.matrix)[0]),
             lambda: F.fft(np.asarray(x).view(type("Sub", (np.ndarray,), {})))]
    hits = table().hits
    for call in calls:
        assert_close(np.asarray(call()).ravel(), fft_ref(x), "complex128")
    assert table().hits == hits and len(python_path) == 1 + len(calls)


def test_irfft_and_inplace_are_never_served(python_path):
    c = random_array((5, 8), "complex128")
    for _ in range(3):
        F.irfft(c)
    assert table().hits == 0 and len(python_path) == 3
    x = random_array((10,), "complex128")
    expect = fft_ref(x)
    for _ in range(2):
        y = x.copy()
        assert F.fft(y, options={"inplace": True}) is y
        assert_close(y, expect, "complex128")
    assert table().hits == 0 and len(table()) == 0


def test_stats_count_its_hits_as_the_python_path_would():
    x = random_array((40,), "complex128")
    for _ in range(5):
        F.fft(x)
    assert plan_cache.stats() == {"hits": 4, "misses": 1, "evictions": 0, "plans": 1,
                                  "bytes": plan_cache.stats()["bytes"]}
    plan_cache.reset_stats()
    assert plan_cache.stats()["hits"] == 0 and table().hits == 0


def test_hits_keep_the_lru_order():
    old_limit = plan_cache.max_plans
    a, b, c = (random_array((n,), "complex128") for n in (21, 22, 23))
    try:
        plan_cache.set_limits(max_plans=2)
        F.fft(a), F.fft(b)
        F.fft(a)  # a hit of the compiled path: a is now the most recent
        assert table().hits == 1
        F.fft(c)  # evicts b, not a
        keys = list(plan_cache._local.cache.entries)
        assert [k[4] for k in keys] == [(21,), (23,)]
        assert sorted(k[4] for k in table().keys) == [(21,), (23,)]
    finally:
        plan_cache.set_limits(max_plans=old_limit)


def test_an_evicted_plans_entry_is_gone_before_the_plan_is_freed(monkeypatch):
    from cumath.fft._planner import FFT

    freed_while_served = []
    real_free = FFT.free

    def free(self):
        mine = plan_cache._local.cache
        freed_while_served.extend(e for e in mine.fast.entries.values() if e.key not in mine.entries)
        freed_while_served.extend(k for k in mine.fast.keys if k not in mine.entries)
        return real_free(self)

    monkeypatch.setattr(FFT, "free", free)
    old_limit = plan_cache.max_plans
    try:
        plan_cache.set_limits(max_plans=3)
        arrays = [random_array((n,), "complex128") for n in range(30, 40)]
        for _ in range(2):
            for x in arrays:
                for _ in range(2):
                    assert_close(F.fft(x), fft_ref(x), "complex128")
        assert len(table()) <= 3 and set(table().keys) <= set(plan_cache._local.cache.entries)
        plan_cache.clear()
        assert len(table()) == 0 and len(table().keys) == 0
    finally:
        plan_cache.set_limits(max_plans=old_limit)
    assert freed_while_served == []


def test_clear_and_disable_while_entries_exist(python_path):
    x = random_array((18,), "complex128")
    F.fft(x), F.fft(x)
    assert len(table()) == 1
    plan_cache.clear()
    assert len(table()) == 0
    assert_close(F.fft(x), fft_ref(x), "complex128")  # planned again through the Python path
    assert len(python_path) == 2
    F.fft(x)
    hits = table().hits
    plan_cache.enabled = False
    try:
        for _ in range(2):
            assert_close(F.fft(x), fft_ref(x), "complex128")
        assert table().hits == hits and len(python_path) == 4  # the disabled cache is not read, nor its table
    finally:
        plan_cache.enabled = True
    F.fft(x)
    assert table().hits == hits + 1


def test_a_profiler_turns_it_off(monkeypatch, python_path):
    x = random_array((14,), "complex128")
    F.fft(x)
    monkeypatch.setattr(nvtx, "ENABLED", True)
    monkeypatch.setattr(nvtx, "range", lambda name: __import__("contextlib").nullcontext())
    F.fft(x)
    assert table().hits == 0 and len(python_path) == 2
    monkeypatch.setattr(nvtx, "ENABLED", False)
    F.fft(x)
    assert table().hits == 1


def test_new_wisdom_sends_calls_through_the_engine_again():
    """Learnt wisdom empties a plan's execute entries; the compiled path then runs the engine's own execute,
    which plans again (never the emptied plan)."""
    x = random_array((45,), "complex128")
    F.fft(x), F.fft(x)
    entry = next(iter(table().entries.values()))
    entry.execs.clear()
    assert served(F.fft, x, fft_ref(x)) == 3


def test_recycled_results_are_not_served_here(monkeypatch):
    from cumath._core import recycle

    monkeypatch.setattr(recycle, "RECYCLE", True)
    x = random_array((19,), "complex128")
    for _ in range(3):
        assert_close(F.fft(x), fft_ref(x), "complex128")
    assert len(table()) == 0 and table().hits == 0


def test_threads_have_tables_of_their_own():
    errors, counts = [], {}
    barrier = threading.Barrier(4)

    def work(i):
        try:
            x = random_array((50 + i,), "complex128")
            ref = fft_ref(x)
            barrier.wait()
            for _ in range(50):
                assert_close(F.fft(x), ref, "complex128")
            counts[i] = (plan_cache.stats()["hits"], len(plan_cache._local.cache.fast))
            plan_cache.clear()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert counts == {i: (49, 1) for i in range(4)}


def test_a_thread_ending_frees_its_entries():
    box = []

    def work():
        x = random_array((33,), "complex128")
        F.fft(x), F.fft(x)
        box.append(plan_cache._local.cache.fast)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    gc.collect()
    assert len(box[0]) == 0 and len(box[0].keys) == 0


def test_engine_errors_propagate(monkeypatch):
    x = random_array((26,), "complex128")
    F.fft(x)
    entry = next(iter(table().entries.values()))
    saved = dict(entry.execs)

    def broken(plan, in_ptr, out_ptr):
        raise RuntimeError("engine failed")

    try:
        for sign, (_fn, plan) in saved.items():
            entry.execs[sign] = (broken, plan)
        with pytest.raises(RuntimeError, match="engine failed"):
            F.fft(x)
    finally:
        entry.execs.update(saved)
    assert_close(F.fft(x), fft_ref(x), "complex128")


def test_native_argument_errors():
    native = _fast._native
    with pytest.raises(TypeError, match="hot_fft"):
        native.hot_fft(1)
    with pytest.raises(TypeError, match="hot_put takes 11"):
        native.hot_put(1)
    with pytest.raises(TypeError, match="after hot_setup"):
        native.hot_put(*[None] * 11)
    with pytest.raises(TypeError, match="HotTable or None"):
        native.hot_attach(3)
    with pytest.raises(TypeError, match="no arguments"):
        native.HotTable(1)
    assert native.hot_fft(np.zeros(3), 0, -1, 1) is None  # a non-default argument: not served
    assert native.hot_fft([1, 2], 0, -1) is None  # not an ndarray


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), step=st.sampled_from([1, 2, -1]),
       real=st.booleans(), single=st.booleans())
def test_property_equals_numpy(shape, step, real, single):
    dtype = ("float32" if single else "float64") if real else ("complex64" if single else "complex128")
    values = random_array(tuple(shape), dtype)
    base = np.empty([n * abs(step) for n in shape], dtype=dtype)
    x = base[tuple(slice(None, None, step) for _ in shape)]
    x[...] = values
    out = "complex64" if single else "complex128"
    fn, ref = (F.rfft, rfft_ref(values)) if real else (F.fft, fft_ref(values))
    for _ in range(2):
        assert_close(fn(x), ref, out)


CHURN = """
import threading, numpy as np
import cumath.fft as F
from cumath.config import plan_cache
plan_cache.set_limits(max_plans=2)
rng = np.random.default_rng(1)
xs = [rng.standard_normal(n) + 1j * rng.standard_normal(n) for n in (7, 8, 9, 10, 11)]
refs = [np.fft.fft(x) for x in xs]
def work():
    for i in range(400):
        k = i % 5
        y = F.fft(xs[k])
        assert np.allclose(y, refs[k]), k
        if i % 37 == 0:
            plan_cache.clear()
        if i % 53 == 0:
            plan_cache.enabled = not plan_cache.enabled
ts = [threading.Thread(target=work) for _ in range(3)]
[t.start() for t in ts]; work(); [t.join() for t in ts]
plan_cache.enabled = True
print("ok", plan_cache.stats()["hits"] > 0)
"""


def test_churn_of_evictions_clears_and_switches_in_a_subprocess():
    """Crash-class: plans evicted, cleared and the cache switched off and on between compiled hits, in threads."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", CHURN], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split()[0] == "ok"


FALLBACK = """
import numpy as np
import cumath.fft as F
from cumath._core import _fast
from cumath.config import plan_cache
assert not _fast.NATIVE and _fast.hot_fft is None and _fast.hot_table() is None
x = np.random.default_rng(2).standard_normal(17) + 0j
for _ in range(3):
    assert np.allclose(F.fft(x), np.fft.fft(x))
    assert np.allclose(F.rfft(x.real), np.fft.rfft(x.real))
s = plan_cache.stats()
assert s["hits"] == 4 and s["misses"] == 2, s
plan_cache.clear()
print("ok")
"""


def test_the_ctypes_fallback_serves_the_same_calls():
    env = {**os.environ, "CUMATH_NATIVE": "0",
           "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(FALLBACK)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "ok"


GPU_CHECK = """
import cumath.fft as F
def check(y, ref):
    err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    assert err < 1e-12, err
for shape in [(2048,), (5, 17), (3, 31, 4)]:
    values = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    t = dev(values)
    views = [(t, values)]
    if len(shape) > 1:
        views.append((t.T, values.T))  # transposed
    views.append((t[..., ::2], values[..., ::2]))  # strided
    for x, v in views:
        ys = [F.fft(x) for _ in range(4)]
        sync()
        for y in ys:
            check(host(y), np.fft.fftn(v))
        assert len({ptr(y) for y in ys}) == 4  # new memory every call
        check(host(F.ifft(x)), np.fft.ifftn(v) * v.size)
        r = dev(np.ascontiguousarray(v.real))
        for _ in range(3):
            check(host(F.rfft(r)), np.fft.rfftn(v.real))
        with on_other():  # another current stream: a plan of its own, still right
            for _ in range(3):
                y = F.fft(x)
            sync()
            check(host(y), np.fft.fftn(v))
if pkg == "torch":
    z = dev(values).conj()  # lazily conjugated: the Python path resolves it
    for _ in range(3):
        check(host(F.fft(z)), np.fft.fftn(values.conj()))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("package", ["torch", "cupy"])
def test_gpu_stateless_hits_equal_numpy_in_a_subprocess(package):
    """Crash-class: CUDA tensors of PyTorch and CuPy through the compiled hit path (contiguous, transposed, strided,
    R2C, another current stream, lazy conjugation), every result checked against NumPy."""
    run_gpu_check(GPU_CHECK, package)


# ------------------------------------------------------------------------------------------- stateful execute

def _runner_of(f):
    return f._executor.__dict__.get("execute")


@pytest.mark.parametrize("layout", ["C", "F", "reversed", "step"])
def test_stateful_execute_runs_as_one_c_call(layout):
    values = random_array((5, 13), "complex128")
    x = with_layout(values, layout)
    with F.FFT(x) as f:
        f.plan()
        assert type(_runner_of(f)).__name__ == "HotEntry"
        outs = [f.execute() for _ in range(3)]
        for y in outs:
            assert_close(y, fft_ref(values), "complex128")
            assert not np.shares_memory(y, x)
        assert not np.shares_memory(outs[0], outs[1])
        assert_close(f.execute(direction="inverse"), ifft_ref(values), "complex128")
        other = random_array((5, 13), "complex128")
        f.reset_operand(with_layout(other, layout))
        assert_close(f.execute(), fft_ref(other), "complex128")


def test_stateful_execute_hands_unaligned_operands_to_python(monkeypatch):
    from cumath.fft._executors import HostExecutor

    calls = []
    real = HostExecutor.execute

    def spy(self, op, sign, stream=None):
        calls.append(op.ptr)
        return real(self, op, sign, stream)

    monkeypatch.setattr(HostExecutor, "execute", spy)
    x = random_array((29,), "complex128")
    buf = np.empty(16 * 29 + 8, dtype=np.uint8)
    odd = buf[5:5 + 16 * 29].view(np.complex128)
    odd[...] = random_array((29,), "complex128")
    with F.FFT(x) as f:
        f.plan()
        assert_close(f.execute(), fft_ref(x), "complex128")
        assert calls == []
        f.reset_operand(odd)
        assert_close(f.execute(), fft_ref(odd), "complex128")
        assert len(calls) == 1


def test_stateful_execute_without_a_runner_where_it_cannot_serve(monkeypatch):
    from cumath._core import recycle

    x = random_array((24,), "complex128")
    with F.FFT(x, options={"inplace": True}) as f:
        f.plan()
        assert _runner_of(f) is None
    c = random_array((4, 5), "complex128")
    with F.FFT(c, options={"fft_type": "C2R"}) as f:
        f.plan()
        assert _runner_of(f) is None
    monkeypatch.setattr(recycle, "RECYCLE", True)  # results reused on request: the runner itself reuses them
    with F.FFT(x) as f:
        f.plan()
        assert _runner_of(f).recycle == 1
        assert_close(f.execute(), fft_ref(x), "complex128")


def _python_calls(fn):
    """``fn()``'s result and the code objects of the Python functions it called (a profiler sees each call)."""
    codes = []

    def prof(frame, event, arg):
        if event == "call":
            codes.append(frame.f_code)

    sys.setprofile(prof)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, codes


def test_execute_without_arguments_is_run_from_c():
    method = F.FFT.execute.__wrapped__.__code__
    values = random_array((7, 11), "complex128")
    with F.FFT(values) as f:
        f.plan()
        y, codes = _python_calls(f.execute)
        assert_close(y, fft_ref(values), "complex128")
        assert method not in codes and codes == []  # no Python frame at all down to FFTW and back
        for kw in ({"direction": "forward"}, {"stream": None}, {"release_workspace": True}):
            y, codes = _python_calls(lambda: f.execute(**kw))
            assert method in codes
            assert_close(y, fft_ref(values), "complex128")
        y, codes = _python_calls(lambda: F.FFT.execute(f))  # the descriptor itself, given the instance
        assert method not in codes
        assert_close(y, fft_ref(values), "complex128")
        # results are new arrays exactly as numpy.empty makes them
        r1, r2 = f.execute(), f.execute()
        for r in (r1, r2):
            assert type(r) is np.ndarray and r.base is None and r.flags.owndata and r.flags.c_contiguous
            assert r.flags.writeable and r.dtype == np.complex128 and r.shape == (7, 11)
        assert not np.shares_memory(r1, r2)


def test_execute_method_states_and_introspection():
    import inspect

    from cumath.errors import InvalidStateError

    sig = inspect.signature(F.FFT.execute)
    assert list(sig.parameters) == ["self", "direction", "stream", "release_workspace"]
    assert F.FFT.execute.__doc__.startswith("Run the FFT")
    assert F.FFT.execute.__name__ == "execute" and F.FFT.execute.__qualname__ == "FFT.execute"
    x = random_array((9,), "complex128")
    f = F.FFT(x)
    assert list(inspect.signature(f.execute).parameters) == ["direction", "stream", "release_workspace"]
    with pytest.raises(InvalidStateError, match="plan"):
        f.execute()  # not planned: the Python method raises
    f.plan()
    f.release_operand()
    with pytest.raises(InvalidStateError, match="reset_operand"):
        f.execute()
    f.reset_operand(x)
    assert_close(f.execute(), fft_ref(x), "complex128")
    f.free()
    with pytest.raises(InvalidStateError):
        f.execute()
    with pytest.raises(TypeError, match="exec_method"):
        _fast._native.exec_method(1, "operand", "_default_sign")


def test_runner_argument_errors():
    native = _fast._native
    with pytest.raises(TypeError, match="hot_runner"):
        native.hot_runner(1)
    x = random_array((8,), "complex128")
    F.fft(x), F.fft(x)
    entry = next(iter(table().entries.values()))
    with pytest.raises(TypeError, match="not a runner"):
        entry(None, -1)


# ------------------------------------------------------------------------------------------- GPU execute (emulated)

from test_fft_emulated_gpu import device, emulated  # noqa: E402,F401 - cuFFT emulated in NumPy (a fixture)


def _dev_runner_of(f):
    return f._executor.__dict__.get("execute")


def test_gpu_execute_runs_as_one_c_call(emulated, monkeypatch):
    from cumath.fft._executors import DeviceExecutor

    slow = []
    real = DeviceExecutor.execute

    def spy(self, op, sign, stream):
        slow.append(stream)
        return real(self, op, sign, stream)

    monkeypatch.setattr(DeviceExecutor, "execute", spy)
    values = random_array((6, 10), "complex128")
    x = values.copy()
    with F.FFT(device(x), options={"allocator": emulated.alloc}) as f:
        f.plan()
        assert type(_dev_runner_of(f)).__name__ == "DevRunner"
        outs = [f.execute() for _ in range(3)]
        assert len(slow) == 1  # the first call binds the plan to its stream (the Python path), the others not
        for y in outs:
            assert_close(y, fft_ref(values), "complex128")
        assert not np.shares_memory(outs[1], outs[2])
        assert_close(f.execute(direction="inverse"), ifft_ref(values), "complex128")
        assert len(slow) == 1 and len(emulated.execs) == 4
        f._executor.backend.bound = "another stream"  # a plan not bound to the call's stream: Python binds it
        assert_close(f.execute(), fft_ref(values), "complex128")
        assert len(slow) == 2
        np.testing.assert_array_equal(x, values)


def test_gpu_execute_without_arguments_is_run_from_c(emulated):
    """On the plan's own stream, not blocking: no Python frame; an explicit stream or blocking=True: the method."""
    method = F.FFT.execute.__wrapped__.__code__
    values = random_array((6, 10), "complex128")
    with F.FFT(device(values.copy()), options={"allocator": emulated.alloc}) as f:
        f.plan()
        f.execute()  # binds the plan to its stream
        y, codes = _python_calls(f.execute)
        assert method not in codes
        assert_close(y, fft_ref(values), "complex128")
    with F.FFT(device(values.copy()), options={"allocator": emulated.alloc, "blocking": True}) as f:
        f.plan()
        for _ in range(2):
            y, codes = _python_calls(f.execute)
            assert method in codes
            assert_close(y, fft_ref(values), "complex128")


def test_gpu_execute_status_errors_are_raised(emulated, monkeypatch):
    from cumath.fft._backends import cufft as backend

    x = random_array((16,), "complex128")
    with F.FFT(device(x), options={"allocator": emulated.alloc}) as f:
        f.plan()
        f.execute()
        checked = []

        def check(status):
            checked.append(status)
            raise RuntimeError(f"cuFFT status {status}")

        be = f._executor.backend
        monkeypatch.setattr(be, "check", check)
        real_exec = emulated.execute
        emulated_status = [7]

        def failing(h, i, o, d):
            real_exec(h, i, o, d)
            return emulated_status[0]

        runner = f._executor.execute
        from cumath._core._fast import dev_runner

        f._executor.execute = dev_runner(be, f._executor._new_out, f._executor._pointer, failing,
                                         f._executor._misaligned, runner)
        with pytest.raises(RuntimeError, match="cuFFT status 7"):
            f.execute()
        assert checked == [7]
        emulated_status[0] = 0
        assert_close(f.execute(), fft_ref(x), "complex128")
        f._executor.execute = runner


def test_gpu_execute_keeps_the_python_path_where_it_must(emulated):
    """A misaligned R2C operand (a copy), callbacks passes, in place and layouts cuFFT cannot read stay in Python."""
    real = random_array((31,), "float64")
    buf = np.empty(32, dtype=np.float64)
    odd = buf[1:]  # 8 bytes off: not aligned to complex128
    odd[...] = real
    with F.FFT(device(odd), options={"fft_type": "R2C", "allocator": emulated.alloc}) as f:
        f.plan()
        assert type(_dev_runner_of(f)).__name__ == "DevRunner"
        for _ in range(2):
            assert_close(f.execute(), rfft_ref(real), "complex128")
    x = random_array((12,), "complex128")
    with F.FFT(device(x), options={"inplace": True, "allocator": emulated.alloc}) as f:
        f.plan()
        assert _dev_runner_of(f) is None
    with pytest.raises(TypeError, match="dev_runner"):
        _fast.dev_runner(1)
    with pytest.raises(TypeError, match="must be callable"):
        _fast.dev_runner(None, 1, 2, 3, 0, 5)


@pytest.fixture
def fake_gpu(emulated, monkeypatch):
    """Stateless calls on FakeCudaTensor: wrapped as GPU 0 operands, read by hot_fft as torch tensors are."""
    from cumath.fft import _executors

    monkeypatch.setattr(_executors, "default_allocator", lambda package, device_id: emulated.alloc)
    with fake_gpu_tensors(monkeypatch):
        yield emulated


def test_gpu_stateless_calls_are_served_in_c(fake_gpu, python_path):
    values = random_array((4, 15), "complex128")
    x = FakeCudaTensor(values.copy())
    outs = [F.fft(x) for _ in range(4)]
    assert len(python_path) == 1 and table().hits == 3  # planned (and bound) once, then served in C
    for y in outs:
        assert_close(y, fft_ref(values), "complex128")
    assert not np.shares_memory(outs[2], outs[3])
    assert_close(F.ifft(x), ifft_ref(values), "complex128")
    assert len(python_path) == 1 and table().hits == 4
    entry = next(iter(table().entries.values()))
    assert type(entry).__name__ == "GpuEntry" and type(entry.runner).__name__ == "DevRunner"
    # the plan not bound to the call's stream: the Python path binds it again
    plan = plan_cache._local.cache.entries[entry.key][0]
    plan._executor.backend.bound = "another stream"
    assert_close(F.fft(x), fft_ref(values), "complex128")
    assert len(python_path) == 2
    assert_close(F.fft(x), fft_ref(values), "complex128")
    assert len(python_path) == 2 and table().hits == 5 and plan_cache.stats()["hits"] == 6
    r = FakeCudaTensor(random_array((3, 8), "float64"))
    for _ in range(3):
        assert_close(F.rfft(r), rfft_ref(r.arr), "complex128")
    assert len(python_path) == 3
    plan_cache.clear()
    assert len(table()) == 0


def test_gpu_stateless_calls_it_cannot_serve(fake_gpu, python_path):
    values = random_array((9,), "complex128")
    x = FakeCudaTensor(values.copy(), neg=True)  # a lazily negated tensor: the Python path resolves it
    for _ in range(3):
        F.fft(x)
    assert table().hits == 0 and len(python_path) == 3
    y = FakeCudaTensor(values.copy())
    F.fft(y, options={"blocking": True})
    F.fft(y, options={"blocking": True})
    assert table().hits == 0


def test_torch_readers_leave_cpu_tensors_to_the_python_path(python_path):
    torch = pytest.importorskip("torch")
    saved = dict(_fast._READERS)
    try:
        assert _fast.hot_gpu_type(torch.Tensor, "torch")
        assert not _fast.hot_gpu_type(type("T", (torch.Tensor,), {}), "torch")  # subclasses: never read in C
        assert not _fast.hot_gpu_type(np.ndarray, "cupy") and not _fast.hot_gpu_type(list, "jax")
        values = random_array((3, 10), "complex128")
        t = torch.from_numpy(values.copy())
        for _ in range(3):
            assert_close(F.fft(t).numpy(), fft_ref(values), "complex128")
        assert len(python_path) == 3 and table().hits == 0  # a CPU tensor is not is_cuda: declined
    finally:
        _fast._READERS.clear()
        _fast._READERS.update(saved)
        _fast._native.hot_setup_gpu(_fast._READERS)
