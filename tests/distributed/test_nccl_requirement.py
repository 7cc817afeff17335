"""The NCCL that cuBLASMp and cuSOLVERMp need: checked before they load, the copy already in the process reused.

cuBLASMp 0.10 and cuSOLVERMp 0.9 link libnccl.so.2 by soname and bind its functions lazily: with an NCCL older
than 2.29.2 they load, and their first call of a function that NCCL lacks ends the process. The binding looks the
functions up first and raises an error that names the loaded version, its file, the version needed and the wheel.
No GPU or NCCL is needed here: the library is a stand-in.
"""

import ctypes
import logging

import pytest

from cumath._bindings import _loader, nccl
from cumath.errors import LibraryNotFoundError


class FakeNCCL:
    def __init__(self, missing=()):
        for name in nccl.MP_NCCL_SYMBOLS:
            if name not in missing:
                setattr(self, name, object())


@pytest.fixture
def loaded(monkeypatch):
    state = {}

    def use(code, missing=(), path="/site/torch/lib/libnccl.so.2"):
        state["lib"] = FakeNCCL(missing)
        monkeypatch.setattr(_loader, "load_library", lambda name: state["lib"])
        monkeypatch.setattr(_loader, "find_library", lambda name: path)
        monkeypatch.setattr(nccl, "ncclGetVersion", lambda: code)
        nccl._checked.clear()

    return use


@pytest.mark.parametrize("code, text", [(22907, "2.29.7"), (22803, "2.28.3"), (23203, "2.32.3"), (2406, "2.4.6")])
def test_version_codes(code, text):
    assert nccl.version_string(code) == text


def test_an_older_nccl_is_refused_with_its_version_path_and_the_wheel(loaded):
    loaded(22803, missing=("ncclDevCommCreate", "ncclPutSignal", "ncclWaitSignal"))
    with pytest.raises(LibraryNotFoundError) as info:
        nccl.require("cuBLASMp")
    msg = str(info.value)
    assert "cuBLASMp needs NCCL >= 2.29.2" in msg
    assert "NCCL 2.28.3 (/site/torch/lib/libnccl.so.2)" in msg
    assert "lacks ncclDevCommCreate, ncclPutSignal, ncclWaitSignal" in msg
    assert 'pip install "nvidia-nccl-cu13>=2.29.2"' in msg and "LD_PRELOAD=" in msg
    assert isinstance(info.value, OSError)


def test_an_older_version_is_refused_even_with_every_symbol(loaded):
    loaded(22901)
    with pytest.raises(LibraryNotFoundError, match=r"cuSOLVERMp needs NCCL >= 2\.29\.2, but .* NCCL 2\.29\.1"):
        nccl.require("cuSOLVERMp")


def test_a_missing_symbol_is_refused_whatever_the_version_says(loaded):
    loaded(22907, missing=("ncclGetLsaMultimemDevicePointer",))
    with pytest.raises(LibraryNotFoundError, match="lacks ncclGetLsaMultimemDevicePointer"):
        nccl.require("cuBLASMp")


def test_a_new_enough_nccl_passes_and_is_logged_once(loaded, caplog):
    loaded(22907, path="/opt/nccl/lib/libnccl.so.2")
    with caplog.at_level(logging.INFO, logger="cumath._bindings.nccl"):
        assert nccl.require("cuBLASMp") == "2.29.7"
        assert nccl.require("cuBLASMp") == "2.29.7"
    lines = [r.getMessage() for r in caplog.records if r.name == "cumath._bindings.nccl"]
    assert lines == ["NCCL 2.29.7 loaded from /opt/nccl/lib/libnccl.so.2 (cuBLASMp needs >= 2.29.2)"]


def test_the_check_runs_before_the_library_loads_and_once_it_passed(monkeypatch):
    order = []
    monkeypatch.setattr(_loader, "load_library", lambda name: order.append(("load", name)) or FakeLib())

    class FakeLib:
        def __init__(self):
            self.f = lambda: 0  # a plain function: takes restype / argtypes like a ctypes function

    def check():
        order.append(("check",))
        if len(order) < 4:
            raise LibraryNotFoundError("too old")

    lazy = _loader.LazyFunctions("cublasmp", {"f": (ctypes.c_int, [])}, depends=("nccl",), check=check)
    with pytest.raises(LibraryNotFoundError, match="too old"):
        lazy.f
    assert order == [("load", "nccl"), ("check",)], "the library itself is not loaded after a failed check"
    lazy.f
    assert order[2:] == [("load", "nccl"), ("check",), ("load", "cublasmp")]
    lazy.has("f")
    assert order.count(("check",)) == 2


def test_a_library_already_in_the_process_is_reused_not_loaded_again():
    spec = _loader.LibrarySpec(("libc.so.6",), "test", reuse_loaded=True)
    lib = _loader._already_loaded("libc-for-test", spec)
    assert lib is not None and _loader._paths["libc-for-test"].endswith("libc.so.6")
    _loader._paths.pop("libc-for-test")
    absent = _loader.LibrarySpec(("libcumath-not-a-library.so.9",), "test", reuse_loaded=True)
    assert _loader._already_loaded("absent", absent) is None
    assert _loader.LIBRARIES["nccl"].reuse_loaded


def test_the_multi_process_bindings_check_nccl_first():
    from cumath._bindings import cublasmp, cusolvermp

    assert cublasmp._L._check is not None and "nccl" in cublasmp._L._depends
    assert cusolvermp._L._check is not None and "nccl" in cusolvermp._L._depends
