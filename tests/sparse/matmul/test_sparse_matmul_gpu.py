"""The sparse matmul on a GPU (cuSPARSE SpMM / SpMV) against a dense NumPy float64 product: CuPy and PyTorch
operands, every format, index type and dtype, qualifiers, batches, the stateful API."""

from __future__ import annotations

import numpy as np
import pytest

from cumath.sparse import Matmul, matmul, matmul_matrix_qualifiers_dtype as QD

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-11, "complex128": 1e-11}


def _dense(rng, m, n, dtype, density=0.3):
    x = rng.standard_normal((m, n)) + (1j * rng.standard_normal((m, n)) if dtype.startswith("complex") else 0)
    x[rng.random((m, n)) > density] = 0
    return x.astype(dtype)


def relerr(x, ref):
    return np.abs(np.asarray(x, np.complex128) - ref).max() / max(np.abs(ref).max(), 1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", ("csr", "csc", "coo"))
@pytest.mark.parametrize("index", ("int32", "int64"))
def test_cupy(dtype, fmt, index):
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    rng = np.random.default_rng(1)
    d = _dense(rng, 33, 19, dtype)
    a = csp.csr_matrix(cp.asarray(d)).asformat(fmt)
    if fmt != "coo":
        a.indptr, a.indices = a.indptr.astype(index), a.indices.astype(index)
    b = cp.asarray(_dense(rng, 19, 5, dtype, 1.0))
    c = cp.asarray(_dense(rng, 33, 5, dtype, 1.0))
    ref = 2 * d.astype(np.complex128) @ b.get() + 0.5 * c.get()
    out = matmul(a, b, c, alpha=2, beta=0.5)
    assert out is c and relerr(out.get(), ref) < TOL[dtype]
    assert relerr(matmul(a, b[:, 0]).get(), d @ b.get()[:, 0]) < TOL[dtype]


@pytest.mark.parametrize("layout", ("to_sparse_csr", "to_sparse_csc", "to_sparse_coo", "bsr"))
def test_torch(layout):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    d = _dense(rng, 12, 9, "float32")
    t = torch.tensor(d, device="cuda")
    a = t.to_sparse_bsr((3, 3)) if layout == "bsr" else getattr(t, layout)()
    b = torch.rand(9, 4, device="cuda")
    assert relerr(matmul(a, b).cpu().numpy(), d @ b.cpu().numpy()) < 1e-4


def test_qualifiers_batches_and_stateful():
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    rng = np.random.default_rng(3)
    d = _dense(rng, 16, 11, "complex128")
    a = csp.csr_matrix(cp.asarray(d))
    q = np.zeros(2, QD)
    q[0] = (1, 1)
    b = cp.asarray(_dense(rng, 16, 3, "complex128", 1.0))
    assert relerr(matmul(a, b, qualifiers=q).get(), d.conj().T @ b.get()) < 1e-11
    bb = cp.asarray(_dense(rng, 4 * 11, 3, "complex128", 1.0)).reshape(4, 11, 3)
    assert relerr(matmul(a, bb).get(), np.matmul(d, bb.get())) < 1e-11
    b1 = cp.asarray(_dense(rng, 11, 3, "complex128", 1.0))
    with Matmul(a, b1) as mm:
        mm.plan()
        assert mm.engine == "cusparse"
        assert relerr(mm.execute().get(), d @ b1.get()) < 1e-11
        a.data *= 2
        assert relerr(mm.execute().get(), 2 * d @ b1.get()) < 1e-11


# ------------------------------------------------------------------------------------ generated kernels

def _ust_gpu(d, fmt):
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    from cumath.sparse.ust import Tensor

    return Tensor.from_package(csp.csr_matrix(cp.asarray(d))).convert(tensor_format=fmt)


@pytest.mark.parametrize("name", ["DIAI", "DIAJ", "DCSR", "CROW", "BSRRight", "CSR-codegen", "COO-codegen"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_generated_formats(name, dtype):
    cp = pytest.importorskip("cupy")
    from cumath.sparse.ust import NamedFormats as N

    fmt = {"BSRRight": N.BSRRight(2, 3), "CSR-codegen": N.CSR, "COO-codegen": N.COO}.get(name) or getattr(N, name)
    rng = np.random.default_rng(5)
    d = _dense(rng, 37, 29, dtype)
    a = _ust_gpu(d, fmt)
    b = cp.asarray(_dense(rng, 29, 6, dtype, 1.0))
    c = cp.asarray(_dense(rng, 37, 6, dtype, 1.0))
    ref = 1.5 * d.astype(np.complex128) @ b.get() - 2 * c.get()
    with Matmul(a, b, c, alpha=1.5, beta=-2.0, options={"codegen": True}) as mm:
        mm.plan()
        assert mm.engine == "generated"
        assert relerr(mm.execute().get(), ref) < TOL[dtype]
    assert relerr(matmul(a, b[:, 0], options={"codegen": True}).get(), d @ b.get()[:, 0]) < TOL[dtype]
    q = np.zeros(2, QD)
    q[0]["is_transpose"] = 1
    bt = cp.asarray(_dense(rng, 37, 3, dtype, 1.0))
    assert relerr(matmul(a, bt, qualifiers=q, options={"codegen": True}).get(), d.T @ bt.get()) < TOL[dtype]


def test_generated_prologs_epilog_semiring():
    cp = pytest.importorskip("cupy")
    pytest.importorskip("numba.cuda")
    import cumath.sparse as S
    from cumath.sparse.ust import NamedFormats as N

    rng = np.random.default_rng(6)
    d = _dense(rng, 40, 30, "float32")
    a = _ust_gpu(d, N.CSR)
    b = cp.asarray(_dense(rng, 30, 4, "float32", 1.0))
    c = cp.zeros((40, 4), cp.float32)
    pa = S.compile_matmul_prolog(lambda x: x * 2, operand_label="a", dtype="float32")
    pb = S.compile_matmul_prolog(lambda x: abs(x), operand_label="b", dtype="float32")
    ep = S.compile_matmul_epilog(lambda x: x + 1, dtype="float32")
    out = S.matmul(a, b, c, beta=0.0, prologs={"a": pa, "b": pb}, epilog=ep)
    assert relerr(out.get(), (2 * d) @ np.abs(b.get()) + 1) < 1e-4
    ref = (2 * d) @ np.abs(b.get()) + 1
    # the package's own sparse matrices are read through a zero-copy UST view
    csp = pytest.importorskip("cupyx.scipy.sparse")
    for x in (csp.csr_matrix(cp.asarray(d)), csp.coo_matrix(cp.asarray(d)), csp.csc_matrix(cp.asarray(d))):
        out = S.matmul(x, b, cp.zeros((40, 4), cp.float32), beta=0.0, prologs={"a": pa, "b": pb}, epilog=ep)
        assert relerr(out.get(), ref) < 1e-4, x.format
    with S.Matmul(csp.csr_matrix(cp.asarray(d)), b) as mm:
        mm.plan(prologs={"a": pa}, epilog=ep)
        assert mm.engine == "generated"
        assert relerr(mm.execute().get(), (2 * d) @ b.get() + 1) < 1e-4
    # the gather schedule (DIAI) applies beta and the epilog in its one pass
    c2 = cp.asarray(_dense(rng, 40, 4, "float32", 1.0))
    ref2 = (2 * d) @ np.abs(b.get()) + 0.5 * c2.get() + 1
    out = S.matmul(_ust_gpu(d, N.DIAI), b, c2, beta=0.5, prologs={"a": pa, "b": pb}, epilog=ep)
    assert relerr(out.get(), ref2) < 1e-4


def test_generated_prolog_torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("numba.cuda")
    import cumath.sparse as S

    rng = np.random.default_rng(8)
    d = _dense(rng, 24, 18, "float64")
    b = torch.tensor(_dense(rng, 18, 5, "float64", 1.0), device="cuda")
    pa = S.compile_matmul_prolog(lambda x: x * 3, operand_label="a", dtype="float64")
    for a in (torch.tensor(d, device="cuda").to_sparse_csr(), torch.tensor(d, device="cuda").to_sparse_bsr((3, 3))):
        out = S.matmul(a, b, prologs={"a": pa})
        assert relerr(out.cpu().numpy(), 3 * d @ b.cpu().numpy()) < 1e-11, a.layout


def test_stateless_generated_reads_new_values():
    """A cached plan of a generated kernel reads the tensor of each call (same pattern, new values)."""
    cp = pytest.importorskip("cupy")
    from cumath.sparse.ust import NamedFormats as N

    rng = np.random.default_rng(9)
    d = _dense(rng, 31, 23, "float32")
    b = cp.asarray(_dense(rng, 23, 4, "float32", 1.0))
    for fmt in (N.DIAI, N.BSRRight(2, 3)):
        a1, a2 = _ust_gpu(d, fmt), _ust_gpu(3 * d, fmt)
        assert relerr(matmul(a1, b).get(), d @ b.get()) < 1e-4
        assert relerr(matmul(a2, b).get(), 3 * d @ b.get()) < 1e-4, fmt.name


def test_generated_cache_second_process(tmp_path):
    """The generated kernel of a format is compiled once: a second process loads it from the disk cache."""
    import os
    import subprocess
    import sys
    import textwrap

    pytest.importorskip("cupy")
    script = textwrap.dedent("""
        import time, numpy as np, cupy as cp, cupyx.scipy.sparse as csp, cumath
        from cumath.sparse.ust import Tensor, NamedFormats as N
        d = np.eye(64, dtype=np.float32) * 2
        a = Tensor.from_package(csp.csr_matrix(cp.asarray(d))).convert(tensor_format=N.DIAI)
        b = cp.ones((64, 8), cp.float32)
        t0 = time.perf_counter()
        mm = cumath.sparse.Matmul(a, b)
        mm.plan()
        print(time.perf_counter() - t0)
    """)
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    times = [float(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                  check=True).stdout.split()[-1]) for _ in range(2)]
    print("plan times (first, second process):", times)
    assert times[1] < times[0]


def _banded(rng, m, k, offsets, dtype):
    d = np.zeros((m, k), dtype)
    for off in offsets:
        for i in range(m):
            if 0 <= i + off < k:
                d[i, i + off] = rng.standard_normal() + (1j * rng.standard_normal() if dtype.startswith("complex") else 0)
    return d


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 8, 64, 300])
def test_generated_dia_tuned_shapes(dtype, n):
    """The DIA gather kernel: more diagonals than one shared-memory chunk (> 64), diagonals that leave the matrix,
    column counts on the 16-byte vector path (8, 64), off it (3), a vector (1), several column tiles (300);
    beta != 0, a misaligned b (a view one element in), a column-major b, a batch of b."""
    cp = pytest.importorskip("cupy")
    from cumath.sparse.ust import NamedFormats as N

    rng = np.random.default_rng(11)
    offsets = rng.choice(np.arange(-250, 270), 80, replace=False).tolist()  # 80 diagonals of 301 x 277, short ones
    d = _banded(rng, 301, 277, offsets, dtype)
    a = _ust_gpu(d, N.DIAI)
    bh = _dense(rng, 277, n + 1, dtype, 1.0)
    ch = _dense(rng, 301, n, dtype, 1.0)
    for b in (cp.asarray(bh[:, :n]), cp.asarray(bh)[:, 1:], cp.asfortranarray(cp.asarray(bh[:, :n]))):
        ref = 2 * d.astype(np.complex128) @ b.get() - 0.5 * ch
        got = matmul(a, b, cp.asarray(ch), alpha=2.0, beta=-0.5, options={"codegen": True})
        assert relerr(got.get(), ref) < TOL[dtype], (b.strides, n)
    bb = cp.asarray(_dense(rng, 3 * 277, n, dtype, 1.0).reshape(3, 277, n))
    ref = np.einsum("ik,bkn->bin", d.astype(np.complex128), bb.get())
    assert relerr(matmul(a, bb, options={"codegen": True}).get(), ref) < TOL[dtype]
    if n == 1:
        x = cp.asarray(bh[:, 0])
        assert relerr(matmul(a, x, options={"codegen": True}).get(), d @ bh[:, 0]) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", [(3, 5), (4, 4), (1, 7)])
