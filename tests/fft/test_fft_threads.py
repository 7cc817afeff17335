"""Threads: cumath picks them per problem size unless the caller names a number, which is honoured."""
import logging

import numpy as np
import pytest

import cumath
from cumath.errors import LibraryNotFoundError
from cumath.fft._backends.fftw import THREAD_MIN_POINTS


def _fftw_or_skip():
    try:
        from cumath._bindings.fftw import get_fftw

        get_fftw("double", "fftw").load()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))


def _threads_logged(caplog, x, execution):
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cumath"):
        with cumath.fft.FFT(x, execution=execution, options={"cpu_engine": "fftw"}) as f:
            f.plan()
            y = f.execute()
    np.testing.assert_allclose(y, np.fft.fft(x), rtol=1e-10, atol=1e-10 * np.abs(y).max())
    lines = [r.getMessage() for r in caplog.records if "FFTW" in r.getMessage() and "thread" in r.getMessage()]
    assert lines, "no FFTW planning message"
    return lines[-1]


def test_small_problem_defaults_to_one_thread(caplog):
    _fftw_or_skip()
    rng = np.random.default_rng(5)
    x = rng.standard_normal(257) + 1j * rng.standard_normal(257)
    assert "1 thread(s)" in _threads_logged(caplog, x, None)


def test_named_thread_count_is_honoured(caplog):
    _fftw_or_skip()
    rng = np.random.default_rng(6)
    x = rng.standard_normal(257) + 1j * rng.standard_normal(257)
    assert "2 thread(s)" in _threads_logged(caplog, x, cumath.ExecutionCPU(num_threads=2))


def test_large_problem_uses_available_cores(caplog):
    _fftw_or_skip()
    rng = np.random.default_rng(7)
    n = 2 * THREAD_MIN_POINTS
    x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    cores = cumath.ExecutionCPU().num_threads or __import__("cumath")._core.execution.available_cpus()
    assert f"{cores} thread(s)" in _threads_logged(caplog, x, None)
