"""The generated SpMM kernels executed on the CPU (``host_kernels``: the emitted CUDA C++ built by the host C++
compiler, a thread per CUDA thread, a barrier per block) through the generated executor itself, against a dense
NumPy float64 product: the 'gather' schedule (DIA: shared-memory staging of more diagonals than one chunk, the
16-byte vector and single-element paths, several column tiles), the 'owned' one (CSR, BSR with odd blocks, DCSR
with its scale pass), the 'atomic' one (COO), STRUCTURED and DELTA levels, transposes, a semiring and an epilog."""

from __future__ import annotations

import logging
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import host_kernels  # noqa: E402

from cumath._core.operand import wrap_operand  # noqa: E402
from cumath.sparse import MatmulOptions  # noqa: E402
from cumath.sparse._matmul._qualifiers import check_qualifiers  # noqa: E402
from cumath.sparse._matmul._traits import geometry  # noqa: E402
from cumath.sparse.ust import NamedFormats as N, Tensor  # noqa: E402

pytestmark = pytest.mark.skipif(not host_kernels.available(), reason="no host C++ compiler (g++)")
TOL = {"float32": 2e-5, "float64": 1e-12, "complex64": 2e-5, "complex128": 1e-12}


def rand(rng, shape, dtype, density=1.0):
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.startswith("complex") else 0)
    if density < 1:
        x[rng.random(shape) > density] = 0
    return x.astype(dtype)


def run(fmt, d, b, c=None, alpha=1.0, beta=0.0, transpose=False, monkeypatch=None, operators="", prologs=None):
    """alpha op(d) @ b + beta c through the generated executor, its kernels run on the host; (result, kernels)."""
    from cumath.sparse._matmul._generated import GeneratedExecutor

    kernels = host_kernels.install(monkeypatch, operators)
    u = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=fmt)
    a = u._as_sparse_matrix("a", convert=False)
    B = wrap_operand(b, "b")
    out = None if c is None else c.copy()
    C = None if c is None else wrap_operand(out, "c")
    q = None
    if transpose:
        from cumath.sparse import matmul_matrix_qualifiers_dtype as QD

        q = np.zeros(3 if c is not None else 2, QD)
        q[0]["is_transpose"] = 1
    quals = check_qualifiers(q, C is not None)
    g = geometry(a.shape, B.shape, None if C is None else C.shape, (a.dtype, B.dtype, None if C is None else C.dtype),
                 quals)
    ops = {"a": a, "b": B, "c": C}
    ex = GeneratedExecutor(g, a, ops, MatmulOptions(), logging.getLogger("test"), SimpleNamespace(device=0), prologs)
    if C is None:
        arr, result = ex.new_result(ops)
    else:
        arr, result = out, C
    dt = np.dtype(g.dtype).type
    ex.execute(ops, dt(alpha), dt(beta), result, 0)
    return arr, kernels


def relerr(x, ref):
    return np.abs(np.asarray(x, np.complex128) - ref).max() / max(np.abs(ref).max(), 1e-300)


def banded(rng, m, k, ndiag, dtype):
    d = np.zeros((m, k), dtype)
    for off in rng.choice(np.arange(-m + 3, k - 3), ndiag, replace=False):
        i = np.arange(max(0, -off), min(m, k - off))
        d[i, i + off] = rand(rng, (i.size,), dtype)
    return d


@pytest.mark.parametrize("dtype", ("float32", "complex128"))
def test_gather_dia(monkeypatch, dtype):
    rng = np.random.default_rng(1)
    d = banded(rng, 70, 61, 70, dtype)  # 70 diagonals: two shared-memory chunks of 64
    c = rand(rng, (70, 12), dtype)
    for n, b in ((12, rand(rng, (61, 12), dtype)), (12, rand(rng, (61, 13), dtype)[:, 1:]), (5, rand(rng, (61, 5), dtype)),
                 (300, rand(rng, (61, 300), dtype))):
        cc = c if n == 12 else rand(rng, (70, n), dtype)
        got, k = run(N.DIAI, d, b, cc, 1.5, -0.5, monkeypatch=monkeypatch)
        assert relerr(got, 1.5 * d.astype(np.complex128) @ b - 0.5 * cc) < TOL[dtype], (n, b.strides)
        (grid, block), = k["cumath_ust_spmm"].launches
        assert block[0] * block[1] == 256
    bb = rand(rng, (3, 61, 8), dtype)  # a batch of b against one a
    got, _ = run(N.DIAI, d, bb, monkeypatch=monkeypatch)
    assert got.shape == (3, 70, 8) and relerr(got, np.matmul(d, bb)) < TOL[dtype]
    x = rand(rng, (61,), dtype)
    got, _ = run(N.DIAI, d, x, monkeypatch=monkeypatch)
    assert relerr(got, d @ x) < TOL[dtype]
    bt = rand(rng, (70, 8), dtype)
    got, _ = run(N.DIAJ, d, bt, transpose=True, monkeypatch=monkeypatch)  # DIAJ transposed gathers too
    assert relerr(got, d.T @ bt) < TOL[dtype]


