"""The stateful generic Matmul: plan, execute, reset_operands(_unchecked), release_operands, free, context
manager; and every error path of the generic matmul with its message."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import cumath.linalg as L
from cumath.errors import InvalidStateError
from helpers.matrix import have_module, random_array, with_layout
from test_generic_reference import assert_matmul_close, matmul_ref, qualifier, qualifiers


def _operands(dtype="float64"):
    return random_array((5, 4), dtype), random_array((4, 3), dtype), random_array((5, 3), dtype)


# ------------------------------------------------------------------------------------------- lifecycle

def test_plan_execute_reset_loop():
    a, b, c = _operands()
    with L.Matmul(a, b, c, alpha=2.0, beta=0.5) as mm:
        mm.plan()
        mm.plan()  # planning twice does nothing
        assert_matmul_close(mm.execute(), matmul_ref(a, b, c, 2.0, 0.5), "float64", 4)
        for _ in range(3):
            a2, c2 = random_array(a.shape, "float64"), random_array(c.shape, "float64")
            mm.reset_operands(a=a2, c=c2, alpha=-1.0)
            assert_matmul_close(mm.execute(), matmul_ref(a2, b, c2, -1.0, 0.5), "float64", 4)
        mm.reset_operands(beta=0.0)
        assert_matmul_close(mm.execute(), matmul_ref(a2, b, None, -1.0), "float64", 4)


def test_feeding_the_result_back_with_the_unchecked_reset():
    a = random_array((6, 6), "float64")
    b = random_array((6, 6), "float64") / 3
    ref = a
    with L.Matmul(a, b) as mm:
        mm.plan()
        for _ in range(4):
            d = mm.execute()
            ref = ref @ b
            assert_matmul_close(d, ref, "float64", 6)
            mm.reset_operands_unchecked(a=d)
        with pytest.raises(ValueError, match="strides"):
            mm.reset_operands_unchecked(a=np.asfortranarray(d))


def test_inplace_stateful_reuses_c():
    a, b, c = _operands()
    c0 = c.copy()
    with L.Matmul(a, b, c, alpha=1.0, beta=1.0, options={"inplace": True}) as mm:
        mm.plan()
        assert mm.execute() is c
        assert mm.execute() is c
    np.testing.assert_allclose(c, c0 + 2 * (a @ b), rtol=1e-12)


def test_execute_before_plan_and_after_free():
    a, b, _ = _operands()
    mm = L.Matmul(a, b)
    with pytest.raises(InvalidStateError, match=r"call plan\(\) first"):
        mm.execute()
    mm.plan()
    mm.free()
    mm.free()  # twice is fine
    with pytest.raises(InvalidStateError, match="after free"):
        mm.execute()
    for call in (mm.plan, mm.release_operands, lambda: mm.reset_operands(a=a)):
        with pytest.raises(InvalidStateError, match="after free"):
            call()
    assert issubclass(L.InvalidMatmulState, InvalidStateError)


def test_context_manager_frees():
    a, b, _ = _operands()
    with L.Matmul(a, b) as mm:
        mm.plan()
    with pytest.raises(InvalidStateError):
        mm.execute()


def test_release_operands():
    a, b, c = _operands()
    with L.Matmul(a, b, c, beta=1.0) as mm:
        mm.plan()
        mm.release_operands()
        with pytest.raises(InvalidStateError, match="released"):
            mm.execute()
        with pytest.raises(ValueError, match="missing c"):
            mm.reset_operands(a=a, b=b)
        mm.reset_operands(a=a, b=b, c=c)
        assert_matmul_close(mm.execute(), matmul_ref(a, b, c, 1.0, 1.0), "float64", 4)


def test_reset_mismatches_are_named():
    a, b, _ = _operands()
    with L.Matmul(a, b) as mm:
        mm.plan()
        with pytest.raises(ValueError, match=r"shape \(5, 5\)"):
            mm.reset_operands(a=random_array((5, 5), "float64"))
        with pytest.raises(ValueError, match="strides"):
            mm.reset_operands(a=np.asfortranarray(a))
        with pytest.raises(ValueError, match="dtype float32"):
            mm.reset_operands(b=b.astype(np.float32))
        with pytest.raises(ValueError, match="without c"):
            mm.reset_operands(c=random_array((5, 3), "float64"))
        with pytest.raises(ValueError, match="not convertible"):
            mm.reset_operands(alpha=1 + 2j)
        if have_module("torch"):
            import torch

            with pytest.raises(ValueError, match="package torch"):
                mm.reset_operands(a=torch.from_numpy(a))


def test_beta_without_c_is_ignored_with_a_warning(caplog):
    a, b, _ = _operands()
    with caplog.at_level(logging.WARNING, logger="cumath"):
        r = L.matmul(a, b, beta=3.0)
    assert "beta=3.0 is ignored" in caplog.text
    assert_matmul_close(r, matmul_ref(a, b), "float64", 4)


def test_failed_plan_releases_the_engine(monkeypatch):
    from cumath.linalg._generic import executors

    freed = []

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setitem(executors.FACTORIES, "host", boom)  # the executor of host operands on the CPU
    from cumath.linalg._backends import blas as engine_mod

    monkeypatch.setattr(engine_mod.BlasEngine, "free", lambda self: freed.append(self))
    a, b, _ = _operands()
    mm = L.Matmul(a, b)
    with pytest.raises(RuntimeError, match="boom"):
        mm.plan()
    assert len(freed) == 1
    with pytest.raises(InvalidStateError, match="plan"):
        mm.execute()


# ------------------------------------------------------------------------------------------- errors

def test_shape_errors_name_the_dimensions():
    with pytest.raises(ValueError, match=r"a has K=5 columns but b has K=6 rows"):
        L.matmul(random_array((3, 5), "float64"), random_array((6, 2), "float64"))
    with pytest.raises(ValueError, match=r"a \(1-D\) has K=4"):
        L.matmul(random_array((4,), "float64"), random_array((3, 2), "float64"))
    with pytest.raises(ValueError, match=r"batch axis 0 \(2 vs 3\)"):
        L.matmul(random_array((2, 3, 4), "float64"), random_array((3, 4, 2), "float64"))
    with pytest.raises(ValueError, match="scalar"):
        L.matmul(np.float64(2.0) * np.ones(()), random_array((3,), "float64"))
    with pytest.raises(ValueError, match=r"does not broadcast to the result's shape \(3, 2\)"):
        L.matmul(random_array((3, 4), "float64"), random_array((4, 2), "float64"), random_array((3, 3), "float64"),
                 beta=1.0)
    with pytest.raises(ValueError, match=r"c must have the result's shape \(3, 2\)"):
        L.matmul(random_array((3, 4), "float64"), random_array((4, 2), "float64"), random_array((2,), "float64"),
                 beta=1.0, options={"inplace": True})


def test_dtype_errors_list_the_supported_dtypes():
    with pytest.raises(TypeError, match="float32, float64, complex64, complex128"):
        L.matmul(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32))
    with pytest.raises(TypeError, match="a: float32, b: float64"):
        L.matmul(np.ones((2, 2), np.float32), np.ones((2, 2)))
    with pytest.raises(ValueError, match="not convertible to the operands' dtype float64"):
        L.matmul(np.ones((2, 2)), np.ones((2, 2)), alpha=1j)


def test_c_and_option_errors():
    a, b, c = _operands()
    with pytest.raises(ValueError, match="beta must be given with c"):
        L.Matmul(a, b, c)
    with pytest.raises(ValueError, match="no c was given"):
        L.Matmul(a, b, options={"inplace": True})
    ro = c.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        L.Matmul(a, b, ro, beta=1.0, options={"inplace": True})
    with pytest.raises(ValueError, match="overlaps itself"):
        L.Matmul(a, b, np.lib.stride_tricks.as_strided(c[:1], c.shape, (0, 8)), beta=1.0,
                 options={"inplace": True}).plan()
    with pytest.raises(TypeError, match="unknown matmul options"):
        L.Matmul(a, b, options={"inplce": True})
    with pytest.raises(ValueError, match="cpu_blas='fast' is not supported"):
        L.MatmulOptions(cpu_blas="fast")
    with pytest.raises(ValueError, match="blocking"):
        L.MatmulOptions(blocking=False)


def test_qualifier_errors():
    a, b = random_array((4, 4), "float64"), random_array((4, 3), "float64")
    with pytest.raises(TypeError, match="matrix_qualifiers_dtype"):
        L.matmul(a, b, qualifiers=np.zeros(2))
    with pytest.raises(ValueError, match="has 1 entries"):
        L.matmul(a, b, qualifiers=qualifiers()[:1])
    bad = qualifiers()
    bad[0]["abbreviation"] = "xx"
    with pytest.raises(ValueError, match=r"abbreviation 'xx'; the allowed values are \['ge', 'sy', 'he', 'tr', 'dg'\]"):
        L.matmul(a, b, qualifiers=bad)
    with pytest.raises(ValueError, match="at most one of a and b"):
        L.matmul(a, a, qualifiers=qualifiers(qualifier("sy"), qualifier("tr")))
    with pytest.raises(ValueError, match="c must be a general matrix"):
        L.matmul(a, b, random_array((4, 3), "float64"), beta=1.0,
                 qualifiers=qualifiers(None, None, qualifier("sy")))
    with pytest.raises(ValueError, match="conjugate flag is not supported for c"):
        L.matmul(a, b, random_array((4, 3), "float64"), beta=1.0,
                 qualifiers=qualifiers(None, None, qualifier("ge", conjugate=True)))
    with pytest.raises(ValueError, match=r"must be square, but its matrices are 4 x 3"):
        L.matmul(b, random_array((3, 3), "float64"), qualifiers=qualifiers(qualifier("sy"), None))
    with pytest.raises(ValueError, match="uplo"):
        L.SymmetricMatrixQualifier.create(uplo=L.FillMode.FULL)
    with pytest.raises(ValueError, match="incx"):
        L.DiagonalMatrixQualifier.create(incx=2)
    with pytest.raises(ValueError, match="diag"):
        L.TriangularMatrixQualifier.create(diag=5)
    broken = qualifiers(qualifier("tr"), None)
    broken[0]["uplo"] = 2
    with pytest.raises(ValueError, match="not a valid triangular qualifier"):
        L.matmul(a, b, qualifiers=broken)
    with pytest.raises(RuntimeError, match="create"):
        L.GeneralMatrixQualifier()


def test_qualifier_helpers():
    q = L.TriangularMatrixQualifier.create(conjugate=True, uplo=L.FillMode.UPPER, diag=L.DiagType.UNIT)
    assert q.dtype == L.matrix_qualifiers_dtype
    assert L.TriangularMatrixQualifier.is_valid(q) and not L.SymmetricMatrixQualifier.is_valid(q)
    assert "uplo=UPPER" in L.TriangularMatrixQualifier.to_string(q)
    arr = np.full(3, L.GeneralMatrixQualifier.create(), dtype=L.matrix_qualifiers_dtype)
    assert L.GeneralMatrixQualifier.is_valid(arr)
    assert tuple(L.DiagonalMatrixQualifier.create(incx=-1).tolist()) == ("dg", False, 2, 0, -1)


def test_package_and_batch_errors():
    a, b, _ = _operands()
    if have_module("torch"):
        import torch

        with pytest.raises(TypeError, match="b is a torch array while a is a numpy array"):
            L.matmul(a, torch.from_numpy(b))
    with pytest.raises(ValueError, match="a has 2 operands but b has 1"):
        L.matmul([a, a], [b])
    with pytest.raises(TypeError, match="b is a ndarray"):
        L.matmul([a], b)
    with pytest.raises(ValueError, match="at least one problem"):
        L.matmul([], [])
    with pytest.raises(ValueError, match="alpha has 3 entries for 2 problems"):
        L.matmul([a, a], [b, b], alpha=[1, 2, 3])


def test_cuda_execution_without_gpu_is_explained():
    from cumath._core.cuda import device_count

    if device_count():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="execution='cpu'"):
        L.matmul(np.ones((2, 2)), np.ones((2, 2)), execution="cuda")


def test_noncontiguous_c_in_place_is_copied_back():
    a, b, c0 = _operands()
    c = with_layout(c0, "step")
    r = L.matmul(a, b, c, alpha=1.0, beta=2.0, options={"inplace": True})
    assert r is c
    assert_matmul_close(c, matmul_ref(a, b, c0, 1.0, 2.0), "float64", 4)


def test_reset_messages_and_in_place_c():
    a, b, c = _operands()
    with L.Matmul(a, b, c.copy(), beta=1.0, options={"inplace": True}) as mm:
        mm.plan()
        ro = c.copy()
        ro.flags.writeable = False
        with pytest.raises(ValueError, match=r"^options.inplace=True needs a writeable c, but the new c is read-only$"):
            mm.reset_operands(c=ro)
        mm.reset_operands_unchecked(c=ro)  # (the cheap reset compares shape, strides and dtype only)
        mm.release_operands()
        with pytest.raises(ValueError, match=r"^after release_operands\(\), reset_operands\(\) needs all operands; "
                                             r"missing b, c$"):
            mm.reset_operands(a=a)
        with pytest.raises(InvalidStateError, match=r"^the operands were released; call reset_operands\(a=\.\.\., "
                                                    r"b=\.\.\.\) with all of them before execute\(\)$"):
            mm.execute()


def test_stateless_scalars_are_converted_when_they_change():
    from cumath.config import plan_cache

    plan_cache.clear()
    a, b, c = _operands()
    ref = matmul_ref(a, b, c, 2.0, 0.5)
    assert_matmul_close(L.matmul(a, b, c, alpha=2.0, beta=0.5), ref, "float64", 4)
    with pytest.raises(ValueError, match="alpha=1j is not convertible"):
        L.matmul(a, b, c, alpha=1j, beta=0.5)  # refused before the cached plan is touched
    assert_matmul_close(L.matmul(a, b, c, alpha=2.0, beta=0.5), ref, "float64", 4)
    assert_matmul_close(L.matmul(a, b, c, alpha=-1.0, beta=0.0), matmul_ref(a, b, None, -1.0), "float64", 4)
    assert plan_cache.stats()["plans"] == 1


def test_explicit_batches_are_matmuls_with_the_same_messages():
    a, b, _ = _operands()
    mm = L.Matmul([a, a], [b, b])
    assert isinstance(mm, L.Matmul)
    with pytest.raises(InvalidStateError, match=r"^Matmul.execute\(\) needs a plan: call plan\(\) first$"):
        mm.execute()
    mm.plan()
    assert mm.layout is None and len(mm.execute()) == 2
    mm.free()
    with pytest.raises(InvalidStateError, match=r"^Matmul.execute\(\) was called after free\(\); create a new object$"):
        mm.execute()
    with pytest.raises(InvalidStateError, match=r"^Matmul.reset_operands\(\) was called after free\(\)"):
        mm.reset_operands(a=[a, a])
