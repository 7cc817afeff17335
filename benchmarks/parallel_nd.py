"""A fill-reducing ordering on all host cores, for the experiment of benchmarks/cudss_ordering.py: nested
dissection whose top levels are split here and whose leaves METIS orders, one thread each.

Measured on the GPU machine's 16-core host (2026-12-03, benchmarks/NOTES.md): METIS's NodeND of the 1M Poisson
graph takes 6.8 s serially (cuDSS's own threaded reordering 1.45-1.57 s), NodeND calls on threads scale to 4 and
then stall (16 at once take 20x one), and splitting here costs fill (lu_nnz 74-79M against 67.5M): not a
replacement for cuDSS's reordering, which is why it lives with the benchmark and not in cumath.

cuDSS's own reordering is METIS-like nested dissection on the host; with its threading layer loaded it still
takes most of a large system's first call (1.4-2.1 s of a 1,000,000-unknown 2-D Poisson plan on a 16-core
host). Nested dissection is parallel by nature below its first separator: the two halves are independent
graphs. This module computes the top ``levels`` separators itself (an edge bisection from METIS, turned into the
smallest vertex separator that covers the cut edges: a maximum matching of the cut's bipartite graph and its
Koenig cover) and hands the ``2**levels`` parts to METIS's ``METIS_NodeND`` on a thread each (ctypes releases the
GIL). The result is a permutation ``order`` (new position -> old row, the way cuDSS reads CUDSS_DATA_USER_PERM)
with the separators after the parts they separate.

METIS comes from the ``pymetis`` wheel (``pip install pymetis``; not a dependency of cumath), whose extension
module exports METIS's C entry points; :func:`available` says whether it loaded.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["available", "nested_dissection", "symmetric_graph"]

log = logging.getLogger("cumath.sparse.advanced")

#: METIS's option array length (METIS_NOPTIONS of metis.h 5.x)
_NOPTIONS = 40
#: METIS_OK
_OK = 1
#: parts smaller than this are ordered by METIS whole (a split below it saves nothing)
_MIN_SPLIT = 4096

_lock = threading.Lock()
_metis = None  # (CDLL, idx dtype, options indices) or False once it failed to load


def _load():
    global _metis
    with _lock:
        if _metis is None:
            try:
                import pymetis._internal as internal

                lib = ctypes.CDLL(internal.__file__)
                for name in ("METIS_NodeND", "METIS_PartGraphRecursive", "METIS_SetDefaultOptions"):
                    getattr(lib, name)
                width = int(internal._idx_type_width())
                idx = {32: np.int32, 64: np.int64}[width]
                _metis = (lib, np.dtype(idx), internal.options_indices)
            except (ImportError, OSError, AttributeError, KeyError) as exc:
                log.debug("METIS (pymetis) not available for the parallel ordering: %s", exc)
                _metis = False
    return _metis or None


def available() -> bool:
    """Whether METIS loaded (the ``pymetis`` wheel)."""
    return _load() is not None


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def _options(m, **values):
    lib, idx, names = m
    o = np.full(_NOPTIONS, -1, dtype=idx)
    lib.METIS_SetDefaultOptions(_ptr(o))
    for key, value in values.items():
        o[getattr(names, key.upper())] = value
    return o


def _node_nd(m, xadj, adj):
    """METIS_NodeND of one graph: its order (new position -> old vertex)."""
    lib, idx, _ = m
    n = len(xadj) - 1
    perm, iperm = np.empty(n, idx), np.empty(n, idx)
    nv = np.array([n], idx)
    rc = lib.METIS_NodeND(_ptr(nv), _ptr(xadj), _ptr(adj), None, _ptr(_options(m)), _ptr(perm), _ptr(iperm))
    if rc != _OK:
        raise RuntimeError(f"METIS_NodeND returned {rc}")
    return perm


def _bisect(m, xadj, adj):
    """An edge bisection (0/1 per vertex) from METIS_PartGraphRecursive."""
    lib, idx, _ = m
    n = len(xadj) - 1
    part = np.empty(n, idx)
    nv, ncon, nparts, objval = (np.array([v], idx) for v in (n, 1, 2, 0))
    rc = lib.METIS_PartGraphRecursive(_ptr(nv), _ptr(ncon), _ptr(xadj), _ptr(adj), None, None, None, _ptr(nparts),
                                      None, None, _ptr(_options(m)), _ptr(objval), _ptr(part))
    if rc != _OK:
        raise RuntimeError(f"METIS_PartGraphRecursive returned {rc}")
    return part


def symmetric_graph(indptr, indices, n: int, idx=np.int64):
    """The adjacency of ``A + A^T``'s pattern without its diagonal, as (xadj, adjncy) in ``idx``."""
    import scipy.sparse as sp

    a = sp.csr_matrix((np.ones(len(indices), np.int8), np.asarray(indices), np.asarray(indptr)), shape=(n, n))
    g = (a + a.T).tocsr()
    g.setdiag(0)
    g.eliminate_zeros()
    return g.indptr.astype(idx, copy=False), g.indices.astype(idx, copy=False)


