"""cuDSS with an ordering computed by cumath on all host cores, against cuDSS's own reordering.

For the 2-D Poisson system (default 1000 x 1000: 1,000,000 unknowns) on the GPU: cuDSS's own plan, then plans
with a user permutation (CUDSS_DATA_USER_PERM) from cumath's parallel nested dissection
(``parallel_nd.py`` beside it) at several split levels, from METIS's serial NodeND, and cuDSS's own
permutation handed back (the cost of an analysis whose ordering is given). Per row: the ordering's seconds,
plan / factorize / solve (best of 2 fresh solvers), the analysis split into REORDERING and SYMBOLIC_FACTORIZATION,
lu_nnz and the residual. Both conventions of the permutation are tried on cuDSS's own one (new -> old and its
inverse) so that the table says which one cuDSS reads.

    python benchmarks/cudss_ordering.py [--side 1000] [--levels 2,3,4,5,6] [--no-orderings] [--json out.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import device_sync, need  # noqa: E402
from solvers_sparse import _timed_run, _variants, poisson  # noqa: E402

USER = [None]
TREE = [None]


def _patch():
    from cumath._bindings import cudss
    from cumath.sparse.advanced._backends import cudss as backend

    orig = backend.CudssSolver.analyse

    def analyse(self, stream, steps=None):
        p = USER[0]
        if p is not None:
            with self._h:
                cudss.cudssDataSet(self.handle, self._objs.data, cudss.DataParam.USER_PERM, p.ctypes.data, p.nbytes)
                t = TREE[0]
                if t is not None:
                    cudss.cudssDataSet(self.handle, self._objs.data, cudss.DataParam.USER_ND_PARTITION_TREE,
                                       t.ctypes.data, t.nbytes)
        return orig(self, stream, steps)

    backend.CudssSolver.analyse = analyse


def _engine(solver):
    """The CudssSolver behind a planned cumath DirectSolver (its executor's ``solver``)."""
    return solver._executor.solver


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", type=int, default=1000)
    ap.add_argument("--json")
    ap.add_argument("--levels", default="2,3,4,5,6")
    ap.add_argument("--no-orderings", action="store_true", help="only cuDSS's own permutation (and tree) rows")
    args = ap.parse_args(argv)
    cp = need("cupy")
    csp = need("cupyx.scipy.sparse")
    import cumath.sparse.advanced as S
    import parallel_nd as _ordering

    _patch()
    a_host = poisson(args.side)
    n = a_host.shape[0]
    vals = [csp.csr_matrix(v) for v in _variants(a_host)]
    b = cp.asarray(np.random.default_rng(0).standard_normal(n))
    sync = device_sync()
    S.direct_solver(vals[0], b)

    def make():
        return S.DirectSolver(vals[0], b)

    rows = []

    def row(label, order, order_s=None, extra=None, tree=None):
        USER[0] = None if order is None else np.ascontiguousarray(order, dtype=np.int32)
        TREE[0] = tree
        try:
            runs = [_timed_run(make, sync, split=False) for _ in range(2)]
            _, _, _, steps = _timed_run(make, sync, split=True)
        except Exception as exc:  # noqa: BLE001
            print(f"{label}: failed {type(exc).__name__}: {exc}", flush=True)
            rows.append({"label": label, "error": str(exc)})
            return
        finally:
            USER[0] = TREE[0] = None
        t = np.array([r[0] for r in runs]) * 1e3
        best = t.min(axis=0)
        r = {"label": label, "order_ms": None if order_s is None else order_s * 1e3, "plan_ms": best[0],
             "factorize_ms": best[1], "solve_ms": best[2], "lu_nnz": runs[0][1], "residual": max(x[2] for x in runs),
             "reordering_ms": steps.get("cudssExecute(REORDERING)"),
             "symbolic_ms": steps.get("cudssExecute(SYMBOLIC_FACTORIZATION)"), **(extra or {})}
        rows.append(r)
        total = (r["order_ms"] or 0) + r["plan_ms"]
        print(f"{label:48s} order {r['order_ms'] or 0:8.1f} plan {r['plan_ms']:8.1f} (reorder "
              f"{r['reordering_ms'] or 0:7.1f} symbolic {r['symbolic_ms'] or 0:6.1f}) order+plan {total:8.1f} | "
              f"factorize {r['factorize_ms']:6.2f} solve {r['solve_ms']:5.2f} | lu_nnz {r['lu_nnz']:,} "
              f"res {r['residual']:.1e}", flush=True)

    print(f"2-D Poisson {args.side}^2: n = {n:,}, host cores {len(os.sched_getaffinity(0))}", flush=True)
    row("cuDSS's own reordering", None)
    s = make()
    s.plan()
    own = np.asarray(s.plan_info.row_permutation).copy()
    from cumath._bindings import cudss
    tree, tree_info = None, {}
    try:
        eng = _engine(s)
        size = ctypes.c_size_t()  # the size first (a null buffer of 0 bytes), then exactly that many bytes
        with eng._h:
            cudss._L.cudssDataGet(eng.handle, eng._objs.data, int(cudss.DataParam.ND_PARTITION_TREE), None, 0,
                                  ctypes.byref(size))
        buf = np.zeros(size.value, np.uint8)
        with eng._h:
            written = cudss.cudssDataGet(eng.handle, eng._objs.data, cudss.DataParam.ND_PARTITION_TREE,
                                         buf.ctypes.data, buf.nbytes)
        tree = buf[:written].copy()
        ints = tree[: written - written % 4].view(np.int32)
        tree_info = {"bytes": int(written), "int32": ints.tolist(), "int32_sum": int(ints.sum()),
                     "int32_count": int(len(ints))}
        print(f"ND_PARTITION_TREE: {written} bytes; as int32: {ints[:32].tolist()} ... sum {ints.sum()}", flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"ND_PARTITION_TREE not read: {type(exc).__name__}: {exc}", flush=True)
    s.free()
    row("cuDSS's own permutation as USER_PERM", own)
    if tree is not None:
        row("cuDSS's own permutation and ND partition tree handed back", own, tree=tree, extra={"tree": tree_info})
    small = n <= 100_000
    base_nnz, given_nnz = rows[0].get("lu_nnz"), rows[-1].get("lu_nnz")
    # which way cuDSS reads a user permutation: its own one handed back must give its own fill
    inverse = not (base_nnz and given_nnz and given_nnz <= 1.02 * base_nnz)
    if small:
        row("cuDSS's own permutation inverted as USER_PERM", np.argsort(own))
    if inverse:
        print("cuDSS reads USER_PERM as the inverse of its PERM_REORDER_ROW: orders are handed over inverted",
              flush=True)
    for levels in [] if args.no_orderings else [0] + [int(v) for v in args.levels.split(",")]:
        best, times = None, None
        for _ in range(3):
            tm = {}
            t0 = time.perf_counter()
            order = _ordering.nested_dissection(a_host.indptr, a_host.indices, n, levels=levels, times=tm)
            dt = time.perf_counter() - t0
            if best is None or dt < best:
                best, times = dt, tm
        label = "METIS NodeND (serial)" if levels == 0 else f"cumath parallel ND, {levels} split levels"
        row(label, np.argsort(order) if inverse else order, best, {"stages": times})
        if small and levels in (0, 4):
            row(label + ", the other way", order if inverse else np.argsort(order), best)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"side": args.side, "n": n, "rows": rows}, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
