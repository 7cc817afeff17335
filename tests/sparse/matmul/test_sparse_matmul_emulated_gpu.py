"""The sparse matmul's GPU executor against a NumPy emulation of cuSPARSE (``fake_cusparse``): every format,
dtype and index type, qualifiers, vectors, batches, layouts of b and c, the stateful API, and that every
descriptor is destroyed."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fake_cusparse import FakeCusparse, device, device_sparse, install  # noqa: E402

from cumath.sparse import Matmul, matmul_matrix_qualifiers_dtype as QD  # noqa: E402

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}


class _Alloc:
    def memalloc(self, size):
        from cumath.memory import MemoryPointer

        buf = np.empty(max(1, size), np.uint8)
        return MemoryPointer(buf.ctypes.data, size, lambda b=buf: None)


@pytest.fixture
def fake(monkeypatch):
    from cumath.config import plan_cache

    plan_cache.clear()
    f = FakeCusparse()
    install(monkeypatch, f)
    yield f
    plan_cache.clear()


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.startswith("complex") else 0)
    return x.astype(dtype)


def sparse(rng, m, n, fmt, dtype, index):
    d = rand(rng, (m, n), dtype)
    d[rng.random((m, n)) > 0.35] = 0
    a = sp.bsr_array(d, blocksize=(3, 3)) if fmt == "bsr" else sp.csr_array(d).asformat(fmt)
    if fmt in ("csr", "csc", "bsr"):
        a.indptr, a.indices = a.indptr.astype(index), a.indices.astype(index)
    elif fmt == "coo":
        a.coords = tuple(c.astype(index) for c in a.coords)
    return a


def run(a, b, c=None, **kw):
    with Matmul(device_sparse(a), device(b), None if c is None else device(c), options={"allocator": _Alloc()},
                **kw) as mm:
        mm.plan()
        assert mm.engine == "cusparse"
        return mm.execute()


def relerr(x, ref):
    return np.abs(np.asarray(x, np.complex128) - ref).max() / max(np.abs(ref).max(), 1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", ("csr", "csc", "coo", "bsr", "dia"))
@pytest.mark.parametrize("index", ("int32", "int64"))
def test_formats(fake, dtype, fmt, index):
    rng = np.random.default_rng(abs(hash((dtype, fmt, index))) % 2**32)
    a = sparse(rng, 15, 12, fmt, dtype, index) if fmt != "dia" else sp.dia_array(
        (rand(rng, (3, 12), dtype), [-1, 0, 2]), shape=(15, 12))
    b, c = rand(rng, (12, 5), dtype), rand(rng, (15, 5), dtype)
    c0 = c.copy()
    out = run(a, b, c, alpha=2.0, beta=0.5)
    assert out is c and relerr(out, 2 * a.toarray() @ b + 0.5 * c0) < TOL[dtype]
    assert relerr(run(a, b[:, 0]), a.toarray() @ b[:, 0]) < TOL[dtype]
    assert len(fake.objects) == 0  # every descriptor and handle destroyed


@pytest.mark.parametrize("q", [(1, 0, 0, 0), (1, 1, 0, 0), (0, 1, 0, 0), (0, 0, 1, 1)])
@pytest.mark.parametrize("fmt", ("csr", "csc", "coo"))
def test_qualifiers(fake, q, fmt):
    rng = np.random.default_rng(3)
    a = sparse(rng, 9, 14, fmt, "complex128", "int32")
    ta, ca, tb, cb = q
    k = 9 if ta else 14
    b = rand(rng, (4, k) if tb else (k, 4), "complex128")
    qq = np.zeros(2, QD)
    qq[0], qq[1] = (ta, ca), (tb, cb)
    A = a.toarray()
    A = A.T if ta else A
    A = A.conj() if ca else A
    B = b.T if tb else b
    B = B.conj() if cb else B
    assert relerr(run(a, b, qualifiers=qq), A @ B) < 1e-12


def test_layouts_batches_and_values(fake):
    rng = np.random.default_rng(4)
    a = sparse(rng, 13, 10, "csr", "float64", "int64")
    A = a.toarray()
    for b in (np.asfortranarray(rand(rng, (10, 4), "float64")), rand(rng, (10, 8), "float64")[:, ::2],
              rand(rng, (20, 4), "float64")[::-2]):
        assert relerr(run(a, b), A @ b) < 1e-12
    bb = rand(rng, (3, 10, 2), "float64")
    assert relerr(run(a, bb), np.matmul(A, bb)) < 1e-12
    c = np.asfortranarray(rand(rng, (13, 4), "float64"))[:, ::-1]
    c0 = c.copy()
    b = rand(rng, (10, 4), "float64")
    assert relerr(run(a, b, c, beta=1.0), A @ b + c0) < 1e-12
    with Matmul(device_sparse(a), device(b), options={"allocator": _Alloc()}) as mm:
        mm.plan()
        r1 = mm.execute()
        a.data *= 3
        assert relerr(mm.execute(), 3 * (A @ b)) < 1e-12 and relerr(r1, A @ b) < 1e-12


def test_bsr_in_place_and_fallback(fake, monkeypatch):
    """A BSR matrix is read by cuSPARSE's own BSR SpMM (cusparseCreateBsr, blocks row-major, no gather); where
    cuSPARSE refuses it (an older library, an unsupported problem) the product runs through the CSR gather."""
    from cumath._bindings import cusparse as cs

    rng = np.random.default_rng(11)
    a = sparse(rng, 12, 9, "bsr", "float64", "int32")
    b = rand(rng, (9, 4), "float64")
    made = []
    real = fake.cusparseCreateBsr
    monkeypatch.setattr(cs, "cusparseCreateBsr", lambda *args: made.append(args) or real(*args))
    assert relerr(run(a, b), a.toarray() @ b) < 1e-12
    assert made and made[0][:5] == (4, 3, a.indices.size, 3, 3) and made[0][-1] == 2

    def refuse(*args):
        raise cs.CUSPARSEError(10, "CUSPARSE_STATUS_NOT_SUPPORTED")

    monkeypatch.setattr(cs, "cusparseCreateBsr", refuse)
    assert relerr(run(a, b), a.toarray() @ b) < 1e-12
    assert len(fake.objects) == 0


def test_gpu_ust_is_read_as_itself():
    """A GPU Universal Sparse Tensor that a generated kernel multiplies is read as the tensor (no conversion to a
    package matrix, which BSR or DIA in CuPy do not have), keyed by its level arrays, never by its values."""
    from cumath.sparse import MatmulOptions
    from cumath.sparse._matmul._functions import _pattern_key
    from cumath.sparse._matmul._planner import wrap_a
    from cumath.sparse.ust import NamedFormats as N, Tensor

    rng = np.random.default_rng(12)
    d = rand(rng, (8, 9), "float64")
    d[rng.random(d.shape) > 0.4] = 0

    def gpu_ust(x, fmt):
        u = Tensor.from_package(sp.csr_array(x)).convert(tensor_format=fmt)
        u._device_id = 0  # host arrays presented as a GPU tensor: only the dispatch is under test
        return u

    u = gpu_ust(d, N.BSRRight(2, 3))
    a = wrap_a(u, MatmulOptions(codegen=True))
    assert a.format == "ust:BSRRight2x3" and a.obj is u and set(a.index) == {"pos1", "crd1"}
    assert wrap_a(gpu_ust(d, N.BSRRight(2, 3))).format == "ust:BSRRight2x3"  # cuSPARSE-less format: always
    diag = wrap_a(gpu_ust(d, N.DIAI))
    assert diag.format == "ust:DIAI" and set(diag.index) == {"pos0", "crd0"}
    assert _pattern_key(diag, None) == _pattern_key(wrap_a(gpu_ust(3 * d, N.DIAI)), None)
    assert wrap_a(gpu_ust(d, N.CSR)).format == "csr"  # cuSPARSE reads it unless codegen is asked for
    assert wrap_a(gpu_ust(d, N.CSR), MatmulOptions(codegen=True)).format == "ust:CSR"
    assert wrap_a(gpu_ust(d, N.CSR), None, generated=True).format == "ust:CSR"


def _fake_timer(fake, ms_by_alg):
    """A stand-in for the CUDA-event timer: runs once, answers the time of the algorithm the last SpMM/SpMV used."""
    def timer(run, stream, iterations):
        run()
        return ms_by_alg[fake.calls[-1][2]]
    return timer


def test_autotune_picks_the_fastest_algorithm(fake, monkeypatch):
    """autotune() times every cuSPARSE algorithm of the stored format into a scratch result (c is not touched),
    leaves out the ones cuSPARSE refuses, keeps the fastest (its workspace, its preprocessing); execute uses it."""
    from cumath._bindings.cusparse import SpMMAlg
    from cumath.sparse._matmul import _device

    rng = np.random.default_rng(21)
    a = sparse(rng, 17, 11, "csr", "float64", "int32")
    b, c = rand(rng, (11, 4), "float64"), rand(rng, (17, 4), "float64")
    c0 = c.copy()
    fake.refused = {SpMMAlg.CSR_ALG2}
    fake.extra_buffer = {SpMMAlg.CSR_ALG3: 4096}
    monkeypatch.setattr(_device, "_event_timer", _fake_timer(fake, {0: 3.0, 4: 2.0, 6: 0.1, 12: 1.0}))
    with Matmul(device_sparse(a), device(b), device(c), beta=0.5, options={"allocator": _Alloc()}) as mm:
        mm.plan()
        assert mm.algorithm == "DEFAULT"
        times = mm.autotune(iterations=3)
        assert [n for n, _ in times] == ["CSR_ALG3", "CSR_ALG1", "DEFAULT"]  # CSR_ALG2 refused: left out
        assert mm.algorithm == "CSR_ALG3" and np.array_equal(c, c0)
        assert ("SpMM_preprocess", 0, SpMMAlg.CSR_ALG3) in fake.calls
        assert mm.nbytes >= 512 + 4096
        out = mm.execute()
        assert fake.calls[-1] == ("SpMM", 0, SpMMAlg.CSR_ALG3)
        assert relerr(out, a.toarray() @ b + 0.5 * c0) < 1e-12


def test_autotune_option_and_named_algorithms(fake, monkeypatch):
    """MatmulOptions(algorithm='autotune') tunes at plan(); a stateless call with it reuses the tuned plan from the
    plan cache; a named algorithm is used as given; one the format does not have is a clear error."""
    from cumath._bindings.cusparse import SpMMAlg, SpMVAlg
    from cumath.sparse import matmul
    from cumath.sparse._matmul import _device

    rng = np.random.default_rng(22)
    a = sparse(rng, 9, 8, "csr", "float32", "int64")
    b = rand(rng, (8, 3), "float32")
    tuned = []
    timer = _fake_timer(fake, {0: 1.0, 4: 0.5, 6: 0.7, 12: 0.9})

    def counting(run, stream, iterations):
        tuned.append(1)
        return timer(run, stream, iterations)

    monkeypatch.setattr(_device, "_event_timer", counting)
    opts = {"allocator": _Alloc(), "algorithm": "autotune"}
    A, B = device_sparse(a), device(b)
    for _ in range(3):
        assert relerr(matmul(A, B, options=opts), a.toarray() @ b) < 1e-5
        assert fake.calls[-1] == ("SpMM", 0, SpMMAlg.CSR_ALG1)
    assert len(tuned) == 4  # four candidates timed once, by the first call only
    with Matmul(A, B, options={"allocator": _Alloc(), "algorithm": "csr_alg2"}) as mm:
        mm.plan()
        assert mm.algorithm == "CSR_ALG2"
        mm.execute()
        assert fake.calls[-1] == ("SpMM", 0, SpMMAlg.CSR_ALG2)
    x = rand(rng, (8,), "float32")
    with Matmul(A, device(x), options={"allocator": _Alloc(), "algorithm": SpMVAlg.CSR_ALG2}) as mm:
        mm.plan()
        mm.execute()
        assert fake.calls[-1] == ("SpMV", 0, SpMVAlg.CSR_ALG2)
    with Matmul(A, B, options={"allocator": _Alloc(), "algorithm": "BSR_ALG1"}) as mm:
        with pytest.raises(ValueError, match="not one cuSPARSE has for this product .SpMM of CSR.; use one of "
                                             "DEFAULT, CSR_ALG1, CSR_ALG2, CSR_ALG3"):
            mm.plan()


def test_operand_space_and_algorithm_errors(fake):
    """b in another memory space than a, b of another package, and a cuSPARSE algorithm named for a product that
    runs on a generated kernel: clear errors."""
    rng = np.random.default_rng(23)
    a = sparse(rng, 6, 5, "csr", "float64", "int32")
    with pytest.raises(ValueError, match="b is in GPU 0 while a is in host memory; move them to one device"):
        Matmul(a, device(rand(rng, (5, 2), "float64")))
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="b is a torch array while a is a sparse matrix of numpy arrays; pass a "
                                        "numpy array"):
        Matmul(a, torch.ones(5, 2, dtype=torch.float64))
    with Matmul(device_sparse(a), device(rand(rng, (5, 2), "float64")),
                options={"algorithm": "CSR_ALG2", "allocator": _Alloc()}) as mm:
        with pytest.raises(ValueError, match="names a cuSPARSE algorithm, but this product runs on a generated kernel"):
            mm.plan(prologs={"a": b"not compiled"})  # prologs run on generated kernels only
