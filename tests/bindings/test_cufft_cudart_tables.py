"""cuFFT and CUDA runtime bindings: enum values, laziness, status checks, missing libraries, and one GPU FFT.

The expected numbers were read from cufft.h / cufftXt.h (nvidia-cufft 12.5.0.14) and driver_types.h /
library_types.h / cuda_runtime_api.h (nvidia-cuda-runtime 13.5.37) and are written out here on purpose.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from cumath._bindings import _loader, cudart, cufft
from cumath._bindings._loader import LazyFunctions, LibrarySpec
from cumath.errors import CUDARuntimeError, CUFFTError, LibraryNotFoundError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ------------------------------------------------------------------------------------ enum values


@pytest.mark.parametrize(
    "member, value",
    [
        (cufft.cufftResult.CUFFT_SUCCESS, 0),
        (cufft.cufftResult.CUFFT_INVALID_PLAN, 1),
        (cufft.cufftResult.CUFFT_INVALID_VALUE, 4),
        (cufft.cufftResult.CUFFT_UNALIGNED_DATA, 9),
        (cufft.cufftResult.CUFFT_INVALID_DEVICE, 11),
        (cufft.cufftResult.CUFFT_NO_WORKSPACE, 13),
        (cufft.cufftResult.CUFFT_NOT_IMPLEMENTED, 14),
        (cufft.cufftResult.CUFFT_NOT_SUPPORTED, 16),
        (cufft.cufftResult.CUFFT_MISSING_DEPENDENCY, 17),
        (cufft.cufftResult.CUFFT_NVJITLINK_FAILURE, 19),
        (cufft.cufftResult.CUFFT_NVSHMEM_FAILURE, 20),
        (cufft.cufftType.CUFFT_R2C, 0x2A),
        (cufft.cufftType.CUFFT_C2R, 0x2C),
        (cufft.cufftType.CUFFT_C2C, 0x29),
        (cufft.cufftType.CUFFT_D2Z, 0x6A),
        (cufft.cufftType.CUFFT_Z2D, 0x6C),
        (cufft.cufftType.CUFFT_Z2Z, 0x69),
        (cufft.cufftXtCallbackType.CUFFT_CB_LD_COMPLEX, 0),
        (cufft.cufftXtCallbackType.CUFFT_CB_ST_COMPLEX, 4),
        (cufft.cufftXtCallbackType.CUFFT_CB_ST_REAL_DOUBLE, 7),
        (cufft.cufftXtCallbackType.CUFFT_CB_UNDEFINED, 8),
        (cufft.cufftProperty.NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, 1),
        (cufft.cufftProperty.NVFFT_PLAN_PROPERTY_INT64_DISABLE_FMA, 4),
        (cudart.libraryPropertyType.MAJOR_VERSION, 0),
        (cudart.libraryPropertyType.MINOR_VERSION, 1),
        (cudart.libraryPropertyType.PATCH_LEVEL, 2),
        (cudart.cudaDataType.CUDA_R_32F, 0),
        (cudart.cudaDataType.CUDA_R_64F, 1),
        (cudart.cudaDataType.CUDA_R_16F, 2),
        (cudart.cudaDataType.CUDA_R_8I, 3),
        (cudart.cudaDataType.CUDA_C_32F, 4),
        (cudart.cudaDataType.CUDA_C_64F, 5),
        (cudart.cudaDataType.CUDA_C_16F, 6),
        (cudart.cudaDataType.CUDA_R_16BF, 14),
        (cudart.cudaDataType.CUDA_C_16BF, 15),
        (cudart.cudaDataType.CUDA_R_64U, 26),
        (cudart.cudaDataType.CUDA_R_8F_E4M3, 28),
        (cudart.cudaDataType.CUDA_R_8F_UE4M3, 28),
        (cudart.cudaDataType.CUDA_R_8F_E5M2, 29),
        (cudart.cudaDataType.CUDA_R_8F_UE5M3, 34),
    ],
    ids=lambda x: getattr(x, "name", None) or str(x),
)
def test_enum_values_match_header(member, value):
    assert int(member) == value


def test_enum_sizes_match_header():
    # member counts of the C enums (cudaDeviceAttr without its cudaDevAttrMax sentinel; cudaDataType with
    # its one alias, which IntEnum keeps in __members__ only)
    assert len(cufft.cufftResult.__members__) == 18
    assert len(cufft.cufftType.__members__) == 6
    assert len(cufft.cufftXtCallbackType.__members__) == 9
    assert len(cudart.cudaDataType.__members__) == 36  # cudaError_t, cudaDeviceAttr: cuda-bindings' own
    assert cudart.cudaDataType.CUDA_R_8F_UE4M3 is cudart.cudaDataType.CUDA_R_8F_E4M3


def test_constants_match_header():
    assert (cufft.CUFFT_FORWARD, cufft.CUFFT_INVERSE, cufft.CUFFT_PLAN_NULL) == (-1, 1, -1)
    assert (cudart.cudaStreamDefault, cudart.cudaStreamNonBlocking) == (0, 1)
    assert (cudart.cudaStreamLegacy, cudart.cudaStreamPerThread) == (1, 2)
    assert (cudart.cudaEventDefault, cudart.cudaEventBlockingSync) == (0, 1)
    assert (cudart.cudaEventDisableTiming, cudart.cudaEventInterprocess) == (2, 4)
    assert (cudart.cudaHostAllocDefault, cudart.cudaHostAllocPortable, cudart.cudaHostAllocMapped) == (0, 1, 2)
    assert cudart.cudaHostAllocWriteCombined == 4
    assert (cudart.cudaHostRegisterDefault, cudart.cudaHostRegisterReadOnly) == (0, 8)
    assert (cudart.cudaCpuDeviceId, cudart.cudaInvalidDeviceId) == (-1, -2)


# ------------------------------------------------------------------------------------- the tables


@pytest.mark.parametrize("mod, helpers", [(cufft, set())])
def test_one_wrapper_per_table_entry(mod, helpers):
    # (the CUDA runtime is bound through cuda-bindings: tests/bindings/test_cudart.py)
    wrappers = {n for n in mod.__all__ if callable(getattr(mod, n)) and n.startswith(("cufft", "cuda"))}
    wrappers -= {n for n in wrappers if isinstance(getattr(mod, n), type)}  # enums and structs
    table = set(mod.TABLE)
    assert wrappers - helpers == table
    for name, (restype, argtypes) in mod.TABLE.items():
        assert isinstance(argtypes, list), name
        assert restype in (ctypes.c_int, ctypes.c_char_p), name


def test_import_loads_no_library():
    code = textwrap.dedent(
        """
        import cumath._bindings.cufft as cufft, cumath._bindings.cudart as cudart
        from cumath._bindings._loader import loaded_libraries
        cufft.cufftResult.CUFFT_INVALID_PLAN, cudart.cudaDataType.CUDA_C_32F, cufft.TABLE, cudart.FAST_TABLE
        assert loaded_libraries() == {}, loaded_libraries()
        maps = open("/proc/self/maps").read()
        assert "libcufft" not in maps and "libcudart" not in maps, "a CUDA library is mapped"
        print("ok")
        """
    )
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


# ---------------------------------------------------------------------------------- status checks


def test_cufft_check_raises_typed_error():
    assert cufft.check(0) is None
    with pytest.raises(CUFFTError, match="CUFFT_INVALID_PLAN") as info:
        cufft.check(cufft.cufftResult.CUFFT_INVALID_PLAN)
    assert info.value.status == 1 and info.value.name == "CUFFT_INVALID_PLAN"
    with pytest.raises(CUFFTError, match="CUFFT_NOT_SUPPORTED"):
        cufft.check(16)
    with pytest.raises(CUFFTError, match="status 12345"):
        cufft.check(12345)


def test_wrappers_raise_and_convert(monkeypatch):
    """Wrappers over a fake function table: failure statuses raise, NotReady is a bool, outputs come back."""

    def make_plan(plan, rank, n, inembed, istride, idist, itype, onembed, ostride, odist, otype, batch, ws, etype):
        assert (plan, rank, list(n), inembed, onembed) == (7, 1, [2048], None, None)
        assert (itype, otype, etype, batch) == (4, 4, 4, 3)
        ws._obj.value = 4096  # byref(c_size_t) -> write the out-parameter
        return 0

    fake_fft = SimpleNamespace(cufftXtMakePlanMany=make_plan, cufftXtExec=lambda *a: 1)
    monkeypatch.setattr(cufft, "_L", fake_fft)
    C32 = cudart.cudaDataType.CUDA_C_32F
    assert cufft.cufftXtMakePlanMany(7, 1, [2048], None, 1, 2048, C32, None, 1, 2048, C32, 3, C32) == 4096
    with pytest.raises(ValueError):
        cufft.cufftXtMakePlanMany(7, 2, [2048], None, 1, 2048, C32, None, 1, 2048, C32, 3, C32)
    with pytest.raises(CUFFTError, match="CUFFT_INVALID_PLAN"):
        cufft.cufftXtExec(7, 0, 0, cufft.CUFFT_FORWARD)

    pytest.importorskip("cuda.bindings", reason="the names of the runtime's statuses come from cuda-bindings")
    statuses = iter([0, 600, 400])
    monkeypatch.setattr(cudart, "_fast", SimpleNamespace(cudaStreamQuery=lambda s: next(statuses)))
    assert cudart.cudaStreamQuery(0) is True
    assert cudart.cudaStreamQuery(0) is False
    with pytest.raises(CUDARuntimeError, match="cudaErrorInvalidResourceHandle"):
        cudart.cudaStreamQuery(0)


# ------------------------------------------------------------------------------- missing libraries


@pytest.mark.parametrize("mod, lib, call", [(cufft, "cufft", "cufftCreate")])
def test_missing_library_names_the_extra(monkeypatch, mod, lib, call):
    bogus = LibrarySpec(sonames=("libcumath_no_such_library.so.0",), extra="cu13", pathfinder=None)
    monkeypatch.setitem(_loader.LIBRARIES, lib, bogus)
    monkeypatch.delitem(_loader._loaded, lib, raising=False)
    monkeypatch.delitem(_loader._paths, lib, raising=False)
    monkeypatch.setattr(mod, "_L", LazyFunctions(lib, mod.TABLE))  # a fresh table, nothing bound yet
    with pytest.raises(LibraryNotFoundError, match=r"cumath\[cu13\]"):
        getattr(mod, call)()


# ----------------------------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_c2c_fft_matches_numpy(cufft_device):
    np = pytest.importorskip("numpy")
    n = 2048
    rng = np.random.default_rng(1234)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    out = np.empty_like(x)
    nbytes = x.nbytes
    C32 = cudart.cudaDataType.CUDA_C_32F

    d_in = cudart.cudaMalloc(nbytes)
    d_out = 0
    plan = None
    try:
        d_out = cudart.cudaMalloc(nbytes)
        assert cudart.cudaPointerGetAttributes(d_in) == (cudart.cudaMemoryType.cudaMemoryTypeDevice, cufft_device)
        cudart.cudaMemcpy(d_in, x.ctypes.data, nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice)
        plan = cufft.cufftCreate()
        work = cufft.cufftXtMakePlanMany(plan, 1, [n], None, 1, n, C32, None, 1, n, C32, 1, C32)
        assert work >= 0 and cufft.cufftGetSize(plan) == work
        cufft.cufftXtExec(plan, d_in, d_out, cufft.CUFFT_FORWARD)
        cudart.cudaDeviceSynchronize()
        cudart.cudaMemcpy(out.ctypes.data, d_out, nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)
    finally:
        if plan is not None:
            cufft.cufftDestroy(plan)
        if d_out:
            cudart.cudaFree(d_out)
        cudart.cudaFree(d_in)

    ref = np.fft.fft(x.astype(np.complex128))
    rel = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    assert rel < 1e-5, rel
    assert cufft.cufftGetVersion() // 1000 == cufft.cufftGetProperty(cudart.libraryPropertyType.MAJOR_VERSION)
