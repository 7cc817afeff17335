"""The stateful FFT: plan, execute, reset_operand, release_operand, free, context manager, and keys."""

from __future__ import annotations

import numpy as np
import pytest

import cumath
import cumath.fft as F
from cumath.errors import InvalidStateError
from helpers.matrix import engine_params, hermitian_array, package_params, random_array, to_numpy, to_package
from helpers.reference import assert_close, fft_ref, ifft_ref, irfft_ref, rfft_ref

SHAPE = (6, 20)
engine = pytest.mark.parametrize("engine", engine_params())
package = pytest.mark.parametrize("package", package_params())


def _fft(x=None, **kwargs):
    return F.FFT(random_array(SHAPE, "complex128") if x is None else x, **kwargs)


# ---------------------------------------------------------------------------------------------- lifecycle

@engine
@package
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_plan_execute_both_directions_and_reset(engine, package, dtype):
    x0 = random_array(SHAPE, dtype)
    x = to_package(x0, package)
    with F.FFT(x, axes=(1,), options={"cpu_engine": engine}) as f:
        f.plan()
        assert_close(f.execute(), fft_ref(x0, (1,)), dtype, 20)
        assert_close(f.execute(direction=F.FFTDirection.INVERSE), ifft_ref(x0, (1,)), dtype, 20)
        assert_close(f.execute(direction="forward"), fft_ref(x0, (1,)), dtype, 20)
        for _ in range(3):  # new operands of the same kind give new results
            x1 = random_array(SHAPE, dtype)
            f.reset_operand(to_package(x1, package))
            assert_close(f.execute(), fft_ref(x1, (1,)), dtype, 20)
            assert_close(f.execute(direction="inverse"), ifft_ref(x1, (1,)), dtype, 20)
        np.testing.assert_array_equal(to_numpy(x), x0)  # the first operand was never touched


@engine
@package
def test_r2c_and_c2r_objects(engine, package):
    opts = {"cpu_engine": engine}
    r0 = random_array(SHAPE, "float64")
    with F.FFT(to_package(r0, package), options=opts) as f:
        f.plan()
        assert_close(f.execute(), rfft_ref(r0), "complex128")
        r1 = random_array(SHAPE, "float64")
        f.reset_operand(to_package(r1, package))
        assert_close(f.execute(direction="forward"), rfft_ref(r1), "complex128")
    h0 = hermitian_array(SHAPE, "complex128", parity="odd")
    with F.FFT(to_package(h0, package), options=dict(opts, fft_type="C2R", last_axis_parity="odd")) as f:
        f.plan()
        assert_close(f.execute(), irfft_ref(h0, parity="odd"), "float64")
        h1 = hermitian_array(SHAPE, "complex128", parity="odd")
        f.reset_operand(to_package(h1, package))
        assert_close(f.execute(direction=F.FFTDirection.INVERSE), irfft_ref(h1, parity="odd"), "float64")
        np.testing.assert_array_equal(to_numpy(f._ops["operand"].obj), h1)  # C2R leaves its input alone


def test_plan_twice_is_a_no_op():
    with _fft() as f:
        f.plan()
        executor = f._executor
        f.plan()
        assert f._executor is executor


def test_reset_operand_unchecked():
    x0 = random_array(SHAPE, "complex128")
    with F.FFT(x0) as f:
        f.plan()
        x1 = random_array(SHAPE, "complex128")
        f.reset_operand_unchecked(x1)
        assert_close(f.execute(), fft_ref(x1), "complex128")
        from cumath._core.operand import wrap_operand

        x2 = random_array(SHAPE, "complex128")
        f.reset_operand_unchecked(wrap_operand(x2))  # an already wrapped operand is taken as is
        assert_close(f.execute(), fft_ref(x2), "complex128")


@pytest.mark.parametrize("new,fragment", [
    (lambda: random_array((6, 21), "complex128"), "shape (6, 21) (planned: (6, 20))"),
    (lambda: random_array(SHAPE, "complex64"), "dtype complex64 (planned: complex128)"),
    (lambda: np.asfortranarray(random_array(SHAPE, "complex128")), "strides (1, 6) (planned: (20, 1))"),
    (lambda: random_array((6, 40), "complex128")[:, ::2], "strides (40, 2) (planned: (20, 1))"),
], ids=["shape", "dtype", "fortran", "strided"])
def test_reset_operand_mismatch(new, fragment):
    with _fft() as f:
        f.plan()
        with pytest.raises(ValueError) as info:
            f.reset_operand(new())
        assert fragment in str(info.value) and "create a new FFT object" in str(info.value)
        x = random_array(SHAPE, "complex128")
        f.reset_operand(x)  # still usable
        assert_close(f.execute(), fft_ref(x), "complex128")


@pytest.mark.parametrize("package", package_params(["torch"]))
def test_reset_operand_other_package(package):
    with _fft() as f:
        f.plan()
        with pytest.raises(ValueError, match=r"package torch \(planned: numpy\)"):
            f.reset_operand(to_package(random_array(SHAPE, "complex128"), package))


