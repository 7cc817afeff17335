"""cumath.device.Matmul / matmul and the cuSOLVERDx solvers on the CPU: validation, layout arithmetic, traits."""

import os

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
    (dict(execute_api="pipelined"), ValueError, r"execute_api='pipelined' is not supported"),
    (dict(tensor_types=("suggested_smem_a", "suggested_smem_b")), ValueError, "must be a triple"),
    (dict(tensor_types=("smem_a", "smem_b", "tmem_c")), ValueError, r"tensor_types='tmem_c' is not supported"),
    (dict(tensor_types=("smem_b", "smem_a", "rmem_c")), ValueError, r"'smem_b' is not a tensor of A"),
    (dict(global_memory_alignment=(16, 0, 16)), ValueError, "global_memory_alignment=0 must be at least 1"),
])
def test_matmul_validation(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        dev.Matmul(**dict(MM, **kwargs))


def test_matmul_function_form():
    t = dev.matmul(tensor_types=("suggested_smem_a", "suggested_smem_b", "suggested_rmem_c"), execute_api="tensors",
                   global_memory_alignment=(16, 16, 8), **MM)
    assert t.tensor_types == ("suggested_smem_a", "suggested_smem_b", "suggested_rmem_c")
    assert t.execute_api == "tensors" and t.global_memory_alignment == (16, 16, 8)
    with pytest.raises(TypeError, match=r"matmul\(\) needs the keyword arguments data_type"):
        dev.matmul(size=(4, 4, 4), precision=np.float32, sm=90)
    mm = dev.matmul(compiler="numba", code_type=("lto", (9, 0)), size=(8, 8, 8), precision=np.float64,
                    data_type="complex", block_size=64)
    assert isinstance(mm, dev.Matmul) and mm.sm == (9, 0) and mm.precision == "float64"


def test_matmul_numba_key_includes_the_global_memory_alignment():
    """The tensor API's code depends on the alignment, which is not a descriptor operator: one numba type each."""
    kw = dict(size=(16, 8, 8), precision=np.float32, data_type="real", sm=90, block_size=64,
              execute_api="tensors")
    plain, aligned = dev.Matmul(**kw), dev.Matmul(**kw, global_memory_alignment=(16, 16, 16))
    assert plain.symbol == aligned.symbol and plain._numba_key != aligned._numba_key
    assert dev.Matmul(**kw, global_memory_alignment=(16, 16, 16))._numba_key == aligned._numba_key


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


# ------------------------------------------------------------------------------------------------ tensor API

def test_layout_validation_needs_no_library():
    mm = dev.Matmul(**dict(MM, arrangement=("col_major", "row_major", "col_major")))
    ga = mm.get_layout_gmem_a()
    assert ga.kind == "gmem_a" and ga.memory_space == "gmem" and ga.leading_dimension == 32 and ga.matrix == "a"
    assert mm.get_layout_gmem_b().leading_dimension == 16  # row-major B (64 x 16) leads with its 16 columns
    assert mm.get_layout_gmem_c(40).leading_dimension == 40
    assert mm.get_layout_gmem_a() == ga and hash(mm.get_layout_gmem_a()) == hash(ga) and ga != mm.get_layout_gmem_b()
    with pytest.raises(ValueError, match=r"leading_dimension=31 is less than 32, the leading extent of A \(col_major\)"):
        mm.get_layout_gmem_a(31)
    with pytest.raises(ValueError, match="leading_dimension applies to global-memory layouts"):
        from cumath.device._tensors import Layout

        Layout(mm, "smem_a", 40)
    with pytest.raises(ValueError, match="unknown tensor kind 'tmem_c'"):
        Layout(mm, "tmem_c")
    p = mm.suggest_partitioner()
    assert p.kind == "suggested_rmem_c" and p.layout == mm.suggest_layout_rmem_c()
    assert mm.get_accumulator().kind == "rmem_c" and isinstance(mm.suggest_accumulator(), dev.Partitioner)
    with pytest.raises(ValueError, match="a partitioner describes a register layout of C"):
        dev.Partitioner(mm, "smem_c")
    with pytest.raises(ValueError, match="a_layout must be a shared-memory layout of A"):
        mm.get_shared_storage_size_ab(mm.suggest_layout_smem_b(), mm.suggest_layout_smem_b())
    with pytest.raises(ValueError, match="c_layout must be a shared-memory layout of C"):
        mm.get_shared_storage_size(mm.get_layout_smem_a(), mm.get_layout_smem_b(), mm.get_layout_rmem_c())


def test_tensor_helpers_are_device_only():
    for fn in (dev.make_tensor, dev.copy, dev.copy_fragment, dev.clear, dev.axpby, dev.copy_wait):
        with pytest.raises(TypeError, match=f"{fn.__name__}\\(\\) is called inside numba-cuda kernels"):
            fn()
        assert repr(fn) == f"cumath.device.{fn.__name__}"
    with pytest.raises(TypeError, match="OpaqueTensor is made inside numba-cuda kernels"):
        dev.OpaqueTensor()


def test_layout_traits(mathdx):
    import device_cases

    mm = device_cases.gemm_tensor_mixed(90)  # the GPU test's object (64 x 32 x 48, fp16 x fp16 -> fp32)
    m, n, k = mm.size
    sa, sb, rc = mm.suggest_layout_smem_a(), mm.suggest_layout_smem_b(), mm.suggest_layout_rmem_c()
    assert sa.memory_space == "smem" and sa.dtype == np.float16 and sa.size == m * k and sa.cosize >= m * k
    assert rc.memory_space == "rmem" and rc.dtype == np.float32
    assert rc.size * mm.block_size == m * n and rc.cosize >= rc.size  # C spread over the block's threads
    plain = mm.get_layout_smem_a()
    assert plain.cosize == m * k and plain.alignment >= 2
    assert mm.get_layout_gmem_a().cosize == 0 and mm.get_layout_gmem_c().memory_space == "gmem"
    ab = mm.get_shared_storage_size_ab(sa, sb)
    assert ab >= (sa.cosize + sb.cosize) * 2
    abc = mm.get_shared_storage_size(sa, sb, mm.suggest_layout_smem_c())
    assert abc >= ab + m * n * 4
    assert isinstance(sa.opaque_name, str) and sa.opaque_name


def test_tensor_functions_bundle(mathdx):
    import device_cases

    from cumath.device._tensors import bundle_specs, tensor_function

    mm = device_cases.gemm_tensor_f64(90)
    sym, files = tensor_function(mm, "COPY", ("gmem_a", "suggested_smem_a"))
    sym2, files2 = tensor_function(mm, "EXECUTE", ("smem_a", "smem_b", "rmem_c"))
    assert sym != sym2 and files == files2 and sym.startswith("cumath_blas_")  # one bundle, one NVRTC run
    assert all(os.path.isfile(f) for f in files)
    specs = bundle_specs()
    assert ("COPY_WAIT", ()) in specs and len(set(specs)) == len(specs)
    other = device_cases.gemm_tensor_c128(90)  # another descriptor, another bundle
    assert tensor_function(other, "COPY", ("gmem_a", "suggested_smem_a"))[0] != sym


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
     r"job= applies to the eigenvalue and SVD functions \(htev, heev, hegv, bdsvd, gesvd\), not to geqrf"),
    (lambda: dev.Solver("heev", (4,), np.float32, "Block", sm=90, fill_mode="lower", job="all_vectors"), ValueError,
     r"job \(for heev\)='all_vectors' is not supported; the allowed values are 'no_vectors', 'overwrite_vectors'"),
    (lambda: dev.Solver("heev", (4,), np.float32, "Block", sm=90, fill_mode="lower",
                        job=("no_vectors", "no_vectors")), ValueError, "must be one job$"),
    (lambda: dev.Solver("gesvd", (6, 4), np.float32, "Block", sm=90, job=("some_vectors",) * 3), ValueError,
     r"must be one job or a pair \(jobu, jobvt\)"),
    (lambda: dev.Solver("heev", (4,), np.float32, "Block", sm=90), ValueError, "heev needs fill_mode"),
    (lambda: dev.Solver("heev", (4, 5), np.float32, "Block", sm=90, fill_mode="lower"), ValueError,
     "heev needs a square matrix"),
    (lambda: dev.Solver("bdsvd", (4,), np.float32, "Block", sm=90, data_type="complex"), ValueError,
     "bdsvd supports data_type='real' only"),
    (lambda: dev.Solver("hegv", (4,), np.float32, "Block", sm=90, fill_mode="lower", eig_type=4), ValueError,
     "eig_type=4 is not supported; the allowed values are 1, 2, 3"),
    (lambda: dev.Solver("heev", (4,), np.float32, "Block", sm=90, fill_mode="lower", eig_type=1), ValueError,
     "eig_type applies to hegst and hegv only"),
    (lambda: dev.Solver("htev", (8,), np.float32, "Block", sm=90, leading_dimensions=(8,)), ValueError,
     "leading_dimensions is not offered for htev"),
    (lambda: dev.Solver("geqrf", (4, 4), np.float32, "Block", sm=90, arrangement=("col_major",) * 3), ValueError,
     r"must be a sequence \(a,\) or \(a, b\)$"),
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


