"""Lifetimes of cuDSS's objects against ``fake_cudss`` (which records every lifetime violation): many solvers made
and freed in random order with garbage collections between, solvers dropped without free(), destroyed streams,
another GPU current, threads, and processes that exit with live solvers (in a subprocess)."""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumath.sparse.advanced as S
from cumath.sparse.advanced._backends import _cudss_lifetime as lifetime
from fake_cudss import HostAllocator, device, device_csr
from sparse_cases import assert_solution, system

pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")

HERE = os.path.dirname(os.path.abspath(__file__))


def _solver(fake, n=6, seed=0, **kw):
    full = system(n, "float64", seed=seed)
    b = np.arange(1.0, n + 1)
    s = S.DirectSolver(device_csr(full), device(b), options={"allocator": HostAllocator(fake), **kw.pop("opts", {})},
                       **kw)
    s._keep = (full, b)  # the operands' memory stays alive with the solver
    return s


def _run(s):
    s.plan()
    s.factorize()
    x = s.solve()
    assert_solution(x, *s._keep, "float64")


def _alive(fake) -> tuple:
    return len(fake.configs), len(fake.datas), len(fake.matrices)


def test_many_solvers_freed_in_random_order(emulated):
    order = random.Random(7)
    solvers = []
    for i in range(24):
        s = _solver(emulated, n=5 + i % 4, seed=i)
        _run(s)
        solvers.append(s)
    assert len({s._executor.solver.handle for s in solvers}) == 1  # one handle for this thread
    order.shuffle(solvers)
    while solvers:
        s = solvers.pop()
        how = order.randrange(3)
        if how == 0:
            s.free()
        elif how == 1:
            with s:
                pass
        # else: dropped without free()
        del s
        if order.random() < 0.5:
            gc.collect()
        assert not emulated.violations
    gc.collect()
    lifetime.release_shared_handles()
    assert _alive(emulated) == (0, 0, 0) and not emulated.handles
    assert not emulated.violations


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["make", "free", "drop", "gc", "release", "solve"]), st.integers(0, 9)),
                max_size=25))
def test_any_order_of_lifetime_events(steps):
    import pytest as _pytest

    from fake_cudss import FakeCudss, install

    from cumath.config import plan_cache

    mp = _pytest.MonkeyPatch()
    try:
        plan_cache.clear()
        gc.collect()
        lifetime._graveyard.clear()
        lifetime._handles.clear()
        fake = FakeCudss()
        install(mp, fake)
        live = []
        for what, k in steps:
            if what == "make":
                s = _solver(fake, n=4 + k % 3, seed=k)
                _run(s)
                live.append(s)
            elif what in ("free", "drop", "solve") and live:
                s = live[k % len(live)]
                if what == "solve":
                    _run(s)
                    continue
                live.remove(s)
                if what == "free":
                    s.free()
                del s
            elif what == "gc":
                gc.collect()
            elif what == "release":
                lifetime.release_shared_handles()
                assert len(fake.handles) == 1 if live else len(fake.handles) <= 1  # dropped ones may await gc
            assert not fake.violations, fake.violations
        for s in live:
            _run(s)  # whatever happened to the others, the live ones still work
        live.clear()
        s = None
        gc.collect()
        lifetime.release_shared_handles()
        assert not fake.violations, fake.violations
        assert _alive(fake) == (0, 0, 0) and not fake.handles
    finally:
        plan_cache.clear()
        gc.collect()
        lifetime.release_shared_handles()
        lifetime._handles.clear()
        mp.undo()


def test_a_dropped_solver_is_destroyed_later_and_not_by_the_collector(emulated):
    s = _solver(emulated)
    _run(s)
    before = list(emulated.destroyed)
    del s
    gc.collect()
    assert emulated.destroyed == before  # the finalizer only made a note
    assert len(lifetime._graveyard) == 1
    s2 = _solver(emulated, seed=3)
    s2.plan()  # the next cuDSS solver's creation destroys it
    assert not lifetime._graveyard
    assert [kind for kind, _ in emulated.destroyed[len(before):]].count("data") == 1
    _run(s2)
    s2.free()
    s2.free()  # idempotent
    assert _alive(emulated) == (0, 0, 0)


def test_the_handle_outlives_its_objects(emulated):
    s = _solver(emulated)
    _run(s)
    h = s._executor.solver.handle
    lifetime.release_shared_handles()  # in use: kept
    assert h in emulated.handles
    s.free()
    lifetime.release_shared_handles()  # unused now: destroyed, after the objects made from it
    assert h not in emulated.handles
    kinds = [kind for kind, _ in emulated.destroyed]
    assert kinds.index("handle") > max(i for i, k in enumerate(kinds) if k != "handle")


