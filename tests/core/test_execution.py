"""Execution spaces (check_execution) and stream handles."""

from __future__ import annotations

import dataclasses

import pytest

from cumath import ExecutionCPU, ExecutionCUDA
from cumath._core.execution import available_cpus, check_execution
from cumath._core.streams import stream_handle

CPUS = available_cpus()


@pytest.mark.parametrize("execution,device,expected", [
    (None, None, ExecutionCPU(num_threads=CPUS)),
    (None, 0, ExecutionCUDA(device_id=0)),
    (None, 3, ExecutionCUDA(device_id=3)),
    ("cpu", None, ExecutionCPU(num_threads=CPUS)),
    ("cpu", 2, ExecutionCPU(num_threads=CPUS)),
    ("cuda", None, ExecutionCUDA(device_id=0)),
    ("cuda", 2, ExecutionCUDA(device_id=2)),
    ({"name": "cpu"}, None, ExecutionCPU(num_threads=CPUS)),
    ({"name": "cpu", "num_threads": 1}, None, ExecutionCPU(num_threads=1)),
    ({"name": "cuda"}, 1, ExecutionCUDA(device_id=1)),
    ({"name": "cuda", "device_id": 1}, None, ExecutionCUDA(device_id=1)),
    (ExecutionCPU(), None, ExecutionCPU(num_threads=CPUS)),
    (ExecutionCPU(num_threads=3), 0, ExecutionCPU(num_threads=3)),
    (ExecutionCUDA(), None, ExecutionCUDA(device_id=0)),
    (ExecutionCUDA(), 2, ExecutionCUDA(device_id=2)),
    (ExecutionCUDA(device_id=1), None, ExecutionCUDA(device_id=1)),
    (ExecutionCUDA(device_id=1), 1, ExecutionCUDA(device_id=1)),
])
def test_resolution(execution, device, expected):
    resolved = check_execution(execution, device)
    assert resolved == expected and type(resolved) is type(expected)
    assert resolved.name == ("cpu" if isinstance(expected, ExecutionCPU) else "cuda")


def test_cpu_count():
    assert CPUS >= 1


@pytest.mark.parametrize("execution,exc,fragment", [
    ("gpu", ValueError, "'cpu', 'cuda' (in any case), ExecutionCPU(...), ExecutionCUDA(...)"),
    (1, TypeError, "got int"),
    (["cpu"], TypeError, "got list"),
    ({"num_threads": 2, "device_id": 0}, ValueError, "names both num_threads (CPU) and device_id (GPU)"),
    ({"name": "host"}, ValueError, "execution['name']='host' is not supported"),
    ({"name": "cpu", "device_id": 0}, TypeError, "device_id"),
    ({"name": "cuda", "num_threads": 2}, TypeError, "num_threads"),
    ({"name": "cuda", "device_id": -1}, ValueError, "device_id must be a non-negative int"),
])
def test_errors(execution, exc, fragment):
    with pytest.raises(exc) as info:
        check_execution(execution, None)
    assert fragment in str(info.value)


def test_gpu_device_mismatch():
    with pytest.raises(ValueError) as info:
        check_execution(ExecutionCUDA(device_id=1), 0)
    assert "the operand is on GPU 0 but execution asks for GPU 1" in str(info.value)
    with pytest.raises(ValueError, match="on GPU 2 but execution asks for GPU 0"):
        check_execution({"name": "cuda", "device_id": 0}, 2)


@pytest.mark.parametrize("cls,field,bad", [(ExecutionCPU, "num_threads", 0), (ExecutionCPU, "num_threads", "2"),
                                           (ExecutionCUDA, "device_id", -1), (ExecutionCUDA, "device_id", 0.0)])
def test_dataclass_validation(cls, field, bad):
    with pytest.raises(ValueError, match=f"{field} must be a"):
        cls(**{field: bad})


def test_dataclasses_are_frozen_keyword_only_and_hashable():
    e = ExecutionCPU(num_threads=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.num_threads = 3
    with pytest.raises(TypeError):
        ExecutionCPU(2)
    assert hash(e) == hash(ExecutionCPU(num_threads=2)) and e != ExecutionCUDA()
    assert {ExecutionCUDA(device_id=0): 1}[ExecutionCUDA(device_id=0)] == 1


# ---------------------------------------------------------------------------------------------- streams

class CudaStreamProtocol:
    def __cuda_stream__(self):
        return (0, 1234)


class CupyLike:
    ptr = 11


class TorchLike:
    cuda_stream = 12


class CudaCoreLike:
    handle = 13


@pytest.mark.parametrize("stream,handle", [(0, 0), (77, 77), (CudaStreamProtocol(), 1234), (CupyLike(), 11),
                                           (TorchLike(), 12), (CudaCoreLike(), 13)],
                         ids=["zero", "int", "protocol", "cupy", "torch", "cuda.core"])
def test_stream_handle(stream, handle):
    assert stream_handle(stream) == handle


@pytest.mark.parametrize("bad", ["stream", 1.5, object()], ids=["str", "float", "object"])
def test_stream_handle_errors(bad):
    with pytest.raises(TypeError, match="stream must be an int .cudaStream_t., an object with __cuda_stream__"):
        stream_handle(bad)
