"""Timing helpers shared by the demo and the benchmarks: medians of per-call times over repeated loops."""

from __future__ import annotations

import statistics
import time

__all__ = ["time_call", "time_interleaved", "Timing"]


class Timing:
    """Per-call seconds of each repeat: ``median``, ``spread`` ((max-min)/median), ``best``."""

    def __init__(self, samples):
        self.samples = sorted(samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return self.samples[0]

    @property
    def spread(self) -> float:
        return (self.samples[-1] - self.samples[0]) / self.median if self.median else 0.0


def time_call(fn, *, sync=None, min_time=0.2, repeat=7, max_number=100000) -> Timing:
    """Time ``fn()``: calibrate a loop count that runs ``min_time`` seconds, then time ``repeat`` loops.

    ``sync`` is called after each loop (e.g. a GPU stream synchronisation) so queued work is counted.
    """
    sync = sync or (lambda: None)
    fn()
    sync()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        dt = time.perf_counter() - t0
        if dt >= min_time / 4 or number >= max_number:
            break
        number = min(max_number, number * (2 if dt > 0.01 else 10))
    number = max(1, min(max_number, int(number * (min_time / max(dt, 1e-9)) / 1)))
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / number)
    return Timing(samples)


def time_interleaved(fns: dict, *, sync=None, number=2000, rounds=15) -> dict:
    """Time several callables in alternation (A B C, A B C, ...) so that drift in the machine's speed
    (clocks, neighbours) falls on all of them alike. Returns name -> Timing of per-call seconds."""
    syncs = sync if isinstance(sync, dict) else {k: sync for k in fns}
    for k, fn in fns.items():
        fn()
        (syncs[k] or (lambda: None))()
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            s = syncs[k] or (lambda: None)
            s()
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            s()
            samples[k].append((time.perf_counter() - t0) / number)
    return {k: Timing(v) for k, v in samples.items()}
