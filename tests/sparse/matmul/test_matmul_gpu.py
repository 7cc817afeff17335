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
