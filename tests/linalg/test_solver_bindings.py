"""The bindings the dense direct solver adds: LAPACK (from the BLAS cumath loads), cuSOLVER's dense API, cuBLAS's
batched LU. Checked without a GPU: names, integer widths, argument counts, status checks, and LAPACK itself."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cumath._bindings import blas, cublas, lapack
from cumath.errors import CUSOLVERError, LibraryNotFoundError


def test_lapack_from_numpys_openblas():
    lib = lapack.find_lapack("auto")
    assert lib.blas is blas.find_blas("auto")
    assert lib.int_dtype == ("int64" if lib.ilp64 else "int32")
    assert all(lib.has(name) for name in lapack.FUNCTIONS)
    assert set(lapack.SUFFIXES) == set(blas.PROVIDERS)
    with pytest.raises(AttributeError, match="dsyev is not available"):
        lib.dsyev  # noqa: B018 - not bound


def test_lapack_getrf_getrs_and_untyped_bindings():
    lib = lapack.find_lapack("auto")
    it = np.dtype(lib.int_dtype)
    n = 5
    a = np.asfortranarray(np.random.default_rng(3).standard_normal((n, n)) + 3 * np.eye(n))
    b = np.ones((n, 1), order="F")
    lu = a.copy(order="F")
    ints = np.array([n, 1, 0, 0], dtype=it)
    piv = np.zeros(n, dtype=it)
    addr = ints.ctypes.data
    lib.dgetrf(addr, addr, lu.ctypes.data, addr, piv.ctypes.data, addr + 2 * it.itemsize)
    assert ints[2] == 0
    trans = ctypes.create_string_buffer(b"N")
    x = b.copy(order="F")
    getrs = lib.untyped("dgetrs", release_gil=False)
    assert lib.untyped("dgetrs", release_gil=False) is getrs and lib.untyped("dgetrs") is not getrs
    v = ctypes.c_void_p
    getrs(v(ctypes.addressof(trans)), v(addr), v(addr + it.itemsize), v(lu.ctypes.data), v(addr), v(piv.ctypes.data),
          v(x.ctypes.data), v(addr), v(addr + 3 * it.itemsize), ctypes.c_size_t(1))
    assert ints[3] == 0
    np.testing.assert_allclose(a @ x, b, atol=1e-12)


def test_lapack_of_an_unknown_provider():
    with pytest.raises(ValueError, match="BLAS provider 'netlib' is not supported"):
        lapack.get_lapack("netlib")


def _cusolver():
    from cumath._bindings import cusolver

    try:
        cusolver.cusolverGetVersion()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    return cusolver


def test_cusolver_binding_loads_and_checks():
    cs = _cusolver()
    assert cs.cusolverGetVersion() // 1000 == cs.cusolverGetProperty(0)
    missing = [name for name in cs.TABLE if not cs._L.has(name)]
    assert not missing, missing
    with pytest.raises(TypeError, match=r"cusolverDnXgetrs\(\) takes 13 arguments \(handle, params, trans"):
        cs.cusolverDnXgetrs(1, 2)
    from cumath._core.cuda import device_count

    if device_count() == 0:  # no GPU: the library refuses to make a handle, with its status
        with pytest.raises(CUSOLVERError, match="cuSOLVER failed with CUSOLVER_STATUS_"):
            cs.cusolverDnCreate()


def test_cublas_batched_lu_wrappers():
    for p in "SDCZ":
        for name in (f"cublas{p}getrfBatched", f"cublas{p}getrsBatched"):
            assert name in cublas.__all__ and callable(getattr(cublas, name))
    with pytest.raises(TypeError, match=r"cublasDgetrfBatched\(\) takes handle and 6 arguments \(n, Aarray, lda"):
        cublas.cublasDgetrfBatched(1, 2)
    try:
        assert cublas._L.has("cublasZgetrsBatched")
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
