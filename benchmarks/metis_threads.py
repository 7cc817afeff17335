"""How METIS's NodeND scales on host threads (for benchmarks/cudss_ordering.py): one call on the 250 x 250
Poisson graph, then k calls at once on k threads (ctypes releases the GIL), then a pure-Python busy loop in 16
processes as the host's own scaling. Needs the pymetis wheel (METIS's C entry points).

    python benchmarks/metis_threads.py
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import parallel_nd  # noqa: E402
from solvers_sparse import poisson  # noqa: E402


def _busy(_=None) -> float:
    t = time.perf_counter()
    s = 0
    for i in range(3_000_000):
        s += i
    return time.perf_counter() - t


def main() -> int:
    m = parallel_nd._load()
    if m is None:
        print("metis_threads.py needs METIS: pip install pymetis", file=sys.stderr)
        return 1
    a = poisson(250)
    xadj, adj = parallel_nd.symmetric_graph(a.indptr, a.indices, a.shape[0], m[1])

    def one(_=None) -> float:
        t = time.perf_counter()
        parallel_nd._node_nd(m, xadj, adj)
        return time.perf_counter() - t

    print("host cores", len(os.sched_getaffinity(0)))
    print(f"one NodeND {one():.3f} s, again {one():.3f} s")
    for k in (2, 4, 8, 16):
        with ThreadPoolExecutor(k) as pool:
            t = time.perf_counter()
            each = list(pool.map(one, range(k)))
            print(f"{k} at once on threads {time.perf_counter() - t:.3f} s (slowest call {max(each):.3f} s)",
                  flush=True)
    with ProcessPoolExecutor(16) as pool:
        list(pool.map(_busy, range(16)))
        t = time.perf_counter()
        each = list(pool.map(_busy, range(16)))
        print(f"busy loop in 16 processes {time.perf_counter() - t:.3f} s (slowest {max(each):.3f} s), "
              f"in one {_busy():.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
