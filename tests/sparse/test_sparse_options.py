"""Options, preferences, enums and execution spaces of the sparse direct solver."""

from __future__ import annotations

import logging

import pytest

import cumath
import cumath.sparse.advanced as S
from cumath.sparse.advanced._execution import SparseExecution, memory_limit_bytes, resolve_execution


def test_options_defaults_coercion_and_equality():
    o = S.DirectSolverOptions()
    assert o.sparse_system_type is S.DirectSolverMatrixType.GENERAL
    assert o.sparse_system_view is S.DirectSolverMatrixViewType.FULL and o.blocking == "auto"
    assert o.cpu_engine == "auto" and o.handle is None and o.multithreading_lib is None
    p = S.DirectSolverOptions(sparse_system_type="spd", sparse_system_view=2, cpu_engine="SuperLU")
    assert p.sparse_system_type is S.DirectSolverMatrixType.SPD
    assert p.sparse_system_view is S.DirectSolverMatrixViewType.UPPER and p.cpu_engine == "superlu"
    assert S.DirectSolverOptions(logger=logging.getLogger("x")) == o  # the logger does not change the math
    assert hash(S.DirectSolverOptions(allocator=object())) == hash(o)
    with pytest.raises(Exception):
        o.blocking = True  # frozen


@pytest.mark.parametrize("kwargs, error, message", [
    ({"sparse_system_type": "banded"}, ValueError, "sparse_system_type='banded' is not supported; the allowed values "
                                                   "are"),
    ({"sparse_system_view": 7}, ValueError, "sparse_system_view=7 is not supported"),
    ({"blocking": False}, ValueError, "blocking=False is not supported; the allowed values are True and 'auto'"),
    ({"cpu_engine": "umfpack"}, ValueError, "cpu_engine='umfpack' is not supported; the allowed values are"),
    ({"multithreading_lib": "/no/such/lib.so"}, ValueError, "multithreading_lib='/no/such/lib.so' is not a file"),
    ({"multithreading_lib": 3}, TypeError, "multithreading_lib must be a path"),
    ({"handle": "h"}, TypeError, "handle must be a cuDSS handle"),
])
def test_option_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        S.DirectSolverOptions(**kwargs)


def test_options_as_dicts_and_unknown_names():
    import numpy as np
    import scipy.sparse as sp

    a = sp.csr_array(np.eye(3))
    with pytest.raises(TypeError, match="unknown sparse direct solver options \\['colour'\\]"):
        S.DirectSolver(a, np.ones(3), options={"colour": "red"})
    with pytest.raises(TypeError, match="options must be a DirectSolverOptions, a dict of its fields or None"):
        S.DirectSolver(a, np.ones(3), options=3)


def test_preferences():
    p = S.DirectSolverPlanPreferences(reordering_algorithm="amd", pivot_type="none", matching_algorithm=0,
                                      use_superpanels=0, host_nthreads=4, pivot_threshold=0.5, max_nnz=10,
                                      nd_min_levels=3)
    assert p.reordering_algorithm is S.DirectSolverReorderingAlg.AMD and p.pivot_type is S.DirectSolverPivotType.NONE
    assert p.matching_algorithm is S.DirectSolverMatchingAlg.NONE and p.use_superpanels is False
    f = S.DirectSolverFactorizationPreferences(factorization_algorithm="general", pivot_eps_algorithm="static",
                                               pivot_eps=1e-12)
    assert f.pivot_eps_algorithm is S.DirectSolverPivotEpsilonAlg.STATIC
    s = S.DirectSolverSolutionPreferences(solution_algorithm=1, ir_num_steps=2)
    assert s.solution_algorithm is S.DirectSolverSolveAlg.GENERAL
    with pytest.raises(ValueError, match="host_nthreads must be >= 1"):
        S.DirectSolverPlanPreferences(host_nthreads=0)
    with pytest.raises(TypeError, match="use_superpanels must be True or False"):
        S.DirectSolverPlanPreferences(use_superpanels="yes")
    hash(p), hash(f), hash(s)


