"""cuRAND and cuSPARSE keep one soname across CUDA 12 and 13 (libcurand.so.10, libcusparse.so.12): a process that
loads CUDA 12 libraries must not take the CUDA 13 wheel's copy (nvidia/cu13/lib), nor a CUDA 13 process the CUDA
12 one, whatever the folders' sort order or cuda-pathfinder says (seen on a machine with both installed: a CUDA 12
process listed nvidia/cu13/lib/libcusparse.so.12)."""
import os
import types

import pytest

from cumath._bindings import _loader


@pytest.fixture
def site(tmp_path, monkeypatch):
    for folder, name in [("nvidia/cu13/lib", "libcusparse.so.12"), ("nvidia/cusparse/lib", "libcusparse.so.12"),
                         ("nvidia/cu13/lib", "libcurand.so.10"), ("nvidia/curand/lib", "libcurand.so.10"),
                         ("nvidia/cu13/lib", "libcufft.so.12"), ("nvidia/cufft/lib", "libcufft.so.11")]:
        os.makedirs(tmp_path / folder, exist_ok=True)
        (tmp_path / folder / name).write_bytes(b"")
    monkeypatch.setattr(_loader, "_sys_path_dirs", lambda: [str(tmp_path)])
    return tmp_path


def _major(monkeypatch, major):
    monkeypatch.setattr(_loader, "cuda_major", lambda: major)


@pytest.mark.parametrize("name", ["cusparse", "curand", "cufft"])
def test_a_cuda12_process_never_lists_the_cuda13_folder(site, monkeypatch, name):
    _major(monkeypatch, 12)
    found = _loader._nvidia_wheel_candidates(_loader.LIBRARIES[name])
    assert found and all(f"{os.sep}nvidia{os.sep}cu13{os.sep}" not in p for p in found), found
    assert all(os.path.basename(os.path.dirname(os.path.dirname(p))) == name for p in found)


@pytest.mark.parametrize("name", ["cusparse", "curand", "cufft"])
def test_a_cuda13_process_takes_the_cuda13_folder_first(site, monkeypatch, name):
    _major(monkeypatch, 13)
    found = _loader._nvidia_wheel_candidates(_loader.LIBRARIES[name])
    assert found[0] == str(site / "nvidia/cu13/lib" / os.path.basename(found[0]))


def test_a_cuda13_process_skips_a_cu12_folder(tmp_path, monkeypatch):
    os.makedirs(tmp_path / "nvidia/cu12/lib")
    (tmp_path / "nvidia/cu12/lib/libcusparse.so.12").write_bytes(b"")
    monkeypatch.setattr(_loader, "_sys_path_dirs", lambda: [str(tmp_path)])
    _major(monkeypatch, 13)
    assert _loader._nvidia_wheel_candidates(_loader.LIBRARIES["cusparse"]) == []
    _major(monkeypatch, 12)
    assert _loader._nvidia_wheel_candidates(_loader.LIBRARIES["cusparse"]) == [
        str(tmp_path / "nvidia/cu12/lib/libcusparse.so.12")]


def test_pathfinder_answers_from_the_other_major_folder_are_passed_over(site, monkeypatch):
    import sys

    path = str(site / "nvidia/cu13/lib/libcusparse.so.12")
    fake = types.ModuleType("cuda.pathfinder")
    fake.load_nvidia_dynamic_lib = lambda name: types.SimpleNamespace(abs_path=path)
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", fake)
    spec = _loader.LIBRARIES["cusparse"]
    _major(monkeypatch, 12)
    assert _loader._try_pathfinder(spec) is None
    _major(monkeypatch, 13)
    assert _loader._try_pathfinder(spec) == path
