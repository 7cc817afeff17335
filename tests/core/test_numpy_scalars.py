"""NumPy scalars are wrapped as read-only 0-d arrays (their value's bits were once read as an address)."""
import numpy as np
import pytest

from cumath._core.operand import wrap_operand


@pytest.mark.parametrize("value", [np.float64(2.5), np.complex64(1 - 2j), np.float32(-3.0)])
def test_numpy_scalar_is_a_readonly_zero_d_operand(value):
    op = wrap_operand(value)
    assert op.shape == () and op.readonly
    view = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_char * value.itemsize).from_address(op.ptr))
    assert view.tobytes() == np.asarray(value).tobytes()
