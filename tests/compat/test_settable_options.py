"""Option objects modified after construction, as nvmath-python code does (``o.memory_limit = 0.9``): checked
as the constructor checks, while operations key their plans on a frozen snapshot."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumath as nvmath
from cumath._core.options import check_options, snapshot
from cumath.config import plan_cache
from helpers.reference import assert_close

L, LA = nvmath.linalg, nvmath.linalg.advanced


@pytest.mark.parametrize("cls", [L.MatmulOptions, LA.MatmulOptions])
def test_assignment_is_checked(cls):
    o = cls()
    o.inplace = True
    assert o.inplace is True
    with pytest.raises(ValueError, match="inplace="):
        o.inplace = "yes"
    assert o.inplace is True  # a refused assignment changes nothing
    with pytest.raises(AttributeError, match="has no option 'no_such'"):
        o.no_such = 1
    with pytest.raises(TypeError, match="allocator must be a memory manager"):
        o.allocator = "str"
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del o.inplace


def test_advanced_memory_limit_and_normalisation():
    o = LA.MatmulOptions()
    o.memory_limit = 0.9
    assert o.memory_limit == 0.9
    o.memory_limit = "50%"
    o.compute_type = 74
    assert o.compute_type is LA.MatmulComputeType.COMPUTE_32F_FAST_16F  # normalised as at construction
    with pytest.raises(ValueError):
        o.memory_limit = "lots"
    p = LA.MatmulPlanPreferences()
    p.limit = 3
    p.epilog = {"aux_amax": False}
    assert p.limit == 3 and isinstance(p.epilog, LA.MatmulEpilogPreferences)


def test_snapshot_is_frozen_and_equal():
    o = L.MatmulOptions(cpu_blas="auto")
    s = check_options(o, L.MatmulOptions)
    assert s == o and hash(s) == hash(o) and s is not o
    assert check_options(o, L.MatmulOptions) is s  # one snapshot per state of the object
    with pytest.raises(dataclasses.FrozenInstanceError, match="belong to a planned operation"):
        s.inplace = True
    o.inplace = True
    s2 = snapshot(o)
    assert s2 is not s and s2.inplace is True and s.inplace is False
    assert pickle.loads(pickle.dumps(o)) == o


def test_plans_do_not_change_under_a_modified_object():
    rng = np.random.default_rng(2)
    a, b, c = rng.standard_normal((5, 3)), rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    o = L.MatmulOptions()
    plan_cache.clear()
    with L.Matmul(a, b, c, beta=1.0, options=o) as mm:
        mm.plan()
        o.inplace = True  # after construction: the planned Matmul keeps what it was made with
        d = mm.execute()
        assert d is not c
        assert_close(d, a @ b + c, "float64")
    c2 = c.copy()
    d2 = L.matmul(a, b, c2, beta=1.0, options=o)  # a new call sees the new value
    assert d2 is c2
    assert_close(c2, a @ b + c, "float64")


@settings(max_examples=30, deadline=None, database=None)
@given(st.sampled_from(["auto", "openblas", "mkl"]), st.booleans())
def test_set_then_compare_equals_constructed(blas, inplace):
    o = L.MatmulOptions()
    o.cpu_blas, o.inplace = blas, inplace
    made = L.MatmulOptions(cpu_blas=blas, inplace=inplace)
    assert o == made and hash(snapshot(o)) == hash(made)