@pytest.mark.parametrize("n", [5, 64, 260])
def test_generated_bsr_tuned_shapes(dtype, block, n):
    """The BSR 'owned' kernel: odd block sizes, extents that are not multiples of the block, columns on and off
    the vector path and across column tiles, beta != 0, a misaligned b and a batch."""
    cp = pytest.importorskip("cupy")
    from cumath.sparse.ust import NamedFormats as N

    rng = np.random.default_rng(12)
    d = _dense(rng, 103, 97, dtype, 0.2)
    a = _ust_gpu(d, N.BSRRight(*block))
    bh = _dense(rng, 97, n + 1, dtype, 1.0)
    ch = _dense(rng, 103, n, dtype, 1.0)
    for b in (cp.asarray(bh[:, :n]), cp.asarray(bh)[:, 1:]):
        ref = 1.5 * d.astype(np.complex128) @ b.get() + 0.25 * ch
        got = matmul(a, b, cp.asarray(ch), alpha=1.5, beta=0.25, options={"codegen": True})
        assert relerr(got.get(), ref) < TOL[dtype], (block, n)
    bb = cp.asarray(_dense(rng, 2 * 97, n, dtype, 1.0).reshape(2, 97, n))
    ref = np.einsum("ik,bkn->bin", d.astype(np.complex128), bb.get())
    assert relerr(matmul(a, bb, options={"codegen": True}).get(), ref) < TOL[dtype]


