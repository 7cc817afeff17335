"""Enum-valued string options in any case, as nvmath-python accepts them: FFT directions, fft_type,
result_layout, last_axis_parity (one rule for every domain: cumath._core.options)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumath as nvmath
from cumath._core.options import check_choice, check_enum, set_choice
from helpers.reference import assert_close

RNG = np.random.default_rng(18)


def cplx(shape=(17,)):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def casings(word):
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda flags: "".join(c.upper() if f else c.lower() for c, f in zip(word, flags)))


@settings(max_examples=25, deadline=None, database=None)
@given(st.sampled_from(["forward", "inverse"]).flatmap(lambda w: st.tuples(st.just(w), casings(w))))
def test_direction_any_case(pair):
    word, spelled = pair
    x = cplx()
    want = np.fft.fft(x) if word == "forward" else np.fft.ifft(x) * x.shape[-1]
    assert_close(nvmath.fft.fft(x, direction=spelled), want, "complex128")
    with nvmath.fft.FFT(x) as f:
        f.plan()
        assert_close(f.execute(direction=spelled), want, "complex128")


@pytest.mark.parametrize("spelled", ["c2c", "C2c", "C2C"])
def test_fft_type_any_case(spelled):
    o = nvmath.fft.FFTOptions(fft_type=spelled)
    assert o.fft_type == "C2C" and o == nvmath.fft.FFTOptions(fft_type="C2C")
    assert hash(o) == hash(nvmath.fft.FFTOptions(fft_type="C2C"))
    x = cplx((5, 7))
    assert_close(nvmath.fft.fft(x, options={"fft_type": spelled}), np.fft.fftn(x), "complex128")


@pytest.mark.parametrize("field,spelled,canonical", [
    ("result_layout", "NATURAL", "natural"), ("result_layout", "Optimized", "optimized"),
    ("last_axis_parity", "ODD", "odd"), ("cpu_engine", "SciPy", "scipy"), ("callback_fusion", "FUSED", "fused"),
    ("planning_effort", "Estimate", "estimate"),
])
def test_fft_string_options_any_case(field, spelled, canonical):
    assert getattr(nvmath.fft.FFTOptions(**{field: spelled}), field) == canonical


def test_natural_layout_string_runs():
    x = cplx((4, 6, 5)).transpose(2, 0, 1)
    y = nvmath.fft.fft(x, axes=[0], options={"result_layout": "NATURAL"})
    assert_close(y, np.fft.fft(x, axis=0), "complex128")


def test_irfft_parity_any_case():
    x = RNG.standard_normal(9)
    y = nvmath.fft.rfft(x)
    assert_close(nvmath.fft.irfft(y, options={"last_axis_parity": "ODD"}), x * 9, "float64")


@pytest.mark.parametrize("bad", ["sideways", "C2Q", ""])
def test_unknown_strings_still_refused(bad):
    with pytest.raises(ValueError, match="is not supported; the allowed values are"):
        nvmath.fft.FFTOptions(fft_type=bad)
    with pytest.raises(ValueError, match="direction=.* is not supported"):
        nvmath.fft.fft(cplx(), direction=bad or "x")


def test_core_helpers():
    assert check_choice("x", "FuSeD", ("auto", "fused")) == "fused"
    assert check_choice("x", True, (True, False)) is True
    with pytest.raises(ValueError, match=r"x='no' is not supported; the allowed values are \['a', 'b'\] \(in any case\)"):
        check_choice("x", "no", ("a", "b"))
    E = nvmath.fft.FFTDirection
    assert check_enum("d", "Forward", E) is E.FORWARD and check_enum("d", 1, E) is E.INVERSE
    with pytest.raises(ValueError, match="FFTDirection.FORWARD"):
        check_enum("d", "up", E)

    class Holder:
        mode = "AUTO"

    h = Holder()
    set_choice(h, "mode", ("auto", "fused"))
    assert h.mode == "auto"


def test_matmul_epilog_and_compute_type_strings():
    la = nvmath.linalg.advanced
    from cumath.linalg.advanced._epilogs import epilog_spec

    assert epilog_spec("relu_bias").epilog is la.MatmulEpilog.RELU_BIAS
    assert la.MatmulOptions(compute_type=nvmath.linalg.ComputeType.COMPUTE_32F_FAST_16F).compute_type == 74
