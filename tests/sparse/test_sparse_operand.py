"""The sparse-operand adapter (cumath.sparse._operand): CSR views of SciPy, PyTorch (and CuPy) matrices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cumath.sparse._operand import CSR, is_sparse, pattern_fingerprint, wrap_sparse, wrap_sparse_operands

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks")]


@pytest.mark.parametrize("kind", ["csr_matrix", "csr_array"])
@pytest.mark.parametrize("index", ["int32", "int64"])
def test_scipy_matrices_are_read_in_place(kind, index):
    m = getattr(sp, kind)(np.array([[1.0, 0, 2], [0, 3, 0], [4, 0, 5]]))
    m.indptr, m.indices = m.indptr.astype(index), m.indices.astype(index)
    c = wrap_sparse(m)
    assert isinstance(c, CSR) and c.shape == (3, 3) and c.n == 3 and c.nnz == 5 and c.package == "numpy"
    assert c.dtype == "float64" and c.index_dtype == index and c.device_id is None and not c.batch_shape
    assert c.values.ptr == m.data.ctypes.data and c.indices.ptr == m.indices.ctypes.data  # zero-copy
    assert c.canonical is True
    assert "scipy float64[3, 3] nnz=5" in repr(c)
    assert wrap_sparse(c) is c and is_sparse(m) and is_sparse(m.tocsc()) and not is_sparse(np.ones(2))


def test_torch_tensors_batched_too():
    torch = pytest.importorskip("torch")
    d = torch.tensor([[1.0, 0], [2, 3]])
    c = wrap_sparse(d.to_sparse_csr())
    assert c.package == "torch" and c.index_dtype == "int64" and c.nnz == 3 and c.shape == (2, 2)
    b = torch.stack([d, 2 * d]).to_sparse_csr()
    cb = wrap_sparse(b)
    assert cb.batch_shape == (2,) and cb.indptr.shape == (2, 3) and cb.values.shape == (2, 3)
    assert is_sparse(b) and not is_sparse(d)


def test_what_is_refused():
    m = sp.random_array((4, 4), density=0.5, format="csr", rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"a must be in CSR format; got a csc_array in 'csc' format: convert it "
                                        r"with a.tocsr\(\)"):
        wrap_sparse(m.tocsc())
    with pytest.raises(TypeError, match="a must be a scipy.sparse.csr_matrix or csr_array, a cupyx"):
        wrap_sparse(np.ones((2, 2)))
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"must be a sparse CSR tensor; got a tensor with layout torch.strided: "
                                        r"convert it with a.to_sparse_csr\(\)"):
        wrap_sparse(torch.ones(2, 2))
    with pytest.raises(TypeError, match="layout torch.sparse_coo"):
        wrap_sparse(torch.ones(2, 2).to_sparse())
    hybrid = torch.ones(2, 2, 3).to_sparse_csr(dense_dim=1)
    with pytest.raises(TypeError, match="hybrid CSR tensor with 1 dense dimension"):
        wrap_sparse(hybrid)
    odd = sp.csr_array(np.eye(3))
    odd.indices = odd.indices.astype(np.int16)
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        wrap_sparse(odd)


def test_explicit_batches_are_checked():
    a = sp.csr_array(np.eye(3))
    items = wrap_sparse_operands([a, a * 2])
    assert isinstance(items, tuple) and len(items) == 2
    with pytest.raises(ValueError, match="a is an empty sequence"):
        wrap_sparse_operands([])
    with pytest.raises(TypeError, match=r"a\[1\] has dtype float32 while a\[0\] has float64"):
        wrap_sparse_operands([a, a.astype(np.float32)])


def test_pattern_fingerprints():
    a = sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0], [0, 6, 5]]))
    same = sp.csr_array((a.data * 7, a.indices.copy(), a.indptr.copy()), shape=a.shape)
    other = sp.csr_array(a.T)
    fa = pattern_fingerprint(wrap_sparse(a))
    assert fa == pattern_fingerprint(wrap_sparse(same))
    assert fa != pattern_fingerprint(wrap_sparse(other))
    wide = sp.csr_array((a.data, a.indices.astype(np.int64), a.indptr.astype(np.int64)), shape=a.shape)
    assert fa != pattern_fingerprint(wrap_sparse(wide))  # another index dtype is another plan
    hash(fa)
