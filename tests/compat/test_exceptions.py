"""The exception types nvmath-python code catches: cumath raises classes that derive from both its own and
nvmath-python's built-in types, so either ``except`` works."""

from __future__ import annotations

import numpy as np
import pytest

import cumath as nvmath
from cumath.errors import (CumathError, CUDAUnavailableError, InvalidStateError, OperandMismatchError,
                           UnsupportedDtypeError)

RNG = np.random.default_rng(11)


def test_hierarchy():
    assert issubclass(InvalidStateError, (CumathError, RuntimeError)) and issubclass(InvalidStateError, ValueError)
    assert issubclass(UnsupportedDtypeError, TypeError) and issubclass(UnsupportedDtypeError, ValueError)
    assert issubclass(OperandMismatchError, TypeError) and issubclass(OperandMismatchError, ValueError)
    assert issubclass(CUDAUnavailableError, RuntimeError) and issubclass(CUDAUnavailableError, ValueError)
    assert nvmath.fft.InvalidFFTState is InvalidStateError
    assert nvmath.linalg.InvalidMatmulState is InvalidStateError
    assert issubclass(nvmath.linalg.InvalidDirectSolverState, InvalidStateError)


@pytest.mark.parametrize("call", [
    lambda: nvmath.fft.fft(np.arange(8, dtype=np.int32)),
    lambda: nvmath.fft.rfft(np.ones(8, np.complex128)),
    lambda: nvmath.fft.irfft(np.ones(8)),
    lambda: nvmath.linalg.matmul(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)),
    lambda: nvmath.linalg.advanced.Matmul(np.ones((2, 2), np.int16), np.ones((2, 2), np.int16)),
], ids=["fft-int", "rfft-complex", "irfft-real", "matmul-int", "advanced-int"])
def test_unsupported_dtype_is_a_value_error(call):
    with pytest.raises(ValueError) as info:
        call()
    assert isinstance(info.value, TypeError)
    assert any(word in str(info.value) for word in ("support", "need"))


def test_reset_from_another_package_is_a_type_error():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(16) + 0j
    with nvmath.fft.FFT(x) as f:
        f.plan()
        with pytest.raises(TypeError, match="does not match the planned one: package torch"):
            f.reset_operand(torch.from_numpy(x.copy()))
    a = RNG.standard_normal((3, 3))
    with nvmath.linalg.Matmul(a, a) as mm:
        mm.plan()
        with pytest.raises(TypeError, match="package torch"):
            mm.reset_operands(a=torch.from_numpy(a.copy()))
        with pytest.raises(ValueError, match="shape"):  # other mismatches stay ValueErrors only
            mm.reset_operands(a=np.ones((4, 4)))


def test_execute_after_release_is_a_value_error():
    x = RNG.standard_normal(16) + 0j
    with nvmath.fft.FFT(x) as f:
        f.plan()
        f.release_operand()
        with pytest.raises(ValueError, match="released"):
            f.execute()
    a = RNG.standard_normal((3, 3))
    with nvmath.linalg.Matmul(a, a) as mm:
        mm.plan()
        mm.release_operands()
        with pytest.raises(ValueError):
            mm.execute()
        with pytest.raises(RuntimeError):  # and still a RuntimeError
            mm.execute()


@pytest.mark.parametrize("make", [
    lambda v: nvmath.linalg.MatmulOptions(allocator=v),
    lambda v: nvmath.linalg.advanced.MatmulOptions(allocator=v),
    lambda v: nvmath.fft.FFTOptions(allocator=v),
], ids=["generic", "advanced", "fft"])
@pytest.mark.parametrize("bad", ["str", 3, object()])
def test_allocator_checked_at_construction(make, bad):
    with pytest.raises(TypeError, match="allocator must be a memory manager with memalloc"):
        make(bad)
    assert make(nvmath.memory.CudaRuntimeMemoryManager(0)).allocator is not None


def test_device_callable():
    F = nvmath.fft
    with pytest.raises(ValueError, match="ltoir must be LTO-IR bytes"):
        F.DeviceCallable(ltoir="str")
    with pytest.raises(TypeError, match="size must be an int"):
        F.DeviceCallable(ltoir=b"\x01\x02", size="2")
    with pytest.raises(TypeError, match="size must be an int"):
        F.DeviceCallable(ltoir=1234, size=2.0)
    assert F.DeviceCallable(ltoir=b"\x01\x02", data=None).data == 0
    assert F.DeviceCallable(ltoir=b"\x01\x02", data=0x100).data == 0x100
