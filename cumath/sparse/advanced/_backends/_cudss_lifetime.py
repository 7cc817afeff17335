"""Lifetimes of cuDSS's objects: handles, and the config, data and matrix objects a solver makes from one.

Rules (cuDSS data objects belong to the handle that made them; destroying them needs that handle alive, its
device current and no kernel of theirs still running):

- **Handles are kept for the process.** cumath's handles live in one table per (device, threading layer); a
  thread takes the handle it used before, else one whose thread has ended, else a new one, so the threads that
  run solvers at the same time each have their own and a thread that ends leaves its handle to the next one.
  A handle is destroyed only by ``release_shared_handles()`` (explicitly, in the caller's thread) once no solver
  uses it, never by a finalizer and never at interpreter exit (the driver frees what is left with the process).
  A caller's handle (``DirectSolverOptions.handle``) is used as given and never destroyed.
- **Every use of a handle holds its lock** (``with handle:``; cuDSS handles are not thread-safe and a solver may
  be used from any thread). A destroy asked for inside such a use in the same thread (a garbage collection
  that frees a solver in the middle of another's calls) is postponed to the next ``drain()``.
- **A solver's objects are destroyed before its handle can be, with the handle's device current, after an
  event recorded behind the solver's last work on its stream has completed, and with the handle's stream set
  back to the default stream** (the caller's stream may be gone by then). ``free()`` does it at once. A solver
  dropped without ``free()`` only has its objects put on a list by its finalizer (no native call from the
  garbage collector, which can run inside another cuDSS call, in any thread, or during shutdown): the list is
  emptied at the next cuDSS solver's creation, phase, ``free()`` or ``release_shared_handles()``. Nothing is
  destroyed once the interpreter is exiting (a hook made the last one registered whenever a solver is made runs
  first at exit and says so).
- **A data object keeps working on the stream it was analysed on** (its buffers are freed and allocated there in
  later phases): a phase on another stream is joined with that one both ways (``Objects.join``: the analysis
  stream waits for the phase's stream before it, the phase's stream for the analysis stream after it), with two
  events of the solver's, destroyed with its objects.
"""

from __future__ import annotations

import atexit
import collections
import logging
import sys
import threading
import weakref
from contextlib import contextmanager

from ...._bindings import cudart, cudss
from ...._core import cuda

__all__ = ["Handle", "Objects", "acquire", "caller_handle", "destroy", "bury", "drain", "release_shared_handles",
           "on_device"]

logger = logging.getLogger(__name__)



class Handle:
    """A cuDSS handle of ``device_id``, its lock and what was set on it once (threading layer, kernel cache,
    stream)."""

    def __init__(self, handle: int, own: bool, device_id: int):
        self.handle, self.own, self.device_id = handle, own, device_id
        self.lock = threading.RLock()
        self.users = 0  # solvers whose objects were made from it and are not destroyed yet
        self.owner = weakref.ref(threading.current_thread())
        self.threading = None  # (path asked for, loaded or not) once tried
        self.jit = False
        self.stream = None
        self.last = 0  # event recorded behind the last work queued through this handle (on any stream)
        self.last_stream = None  # the stream it was recorded on
        self.busy = 0  # depth of use() in the thread busy_thread
        self.busy_thread = None

    def __enter__(self):
        """Hold the lock for a sequence of calls (``with handle:``)."""
        self.lock.acquire()
        self.busy += 1
        self.busy_thread = threading.get_ident()
        return self

    def __exit__(self, *exc):
        self.busy -= 1
        if not self.busy:
            self.busy_thread = None
        self.lock.release()

    def in_use_here(self) -> bool:
        """True inside a ``with handle:`` of this thread (a garbage collection that runs there must not
        destroy anything: the sequence it interrupted relies on the handle's stream)."""
        return bool(self.busy) and self.busy_thread == threading.get_ident()

    def set_stream(self, stream: int) -> None:
        """Point the handle at ``stream`` (with its lock held), ordered after the work queued through the handle
        on another stream: the data objects of one handle share its workspace and internal library handles, so
        the work of two solvers on two streams (or of one solver moved to another stream) must not overlap."""
        if self.last and self.last_stream != stream:
            cudart.cudaStreamWaitEvent(stream, self.last)
        if stream != self.stream or not self.own:  # the caller's handle may have been given another meanwhile
            cudss.cudssSetStream(self.handle, stream)
            self.stream = stream

    def queued(self, stream: int) -> None:
        """Mark the end of the work just queued through the handle on ``stream`` (the next stream waits for it)."""
        if not self.last:
            self.last = cudart.cudaEventCreateWithFlags(cudart.cudaEventDisableTiming)
        cudart.cudaEventRecord(self.last, stream)
        self.last_stream = stream

    def drop_event(self) -> None:
        """Wait for and destroy the handle's event (before the handle is destroyed)."""
        if self.last:
            cudart.cudaEventSynchronize(self.last)
            cudart.cudaEventDestroy(self.last)
            self.last, self.last_stream = 0, None


_exiting = False


def _mark_exiting() -> None:
    global _exiting
    _exiting = True


def _arm_exit_flag() -> None:
    """Make ``_mark_exiting`` the last exit hook registered, so that it runs first at exit, before any other
    hook (the operations' finalizers among them) could free a solver."""
    atexit.unregister(_mark_exiting)
    atexit.register(_mark_exiting)


def exiting() -> bool:
    return _exiting or sys.is_finalizing()


_table_lock = threading.Lock()
_handles: dict = {}  # (device_id, threading layer path) -> [Handle]
_graveyard: collections.deque = collections.deque()  # Objects of solvers dropped without free()


