"""CUDA driver binding (over cuda-bindings): enum values (as in cuda.h, CUDA_VERSION 13050), laziness, status
checks, and on a GPU the calls cumath makes: context, module, function, launch, occupancy."""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import sys

import pytest

from cumath._bindings import _loader, cuda
from cumath._bindings._cuda_bindings import LazyModule
from cumath._bindings._loader import LibrarySpec
from cumath.errors import CUDADriverError, LibraryNotFoundError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("enum_name, member, value", [
    ("CUresult", "CUDA_SUCCESS", 0),
    ("CUresult", "CUDA_ERROR_INVALID_VALUE", 1),
    ("CUresult", "CUDA_ERROR_NOT_INITIALIZED", 3),
    ("CUresult", "CUDA_ERROR_STUB_LIBRARY", 34),
    ("CUresult", "CUDA_ERROR_NO_DEVICE", 100),
    ("CUresult", "CUDA_ERROR_INVALID_IMAGE", 200),
    ("CUresult", "CUDA_ERROR_INVALID_CONTEXT", 201),
    ("CUresult", "CUDA_ERROR_NO_BINARY_FOR_GPU", 209),
    ("CUresult", "CUDA_ERROR_INVALID_PTX", 218),
    ("CUresult", "CUDA_ERROR_INVALID_HANDLE", 400),
    ("CUresult", "CUDA_ERROR_NOT_FOUND", 500),
    ("CUresult", "CUDA_ERROR_ILLEGAL_ADDRESS", 700),
    ("CUresult", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 701),
    ("CUresult", "CUDA_ERROR_LAUNCH_FAILED", 719),
    ("CUresult", "CUDA_ERROR_KEY_ROTATION", 916),
    ("CUresult", "CUDA_ERROR_UNKNOWN", 999),
    ("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", 1),
    ("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", 16),
    ("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", 75),
    ("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", 76),
    ("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 97),
    ("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR", 106),
    ("CUfunction_attribute", "CU_FUNC_ATTRIBUTE_NUM_REGS", 4),
    ("CUfunction_attribute", "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8),
    ("CUfunction_attribute", "CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE", 17),
])
def test_enum_values(bindings, enum_name, member, value):
    assert int(getattr(getattr(cuda, enum_name), member)) == value


@pytest.fixture(scope="module")
def bindings():
    return pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed")


def test_every_wrapper_has_its_driver_function(bindings):
    for name in cuda.__all__:
        if name.startswith("cu") and name[2].isupper():
            assert callable(getattr(bindings, name)), name


def test_import_loads_nothing():
    code = "import cumath._bindings.cuda; import cumath._bindings._loader as l; print(l.loaded_libraries())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{}"


def test_check_names_known_statuses_without_the_driver(bindings):
    cuda.check(0)
    with pytest.raises(CUDADriverError, match=r"CUDA driver failed with CUDA_ERROR_INVALID_IMAGE \(200\): x"):
        cuda.check(200, "x")


def test_a_missing_driver_names_its_extra(monkeypatch):
    pytest.importorskip("cuda.bindings", reason="cuda-bindings is not installed")
    monkeypatch.setitem(_loader.LIBRARIES, "cuda_absent", LibrarySpec(("libcuda_absent.so.1",), "driver"))
    monkeypatch.setattr(cuda, "_drv", LazyModule("cuda.bindings.driver", library="cuda_absent"))
    with pytest.raises(LibraryNotFoundError, match=r"libcuda_absent.*comes with the NVIDIA driver"):
        cuda.cuInit(0)


# -------------------------------------------------------------------------------------- on a GPU

KERNEL = r"""
extern "C" __global__ void fill(float* y, float value, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = value * (float)i;
}
"""


@pytest.fixture
def context(cuda_device):
    from cumath._bindings import cudart

    cudart.cudaFree(0)  # the runtime makes the primary context current
    cuda.cuInit(0)
    ctx = cuda.cuCtxGetCurrent()
    assert ctx
    return ctx


@pytest.mark.gpu
def test_driver_basics(context, cuda_device):
    assert cuda.cuDriverGetVersion() >= 12000
    assert cuda.cuDeviceGetCount() >= 1
    dev = cuda.cuDeviceGet(cuda_device)
    assert cuda.cuCtxGetDevice() == dev
    major = cuda.cuDeviceGetAttribute(cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    assert major >= 7
    assert cuda.cuGetErrorName(1) == "CUDA_ERROR_INVALID_VALUE"
    assert "invalid" in cuda.cuGetErrorString(1).lower()
    primary = cuda.cuDevicePrimaryCtxRetain(dev)
    assert primary == context
    cuda.cuDevicePrimaryCtxRelease(dev)


@pytest.mark.gpu
def test_module_function_launch_and_occupancy(context):
    from cumath._bindings import cudart, nvrtc

    prog = nvrtc.nvrtcCreateProgram(KERNEL, "fill.cu")
    try:
        nvrtc.nvrtcCompileProgram(prog, ["-arch=sm_%d%d" % (
            cudart.cudaDeviceGetAttribute(75, cudart.cudaGetDevice()),
            cudart.cudaDeviceGetAttribute(76, cudart.cudaGetDevice()))])
        cubin = nvrtc.nvrtcGetCUBIN(prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    mod = cuda.cuModuleLoadData(cubin)
    try:
        fn = cuda.cuModuleGetFunction(mod, "fill")
        assert cuda.cuFuncGetAttribute(cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn) > 0
        cuda.cuFuncSetAttribute(fn, cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024)
        assert cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, 256, 0) >= 1
        grid, block = cuda.cuOccupancyMaxPotentialBlockSize(fn, 0, 0)
        assert grid >= 1 and 32 <= block <= 1024
        n = 1000
        y = cudart.cudaMalloc(4 * n)
        try:
            args = [ctypes.c_void_p(y), ctypes.c_float(0.5), ctypes.c_longlong(n)]
            params = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
            cuda.cuLaunchKernel(fn, (n + 127) // 128, 1, 1, 128, 1, 1, 0, 0, params, None)
            cuda.cuCtxSynchronize()
            host = ctypes.create_string_buffer(4 * n)
            cudart.cudaMemcpy(ctypes.addressof(host), y, 4 * n, 2)
            values = struct.unpack(f"{n}f", host.raw)
            assert values[0] == 0.0 and values[10] == 5.0 and values[999] == 499.5
        finally:
            cudart.cudaFree(y)
        with pytest.raises(CUDADriverError, match="CUDA_ERROR_NOT_FOUND"):
            cuda.cuModuleGetFunction(mod, "no_such_kernel")
        with pytest.raises(CUDADriverError, match="CUDA_ERROR_INVALID_VALUE"):
            cuda.cuLaunchKernel(fn, 1, 1, 1, 4096, 1, 1, 0, 0, params, None)
    finally:
        cuda.cuModuleUnload(mod)


@pytest.mark.gpu
def test_a_bad_image_is_refused(context):
    with pytest.raises(CUDADriverError, match="CUDA_ERROR_INVALID_IMAGE|CUDA_ERROR_INVALID_PTX"):
        cuda.cuModuleLoadData(b"not a module\0")
