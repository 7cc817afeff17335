"""DELTA and STRUCTURED (N:M) levels of the Universal Sparse Tensor: conversions to and from CSR, COO, dense and
the other formats round-trip, against SciPy's own arrays; the storage is what the level formats say; the DSL's
errors are clear; products with such tensors; the same conversions on GPU tensors."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_ust import matrix  # noqa: E402

import cumath  # noqa: E402
from cumath.sparse.ust import Dimension, LevelFormat as F, LevelProperty as P, NamedFormats as N, Tensor, \
    TensorFormat  # noqa: E402

_i, _j = Dimension("i"), Dimension("j")
DELTA_FORMATS = [N.Delta(N.CSR), N.Delta(N.CSC), N.Delta(N.DCSR), N.Delta(N.BSRRight(2, 3)), N.Delta(N.DIAI),
                 TensorFormat((_i, _j), {_i: F.DELTA, _j: F.DENSE}, name="DeltaCROW")]


def pruned(rng, m, n, keep, block, dtype="float64"):
    """A dense m x n matrix with at most ``keep`` nonzeros in every block of ``block`` columns of a row (some
    blocks fewer, some empty); n need not be a multiple of the block."""
    d = rng.standard_normal((m, n)).astype(dtype)
    for r in range(m):
        for b0 in range(0, n, block):
            width = min(block, n - b0)
            k = int(rng.integers(0, min(keep, width) + 1))
            zero = np.setdiff1d(np.arange(width), rng.choice(width, k, replace=False))
            d[r, b0 + zero] = 0
    return d


@pytest.mark.parametrize("fmt", DELTA_FORMATS, ids=lambda f: f.name)
def test_delta_conversions(fmt):
    """DELTA formats to and from CSR, COO, CSC and dense (the CSR round trip of every index type and dtype is in
    test_ust.py's round trips)."""
    d = matrix(np.random.default_rng(len(fmt.name)), 13, 17)
    u = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=fmt, index_type="int32")
    assert u.tensor_format == fmt and u.index_type == "int32"
    for target in (N.CSR, N.COO, N.CSC):
        assert np.array_equal(u.convert(tensor_format=target).to_package().toarray(), d), target.name
    assert np.array_equal(Tensor.from_package(sp.coo_array(d)).convert(tensor_format=fmt).convert(
        tensor_format=N.CSR).to_package().toarray(), d)
    dense = Tensor.from_package(d).convert(tensor_format=fmt)
    assert np.array_equal(dense.convert(tensor_format=N.DenseMatrixRight).to_package(), d)


def test_delta_storage_against_scipy():
    """Delta(CSR) keeps SciPy's row pointers and values; its coordinates are the gaps between SciPy's columns."""
    rng = np.random.default_rng(2)
    d = matrix(rng, 40, 300, density=0.05)
    a = sp.csr_array(d)
    u = Tensor.from_package(a).convert(tensor_format=N.Delta(N.CSR))
    assert np.array_equal(u.pos(1), a.indptr) and np.array_equal(u.val, a.data)
    gaps = np.concatenate([np.diff(np.concatenate([[0], a.indices[s:e]])) for s, e in zip(a.indptr[:-1], a.indptr[1:])])
    assert np.array_equal(u.crd(1), gaps) and (np.asarray(u.crd(1)) >= 0).all()
    assert np.asarray(u.crd(1)).max() < a.indices.max()  # gaps are smaller than the columns
    c = Tensor.from_package(a).convert(tensor_format=N.Delta(N.CSC))
    ref = a.tocsc()
    cols = np.concatenate([np.cumsum(np.asarray(c.crd(1))[s:e]) for s, e in zip(ref.indptr[:-1], ref.indptr[1:])])
    assert np.array_equal(c.pos(1), ref.indptr) and np.array_equal(cols, ref.indices)


