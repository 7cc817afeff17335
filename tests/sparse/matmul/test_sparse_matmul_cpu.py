"""The sparse matmul on the CPU (MKL's sparse BLAS and SciPy) against a dense NumPy float64 product: every
format, index type, dtype and package; qualifiers, batches, vectors, layouts; the stateful API and errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import cumath
from cumath.errors import InvalidStateError
from cumath.sparse import Matmul, MatmulOptions, matmul, matmul_matrix_qualifiers_dtype as QD

try:
    from cumath._bindings.mkl_sparse import available as _mkl_available

    HAVE_MKL = bool(_mkl_available())
except Exception:  # noqa: BLE001 - no MKL: its cases skip
    HAVE_MKL = False
needs_mkl = pytest.mark.skipif(not HAVE_MKL, reason="oneMKL is not installed (pip install \".[mkl]\")")
ENGINES = (pytest.param("mkl", marks=needs_mkl), "scipy")
ENGINE_NAMES = ("mkl", "scipy") if HAVE_MKL else ("scipy",)
DTYPES = ("float32", "float64", "complex64", "complex128")
FORMATS = ("csr", "csc", "coo", "bsr", "dia")
TOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def sparse(rng, m, n, fmt, dtype, index="int32", density=0.3, block=3):
    d = rand(rng, (m, n), dtype)
    d[rng.random((m, n)) > density] = 0
    if fmt == "bsr":
        a = sp.bsr_array(d, blocksize=(block, block))
    elif fmt == "dia":
        d = np.zeros((m, n), dtype)
        for off in (-2, 0, 1, 4):
            k = np.arange(max(0, -off), min(m, n - off))
            d[k, k + off] = rand(rng, k.size, dtype)
        a = sp.dia_array(d)
    else:
        a = sp.csr_array(d).asformat(fmt)
    for attr in ("indptr", "indices", "row", "col"):
        if hasattr(a, attr) and getattr(a, attr) is not None:
            try:
                setattr(a, attr, getattr(a, attr).astype(index))
            except AttributeError:
                pass
    if fmt == "coo":
        a.coords = tuple(c.astype(index) for c in a.coords)
    return a


def relerr(x, ref):
    x, ref = np.asarray(x, dtype=np.complex128), np.asarray(ref, dtype=np.complex128)
    return np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300)


def dense(a):
    return a.toarray().astype(np.complex128)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("index", ("int32", "int64"))
def test_formats_dtypes_indices(engine, dtype, fmt, index):
    rng = np.random.default_rng(hash((engine, dtype, fmt, index)) % 2**32)
    m, k, n = 15, 21, 7  # odd sizes, multiples of the block size
    a = sparse(rng, m, k, fmt, dtype, index)
    b, c = rand(rng, (k, n), dtype), rand(rng, (m, n), dtype)
    c0 = c.copy()
    d = matmul(a, b, c, alpha=1.5, beta=-0.5, options={"cpu_engine": engine})
    assert d is c  # written into c
    assert relerr(d, 1.5 * dense(a) @ b - 0.5 * c0) < TOL[dtype]
    d2 = matmul(a, b, options={"cpu_engine": engine})
    assert relerr(d2, dense(a) @ b) < TOL[dtype] and d2.dtype == dtype


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("ta,ca,tb,cb", [(1, 0, 0, 0), (1, 1, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 1, 1),
                                         (1, 1, 1, 1)])
def test_qualifiers(engine, fmt, ta, ca, tb, cb):
    rng = np.random.default_rng(7)
    a = sparse(rng, 12, 9, fmt, "complex128")
    m, k = (9, 12) if ta else (12, 9)
    b = rand(rng, (5, k) if tb else (k, 5), "complex128")
    q = np.zeros(2, QD)
    q[0] = (ta, ca)
    q[1] = (tb, cb)
    A = dense(a)
    A = A.T if ta else A
    A = A.conj() if ca else A
    B = b.T if tb else b
    B = B.conj() if cb else B
    assert relerr(matmul(a, b, qualifiers=q, options={"cpu_engine": engine}), A @ B) < 1e-12


@pytest.mark.parametrize("engine", ENGINES)
def test_vector_batches_layouts(engine):
    rng = np.random.default_rng(3)
    a = sparse(rng, 17, 13, "csr", "float64")
    opts = {"cpu_engine": engine}
    x = rand(rng, 13, "float64")
    assert relerr(matmul(a, x, options=opts), dense(a) @ x) < 1e-12
    xs = rand(rng, 26, "float64")[::-2]  # negative stride
    assert relerr(matmul(a, xs, options=opts), dense(a) @ xs) < 1e-12
    bb = rand(rng, (2, 3, 13, 4), "float64")
    assert relerr(matmul(a, bb, options=opts), np.matmul(dense(a), bb)) < 1e-12
    for b in (rand(rng, (13, 8), "float64")[:, ::2], np.asfortranarray(rand(rng, (13, 4), "float64")),
              rand(rng, (26, 4), "float64")[::-2], rand(rng, (13, 4, 2), "float64")[..., 0]):
        assert relerr(matmul(a, b, options=opts), dense(a) @ b) < 1e-12
    c = np.asfortranarray(rand(rng, (17, 4), "float64"))
    c0 = c.copy()
    b = rand(rng, (13, 4), "float64")
    assert relerr(matmul(a, b, c, beta=2.0, options=opts), dense(a) @ b + 2 * c0) < 1e-12
    # unaligned b (an odd byte offset is impossible for NumPy float64 views; a 4-byte one is not)
    raw = np.zeros(13 * 4 * 8 + 4, np.uint8)
    bu = raw[4:].view(np.float64).reshape(13, 4)
    bu[...] = b
    assert relerr(matmul(a, bu, options=opts), dense(a) @ b) < 1e-12


def test_torch_layouts_and_batched_csr():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    d = rand(rng, (12, 9), "float64")
    d[rng.random(d.shape) > 0.4] = 0
    t = torch.tensor(d)
    b = torch.tensor(rand(rng, (9, 4), "float64"))
    ref = d @ b.numpy()
    for a in (t.to_sparse_coo(), t.to_sparse_csr(), t.to_sparse_csc(), t.to_sparse_bsr((3, 3)),
              t.to_sparse_bsc((3, 3)), torch.tensor(d, dtype=torch.float64).to_sparse_coo()):
        r = matmul(a, b)
        assert isinstance(r, torch.Tensor) and relerr(r.numpy(), ref) < 1e-12
    mask = torch.zeros(3, 6, 5, dtype=torch.float64)
    mask[..., :2] = 1
    db = torch.rand(3, 6, 5, dtype=torch.float64) * mask + mask * 0.1
    bb = torch.rand(3, 5, 2, dtype=torch.float64)
    assert relerr(matmul(db.to_sparse_csr(), bb).numpy(), (db @ bb).numpy()) < 1e-12


def test_stateful_reset_and_in_place_values():
    rng = np.random.default_rng(11)
    a = sparse(rng, 20, 14, "csr", "float64")
    b = rand(rng, (14, 6), "float64")
    with Matmul(a, b) as mm:
        mm.plan()
        assert mm.engine in ("mkl", "scipy")
        assert relerr(mm.execute(), dense(a) @ b) < 1e-12
        a.data *= -3  # values changed in place: seen (MKL's optimised copy is refreshed)
        assert relerr(mm.execute(), dense(a) @ b) < 1e-12
        a2 = a.copy()
        a2.data = rand(rng, a.nnz, "float64")
        b2 = rand(rng, (14, 6), "float64")
        mm.reset_operands(a=a2, b=b2, alpha=2.0)
        assert relerr(mm.execute(), 2 * dense(a2) @ b2) < 1e-12
        mm.reset_operands_unchecked(b=b)
        assert relerr(mm.execute(), 2 * dense(a2) @ b) < 1e-12
        mm.release_operands()
        with pytest.raises(InvalidStateError, match="reset_operands"):
            mm.execute()
        with pytest.raises(ValueError, match="missing a"):
            mm.reset_operands(b=b)
        mm.reset_operands(a=a2, b=b)
        assert relerr(mm.execute(), 2 * dense(a2) @ b) < 1e-12
    with pytest.raises(InvalidStateError, match="after free"):
        mm.execute()
    mm.free()  # twice: nothing


@needs_mkl
def test_coo_new_values_same_pattern():
    rng = np.random.default_rng(2)
    a = sparse(rng, 16, 11, "coo", "complex64")
    b = rand(rng, (11, 3), "complex64")
    with Matmul(a, b, options={"cpu_engine": "mkl"}) as mm:
        mm.plan()
        for _ in range(2):
            a.data[:] = rand(rng, a.nnz, "complex64")
            assert relerr(mm.execute(), dense(a) @ b) < 2e-5


def test_plan_cache_reuses_the_plan():
    from cumath.config import plan_cache

    rng = np.random.default_rng(4)
    a = sparse(rng, 30, 30, "csr", "float64")
    b = rand(rng, (30, 2), "float64")
    matmul(a, b)
    before = plan_cache.stats()["hits"]
    a.data *= 2
    assert relerr(matmul(a, b), dense(a) @ b) < 1e-12
    assert plan_cache.stats()["hits"] == before + 1


def test_errors():
    rng = np.random.default_rng(0)
    a = sparse(rng, 6, 5, "csr", "float64")
    with pytest.raises(ValueError, match="inner dimensions"):
        matmul(a, np.ones((6, 2)))
    with pytest.raises(TypeError, match="same dtype"):
        matmul(a, np.ones((5, 2), np.float32))
    with pytest.raises(TypeError, match="dense array"):
        matmul(a, sp.csr_array(np.ones((5, 2))))
    with pytest.raises(TypeError, match="must be a sparse matrix"):
        matmul(np.ones((6, 5)), np.ones((5, 2)))
    with pytest.raises(TypeError, match="'lil' format"):
        matmul(sp.lil_array((6, 5)), np.ones((5, 2)))
    with pytest.raises(ValueError, match="c has shape"):
        matmul(a, np.ones((5, 2)), np.ones((6, 3)))
    ro = np.ones((6, 2))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        matmul(a, np.ones((5, 2)), ro)
    with pytest.raises(TypeError, match="matmul_matrix_qualifiers_dtype"):
        matmul(a, np.ones((5, 2)), qualifiers=np.zeros(2))
    q = np.zeros(3, QD)
    q[2]["is_transpose"] = 1
    with pytest.raises(ValueError, match="c cannot be transposed"):
        matmul(a, np.ones((5, 2)), np.ones((6, 2)), qualifiers=q)
    with pytest.raises(ValueError, match="cpu_engine"):
        MatmulOptions(cpu_engine="fast")
    with pytest.raises(ValueError, match="compute_type"):
        MatmulOptions(compute_type="COMPUTE_8I")
    with pytest.raises(ValueError, match="memory_limit"):
        MatmulOptions(memory_limit="lots")
    with pytest.raises(TypeError, match="unknown sparse matmul options"):
        matmul(a, np.ones((5, 2)), options={"inplace": True})
    with pytest.raises(ValueError, match="batch shapes"):
        torch = pytest.importorskip("torch")
        m = torch.zeros(2, 6, 5, dtype=torch.float64)
        m[..., 0] = 1
        matmul(m.to_sparse_csr(), torch.ones(3, 5, 2, dtype=torch.float64))
    mm = Matmul(a, np.ones((5, 2)))
    with pytest.raises(InvalidStateError, match="plan"):
        mm.execute()
    mm.plan()
    with pytest.raises(ValueError, match="does not match the planned"):
        mm.reset_operands(b=np.ones((5, 3)))
    with pytest.raises(ValueError, match="created without c"):
        mm.reset_operands(c=np.ones((6, 2)))
    with pytest.raises(NotImplementedError, match="GPU kernels"):
        mm.plan(epilog=b"x")
    mm.free()


def test_property_random_products():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=30, deadline=None)
    @hyp.given(m=st.integers(1, 23), k=st.integers(1, 19), n=st.integers(1, 7), fmt=st.sampled_from(FORMATS[:3]),
               dtype=st.sampled_from(DTYPES), engine=st.sampled_from(ENGINE_NAMES), seed=st.integers(0, 2**31))
    def check(m, k, n, fmt, dtype, engine, seed):
        rng = np.random.default_rng(seed)
        a = sparse(rng, m, k, fmt, dtype, density=0.5)
        b = rand(rng, (k, n), dtype)
        ref = dense(a) @ b
        got = matmul(a, b, options={"cpu_engine": engine})
        assert np.abs(got - ref).max() <= TOL[dtype] * max(1.0, np.abs(ref).max()) * 4

    check()


def test_top_level_names():
    assert cumath.sparse.matmul is matmul
    assert cumath.sparse.matmul_matrix_qualifiers_dtype.names == ("is_transpose", "is_conjugate")
    assert int(cumath.sparse.ComputeType.COMPUTE_64F) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_no_stored_entries(engine):
    a = sp.csr_array((7, 5))
    c = np.ones((7, 3))
    assert np.array_equal(matmul(a, np.ones((5, 3)), c, beta=2.0, options={"cpu_engine": engine}), 2 * np.ones((7, 3)))
    assert np.array_equal(matmul(a, np.ones((5, 3)), options={"cpu_engine": engine}), np.zeros((7, 3)))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fmt", ("csr", "csc"))
def test_new_index_arrays_and_in_place_indices(engine, fmt):
    rng = np.random.default_rng(9)
    opts = MatmulOptions(cpu_engine=engine, expected_calls=0)
    a = sparse(rng, 12, 10, fmt, "float64")
    b = rand(rng, (10, 3), "float64")
    perm = rng.permutation(10)
    with Matmul(a, b, options=opts) as mm:
        mm.plan()
        a2 = sp.csr_array(a.toarray()[:, perm]).asformat(fmt)  # another pattern, as many stored entries
        a2.indptr, a2.indices = a2.indptr.astype(a.indptr.dtype), a2.indices.astype(a.indices.dtype)
        mm.reset_operands_unchecked(a=a2)
        assert relerr(mm.execute(), dense(a2) @ b) < 1e-12
    # the stateless call finds its plan by the arrays' addresses: indices changed in place are seen
    a = sparse(rng, 12, 10, fmt, "float64")
    o = {"cpu_engine": engine, "expected_calls": 0}
    assert relerr(matmul(a, b, options=o), dense(a) @ b) < 1e-12
    if fmt == "csr":
        a.indices[:] = perm[a.indices]  # same positions, other columns (rows stay sorted or not: both read)
    else:
        a.indices[:] = a.indices[::-1]
    assert relerr(matmul(a, b, options=o), dense(a) @ b) < 1e-12


def test_autotune_cpu_engines(monkeypatch):
    """On the CPU autotune() times MKL against SciPy on the plan's operands (into a scratch result: c is not
    touched) and keeps the faster; algorithm='autotune' does it at plan(); errors are clear."""
    import cumath.sparse._matmul._autotune as T
    from cumath.errors import InvalidStateError
    from cumath.sparse import Matmul, MatmulOptions

    rng = np.random.default_rng(31)
    a = sp.random_array((23, 19), density=0.3, format="csr", rng=rng)
    b, c = rng.standard_normal((19, 5)), rng.standard_normal((23, 5))
    c0 = c.copy()
    with Matmul(a, b, c, beta=2.0) as mm:
        with pytest.raises(InvalidStateError, match="plan"):
            mm.autotune()
        mm.plan()
        times = mm.autotune(iterations=2)
        names = [n for n, _ in times]
        assert mm.algorithm == names[0] and set(names) <= {"mkl", "scipy"} and "scipy" in names
        assert np.array_equal(c, c0)
        assert np.abs(mm.execute() - (a @ b + 2 * c0)).max() < 1e-12
        with pytest.raises(ValueError, match="iterations=0 must be an int >= 1"):
            mm.autotune(iterations=0)
    # the measured times decide (the planned engine is timed first, then the others in the registry's order)
    for ms, want in (([2.0, 1.0], "scipy"), ([1.0, 2.0], None)):
        seq = iter(ms)
        monkeypatch.setattr(T, "median_ms", lambda run, it, seq=seq: (run(), next(seq))[1])
        with Matmul(a, b, options={"algorithm": "autotune"}) as mm:
            mm.plan()
            planned = mm.engine
            assert mm.algorithm == (want or ("mkl" if _have_mkl_engine() else "scipy"))
            assert np.abs(mm.execute() - a @ b).max() < 1e-12, planned
    with Matmul(a, b, options={"algorithm": "CSR_ALG2"}) as mm:
        with pytest.raises(ValueError, match="names a cuSPARSE algorithm, but this product runs on the CPU"):
            mm.plan()
    with pytest.raises(ValueError, match="algorithm='fastest' is not supported; use None .cuSPARSE's default., "
                                         "'autotune'"):
        MatmulOptions(algorithm="fastest")
    from cumath._bindings.cusparse import SpMMAlg

    assert MatmulOptions(algorithm=SpMMAlg.CSR_ALG3).algorithm == "CSR_ALG3"
    assert MatmulOptions(algorithm="cusparse_spmm_alg_default").algorithm == "DEFAULT"


def _have_mkl_engine() -> bool:
    try:
        from cumath._bindings.mkl_sparse import available

        return bool(available())
    except Exception:  # noqa: BLE001
        return False


def test_property_autotuned_products():
    """Whatever engine autotune() keeps, the product is right and c is untouched by the measurement."""
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies
    from cumath.sparse import Matmul

    @hyp.settings(max_examples=15, deadline=None)
    @hyp.given(m=st.integers(1, 13), k=st.integers(1, 11), n=st.integers(1, 5), beta=st.sampled_from([0.0, 0.5]),
               seed=st.integers(0, 2**31))
    def check(m, k, n, beta, seed):
        rng = np.random.default_rng(seed)
        a = sp.random_array((m, k), density=0.4, format="csr", rng=rng)
        b, c = rng.standard_normal((k, n)), rng.standard_normal((m, n))
        c0 = c.copy()
        with Matmul(a, b, c, beta=beta) as mm:
            mm.plan()
            mm.autotune(iterations=1)
            assert np.array_equal(c, c0)
            assert np.abs(mm.execute() - (a @ b + beta * c0)).max() < 1e-12

    check()
