"""How METIS's NodeND scales on host threads (for benchmarks/cudss_ordering.py): one call on the 250 x 250
Poisson graph, then k calls at once on k threads (ctypes releases the GIL), then a pure-Python busy loop in 16
processes as the host's own scaling. Needs the pymetis wheel (METIS's C entry points).

    python benchmarks/metis_threads.py
"""
import time, numpy as np, sys, os
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
from solvers_sparse import poisson
import parallel_nd as O
from concurrent.futures import ThreadPoolExecutor, ProcessPoolExecutor
m = O._load()
if m is None:
    sys.exit("metis_threads.py needs METIS: pip install pymetis")
a = poisson(250); x, ad = O.symmetric_graph(a.indptr, a.indices, a.shape[0], m[1])
def one(_=None):
    t = time.perf_counter(); O._node_nd(m, x, ad); return time.perf_counter() - t
print("cores", len(os.sched_getaffinity(0)), "cpu quota", open("/sys/fs/cgroup/cpu.max").read().strip() if os.path.exists("/sys/fs/cgroup/cpu.max") else "?")
print("one", round(one(), 3), round(one(), 3))
for k in (2, 4, 8, 16):
    with ThreadPoolExecutor(k) as p:
        t = time.perf_counter(); each = list(p.map(one, range(k))); print("threads", k, round(time.perf_counter() - t, 3), "each", round(max(each), 3), flush=True)
def busy(_):
    t = time.perf_counter(); s = 0
    for i in range(3_000_000): s += i
    return time.perf_counter() - t
with ProcessPoolExecutor(16) as p:
    list(p.map(busy, range(16)))
    t = time.perf_counter(); each = list(p.map(busy, range(16))); print("16 python processes busy loop", round(time.perf_counter() - t, 3), "each", round(max(each), 3))
print("one busy", round(busy(0), 3))
