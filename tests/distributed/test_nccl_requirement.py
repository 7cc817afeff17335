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


def _child(code, env_extra=None):
    import os
    import subprocess
    import sys

    from mpi_helpers import clean_env

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = clean_env(PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=root)


def _real_nccl_path():
    out = _child("from cumath._bindings._loader import find_library; print(find_library('nccl'))")
    path = out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else "None"
    if path == "None":
        pytest.skip("NCCL (nvidia-nccl-cu13) is not installed here")
    return path


@pytest.mark.gpu  # where NCCL is installed: the GPU machines
def test_a_preloaded_nccl_is_the_one_used():
    """With LD_PRELOAD (how a newer NCCL is put ahead of PyTorch's), cumath uses that copy and says so."""
    import os

    path = _real_nccl_path()
    code = ("import logging; logging.basicConfig(level=logging.INFO)\n"
            "from cumath._bindings import _loader, nccl\n"
            "_loader.load_library('nccl'); print(_loader._paths['nccl'])\n"
            "print(nccl.version_string(nccl.ncclGetVersion()))\n")
    out = _child(code, {"LD_PRELOAD": path})
    assert out.returncode == 0, out.stderr[-3000:]
    used, version = out.stdout.split()[-2:]
    assert os.path.realpath(used) == os.path.realpath(path)
    assert "already loaded in this process" in out.stderr and version[0].isdigit()


@pytest.mark.gpu
def test_the_real_nccl_passes_or_is_refused_with_its_version():
    _real_nccl_path()
    code = ("from cumath._bindings import nccl\nfrom cumath.errors import LibraryNotFoundError\n"
            "v = nccl.version_string(nccl.ncclGetVersion()); print('VERSION', v)\n"
            "try:\n    print('OK', nccl.require('cuBLASMp'))\n"
            "except LibraryNotFoundError as e:\n    print('REFUSED', e)\n")
    out = _child(code)
    assert out.returncode == 0, out.stderr[-3000:]
    version = out.stdout.split("VERSION ")[1].split()[0]
    newer = tuple(int(p) for p in version.split(".")) >= nccl.MP_NCCL_MIN
    if newer:
        assert f"OK {version}" in out.stdout, out.stdout
    else:
        assert "REFUSED cuBLASMp needs NCCL >= 2.29.2" in out.stdout and f"NCCL {version} (" in out.stdout


def _build_nccl(folder, code, symbols):
    """A stand-in libnccl.so.2 (soname libnccl.so.2) of NCCL_VERSION_CODE ``code`` exporting ``symbols``."""
    import os
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a stand-in NCCL")
    os.makedirs(folder, exist_ok=True)
    src = os.path.join(folder, "nccl.c")
    with open(src, "w") as f:
        f.write(f"int ncclGetVersion(int *v) {{ *v = {code}; return 0; }}\n")
        for name in symbols:
            if name != "ncclGetVersion":
                f.write(f"int {name}(void) {{ return 0; }}\n")
    lib = os.path.join(folder, "libnccl.so.2")
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o", lib, src], check=True,
                   capture_output=True)
    return lib


def test_with_real_libraries_the_preloaded_copy_wins_over_the_wheel_folder(tmp_path):
    """An old NCCL in a wheel folder on sys.path and a new one preloaded: the preloaded one is used and passes;
    without the preload the wheel's one is found and refused, its version and file in the message."""
    old = _build_nccl(str(tmp_path / "site" / "nvidia" / "nccl" / "lib"), 22803,
                      [s for s in nccl.MP_NCCL_SYMBOLS if s != "ncclDevCommCreate"])
    new = _build_nccl(str(tmp_path / "new"), 22907, nccl.MP_NCCL_SYMBOLS)
    code = ("import logging, sys; logging.basicConfig(level=logging.INFO)\n"
            f"sys.path.insert(0, {str(tmp_path / 'site')!r})\n"
            "sys.modules['cuda.pathfinder'] = None  # the search goes to sys.path's wheel folders: ours first\n"
            "from cumath._bindings import _loader, nccl\nfrom cumath.errors import LibraryNotFoundError\n"
            "try:\n    print('OK', nccl.require('cuBLASMp'), _loader._paths['nccl'])\n"
            "except LibraryNotFoundError as e:\n    print('REFUSED', e)\n")
    env = {"CUMATH_CUDA_MAJOR": "13"}
    first = _child(code, {**env, "LD_PRELOAD": new})
    assert first.returncode == 0, first.stderr[-3000:]
    assert f"OK 2.29.7 {new}" in first.stdout, first.stdout + first.stderr[-2000:]
    assert "already loaded in this process" in first.stderr
    second = _child(code, {**env, "LD_PRELOAD": ""})
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"REFUSED cuBLASMp needs NCCL >= 2.29.2, but the libnccl.so.2 loaded in this process is NCCL 2.28.3 " \
           f"({old}) and lacks ncclDevCommCreate." in second.stdout, second.stdout
