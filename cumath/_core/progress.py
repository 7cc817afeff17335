"""Progress of long work (measured FFTW planning, autotuning, benchmarks): a bar when someone is watching.

``progress(total, desc)`` gives an object with ``update(n=1)`` and ``close()`` (and a context manager): tqdm's
bar when tqdm is installed, else a one-line counter; nothing at all when stderr is not a terminal, or when
``CUMATH_PROGRESS=0`` (``=1`` forces it on). ``busy(desc)`` is for one long native call that reports nothing
(FFTW's measured planning): after ``after`` seconds a line shows the elapsed time until the call returns.
"""

from __future__ import annotations

import os
import sys
import threading
import time

__all__ = ["progress", "busy", "enabled"]


def enabled() -> bool:
    """Whether progress is shown: CUMATH_PROGRESS=1/0 decides, else whether stderr is a terminal."""
    env = os.environ.get("CUMATH_PROGRESS", "").strip()
    if env:
        return env not in ("0", "false", "no", "off")
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Quiet:
    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, desc: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _Counter(_Quiet):
    """``desc: i/total`` rewritten in place on one line of stderr."""

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.n, self.t0 = total, desc, 0, time.perf_counter()
        self._draw()

    def _draw(self) -> None:
        elapsed = time.perf_counter() - self.t0
        sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total} ({elapsed:.0f} s)\x1b[K")
        sys.stderr.flush()

    def update(self, n: int = 1) -> None:
        self.n += n
        self._draw()

    def set_description(self, desc: str) -> None:
        self.desc = desc
        self._draw()

    def close(self) -> None:
        if self.total is not None:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.total = None


def progress(total: int, desc: str):
    """A progress bar of ``total`` steps (quiet when nobody watches)."""
    if not enabled():
        return _Quiet()
    try:
        from tqdm import tqdm
    except ImportError:
        return _Counter(total, desc)
    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr, dynamic_ncols=True)


class busy:
    """``with busy("planning ..."):`` shows ``planning ... 12 s`` on stderr while the block runs longer than
    ``after`` seconds (a terminal only), and clears the line afterwards."""

    def __init__(self, desc: str, after: float = 2.0):
        self.desc, self.after = desc, after
        self._stop = None

    def __enter__(self):
        if enabled():
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, name="cumath-progress", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        t0 = time.perf_counter()
        shown = False
        while not self._stop.wait(0.5):
            elapsed = time.perf_counter() - t0
            if elapsed >= self.after:
                sys.stderr.write(f"\r{self.desc} {elapsed:.0f} s\x1b[K")
                sys.stderr.flush()
                shown = True
        if shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()

    def __exit__(self, *exc):
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
        return False
