"""reset_operands_unchecked keeps the checks that keep memory safe (shape, dtype, a writeable c in place), and
a released Matmul needs all its operands again (on the CPU stand-in of cuBLASLt)."""
import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath._core.frameworks.numpy import aligned_empty
from helpers.matmul_reference import rel_error
import fake_cublaslt as fake
from fake_cublaslt import fake_library  # noqa: F401 (an autouse fixture)

RNG = np.random.default_rng(5)


def r(shape, dtype=np.float64):
    x = aligned_empty(shape, dtype, 256)
    x[...] = RNG.standard_normal(shape)
    return x


def test_unchecked_reset_refuses_another_shape_or_dtype():
    a, b = r((7, 5)), r((5, 3))
    with la.Matmul(fake.device_operand(a), fake.device_operand(b)) as mm:
        mm.plan()
        for bad in (r((6, 5)), r((7, 5), np.float32), r((2,))):
            with pytest.raises(ValueError, match="the plan is for"):
                mm.reset_operands_unchecked(a=fake.device_operand(bad))
        a2 = r((7, 5))
        mm.reset_operands_unchecked(a=fake.device_operand(a2))
        assert rel_error(mm.execute(), a2 @ b) < 1e-12


def test_unchecked_reset_of_an_inplace_c_must_be_writeable():
    a, b, c = r((4, 4)), r((4, 4)), r((4, 4))
    with la.Matmul(fake.device_operand(a), fake.device_operand(b), fake.device_operand(c), beta=1.0,
                   options={"inplace": True}) as mm:
        mm.plan()
        ro = r((4, 4))
        ro.flags.writeable = False
        for reset in (mm.reset_operands, mm.reset_operands_unchecked):
            with pytest.raises(ValueError, match="read-only"):
                reset(c=fake.device_operand(ro))


def test_released_then_unchecked_reset_of_one_operand():
    a, b = r((3, 4)), r((4, 2))
    with la.Matmul(fake.device_operand(a), fake.device_operand(b)) as mm:
        mm.plan()
        mm.execute()
        mm.release_operands()
        with pytest.raises(ValueError, match="needs all operands"):
            mm.reset_operands_unchecked(a=fake.device_operand(a))
        mm.reset_operands_unchecked(a=fake.device_operand(a), b=fake.device_operand(b))
        assert rel_error(mm.execute(), a @ b) < 1e-12


def test_inplace_c_overlapping_a_or_b_is_refused():
    buf = r((8, 4))
    a, c = buf[:4], buf[2:6]
    b = r((4, 4))
    dev = fake.device_operand
    with pytest.raises(ValueError, match="overlaps a"):
        la.Matmul(dev(a), dev(b), dev(c), beta=1.0, options={"inplace": True})
    with pytest.raises(ValueError, match="overlaps b"):
        la.matmul(dev(r((4, 4))), dev(b), dev(b), beta=1.0, options={"inplace": True})
    c2 = r((4, 4))
    with la.Matmul(dev(r((4, 4))), dev(b), dev(c2), beta=1.0, options={"inplace": True}) as mm:
        mm.plan()
        with pytest.raises(ValueError, match="overlaps b"):
            mm.reset_operands_unchecked(c=dev(b))
    a3, c3 = r((4, 4)), r((4, 4))
    ref = a3 @ b + c3
    assert rel_error(la.matmul(dev(a3), dev(b), dev(c3), beta=1.0, options={"inplace": True}), ref) < 1e-12
