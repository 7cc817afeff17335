"""check_options / check_choice and the FFT options dataclass."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from cumath._core.options import check_choice, check_options
from cumath.fft import FFTDirection, FFTOptions
from cumath.memory import CudaRuntimeMemoryManager


@dataclasses.dataclass(frozen=True, kw_only=True)
class Opts:
    alpha: int = 1
    mode: str = "a"


def test_none_gives_defaults():
    assert check_options(None, Opts) == Opts()


def test_object_is_returned_as_is():
    o = Opts(alpha=3)
    assert check_options(o, Opts) is o


def test_dict_builds_the_object():
    assert check_options({"alpha": 5}, Opts) == Opts(alpha=5)
    assert check_options({}, Opts) == Opts()


def test_unknown_keys_are_listed_with_the_allowed_names():
    with pytest.raises(TypeError) as info:
        check_options({"alpha": 1, "beta": 2, "gamma": 3}, Opts, "test options")
    msg = str(info.value)
    assert "unknown test options ['beta', 'gamma'] for Opts" in msg and "['alpha', 'mode']" in msg


@pytest.mark.parametrize("bad", [3, "alpha", [("alpha", 1)], FFTOptions()], ids=["int", "str", "list", "other"])
def test_wrong_type(bad):
    with pytest.raises(TypeError, match=f"options must be a Opts, a dict of its fields or None, not {type(bad).__name__}"):
        check_options(bad, Opts)


def test_check_choice():
    check_choice("mode", "a", ("a", "b"))
    with pytest.raises(ValueError, match=r"mode='c' is not supported; the allowed values are \['a', 'b'\]"):
        check_choice("mode", "c", ("a", "b"))


def test_fft_options_defaults():
    o = FFTOptions()
    assert (o.fft_type, o.inplace, o.last_axis_parity, o.result_layout, o.device_id, o.logger, o.blocking,
            o.allocator, o.cpu_engine, o.planning_effort) == (None, False, "even", "optimized", None, None, "auto",
                                                              None, "auto", None)


def test_fft_options_frozen_and_keyword_only():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FFTOptions().inplace = True
    with pytest.raises(TypeError):
        FFTOptions("C2C")


def test_fft_options_equality_ignores_logger_and_allocator():
    a = FFTOptions(inplace=True, logger=logging.getLogger("a"), allocator=CudaRuntimeMemoryManager(0))
    b = FFTOptions(inplace=True, logger=logging.getLogger("b"))
    assert a == b and hash(a) == hash(b)
    assert a != FFTOptions(inplace=False)
    assert FFTOptions(cpu_engine="scipy") != FFTOptions(cpu_engine="fftw")
    assert FFTOptions(planning_effort="measure") != FFTOptions()


@pytest.mark.parametrize("field,values", [
    ("fft_type", ["C2C", "R2C", "C2R", None]), ("inplace", [True, False]),
    ("last_axis_parity", ["even", "odd"]), ("result_layout", ["natural", "optimized"]),
    ("blocking", [True, "auto"]), ("cpu_engine", ["auto", "fftw", "mkl", "scipy"]),
    ("planning_effort", [None, "estimate", "measure", "patient", "exhaustive"]),
])
def test_fft_options_accept_every_allowed_value(field, values):
    for v in values:
        assert getattr(FFTOptions(**{field: v}), field) == v


def test_fft_direction_values():
    assert FFTDirection.FORWARD == -1 and FFTDirection.INVERSE == 1
    assert FFTDirection["FORWARD"] is FFTDirection.FORWARD
