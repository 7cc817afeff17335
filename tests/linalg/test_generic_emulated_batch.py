"""Explicit batches on the GPU code path, run on the CPU against the NumPy emulation of cuBLAS (see
test_generic_emulated_gpu.py): one handle for all problems, general products in one grouped-batched call
(S, D) or one pointer-array batched call per group (C, Z), the pointer arrays in device memory and uploaded
only when they change, structured problems on the shared handle, in-place writes that overlap run in order."""

from __future__ import annotations

import numpy as np
import pytest

import cumath.linalg as L
from cumath._core.operand import Operand
from cumath.errors import InvalidStateError
from cumath.linalg._generic.batch import writes_conflict
from helpers.matrix import random_array, with_layout
from test_generic_emulated_gpu import FakeCublas, HostAllocator, device, emulation
from test_generic_reference import (assert_matmul_close, check_explicit, explicit_problems, matmul_ref, qualifier,
                                    qualifiers)

DTYPES = ("float32", "float64", "complex64", "complex128")
_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}


@pytest.fixture
def emulated(monkeypatch):
    yield from emulation(monkeypatch)


def _is_complex(dtype):
    return dtype.startswith("complex")


def _operands(probs, wrap):
    a = [wrap(with_layout(p["a"], p["layouts"][0])) for p in probs]
    b = [wrap(with_layout(p["b"], p["layouts"][1])) for p in probs]
    c = None if probs[0]["c"] is None else [with_layout(p["c"], p["layouts"][2]) for p in probs]
    return a, b, c


def _routines(fake, start=0):
    calls = fake.calls[start:]
    return {"grouped": [c for c in calls if "GroupedBatched" in c],
            "batched": [c for c in calls if c.endswith("gemmBatched_64")],
            "single": [c for c in calls if c.endswith("gemm_v2_64") or "StridedBatched" in c]}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 17])
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
@pytest.mark.parametrize("where", ["device", "host"])
def test_explicit_batches_grouped(emulated, dtype, n, c_mode, where):
    fake = emulated
    probs = explicit_problems(n, dtype, c_mode)
    wrap = device if where == "device" else (lambda x: x)
    a, b, c_host = _operands(probs, wrap)
    c = None if c_host is None else [wrap(x) for x in c_host]
    opts = {"inplace": c_mode == "inplace", "allocator": HostAllocator()}
    mm = L.Matmul(a, b, c, alpha=[p["alpha"] for p in probs], beta=None if c is None else [p["beta"] for p in probs],
                  qualifiers=[p["q"] for p in probs], options=opts, execution="cuda" if where == "host" else None)
    with mm:
        mm.plan()
        if c is None:
            for p in probs:
                p["beta"] = 0.0
        problems = sum(int(np.prod(p["a"].shape[:-2])) for p in probs)
        for step in range(3):
            start, syncs = len(fake.calls), len(fake.syncs)
            out = mm.execute()
            check_explicit(out, probs, dtype, c_mode == "inplace", c_host)
            if where == "host":  # staged in, computed, copied back, then one synchronisation for all
                assert len(fake.syncs) - syncs == 1
            r = _routines(fake, start)
            if problems == 1:
                assert r["single"] == [f"cublas{_PREFIX[dtype]}gemm_v2_64"]
            else:
                assert not r["single"], "general products of an explicit batch run grouped"
            if problems >= 2 and not _is_complex(dtype):
                assert r["grouped"] == [f"cublas{_PREFIX[dtype]}gemmGroupedBatched_64"]
                assert not r["batched"]
            elif problems >= 2:
                assert 1 <= len(r["batched"]) <= problems and not r["grouped"]
            if step == 0:  # new a's and alphas: new pointers and new groups
                new_a = [random_array(p["a"].shape, dtype) for p in probs]
                for p, x in zip(probs, new_a):
                    p["a"] = x
                    p["alpha"] = p["alpha"] * 2
                reset = mm.reset_operands if where == "host" else mm.reset_operands_unchecked  # (Operands)
                reset(a=[wrap(with_layout(p["a"], p["layouts"][0])) for p in probs],
                      alpha=[p["alpha"] for p in probs])
    assert len(fake.created) == 1, "one cuBLAS handle for the whole explicit batch"
    assert set(fake.call_handles) == set(fake.created)
    assert fake.destroyed == fake.created


