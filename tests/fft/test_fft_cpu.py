"""cumath.fft on the CPU against NumPy float64 references: every dtype x package x engine, sizes, axes,
memory layouts, in-place, result layouts, threads and planning effort."""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pytest

import cumath
import cumath.fft as F
from cumath.config import plan_cache
from helpers.matrix import (LAYOUTS, c2r_length, dtype_of, engine_params, hermitian_array, is_dense,
                            memory_order, package_of, package_params, random_array, strides_of, to_numpy,
                            to_package, with_layout)
from helpers.reference import assert_close, fft_ref, ifft_ref, irfft_ref, rfft_ref

PRECISIONS = {"single": ("float32", "complex64"), "double": ("float64", "complex128")}

# (shape, axes): powers of 2, primes, products of small primes; 1-D, 2-D, 3-D; batches; permuted and
# non-leading axes.
CASES = [((n,), None) for n in (64, 1024, 17, 127, 1009, 60, 210, 2 * 3 * 5 * 7 * 11)] + [
    ((16, 32), None), ((17, 60), None), ((9, 127), (1,)), ((60, 7), (0,)), ((4, 6, 8), None),
    ((5, 7, 9), (0, 2)), ((4, 6, 10), (2, 0, 1)), ((6, 8, 10), (1,)), ((6, 8, 10), (-1, -2)),
    ((3, 4, 5, 6), (1, 3)),
]
CASE_IDS = [f"{'x'.join(map(str, s))}-axes{'' if a is None else ''.join(map(str, a))}" for s, a in CASES]
LAYOUT_CASES = [((8, 12), None), ((6, 10, 4), (0, 2)), ((5, 6, 7), (1,))]

engine = pytest.mark.parametrize("engine", engine_params())
package = pytest.mark.parametrize("package", package_params())
precision = pytest.mark.parametrize("precision", list(PRECISIONS))
cases = pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
layout_cases = pytest.mark.parametrize("shape,axes", LAYOUT_CASES, ids=["2d", "3d-axes02", "3d-axes1"])


def _n(shape, axes):
    axes = range(len(shape)) if axes is None else axes
    return math.prod(shape[a] for a in axes)


def _check_result(y, package, dtype, shape):
    assert package_of(y) == package
    assert dtype_of(y) == dtype
    assert tuple(y.shape) == tuple(shape)


def _snapshot(x):
    return to_numpy(x), strides_of(x)


def _assert_unchanged(x, before):
    values, strides = before
    assert strides_of(x) == strides
    np.testing.assert_array_equal(to_numpy(x), values)


# ---------------------------------------------------------------------------------------------- dtype matrix

@engine
@package
@precision
@cases
def test_c2c(engine, package, precision, shape, axes):
    dtype = PRECISIONS[precision][1]
    x = to_package(random_array(shape, dtype), package)
    before = _snapshot(x)
    opts = {"cpu_engine": engine}
    y = F.fft(x, axes, options=opts)
    _check_result(y, package, dtype, shape)
    assert_close(y, fft_ref(before[0], axes), dtype, _n(shape, axes))
    z = F.ifft(x, axes, options=opts)
    _check_result(z, package, dtype, shape)
    assert_close(z, ifft_ref(before[0], axes), dtype, _n(shape, axes))
    w = F.fft(x, axes, direction=F.FFTDirection.INVERSE, options=opts)
    assert_close(w, ifft_ref(before[0], axes), dtype, _n(shape, axes))
    _assert_unchanged(x, before)


@engine
@package
@precision
@cases
def test_r2c(engine, package, precision, shape, axes):
    real, cplx = PRECISIONS[precision]
    x = to_package(random_array(shape, real), package)
    before = _snapshot(x)
    y = F.rfft(x, axes, options={"cpu_engine": engine})
    ref = rfft_ref(before[0], axes)
    _check_result(y, package, cplx, ref.shape)
    assert_close(y, ref, cplx, _n(shape, axes))
    _assert_unchanged(x, before)


@engine
@package
@precision
@pytest.mark.parametrize("parity", ["even", "odd"])
@cases
def test_c2r(engine, package, precision, parity, shape, axes):
    real, cplx = PRECISIONS[precision]
    x = to_package(hermitian_array(shape, cplx, axes, parity), package)
    before = _snapshot(x)
    y = F.irfft(x, axes, options={"cpu_engine": engine, "last_axis_parity": parity})
    ref = irfft_ref(before[0], axes, parity)
    last = (len(shape) - 1) if axes is None else axes[-1] % len(shape)
    assert ref.shape[last] == c2r_length(shape[last], parity)
    _check_result(y, package, real, ref.shape)
    assert_close(y, ref, real, ref.size)
    _assert_unchanged(x, before)


