"""Reuse of results the caller has dropped: one allocation less per call, and no fresh pages for large results.

A plan keeps its most recent results (one or two) with a *snapshot* taken when each was made: the counts of
the references to it and to its memory, and its metadata. A result is handed out again only when a new
snapshot equals the old one, that is when nothing but the plan refers to it (no name, no view, no storage or
DLPack reference) and the caller has not changed it in place (a shape assignment, ``t_()``, ``set_()``...).
What must be counted differs by package, so each adapter gives the rule (``recycle_snapshot``); a package with
no rule (or a Python without reference counts) has its results never reused.

A reused result is handed out on the stream that made it (ordered after every use of it on that stream, as
the package's own caching allocator would order it); results whose last use was queued on another stream are
not tracked.

Off unless asked for (``CUMATH_RECYCLE_RESULTS=1`` in the environment, or ``RECYCLE = True`` before plans are
made): the snapshots count references, and a weak reference (``weakref.ref(y)``) counts nothing, nor does a
pointer a C extension keeps while it holds no reference, and free-threaded Pythons defer counts; a reused
result would then be overwritten under the caller. So by default these plans return a new array each call, the
rule being that no call writes into memory the caller can still reach unless the caller asked for it.

One path reuses by default: the compiled runner of a host FFT plan (``FFT.execute()`` on NumPy arrays,
``_core/_fast/_hot_host.c``) reads the array's weak reference list as well as its reference count, base, data
pointer, flags, shape and strides, so a result it hands out again is one that no name, container, view,
buffer, capsule or weak reference reaches: only a raw address could, and NumPy itself would have freed that
memory. It keeps results of at most ``COMPILED_HOST_BYTES`` (all sizes with ``CUMATH_RECYCLE_RESULTS=1``),
never on a free-threaded Python, and nothing at all with ``CUMATH_RECYCLE_RESULTS=0`` (see ``compiled_reuse``).
benchmarks/NOTES.md has what each costs per call.
"""

from __future__ import annotations

import os
import platform

from .operand import adapter

__all__ = ["Recycler", "RECYCLE", "MAX_DEVICE_BYTES", "MIN_HOST_BYTES", "COMPILED", "COMPILED_HOST_BYTES",
           "compiled_reuse"]

#: on/off for every plan created from now on (off by default: see the module's docstring)
_ASKED = os.environ.get("CUMATH_RECYCLE_RESULTS", "").strip().lower()
RECYCLE = _ASKED in ("1", "true", "yes", "on")
#: the compiled host FFT runner's reuse (on unless CUMATH_RECYCLE_RESULTS is 0/false/no/off; see the docstring)
COMPILED = _ASKED not in ("0", "false", "no", "off")
#: the largest result the compiled host runner keeps by default (two of them per plan at most). Small results
#: save the allocation (~0.1-0.7 us of a 2048-point complex128 FFT); large ones save fresh pages: a new 32 MiB
#: result cost 1.42x a 4096 x 1024 complex64 batch into a kept one (the kernel zeroes every page it hands out).
#: The bound keeps what a plan may hold after its caller dropped everything to two results of 64 MiB.
COMPILED_HOST_BYTES = 64 << 20
#: the largest GPU result kept (a large result's allocation is cheap next to its computation, and holding two
#: of them would cost device memory; small ones are where the package's allocator costs most per call)
MAX_DEVICE_BYTES = 4 << 20
#: the smallest host result kept (0: all). A new small array is cheaper than the check (~0.1 us against ~0.25 us),
#: but it lands at another address each call, and FFTW runs its plans made for the kept result's alignment only on
#: memory of that alignment: a 2048-point complex128 FFT took 5.2-5.7 us into new arrays against 4.0-4.3 us into a
#: kept one. Large results are kept for their pages (a 32 MiB 2-D FFT result cost up to 1.7x the transform).
MIN_HOST_BYTES = 0

_CPYTHON = platform.python_implementation() == "CPython"


def compiled_reuse(nbytes: int) -> bool:
    """Whether a compiled host runner whose results have ``nbytes`` keeps and reuses them (see the docstring)."""
    return _CPYTHON and COMPILED and nbytes >= MIN_HOST_BYTES and (RECYCLE or nbytes <= COMPILED_HOST_BYTES)


def _rule(package: str):
    fn = getattr(adapter(package), "recycle_snapshot", None)
    return fn if (_CPYTHON and fn is not None) else None


class Recycler:
    """Results made by ``new()`` (a zero-argument allocator) and their addresses (``pointer(x)``), reused once
    dropped. ``take(stream)`` returns ``(result, pointer)``; ``keep`` is how many recent results are watched
    (two lets ``d = op.execute()`` in a loop, which holds the previous result during the call, reuse too)."""

    __slots__ = ("new", "pointer", "snapshot", "keep", "entries", "nbytes")

    def __init__(self, package: str, new, pointer, nbytes: int, *, device: bool, keep: int = 1):
        self.new, self.pointer, self.keep = new, pointer, keep
        allowed = RECYCLE and (nbytes <= MAX_DEVICE_BYTES if device else nbytes >= MIN_HOST_BYTES)
        self.snapshot = _rule(package) if allowed else None
        self.entries = ()  # [result, pointer, stream, snapshot when made]
        self.nbytes = nbytes if self.snapshot is not None else 0

    def take(self, stream=None):
        snapshot = self.snapshot
        if snapshot is None:
            d = self.new()
            return d, self.pointer(d)
        for e in self.entries:
            if e[2] is stream or e[2] == stream:
                if snapshot(e) == e[3]:
                    return e[0], e[1]
        d = self.new()
        e = [d, self.pointer(d), stream, None]
        del d
        e[3] = snapshot(e)
        self.entries = (self.entries[-1], e) if (self.entries and self.keep > 1) else (e,)
        return e[0], e[1]

    @property
    def held_bytes(self) -> int:
        return self.nbytes * len(self.entries)

    def clear(self) -> None:
        self.entries = ()

    def stop(self) -> None:
        """Keep nothing from now on (another path reuses the results of this plan)."""
        self.entries, self.snapshot, self.nbytes = (), None, 0
