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


@pytest.mark.parametrize("native", ["1", "0"])
def test_contract_argument_words_reach_the_c_signature(native):
    """The engine's fast caller of cutensorContract (``call_words`` over the table's signature) passes eleven
    ints as the C function receives them, 64-bit words and the workspace size included, with and without the
    compiled extension (a ctypes callback with cutensorContract's signature stands in for the library)."""
    import subprocess

    code = """if True:
        import ctypes
        from cumath._bindings import cutensor
        from cumath._core._fast import NATIVE, call_words
        restype, argtypes = cutensor.TABLE["cutensorContract"]
        seen = []

        @ctypes.CFUNCTYPE(restype, *argtypes)
        def fake(*args):
            seen.append(tuple(0 if a is None else a for a in args))
            return 7 if len(seen) > 1 else 0

        fn = call_words(fake)
        words = [0x7f00000010, 0x7f00000020, 0x7f00000030, 0x7f10000040, 0x7f20000050, 0x7f00000060,
                 0x7f30000070, 0x7f30000070, 0x7f40000080, (1 << 33) + 5, 0]
        assert fn(*words) == 0 and seen[0] == tuple(words), seen
        assert fn(*words) == 7  # the status comes back, not raised
        print(NATIVE)
    """
    env = dict(os.environ, CUMATH_NATIVE=native)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    if native == "0":
        assert out.stdout.split()[-1] == "False"  # the ctypes fallback was the one tested
