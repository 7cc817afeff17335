"""Sparse matmul benchmark: cumath.sparse.matmul against its peers, in one process, on the same data.

Group ``matmul`` (``--list`` shows every case):
  cpu-csr-200k    CSR 200,000 x 200,000 with 2,000,000 stored entries (uniform random pattern, float64) times a
                  dense 200,000 x 64: the stateless cumath call (MKL engine; new values each call, so MKL's
                  optimised copy is refreshed), the planned Matmul.execute, cumath's SciPy engine,
                  sparse_dot_mkl.dot_product_mkl and SciPy's ``a @ b``.
  cpu-csr-200k-int32  the same with int32 indices (MKL's LP64 routines).
  gpu-csr-1m      CSR 1,000,000 x 1,000,000 with 10,000,000 stored entries times 1,000,000 x 64 float32 (CuPy):
                  cumath (cuSPARSE SpMM), torch.sparse.mm, cupyx's ``a @ b``, nvmath-python where importable.

    python benchmarks/sparse.py --case matmul/cpu-csr-200k --json sparse.json
    python benchmarks/sparse.py --gpu
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Bench, device_sync, need, optional  # noqa: E402

SETTLE = 0.2  # MKL's idle workers spin a while after a call (benchmarks/NOTES.md)


def random_csr(n: int, nnz: int, dtype="float64", index="int64", seed=0):
    sp = need("scipy.sparse")
    rng = np.random.default_rng(seed)
    a = sp.csr_array((rng.standard_normal(nnz).astype(dtype), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))),
                     shape=(n, n))
    a.sum_duplicates()
    a.indptr, a.indices = a.indptr.astype(index), a.indices.astype(index)
    return a


def _cpu(case, index):
    import cumath

    n, nnz, k = (50_000, 500_000, 64) if case.quick else (200_000, 2_000_000, 64)
    a = random_csr(n, nnz, index=index)
    b = np.random.default_rng(1).standard_normal((n, k))
    case.note(f"CSR {n:,} x {n:,}, nnz {a.nnz:,} ({index}) @ {n:,} x {k} float64; {os.cpu_count()} cores")
    fns = {}
    fns["cumath matmul (mkl)"] = lambda: cumath.sparse.matmul(a, b)
    mm = cumath.sparse.Matmul(a, b)
    mm.plan()
    fns["cumath Matmul.execute"] = mm.execute
    fns["cumath matmul (scipy engine)"] = lambda: cumath.sparse.matmul(a, b, options={"cpu_engine": "scipy"})
    sdm = optional("sparse_dot_mkl")
    if sdm is not None:
        fns["sparse_dot_mkl"] = lambda: sdm.dot_product_mkl(a, b)
    fns["scipy a @ b"] = lambda: a @ b
    ref = a @ b
    for name, fn in fns.items():
        err = np.abs(fn() - ref).max() / np.abs(ref).max()
        assert err < 1e-12, (name, err)
    case.time(fns, rounds=case.rounds(7, 3), settle=SETTLE)
    if sdm is not None:
        case.ratio("cumath matmul (mkl)", "sparse_dot_mkl")
        case.ratio("cumath Matmul.execute", "sparse_dot_mkl")
    case.ratio("cumath matmul (mkl)", "scipy a @ b")
    case.note(f"engine of the plan: {mm.engine}")
    mm.free()


def cpu_csr(case):
    _cpu(case, "int64")


def cpu_csr32(case):
    _cpu(case, "int32")


def gpu_csr(case):
    cp = need("cupy")
    csp = need("cupyx.scipy.sparse")
    import cumath

    n, nnz, k = (100_000, 1_000_000, 64) if case.quick else (1_000_000, 10_000_000, 64)
    h = random_csr(n, nnz, "float32", "int32")
    a = csp.csr_matrix((cp.asarray(h.data), cp.asarray(h.indices), cp.asarray(h.indptr)), shape=h.shape)
    b = cp.random.standard_normal((n, k), dtype=cp.float32)
    c = cp.empty((n, k), dtype=cp.float32)
    case.note(f"CSR {n:,} x {n:,}, nnz {h.nnz:,} int32 @ {n:,} x {k} float32 (CuPy)")
    mm = cumath.sparse.Matmul(a, b, c, beta=0.0)
    mm.plan()
    fns = {"cumath Matmul.execute": mm.execute,
           "cumath matmul": lambda: cumath.sparse.matmul(a, b, c, beta=0.0),
           "cupyx a @ b": lambda: a @ b}
    torch = optional("torch")
    if torch is not None:
        ta = torch.sparse_csr_tensor(torch.as_tensor(a.indptr, device="cuda"), torch.as_tensor(a.indices, device="cuda"),
                                     torch.as_tensor(a.data, device="cuda"), size=h.shape)
        tb = torch.as_tensor(b, device="cuda")
        fns["torch.sparse.mm"] = lambda: torch.sparse.mm(ta, tb)
    nv = optional("nvmath")
    if nv is not None:
        fns["nvmath-python"] = lambda: nv.sparse.matmul(a, b, c, beta=0.0)
    case.time(fns, sync=device_sync, rounds=case.rounds(7, 3))
    for peer in ("torch.sparse.mm", "nvmath-python", "cupyx a @ b"):
        if peer in fns:
            case.ratio("cumath Matmul.execute", peer)
    mm.free()


def register(bench: Bench) -> None:
    bench.case("matmul/cpu-csr-200k", "CSR SpMM 200k x 200k, 2M nnz, x 64 f64 on the CPU vs sparse_dot_mkl, SciPy")(
        cpu_csr)
    bench.case("matmul/cpu-csr-200k-int32", "the same with int32 indices")(cpu_csr32)
    bench.case("matmul/gpu-csr-1m", "CSR SpMM 1M x 1M, 10M nnz, x 64 f32 on the GPU vs torch, CuPy, nvmath",
               gpu=True)(gpu_csr)


def main(argv=None) -> int:
    bench = Bench("sparse", __doc__)
    register(bench)
    return bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
