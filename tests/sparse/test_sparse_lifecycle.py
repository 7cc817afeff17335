"""The DirectSolver's lifecycle, states, resets, configs, infos, and the stateless function's plan cache."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import scipy.sparse as sp

import cumath.sparse.advanced as S
from cumath.config import plan_cache
from cumath.errors import InvalidStateError
from sparse_cases import assert_solution, rng, system

pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")


@pytest.fixture
def problem():
    full = system(21, "float64", seed=3)
    return full, rng(0).standard_normal((21, 2))


def test_the_whole_lifecycle(problem):
    a, b = problem
    with S.DirectSolver(a, b) as s:
        assert s.plan() is s.plan_info
        assert s.factorize() is s.factorization_info
        x = s.solve()
        assert_solution(x, a, b, "float64")
        b[...] = rng(1).standard_normal(b.shape)  # new values in place: solve() reads them
        assert_solution(s.solve(), a, b, "float64")
        a.data *= 2  # new matrix values in place: factorize() again
        s.factorize()
        assert_solution(s.solve(), a, b, "float64")
        assert_solution(s.execute(), a, b, "float64")
    assert s._freed


@pytest.mark.parametrize("call, message", [
    ("factorize", "DirectSolver.factorize() needs a plan: call plan() first"),
    ("solve", "DirectSolver.solve() needs a plan: call plan() first"),
    ("execute", "DirectSolver.execute() needs a plan: call plan() first"),
])
def test_methods_before_plan(problem, call, message):
    with S.DirectSolver(*problem) as s:
        with pytest.raises(InvalidStateError, match=message.replace("(", r"\(").replace(")", r"\)")):
            getattr(s, call)()


def test_solve_before_factorize_and_after_a_reset_of_a(problem):
    a, b = problem
    with S.DirectSolver(a, b) as s:
        s.plan()
        with pytest.raises(InvalidStateError, match=r"solve\(\) needs a factorization of the current a: call "
                                                   r"factorize\(\) first"):
            s.solve()
        s.factorize()
        s.solve()
        s.reset_operands(b=rng(2).standard_normal(b.shape))  # a new b keeps the factorization
        s.solve()
        a2 = a.copy()
        a2.data = a2.data * 3
        s.reset_operands(a=a2)  # new values: factorize again, no new plan
        with pytest.raises(InvalidStateError, match="needs a factorization"):
            s.solve()
        s.factorize()
        assert_solution(s.solve(), a2, s._ops["b"].obj, "float64")


def test_use_after_free_and_free_twice(problem):
    s = S.DirectSolver(*problem)
    s.plan()
    s.free()
    s.free()
    for call in ("plan", "factorize", "solve", "execute", "release_operands"):
        with pytest.raises(InvalidStateError, match=rf"DirectSolver.{call}\(\) was called after free\(\); create a "
                                                    rf"new object"):
            getattr(s, call)()
    with pytest.raises(InvalidStateError, match="after free"):
        s.reset_operands(b=problem[1])
    with pytest.raises(InvalidStateError, match="after free"):
        s.plan_info.memory_estimates
    with pytest.raises(InvalidStateError, match="after free"):
        s.plan_config.reordering_algorithm = "amd"


def test_release_operands(problem):
    a, b = problem
    with S.DirectSolver(a, b) as s:
        s.plan()
        s.factorize()
        s.release_operands()
        assert s._ops["a"] is None and s._ops["b"] is None
        with pytest.raises(InvalidStateError, match=r"the operands were released; call reset_operands\(a=..., "
                                                    r"b=...\) before solve\(\)"):
            s.solve()
        with pytest.raises(ValueError, match="after release_operands\\(\\), every operand must be given again; "
                                             "missing a"):
            s.reset_operands(b=b)
        s.reset_operands(a=a.copy(), b=b)
        s.factorize()
        assert_solution(s.solve(), a, b, "float64")
        s.reset_operands()  # neither: a release
        assert s._released


def test_reset_mismatches(problem):
    a, b = problem
    with S.DirectSolver(a, b) as s:
        with pytest.raises(ValueError, match="the new b does not match the planned one"):
            s.reset_operands(b=np.ones((21, 3)))
        with pytest.raises(ValueError, match="the new b does not match"):
            s.reset_operands(b=np.asfortranarray(b))
        with pytest.raises(ValueError, match="the new a does not match"):
            s.reset_operands(a=a.astype(np.float32))
        other = sp.csr_array(sp.random_array((21, 21), density=0.5, rng=rng(3)) + sp.eye_array(21))
        with pytest.raises(ValueError, match="the new a does not match"):
            s.reset_operands(a=other)
        with pytest.raises(ValueError, match="the new b does not match"):
            s.reset_operands_unchecked(b=np.ones((21, 3)))
        with pytest.raises(TypeError, match="must be in CSR format"):
            s.reset_operands(a=a.tocsc())


def test_reset_with_another_pattern_needs_a_new_plan(problem, caplog):
    a, b = problem
    perm = rng(5).permutation(a.nnz)
    with S.DirectSolver(a, b) as s:
        s.plan()
        s.factorize()
        # the same number of entries, elsewhere: a transpose has another pattern
        t = sp.csr_array(a.T)
        if np.array_equal(t.indices, a.indices) and np.array_equal(t.indptr, a.indptr):
            pytest.skip("symmetric pattern drawn")
        with caplog.at_level(logging.INFO, logger="cumath"):
            s.reset_operands(a=t)
        assert "another sparsity pattern" in caplog.text
        with pytest.raises(InvalidStateError, match=r"a was reset with another pattern; call plan\(\) first"):
            s.factorize()
        s.plan()
        s.factorize()
        assert_solution(s.solve(), t, b, "float64")
        # the same pattern in new arrays: no new plan
        same = sp.csr_array((t.data * 2, t.indices.copy(), t.indptr.copy()), shape=t.shape)
        s.reset_operands(a=same)
        s.factorize()
        assert_solution(s.solve(), same, b, "float64")
        # unchecked: trusted
        s.reset_operands_unchecked(a=sp.csr_array((t.data * 4, t.indices.copy(), t.indptr.copy()), shape=t.shape))
        s.factorize()
    assert perm.size


def test_configs_and_infos(problem):
    a, b = problem
    with S.DirectSolver(a, b, options={"cpu_engine": "superlu"}) as s:
        pc = s.plan_config
        assert pc.reordering_algorithm is None
        pc.reordering_algorithm = "colamd"
        assert pc.reordering_algorithm is S.DirectSolverReorderingAlg.COLAMD
        pc.reordering_algorithm = S.DirectSolverReorderingAlg.AMD
        pc.pivot_threshold = 0.5
        s.factorization_config.pivot_eps = 1e-12
        s.solution_config.ir_num_steps = 2
        with pytest.raises(ValueError, match="reordering_algorithm='magic' is not supported; the allowed values are"):
            pc.reordering_algorithm = "magic"
        with pytest.raises(ValueError, match="pivot_threshold must be >= 0"):
            pc.pivot_threshold = -1.0
        with pytest.raises(TypeError, match="ir_num_steps must be an int"):
            s.solution_config.ir_num_steps = 1.5
        with pytest.raises(AttributeError, match="DirectSolverPlanConfig has no attribute 'pivot_eps'"):
            pc.pivot_eps = 1.0
        with pytest.raises(InvalidStateError, match=r"needs a plan: call plan\(\) first"):
            s.plan_info.row_permutation
        s.plan()
        with pytest.raises(InvalidStateError, match="needs a factorization"):
            s.factorization_info.lu_nnz
        f = s.factorize()
        assert f.lu_nnz > 0 and f.info == 0 and f.npivots == 0
        assert sorted(f.row_permutation) == list(range(21)) and sorted(f.col_permutation) == list(range(21))
        assert f.diag.shape == (21,)
        assert s.plan_info.num_superpanels is None  # SuperLU does not say
        assert "reordering_algorithm=<ReorderingAlg.AMD: 3>" in repr(pc)
        assert_solution(s.solve(), a, b, "float64")


def test_failure_inside_plan_frees_what_was_made(problem, monkeypatch):
    from cumath.sparse.advanced import _executors

    made = []

    class Boom:
        def __init__(self, setup, ops):
            made.append(self)
            self.freed = False

        def analyse(self, ops, stream):
            raise RuntimeError("analysis failed")

        def free(self):
            self.freed = True

    monkeypatch.setitem(_executors._FACTORIES, "host", Boom)
    with S.DirectSolver(*problem) as s:
        with pytest.raises(RuntimeError, match="analysis failed"):
            s.plan()
        assert made and made[0].freed and not s._planned and s._executor is None


def test_stateless_plans_are_cached_by_pattern(problem):
    a, b = problem
    plan_cache.clear()
    plan_cache.reset_stats()
    for k in range(3):
        ak = sp.csr_array((a.data * (k + 1), a.indices.copy(), a.indptr.copy()), shape=a.shape)
        assert_solution(S.direct_solver(ak, b), ak, b, "float64")
    assert plan_cache.stats()["misses"] == 1 and plan_cache.stats()["hits"] == 2
    t = sp.csr_array(a.T)
    assert_solution(S.direct_solver(t, b), t, b, "float64")  # another pattern: another plan
    assert plan_cache.stats()["misses"] == 2
    S.direct_solver(a, b, plan_preferences={"reordering_algorithm": "amd"})
    S.direct_solver(a, b, plan_preferences=S.DirectSolverPlanPreferences(reordering_algorithm="amd"))
    assert plan_cache.stats()["misses"] == 3
    S.direct_solver(a, b, factorization_preferences={"pivot_eps": 1e-10},
                    solution_preferences={"ir_num_steps": 1})
    with pytest.raises(TypeError, match="unknown plan preferences"):
        S.direct_solver(a, b, plan_preferences={"colour": 1})
    plan_cache.clear()


def test_stateless_call_refactorizes_without_a_new_analysis(problem, monkeypatch):
    a, b = problem
    plan_cache.clear()
    S.direct_solver(a, b)
    from cumath.sparse.advanced import _executors

    calls = []
    real = _executors.CpuExecutor.analyse
    monkeypatch.setattr(_executors.CpuExecutor, "analyse", lambda self, ops, st: (calls.append(1), real(self, ops,
                                                                                                    st)))
    a2 = sp.csr_array((a.data + 1.0, a.indices, a.indptr), shape=a.shape)
    assert_solution(S.direct_solver(a2, b), a2, b, "float64")
    assert not calls
    plan_cache.clear()


def test_logging_says_what_was_decided(problem, caplog):
    with caplog.at_level(logging.INFO, logger="cumath"):
        S.direct_solver(problem[0], problem[1], options={"cpu_engine": "superlu"})
    assert "sparse direct solver: 1 system(s) of order 21" in caplog.text
    assert "sparse direct solver CPU engine: superlu (asked for)" in caplog.text
    own = logging.getLogger("mine")
    with caplog.at_level(logging.INFO, logger="mine"):
        S.direct_solver(problem[0], problem[1], options={"logger": own})
    assert any(r.name == "mine" for r in caplog.records)