def acquire(device_id: int, layer) -> Handle:
    """cumath's handle for this thread on ``device_id`` with threading layer ``layer`` (device current)."""
    me = threading.current_thread()
    _arm_exit_flag()
    with _table_lock:
        handles = _handles.setdefault((device_id, layer), [])
        chosen = None
        for h in handles:
            owner = h.owner()
            if owner is me:
                chosen = h
                break
            if chosen is None and (owner is None or not owner.is_alive()):
                chosen = h
        if chosen is None:
            chosen = Handle(cudss.cudssCreate(), True, device_id)
            handles.append(chosen)
            logger.debug("cuDSS handle %#x created on GPU %d", chosen.handle, device_id)
        chosen.owner = weakref.ref(me)
        chosen.users += 1
        return chosen


def caller_handle(handle: int, device_id: int) -> Handle:
    _arm_exit_flag()
    h = Handle(handle, False, device_id)
    h.users = 1
    return h


def _release(h: Handle) -> None:
    with _table_lock:
        h.users -= 1


@contextmanager
def on_device(device_id: int):
    """``device_id`` current inside, the caller's device again after."""
    before = cudart.cudaGetDevice()
    if before != device_id:
        cuda.set_device(device_id)
    try:
        yield
    finally:
        if before != device_id:
            cuda.set_device(before)


class Objects:
    """What one solver made from ``handle``: its config, data and matrix objects, device buffers and the event
    recorded behind its last work."""

    __slots__ = ("handle", "config", "data", "matrices", "buffers", "event", "joins", "done", "__weakref__")

    def __init__(self, handle: Handle):
        self.handle = handle
        self.config = self.data = self.event = 0
        self.joins = [0, 0]  # the events that join the analysis stream with another phase's stream (join())
        self.matrices, self.buffers = [], []
        self.done = False

    def record(self, stream: int) -> None:
        """Mark the end of the work just queued on ``stream`` (waited for before anything is destroyed)."""
        if not self.event:
            self.event = cudart.cudaEventCreateWithFlags(cudart.cudaEventDisableTiming)
        cudart.cudaEventRecord(self.event, stream)

    def join(self, which: int, before: int, after: int) -> None:
        """Make stream ``after`` wait for the work queued on stream ``before`` so far (event ``which``: 0 before a
        phase, 1 after it; made once)."""
        if not self.joins[which]:
            self.joins[which] = cudart.cudaEventCreateWithFlags(cudart.cudaEventDisableTiming)
        cudart.cudaEventRecord(self.joins[which], before)
        cudart.cudaStreamWaitEvent(after, self.joins[which])


def destroy(objs: Objects) -> None:
    """Destroy a solver's objects (idempotent; failures are logged, never raised)."""
    if objs.done:
        return
    h = objs.handle
    if h.in_use_here():  # called from inside a sequence of calls on the handle (a collection there): later
        _graveyard.append(objs)
        return
    objs.done = True
    if exiting():  # other exit hooks may have torn CUDA state down: the process's end frees everything
        return
    try:
        with h, on_device(h.device_id):
            if objs.event:
                cudart.cudaEventSynchronize(objs.event)  # the solver's kernels have finished
            if h.last and h.last_stream:  # and the default stream waits for other solvers' work on the handle
                cudart.cudaStreamWaitEvent(0, h.last)
            if not h.own:
                h.drop_event()  # a caller's handle is wrapped per solver
            if h.stream:
                cudss.cudssSetStream(h.handle, 0)  # the caller's stream may be destroyed by now
                h.stream = 0
            for m in objs.matrices:
                if m:
                    cudss.cudssMatrixDestroy(m)
            objs.matrices.clear()
            if objs.data:
                cudss.cudssDataDestroy(h.handle, objs.data)
                objs.data = 0
            if objs.config:
                cudss.cudssConfigDestroy(objs.config)
                objs.config = 0
            for b in objs.buffers:
                b.free()
            objs.buffers.clear()
            if objs.event:
                cudart.cudaEventDestroy(objs.event)
                objs.event = 0
            for k, ev in enumerate(objs.joins):
                if ev:
                    cudart.cudaEventDestroy(ev)
                    objs.joins[k] = 0
    except Exception:  # noqa: BLE001 - a failing destroy is logged, never raised
        logger.warning("destroying cuDSS objects failed", exc_info=True)
    finally:
        _release(h)


def bury(objs: Objects) -> None:
    """The finalizer of a solver dropped without free(): no native call here, only a note for drain()."""
    if not objs.done:
        _graveyard.append(objs)


def drain() -> None:
    """Destroy the objects of solvers dropped without free() (called where cuDSS may be used). Each one found
    is tried once: one postponed again (its handle in use in this thread) waits for the next drain."""
    for _ in range(len(_graveyard)):
        try:
            objs = _graveyard.popleft()
        except IndexError:  # another thread took the last one
            return
        destroy(objs)


def release_shared_handles() -> None:
    """Destroy cumath's cuDSS handles that no solver uses any more (solvers dropped without free() count as
    freed); the others stay, and are kept for the process."""
    if exiting():
        return
    drain()
    with _table_lock:
        idle = [(key, h) for key, hs in _handles.items() for h in hs if h.users == 0]
        for key, h in idle:
            _handles[key].remove(h)
            if not _handles[key]:
                del _handles[key]
    for _, h in idle:
        try:
            with h, on_device(h.device_id):
                h.drop_event()
                if h.stream:
                    cudss.cudssSetStream(h.handle, 0)
                cudss.cudssDestroy(h.handle)
        except Exception:  # noqa: BLE001 - logged, never raised
            logger.warning("destroying a cuDSS handle failed", exc_info=True)
