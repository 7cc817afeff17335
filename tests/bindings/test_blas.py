"""The CBLAS binding (cumath._bindings.blas) and the cuBLAS binding tables: providers load, integer widths,
enum values from the headers, direct calls against NumPy."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cumath._bindings import blas, cublas
from cumath.errors import LibraryNotFoundError


def _provider(name):
    try:
        return blas.get_blas(name)
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))


def test_enum_values_from_cblas_h():
    assert blas.CBLAS_ORDER.CblasColMajor == 102 and blas.CBLAS_ORDER.CblasRowMajor == 101
    assert [int(t) for t in blas.CBLAS_TRANSPOSE] == [111, 112, 113, 114]
    assert blas.CBLAS_UPLO.CblasUpper == 121 and blas.CBLAS_UPLO.CblasLower == 122
    assert blas.CBLAS_DIAG.CblasUnit == 132 and blas.CBLAS_SIDE.CblasRight == 142


def test_auto_finds_numpys_blas_and_it_is_ilp64():
    lib = blas.find_blas("auto")
    assert lib.name in blas.PROVIDERS
    if lib.name == "openblas64_":
        assert lib.ilp64 and lib.max_int == (1 << 63) - 1
        assert "USE64BITINT" in lib.config
        assert lib.has("cblas_zhemm") and lib.has("cblas_strmm")


@pytest.mark.parametrize("name", ["openblas64_", "openblas", "mkl"])
def test_direct_dgemm_and_threads(name):
    lib = _provider(name)
    rng = np.random.default_rng(3)
    a = np.asfortranarray(rng.standard_normal((5, 3)))
    b = np.asfortranarray(rng.standard_normal((3, 4)))
    c = np.asfortranarray(rng.standard_normal((5, 4)))
    ref = 2.0 * a @ b + 0.5 * c
    lib.cblas_dgemm(102, 111, 111, 5, 4, 3, 2.0, a.ctypes.data, 5, b.ctypes.data, 3, 0.5, c.ctypes.data, 5)
    np.testing.assert_allclose(c, ref, rtol=1e-13)
    prev = lib.set_num_threads_local(1)
    if prev is not None:
        assert lib.set_num_threads_local(prev) == 1
    assert lib.get_num_threads() is None or lib.get_num_threads() >= 1


@pytest.mark.parametrize("name", ["openblas64_", "mkl"])
def test_complex_scalars_by_address_and_conj_no_trans(name):
    lib = _provider(name)
    rng = np.random.default_rng(4)
    a = np.asfortranarray(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)))
    b = np.asfortranarray(rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)))
    c = np.zeros((3, 2), np.complex128, order="F")
    scal = np.array([1 - 1j, 0])
    trans = 114 if lib.conj_no_trans else 113
    lib.cblas_zgemm(102, trans, 111, 3, 2, 3, scal.ctypes.data, a.ctypes.data, 3, b.ctypes.data, 3,
                    scal[1:].ctypes.data, c.ctypes.data, 3)
    expected = (1 - 1j) * ((a.conj() if trans == 114 else a.conj().T) @ b)
    np.testing.assert_allclose(c, expected, rtol=1e-13)


def test_unknown_provider():
    with pytest.raises(ValueError, match="allowed values"):
        blas.get_blas("atlas")
    with pytest.raises(ValueError, match="'auto', 'openblas', 'mkl'"):
        blas.find_blas("nonexistent")


def test_cublas_tables_match_the_header():
    assert cublas.CUBLAS_VERSION == 130102
    assert cublas.cublasOperation_t.CUBLAS_OP_C == 2 and cublas.cublasFillMode_t.CUBLAS_FILL_MODE_FULL == 2
    assert cublas.cublasSideMode_t.CUBLAS_SIDE_RIGHT == 1 and cublas.cublasDiagType_t.CUBLAS_DIAG_UNIT == 1
    assert cublas.cublasStatus_t.CUBLAS_STATUS_NOT_SUPPORTED == 15
    for routine, (precisions, pattern, args, names) in cublas.ROUTINES.items():
        assert len(args) == len(names.split()), routine
        for p in precisions:
            name = pattern.format(p=p)
            restype, argtypes = cublas.TABLE[name]
            assert restype is ctypes.c_int and argtypes[0] is ctypes.c_void_p
            wrapper = getattr(cublas, name)
            assert wrapper.__name__ == name and names.split()[0] in wrapper.__doc__
    assert "cublasZhemm_v2_64" in cublas.TABLE and "cublasShemm_v2_64" not in cublas.TABLE
    with pytest.raises(TypeError, match="takes handle and 13 arguments"):
        cublas.cublasDgemm_v2_64(0, 1, 2)
