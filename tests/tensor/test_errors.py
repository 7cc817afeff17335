"""Every error path: type and message."""

import numpy as np
import pytest

from cumath import tensor
from cumath.tensor import Operator


def test_mismatched_extents():
    with pytest.raises(ValueError, match="mode 'j' has extent 4"):
        tensor.binary_contraction("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5)))


def test_repeated_output_mode():
    with pytest.raises(ValueError, match="repeats the mode"):
        tensor.binary_contraction("ij,jk->ii", np.ones((2, 3)), np.ones((3, 2)))


def test_unsupported_operator_for_dtype():
    a = np.ones((2, 3), np.complex128)
    with pytest.raises(ValueError, match="OP_RELU of a is not supported for complex128"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, qualifiers=[Operator.OP_RELU, Operator.OP_IDENTITY])


def test_binary_operator_refused():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="binary operator"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, qualifiers=[Operator.OP_ADD, 1])


def test_not_an_operator():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="is not an Operator"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, qualifiers=[77, 1])
    with pytest.raises(TypeError, match="qualifiers must be"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, qualifiers="relu")
    with pytest.raises(ValueError, match="one per operand"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, qualifiers=[1, 1, 1, 1])


def test_addend_operator_refused():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="qualifier of c must be OP_IDENTITY"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, c=np.ones((2, 2)), beta=1, qualifiers=[1, 1, 25])


def test_beta_required_with_c():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="beta must be given together with c"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, c=np.ones((2, 2)))


def test_dtype_mismatch_and_unsupported():
    with pytest.raises(TypeError, match="b has dtype float32 while a has float64"):
        tensor.binary_contraction("ij,jk->ik", np.ones((2, 3)), np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match="contractions take"):
        tensor.binary_contraction("ij,jk->ik", np.ones((2, 3), np.int32), np.ones((3, 2), np.int32))


def test_wrong_shapes_of_c_and_out():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="c has shape \\[3, 3\\]"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, c=np.ones((3, 3)), beta=1)
    with pytest.raises(ValueError, match="out has shape"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, out=np.ones((2, 3)))


def test_out_readonly_and_overlap():
    a = np.ones((4, 4))
    ro = np.ones((4, 4))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tensor.binary_contraction("ij,jk->ik", a, a, out=ro)
    with pytest.raises(ValueError, match="overlaps a"):
        tensor.binary_contraction("ij,jk->ik", a, a.copy(), out=a)
    with pytest.raises(ValueError, match="zero stride"):
        tensor.binary_contraction("ij,jk->ik", a, a.copy(), out=np.lib.stride_tricks.as_strided(np.zeros(4), (4, 4), (0, 8)))


def test_complex_scalar_on_real():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="alpha=.*is complex"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, alpha=1j)
    with pytest.raises(TypeError, match="alpha must be a number"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, alpha="x")


def test_options_errors():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="result_layout"):
        tensor.ContractionOptions(result_layout="X")
    with pytest.raises(ValueError, match="compute_type"):
        tensor.ContractionOptions(compute_type="bogus")
    with pytest.raises(TypeError, match="unknown contraction options"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, options={"nope": 1})
    with pytest.raises(ValueError, match="memory_limit"):
        tensor.ContractionOptions(memory_limit=-3)


def test_plan_preference_errors():
    a = np.ones((2, 3))
    ctr = tensor.BinaryContraction("ij,jk->ik", a, a.T)
    with pytest.raises(ValueError, match="allowed values"):
        ctr.plan_preference.jit = "sometimes"
    with pytest.raises(ValueError, match="non-negative int"):
        ctr.plan_preference.kernel_rank = -1
    with pytest.raises(AttributeError, match="no attribute"):
        ctr.plan_preference.colour = 1
    ctr.plan_preference.jit = "default"
    assert ctr.plan_preference.jit == tensor.ContractionJitMode.DEFAULT
    ctr.free()


def test_cuda_execution_without_a_gpu():
    pytest.importorskip("cumath._core.cuda")
    from cumath._core.cuda import device_count

    if device_count():
        pytest.skip("a GPU is present")
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="execution='cpu'"):
        tensor.binary_contraction("ij,jk->ik", a, a.T, execution="cuda")
