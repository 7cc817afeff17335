"""``execution=`` as nvmath-python code passes it: names in any case, dicts with or without 'name', and the
conflict of an options' device_id with a CPU execution; CUDA execution without a GPU is a RuntimeError."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumath as nvmath
from cumath._core.execution import ExecutionCPU, ExecutionCUDA, check_execution, merge_device_option
from helpers.reference import assert_close

RNG = np.random.default_rng(7)
x = RNG.standard_normal(11) + 1j * RNG.standard_normal(11)


@settings(max_examples=20, deadline=None, database=None)
@given(st.sampled_from(["cpu", "Cpu", "CPU", "cPu"]))
def test_cpu_any_case(name):
    assert isinstance(check_execution(name, None), ExecutionCPU)
    assert isinstance(check_execution({"name": name}, None), ExecutionCPU)
    assert_close(nvmath.fft.fft(x, execution=name), np.fft.fft(x), "complex128")


@pytest.mark.parametrize("name", ["cuda", "CUDA", "Cuda"])
def test_cuda_any_case(name):
    assert check_execution(name, None) == ExecutionCUDA(device_id=0)
    assert check_execution({"name": name, "device_id": 0}, 0) == ExecutionCUDA(device_id=0)


def test_dicts_without_name():
    assert check_execution({"num_threads": 2}, None) == ExecutionCPU(num_threads=2)
    assert check_execution({"num_threads": 2}, 0) == ExecutionCPU(num_threads=2)  # named the CPU
    assert check_execution({"device_id": 0}, None) == ExecutionCUDA(device_id=0)
    assert isinstance(check_execution({}, None), ExecutionCPU)        # where the operand is
    assert check_execution({}, 1) == ExecutionCUDA(device_id=1)
    assert_close(nvmath.fft.fft(x, execution={"num_threads": 1}), np.fft.fft(x), "complex128")


@pytest.mark.parametrize("execution,exc,fragment", [
    ({"num_threads": 2, "device_id": 0}, ValueError, "names both num_threads (CPU) and device_id (GPU)"),
    ({"name": "tpu"}, ValueError, "execution['name']='tpu' is not supported"),
    ({"name": "cpu", "device_id": 0}, TypeError, "unknown ExecutionCPU fields ['device_id']"),
    ({"threads": 2}, TypeError, "unknown ExecutionCPU fields ['threads']"),
    ("gpu", ValueError, "execution='gpu' is not supported; pass 'cpu', 'cuda' (in any case)"),
])
def test_bad_executions(execution, exc, fragment):
    with pytest.raises(exc) as info:
        check_execution(execution, None)
    assert fragment in str(info.value)


@pytest.mark.parametrize("execution", ["cpu", "CPU", {"name": "cpu"}, {"num_threads": 2}, ExecutionCPU()])
def test_device_id_with_cpu_execution_is_refused(execution):
    with pytest.raises(ValueError, match=r"options name device_id=1 \(a GPU\) but execution asks for the CPU"):
        nvmath.fft.fft(x, execution=execution, options={"device_id": 1})
    with pytest.raises(ValueError, match="execution asks for the CPU"):
        nvmath.fft.FFT.create_key(x, execution=execution, options={"device_id": 1})


def test_device_id_merges():
    assert merge_device_option(None, 1) == ExecutionCUDA(device_id=1)
    assert merge_device_option("cuda", 1) == ExecutionCUDA(device_id=1)
    assert merge_device_option(ExecutionCUDA(device_id=1), 1) == ExecutionCUDA(device_id=1)
    assert merge_device_option("cpu", None) == "cpu"
    with pytest.raises(ValueError, match="options name device_id=1 but execution asks for GPU 0"):
        merge_device_option(ExecutionCUDA(device_id=0), 1)


@pytest.mark.skipif(nvmath._core.cuda.device_count() > 0, reason="checks the machine without a usable GPU")
@pytest.mark.parametrize("execution", ["cuda", "CUDA", {"device_id": 0}, ExecutionCUDA()])
def test_cuda_unavailable_is_a_runtime_error(execution):
    with pytest.raises(RuntimeError, match="CUDA execution is not available"):
        nvmath.fft.fft(x, execution=execution)
    try:  # the fall-back nvmath-python code writes
        nvmath.fft.fft(x, execution=execution)
    except RuntimeError:
        y = nvmath.fft.fft(x, execution="cpu")
    assert_close(y, np.fft.fft(x), "complex128")
    with pytest.raises(ValueError):  # and still a ValueError, as cumath raised before
        nvmath.linalg.matmul(x, x.T, execution=execution)