def test_a_destroyed_stream_is_never_used_again(emulated, monkeypatch):
    import contextlib

    from cumath._core.frameworks import numpy as numpy_adapter

    monkeypatch.setattr(numpy_adapter, "stream_context", lambda device, stream: contextlib.nullcontext(),
                        raising=False)
    s = _solver(emulated, stream=4321)
    _run(s)
    h = s._executor.solver.handle
    assert emulated.streams[h] == 4321 and 4321 in emulated.pending
    emulated.dead_streams.add(4321)  # the caller destroyed its stream (its work was done: the event says so)
    s.free()  # waits for the solver's event, points the handle back at the default stream, then destroys
    assert emulated.streams[h] == 0 and 4321 not in emulated.pending
    s2 = _solver(emulated, seed=2)
    _run(s2)  # the same handle on the default stream
    s2.free()
    lifetime.release_shared_handles()
    assert not emulated.violations


def test_destroyed_with_the_handles_device_current(emulated):
    s = _solver(emulated)
    _run(s)
    emulated.current_device = 1  # the caller works on another GPU meanwhile
    s.free()
    assert emulated.current_device == 1  # and finds it current again
    assert not emulated.violations


def test_threads_have_their_own_handles_and_leave_them_behind(emulated):
    made = {}

    def work(name):
        s = _solver(emulated, seed=len(made))
        _run(s)
        made[name] = s

    t1 = threading.Thread(target=work, args=("a",))
    t1.start()
    t1.join()
    main = _solver(emulated, seed=5)
    _run(main)
    assert main._executor.solver.handle == made["a"]._executor.solver.handle  # t1 ended: its handle is reused
    barrier = threading.Barrier(2)

    def concurrent(name):
        barrier.wait()
        work(name)
        barrier.wait()

    threads = [threading.Thread(target=concurrent, args=(n,)) for n in "bc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hs = {made[n]._executor.solver.handle for n in "bc"}
    assert len(hs) == 2  # two live threads at once: two handles
    _run(made["b"])  # a solver made in another thread works here (the handle's lock)
    for s in list(made.values()) + [main]:
        s.free()
    made.clear()
    lifetime.release_shared_handles()
    assert not emulated.handles and not emulated.violations


_EXIT_SCRIPT = textwrap.dedent("""
    import atexit, gc, os, sys
    sys.path.insert(0, {here!r})
    import numpy as np
    import pytest
    from fake_cudss import FakeCudss, HostAllocator, device, device_csr, install
    from sparse_cases import system
    import cumath.sparse.advanced as S

    fake = FakeCudss()
    fake._violation = lambda what: os.write(2, ("VIOLATION " + what + "\\n").encode())
    install(pytest.MonkeyPatch(), fake)
    opts = {{"allocator": HostAllocator(fake)}}
    full = system(6, "float64", seed=1)
    b = np.ones(6)
    keep = []
    for i in range({count}):
        s = S.DirectSolver(device_csr(full), device(b), options=opts)
        s.plan(); s.factorize(); s.solve()
        keep.append(s)
    S.direct_solver(device_csr(full), device(b), options=opts)  # a cached plan too
    dropped = S.DirectSolver(device_csr(full), device(b), options=opts)
    dropped.plan()
    del dropped
    gc.collect()
    def exiting():
        fake.exiting = True
    atexit.register(exiting)  # registered last: runs first
    print("LIVE", len(fake.datas), flush=True)
    {mode}
""")


@pytest.mark.parametrize("mode", ["pass", "raise SystemExit(0)", "os.environ['X'] = '1'; keep.append(keep)"])
def test_a_process_exits_with_live_solvers(mode):
    script = _EXIT_SCRIPT.format(here=HERE, count=5, mode=mode)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), HERE, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "VIOLATION" not in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    if mode == "pass":
        assert "LIVE" in r.stdout


