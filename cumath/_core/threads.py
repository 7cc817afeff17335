"""Worker threads shared by the CPU engines: one pool per (owner, size), made on first use and kept for the
process (the LAPACK batches of the dense solver, the BLAS blocks of tensor contractions). ``run_parts`` runs a
function over parts with the calling thread taking parts too, so a split over ``n`` threads wakes ``n - 1``
workers."""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["worker_pool", "run_parts"]

_pools: dict = {}
_lock = threading.Lock()


def worker_pool(owner: str, workers: int, initializer=None, initargs: tuple = ()) -> ThreadPoolExecutor:
    """The process's pool of ``workers`` threads named after ``owner`` (``initializer(*initargs)`` runs once in
    each when it starts; pools of one owner and size share it)."""
    with _lock:
        pool = _pools.get((owner, workers))
        if pool is None:
            pool = _pools[owner, workers] = ThreadPoolExecutor(workers, thread_name_prefix=f"cumath-{owner}",
                                                               initializer=initializer, initargs=initargs)
        return pool


def run_parts(fn, parts: list, pool: ThreadPoolExecutor, workers: int) -> None:
    """``fn(*part)`` for every part, taken in order by ``workers`` threads of ``pool`` and the calling thread as
    each comes free; returns when all are done (a worker's exception is raised here, after the others ended)."""
    take = itertools.count().__next__

    def drain():
        while True:
            i = take()
            if i >= len(parts):
                return
            fn(*parts[i])

    futures = [pool.submit(drain) for _ in range(min(workers, max(0, len(parts) - 1)))]
    try:
        drain()
    finally:
        for f in futures:
            f.result()