@engine
@pytest.mark.parametrize("shape,axes", [((1,), None), ((5, 1), None), ((1, 6), (0,)), ((4, 1, 3), (1,))])
def test_size_one_axes(engine, shape, axes):
    opts = {"cpu_engine": engine}
    x = random_array(shape, "complex128")
    assert_close(F.fft(x, axes, options=opts), fft_ref(x, axes), "complex128")
    r = random_array(shape, "float64")
    assert_close(F.rfft(r, axes, options=opts), rfft_ref(r, axes), "complex128")
    h = hermitian_array(shape, "complex128", axes, "odd")
    y = F.irfft(h, axes, options=dict(opts, last_axis_parity="odd"))
    assert_close(y, irfft_ref(h, axes, "odd"), "float64")


# ---------------------------------------------------------------------------------------------- layouts

def _transform(kind, values, axes, engine, layout_opt, package, layout):
    """(operand, result, reference, result dtype) of one out-of-place transform of a laid-out operand."""
    opts = {"cpu_engine": engine, "result_layout": layout_opt}
    x = with_layout(values, layout, package)
    before = _snapshot(x)
    if kind == "C2C":
        y, ref = F.fft(x, axes, options=opts), fft_ref(values, axes)
    elif kind == "R2C":
        y, ref = F.rfft(x, axes, options=opts), rfft_ref(values, axes)
    else:
        y, ref = F.irfft(x, axes, options=opts), irfft_ref(values, axes)
    _assert_unchanged(x, before)
    return x, y, ref


@engine
@package
@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
@pytest.mark.parametrize("layout", LAYOUTS)
@layout_cases
def test_layouts_and_result_layout(engine, package, kind, layout, shape, axes):
    """Non-contiguous, negative-stride, Fortran and transposed operands; natural and optimized results."""
    if kind == "C2C":
        values = random_array(shape, "complex128")
    elif kind == "R2C":
        values = random_array(shape, "float64")
    else:
        values = hermitian_array(shape, "complex128", axes)
    x, natural, ref = _transform(kind, values, axes, engine, "natural", package, layout)
    _, optimized, _ = _transform(kind, values, axes, engine, "optimized", package, layout)
    dtype = dtype_of(natural)
    for y in (natural, optimized):
        assert package_of(y) == package and is_dense(y)
        assert_close(y, ref, dtype)
    np.testing.assert_allclose(to_numpy(natural), to_numpy(optimized), rtol=0, atol=1e-12 * np.abs(ref).max())
    assert memory_order(natural) == memory_order(x)
    transformed = set(range(len(shape))) if axes is None else {a % len(shape) for a in axes}
    assert set(memory_order(optimized)[len(shape) - len(transformed):]) == transformed


@engine
@package
@precision
@pytest.mark.parametrize("layout", LAYOUTS)
@layout_cases
def test_inplace_c2c(engine, package, precision, layout, shape, axes):
    dtype = PRECISIONS[precision][1]
    values = random_array(shape, dtype)
    x = with_layout(values, layout, package)
    strides = strides_of(x)
    opts = {"cpu_engine": engine, "inplace": True}
    y = F.fft(x, axes, options=opts)
    assert y is x and strides_of(x) == strides
    assert_close(x, fft_ref(values, axes), dtype, _n(shape, axes))
    forward = to_numpy(x)
    z = F.ifft(x, axes, options=opts)
    assert z is x
    assert_close(x, ifft_ref(forward, axes), dtype, _n(shape, axes))
    assert_close(x, values.astype("complex128") * _n(shape, axes), dtype, _n(shape, axes))


@engine
@package
def test_inplace_stateful(engine, package):
    values = random_array((12, 20), "complex64")
    x = with_layout(values, "C", package)
    with F.FFT(x, axes=(1,), options={"cpu_engine": engine, "inplace": True}) as f:
        f.plan()
        assert f.execute() is x
        assert_close(x, fft_ref(values, (1,)), "complex64", 20)
        fresh = random_array((12, 20), "complex64")
        x2 = with_layout(fresh, "C", package)
        f.reset_operand(x2)
        assert f.execute(direction="inverse") is x2
        assert_close(x2, ifft_ref(fresh, (1,)), "complex64", 20)


# ---------------------------------------------------------------------------------------------- execution

