"""The pure plan arithmetic of the dense direct solver (``cumath.linalg._solver._traits``) and its options: no
library, no GPU. The layouts are checked against what they promise by solving with SciPy's LAPACK exactly as a
plan tells an engine to (factor storage order, trans, uplo, conjugations)."""

from __future__ import annotations

import numpy as np
import pytest

from cumath.errors import LAPACKError
from cumath.linalg._solver import _traits as T
from cumath.linalg._solver._options import DirectSolverMatrixType, DirectSolverOptions, matrix_type_of
from helpers.matrix import random_array

sl = pytest.importorskip("scipy.linalg.lapack")


def test_geometry():
    g = T.geometry((2, 3, 5, 5), "float64", (2, 3, 5), "float64")
    assert (g.n, g.nrhs, g.batch_shape, g.vector, g.kind, g.count, g.x_shape) == (5, 1, (2, 3), True, "lu", 6,
                                                                                  (2, 3, 5))
    g = T.geometry((4, 4), "complex64", (4, 7), "complex64", DirectSolverMatrixType.HPD)
    assert (g.nrhs, g.vector, g.kind, g.complex, g.empty) == (7, False, "cholesky", True, False)
    assert T.geometry((0, 3, 3), "float32", (0, 3), "float32").empty
    assert T.geometry((3, 3), "float32", (3, 0), "float32").empty


def test_matrix_order():
    assert T.matrix_order(4, 4, 1, 4) == ("F", 4)
    assert T.matrix_order(4, 4, 1, 9) == ("F", 9)
    assert T.matrix_order(4, 4, 4, 1) == ("C", 4)
    assert T.matrix_order(4, 3, 5, 1) == ("C", 5)
    assert T.matrix_order(4, 4, 2, 8) is None
    assert T.matrix_order(4, 4, -4, 1) is None
    assert T.matrix_order(1, 1, 7, 3) == ("F", 1)
    assert T.matrix_order(4, 1, 1, 0) == ("F", 4)


def test_overlapping_and_offsets():
    assert not T.overlapping((3, 4, 4), (16, 4, 1))
    assert T.overlapping((3, 4, 4), (0, 4, 1))
    assert T.overlapping((4, 4), (1, 1))
    assert not T.overlapping((2, 3), (-3, 1))
    assert not T.overlapping((1, 5), (0, 1))
    np.testing.assert_array_equal(T.batch_offsets((2, 3), (30, -5)), [0, -5, -10, 30, 25, 20])
    assert T.batch_offsets((), ()).tolist() == [0]


def _f(s):
    return tuple(sorted(s))


