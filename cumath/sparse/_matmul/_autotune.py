"""Choosing the CPU engine of a planned sparse matmul by measurement: MKL's sparse BLAS against SciPy on the
plan's own operands (the GPU's cuSPARSE algorithms are timed by the device executor itself, with CUDA events)."""

from __future__ import annotations

import logging
import statistics
import time

import numpy as np

from ..._core.frameworks.numpy import view
from ...errors import LibraryNotFoundError

__all__ = ["autotune_cpu", "median_ms"]


def median_ms(run, iterations: int) -> float:
    """The median milliseconds of ``iterations`` calls of ``run()`` after one warm-up call."""
    run()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def autotune_cpu(mm, executor, iterations: int):
    """(executor kept, [(engine, ms), ...] fastest first) for the planned CPU matmul ``mm``: with
    ``cpu_engine='auto'`` every engine that loads is planned on the same operands and timed into a scratch
    result (c copied in when beta uses it); the others are freed."""
    from ._backends import CPU_ENGINES, cpu_engine
    from ._executors import HostExecutor, new_result

    ops, g, log, opts = mm._ops, mm._geom, mm._log, mm._options
    contenders = {executor.engine.name: executor}
    if opts.cpu_engine == "auto" and g.dtype != "float16":
        for name in CPU_ENGINES.order:
            if name in contenders:
                continue
            try:
                engine = cpu_engine(name, log)
            except LibraryNotFoundError:
                continue
            if not getattr(engine, "supports", lambda d: True)(g.dtype):
                continue
            contenders[name] = HostExecutor(g, ops, engine, opts, log, mm._stream)
    _, scratch = new_result(ops, g, mm._place.package)
    if ops.get("c") is not None:
        np.copyto(view(scratch), view(ops["c"]))
    times = []
    try:
        for name, ex in contenders.items():
            times.append((name, median_ms(lambda: ex.execute(ops, mm._alpha, mm._beta, scratch), iterations)))
    except BaseException:
        for ex in contenders.values():
            if ex is not executor:
                ex.free()
        raise
    times.sort(key=lambda t: t[1])
    best = contenders[times[0][0]]
    for ex in contenders.values():
        if ex is not best:
            ex.free()
    if log.isEnabledFor(logging.INFO):
        log.info("autotune: CPU engine %s chosen; ms per execution: %s", times[0][0],
                 ", ".join(f"{n} {t:.4g}" for n, t in times))
    return best, times
