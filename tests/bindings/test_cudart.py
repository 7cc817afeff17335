"""The CUDA runtime, driver, NVRTC and nvJitLink over cuda-bindings, without a GPU: enum values (cuda-bindings'
against cuda_runtime_api.h / driver_types.h of CUDA 13), the flag constants, the translation of statuses into
cumath's error classes, the wrappers' outputs over a fake binding, laziness (``import cumath`` imports no
cuda-bindings), and the errors that name the extra when cuda-bindings is missing or built for another CUDA."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath._bindings import _loader, cuda, cudart, nvjitlink, nvrtc
from cumath._bindings._cuda_bindings import LazyModule
from cumath._bindings._loader import LibrarySpec
from cumath.errors import CUDADriverError, CUDARuntimeError, LibraryNotFoundError, NVJitLinkError, NVRTCError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def rt():
    return pytest.importorskip("cuda.bindings.runtime", reason="cuda-bindings is not installed")


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env})


# -------------------------------------------------------------------------------------------- enums

@pytest.mark.parametrize("enum_name, member, value", [
    ("cudaError_t", "cudaSuccess", 0),
    ("cudaError_t", "cudaErrorInvalidValue", 1),
    ("cudaError_t", "cudaErrorMemoryAllocation", 2),
    ("cudaError_t", "cudaErrorInsufficientDriver", 35),
    ("cudaError_t", "cudaErrorNoDevice", 100),
    ("cudaError_t", "cudaErrorInvalidResourceHandle", 400),
    ("cudaError_t", "cudaErrorNotReady", 600),
    ("cudaError_t", "cudaErrorIllegalAddress", 700),
    ("cudaError_t", "cudaErrorLaunchFailure", 719),
    ("cudaError_t", "cudaErrorTensorMemoryLeak", 721),
    ("cudaError_t", "cudaErrorFabricNotReady", 919),
    ("cudaError_t", "cudaErrorUnknown", 999),
    ("cudaError_t", "cudaErrorApiFailureBase", 10000),
    ("cudaMemcpyKind", "cudaMemcpyHostToHost", 0),
    ("cudaMemcpyKind", "cudaMemcpyHostToDevice", 1),
    ("cudaMemcpyKind", "cudaMemcpyDeviceToHost", 2),
    ("cudaMemcpyKind", "cudaMemcpyDeviceToDevice", 3),
    ("cudaMemcpyKind", "cudaMemcpyDefault", 4),
    ("cudaMemoryType", "cudaMemoryTypeUnregistered", 0),
    ("cudaMemoryType", "cudaMemoryTypeHost", 1),
    ("cudaMemoryType", "cudaMemoryTypeDevice", 2),
    ("cudaMemoryType", "cudaMemoryTypeManaged", 3),
    ("cudaDeviceAttr", "cudaDevAttrMultiProcessorCount", 16),
    ("cudaDeviceAttr", "cudaDevAttrComputeCapabilityMajor", 75),
    ("cudaDeviceAttr", "cudaDevAttrComputeCapabilityMinor", 76),
    ("cudaDeviceAttr", "cudaDevAttrMaxSharedMemoryPerBlockOptin", 97),
    ("cudaDeviceAttr", "cudaDevAttrMemoryPoolsSupported", 115),
    ("cudaDeviceAttr", "cudaDevAttrTensorMapLargeTensorMinSize", 160),])
def test_runtime_enum_values(rt, enum_name, member, value):
    assert int(getattr(getattr(cudart, enum_name), member)) == value
    assert getattr(cudart, enum_name) is getattr(rt, enum_name)  # cuda-bindings' own enum


def test_flag_constants_equal_cuda_bindings(rt):
    flags = [n for n in cudart.__all__ if n.startswith(("cudaHost", "cudaStream", "cudaEvent", "cudaMemAttach"))
             and isinstance(getattr(cudart, n), int) and not callable(getattr(cudart, n))]
    flags += ["cudaCpuDeviceId", "cudaInvalidDeviceId"]
    assert len(flags) >= 25
    for name in flags:
        assert getattr(cudart, name) == getattr(rt, name), name


def test_library_types_stay_importable_without_cuda_bindings():
    r = _run("import sys; sys.modules['cuda'] = None\n"
             "from cumath._bindings import cudart, cufft\n"
             "print(int(cudart.cudaDataType.CUDA_C_64F), int(cudart.libraryPropertyType.PATCH_LEVEL))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["5", "2"]


# --------------------------------------------------------------------------------- status translation

def test_runtime_check_names_the_status(rt):
    assert cudart.check(0) is None
    assert cudart.check(rt.cudaError_t.cudaSuccess) is None
    with pytest.raises(CUDARuntimeError, match=r"^CUDA runtime failed with cudaErrorMemoryAllocation \(2\)$") as info:
        cudart.check(2)
    assert (info.value.status, info.value.name, info.value.library) == (2, "cudaErrorMemoryAllocation", "CUDA runtime")
    with pytest.raises(CUDARuntimeError, match=r"cudaErrorInvalidValue \(1\): while x"):
        cudart.check(rt.cudaError_t.cudaErrorInvalidValue, "while x")
    with pytest.raises(CUDARuntimeError, match=r"status 123457 \(123457\)"):
        cudart.check(123457)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_runtime_status_becomes_its_named_error(rt, data):
    member = data.draw(st.sampled_from([m for m in rt.cudaError_t if int(m) != 0]))
    for status in (int(member), member):
        with pytest.raises(CUDARuntimeError) as info:
            cudart.check(status)
        assert info.value.status == int(member) and info.value.name == member.name
        assert str(info.value) == f"CUDA runtime failed with {member.name} ({int(member)})"


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_driver_and_nvrtc_status_becomes_its_named_error(rt, data):
    from cuda.bindings import driver as d
    from cuda.bindings import nvrtc as n

    for check, enum, cls in ((cuda.check, d.CUresult, CUDADriverError), (nvrtc.check, n.nvrtcResult, NVRTCError)):
        member = data.draw(st.sampled_from([m for m in enum if int(m) != 0]))
        with pytest.raises(cls) as info:
            check(int(member), "detail")
        assert (info.value.status, info.value.name) == (int(member), member.name)
        assert str(info.value).endswith(f"{member.name} ({int(member)}): detail")


def test_nvjitlink_statuses_carry_the_c_names(rt):
    from cuda.bindings import nvjitlink as j

    for m in j.Result:
        if int(m):
            with pytest.raises(NVJitLinkError, match=rf"NVJITLINK_{m.name} \({int(m)}\)"):
                nvjitlink.check(int(m))
    assert nvjitlink.nvJitLinkInputType.NVJITLINK_INPUT_LTOIR == 3
    assert nvjitlink.nvJitLinkResult.NVJITLINK_ERROR_NVVM_COMPILE == 5


def test_without_a_gpu_runtime_calls_raise_the_runtime_error(rt):
    from cumath._core.cuda import device_count

    if device_count():
        pytest.skip("a GPU is present")
    for call, args in ((cudart.cudaGetDeviceCount, ()), (cudart.cudaMallocAsync, (256, 0)),
                       (cudart.cudaMemcpyAsync, (4096, 8192, 16, 3, 0)), (cudart.cudaPointerGetAttributes, (4096,)),
                       (cudart.cudaMemsetAsync, (4096, 0, 16, 0)), (cudart.cudaGetDeviceName, (0,))):
        with pytest.raises(CUDARuntimeError, match=r"cudaError(InsufficientDriver|NoDevice)"):
            call(*args)


# ------------------------------------------------------------------------------ wrappers over a fake binding

@pytest.fixture
def fake_rt(monkeypatch, rt):
    """Replace functions of the lazily imported runtime binding (LazyModule attributes) for one test."""
    def install(**fns):
        for name, fn in fns.items():
            monkeypatch.setattr(cudart._rt, name, fn)
    return install


def test_wrappers_return_plain_values(fake_rt, rt):
    ok = rt.cudaError_t.cudaSuccess
    fake_rt(cudaGetDevice=lambda: (ok, 3), cudaMalloc=lambda n: (ok, 0x7000 + n), cudaMemGetInfo=lambda: (ok, 5, 9),
            cudaStreamCreateWithFlags=lambda f: (ok, rt.cudaStream_t(0x1234 + f)),
            cudaEventCreateWithFlags=lambda f: (ok, rt.cudaEvent_t(0x4321)),
            cudaEventElapsedTime=lambda a, b: (ok, 1.5),
            cudaPointerGetAttributes=lambda p: (ok, SimpleNamespace(type=rt.cudaMemoryType.cudaMemoryTypeDevice,
                                                                    device=1)),
            cudaGetDeviceProperties=lambda d: (ok, SimpleNamespace(name=b"NVIDIA H200\0\0junk")))
    assert cudart.cudaGetDevice() == 3
    assert cudart.cudaMalloc(16) == 0x7010
    assert cudart.cudaMemGetInfo() == (5, 9)
    s = cudart.cudaStreamCreateWithFlags(1)
    assert s == 0x1235 and type(s) is int
    assert cudart.cudaEventCreateWithFlags(2) == 0x4321
    assert cudart.cudaEventElapsedTime(1, 2) == 1.5
    t, dev = cudart.cudaPointerGetAttributes(0x7000)
    assert (t, dev) == (2, 1) and type(t) is int
    assert cudart.cudaGetDeviceName(0) == "NVIDIA H200"


def test_wrappers_raise_the_failure_status(fake_rt, rt):
    fake_rt(cudaSetDevice=lambda d: (rt.cudaError_t.cudaErrorInvalidDevice,),
            cudaMallocAsync=lambda n, s: (rt.cudaError_t.cudaErrorMemoryAllocation, None))
    with pytest.raises(CUDARuntimeError, match=r"cudaErrorInvalidDevice \(101\)"):
        cudart.cudaSetDevice(7)
    with pytest.raises(CUDARuntimeError, match=r"cudaErrorMemoryAllocation \(2\)"):
        cudart.cudaMallocAsync(1 << 40, 0)


def test_the_ctypes_handle_calls_translate_not_ready(monkeypatch, rt):
    statuses = iter([0, 600, 400, 0, 600, 709])
    fake = SimpleNamespace(cudaEventQuery=lambda e: next(statuses), cudaStreamQuery=lambda s: next(statuses))
    monkeypatch.setattr(cudart, "_fast", fake)
    assert cudart.cudaEventQuery(1) is True and cudart.cudaEventQuery(1) is False
    with pytest.raises(CUDARuntimeError, match="cudaErrorInvalidResourceHandle"):
        cudart.cudaEventQuery(1)
    assert cudart.cudaStreamQuery(1) is True and cudart.cudaStreamQuery(1) is False
    with pytest.raises(CUDARuntimeError, match="cudaErrorContextIsDestroyed"):
        cudart.cudaStreamQuery(1)
    assert set(cudart.FAST_TABLE) == {"cudaStreamSynchronize", "cudaStreamQuery", "cudaEventRecord", "cudaEventQuery"}


def test_driver_wrappers_convert_handles(monkeypatch, rt):
    from cuda.bindings import driver as d

    ok = d.CUresult.CUDA_SUCCESS
    calls = []
    fake = {"cuCtxGetCurrent": lambda: (ok, d.CUcontext(0xC0)),
            "cuModuleLoadData": lambda image: (ok, d.CUmodule(0xD0)),
            "cuModuleGetFunction": lambda m, n: (d.CUresult.CUDA_ERROR_NOT_FOUND, None) if n == b"nope" else
            (ok, d.CUfunction(0xE0)),
            "cuLaunchKernel": lambda *a: calls.append(a) or (ok,)}
    monkeypatch.setattr(cuda, "_drv", SimpleNamespace(**fake))  # no libcuda here: the whole binding is fake
    assert cuda.cuCtxGetCurrent() == 0xC0
    assert cuda.cuModuleLoadData(b"\x7fELF") == 0xD0
    assert cuda.cuModuleGetFunction(0xD0, "k") == 0xE0
    with pytest.raises(CUDADriverError, match=r"CUDA_ERROR_NOT_FOUND \(500\): function b'nope'"):
        cuda.cuModuleGetFunction(0xD0, b"nope")
    cuda.cuLaunchKernel(0xE0, 1, 1, 1, 32, 1, 1, 0, 0, None)
    assert calls[-1][-1] == 0  # extra=None becomes NULL


def _need_library(name):
    from cumath._bindings import _loader

    if _loader.find_library(name) is None:  # cuda-bindings binds the library cumath's loader finds first
        pytest.skip(f"no {name} library here (the cu13 extra brings it)")


def test_nvrtc_compile_failure_carries_the_log(monkeypatch, rt):
    _need_library("nvrtc")
    from cuda.bindings import nvrtc as n

    monkeypatch.setattr(nvrtc._nv, "nvrtcCompileProgram", lambda p, k, o: (n.nvrtcResult.NVRTC_ERROR_COMPILATION,))
    monkeypatch.setattr(nvrtc._nv, "nvrtcGetProgramLogSize", lambda p: (n.nvrtcResult.NVRTC_SUCCESS, 12))

    def log(p, buf):
        buf[:12] = b"bad.cu: err\0"
        return (n.nvrtcResult.NVRTC_SUCCESS,)

    monkeypatch.setattr(nvrtc._nv, "nvrtcGetProgramLog", log)
    with pytest.raises(NVRTCError, match=r"NVRTC_ERROR_COMPILATION \(6\): bad.cu: err") as info:
        nvrtc.nvrtcCompileProgram(0x99, ["-arch=sm_90"])
    assert info.value.log == "bad.cu: err"


def test_nvjitlink_failure_carries_the_error_log(monkeypatch, rt):
    _need_library("nvJitLink")
    from cuda.bindings import nvjitlink as j

    def complete(handle):
        raise j.nvJitLinkError(6)

    monkeypatch.setattr(nvjitlink._nj, "complete", complete)
    monkeypatch.setattr(nvjitlink._nj, "get_error_log_size", lambda h: 25)

    def get_log(h, buf):
        buf[:25] = b"error: undefined symbol\n\0"

    monkeypatch.setattr(nvjitlink._nj, "get_error_log", get_log)
    with pytest.raises(NVJitLinkError, match=r"NVJITLINK_ERROR_INTERNAL \(6\): error: undefined symbol") as info:
        nvjitlink.nvJitLinkComplete(0x1234)
    assert "undefined symbol" in info.value.log and info.value.library == "nvJitLink"


# ------------------------------------------------------------------------------------------- laziness

def test_import_cumath_imports_no_cuda_bindings():
    r = _run("import sys, cumath, cumath.fft, cumath.linalg\n"
             "from cumath._bindings import cudart, cuda, nvrtc, nvjitlink\n"
             "from cumath._bindings._loader import loaded_libraries\n"
             "print(sorted(m for m in sys.modules if m.startswith('cuda')), loaded_libraries())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[] {}"


# --------------------------------------------------------------------------- missing or mismatched bindings

_BLOCK = "import sys; sys.modules['cuda'] = None; sys.modules['cuda.bindings'] = None\n"


@pytest.mark.parametrize("call", ["cudart.cudaGetDeviceCount()", "cuda.cuInit(0)", "nvrtc.nvrtcVersion()",
                                  "nvjitlink.nvJitLinkVersion()", "cudart.cudaDeviceAttr"])
@pytest.mark.parametrize("major, extra", [("13", "cu13"), ("12", "cu12")])
def test_without_cuda_bindings_gpu_use_names_the_extra(call, major, extra):
    r = _run(_BLOCK + "from cumath._bindings import cudart, cuda, nvrtc, nvjitlink\n"
             "from cumath.errors import LibraryNotFoundError\n"
             f"try:\n    {call}\nexcept LibraryNotFoundError as e:\n    print(e)\n", CUMATH_CUDA_MAJOR=major)
    assert r.returncode == 0, r.stderr
    assert f"needs cuda-bindings {major}.x" in r.stdout and f'pip install "cumath[{extra}]"' in r.stdout
    assert f'pip install ".[{extra}]"' in r.stdout  # from a checkout too


def test_without_cuda_bindings_require_device_says_what_to_do():
    r = _run(_BLOCK + "from cumath._core import cuda\nprint(cuda.device_count())\n"
             "try:\n    cuda.require_device(0)\nexcept ValueError as e:\n    print(type(e).__name__, e)\n")
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.strip().split("\n", 1)
    assert first == "0"
    assert second.startswith("CUDAUnavailableError") and "execution='cpu'" in second and "cumath[cu13]" in second


def test_bindings_of_another_cuda_major_are_refused(rt):
    import cuda.bindings

    have = int(cuda.bindings.__version__.split(".")[0])
    other = 12 if have == 13 else 13
    r = _run("from cumath._bindings import cudart\nfrom cumath.errors import LibraryNotFoundError\n"
             "try:\n    cudart.cudaGetDeviceCount()\nexcept LibraryNotFoundError as e:\n    print(e)\n",
             CUMATH_CUDA_MAJOR=str(other))
    assert r.returncode == 0, r.stderr
    assert f"cuda-bindings {have}.x is built for CUDA {have}" in r.stdout
    assert f"install cuda-bindings {other}.x" in r.stdout and f"CUMATH_CUDA_MAJOR={have}" in r.stdout


def test_a_missing_native_library_is_reported_before_the_import(monkeypatch, rt):
    monkeypatch.setitem(_loader.LIBRARIES, "nvrtc_absent", LibrarySpec(("libnvrtc_absent.so.13",), "cu13"))
    monkeypatch.setattr(nvrtc, "_nv", LazyModule("cuda.bindings.nvrtc", library="nvrtc_absent", what="NVRTC"))
    with pytest.raises(LibraryNotFoundError, match=r"libnvrtc_absent.*cumath\[cu13\]"):
        nvrtc.nvrtcVersion()


# ---------------------------------------------------------------------------------------------- on a GPU

@pytest.mark.gpu
def test_runtime_round_trip_on_a_gpu(cuda_device):
    """Streams, events, memory and pointer attributes through cuda-bindings, and the handle-only calls through
    libcudart on the same handles (both runtimes share the driver's primary context)."""
    import ctypes

    import numpy as np

    cudart.cudaSetDevice(cuda_device)
    assert cudart.cudaGetDevice() == cuda_device and cudart.cudaGetDeviceCount() >= 1
    assert cudart.cudaDriverGetVersion() >= 12000 and cudart.cudaRuntimeGetVersion() >= 12000
    assert cudart.cudaGetDeviceName(cuda_device)
    free, total = cudart.cudaMemGetInfo()
    assert 0 < free <= total
    x = np.random.default_rng(5).standard_normal(1001)
    out = np.empty_like(x)
    stream = cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking)
    start, end = (cudart.cudaEventCreateWithFlags(cudart.cudaEventDefault) for _ in range(2))
    d = cudart.cudaMalloc(x.nbytes)
    try:
        assert cudart.cudaPointerGetAttributes(d) == (int(cudart.cudaMemoryType.cudaMemoryTypeDevice), cuda_device)
        cudart.cudaEventRecord(start, stream)
        cudart.cudaMemcpyAsync(d, x.ctypes.data, x.nbytes, 1, stream)
        a = cudart.cudaMallocAsync(x.nbytes, stream)
        cudart.cudaMemsetAsync(a, 0, x.nbytes, stream)
        cudart.cudaMemcpy2DAsync(a, 8, d, 8, 8, x.size, 3, stream)  # a column copy: every element
        cudart.cudaMemcpyAsync(out.ctypes.data, a, x.nbytes, 2, stream)
        cudart.cudaFreeAsync(a, stream)
        cudart.cudaEventRecord(end, stream)
        cudart.cudaStreamSynchronize(stream)
        assert cudart.cudaStreamQuery(stream) is True and cudart.cudaEventQuery(end) is True
        assert cudart.cudaEventElapsedTime(start, end) >= 0.0
        np.testing.assert_array_equal(out, x)
        other = cudart.cudaStreamCreateWithFlags(cudart.cudaStreamNonBlocking)
        cudart.cudaStreamWaitEvent(other, end, 0)
        cudart.cudaStreamSynchronize(other)
        cudart.cudaStreamDestroy(other)
        host = cudart.cudaMallocHost(64)
        cudart.cudaMemcpy(host, d, 64, 2)
        assert ctypes.string_at(host, 64) == x.tobytes()[:64]
        cudart.cudaFreeHost(host)
        buf = np.zeros(4096, dtype=np.uint8)
        cudart.cudaHostRegister(buf.ctypes.data, buf.nbytes, cudart.cudaHostRegisterDefault)
        assert cudart.cudaPointerGetAttributes(buf.ctypes.data)[0] == int(cudart.cudaMemoryType.cudaMemoryTypeHost)
        cudart.cudaHostUnregister(buf.ctypes.data)
        with pytest.raises(CUDARuntimeError, match="cudaErrorInvalidDevice"):
            cudart.cudaSetDevice(10_000)
        with pytest.raises(CUDARuntimeError, match="cudaErrorInvalidDevice"):
            cudart.cudaPeekAtLastError()  # the failure stays the runtime's last error ...
        with pytest.raises(CUDARuntimeError, match="cudaErrorInvalidDevice"):
            cudart.cudaGetLastError()  # ... until it is read
        cudart.cudaGetLastError()
        cudart.cudaDeviceSynchronize()
    finally:
        cudart.cudaFree(d)
        for ev in (start, end):
            cudart.cudaEventDestroy(ev)
        cudart.cudaStreamDestroy(stream)
        cudart.cudaSetDevice(cuda_device)