@pytest.mark.parametrize("n,m", [(2, 4), (1, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("cols", [16, 17])
@pytest.mark.parametrize("dtype", ("float32", "float64", "complex64"))
def test_structured_round_trips(n, m, cols, dtype):
    rng = np.random.default_rng(n * 100 + m * 10 + cols)
    d = pruned(rng, 9, cols, n, m, "float64").astype(dtype)
    fmt = N.Structured(n, m)
    u = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=fmt, index_type="int32")
    blocks = -(-cols // m)
    # exactly n (coordinate, value) pairs per block, coordinates ordered and unique inside the block
    crd = np.asarray(u.crd(2)).reshape(9, blocks, n)
    assert u.pos(2) is None and np.asarray(u.val).shape == (9 * blocks * n,)
    assert (np.diff(crd, axis=-1) > 0).all() and (crd >= 0).all() and (crd < m).all()
    for target in (N.CSR, N.COO, N.CSC, N.DenseMatrixRight):
        out = u.convert(tensor_format=target).to_package()
        assert np.array_equal(out if target == N.DenseMatrixRight else out.toarray(), d), target.name
    assert np.array_equal(Tensor.from_package(d).convert(tensor_format=fmt).convert(
        tensor_format=N.CSR).to_package().toarray(), d)
    assert u.convert(tensor_format=N.CSR).nse == np.count_nonzero(d)
    # the stored values are the matrix's at the stored coordinates (padding holds zeros)
    vals = np.asarray(u.val).reshape(9, blocks, n)
    col = np.arange(blocks)[None, :, None] * m + crd
    inside = col < cols
    assert np.array_equal(vals[inside], d[np.broadcast_to(np.arange(9)[:, None, None], col.shape)[inside],
                                        col[inside]])
    assert (vals[~inside] == 0).all()


def test_structured_against_scipy_and_other_formats():
    rng = np.random.default_rng(5)
    d = pruned(rng, 12, 20, 2, 4)
    a = sp.csr_array(d)
    u = Tensor.from_package(a).convert(tensor_format=N.Structured(2, 4))
    coo = u.convert(tensor_format=N.COO).to_package()
    ref = a.tocoo()
    assert np.array_equal(coo.row, ref.row) and np.array_equal(coo.col, ref.col) and np.array_equal(coo.data, ref.data)
    for fmt in (N.DIAI, N.BSRRight(2, 2), N.Delta(N.CSR), N.DCSC):
        v = u.convert(tensor_format=fmt).convert(tensor_format=N.Structured(2, 4))
        assert np.array_equal(v.convert(tensor_format=N.CSR).to_package().toarray(), d), fmt.name
        assert np.array_equal(np.asarray(v.crd(2)), np.asarray(u.crd(2))) and np.array_equal(v.val, u.val)


def test_products_with_delta_and_structured():
    rng = np.random.default_rng(8)
    d = pruned(rng, 30, 24, 2, 4)
    b = rng.standard_normal((24, 5))
    for fmt in (N.Structured(2, 4), N.Delta(N.CSR)):
        a = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=fmt)
        assert np.abs(cumath.sparse.matmul(a, b) - d @ b).max() < 1e-12, fmt.name


def test_delta_structured_errors():
    rng = np.random.default_rng(9)
    with pytest.raises(TypeError, match=r"STRUCTURED level needs its N: write \(LevelFormat.STRUCTURED, N\)"):
        TensorFormat((_i, _j), {_i: F.DENSE, _j // 4: F.DENSE, _j % 4: F.STRUCTURED})
    with pytest.raises(TypeError, match="N >= 1"):
        TensorFormat((_i, _j), {_i: F.DENSE, _j // 4: F.DENSE, _j % 4: (F.STRUCTURED, 0)})
    with pytest.raises(ValueError, match=r"must be x % M, holding N <= M entries of every block of M; got N=5"):
        TensorFormat((_i, _j), {_i: F.DENSE, _j // 4: F.DENSE, _j % 4: (F.STRUCTURED, 5)})
    with pytest.raises(ValueError, match=r"must be x % M"):
        TensorFormat((_i, _j), {_i: F.DENSE, _j: (F.STRUCTURED, 2)})
    with pytest.raises(ValueError, match="keeps its coordinates ordered and unique"):
        TensorFormat((_i, _j), {_i: F.DENSE, _j: (F.DELTA, P.NONUNIQUE)})
    with pytest.raises(ValueError, match="NONUNIQUE compressed level"):
        N.Delta(N.COO)
    with pytest.raises(ValueError, match="no COMPRESSED level"):
        N.Delta(N.DenseMatrixRight)
    d = matrix(rng, 6, 8, density=0.9)
    with pytest.raises(ValueError, match=r"holds 2 of every 4 elements of level 2, but a block holds [34]; prune "
                                         r"the tensor to 2:4 first"):
        Tensor.from_package(sp.csr_array(d)).convert(tensor_format=N.Structured(2, 4))
    assert repr(N.Structured(2, 4)) == "TensorFormat([i, j] -> (i: DENSE, (j // 4): DENSE, (j % 4): STRUCTURED[2:4]), " \
                                       "name='Structured2x4')"
    assert N.Structured(2, 4) != N.Structured(1, 4) and N.Structured(2, 4).level_param(2) == 2
    assert N.Structured(2, 4).levels[_j % 4] == (F.STRUCTURED, 2)


def test_property_delta_structured_round_trip():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=40, deadline=None)
    @hyp.given(m=st.integers(1, 9), n=st.integers(1, 13), keep=st.integers(1, 4), block=st.integers(1, 5),
               seed=st.integers(0, 2**31))
    def check(m, n, keep, block, seed):
        keep = min(keep, block)
        d = pruned(np.random.default_rng(seed), m, n, keep, block)
        for fmt in (N.Structured(keep, block), N.Delta(N.CSR), N.Delta(N.DCSC)):
            t = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=fmt)
            assert np.array_equal(t.convert(tensor_format=N.CSR).to_package().toarray(), d), fmt.name

    check()


@pytest.mark.gpu
def test_gpu_conversions():
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    rng = np.random.default_rng(10)
    d = pruned(rng, 21, 18, 2, 4)
    for fmt in (N.Structured(2, 4), N.Delta(N.CSR), N.Delta(N.CSC)):
        u = Tensor.from_package(csp.csr_matrix(cp.asarray(d))).convert(tensor_format=fmt)
        assert u.device == "cuda"
        back = u.convert(tensor_format=N.CSR).to_package()
        assert isinstance(back, csp.csr_matrix) and np.array_equal(back.toarray().get(), d), fmt.name
