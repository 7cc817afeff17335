"""The Universal Sparse Tensor: the DSL (expressions, inverses, errors), every named format round-tripping
through conversions (against SciPy's own conversions), zero-copy views of SciPy/PyTorch/NumPy arrays,
to_package, from_file (Matrix Market, FROSTT), properties, and UST operands of the sparse matmul."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import cumath
from cumath.sparse.ust import Dimension, LevelFormat as F, LevelProperty as P, NamedFormats as N, Tensor, TensorFormat

MATRIX_FORMATS = [N.CSR, N.CSC, N.COO, N.DCSR, N.DCSC, N.CROW, N.CCOL, N.DIAI, N.DIAJ, N.SkewDIAI, N.SkewDIAJ,
                  N.DenseMatrixRight, N.DenseMatrixLeft, N.BSRRight(2, 3), N.BSRLeft(3, 2), N.BSCRight(2, 2),
                  N.BSCLeft(4, 2), N.Delta(N.CSR), N.Delta(N.CSC), N.Delta(N.DCSR), N.Delta(N.BSRRight(2, 3)),
                  N.Delta(N.DIAI)]


def matrix(rng, m=7, n=11, density=0.35, dtype="float64"):
    d = rng.standard_normal((m, n)).astype(dtype)
    d[rng.random((m, n)) > density] = 0
    return d


@pytest.mark.parametrize("fmt", MATRIX_FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("index_type", ("int32", "int64"))
@pytest.mark.parametrize("dtype", ("float32", "complex128"))
def test_round_trips(fmt, index_type, dtype):
    rng = np.random.default_rng(abs(hash((fmt.name, index_type, dtype))) % 2**32)
    d = matrix(rng, 7, 11, dtype="float64").astype(dtype)
    t = Tensor.from_package(sp.csr_array(d))
    u = t.convert(tensor_format=fmt, index_type=index_type, dtype=dtype)
    assert u.tensor_format == fmt and u.index_type == index_type and u.dtype == dtype
    back = u.convert(tensor_format=N.CSR).to_package()
    assert np.array_equal(back.toarray(), d)
    for lvl in range(fmt.num_levels):
        for arr in (u.pos(lvl), u.crd(lvl)):
            assert arr is None or arr.dtype == index_type


def test_against_scipy_conversions():
    rng = np.random.default_rng(1)
    d = matrix(rng, 9, 6)
    a = sp.csr_array(d)
    t = Tensor.from_package(a)
    csc = t.convert(tensor_format=N.CSC)
    ref = a.tocsc()
    assert np.array_equal(csc.pos(1), ref.indptr) and np.array_equal(csc.crd(1), ref.indices)
    assert np.array_equal(csc.val, ref.data)
    coo = t.convert(tensor_format=N.COO).to_package()
    assert np.array_equal(coo.toarray(), d)
    bsr = Tensor.from_package(sp.bsr_array(d, blocksize=(3, 2)))
    assert np.array_equal(bsr.convert(tensor_format=N.CSR).to_package().toarray(), d)
    assert np.array_equal(t.convert(tensor_format=N.BSRRight(3, 2)).to_package().toarray(), d)
    dia = Tensor.from_package(sp.dia_array(d))
    assert dia.tensor_format.name == "DIAJ" and np.array_equal(dia.convert(tensor_format=N.CSR).to_package().toarray(),
                                                               d)


def test_zero_copy_views_and_properties():
    rng = np.random.default_rng(2)
    d = matrix(rng)
    a = sp.csr_array(d)
    t = Tensor.from_package(a)
    assert t.pos(1) is a.indptr and t.crd(1) is a.indices and t.val is a.data and t.base is a
    assert t.extents == (7, 11) and t.levels == (7, 11) and t.nse == a.nnz and t.device == "cpu"
    assert t.to_package().indptr is a.indptr
    i, j = np.argwhere(d)[0]
    assert t.get_value((i, j)) == d[i, j] and t.get_value((0, 0)) == d[0, 0]
    c = t.clone()
    c.val[:] = 0
    assert a.data.any()
    c.copy_(t)
    assert np.array_equal(c.val, a.data)
    dense = np.asfortranarray(d)
    td = Tensor.from_package(dense)
    assert td.tensor_format == N.DenseMatrixLeft and np.array_equal(td.to_package(), d)
    assert Tensor.from_package(d[::2]).tensor_format == N.DenseMatrixRight  # non-contiguous: copied
    with pytest.raises(IndexError):
        t.get_value((7, 0))


def test_torch_views():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    d = matrix(rng, 6, 8)
    x = torch.tensor(d)
    for layout in ("to_sparse_csr", "to_sparse_csc", "to_sparse_coo"):
        s = getattr(x, layout)()
        t = Tensor.from_package(s)
        assert np.array_equal(t.to_package().to_dense().numpy(), d)
        assert np.array_equal(t.convert(tensor_format=N.DIAI).convert(tensor_format=N.CSR).to_package().to_dense()
                              .numpy(), d)
    bsr = Tensor.from_package(x.to_sparse_bsr((2, 2)))
    assert bsr.tensor_format == N.BSRRight(2, 2) and np.array_equal(bsr.to_package().to_dense().numpy(), d)


def test_higher_order_and_files(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 5, 3))
    x[rng.random(x.shape) > 0.3] = 0
    coords = np.argwhere(x)
    lines = [" ".join(str(c + 1) for c in co) + f" {float(x[tuple(co)])!r}" for co in coords]
    p = tmp_path / "t.tns"
    p.write_text("# a FROSTT tensor\n" + "\n".join(lines) + "\n")
    t = Tensor.from_file(p)
    assert t.tensor_format == N.COOd(3) and t.extents == tuple(int(v) + 1 for v in coords.max(0))
    csf = t.convert(tensor_format=N.CSFd(3))
    dense = csf.convert(tensor_format=N.DenseTensor(3)).to_package()
    ext = t.extents
    assert np.array_equal(dense, x[: ext[0], : ext[1], : ext[2]])
    import scipy.io

    a = sp.random_array((13, 9), density=0.3, random_state=5, format="coo")
    scipy.io.mmwrite(tmp_path / "m.mtx", a)
    m = Tensor.from_file(tmp_path / "m.mtx")
    assert m.tensor_format == N.COO and np.allclose(m.convert(tensor_format=N.CSR).to_package().toarray(),
                                                    a.toarray())
    with pytest.raises(ValueError, match="Matrix Market"):
        Tensor.from_file(tmp_path / "m.txt")


def test_dsl_mapping_and_errors():
    i, j = Dimension("i"), Dimension("j")
    assert N.CSC.dim2lvl([0, 4]) == [4, 0] and N.CSR.dim2lvl([0, 4]) == [0, 4]
    assert N.BSRRight(2, 2).dim2lvl([1, 2]) == [0, 1, 1, 0]
    assert N.BSRRight(2, 3).lvl2dim([0, 0, 1, 2]) == [1, 2]
    assert N.DIAI.lvl2dim([2, 3]) == [3, 5] and N.DIAI.dim2lvl([3, 5]) == [2, 3]
    assert N.CSR.dim2lvl([7, 11], as_size=True) == [7, 11] and N.DIAI.dim2lvl([7, 11], as_size=True) == [17, 7]
    assert N.COO.is_unique is False and N.CSR.is_unique and N.CSR.is_identity and not N.CSC.is_identity
    assert repr(j - i) == "(j - i)" and repr(i // 4) == "(i // 4)"
    with pytest.raises(ValueError, match="do not determine dimension"):
        TensorFormat((i, j), {i: F.DENSE})
    with pytest.raises(ValueError, match="do not determine dimension"):
        TensorFormat((i, j), {i // 2: F.DENSE, j: F.COMPRESSED})
    with pytest.raises(ValueError, match="not a dimension"):
        TensorFormat((i,), {j: F.DENSE})
    with pytest.raises(ValueError, match="single dimension"):
        (i + j) // 2
    with pytest.raises(ValueError, match="positive int"):
        i % 0
    with pytest.raises(TypeError, match="LevelFormat"):
        TensorFormat((i, j), {i: "dense", j: F.COMPRESSED})
    with pytest.raises(ValueError, match="needs a parent"):
        TensorFormat((i, j), {j: F.SINGLETON, i: F.DENSE})
    with pytest.raises(ValueError, match="distinct"):
        TensorFormat((i, Dimension("i")), {i: F.DENSE})
    custom = TensorFormat((i, j), {i: (F.COMPRESSED, P.UNIQUE), j // 2: F.COMPRESSED, j % 2: F.DENSE}, name="Pairs")
    rng = np.random.default_rng(6)
    d = matrix(rng, 5, 8)
    t = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=custom)
    assert np.array_equal(t.convert(tensor_format=N.CSR).to_package().toarray(), d)
    with pytest.raises(TypeError, match="no numpy counterpart"):
        t.to_package()
    delta = TensorFormat((i, j), {i: F.DENSE, j: F.DELTA})  # DELTA and STRUCTURED: test_ust_delta_structured.py
    assert np.array_equal(Tensor.from_package(sp.csr_array(d)).convert(tensor_format=delta).convert(
        tensor_format=N.CSR).to_package().toarray(), d)


@pytest.mark.parametrize("fmt", [N.CSR, N.CSC, N.COO, N.DIAI, N.BSRRight(2, 2), N.DCSR, N.CROW], ids=lambda f: f.name)
def test_ust_operands_of_matmul(fmt):
    rng = np.random.default_rng(7)
    d = matrix(rng, 8, 6)
    a = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=fmt)
    b = rng.standard_normal((6, 3))
    assert np.abs(cumath.sparse.matmul(a, b) - d @ b).max() < 1e-12


def test_property_round_trip():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=40, deadline=None)
    @hyp.given(m=st.integers(1, 9), n=st.integers(1, 9), k=st.integers(0, len(MATRIX_FORMATS) - 1),
               seed=st.integers(0, 2**31))
    def check(m, n, k, seed):
        d = matrix(np.random.default_rng(seed), m, n, density=0.4)
        t = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=MATRIX_FORMATS[k])
        assert np.array_equal(t.convert(tensor_format=N.CSR).to_package().toarray(), d)

    check()


def test_draw(tmp_path):
    import zlib

    d = np.zeros((6, 9))
    d[1, 2] = d[4, 7] = 3.0
    t = Tensor.from_package(sp.csr_array(d))
    img = t.draw(tmp_path / "s.png")
    assert img.shape == (6, 9) and img[1, 2] == 0 and img[4, 7] == 0 and img[0, 0] == 255
    data = (tmp_path / "s.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and b"IHDR" in data and data.endswith(
        b"IEND" + (zlib.crc32(b"IEND") & 0xFFFFFFFF).to_bytes(4, "big"))
    big = Tensor.from_package(sp.eye_array(3000, format="csr"))
    assert big.draw(max_side=500).shape == (500, 500)
    st = t.convert(tensor_format=N.DIAI).draw_storage(tmp_path / "st.png", width=16)
    assert st.dtype == np.uint8 and st.shape[1] == 16 * 8


def test_element_wise_kernel():
    d = np.array([[1.0, 0, -2], [0, 3, 0]])
    a = sp.csr_array(d)
    t = Tensor.from_package(a).set_kernel(lambda v: v * v + 1).run_kernel()
    assert np.array_equal(a.toarray(), np.where(d != 0, d * d + 1, 0))  # a view: the caller's values changed
    with pytest.raises(RuntimeError, match="set_kernel"):
        Tensor.from_package(sp.csr_array(d)).run_kernel()
    with pytest.raises(ValueError, match="one value per stored value"):
        t.set_kernel(lambda v: v.sum()).run_kernel()
    with pytest.raises(TypeError, match="callable"):
        t.set_kernel(3)