@pytest.mark.parametrize("dtype", DTYPES)
def test_identical_problems_make_one_call(emulated, dtype):
    fake = emulated
    probs = explicit_problems(17, dtype, "inplace", same=True)
    a, b, c = _operands(probs, device)
    c_dev = [device(x) for x in c]
    with L.Matmul(a, b, c_dev, alpha=[p["alpha"] for p in probs], beta=0.5,
                  options={"inplace": True, "allocator": HostAllocator()}) as mm:
        mm.plan()
        for p in probs:
            p["beta"] = 0.5
        for _ in range(2):  # nothing changed: the pointer arrays are uploaded once
            start = len(fake.calls)
            check_explicit(mm.execute(), probs, dtype, True, c)
            r = _routines(fake, start)
            if _is_complex(dtype):  # the alphas differ: one group per alpha
                assert len(r["batched"]) == 17 and not r["grouped"]
            else:
                assert len(r["grouped"]) == 1
        assert fake.copies.count("matmul pointer arrays") == 1
        mm.reset_operands(alpha=2.0)  # one alpha for all: one group
        for p in probs:
            p["alpha"] = 2.0
        start = len(fake.calls)
        check_explicit(mm.execute(), probs, dtype, True, c)
        r = _routines(fake, start)
        assert len(r["batched" if _is_complex(dtype) else "grouped"]) == 1
        assert fake.copies.count("matmul pointer arrays") == 2  # regrouped: the order of the pointers changed


def test_structured_and_mixed_dtypes_share_the_handle(emulated):
    fake = emulated
    specs = [("sy", "float32"), ("ge", "float32"), ("tr", "float64"), ("ge", "float64"), ("dg", "complex64"),
             ("ge", "complex64"), ("ge", "float32"), ("he", "complex128"), ("ge", "complex128")]
    a0, b0, quals = [], [], []
    for kind, dt in specs:
        n = 5
        a0.append(random_array((n,) if kind == "dg" else (n, n) if kind != "ge" else (7, n), dt))
        b0.append(random_array((n, 3), dt))
        quals.append(qualifiers(qualifier(kind, uplo="U"), None))
    c0 = [random_array(np.matmul(x if x.ndim == 2 else np.diag(x), y).shape, x.dtype) for x, y in zip(a0, b0)]
    with L.Matmul([device(x) for x in a0], [device(y) for y in b0], [device(z) for z in c0], alpha=1.25, beta=-0.5,
                  qualifiers=quals, options={"allocator": HostAllocator()}) as mm:
        mm.plan()
        out = mm.execute()
    for x, y, z, q, r in zip(a0, b0, c0, quals, out):
        assert_matmul_close(r, matmul_ref(x, y, z, 1.25, -0.5, q), x.dtype.name, 5)
    r = _routines(fake)
    assert sorted(r["grouped"]) == ["cublasDgemmGroupedBatched_64", "cublasSgemmGroupedBatched_64"]
    assert sorted(r["batched"]) == ["cublasCgemmBatched_64", "cublasZgemmBatched_64"]
    assert {"cublasSsymm_v2_64", "cublasDtrmm_v2_64", "cublasCdgmm_64", "cublasZhemm_v2_64"} <= set(fake.calls)
    assert len(fake.created) == 1 and set(fake.call_handles) == set(fake.created)


def test_without_grouped_batched_each_group_is_one_batched_call(emulated, monkeypatch):
    fake = emulated
    monkeypatch.delattr(FakeCublas, "_gemmGroupedBatched")  # as cuBLAS before 12.5
    probs = explicit_problems(6, "float64", "c")
    a, b, c = _operands(probs, device)
    out = L.matmul(a, b, [device(x) for x in c], alpha=[p["alpha"] for p in probs], beta=[p["beta"] for p in probs],
                   options={"allocator": HostAllocator()})
    check_explicit(out, probs, "float64", False, None)
    r = _routines(fake)
    assert not r["grouped"] and r["batched"] and not r["single"]