@pytest.mark.parametrize("release", ["release_operand", "reset_operand(None)"])
def test_release_operand_then_execute(release):
    with _fft() as f:
        f.plan()
        if release == "release_operand":
            f.release_operand()
        else:
            f.reset_operand(None)
        with pytest.raises(InvalidStateError, match="reset_operand"):
            f.execute()
        x = random_array(SHAPE, "complex128")
        f.reset_operand(x)
        assert_close(f.execute(), fft_ref(x), "complex128")


def test_execute_before_plan():
    with _fft() as f:
        with pytest.raises(InvalidStateError, match=r"plan\(\)"):
            f.execute()


def test_free_twice_and_use_after_free():
    f = _fft()
    f.plan()
    f.free()
    f.free()
    x = random_array(SHAPE, "complex128")
    calls = {
        "plan": lambda: f.plan(),
        "execute": lambda: f.execute(),
        "reset_operand": lambda: f.reset_operand(x),
        "reset_operand_unchecked": lambda: f.reset_operand_unchecked(x),
        "release_operand": lambda: f.release_operand(),
        "get_key": lambda: f.get_key(),
    }
    for name, call in calls.items():
        with pytest.raises(InvalidStateError, match=r"after free\(\)") as info:
            call()
        assert name in str(info.value), (name, str(info.value))


def test_free_unplanned():
    f = _fft()
    f.free()
    with pytest.raises(InvalidStateError, match=r"after free\(\)"):
        f.plan()


def test_context_manager_frees():
    with _fft() as f:
        f.plan()
        assert f.nbytes >= 0
    assert f._freed and f._executor is None and f._ops["operand"] is None
    with pytest.raises(InvalidStateError):
        f.execute()


def test_context_manager_frees_on_error():
    with pytest.raises(RuntimeError, match="boom"):
        with _fft() as f:
            f.plan()
            raise RuntimeError("boom")
    assert f._freed


def test_failure_inside_plan_releases_the_executor(monkeypatch):
    import cumath.fft._planner as planner

    freed = []

    class Failing:
        nbytes = 0

        def prepare(self, sign):
            raise RuntimeError("planning failed")

        def free(self):
            freed.append(True)

    monkeypatch.setattr(planner, "make_executor", lambda *a, **k: Failing())
    f = _fft()
    with pytest.raises(RuntimeError, match="planning failed"):
        f.plan()
    assert freed == [True] and not f._planned and f._executor is None
    with pytest.raises(InvalidStateError, match=r"plan\(\)"):
        f.execute()
    f.free()


@pytest.mark.usefixtures("recycling_on")
def test_c2r_nbytes_counts_the_staging_copy_and_the_recycled_result():
    h = hermitian_array(SHAPE, "complex128")
    with F.FFT(h, options={"fft_type": "C2R"}) as f:
        assert f.nbytes == 0
        f.plan()
        y = f.execute()
        assert f.nbytes == h.nbytes + y.nbytes  # the input copy C2R needs, and the result kept for reuse
    assert f.nbytes == 0


# ---------------------------------------------------------------------------------------------- keys

def test_get_key_equals_create_key_for_equal_problems():
    x = random_array(SHAPE, "complex128")
    cases = [dict(), dict(axes=(1,)), dict(options={"result_layout": "natural"}),
             dict(options=F.FFTOptions(cpu_engine="scipy")), dict(execution="cpu"),
             dict(execution=cumath.ExecutionCPU(num_threads=1)), dict(execution={"name": "cpu", "num_threads": 2})]
    for kwargs in cases:
        with F.FFT(x, **kwargs) as f:
            key = f.get_key()
            other = F.FFT.create_key(random_array(SHAPE, "complex128"), **kwargs)
            assert key == other and hash(key) == hash(other), kwargs
            assert {key: 1}[other] == 1


def test_keys_ignore_logger_and_allocator():
    import logging

    x = random_array(SHAPE, "complex128")
    a = F.FFT.create_key(x, options={"logger": logging.getLogger("a")})
    b = F.FFT.create_key(x, options={"logger": logging.getLogger("b"), "allocator": cumath.memory.CudaRuntimeMemoryManager(0)})
    assert a == b and hash(a) == hash(b)


@pytest.mark.parametrize("other", [
    dict(x=random_array((6, 21), "complex128")),
    dict(x=random_array(SHAPE, "complex64")),
    dict(x=np.asfortranarray(random_array(SHAPE, "complex128"))),
    dict(axes=(0,)),
    dict(options={"inplace": True}),
    dict(options={"cpu_engine": "scipy"}),
    dict(execution=cumath.ExecutionCPU(num_threads=1)),
    dict(prolog=b"code"),
], ids=["shape", "dtype", "strides", "axes", "inplace", "engine", "threads", "prolog"])
def test_keys_differ_for_different_problems(other):
    base = F.FFT.create_key(random_array(SHAPE, "complex128"), axes=(0, 1),
                            execution=cumath.ExecutionCPU(num_threads=2))
    kwargs = dict(axes=(0, 1), execution=cumath.ExecutionCPU(num_threads=2))
    kwargs.update({k: v for k, v in other.items() if k != "x"})
    x = other.get("x", random_array(SHAPE, "complex128"))
    key = F.FFT.create_key(x, **kwargs)
    assert key != base
    hash(key)
    with F.FFT(x, **{k: v for k, v in kwargs.items() if k not in ("prolog", "epilog")}) as f:
        assert f.get_key(prolog=kwargs.get("prolog")) == key