def test_eigenvalue_and_svd_layouts():
    heev = dev.Solver("heev", (8,), np.float64, "Block", sm=90, fill_mode="lower", job="overwrite_vectors",
                      batches_per_block=2)
    assert heev.execute_parameters == ("a", "lambda", "workspace", "info") and heev.job == "overwrite_vectors"
    assert heev.a_shape == (2, 8, 8) and heev.lambda_shape == (2, 8) and heev.precision_type == np.float64
    htev = dev.Solver("htev", (10,), np.float32, "Block", sm=90, job="all_vectors")
    assert htev.execute_parameters == ("d", "e", "v", "info")
    assert htev.d_shape == (1, 10) and htev.e_shape == (1, 9) and htev.v_shape == (1, 10, 10)
    assert htev.size_of("e") == 9 and htev.size_of("v") == 100
    assert dev.Solver("htev", (10,), np.float32, "Block", sm=90).execute_parameters == ("d", "e", "info")
    svd = dev.Solver("gesvd", (12, 7), np.float64, "Block", sm=90, job=("all_vectors", "some_vectors"),
                     arrangement=("col_major", "row_major", "col_major"))
    assert svd.execute_parameters == ("a", "s", "u", "vt", "workspace", "info")
    assert svd.job == ("all_vectors", "some_vectors") and svd.s_shape == (1, 7)
    assert svd.u_shape == (1, 12, 12) and svd.vt_shape == (1, 7, 7)
    assert svd._arr("a") == "col_major" and svd._arr("u") == "row_major" and svd._arr("vt") == "col_major"
    assert svd.size_of("u") == 144
    novec = dev.Solver("gesvd", (12, 7), np.float64, "Block", sm=90)
    assert novec.job == "no_vectors" and novec.execute_parameters == ("a", "s", "workspace", "info")
    gtsv = dev.Solver("gtsv_no_pivot", (16, 16, 3), np.float64, "Block", sm=90)
    assert gtsv.execute_parameters == ("dl", "d", "du", "b", "info")
    assert gtsv.dl_shape == (1, 15) and gtsv.du_shape == (1, 15) and gtsv.b_shape == (1, 16, 3)
    hegv = dev.Solver("hegv", (6,), np.float32, "Block", sm=90, fill_mode="upper", eig_type=3)
    assert hegv.eig_type == 3 and hegv.execute_parameters == ("a", "b", "lambda", "workspace", "info")
    assert hegv.b_shape == (1, 6, 6) and hegv.ldb == 6


