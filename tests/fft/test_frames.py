"""The hot paths' frame budget: at most four Python frames from the public call to FFTW's execute function
(``cumath.fft.fft`` on a cached plan; ``FFT.execute``). The native function is replaced by a stub that walks
the stack up to the public call's frame."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import cumath.fft as F
from cumath.config import plan_cache
from cumath.fft._functions import fft as fft_function
from helpers.matrix import engine_available, random_array
from helpers.reference import assert_close, fft_ref, rfft_ref

BUDGET = 4

pytestmark = pytest.mark.skipif(not engine_available("fftw"), reason="CPU engine 'fftw' is not installed")


@pytest.fixture
def calls(monkeypatch):
    """Replaces FFTW's double-precision execute functions by stubs; yields the list of the stacks (code objects,
    innermost first) the native calls were made from."""
    from cumath._bindings.fftw import get_fftw

    lib = get_fftw("double", "fftw").load()
    stacks: list = []

    def stub_of(real):
        def stub(plan, in_ptr, out_ptr):
            frame, stack = sys._getframe(1), []
            while frame is not None:
                stack.append(frame.f_code)
                frame = frame.f_back
            stacks.append(stack)
            return real(plan, in_ptr, out_ptr)
        return stub

    plan_cache.clear()  # plans made from now on take the stubs
    for name in ("execute_dft", "execute_dft_r2c"):
        monkeypatch.setattr(lib, name, stub_of(getattr(lib, name)))
    yield stacks
    plan_cache.clear()  # no cached plan keeps a stub


def depth(stack, public, caller=None) -> int:
    """Python frames from the public call (included) down to the native call. A method run from C when called
    without arguments (``fast_execute``) has no frame of its own there: then the frames below ``caller``."""
    code = getattr(public, "__wrapped__", public).__code__
    if code in stack or caller is None:
        return stack.index(code) + 1
    return stack.index(caller)


def test_a_cached_stateless_call(calls):
    x = random_array((16,), "complex128")
    for _ in range(3):
        assert_close(F.fft(x, options={"cpu_engine": "fftw"}), fft_ref(x), "complex128")
    r = random_array((6, 10), "float64")
    for _ in range(2):
        assert_close(F.rfft(r, options={"cpu_engine": "fftw"}), rfft_ref(r), "complex128")
    assert len(calls) == 5
    hits = [depth(s, fft_function) for s in calls[1:3]] + [depth(calls[4], F.rfft)]  # the first calls plan
    assert max(hits) <= BUDGET, hits


def test_the_stateful_execute(calls):
    x = random_array((4, 16), "complex128")
    with F.FFT(x, options={"cpu_engine": "fftw"}) as f:
        f.plan()
        for _ in range(2):
            assert_close(f.execute(), fft_ref(x), "complex128")
        with_direction = f.execute(direction="forward")  # the Python method's own frame
        assert_close(with_direction, fft_ref(x), "complex128")
    assert len(calls) == 3
    here = sys._getframe().f_code
    assert max(depth(s, F.FFT.execute, here) for s in calls) <= BUDGET, calls


def test_misaligned_operands_take_their_own_plans(calls):
    """A pointer without the SIMD alignment is not given to the aligned plan (the slow path plans it)."""
    buf = np.empty(16 * 17 + 1, dtype=np.complex128)
    raw = buf.view(np.uint8)[8:8 + 16 * 16 * 17].view(np.complex128)  # 8 bytes off the 16-byte alignment
    x = raw.reshape(16, 17)
    x[...] = random_array((16, 17), "complex128")
    assert_close(F.fft(x, options={"cpu_engine": "fftw"}), fft_ref(x), "complex128")
    aligned = random_array((16, 17), "complex128")
    assert_close(F.fft(aligned, options={"cpu_engine": "fftw"}), fft_ref(aligned), "complex128")
    from cumath.fft._backends.fftw import FFTWPlan

    slow = FFTWPlan._execute_one.__code__
    assert len(calls) == 2 and slow in calls[0] and slow not in calls[1]
