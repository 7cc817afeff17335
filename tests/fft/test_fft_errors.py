"""Every error path of cumath.fft: the exception type and what its message says."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import cumath
import cumath.fft as F
from cumath.errors import CumathError, InvalidStateError
from helpers.matrix import engine_available, have_module, random_array

C = (4, 6)


def cplx(shape=C, dtype="complex128"):
    return random_array(shape, dtype)


def real(shape=C, dtype="float64"):
    return random_array(shape, dtype)


FUNCTIONS = {"fft": F.fft, "ifft": F.ifft, "rfft": F.rfft, "irfft": F.irfft}
with_torch = pytest.mark.skipif(not have_module("torch"), reason="torch is not installed")


def raises(exc, fragment, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert fragment in str(info.value), str(info.value)
    return info.value


# ---------------------------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
def test_integer_and_bool_operands(name, dtype):
    x = np.random.default_rng().integers(1, 5, size=C).astype(dtype)
    raises(TypeError, "is not supported for FFT; the supported dtypes are", FUNCTIONS[name], x)


@pytest.mark.parametrize("name", ["fft", "ifft"])
def test_c2c_on_real_input_says_use_rfft(name):
    raises(TypeError, "use rfft", FUNCTIONS[name], real())


def test_rfft_on_complex_input():
    raises(TypeError, "R2C FFTs need a real operand", F.rfft, cplx())


def test_irfft_on_real_input():
    raises(TypeError, "C2R FFTs need a complex operand", F.irfft, real())


def test_unsupported_numpy_dtype():
    x = np.array(["2024-01-01", "2025-06-30"], dtype="datetime64[s]")
    raises(TypeError, "NumPy dtype datetime64[s] is not supported", F.fft, x)


def test_float16_on_cpu_mentions_gpu():
    e = raises(TypeError, "run on the GPU only", F.rfft, real(dtype="float16"))
    assert "execution='cuda'" in str(e)


@with_torch
@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("dtype,fn", [("float16", F.rfft), ("complex32", F.fft)])
def test_half_precision_torch_on_cpu_mentions_gpu(dtype, fn):
    import torch

    x = torch.from_numpy(real((4, 8), "float32"))
    x = x.to(torch.float16) if dtype == "float16" else torch.complex(x, x).to(torch.complex32)
    raises(TypeError, "run on the GPU only", fn, x)


@with_torch
def test_bfloat16_is_not_supported():
    import torch

    raises(TypeError, "bfloat16 is not supported for FFT", F.rfft, torch.from_numpy(real()).to(torch.bfloat16))


# ---------------------------------------------------------------------------------------------- operands

@pytest.mark.parametrize("bad", [[1.0, 2.0], "abc", object(), 3.5], ids=["list", "str", "object", "float"])
def test_non_arrays(bad):
    raises(TypeError, "numpy.ndarray, cupy.ndarray, torch.Tensor", F.fft, bad)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_empty_operands(shape):
    raises(ValueError, "is empty; every dimension must be at least 1", F.fft, np.empty(shape, "complex128"))


def test_zero_d_operand():
    raises(ValueError, "scalar (0-d)", F.fft, np.asarray(1.5 + 2j))


# ---------------------------------------------------------------------------------------------- axes

@pytest.mark.parametrize("axes", [(2,), (-3,), (0, 5)])
def test_axes_out_of_range(axes):
    raises(ValueError, "out of range for an operand with 2 dimensions", F.fft, cplx(), axes)


@pytest.mark.parametrize("axes", [(0, 0), (2, -1), (0, 1, 0)])
def test_repeated_axes(axes):
    raises(ValueError, "repeat an axis", F.fft, cplx((3, 4, 5)), axes)


def test_more_than_three_axes():
    raises(ValueError, "at most 3 FFT axes", F.fft, cplx((2, 3, 4, 5)), (0, 1, 2, 3))


def test_four_d_operand_without_axes():
    e = raises(ValueError, "4 dimensions", F.fft, cplx((2, 3, 4, 5)))
    assert "pass axes=" in str(e)


def test_empty_axes():
    raises(ValueError, "at least one axis", F.fft, cplx(), ())


@pytest.mark.parametrize("axes", [1, 1.5])
def test_axes_not_a_sequence(axes):
    raises(TypeError, "axes must be a sequence of ints", F.fft, cplx(), axes)


def test_axes_not_a_sequence_stateful():
    raises(TypeError, "axes must be a sequence of ints", F.FFT, cplx(), axes=1)


# ---------------------------------------------------------------------------------------------- C2R sizes

def test_c2r_size_one_last_axis_even_says_use_odd():
    e = raises(ValueError, "use last_axis_parity='odd'", F.irfft, cplx((4, 1)))
    assert "size 1" in str(e)


def test_c2r_size_one_last_axis_odd_works():
    y = F.irfft(cplx((4, 1)), options={"last_axis_parity": "odd"})
    assert y.shape == (4, 1)


# ---------------------------------------------------------------------------------------------- in-place

@pytest.mark.parametrize("name,x", [("rfft", real()), ("irfft", cplx())])
def test_inplace_with_r2c_c2r(name, x):
    raises(ValueError, "inplace=True is supported for C2C FFTs only", FUNCTIONS[name], x,
           options={"inplace": True})


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "after-a-cached-writeable-call"])
def test_inplace_on_read_only_numpy(warm):
    if warm:  # a cached plan of the same shape must not bypass the check
        F.fft(cplx(), options={"inplace": True})
    x = cplx()
    x.setflags(write=False)
    before = x.copy()
    raises(ValueError, "read-only", F.fft, x, options={"inplace": True})
    np.testing.assert_array_equal(x, before)


def test_inplace_reset_operand_read_only():
    f = F.FFT(cplx(), options={"inplace": True})
    x = cplx()
    x.setflags(write=False)
    raises(ValueError, "read-only", f.reset_operand, x)
    f.free()


# ---------------------------------------------------------------------------------------------- options

def test_unknown_option_names_list_allowed_names():
    e = raises(TypeError, "unknown FFT options ['speed']", F.fft, cplx(), options={"speed": 3})
    for name in ("fft_type", "inplace", "last_axis_parity", "result_layout", "cpu_engine", "planning_effort"):
        assert name in str(e)


def test_unknown_option_name_in_the_dataclass():
    raises(TypeError, "unexpected keyword argument 'speed'", F.FFTOptions, speed=3)


@pytest.mark.parametrize("name,value,fragment", [
    ("fft_type", "R2R", "['C2C', 'R2C', 'C2R']"),
    ("inplace", "yes", "[True, False]"),
    ("last_axis_parity", "both", "['even', 'odd']"),
    ("result_layout", "fast", "['natural', 'optimized']"),
    ("blocking", False, "[True, 'auto']"),
    ("cpu_engine", "cuda", "['auto', 'fftw', 'mkl', 'scipy', 'dfti', 'fftw+dfti', 'nvpl']"),
    ("planning_effort", "max", "['estimate', 'measure', 'patient', 'exhaustive']"),
])
def test_bad_option_values_list_allowed_values(name, value, fragment):
    e = raises(ValueError, fragment, F.fft, cplx(), options={name: value})
    assert f"{name}={value!r}" in str(e)
    raises(ValueError, fragment, F.FFTOptions, **{name: value})


def test_logger_of_the_wrong_type():
    raises(TypeError, "logger must be a logging.Logger", F.FFTOptions, logger="cumath")
    F.FFTOptions(logger=logging.getLogger("ok"))


@pytest.mark.parametrize("options", [3, "C2C", ["inplace"]], ids=["int", "str", "list"])
def test_options_of_the_wrong_type(options):
    raises(TypeError, "must be a FFTOptions, a dict of its fields or None", F.fft, cplx(), options=options)


def test_fft_type_conflicting_with_the_function():
    raises(ValueError, "performs C2C FFTs but options.fft_type='R2C'", F.fft, cplx(), options={"fft_type": "R2C"})


# ---------------------------------------------------------------------------------------------- direction

@pytest.mark.parametrize("direction", ["sideways", 0, 2, "forwards", None.__class__])
def test_bad_direction_values(direction):
    e = raises(ValueError, "the allowed values are FFTDirection.FORWARD", F.fft, cplx(), direction=direction)
    assert "is not supported" in str(e)


def test_bad_direction_stateful():
    with F.FFT(cplx()) as f:
        f.plan()
        raises(ValueError, "direction='up' is not supported", f.execute, direction="up")


@pytest.mark.parametrize("where", ["execute", "plan"])
def test_r2c_with_inverse_direction(where):
    with F.FFT(real()) as f:
        if where == "plan":
            raises(ValueError, "R2C FFT is a forward transform", f.plan, direction=F.FFTDirection.INVERSE)
        else:
            f.plan()
            raises(ValueError, "R2C FFT is a forward transform", f.execute, direction=F.FFTDirection.INVERSE)


@pytest.mark.parametrize("where", ["execute", "plan"])
def test_c2r_with_forward_direction(where):
    with F.FFT(cplx(), options={"fft_type": "C2R"}) as f:
        if where == "plan":
            raises(ValueError, "C2R FFT is an inverse transform", f.plan, direction="forward")
        else:
            f.plan()
            raises(ValueError, "C2R FFT is an inverse transform", f.execute, direction=F.FFTDirection.FORWARD)


# ---------------------------------------------------------------------------------------------- execution

@pytest.mark.parametrize("execution,exc,fragment", [
    ("gpu", ValueError, "execution='gpu' is not supported; pass 'cpu', 'cuda'"),
    (3, TypeError, "execution must be 'cpu', 'cuda'"),
    ({"name": "tpu"}, ValueError, "execution['name']='tpu' is not supported; pass 'cpu', 'cuda'"),
    ({"num_threads": 2, "device_id": 0}, ValueError, "names both num_threads (CPU) and device_id (GPU)"),
    ({"name": "cpu", "num_threads": 0}, ValueError, "num_threads must be a positive int"),
    ({"name": "cpu", "threads": 2}, TypeError, "'threads'"),
], ids=["gpu", "int", "dict-tpu", "dict-both-spaces", "dict-zero-threads", "dict-unknown-key"])
def test_bad_execution(execution, exc, fragment):
    raises(exc, fragment, F.fft, cplx(), execution=execution)


@pytest.mark.parametrize("threads", [0, -2, 1.5])
def test_execution_cpu_bad_num_threads(threads):
    raises(ValueError, "num_threads must be a positive int or None", cumath.ExecutionCPU, num_threads=threads)


# ---------------------------------------------------------------------------------------------- callbacks

@pytest.mark.parametrize("name", ["prolog", "epilog"])
@pytest.mark.parametrize("fn", ["fft", "rfft", "irfft"])
def test_callbacks_with_cpu_execution(name, fn):
    x = real() if fn == "rfft" else cplx()
    raises(ValueError, "not supported with CPU execution", FUNCTIONS[fn], x, **{name: b"ltoir"})


def test_callbacks_with_cpu_execution_stateful():
    with F.FFT(cplx()) as f:
        raises(ValueError, "not supported with CPU execution", f.plan, prolog=b"ltoir")


# ---------------------------------------------------------------------------------------------- packages

@with_torch
def test_mixed_packages_in_reset_operand():
    import torch

    x = cplx()
    with F.FFT(x) as f:
        f.plan()
        raises(ValueError, "package torch (planned: numpy)", f.reset_operand, torch.from_numpy(cplx()))


@with_torch
def test_mixed_packages_check_same_place():
    import torch

    from cumath._core.operand import check_same_place, wrap_operand

    ops = {"a": wrap_operand(cplx()), "b": wrap_operand(torch.from_numpy(cplx()))}
    raises(TypeError, "b is a torch array while a is a numpy array", check_same_place, ops)


def test_errors_share_a_base():
    assert issubclass(F.UnsupportedLayoutError, CumathError) and issubclass(F.UnsupportedLayoutError, ValueError)
    assert issubclass(InvalidStateError, CumathError)


def test_cuda_execution_without_a_gpu_says_what_to_do():
    from tests.conftest import GPU

    if GPU:
        pytest.skip("this machine has a GPU")
    x = np.ones(8) + 1j
    with pytest.raises(ValueError, match="no CUDA GPU is usable here.*execution='cpu'"):
        cumath.fft.fft(x, execution="cuda")


# ---------------------------------------------------------------------------------------------- CPU engines

class _Missing:
    """A CPU engine whose library is not installed."""

    def __init__(self, name):
        self.name = name

    def load(self):
        from cumath.errors import LibraryNotFoundError

        raise LibraryNotFoundError(f"{self.name} is missing; pip install cumath[{self.name}]")


@pytest.fixture
def engines(monkeypatch):
    """The CPU engine registry, with engines made afresh (tests replace some by missing ones)."""
    from cumath.config import plan_cache
    from cumath.fft import _backends

    monkeypatch.setattr(_backends.REGISTRY, "_made", {})
    monkeypatch.delenv("CUMATH_FFT_CPU_ENGINE", raising=False)
    plan_cache.clear()
    yield _backends
    plan_cache.clear()


def test_the_environment_variable_picks_the_engine_for_auto(engines, monkeypatch):
    monkeypatch.setenv("CUMATH_FFT_CPU_ENGINE", "scipy")
    assert engines.cpu_engine("auto") == "scipy"
    if engine_available("fftw"):
        assert engines.cpu_engine("fftw") == "fftw"  # an engine named in the options is taken as named
    monkeypatch.setenv("CUMATH_FFT_CPU_ENGINE", "fastest")
    e = raises(ValueError, "CUMATH_FFT_CPU_ENGINE='fastest' is not supported; use auto, fftw, mkl, scipy, dfti, fftw+dfti or nvpl",
               F.fft, cplx())
    assert isinstance(e, ValueError)
    x = cplx()
    np.testing.assert_allclose(F.fft(x, options={"cpu_engine": "scipy"}), np.fft.fftn(x), rtol=1e-12)


def test_auto_takes_the_first_engine_that_loads(engines, monkeypatch):
    monkeypatch.setitem(engines.ENGINES, "fftw", lambda: _Missing("fftw"))
    monkeypatch.setitem(engines.ENGINES, "mkl", lambda: _Missing("mkl"))
    assert engines.cpu_engine("auto") == "scipy"
    x = cplx()
    np.testing.assert_allclose(F.fft(x), np.fft.fftn(x), rtol=1e-12)
    raises(OSError, "pip install cumath[mkl]", F.fft, cplx(), options={"cpu_engine": "mkl"})
    monkeypatch.setitem(engines.ENGINES, "scipy", lambda: _Missing("scipy"))
    monkeypatch.setattr(engines.REGISTRY, "_made", {})
    raises(OSError, "pip install cumath[scipy]", engines.cpu_backend, "auto")  # the last one's error
