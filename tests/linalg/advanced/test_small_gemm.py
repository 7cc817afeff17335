"""The small-GEMM kernel's rules (which problems it takes, and why not), its variant sources (pure, compiled for
sm_90 through the JIT driver without a GPU), the engine's view of a planned product, and the one-call launcher
over a word list (native and ctypes fallback), checked against a stand-in cuLaunchKernel."""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies as st

from cumath._core import _fast
from cumath.linalg.advanced import _small_gemm as sg
from cumath.linalg.advanced._backends import small as small_engine


def problem(m=64, n=64, k=64, dtype="float32", out=None, compute=None, c=False, batch=1, d_col=False):
    out = out or dtype
    compute = compute or ("float64" if dtype == "float64" else "float32")
    d = (1, m) if d_col else (n, 1)
    return sg.SmallProblem(m, n, k, dtype, (k, 1), (n, 1), (n, 1) if c else None, d, batch,
                           m * k if batch > 1 else 0, k * n if batch > 1 else 0, m * n if c and batch > 1 else 0,
                           m * n, d_dtype=out, compute=compute)


# ------------------------------------------------------------------------------------ rules


@pytest.mark.parametrize("p", [problem(), problem(128, 128, 128), problem(1, 1, 1), problem(127, 3, 97, "float64"),
                               problem(dtype="float16"), problem(dtype="float16", out="float32"),
                               problem(dtype="bfloat16"), problem(dtype="bfloat16", out="float32"),
                               problem(64, 64, 64, batch=8), problem(32, 32, 32, batch=64, c=True)])
def test_small_problems_are_taken(p):
    ok, why = sg.decide(p)
    assert ok, why
    assert "small problem" in why


@pytest.mark.parametrize("p, reason", [
    (problem(dtype="complex64"), "dtype complex64"),
    (problem(dtype="float32", out="float16"), "float32 operands with a float16 result"),
    (problem(dtype="float64", compute="float32"), "accumulates float64 in float64"),
    (problem(129, 4, 4), "above the limits"), (problem(4, 129, 4), "above the limits"),
    (problem(4, 4, 129), "above the limits"),
    (problem(64, 64, 64, batch=9), "above 2097152: cuBLASLt's tiles win"),
    (problem(0, 4, 4), "empty problem"),
])
def test_other_problems_are_left_to_cublaslt(p, reason):
    ok, why = sg.decide(p)
    assert not ok and reason in why


def test_the_limits_are_a_parameter():
    tight = sg.Limits(max_m=8, max_n=8, max_k=8, max_work=512)
    assert sg.decide(problem(8, 8, 8), tight)[0]
    assert not sg.decide(problem(9, 8, 8), tight)[0]


def test_variant_defines_are_pure_and_name_unit_strides():
    p = problem(19, 23, 17)
    d1, d2 = sg.variant_defines(p), sg.variant_defines(p)
    assert d1 == d2 and sg.render(d1) == sg.render(d2)
    assert (d1["SA_K"], d1["SA_M"], d1["SB_N"], d1["SD_N"], d1["KC"]) == ("1", "sa_m", "1", "1", 32)
    assert (d1["A_MFAST"], d1["B_KFAST"], d1["D_MFAST"], d1["HAS_C"]) == (0, 0, 0, 0)
    col = sg.SmallProblem(19, 23, 17, "float64", (1, 19), (1, 17), (1, 19), (1, 19))
    assert (col.d_dtype, col.compute) == ("float64", "float64")  # the defaults
    d = sg.variant_defines(col)
    assert (d["A_MFAST"], d["B_KFAST"], d["D_MFAST"], d["HAS_C"], d["ACC"]) == (1, 1, 1, 1, "double")
    # a new shape of the same layout class is the same source (the extents are launch arguments)
    assert sg.render(sg.variant_defines(problem(20, 30, 25))) == sg.render(d1)
    assert sg.variant_defines(problem(k=100))["KC"] == 128


def test_launch_shape_follows_the_unit_axis_of_d():
    p = problem(33, 17, 5)
    assert sg.launch_shape(p, sg.variant_defines(p)) == ((2, 3, 1), 256)
    q = problem(33, 17, 5, d_col=True, batch=3)
    assert sg.launch_shape(q, sg.variant_defines(q)) == ((3, 2, 3), 256)


@given(m=st.integers(-2, 300), n=st.integers(-2, 300), k=st.integers(-2, 300), batch=st.integers(1, 40),
       dtype=st.sampled_from(["float32", "float64", "float16", "bfloat16", "complex64"]))