@pytest.mark.parametrize("kind", ["lu", "cholesky"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("order", ["C", "F", "other"])
@pytest.mark.parametrize("inplace_a", [False, True])
@pytest.mark.parametrize("can_conj", [True, False])
def test_factor_layouts_solve_the_right_system(kind, dtype, order, inplace_a, can_conj):
    """Follow the plan with SciPy's LAPACK: copy a into the storage it names (conjugated when it says so), factor
    with its uplo, solve with its trans/uplo (and the conjugations of the right-hand side), and check a @ x = b.
    Only a's lower triangle is meaningful for Cholesky."""
    n = 6
    m = random_array((n, n), dtype)
    if kind == "lu":
        a = m + 3 * np.eye(n)
        ref = a
    else:
        ref = m @ m.conj().T + n * np.eye(n)
        a = ref.copy()
        a[np.triu_indices(n, 1)] = 77.0
    strides = {"C": (n, 1), "F": (1, n), "other": (2 * n, 2)}[order]
    g = T.geometry((n, n), dtype, (n, 2), dtype, DirectSolverMatrixType.GENERAL if kind == "lu" else
                   DirectSolverMatrixType.HPD)
    lay = T.factor_layout(g, strides, inplace_a, can_conj)
    if not can_conj:
        assert not lay.conj_in and not lay.conj_rhs
    if inplace_a and lay.in_place:
        assert order != "other"
    if not inplace_a:
        assert not lay.in_place and not lay.copy_back
    # what LAPACK sees: the column-major matrix of the storage
    stored = np.conj(a) if lay.conj_in else a
    seen = stored if lay.order == "F" else stored.T
    b = random_array((n, 2), dtype)
    rhs = np.conj(b) if lay.conj_rhs else b
    p = {"float64": "d", "complex128": "z"}[dtype]
    if kind == "lu":
        lu, piv, info = getattr(sl, p + "getrf")(seen)
        x, info2 = getattr(sl, p + "getrs")(lu, piv, rhs, trans={"N": 0, "T": 1}[lay.trans])
    else:
        c, info = getattr(sl, p + "potrf")(seen, lower=int(lay.uplo == "L"), clean=0)
        x, info2 = getattr(sl, p + "potrs")(c, rhs, lower=int(lay.uplo == "L"))
    assert info == 0 and info2 == 0
    if lay.conj_rhs:
        x = np.conj(x)
    np.testing.assert_allclose(ref @ x, b, rtol=1e-10, atol=1e-10)


def test_scratch_layouts_work_in_place():
    g = T.geometry((2, 5, 5), "float32", (2, 5, 3), "float32")
    assert T.factor_layout(g, (25, 1, 5), False, False, scratch=True) == T.FactorLayout(True, "F", 5)
    lay = T.factor_layout(g, (25, 5, 1), False, False, scratch=True)
    assert (lay.in_place, lay.order, lay.trans) == (True, "C", "T")
    assert T.rhs_layout(g, (15, 1, 5), False, scratch=True) == T.RhsLayout(True, 5)


def test_rhs_layouts():
    g = T.geometry((3, 4, 4), "float64", (3, 4, 2), "float64")
    assert T.rhs_layout(g, (8, 1, 4), True) == T.RhsLayout(True, 4)
    assert T.rhs_layout(g, (8, 1, 6), True) == T.RhsLayout(True, 6)
    lay = T.rhs_layout(g, (8, 2, 1), True)
    assert not lay.in_place and lay.copy_back and "copied back into b" in lay.note
    assert T.rhs_layout(g, (8, 1, 4), False) == T.RhsLayout(False, 4)
    v = T.geometry((3, 4, 4), "float64", (3, 4), "float64")
    assert T.rhs_layout(v, (4, 1), True).in_place and not T.rhs_layout(v, (4, 2), True).in_place
    assert T.x_perm(g) == (0, 2, 1) and T.x_perm(v) == (0, 1)


def test_staging_perms():
    g = T.geometry((2, 4, 4), "float64", (2, 4), "float64")
    assert T.staging_perm(g, (16, 4, 1), False) == (0, 1, 2)  # C stays C
    assert T.staging_perm(g, (16, 1, 4), False) == (0, 2, 1)  # F stays F
    assert T.staging_perm(g, (16, 4, 1), True) == (0, 2, 1)  # LU factors of a itself come back: column-major
    h = T.geometry((2, 4, 4), "complex64", (2, 4), "complex64", DirectSolverMatrixType.HPD)
    assert T.staging_perm(h, (16, 4, 1), False) == (0, 2, 1)  # a Hermitian matrix is not read transposed
    r = T.geometry((2, 4, 4), "float32", (2, 4), "float32", DirectSolverMatrixType.SPD)
    assert T.staging_perm(r, (16, 4, 1), True) == (0, 1, 2)  # real symmetric: its transpose is itself


def test_batch_method_and_threads_tables(monkeypatch):
    assert T.choose_batch_method("lu", 32, 1000) == "batched"
    assert T.choose_batch_method("lu", 32, 1) == "loop"
    assert T.choose_batch_method("cholesky", 4096, 8) == "loop"
    assert T.choose_batch_method("lu", 4096, 8, "batched") == "batched"
    # the small-system kernels, where allowed (CUMATH_SOLVER_KERNEL): LU up to order 32, one system or many
    assert T.choose_batch_method("lu", 32, 1000, kernel=True) == "kernel"
    assert T.choose_batch_method("lu", 1, 1, kernel=True) == "kernel"
    assert T.choose_batch_method("lu", 33, 1000, kernel=True) == "batched"
    assert T.choose_batch_method("cholesky", 8, 1000, kernel=True) == "kernel"
    assert T.choose_batch_method("cholesky", 40, 1000, kernel=True) == "batched"
    assert T.choose_batch_method("lu", 8, 1000, "batched", kernel=True) == "batched"
    assert T.choose_batch_method("lu", 8, 1000, "kernel") == "kernel"
    assert T.cpu_threads(32, 1, 2) == 1
    assert T.cpu_threads(32, 100, 2, named=8) == 8
    assert T.cpu_threads(32, 3, 2, named=8) == 3
    monkeypatch.setitem(T.THREADS_FROM, "min_n", 16)
    monkeypatch.setitem(T.THREADS_FROM, "min_count", 4)
    assert T.cpu_threads(32, 100, 2) == 2
    assert T.cpu_threads(8, 100, 2) == 1
    assert T.cpu_threads(32, 3, 2) == 1
    assert T.cpu_threads(32, 100, 2, nrhs=1) == 1  # a solve of one right-hand side is too short
    assert T.cpu_threads(32, 100, 2, nrhs=16) == 2
    assert T.cpu_threads(32, 100, 2, named=2, nrhs=1) == 2
    # parts as one native call each (run_table): the batch's total work decides
    monkeypatch.setitem(T.THREADS_FROM, "table_min_n", 16)
    monkeypatch.setitem(T.THREADS_FROM, "table_work", 1 << 21)
    monkeypatch.setitem(T.THREADS_FROM, "solve_work", 1 << 20)
    assert T.cpu_threads(16, 512, 2, table=True) == 2  # 16^3 x 512 = 2^21
    assert T.cpu_threads(16, 511, 2, table=True) == 1
    assert T.cpu_threads(8, 1 << 20, 2, table=True) == 1  # order 8: memory-bound, never
    assert T.cpu_threads(32, 4096, 2, nrhs=1, table=True) == 2  # 32^2 x 4096 = 2^22
    assert T.cpu_threads(32, 1023, 2, nrhs=1, table=True) == 1
    assert T.cpu_threads(32, 1, 2, nrhs=1, table=True) == 1
    assert T.cpu_threads(32, 4096, 2, named=1, nrhs=1, table=True) == 1


def test_check_infos_messages():
    g = T.geometry((2, 2, 3, 3), "float64", (2, 2, 3), "float64")
    T.check_infos(np.zeros(4, np.int32), g, "dgetrf")
    with pytest.raises(T.SingularMatrixError, match=r"^a\[1, 0\] is singular: U\[2, 2\] of its LU factorization "
                                                    r"\(P a = L U\) is exactly zero \(dgetrf info 3\)") as err:
        T.check_infos(np.array([0, 0, 3, 0]), g, "dgetrf")
    assert (err.value.problem, err.value.info, err.value.pivot, err.value.count) == ((1, 0), 3, 2, 1)
    with pytest.raises(LAPACKError, match=r"LAPACK failed with argument 4 of dgetrf is invalid \(-4\): a\[0, 1\]"):
        T.check_infos(np.array([0, -4, 0, 0]), g, "dgetrf")
    c = T.geometry((3, 3), "float32", (3,), "float32", DirectSolverMatrixType.SPD)
    with pytest.raises(T.SingularMatrixError, match="a is not positive definite: its leading minor of order 2"):
        T.check_infos([2], c, "spotrf")
    with pytest.raises(T.SingularMatrixError, match=r"a\[5\] is singular"):
        T.check_infos([1], T.geometry((3, 3), "float32", (3,), "float32"), "sgetrf", problem=5)


def test_ill_conditioned_messages():
    g = T.geometry((3, 2, 2), "float64", (3, 2), "float64")
    assert T.ill_conditioned(np.array([[1, 2], [3, 1], [1, 1e-3]]), g) is None
    msg = T.ill_conditioned(np.array([[1, 2], [1e-17, 1], [1, 1e-20]]), g)
    assert msg.startswith("a[1] is numerically singular: the smallest pivot of its factorization is 1.0e-17 of the "
                          "largest, below the float64 precision 2.2e-16") and "(2 of the 3 systems" in msg
    assert "non-finite pivots" in T.ill_conditioned(np.array([[1, 2], [np.nan, 1], [1, 1]]), g)
    assert "non-finite pivots" in T.ill_conditioned(np.array([[1, np.inf], [1, 1], [1, 1]]), g)
    c = T.geometry((2, 2), "float32", (2,), "float32", DirectSolverMatrixType.SPD)
    assert T.ill_conditioned(np.array([[1.0, 1e-3]]), c) is None
    assert "numerically singular" in T.ill_conditioned(np.array([[1.0, 1e-4]]), c)  # squared: 1e-8 < 1.2e-7


def test_problem_labels():
    assert T.problem_label(None) == "a" and T.problem_label(()) == "a"
    assert T.problem_label((2, 0)) == "a[2, 0]" and T.problem_label(7) == "a[7]"


def test_singular_error_is_a_linalg_error():
    from cumath.errors import CumathError, SingularMatrixError

    e = T.SingularMatrixError("x", (1,), 3)
    assert isinstance(e, np.linalg.LinAlgError) and isinstance(e, SingularMatrixError)
    assert isinstance(e, CumathError) and isinstance(e, ValueError)


def test_options():
    assert matrix_type_of("spd") is DirectSolverMatrixType.SPD
    assert matrix_type_of(4) is DirectSolverMatrixType.HPD
    assert matrix_type_of(DirectSolverMatrixType.GENERAL) is DirectSolverMatrixType.GENERAL
    for bad in ("symmetric", 1, True, None, 2.0):
        with pytest.raises(ValueError, match="is not supported; the allowed values are 'general', 'spd', 'hpd'"):
            matrix_type_of(bad)
    o = DirectSolverOptions()
    assert (o.allocator, o.blocking, o.logger, o.handle, o.inplace_a, o.inplace_b) == (None, "auto", None, None,
                                                                                       False, False)
    assert (o.matrix_type, o.cpu_lapack, o.batch_method) == (DirectSolverMatrixType.GENERAL, "auto", "auto")
    with pytest.raises(TypeError):
        DirectSolverOptions(False)  # keyword-only


def test_the_kernels_switch(monkeypatch):
    from cumath.linalg._solver._backends import kernel_enabled

    monkeypatch.delenv("CUMATH_SOLVER_KERNEL", raising=False)
    assert kernel_enabled()
    for off in ("0", "off", "False", " no "):
        monkeypatch.setenv("CUMATH_SOLVER_KERNEL", off)
        assert not kernel_enabled()
    monkeypatch.setenv("CUMATH_SOLVER_KERNEL", "1")
    assert kernel_enabled()
