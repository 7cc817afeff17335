"""The cuTENSOR binding, without the library: values from the header, the loader's search of the wheel layout."""

import os
import sys

import pytest

from cumath._bindings import _loader, cutensor


def test_enum_values_from_header():
    assert cutensor.Operator.OP_CONJ == 9 and cutensor.Operator.OP_SOFT_SIGN == 42
    assert cutensor.Algo.DEFAULT_PATIENT == -6 and cutensor.Algo.DEFAULT == -1
    assert cutensor.PlanPreferenceAttribute.JIT == 5
    assert cutensor.Status.IO_ERROR == 21
    assert cutensor.DataType.R_16BF == 14


def test_table_covers_wrappers():
    for name in cutensor.__all__:
        if name.startswith("cutensor"):
            assert name in cutensor.TABLE, name


def test_import_loads_nothing():
    import subprocess

    code = ("import cumath, cumath.tensor, sys; from cumath._bindings import _loader; "
            "assert 'cutensor' not in _loader._loaded; assert 'torch' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_wheel_layout_is_searched(tmp_path, monkeypatch):
    lib = tmp_path / "cutensor" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcutensor.so.2").write_bytes(b"")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    found = [p for p, _how in _loader._candidates("cutensor", _loader.LIBRARIES["cutensor"])
             if os.path.isabs(p)]
    assert str(lib / "libcutensor.so.2") in found


def test_missing_library_names_extra(monkeypatch):
    spec = _loader.LIBRARIES["cutensor"]
    assert spec.extra == "tensor"
    if _loader.find_library("cutensor") is not None:
        pytest.skip("cuTENSOR is installed here")
    from cumath.errors import LibraryNotFoundError

    with pytest.raises(LibraryNotFoundError, match=r"cumath\[tensor\]"):
        cutensor.cutensorGetVersion()