@settings(max_examples=60, deadline=None)
def test_property_decide_is_consistent(m, n, k, batch, dtype):
    p = sg.SmallProblem(m, n, k, dtype, (k, 1), (n, 1), None, (n, 1), batch)
    ok, why = sg.decide(p)
    expect = (dtype != "complex64" and 0 < m <= 128 and 0 < n <= 128 and 0 < k <= 128
              and m * n * k * batch <= 128 ** 3)
    assert ok == expect, why


def test_select_is_off_with_the_environment_variable(monkeypatch, caplog):
    monkeypatch.setenv("CUMATH_SMALL_MATMUL", "0")
    assert not sg.enabled()
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced._small_gemm"):
        assert sg.select(problem()) is None
    assert "CUMATH_SMALL_MATMUL=0" in caplog.text
    monkeypatch.setenv("CUMATH_SMALL_MATMUL", "1")
    assert sg.enabled()


def test_select_logs_why_not(caplog):
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced._small_gemm"):
        assert sg.select(problem(200, 4, 4)) is None
    assert "not chosen" in caplog.text and "above the limits" in caplog.text


def test_a_kernel_for_a_problem_out_of_bounds_is_refused():
    with pytest.raises(ValueError, match="cannot run this problem: m=200"):
        sg.SmallGemm(problem(200, 4, 4))


# ------------------------------------------------------------------------------------ the engine's view


def _product(m=16, n=16, k=16, dt_a="float32", dt_d=None, compute=68, epilog=1, conj=(False, False), inplace=False,
             c=None, c_copy=False, c_in_d=False, d_order="row", narrow=False):
    from cumath.linalg.advanced._backends import Product
    from cumath.linalg.advanced._traits import Matrix

    geom = SimpleNamespace(m=m, n=n, k=k, batch=1, a=Matrix(m, k, k, 1, 0), b=Matrix(k, n, n, 1, 0), c=c,
                           c_copy=c_copy)
    form = SimpleNamespace(d_order=d_order, c_in_d=c_in_d)
    dt = SimpleNamespace(a=dt_a, b=dt_a, c=dt_d or dt_a, d=dt_d or dt_a, compute=compute, narrow=narrow)
    return Product(geom, form, dt, epilog, conj, inplace, 0)


def test_the_engine_takes_plain_products_only():
    from cumath.linalg.advanced._options import MatmulComputeType as CT
    from cumath.linalg.advanced._traits import Matrix

    p = small_engine.small_problem(_product())
    assert p is not None and (p.m, p.compute, p.d_strides, p.c_strides) == (16, "float32", (16, 1), None)
    assert small_engine.small_problem(_product(d_order="col")).d_strides == (1, 16)
    assert small_engine.small_problem(_product(compute=int(CT.COMPUTE_32F_FAST_TF32))) is None  # TF32 asked
    assert small_engine.small_problem(_product(compute=int(CT.COMPUTE_32F_FAST_16F))) is None
    assert small_engine.small_problem(_product(dt_a="float16", compute=int(CT.COMPUTE_16F))) is None
    assert small_engine.small_problem(_product(dt_a="float64", compute=int(CT.COMPUTE_64F))).compute == "float64"
    assert small_engine.small_problem(_product(epilog=2)) is None  # RELU
    assert small_engine.small_problem(_product(conj=(True, False))) is None
    assert small_engine.small_problem(_product(inplace=True)) is None
    assert small_engine.small_problem(_product(narrow=True)) is None
    c = Matrix(16, 16, 16, 1, 0)
    assert small_engine.small_problem(_product(c=c)).c_strides == (16, 1)
    assert small_engine.small_problem(_product(c=c, c_copy=True)) is None  # broadcast c
    assert small_engine.small_problem(_product(c=c, c_in_d=True)).c_strides == (16, 1)  # read in place all the same


def test_the_engine_is_asked_first():
    from cumath.linalg.advanced._backends import ENGINES

    assert [e.name for e in ENGINES] == ["small", "memory_bound", "cublaslt"]


# ------------------------------------------------------------------------------------ the launcher

_LAUNCH_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *([ctypes.c_uint] * 7), ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)


