"""First calls without wisdom ('fftw+dfti', what 'auto' takes with FFTW and MKL installed): the rule that picks
FFTW_ESTIMATE or DFTI per problem, its DEBUG log line, the environment override, what each plan reports it runs
(``served_by``), and that a process loads only the engine its problems need."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cumath.fft as F
from cumath.fft._backends import _rule
from cumath.fft._traits import fft_geometry
from helpers.matrix import engine_available, random_array
from helpers.reference import assert_close, fft_ref, ifft_ref, rfft_ref


def _mkl() -> bool:
    from cumath._bindings import mkl_dfti

    return mkl_dfti.available()


needs_both = pytest.mark.skipif(not (engine_available("fftw") and _mkl()),
                                reason="needs FFTW (the 'cpu' extra) and oneMKL (the 'mkl' extra)")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def geometry(shape, dtype, axes, kind="C2C"):
    strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    return fft_geometry(shape, strides, dtype, axes, kind, "even", "optimized", False, False)


# ------------------------------------------------------------------------------------------ the rule (pure)

# the five CPU benchmark cases and the problems around their thresholds
RULE_CASES = [
    ((2048,), "complex128", (0,), "C2C", "fftw"),  # a short 1-D transform
    ((1 << 20,), "complex128", (0,), "C2C", "dfti"),  # one long 1-D transform
    ((4096, 1024), "complex64", (1,), "C2C", "fftw"),  # a batch of short 1-D transforms
    ((2048, 2048), "complex64", (0, 1), "C2C", "dfti"),  # 2-D
    ((1 << 20,), "float64", (0,), "R2C", "dfti"),  # one long rfft
    ((4096,), "complex128", (0,), "C2C", "fftw"),  # the longest FFTW_ESTIMATE keeps
    ((4097,), "complex128", (0,), "C2C", "dfti"),  # an odd length just above it
    ((8, 4096), "complex128", (1,), "C2C", "fftw"),
    ((1024, 256), "complex64", (0,), "C2C", "fftw"),  # batched along axis 0 (strided transforms)
    ((64, 8192), "complex128", (1,), "C2C", "dfti"),  # a batch of long transforms
    ((181, 181), "complex128", (0, 1), "C2C", "fftw"),  # a small 2-D one (prime sizes): 32761 points
    ((8, 128, 128), "complex64", (1, 2), "C2C", "fftw"),  # a batch of small 2-D ones
    ((256, 256), "complex64", (0, 1), "C2C", "dfti"),
    ((128, 128, 128), "complex64", (0, 1, 2), "C2C", "dfti"),  # 3-D
    ((1024, 1024), "float32", (0, 1), "R2C", "dfti"),
]


@pytest.mark.parametrize("shape,dtype,axes,kind,engine", RULE_CASES)
def test_rule_engine_per_case(shape, dtype, axes, kind, engine):
    got, why = _rule.no_wisdom_engine(geometry(shape, dtype, axes, kind))
    assert got == engine, why
    assert why and "transform" in why


@settings(max_examples=200, deadline=None)
@given(shape=st.lists(st.integers(1, 5000), min_size=1, max_size=3), ndim=st.integers(1, 3),
       real=st.booleans(), double=st.booleans())
def test_rule_property(shape, ndim, real, double):
    ndim = min(ndim, len(shape))
    axes = tuple(range(len(shape) - ndim, len(shape)))
    dtype = ("float64" if double else "float32") if real else ("complex128" if double else "complex64")
    geom = geometry(tuple(shape), dtype, axes, "R2C" if real else "C2C")
    engine, why = _rule.no_wisdom_engine(geom)
    assert engine in ("fftw", "dfti") and isinstance(why, str) and why
    if ndim == 1:
        assert engine == ("fftw" if shape[-1] <= _rule.FFTW_MAX_LENGTH else "dfti")
    else:
        assert engine == ("fftw" if int(np.prod(shape[-ndim:])) < _rule.MULTI_DIM_DFTI_POINTS else "dfti")


def test_problem_description():
    assert _rule.problem(geometry((1 << 20,), "complex128", (0,))) == "C2C complex128 1048576"
    assert _rule.problem(geometry((8, 32, 32), "float32", (1, 2), "R2C")) == "R2C float32 32 x 32, batch 8"


# --------------------------------------------------------------------------------------- through the FFT

def served(f, sign=-1):
    return f._executor.backend.served_by(sign)


@needs_both
@pytest.mark.parametrize("shape,dtype,axes,engine", [
    ((2048,), "complex128", None, "fftw"), ((1 << 16,), "complex128", None, "dfti"),
    ((64, 1024), "complex64", [-1], "fftw"), ((256, 257), "complex64", None, "dfti"),
    ((1 << 15,), "float64", None, "dfti")])
def test_fft_runs_the_chosen_engine_and_is_correct(shape, dtype, axes, engine, monkeypatch):
    monkeypatch.delenv("CUMATH_FFT_CPU_ENGINE", raising=False)
    x = random_array(shape, dtype)
    with F.FFT(x, axes=axes) as f:
        f.plan()
        assert served(f).split(":")[0] == engine  # 'fftw:estimate' (or 'fftw:wisdom' once measured) or 'dfti'
        ref = rfft_ref(x, axes) if dtype == "float64" else fft_ref(x, axes)
        assert_close(f.execute(), ref, dtype)
        if dtype != "float64":
            assert_close(f.execute(direction="inverse"), ifft_ref(x, axes), dtype)


@needs_both
def test_the_choice_is_logged_at_debug_with_its_reason(caplog, monkeypatch):
    monkeypatch.delenv("CUMATH_FFT_CPU_ENGINE", raising=False)
    x = random_array((96, 352), "complex128")  # 2-D, a size no other test plans
    with caplog.at_level(logging.DEBUG, logger="cumath.fft"):
        with F.FFT(x) as f:
            f.plan()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and "fftw+dfti" in r.getMessage()]
    assert any("fftw+dfti: DFTI for C2C complex128 96 x 352" in m and "2-D transform" in m for m in lines), lines
    caplog.clear()
    y = random_array((3, 1000), "complex64")
    with caplog.at_level(logging.DEBUG, logger="cumath.fft"):
        F.fft(y, axes=[-1])
    lines = [r.getMessage() for r in caplog.records if "fftw+dfti" in r.getMessage()]
    assert any("FFTW (its plan from wisdom, else FFTW_ESTIMATE) for C2C complex64 1000, batch 3" in m
               and "length 1000 <= 4096" in m for m in lines), lines


@needs_both
def test_an_explicit_planning_effort_is_logged_and_means_fftw(caplog):
    x = random_array((200, 200), "complex128")
    with caplog.at_level(logging.DEBUG, logger="cumath.fft"):
        with F.FFT(x, options={"planning_effort": "estimate"}) as f:
            f.plan()
            assert served(f) == "fftw:estimate"
    assert any("planning_effort='estimate' was asked for" in r.getMessage() for r in caplog.records)


@needs_both
@pytest.mark.parametrize("env,shape,expected", [
    ("fftw", (256, 257), "fftw:estimate"),  # a 2-D problem the rule gives DFTI
    ("dfti", (2048,), "dfti"),  # a small one the rule gives FFTW
    ("fftw+dfti", (256, 257), "dfti"),
    ("scipy", (256, 257), "scipy")])
def test_the_environment_overrides_the_rule(env, shape, expected, monkeypatch):
    monkeypatch.setenv("CUMATH_FFT_CPU_ENGINE", env)
    x = random_array(shape, "complex128")
    with F.FFT(x) as f:
        f.plan()
        assert served(f) == expected
        assert_close(f.execute(), fft_ref(x, None), "complex128")


@needs_both
def test_served_by_reads_back_every_plan_kind():
    x = random_array((4, 40), "complex128")  # a size no other test measures
    with F.FFT(x, axes=[-1], options={"cpu_engine": "fftw", "planning_effort": "estimate"}) as e, \
            F.FFT(x, axes=[-1], options={"cpu_engine": "mkl"}) as m, F.FFT(x, axes=[-1], options={"cpu_engine": "dfti"}) as d:
        for f in (e, m, d):
            f.plan()
        assert (served(e), served(m), served(d)) == ("fftw:estimate", "mkl", "dfti")
        assert served(e, +1) is None and served(d, +1) is None  # the other direction is planned on first use
        with F.FFT(x, axes=[-1], options={"planning_effort": "measure"}) as w:
            w.plan()
            assert served(w) == "fftw:measure"
        with F.FFT(x, axes=[-1]) as f:  # the process has wisdom now
            f.plan()
            assert served(f) == "fftw:wisdom"
        assert served(e) == "fftw:estimate"  # an explicit estimate plan stays what it was made as


# ------------------------------------------------------------------------- only what is needed is loaded

_CHILD = r"""
import json, sys
import numpy as np
import cumath.fft as F
from cumath._bindings._loader import loaded_libraries
kind = sys.argv[1]
out = {}
if kind == "small":
    x = np.random.default_rng(1).standard_normal((4, 2048)) + 0j
    F.fft(x, axes=[-1])
    out["served"] = None
