"""The bindings of the sparse direct solver: oneMKL PARDISO (run here when oneMKL is installed) and cuDSS's tables
(read from cudss.h of cuDSS 1.0)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import scipy.sparse as sp

from cumath._bindings import cudss
from cumath.errors import CUDSSError, LibraryError, PARDISOError


@pytest.fixture(scope="module")
def pardiso():
    from cumath._bindings import mkl_pardiso
    from cumath.errors import LibraryNotFoundError

    try:
        mkl_pardiso.mkl_int_bits()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    return mkl_pardiso


def test_pardiso_phases(pardiso):
    a = sp.csr_array(np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]]))
    n = 3
    pt = np.zeros(64, np.int64)
    ip = np.zeros(64, np.int64 if pardiso.mkl_int_bits() == 64 else np.int32)
    pardiso.pardisoinit(pt.ctypes.data, 11, ip.ctypes.data)
    assert ip[0] == 1 and ip[12] == 1 and ip[9] == 13  # defaults of mtype 11: matching, perturbation 1e-13
    ip[34] = 1
    ia, ja = a.indptr.astype(ip.dtype), a.indices.astype(ip.dtype)
    b, x = np.array([1.0, 2, 3]), np.empty(3)
    perm = np.zeros(n, ip.dtype)
    args = lambda phase: (pt.ctypes.data, 1, 1, 11, phase, n, a.data.ctypes.data, ia.ctypes.data, ja.ctypes.data,
                          perm.ctypes.data, 1, ip.ctypes.data, 0, b.ctypes.data, x.ctypes.data)
    for phase in (11, 22, 33):
        pardiso.pardiso(*args(phase))
    np.testing.assert_allclose(a @ x, b)
    pardiso.pardiso(*args(-1))
    assert "Math Kernel Library" in pardiso.mkl_get_version_string()
    assert pardiso.mkl_get_max_threads() >= 1


def test_pardiso_errors_are_typed(pardiso):
    pt = np.zeros(64, np.int64)
    ip = np.zeros(64, np.int64 if pardiso.mkl_int_bits() == 64 else np.int32)
    pardiso.pardisoinit(pt.ctypes.data, 11, ip.ctypes.data)
    ia = np.array([0, 2, 1], dtype=ip.dtype)  # decreasing row offsets: inconsistent input
    ja = np.array([0, 1], dtype=ip.dtype)
    v = np.ones(2)
    ip[34] = 1
    ip[26] = 1  # the matrix checker
    with pytest.raises(PARDISOError, match=r"MKL PARDISO failed with INPUT_INCONSISTENT \(-1\): phase 11") as e:
        pardiso.pardiso(pt.ctypes.data, 1, 1, 11, 11, 2, v.ctypes.data, ia.ctypes.data, ja.ctypes.data, 0, 1,
                        ip.ctypes.data, 0, 0, 0)
    assert isinstance(e.value, LibraryError) and e.value.status == -1
    pardiso.pardiso(pt.ctypes.data, 1, 1, 11, -1, 2, v.ctypes.data, ia.ctypes.data, ja.ctypes.data, 0, 1,
                    ip.ctypes.data, 0, 0, 0)


def test_cudss_tables():
    assert cudss.CUDSS_VERSION == 10000
    assert cudss.Phase.ANALYSIS == 3 and cudss.Phase.SOLVE == 0x3F0 and cudss.Phase.FACTORIZATION == 4
    assert cudss.ConfigParam.MEMORY_OPTIMIZATION_SETTING == 29 and cudss.DataParam.FLOPS == 26
    assert cudss.Status.IR_FAILED == 7 and cudss.MatrixFormat.DISTRIBUTED == 8
    for param in cudss.ConfigParam:
        if param != cudss.ConfigParam.DEVICE_INDICES:  # an int array
            assert param in cudss.CONFIG_TYPES
    sizes = {p: ctypes.sizeof(t) for p, t in cudss.CONFIG_TYPES.items()}
    assert sizes[cudss.ConfigParam.PIVOT_THRESHOLD] == sizes[cudss.ConfigParam.MAX_LU_NNZ] == 8
    assert sizes[cudss.ConfigParam.REORDERING_ALG] == 4
    e = CUDSSError(3, "INVALID_VALUE", "setting X")
    assert str(e) == "cuDSS failed with INVALID_VALUE (3): setting X" and isinstance(e, LibraryError)
    with pytest.raises(CUDSSError, match="NOT_SUPPORTED"):
        cudss.check(4)
