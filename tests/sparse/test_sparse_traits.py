"""Pure arithmetic of the sparse direct solver: geometry, layouts, pattern maps, the residual check."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath._core.frameworks.numpy import wrap
from cumath.sparse._operand import wrap_sparse
from cumath.sparse.advanced import DirectSolverMatrixType as MT
from cumath.sparse.advanced import DirectSolverMatrixViewType as MV
from cumath.sparse.advanced._traits import (Rhs, column_major, is_canonical, pardiso_mtype, pattern_map, problem,
                                            relative_residual, residual_tolerance, result_perm, structurally_singular)


def _csr(n=4):
    return wrap_sparse(sp.csr_array(np.eye(n) + np.eye(n, k=1)))


def test_problem_geometry():
    a = _csr(5)
    p = problem(a, wrap(np.ones(5)))
    assert (p.count, p.sizes, p.lhs_form, p.rhs_form, p.nrhs) == (1, (5,), "single", "single", 1)
    assert p.rhs[0] == Rhs(5, 1, 0, 1, 5, True)
    f = np.asfortranarray(np.ones((5, 3)))
    assert problem(a, wrap(f)).rhs[0] == Rhs(5, 3, 0, 1, 5, False)
    p = problem((a, a), (wrap(np.ones(5)), wrap(np.ones((5, 2)))))
    assert p.count == 2 and p.rhs_operand == (0, 1) and p.batched
    b3 = np.ones((3, 5, 2))
    p = problem((a, a, a), wrap(b3))
    assert p.rhs_form == "implicit" and [r.offset for r in p.rhs] == [0, 10, 20]


@pytest.mark.parametrize("b, message", [
    (np.ones(4), "the right-hand side has 4 rows but the matrix is 5 x 5"),
    (np.ones((2, 5, 1)), "b is a batch of 2 right-hand sides but a is one matrix"),
    (np.ones(5, dtype=np.float32), "b has dtype float32 while a has float64"),
])
def test_problem_errors(b, message):
    with pytest.raises((ValueError, TypeError), match=message):
        problem(_csr(5), wrap(b))


def test_more_problem_errors():
    a = _csr(3)
    with pytest.raises(ValueError, match="a is a batch of 2 matrices but b is not batched"):
        problem((a, a), wrap(np.ones(3)))
    with pytest.raises(ValueError, match="a has 2 matrices but b has 3 right-hand sides"):
        problem((a, a), wrap(np.ones((3, 3, 1))))
    rect = wrap_sparse(sp.csr_array(np.ones((2, 3))))
    with pytest.raises(ValueError, match="a must be square"):
        problem(rect, wrap(np.ones(2)))
    ints = wrap_sparse(sp.csr_array(np.eye(2, dtype=np.int64)))
    with pytest.raises(TypeError, match="a's dtype int64 is not supported"):
        problem(ints, wrap(np.ones(2, dtype=np.int64)))
    with pytest.raises(ValueError, match="every right-hand side of an explicitly batched b"):
        problem((a,), (wrap(np.ones((1, 3, 1))),))


def test_column_major_rules():
    assert column_major(Rhs(5, 1, 0, 1, 5, True), exact=True) == 5
    assert column_major(Rhs(5, 1, 0, 2, 5, True), exact=False) is None
    assert column_major(Rhs(5, 3, 0, 1, 7, False), exact=False) == 7
    assert column_major(Rhs(5, 3, 0, 1, 7, False), exact=True) is None
    assert column_major(Rhs(5, 3, 0, 3, 1, False), exact=False) is None
    assert column_major(Rhs(0, 3, 0, 3, 1, False), exact=True) == 1
    assert result_perm(1) is None and result_perm(2) == (1, 0) and result_perm(4) == (0, 1, 3, 2)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 9), density=st.floats(0.0, 1.0), seed=st.integers(0, 10 ** 6),
       keep=st.sampled_from(["all", "upper", "lower"]), mirror=st.booleans(), herm=st.booleans(),
       diagonal=st.booleans())
def test_pattern_maps_rebuild_the_matrix(n, density, seed, keep, mirror, herm, diagonal):
    r = np.random.default_rng(seed)
    dense = (r.random((n, n)) < density) * (r.standard_normal((n, n)) + 1j * r.standard_normal((n, n)))
    a = sp.csr_array(dense)
    if keep == "all" and mirror:
        mirror = False
    pm = pattern_map(a.indptr, a.indices, n, keep=keep, mirror=mirror, hermitian=herm, diagonal=diagonal)
    out = sp.csr_array((pm.values(a.data), pm.indices, pm.indptr), shape=(n, n))
    assert is_canonical(pm.indptr, pm.indices)
    tri = {"all": dense, "upper": np.triu(dense), "lower": np.tril(dense)}[keep]
    if mirror:
        strict = tri - np.diag(np.diag(tri))
        expect = tri + (strict.conj().T if herm else strict.T)
    elif keep == "lower":
        expect = tri.conj().T if herm else tri.T
    else:
        expect = tri
    np.testing.assert_allclose(out.toarray(), expect)
    if diagonal:
        d = out.tocoo()
        assert set(range(n)) <= {int(i) for i, j in zip(d.row, d.col) if i == j}


def test_pattern_maps_sum_duplicates():
    indptr, indices, values = np.array([0, 3, 4]), np.array([1, 0, 1]), np.array([1.0, 2.0, 3.0])
    indices = np.concatenate([indices, [0]])
    values = np.concatenate([values, [4.0]])
    pm = pattern_map(indptr, indices, 2, keep="all")
    out = sp.csr_array((pm.values(values), pm.indices, pm.indptr), shape=(2, 2)).toarray()
    np.testing.assert_allclose(out, [[2.0, 4.0], [4.0, 0.0]])
    assert not is_canonical(indptr, indices) and is_canonical(pm.indptr, pm.indices)


def test_relative_residual_and_tolerance():
    a = sp.csr_array(np.array([[2.0, 1], [1, 3]]))
    x = np.linalg.solve(a.toarray(), [1.0, 2])
    assert relative_residual(a.indptr, a.indices, a.data, x, np.array([1.0, 2])) < 1e-15
    up = sp.csr_array(np.triu(a.toarray()))
    assert relative_residual(up.indptr, up.indices, up.data, x, np.array([1.0, 2]), MT.SYMMETRIC, MV.UPPER) < 1e-15
    assert relative_residual(a.indptr, a.indices, a.data, x * 2, np.array([1.0, 2])) > 0.5
    assert relative_residual(a.indptr, a.indices, a.data, np.array([np.inf, 0]), np.array([1.0, 2])) == np.inf
    assert relative_residual(a.indptr, a.indices, a.data, np.zeros(2), np.zeros(2)) == 0
    assert residual_tolerance("float64") == pytest.approx(1.22e-4, rel=0.01)
    assert residual_tolerance("complex64") == pytest.approx(1.86e-2, rel=0.01)


def test_pardiso_matrix_types():
    assert [pardiso_mtype(t, "float64") for t in MT] == [11, -2, -2, 2, 2]
    assert [pardiso_mtype(t, "complex128") for t in MT] == [13, 6, -4, 4, 4]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 9), density=st.floats(0.0, 0.6), seed=st.integers(0, 10_000),
       view=st.sampled_from([MV.FULL, MV.LOWER, MV.UPPER]))
def test_structural_singularity_is_an_empty_line_of_the_matrix_read(n, density, seed, view):
    """structurally_singular against a dense reading of the pattern: the full matrix's rows and columns, or (a
    triangle view) the mirrored triangle's."""
    m = sp.random_array((n, n), density=density, format="csr", rng=np.random.default_rng(seed))
    if view != MV.FULL:
        m = sp.csr_array(sp.triu(m) if view == MV.UPPER else sp.tril(m))
    dense = m.toarray() != 0
    if view != MV.FULL:
        dense = dense | dense.T
    got = structurally_singular(m.indptr, m.indices, n, view)
    empty_rows, empty_cols = ~dense.any(axis=1), ~dense.any(axis=0)
    assert (got is None) == (not empty_rows.any() and not empty_cols.any())
    if got is not None:
        line = int(got.split(" has")[0].split()[-1])
        assert empty_rows[line] or empty_cols[line]
        assert got.startswith("row and column" if view != MV.FULL else ("row" if empty_rows.any() else "column"))
