"""What cumath.fft logs at INFO: the execution space, the engine and its plan, planning effort and time."""

from __future__ import annotations

import logging
import re

import pytest

import cumath
import cumath.fft as F
from cumath.config import plan_cache
from helpers.matrix import engine_available, engine_params, hermitian_array, random_array


@pytest.fixture(autouse=True)
def fresh_cache():
    plan_cache.clear()  # a cached plan would log nothing
    yield
    plan_cache.clear()


def _messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name.startswith("cumath")]


ENGINE_TEXT = {"fftw": "FFTW (fftw, double)", "mkl": "FFTW (mkl, double)", "scipy": "SciPy pocketfft"}


@pytest.mark.parametrize("engine", engine_params())
@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
def test_info_reports_space_engine_and_plan(engine, kind, caplog):
    shape = (6, 10)
    x = {"C2C": lambda: random_array(shape, "complex128"), "R2C": lambda: random_array(shape, "float64"),
         "C2R": lambda: hermitian_array(shape, "complex128")}[kind]()
    fn = {"C2C": F.fft, "R2C": F.rfft, "C2R": F.irfft}[kind]
    with caplog.at_level(logging.INFO, logger="cumath"):
        fn(x, axes=(1,), options={"cpu_engine": engine}, execution=cumath.ExecutionCPU(num_threads=2))
    text = "\n".join(_messages(caplog))
    assert f"FFT {kind} of numpy {x.dtype}[6, 10] over axes [1], executing on CPU (2 threads)" in text
    assert ENGINE_TEXT[engine] in text
    assert f"{kind} plan" in text
    if engine == "scipy":
        assert "worker(s)" in text
    else:
        match = re.search(r"thread\(s\), planned with (\w+) in ([0-9.]+) ms", text)
        assert match and match.group(1) in ("estimate", "wisdom"), text
        assert float(match.group(2)) >= 0


@pytest.mark.parametrize("engine", engine_params(["fftw", "mkl"]))
def test_planning_effort_is_reported(engine, caplog, tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    with caplog.at_level(logging.INFO, logger="cumath"):
        F.fft(random_array((5, 12), "complex128"), options={"cpu_engine": engine, "planning_effort": "measure"})
    text = "\n".join(_messages(caplog))
    assert "planned with measure in" in text
    if engine == "fftw":
        assert "FFTW wisdom saved to" in text
    else:  # oneMKL's wrappers have no wisdom: nothing saved, nothing claimed
        assert "wisdom" not in text


def test_mkl_default_plan_does_not_claim_wisdom(caplog):
    if not engine_available("mkl"):
        pytest.skip("CPU engine 'mkl' is not installed")
    with caplog.at_level(logging.INFO, logger="cumath"):
        F.fft(random_array((5, 14), "complex128"), options={"cpu_engine": "mkl"})
    text = "\n".join(_messages(caplog))
    assert "planned with estimate" in text and "wisdom" not in text


def test_nothing_is_logged_below_the_level(caplog):
    with caplog.at_level(logging.WARNING, logger="cumath"):
        F.fft(random_array((5, 9), "complex128"))
    assert not _messages(caplog)


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("engine", engine_params())
@pytest.mark.parametrize("stateful", [False, True], ids=["function", "FFT"])
def test_logger_option_receives_the_messages(engine, stateful):
    log = logging.getLogger(f"user.fft.{engine}.{stateful}")
    log.setLevel(logging.INFO)
    log.propagate = False
    handler = _Collect()
    log.addHandler(handler)
    try:
        x = random_array((4, 10), "complex128")
        options = F.FFTOptions(logger=log, cpu_engine=engine)
        if stateful:
            with F.FFT(x, options=options) as f:
                f.plan()
                f.execute()
        else:
            F.fft(x, options=options)
    finally:
        log.removeHandler(handler)
    text = "\n".join(handler.messages)
    assert "FFT C2C of numpy complex128[4, 10] over axes [0, 1], executing on CPU" in text
    assert ENGINE_TEXT[engine] in text


def test_cumath_has_a_null_handler():
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("cumath").handlers)