def test_vector_path_is_taken_when_aligned(monkeypatch):
    """float32 with 64 columns: blockDim 8 x 32 (two float4 a thread); an odd column count: the element path."""
    from cumath.sparse._matmul import _generated

    seen = []
    real = _generated.GeneratedExecutor._vec_ok
    monkeypatch.setattr(_generated.GeneratedExecutor, "_vec_ok", lambda self, *a: seen.append(real(self, *a)) or
                        seen[-1])
    rng = np.random.default_rng(2)
    d = banded(rng, 40, 40, 5, "float32")
    b = np.ascontiguousarray(rand(rng, (40, 64), "float32"))
    got, k = run(N.DIAI, d, b, monkeypatch=monkeypatch)
    assert relerr(got, d @ b) < 1e-5 and seen[-1] is True
    assert k["cumath_ust_spmm"].launches == [((2, 1, 1), (8, 32, 1))]
    got, _ = run(N.DIAI, d, rand(rng, (40, 7), "float32"), monkeypatch=monkeypatch)
    assert seen[-1] is False
    # rows 16-byte multiples apart, but the first element 4 bytes past an aligned address: the element path
    wide = rand(rng, (40, 68), "float32")
    got, _ = run(N.DIAI, d, wide[:, 1:65], monkeypatch=monkeypatch)
    assert seen[-1] is False and relerr(got, d @ wide[:, 1:65]) < 1e-5
    got, _ = run(N.BSRRight(4, 4), d, wide[:, 4:68], monkeypatch=monkeypatch)  # aligned again: vectors
    assert seen[-1] is True and relerr(got, d @ wide[:, 4:68]) < 1e-5


@pytest.mark.parametrize("fmt", [N.CSR, N.BSRRight(3, 5), N.BSRLeft(2, 2), N.DCSR, N.COO, N.Structured(2, 4),
                                 N.Delta(N.CSR), N.Delta(N.DCSR), N.CSC], ids=lambda f: f.name)
@pytest.mark.parametrize("dtype", ("float64", "complex64"))
def test_owned_atomic_and_new_levels(monkeypatch, fmt, dtype):
    rng = np.random.default_rng(3)
    d = rand(rng, (37, 30), dtype, 0.3)
    if fmt.name.startswith("Structured"):
        for r in range(37):
            for b0 in range(0, 30, 4):
                nz = np.flatnonzero(d[r, b0:b0 + 4])
                d[r, b0 + nz[2:]] = 0
    for n in (16, 3):
        b, c = rand(rng, (30, n), dtype), rand(rng, (37, n), dtype)
        got, _ = run(fmt, d, b, c, 2.0, 0.25, monkeypatch=monkeypatch)
        assert relerr(got, 2 * d.astype(np.complex128) @ b + 0.25 * c) < TOL[dtype], (fmt.name, n)
    bt = rand(rng, (37, 6), dtype)
    got, _ = run(fmt, d, bt, transpose=True, monkeypatch=monkeypatch)
    assert relerr(got, d.T @ bt) < TOL[dtype], fmt.name


def test_semiring_and_epilog(monkeypatch):
    """(min, +) with an epilog on the gather and owned schedules; the operators given as host C++."""
    ops = 'extern "C" double ad(double a, double b) { return a < b ? a : b; }\n' \
          'extern "C" double mu(double a, double b) { return a + b; }\n' \
          'extern "C" double ep(double a) { return a + 1; }\n'
    import cumath.sparse._matmul._generated as G

    monkeypatch.setattr(G, "_symbol", lambda ir, what: ir)
    rng = np.random.default_rng(4)
    d = rng.random((23, 19))
    d[d < 0.6] = 0
    b = rng.random((19, 8))
    ref = np.full((23, 8), np.inf)
    for i, j in zip(*np.nonzero(d)):
        ref[i] = np.minimum(ref[i], d[i, j] + b[j])
    for fmt in (N.DIAI, N.CSR):
        got, k = run(fmt, d, b, np.full((23, 8), np.inf), 1.0, 1.0, monkeypatch=monkeypatch, operators=ops,
                     prologs=(None, "ep", {"add": "ad", "mul": "mu"}, 90))
        assert np.array_equal(got, ref + 1), fmt.name


def test_prologs(monkeypatch):
    """Prologs of a and b (applied as the elements are read) on the three schedules, alpha and beta applied."""
    ops = 'extern "C" double pa(double a) { return 2 * a; }\n' \
          'extern "C" double pb(double b) { return b < 0 ? -b : b; }\n'
    import cumath.sparse._matmul._generated as G

    monkeypatch.setattr(G, "_symbol", lambda ir, what: ir)
    rng = np.random.default_rng(5)
    d = rand(rng, (29, 21), "float64", 0.3)
    b, c = rand(rng, (21, 8), "float64"), rand(rng, (29, 8), "float64")
    for fmt in (N.DIAI, N.BSRRight(2, 3), N.COO):
        got, _ = run(fmt, d, b, c, 1.5, 0.5, monkeypatch=monkeypatch, operators=ops,
                     prologs=({"a": "pa", "b": "pb"}, None, None, 90))
        assert relerr(got, 1.5 * (2 * d) @ np.abs(b) + 0.5 * c) < 1e-12, fmt.name
