"""cumath.device.Matmul / matmul and the cuSOLVERDx solvers on the CPU: validation, layout arithmetic, traits."""

import numpy as np
import pytest

import cumath.device as dev

MM = dict(size=(32, 16, 64), precision=np.float32, data_type="real", sm=90)


# ----------------------------------------------------------------------------------------------------- Matmul

@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(size=(32, 16)), ValueError, r"size=\(32, 16\) must be a sequence \(m, n, k\)"),
    (dict(size=(32, 0, 4)), ValueError, "size=0 must be at least 1"),
    (dict(precision=np.int8), ValueError, "the allowed values are numpy.float16, numpy.float32, numpy.float64"),
    (dict(precision=(np.float32, np.float32)), ValueError, "must be one dtype or three"),
    (dict(data_type="quaternion"), ValueError, r"data_type='quaternion' is not supported; the allowed values are "
                                               r"'real', 'complex'"),
    (dict(precision=np.float16, data_type="complex"), ValueError, "complex half-precision GEMMs are not offered"),
    (dict(function="TRSM"), ValueError, r"function='TRSM' is not supported; the allowed values are 'MM'"),
    (dict(execution="Thread"), ValueError, r"execution='Thread' is not supported; the allowed values are 'Block'"),
    (dict(block_size=128, block_dim=(128, 1, 1)), ValueError, "pass block_size or block_dim, not both"),
    (dict(block_size=(64, 2)), TypeError, "block_size must be an integer"),
    (dict(block_dim=(1, 2, 3, 4)), ValueError, "must have 1 to 3 entries"),
    (dict(transpose_mode=("non_transposed", "transposed"), arrangement=("col_major",) * 3), ValueError,
     "pass transpose_mode or arrangement, not both"),
    (dict(transpose_mode="transposed"), ValueError, "must be a pair"),
    (dict(transpose_mode=("N", "T")), ValueError, r"transpose_mode='N' is not supported; the allowed values are "
                                                   r"'non_transposed', 'transposed', 'conj_transposed'"),
    (dict(arrangement=("col_major", "row_major")), ValueError, "must be a triple"),
    (dict(arrangement=("col_major", "diagonal", "col_major")), ValueError, r"arrangement='diagonal'"),
    (dict(leading_dimension=(31, 64, 32)), ValueError, "lda=31 is less than the tile's leading extent 32"),
    (dict(leading_dimension=(32, 64)), ValueError, "must have 1 to 3 entries|must be a triple"),
    (dict(static_block_dim="yes"), TypeError, "static_block_dim must be True or False"),
    (dict(execute_api="tensors"), ValueError, r"execute_api='tensors' is not supported"),
])
def test_matmul_validation(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        dev.Matmul(**dict(MM, **kwargs))


def test_matmul_function_form():
    with pytest.raises(NotImplementedError, match="tensor API"):
        dev.matmul(tensor_types=("suggested_smem_a", "suggested_smem_b", "suggested_rmem_c"), **MM)
    with pytest.raises(TypeError, match=r"matmul\(\) needs the keyword arguments data_type"):
        dev.matmul(size=(4, 4, 4), precision=np.float32, sm=90)
    mm = dev.matmul(compiler="numba", code_type=("lto", (9, 0)), size=(8, 8, 8), precision=np.float64,
                    data_type="complex", block_size=64)
    assert isinstance(mm, dev.Matmul) and mm.sm == (9, 0) and mm.precision == "float64"


def test_matmul_layout_arithmetic():
    mm = dev.Matmul(**dict(MM, transpose_mode=("non_transposed", "transposed")))
    assert (mm.a_dim, mm.b_dim, mm.c_dim) == ((32, 64), (16, 64), (32, 16))
    assert mm.transpose_mode == dev.TransposeMode("non_transposed", "transposed")
    rm = dev.Matmul(**dict(MM, arrangement=("row_major", "col_major", "row_major")))
    assert (rm.a_dim, rm.b_dim, rm.c_dim) == ((32, 64), (64, 16), (32, 16))
    assert rm._min_ld() == (64, 64, 16)  # row-major tiles lead with their columns
    assert (rm.m, rm.n, rm.k) == (32, 16, 64)


def test_matmul_traits(mathdx):
    mm = dev.Matmul(**dict(MM, transpose_mode=("non_transposed", "transposed"), block_size=256))
    assert mm.value_type == np.float32 and mm.c_value_type == np.float32
    assert mm.block_dim == dev.Dim3(256, 1, 1) and mm.block_size == 256
    assert mm.leading_dimension == dev.LeadingDimension(32, 16, 32)
    assert (mm.a_size, mm.b_size, mm.c_size) == (32 * 64, 16 * 64, 32 * 16)
    assert mm.alignment == (4, 4, 4)
    assert mm.get_shared_storage_size() == 4 * (32 * 64 + 16 * 64 + 32 * 16)
    sug = mm.suggested_leading_dimension
    assert sug.a >= 32 and sug.b >= 16 and sug.c >= 32
    padded = dev.Matmul(**dict(MM, transpose_mode=("non_transposed", "transposed"), leading_dimension="suggested"))
    assert padded.leading_dimension == sug and padded.a_size == sug.a * 64


def test_matmul_mixed_and_complex_value_types(mathdx):
    c = dev.Matmul(size=(8, 8, 8), precision=np.float64, data_type="complex", sm=90, block_size=32)
    assert c.value_type == np.complex128
    mixed = dev.Matmul(size=(16, 16, 16), precision=(np.float16, np.float16, np.float32), data_type="real", sm=90)
    assert mixed.a_value_type == np.float16 and mixed.c_value_type == np.float32
    with pytest.raises(AttributeError, match="different value types"):
        mixed.value_type


# ----------------------------------------------------------------------------------------------------- solvers

@pytest.mark.parametrize("make, exc, message", [
    (lambda: dev.Solver("svd", (4, 4), np.float32, "Block", sm=90), ValueError,
     r"function='svd' is not supported; the allowed values are 'potrf'"),
    (lambda: dev.Solver("potrf", (4, 4), np.float32, "Block", sm=90), ValueError, "potrf needs fill_mode"),
    (lambda: dev.Solver("potrf", (4, 5), np.float32, "Block", sm=90, fill_mode="lower"), ValueError,
     "potrf needs a square matrix"),
    (lambda: dev.Solver("geqrf", 4, np.float32, "Block", sm=90), ValueError, "must be a sequence"),
    (lambda: dev.Solver("geqrf", (4, 4, 1, 1), np.float32, "Block", sm=90), ValueError, "must be a sequence"),
    (lambda: dev.Solver("geqrf", (4, 4), np.float16, "Block", sm=90), ValueError, "numpy.float32, numpy.float64"),
    (lambda: dev.Solver("geqrf", (4, 4), np.float32, "Warp", sm=90), ValueError, "'Block', 'Thread'"),
    (lambda: dev.Solver("geqrf", (4, 4), np.float32, "Block", sm=90, job="all_vectors"), ValueError,
     "job= applies to the eigenvalue and SVD functions"),
    (lambda: dev.Solver("geqrf", (4, 4), np.float32, "Block", sm=90, arrangement="col_major"), ValueError,
     "must be a sequence"),
    (lambda: dev.Solver("geqrf", (4, 4), np.float32, "Thread", sm=90, batches_per_block=4), ValueError,
     "batches_per_block applies to Block execution only"),
    (lambda: dev.Solver("geqrf", (4, 4), np.float32, "Thread", sm=90, block_dim=32), ValueError,
     "block_dim applies to Block execution only"),
    (lambda: dev.Solver("geqrf", (8, 4), np.float32, "Block", sm=90, leading_dimensions=(7,)), ValueError,
     r"lda=7 is less than 8, the leading extent of a \(col_major\)"),
    (lambda: dev.Solver("potrf", (4, 4), np.float32, "Block", sm=90, fill_mode="diagonal"), ValueError,
     r"fill_mode='diagonal' is not supported; the allowed values are 'lower', 'upper'"),
    (lambda: dev.CholeskySolver((4, 4), np.float32, "Block", sm=90), TypeError, "needs fill_mode"),
    (lambda: dev.CholeskySolver((4, 4), np.float32, "Block", "lower", sm=90, side="left"), TypeError,
     r"unexpected keyword arguments \['side'\]"),
    (lambda: dev.TriangularSolver((4, 4), np.float32, "Block", sm=90), ValueError, "trsm needs fill_mode"),
])
def test_solver_validation(make, exc, message):
    with pytest.raises(exc, match=message):
        make()


def test_solver_layout_arithmetic():
    s = dev.CholeskySolver((32, 32), np.float64, "Block", "upper", sm=90, data_type="complex",
                           leading_dimensions=(33, 33), block_dim=(256, 1, 1))
    assert s.fill_mode == "upper" and (s.m, s.n, s.k) == (32, 32, 1)
    assert (s.lda, s.ldb) == (33, 33)
    assert s.a_strides() == (33 * 32, 1, 33) and s.value_type == np.complex128
    r = dev.Solver("getrf_partial_pivot", (6, 4), np.float32, "Block", sm=90, arrangement=("row_major",))
    assert r.lda == 4 and r._strides("a", 4) == (24, 4, 1)
    g = dev.Solver("gels", (8, 5, 2), np.float64, "Block", sm=90)
    assert g._mats() == {"a": (8, 5), "tau": (5,), "b": (8, 2)} and (g.lda, g.ldb) == (8, 8)
    t = dev.TriangularSolver((6, 3), np.float32, "Block", sm=90, fill_mode="lower", side="right")
    assert t._mats() == {"a": (3, 3), "b": (6, 3)} and t.side == "right" and t.diag == "non_unit"


def test_solver_traits(mathdx):
    s = dev.CholeskySolver((32, 32), np.float64, "Block", "upper", sm=90, data_type="complex",
                           leading_dimensions=(33, 33), block_dim=(256, 1, 1))
    assert s.block_dim == dev.Dim3(256, 1, 1) and s.batches_per_block == 1
    assert s.a_shape == (1, 32, 32) and s.a_size() == 33 * 32 and s.info_shape == (1,)
    assert s.workspace_size == 0 and s.suggested_batches_per_block >= 1
    b = dev.Solver("potrf", (16, 16), np.float32, "Block", sm=90, fill_mode="lower", batches_per_block="suggested")
    assert b.batches_per_block == b.suggested_batches_per_block >= 1
    assert b.a_shape == (b.batches_per_block, 16, 16) and b.a_size() == b.batches_per_block * 256
    lu = dev.LUPivotSolver((8, 8, 3), np.float64, "Block", sm=90)
    assert lu.ipiv_shape == (1, 8) and lu.b_shape == (1, 8, 3) and lu.b_size() == 24
    assert set(lu._numba_methods()) == {"factorize", "solve"}
    assert [p.name for p in lu._numba_methods()["solve"].params] == ["a", "ipiv", "b"]
    assert lu.block_dim == dev.Dim3(*lu._generator.traits(1)["block_dim"])  # one launch shape for both


def test_solver_code(mathdx):
    s = dev.QRFactorize((8, 6), np.float32, "Block", sm=90)
    kinds = s._generator.kinds()
    assert kinds[0] == "ltoir" and s.codes[0][:4] == b"\xed\x43\x4e\x7f"
    assert all(p.endswith(("." + k)) for p, k in zip(s.files, kinds))