@pytest.mark.parametrize("dtype", ("float32", "complex128"))
def test_cusparse_algorithms_and_autotune(dtype):
    """Every cuSPARSE algorithm cumath offers for CSR SpMM / SpMV and BSR SpMM gives the right product (those the
    installed cuSPARSE refuses for the problem raise CUSPARSEError at plan); autotune() keeps one that runs and
    does not touch c; algorithm='autotune' tunes once for stateless calls."""
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    from cumath.errors import CUSPARSEError

    rng = np.random.default_rng(13)
    d = _dense(rng, 301, 203, dtype, 0.05)
    a = csp.csr_matrix(cp.asarray(d))
    b = cp.asarray(_dense(rng, 203, 33, dtype, 1.0))
    c = cp.asarray(_dense(rng, 301, 33, dtype, 1.0))
    ref = d.astype(np.complex128) @ b.get() + 0.5 * c.get()
    ran = []
    for alg in ("DEFAULT", "CSR_ALG1", "CSR_ALG2", "CSR_ALG3"):
        try:
            with Matmul(a, b, c.copy(), beta=0.5, options={"algorithm": alg}) as mm:
                mm.plan()
                assert mm.algorithm == alg
                assert relerr(mm.execute().get(), ref) < TOL[dtype], alg
                assert relerr(mm.execute().get(), d @ b.get() + 0.5 * (d @ b.get() + 0.5 * c.get())) < TOL[dtype]
                ran.append(alg)
        except CUSPARSEError:
            assert alg != "DEFAULT"
    x = cp.asarray(_dense(rng, 203, 1, dtype, 1.0)[:, 0])
    for alg in ("DEFAULT", "CSR_ALG1", "CSR_ALG2"):
        assert relerr(matmul(a, x, options={"algorithm": alg}).get(), d @ x.get()) < TOL[dtype], alg
    c0 = c.copy()
    with Matmul(a, b, c, beta=0.5) as mm:
        mm.plan()
        times = mm.autotune(iterations=3)
        assert [n for n, _ in times][0] == mm.algorithm and set(n for n, _ in times) <= set(ran)
        assert bool((c == c0).all())
        assert relerr(mm.execute().get(), ref) < TOL[dtype]
    for _ in range(2):
        assert relerr(matmul(a, b, options={"algorithm": "autotune"}).get(), d @ b.get()) < TOL[dtype]
    torch = pytest.importorskip("torch")
    hb = torch.tensor(np.kron(_dense(rng, 40, 30, dtype, 0.2), np.ones((3, 3))), device="cuda")
    bsr = hb.to_sparse_bsr((3, 3))
    bref = hb.cpu().numpy() @ np.ones((90, 33))
    ones = torch.ones((90, 33), dtype=hb.dtype, device="cuda")
    for alg in ("DEFAULT", "BSR_ALG1"):
        try:
            with Matmul(bsr, ones, options={"algorithm": alg}) as mm:
                mm.plan()
                assert relerr(mm.execute().cpu().numpy(), bref) < TOL[dtype], alg
        except ValueError as exc:  # this cuSPARSE multiplies the BSR matrix as CSR: BSR_ALG1 is not offered
            assert alg == "BSR_ALG1" and "SpMM of CSR" in str(exc)
    with Matmul(bsr, ones) as mm:
        mm.plan()
        mm.autotune()
        assert mm.algorithm in ("DEFAULT", "BSR_ALG1", "CSR_ALG1", "CSR_ALG2", "CSR_ALG3")
        assert relerr(mm.execute().cpu().numpy(), bref) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_generated_structured_and_delta(dtype):
    """Generated kernels for N:M structured tensors (a STRUCTURED level walked in blocks of N) and DELTA levels
    (read as compressed from coordinates decoded at plan)."""
    cp = pytest.importorskip("cupy")
    from cumath.sparse.ust import NamedFormats as N

    rng = np.random.default_rng(14)
    d = _dense(rng, 45, 38, dtype, 0.6)
    for r in range(45):  # prune to 2:4 along the rows
        for b0 in range(0, 38, 4):
            nz = np.flatnonzero(d[r, b0:b0 + 4])
            d[r, b0 + nz[2:]] = 0
    b = cp.asarray(_dense(rng, 38, 12, dtype, 1.0))
    for fmt in (N.Structured(2, 4), N.Delta(N.CSR), N.Delta(N.DCSR), N.Delta(N.DIAI)):
        a = _ust_gpu(d, fmt)
        with Matmul(a, b, options={"codegen": True}) as mm:
            mm.plan()
            assert mm.engine == "generated"
            assert relerr(mm.execute().get(), d @ b.get()) < TOL[dtype], fmt.name
        assert relerr(matmul(a, b[:, 0]).get(), d @ b.get()[:, 0]) < TOL[dtype], fmt.name