def _subgraph(xadj, adj, verts, idx):
    import scipy.sparse as sp

    n = len(xadj) - 1
    g = sp.csr_matrix((np.ones(len(adj), np.int8), adj, xadj), shape=(n, n))[verts][:, verts]
    return g.indptr.astype(idx, copy=False), g.indices.astype(idx, copy=False)


def _separator(xadj, adj, part):
    """The smallest vertex set covering the edges between part 0 and part 1 (Koenig's theorem: from a maximum
    matching of the cut's bipartite graph, the unmatched side-0 vertices' alternating reach)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_bipartite_matching

    n = len(xadj) - 1
    src = np.repeat(np.arange(n), np.diff(xadj))
    cut = (part[src] == 0) & (part[adj] == 1)
    r, c = src[cut], adj[cut]
    if not len(r):
        return np.empty(0, np.int64)
    b0, ri = np.unique(r, return_inverse=True)
    b1, ci = np.unique(c, return_inverse=True)
    bip = sp.csr_matrix((np.ones(len(r), np.int8), (ri, ci)), shape=(len(b0), len(b1)))
    mate = maximum_bipartite_matching(bip, perm_type="column")  # side-0 vertex -> side-1 vertex or -1
    row_of = np.full(len(b1), -1)
    row_of[mate[mate >= 0]] = np.flatnonzero(mate >= 0)
    reach0, reach1 = mate < 0, np.zeros(len(b1), bool)
    front = np.flatnonzero(reach0)
    while len(front):
        cols = np.unique(bip[front].indices)
        cols = cols[~reach1[cols]]
        reach1[cols] = True
        rows = row_of[cols]
        rows = rows[rows >= 0]
        rows = rows[~reach0[rows]]
        reach0[rows] = True
        front = rows
    return np.concatenate([b0[~reach0], b1[reach1]])


def nested_dissection(indptr, indices, n: int, *, threads: int | None = None, levels: int | None = None,
                      times: dict | None = None):
    """A fill-reducing order of the symmetric pattern of the CSR ``(indptr, indices)`` (new position -> old
    row, int32), or None when METIS is not available. ``levels`` separators are computed here (default: enough
    for one part per thread), the parts ordered by METIS in parallel; ``times`` (a dict) receives the seconds of
    each stage."""
    m = _load()
    if m is None:
        return None
    _, idx, _ = m
    threads = max(1, threads or len(os.sched_getaffinity(0)))
    if levels is None:
        levels = max(0, int(np.ceil(np.log2(threads))))
    t0 = time.perf_counter()
    xadj, adj = symmetric_graph(indptr, indices, n, idx)
    t1 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:

        def split(node):
            gx, ga, ids = node
            part = _bisect(m, gx, ga)
            sep = _separator(gx, ga, part)
            mark = part.astype(np.int8)
            mark[sep] = 2
            halves = []
            for side in (0, 1):
                keep = np.flatnonzero(mark == side)
                halves.append(_subgraph(gx, ga, keep, idx) + (ids[keep],))
            return halves[0], halves[1], ids[sep]

        seps, nodes = {}, {0: (xadj, adj, np.arange(n))}
        for _ in range(levels):
            big = [k for k, node in nodes.items() if len(node[2]) >= _MIN_SPLIT]
            if not big:
                break
            for k, (left, right, sep) in zip(big, pool.map(split, [nodes[k] for k in big])):
                del nodes[k]
                seps[k], nodes[2 * k + 1], nodes[2 * k + 2] = sep, left, right
        t2 = time.perf_counter()
        keys = list(nodes)
        leaves = dict(zip(keys, pool.map(lambda node: node[2][_node_nd(m, node[0], node[1])],
                                         [nodes[k] for k in keys])))
    t3 = time.perf_counter()

    def emit(k):
        if k in leaves:
            return [leaves[k]]
        return emit(2 * k + 1) + emit(2 * k + 2) + [seps[k]]

    order = np.concatenate(emit(0)).astype(np.int32)
    if times is not None:
        times.update(graph=t1 - t0, separators=t2 - t1, leaves=t3 - t2, total=time.perf_counter() - t0,
                     levels=len(seps), parts=len(leaves))
    return order