def test_overlapping_in_place_writes_run_in_order(emulated):
    fake = emulated
    a0 = [random_array((4, 3), "float64") for _ in range(3)]
    b0 = [random_array((3, 5), "float64") for _ in range(3)]
    c = random_array((4, 5), "float64")
    expected = c.copy()
    for x, y, al, be in zip(a0, b0, (1.0, 2.0, -1.0), (0.5, 1.0, 2.0)):
        expected = al * (x @ y) + be * expected
    cd = device(c)
    with L.Matmul([device(x) for x in a0], [device(y) for y in b0], [cd, cd, cd], alpha=[1.0, 2.0, -1.0],
                  beta=[0.5, 1.0, 2.0], options={"inplace": True, "allocator": HostAllocator()}) as mm:
        mm.plan()
        out = mm.execute()
    assert all(r is c for r in out)
    np.testing.assert_allclose(c, expected, rtol=1e-12)
    r = _routines(fake)
    assert not r["grouped"] and len(r["single"]) == 3


def _op(buf, offset, shape, strides):
    item = buf.itemsize
    return Operand(buf, buf.ctypes.data + offset * item, shape, strides, buf.dtype.name, 0, "numpy")


def test_writes_conflict():
    buf = np.zeros(1000)
    a = _op(buf, 0, (4, 4), (4, 1))  # elements 0..15
    b = _op(buf, 100, (4, 4), (1, 4))  # 100..115
    c1 = _op(buf, 200, (4, 4), (4, 1))  # 200..215
    c2 = _op(buf, 216, (4, 4), (4, 1))  # 216..231, adjacent to c1
    c_rev = _op(buf, 215, (4, 4), (-4, -1))  # 200..215 read backwards
    shared_b = [{"a": a, "b": b, "c": c1}, {"a": a, "b": b, "c": c2}]
    assert not writes_conflict(shared_b, [True, True])  # shared inputs, separate outputs
    assert writes_conflict([{"a": a, "b": b, "c": c1}, {"a": a, "b": b, "c": c_rev}], [True, True])
    assert writes_conflict([{"a": a, "b": b, "c": c1}, {"a": c1, "b": b, "c": c2}], [True, True])  # reads c1
    assert not writes_conflict([{"a": a, "b": b, "c": c1}, {"a": c1, "b": b, "c": None}], [False, False])
    inner = _op(buf, 205, (2,), (1,))  # inside c1
    assert writes_conflict([{"a": inner, "b": b, "c": None}, {"a": a, "b": b, "c": c1}], [False, True])
    empty = _op(buf, 0, (0, 4), (4, 1))
    assert not writes_conflict([{"a": empty, "b": b, "c": c1}, {"a": a, "b": b, "c": c2}], [True, True])


def test_explicit_batch_lifecycle_and_errors(emulated):
    fake = emulated
    a = [device(random_array((3, 4), "float32")), device(random_array((5, 4), "float32"))]
    b = [device(random_array((4, 2), "float32")), device(random_array((4, 3), "float32"))]
    mm = L.Matmul(a, b, options={"allocator": HostAllocator()})
    with pytest.raises(InvalidStateError, match="plan"):
        mm.execute()
    mm.plan()
    mm.plan()  # planning twice does nothing
    assert len(fake.created) == 1
    assert mm.nbytes >= 3 * 2 * 8  # the pointer arrays
    mm.release_operands()
    with pytest.raises(InvalidStateError, match="released"):
        mm.execute()
    with pytest.raises(ValueError, match="sequence of 2"):
        mm.reset_operands(a=a[0])
    mm.reset_operands_unchecked(a=a, b=b)  # (the emulated "device" operands are Operands)
    out = mm.execute()
    assert [r.shape for r in out] == [(3, 2), (5, 3)]
    mm.free()
    mm.free()
    assert fake.destroyed == fake.created
    with pytest.raises(InvalidStateError, match="free"):
        mm.execute()