else:
    x = (np.random.default_rng(1).standard_normal((192, 192)) + 0j).astype(np.complex64)
    f = F.FFT(x)
    f.plan()
    y = f.execute()
    out["served"] = f._executor.backend.served_by(-1)
    out["ok"] = bool(np.allclose(y, np.fft.fft2(x), atol=1e-3 * np.abs(x).sum() ** 0.5))
out["loaded"] = sorted(loaded_libraries())
if kind == "measure":  # the process learns wisdom: the DFTI plan moves to FFTW's measured plan
    with F.FFT(x, options={"planning_effort": "measure"}) as m:
        m.plan()
    y = f.execute()
    out["after"] = f._executor.backend.served_by(-1)
    out["ok_after"] = bool(np.allclose(y, np.fft.fft2(x), atol=1e-3 * np.abs(x).sum() ** 0.5))
print(json.dumps(out))
"""


def _child(kind, tmp_path):
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    env.pop("CUMATH_FFT_CPU_ENGINE", None)
    env.pop("CUMATH_FFT_BACKGROUND_PLANNING", None)
    r = subprocess.run([sys.executable, "-c", _CHILD, kind], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_both
def test_small_problems_never_load_mkl(tmp_path):
    out = _child("small", tmp_path)
    assert "fftw3" in out["loaded"] and "mkl_rt" not in out["loaded"], out


@needs_both
def test_dfti_problems_without_wisdom_do_not_load_fftw_until_wisdom_appears(tmp_path):
    out = _child("measure", tmp_path)
    assert out["served"] == "dfti" and out["ok"], out
    assert "mkl_rt" in out["loaded"] and not any(name.startswith("fftw3") for name in out["loaded"]), out
    assert out["after"] == "fftw:wisdom" and out["ok_after"], out


@needs_both
def test_a_wisdom_file_makes_fftw_look_first(tmp_path):
    # a first process measures (and saves wisdom); a second one starts with FFTW's plan from that wisdom
    out = _child("measure", tmp_path)
    assert out["after"] == "fftw:wisdom"
    again = _child("large", tmp_path)
    assert again["served"] == "fftw:wisdom" and again["ok"], again


@needs_both
def test_a_plan_made_without_fftw_serves_any_alignment_before_and_after_wisdom(monkeypatch):
    from cumath.fft._backends import dfti

    x = random_array((192, 200), "complex128")  # a size no other test measures
    buf = np.empty(x.size + 1, dtype=np.complex128)
    u = buf.view(np.uint8)[8:8 + 16 * x.size].view(np.complex128).reshape(x.shape)
    u[...] = x
    monkeypatch.setattr(dfti, "_may_have_wisdom", lambda geom: False)
    with F.FFT(u) as f:
        f.plan()
        plan = f._executor.backend
        assert plan.fftw is None and plan.align_mask == 0  # DFTI takes any alignment: calls go straight to it
        assert_close(f.execute(), fft_ref(x, None), "complex128")
        with F.FFT(x, options={"planning_effort": "measure"}) as m:
            m.plan()  # the process learns wisdom: FFTW's plan serves the problem from now on
        for operand in (x, u):  # aligned: FFTW, through execute (the executor does not check its alignment)
            f.reset_operand(operand)
            assert_close(f.execute(), fft_ref(x, None), "complex128")
            assert_close(f.execute(direction="inverse"), ifft_ref(x, None), "complex128")
        assert plan.served_by(-1) == "fftw:wisdom" and -1 not in plan.entries


def test_locatable_finds_without_loading(monkeypatch):
    from cumath._bindings import _loader

    if _loader.machine() != "aarch64":
        assert not _loader.locatable("nvpl_fftw")  # an Arm-only library is not looked for elsewhere
    if engine_available("fftw"):
        assert _loader.locatable("fftw3")
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(_loader, "_sys_path_dirs", lambda: [])
    monkeypatch.setattr(_loader.sys, "prefix", "/nonexistent")
    monkeypatch.setattr(_loader.sys, "base_prefix", "/nonexistent")
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    assert not _loader.locatable("mkl_rt") and not _loader.locatable("fftw3")
    assert _loader._loaded == {}  # nothing was loaded


@needs_both
def test_auto_skips_fftw_plus_dfti_when_mkl_cannot_be_found_or_loaded(monkeypatch):
    from cumath._bindings import _loader, mkl_dfti
    from cumath.config import plan_cache
    from cumath.fft import _backends

    monkeypatch.setattr(_backends.REGISTRY, "_made", {})
    monkeypatch.delenv("CUMATH_FFT_CPU_ENGINE", raising=False)
    real = _loader.locatable
    monkeypatch.setattr(_loader, "locatable", lambda name: False if name == "mkl_rt" else real(name))
    monkeypatch.setattr(mkl_dfti, "available", lambda: False)
    plan_cache.clear()
    try:
        assert _backends.cpu_engine("auto") == "fftw"
        x = random_array((256, 257), "complex128")
        with F.FFT(x) as f:
            f.plan()
            assert served(f) == "fftw:estimate"
            assert_close(f.execute(), fft_ref(x, None), "complex128")
    finally:
        plan_cache.clear()