@engine
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
def test_num_threads(engine, threads, kind):
    shape = (256, 256)  # large enough that FFTW threads it
    execution = cumath.ExecutionCPU(num_threads=threads)
    opts = {"cpu_engine": engine}
    if kind == "C2C":
        x = random_array(shape, "complex128")
        y, ref = F.fft(x, execution=execution, options=opts), fft_ref(x)
    elif kind == "R2C":
        x = random_array(shape, "float64")
        y, ref = F.rfft(x, execution=execution, options=opts), rfft_ref(x)
    else:
        x = hermitian_array(shape, "complex128")
        y, ref = F.irfft(x, execution=execution, options=opts), irfft_ref(x)
    assert_close(y, ref, "complex128", ref.size)


@pytest.mark.parametrize("execution", ["cpu", {"name": "cpu", "num_threads": 2}, cumath.ExecutionCPU()])
def test_execution_forms(execution):
    x = random_array((33, 40), "complex128")
    y = F.fft(x, execution=execution)
    assert isinstance(y, np.ndarray)
    assert_close(y, fft_ref(x), "complex128")


@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("engine", engine_params(["fftw"]))
def test_measure_saves_wisdom_and_reuses_it(engine, precision, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    plan_cache.clear()
    dtype = PRECISIONS[precision][1]
    x = random_array((3, 40), dtype)
    y = F.fft(x, axes=(1,), options={"cpu_engine": engine, "planning_effort": "measure"})
    assert_close(y, fft_ref(x, (1,)), dtype, 40)
    wisdom = tmp_path / "fftw" / f"wisdom-fftw-{precision}.txt"
    assert wisdom.is_file() and wisdom.stat().st_size > 0
    assert "_wisdom" in wisdom.read_text()
    x2 = random_array((3, 40), dtype)
    with caplog.at_level(logging.INFO, logger="cumath"):
        y2 = F.fft(x2, axes=(1,), options={"cpu_engine": engine})
    assert_close(y2, fft_ref(x2, (1,)), dtype, 40)
    plans = [r.getMessage() for r in caplog.records if "plan dims=" in r.getMessage()]
    assert plans and all("planned with wisdom" in m for m in plans), plans


@pytest.mark.parametrize("engine", engine_params(["fftw"]))
def test_a_cached_plan_takes_wisdom_learnt_later(engine, tmp_path, monkeypatch, caplog):
    """A plan made heuristically (no wisdom) is looked at again once the process learns wisdom for it: its fast
    path is dropped, and the next execution plans from the wisdom."""
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    plan_cache.clear()
    opts = {"cpu_engine": engine}
    x = random_array((5, 58), "complex128")
    assert_close(F.fft(x, axes=(1,), options=opts), fft_ref(x, (1,)), "complex128", 58)
    ((cached, _),) = plan_cache._mine().entries.values()
    backend = cached._executor.backend
    assert backend._estimated and backend.entries
    with F.FFT(x, axes=(1,), options=dict(opts, planning_effort="measure")) as f:
        f.plan()  # learns wisdom for the problem
    assert not backend.entries
    x2 = random_array((5, 58), "complex128")
    with caplog.at_level(logging.INFO, logger="cumath"):
        assert_close(F.fft(x2, axes=(1,), options=opts), fft_ref(x2, (1,)), "complex128", 58)
    assert any("planned with wisdom" in r.getMessage() for r in caplog.records)
    assert backend.entries and not backend._estimated
    plan_cache.clear()


@engine
@pytest.mark.parametrize("effort", ["estimate", "measure", "patient"])
def test_planning_efforts_give_correct_results(engine, effort, tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    opts = {"cpu_engine": engine, "planning_effort": effort}
    x = random_array((4, 24), "complex128")
    assert_close(F.fft(x, options=opts), fft_ref(x), "complex128")
    r = random_array((4, 24), "float64")
    assert_close(F.rfft(r, options=opts), rfft_ref(r), "complex128")
    h = hermitian_array((4, 13), "complex128")
    assert_close(F.irfft(h, options=opts), irfft_ref(h), "float64")
    if engine != "fftw":
        assert not os.path.exists(tmp_path / "fftw" / f"wisdom-{engine}-double.txt")


@engine
@pytest.mark.parametrize("package", package_params(["torch"]))
@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
def test_torch_tensors_that_require_grad(engine, package, kind):
    import torch

    values = {"C2C": lambda: random_array((6, 10), "complex128"), "R2C": lambda: random_array((6, 10), "float64"),
              "C2R": lambda: hermitian_array((6, 10), "complex128")}[kind]()
    fn, ref = {"C2C": (F.fft, fft_ref), "R2C": (F.rfft, rfft_ref), "C2R": (F.irfft, irfft_ref)}[kind]
    x = torch.from_numpy(values).requires_grad_(True)
    y = fn(x, options={"cpu_engine": engine})
    assert isinstance(y, torch.Tensor) and not y.requires_grad
    assert_close(y, ref(values), dtype_of(y))
