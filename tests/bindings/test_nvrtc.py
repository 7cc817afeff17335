"""NVRTC binding: enum values (read from nvrtc.h of nvidia-cuda-nvrtc 13.0.88), laziness, status checks,
and, where NVRTC loads (the GPU machine; any machine with the wheel on sys.path), real compilations."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from cumath._bindings import _loader, nvrtc
from cumath._bindings._cuda_bindings import LazyModule
from cumath._bindings._loader import LibrarySpec
from cumath.errors import LibraryNotFoundError, NVRTCError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("member, value", [
    ("NVRTC_SUCCESS", 0),
    ("NVRTC_ERROR_OUT_OF_MEMORY", 1),
    ("NVRTC_ERROR_INVALID_INPUT", 3),
    ("NVRTC_ERROR_INVALID_OPTION", 5),
    ("NVRTC_ERROR_COMPILATION", 6),
    ("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE", 7),
    ("NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", 10),
    ("NVRTC_ERROR_INTERNAL_ERROR", 11),
    ("NVRTC_ERROR_CANCELLED", 16),
    ("NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED", 17),
])
def test_enum_values(bindings, member, value):
    assert int(getattr(nvrtc.nvrtcResult, member)) == value


@pytest.fixture(scope="module")
def bindings():
    return pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings is not installed")


def test_every_wrapper_has_its_nvrtc_function(bindings):
    for name in nvrtc.__all__:
        if name.startswith("nvrtc") and name != "nvrtcResult":
            assert callable(getattr(bindings, name)), name


def test_import_loads_nothing():
    code = "import sys; import cumath._bindings.nvrtc; import cumath._bindings._loader as l; print(l.loaded_libraries())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{}"


def test_check_raises_the_typed_error_with_its_name(bindings):
    nvrtc.check(0)
    with pytest.raises(NVRTCError, match=r"NVRTC_ERROR_COMPILATION \(6\): the log") as info:
        nvrtc.check(6, "the log")
    assert info.value.status == 6 and info.value.name == "NVRTC_ERROR_COMPILATION"


def test_a_missing_nvrtc_names_its_extra(monkeypatch):
    monkeypatch.setitem(_loader.LIBRARIES, "nvrtc_absent", LibrarySpec(("libnvrtc_absent.so.13",), "cu13"))
    pytest.importorskip("cuda.bindings", reason="cuda-bindings is not installed")
    monkeypatch.setattr(nvrtc, "_nv", LazyModule("cuda.bindings.nvrtc", library="nvrtc_absent"))
    with pytest.raises(LibraryNotFoundError, match=r"cumath\[cu13\]"):
        nvrtc.nvrtcVersion()


def test_create_program_checks_header_lists():
    with pytest.raises(ValueError, match="differ in length"):
        nvrtc.nvrtcCreateProgram("", "x.cu", headers=["a"], include_names=[])


# ----------------------------------------------------------------------------- with a real NVRTC


@pytest.fixture
def have_nvrtc():
    try:
        return nvrtc.nvrtcVersion()
    except LibraryNotFoundError as exc:  # no NVRTC wheel, or no cuda-bindings
        pytest.skip(str(exc))


SAXPY = textwrap.dedent("""
    template <typename T>
    __global__ void saxpy(T a, const T* x, T* y, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + y[i];
    }
    extern "C" __global__ void plain(float* y) { y[threadIdx.x] = 1.0f; }
""")


def test_version_and_architectures(have_nvrtc):
    major, minor = have_nvrtc
    assert major >= 12 and minor >= 0
    archs = nvrtc.nvrtcGetSupportedArchs()
    assert len(archs) == nvrtc.nvrtcGetNumSupportedArchs() and 90 in archs


def test_compile_to_cubin_ptx_and_lowered_names(have_nvrtc):
    prog = nvrtc.nvrtcCreateProgram(SAXPY, "saxpy.cu")
    try:
        nvrtc.nvrtcAddNameExpression(prog, "saxpy<float>")
        nvrtc.nvrtcCompileProgram(prog, ["-arch=sm_90", "-std=c++17"])
        lowered = nvrtc.nvrtcGetLoweredName(prog, "saxpy<float>")
        assert lowered.startswith("_Z") and "saxpy" in lowered
        cubin = nvrtc.nvrtcGetCUBIN(prog)
        assert cubin[:4] == b"\x7fELF" and len(cubin) == nvrtc.nvrtcGetCUBINSize(prog)
        ptx = nvrtc.nvrtcGetPTX(prog)
        assert b".visible .entry plain" in ptx and len(ptx) == nvrtc.nvrtcGetPTXSize(prog)
        assert isinstance(nvrtc.nvrtcGetProgramLog(prog), str)
        with pytest.raises(NVRTCError, match="NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID"):
            nvrtc.nvrtcGetLoweredName(prog, "saxpy<double>")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def test_compile_to_lto_ir(have_nvrtc):
    prog = nvrtc.nvrtcCreateProgram(SAXPY, "saxpy.cu")
    try:
        nvrtc.nvrtcCompileProgram(prog, ["-arch=sm_90", "-dlto"])
        ir = nvrtc.nvrtcGetLTOIR(prog)
        assert len(ir) == nvrtc.nvrtcGetLTOIRSize(prog) > 0
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def test_a_compile_error_carries_the_log(have_nvrtc):
    prog = nvrtc.nvrtcCreateProgram("__global__ void k(float* x) { x[0] = undefined_name; }", "bad.cu")
    try:
        with pytest.raises(NVRTCError, match=r"NVRTC_ERROR_COMPILATION.*undefined_name") as info:
            nvrtc.nvrtcCompileProgram(prog, ["-arch=sm_90"])
        assert "undefined_name" in info.value.log and "bad.cu" in info.value.log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def test_an_invalid_option_is_reported(have_nvrtc):
    prog = nvrtc.nvrtcCreateProgram("__global__ void k() {}", "k.cu")
    try:
        with pytest.raises(NVRTCError, match="NVRTC_ERROR_INVALID_OPTION"):
            nvrtc.nvrtcCompileProgram(prog, ["--no-such-option"])
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def test_error_string(have_nvrtc):
    assert nvrtc.nvrtcGetErrorString(6) == "NVRTC_ERROR_COMPILATION"