def test_eigenvalue_and_svd_traits_and_code(mathdx):
    heev = dev.Solver("heev", (16,), np.float32, "Block", sm=90, fill_mode="lower")
    assert heev.workspace_size == 15 and heev.block_dim.x >= 1  # the off-diagonal of the tridiagonal form
    two = dev.Solver("heev", (16,), np.float32, "Block", sm=90, fill_mode="lower", batches_per_block=2)
    assert two.workspace_size == 2 * heev.workspace_size  # for the whole block
    vec = dev.Solver("heev", (16,), np.float32, "Block", sm=90, fill_mode="lower", job="overwrite_vectors")
    assert vec.workspace_size > heev.workspace_size and vec.symbol != heev.symbol
    for s in (dev.Solver("gesvd", (12, 8), np.float64, "Block", sm=90, job="some_vectors"),
              dev.Solver("bdsvd", (8,), np.float64, "Block", sm=90, job="all_vectors"),
              dev.Solver("hegst", (8,), np.float64, "Block", sm=90, fill_mode="lower", eig_type=2),
              dev.Solver("gtsv_no_pivot", (8, 8, 2), np.float32, "Block", sm=90)):
        kinds = s._generator.kinds()
        assert kinds[0] == "ltoir" and s.codes[0][:4] == b"\xed\x43\x4e\x7f"
        assert [p.name for p in s._numba_methods()["execute"].params] == list(s.execute_parameters)
    dtypes = {p.name: p.dtype for p in dev.Solver("heev", (6,), np.float64, "Block", sm=90, fill_mode="upper",
                                                   data_type="complex")._numba_methods()["execute"].params}
    assert dtypes == {"a": "complex128", "lambda": "float64", "workspace": "complex128", "info": "int32"}