def test_a_collection_inside_another_solvers_calls_destroys_nothing(emulated, monkeypatch):
    """A solver freed (by a collection) in the middle of another's calls on the shared handle is destroyed
    after them: the interrupted sequence keeps its stream."""
    import contextlib

    from cumath._bindings import cudss as C
    from cumath._core.frameworks import numpy as numpy_adapter

    monkeypatch.setattr(numpy_adapter, "stream_context", lambda device, stream: contextlib.nullcontext(),
                        raising=False)
    victim = _solver(emulated, seed=1)
    _run(victim)
    other = _solver(emulated, seed=2, stream=555)
    other.plan()
    real = C.cudssExecute
    seen = []

    def execute(handle, phase, *args):
        if not seen:
            seen.append(phase)
            victim._executor.free()  # as an operation's finalizer would, from a collection right here
        assert emulated.streams[handle] == 555, "the interrupted sequence lost its stream"
        return real(handle, phase, *args)

    monkeypatch.setattr(C, "cudssExecute", execute)
    datas = len(emulated.datas)
    other.factorize()
    assert len(emulated.datas) == datas and len(lifetime._graveyard) == 1  # postponed
    x = other.solve()  # the next phase destroys it first
    assert len(emulated.datas) == datas - 1 and not lifetime._graveyard
    assert_solution(x, *other._keep, "float64")
    other.free()
    assert not emulated.violations


def test_solvers_on_many_streams_share_a_handle_in_order(emulated, monkeypatch):
    """Thirty solvers on thirty streams share this thread's handle: the work of each is ordered after the work
    queued through the handle on another stream (the fake flags overlapping work); twenty freed in random order,
    the handles released, the others moved to the default stream with a new b still solve right."""
    import contextlib

    from cumath._core.frameworks import numpy as numpy_adapter

    monkeypatch.setattr(numpy_adapter, "stream_context", lambda device, stream: contextlib.nullcontext(),
                        raising=False)
    order = random.Random(3)
    n = 31
    full = system(n, "float64", seed=4)
    a = device_csr(full)
    bh = np.random.default_rng(1).standard_normal(n)
    solvers = []
    for i in range(30):
        s = S.DirectSolver(a, device(bh), stream=1000 + i, options={"allocator": HostAllocator(emulated)})
        s.plan()
        s.factorize()
        assert_solution(s.solve(), full, bh, "float64")
        solvers.append(s)
    assert not emulated.violations, emulated.violations[:2]
    assert any(w for w in emulated.waits)  # the streams were ordered through events, not synchronized
    order.shuffle(solvers)
    for k, s in enumerate(solvers[:20]):
        if k % 3 == 0:
            s.free()
        elif k % 3 == 1:
            with s:
                pass
        if order.random() < 0.4:
            gc.collect()
    del solvers[:20], s
    gc.collect()
    lifetime.release_shared_handles()
    for s in solvers:
        b2 = bh * 2
        s.reset_operands(b=device(b2), stream=0)
        assert_solution(s.solve(), full, 2 * bh, "float64")
    assert not emulated.violations, emulated.violations[:2]
    for s in solvers:
        s.free()
    lifetime.release_shared_handles()
    assert not emulated.handles and not emulated.events
    assert not emulated.violations, emulated.violations[:2]


def test_a_phase_on_another_stream_is_joined_with_the_analysis_stream(emulated, monkeypatch):
    """cuDSS's data object keeps freeing and allocating its buffers on the stream it was analysed on, whatever
    stream the handle is set to later. A solve after ``reset_operands(b=..., stream=other)`` (the new b written
    on ``other``) must have that stream wait for ``other`` before the phase, and ``other`` (where the caller
    reads x) wait for it after: the fake flags either join missing. Same-stream phases need neither."""
    import contextlib

    from cumath._core.frameworks import numpy as numpy_adapter

    monkeypatch.setattr(numpy_adapter, "stream_context", lambda device, stream: contextlib.nullcontext(),
                        raising=False)
    n = 17
    full = system(n, "float64", seed=8)
    bh = np.random.default_rng(2).standard_normal(n)
    s = S.DirectSolver(device_csr(full), device(bh), stream=0xA0, options={"allocator": HostAllocator(emulated)})
    s.plan()
    s.factorize()
    assert_solution(s.solve(), full, bh, "float64")
    emulated.read(0xA0)
    assert not emulated.waits  # one stream: nothing joined
    for k, other in enumerate((0xB0, 0, 0xB0)):
        b2 = bh * (k + 2)
        emulated.queue(other)  # the caller writes the new b on ``other``
        s.reset_operands(b=device(b2), stream=other)
        if k == 2:
            s.factorize()  # a factorization there is joined alike
        x = s.solve()
        emulated.read(other)  # and reads x there
        assert_solution(x, full, b2, "float64")
    assert not emulated.violations, emulated.violations[:2]
    s.plan(stream=0xC0)  # a new analysis makes its stream the data object's own
    s.factorize()
    x = s.solve()
    emulated.read(0xC0)
    assert_solution(x, full, b2, "float64")
    s.free()
    lifetime.release_shared_handles()
    assert not emulated.violations, emulated.violations[:2]
    assert not emulated.events  # the join events went with the solver, the handle's with the handle