def test_enum_values_are_cudss_ones():
    assert int(S.DirectSolverReorderingAlg.NESTED_DISSECTION) == 4 and int(S.DirectSolverPivotType.BUNCH_KAUFMAN) == 6
    assert int(S.DirectSolverMatchingAlg.AUTO) == 6 and int(S.DirectSolverMatrixType.HPD) == 4
    assert S.memory_estimates_dtype.names[:2] == ("permanent_device_memory", "peak_device_memory")
    assert S.memory_estimates_dtype.itemsize == 16 * 8


def test_execution_spaces():
    assert resolve_execution(None) == (None, None)
    core, spec = resolve_execution("cpu")
    assert isinstance(core, cumath.ExecutionCPU) and spec == SparseExecution("cpu")
    core, spec = resolve_execution({"name": "cuda", "device_id": 1})
    assert isinstance(core, cumath.ExecutionCUDA) and core.device_id == 1 and spec.kind == "cuda"
    core, spec = resolve_execution(S.ExecutionHybrid(num_threads=2))
    assert spec.kind == "hybrid" and spec.num_threads == 2 and core.device_id is None
    e = S.ExecutionCUDA(device_id=0, hybrid_memory_mode_options={"hybrid_memory_mode": True})
    core, spec = resolve_execution(e)
    assert spec.hybrid_memory.hybrid_memory_mode and core.device_id == 0
    assert resolve_execution(cumath.ExecutionCUDA(device_id=0))[1].kind == "cuda"
    assert S.ExecutionCUDA() == S.ExecutionCUDA(hybrid_memory_mode_options=S.HybridMemoryModeOptions())
    assert S.ExecutionCUDA(1).device_id == 1 and S.ExecutionHybrid(0, 4).num_threads == 4  # positional, as nvmath
    hash(e)


@pytest.mark.parametrize("execution, error, message", [
    ("tpu", ValueError, "execution='tpu' is not supported; pass 'cpu', 'cuda', 'hybrid'"),
    ({"name": "x"}, ValueError, "an execution dict needs 'name': 'cpu', 'cuda' or 'hybrid'"),
    (3, TypeError, "execution must be 'cpu', 'cuda', 'hybrid'"),
])
def test_execution_errors(execution, error, message):
    with pytest.raises(error, match=message):
        resolve_execution(execution)


def test_execution_class_errors():
    with pytest.raises(ValueError, match="device_id must be a non-negative int or None"):
        S.ExecutionCUDA(device_id=-1)
    with pytest.raises(ValueError, match="num_threads must be a positive int or None"):
        S.ExecutionHybrid(num_threads=0)
    with pytest.raises(TypeError, match="unknown hybrid memory mode options"):
        S.ExecutionCUDA(hybrid_memory_mode_options={"size": 1})
    with pytest.raises(TypeError, match="hybrid memory mode options must be a HybridMemoryModeOptions"):
        S.ExecutionCUDA(hybrid_memory_mode_options=3)
    with pytest.raises(ValueError, match="hybrid_device_memory_limit='lots' is not a memory size"):
        S.HybridMemoryModeOptions(hybrid_device_memory_limit="lots")
    with pytest.raises(ValueError, match="is not a memory size"):
        S.HybridMemoryModeOptions(hybrid_device_memory_limit="150%")
    with pytest.raises(TypeError, match="hybrid_memory_mode must be True or False"):
        S.HybridMemoryModeOptions(hybrid_memory_mode=1)


@pytest.mark.parametrize("value, expect", [(123, 123), ("2GiB", 2 << 30), ("512M", 512 << 20), ("1.5kB", 1536),
                                           ("50%", 500), ("10", 10)])
def test_memory_limits(value, expect):
    S.HybridMemoryModeOptions(hybrid_device_memory_limit=value)
    assert memory_limit_bytes(value, 1000) == expect


def test_gpu_execution_without_a_gpu_says_what_to_do():
    import numpy as np
    import scipy.sparse as sp

    from cumath._core.cuda import device_count

    if device_count():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="no CUDA GPU is usable here"):
        S.direct_solver(sp.csr_array(np.eye(2)), np.ones(2), execution="cuda")