class FakeLaunch:
    """A stand-in cuLaunchKernel that records its arguments and the values the kernelParams point at."""

    def __init__(self, nparams, status=0):
        self.calls, self.status, self.nparams = [], status, nparams
        self.cfn = _LAUNCH_T(self._call)
        self.address = ctypes.cast(self.cfn, ctypes.c_void_p).value

    def _call(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        vals = [ctypes.c_uint64.from_address(params[i]).value for i in range(self.nparams)]
        self.calls.append((f, (gx, gy, gz), (bx, by, bz), smem, stream or 0, vals, extra))
        return self.status


@pytest.fixture(params=["native", "ctypes"])
def launcher_kind(request, monkeypatch):
    if request.param == "native" and not _fast.NATIVE:
        pytest.skip("the C extension is not built")
    if request.param == "ctypes":
        monkeypatch.setattr(_fast, "_native", None)
    return request.param


def _make(fake, monkeypatch, on_error=None):
    fixed = (ctypes.c_uint64 * 2)(111, 222)
    base = ctypes.addressof(fixed)
    monkeypatch.setattr(_fast, "_cu_launch_kernel", lambda: _LAUNCH_T(fake.address))
    fn = _fast.launch_words(0xF00, (3, 2, 1), (256, 1, 1), 0, [None, None, base, None, base + 8],
                            [(3, 0), (5, 1), (10, 3)], 15, 16, on_error)
    return fn, fixed


def test_the_launcher_maps_words_to_parameters(launcher_kind, monkeypatch):
    fake = FakeLaunch(5)
    fn, _keep = _make(fake, monkeypatch)
    words = [0] * 16
    words[3], words[5], words[10], words[15] = 0xA000, 0xB000, 0xD000, 0x5
    assert fn(*words) == 0
    words[3], words[10] = 0xA100, 0xD100
    assert fn(*words) == 0
    (f, grid, block, smem, stream, vals, extra), second = fake.calls[0], fake.calls[1]
    assert (f, grid, block, smem, stream, extra) == (0xF00, (3, 2, 1), (256, 1, 1), 0, 5, None)
    assert vals == [0xA000, 0xB000, 111, 0xD000, 222]
    assert second[5] == [0xA100, 0xB000, 111, 0xD100, 222]


def test_the_launcher_reports_a_status(launcher_kind, monkeypatch):
    fake = FakeLaunch(5, status=700)
    seen = []
    fn, _keep = _make(fake, monkeypatch, on_error=seen.append)
    assert fn(*([0] * 16)) == 700 and seen == [700]
    with pytest.raises(TypeError, match="takes 16 positional arguments"):
        fn(*([0] * 15))


def test_the_native_launcher_checks_its_construction():
    if not _fast.NATIVE:
        pytest.skip("the C extension is not built")
    mk = _fast._native.launch_words
    with pytest.raises(ValueError, match="word_map holds"):
        mk(1, 1, 1, 1, 1, 1, 1, 1, 0, (None,), ((16, 0),), 0, 16, None)
    with pytest.raises(ValueError, match="at most 64 parameters"):
        mk(1, 1, 1, 1, 1, 1, 1, 1, 0, (None,) * 65, (), 0, 16, None)
    with pytest.raises(ValueError, match="non-zero launch and function"):
        mk(0, 1, 1, 1, 1, 1, 1, 1, 0, (None,), (), 0, 16, None)
    with pytest.raises(TypeError, match="on_error must be callable"):
        mk(1, 1, 1, 1, 1, 1, 1, 1, 0, (None,), (), 0, 16, 5)
    with pytest.raises(OverflowError):
        mk(1, 1, 2**33, 1, 1, 1, 1, 1, 0, (None,), (), 0, 16, None)


def test_a_bad_word_raises_in_a_subprocess():
    """A non-int word is a TypeError before any launch (run apart: a launcher misuse must not crash)."""
    if not _fast.NATIVE:
        pytest.skip("the C extension is not built")
    code = ("from cumath._core._fast import _native\n"
            "f = _native.launch_words(1, 1, 1, 1, 1, 1, 1, 1, 0, (None, None), ((0, 0), (1, 1)), 2, 3, None)\n"
            "try:\n    f('x', 0, 0)\nexcept TypeError as e:\n    print('TypeError', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ})
    assert out.returncode == 0 and "TypeError" in out.stdout, out.stderr


# ------------------------------------------------------------------------------------ compiles for sm_90


@pytest.mark.parametrize("p", [problem(), problem(19, 23, 17, "float64", c=True), problem(dtype="float16"),
                               problem(dtype="float16", out="float32", d_col=True),
                               problem(dtype="bfloat16", c=True), problem(5, 3, 128, "bfloat16", out="float32")])
def test_every_variant_compiles_for_sm_90(nvrtc_present, p):
    from cumath._core import jit

    art = jit.compile_source(sg.render(sg.variant_defines(p)), cc=90, names=(), what="a small-GEMM variant")
    assert art.kind == "cubin" and art.data[:4] == b"\x7fELF" and sg.KERNEL_NAME.encode() in art.data
