"""FFT callbacks without a GPU: signature checks, cache keys, the LTO-IR disk cache (with fake IR from a
stand-in for numba-cuda), what plans accept as prolog/epilog, error messages, the missing extra, CPU
execution refusing callbacks, the numba-cuda/NumPy compatibility step and the generic content store."""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import cumath.fft as F
from cumath._core import numba_compat
from cumath._core.disk_cache import ContentStore, digest
from cumath.fft import _callbacks as CB
from cumath.fft import _compile as C
from cumath.fft._executors import device_strides
from cumath.fft._traits import fft_geometry
from helpers.matrix import random_array

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKE_VERSIONS = {"numba_cuda": "0.30.4", "numba": "0.68.0", "llvmlite": "0.46.0"}


def raises(exc, fragment, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert fragment in str(info.value), str(info.value)
    return info.value


def prolog_fn(data_in, offset, user_info, unused):
    return data_in[offset] * 2


def epilog_fn(data_out, offset, element, user_info, unused):
    data_out[offset] = element * user_info[offset]


class FakeCuda:
    """Stands in for numba.cuda: compile() returns fake "LTO-IR" that names the exported symbol."""

    def __init__(self):
        self.calls = []

    def compile(self, fn, sig, device, abi, abi_info, output, cc):
        assert device is True and abi == "c" and output == "ltoir"
        self.calls.append((fn.__name__, abi_info["abi_name"], cc))
        return b"FAKE-LTOIR:" + abi_info["abi_name"].encode() + b":" + repr(cc).encode(), None


@pytest.fixture
def fake_numba(monkeypatch, tmp_path):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    for k, v in FAKE_VERSIONS.items():
        monkeypatch.setitem(numba_compat._versions, k, v)
    monkeypatch.setattr(C, "_toolchain_cache", None)
    fake = FakeCuda()
    monkeypatch.setattr(C, "import_numba_cuda", lambda feature="": fake)
    monkeypatch.setattr(C, "_numba_signature", lambda *a: ("signature",) + a)
    C.clear_memory_cache()
    yield fake
    C.clear_memory_cache()


# ---------------------------------------------------------------------------------------- signatures

def _three(a, b, c):
    return a


def _star(*args):
    return 0


def _gen(a, b, c, d):
    yield a


def _kwonly(a, b, c, d, *, e):
    return a


@pytest.mark.parametrize("compile_fn,kind", [(F.compile_prolog, "prolog"), (F.compile_epilog, "epilog")])
@pytest.mark.parametrize("bad,fragment", [
    (42, "must be a Python function"), (len, "must be a Python function"), (int, "must be a Python function"),
    (_three, "positional arguments"), (_star, "*args"), (_kwonly, "positional arguments"),
])
def test_function_checks(compile_fn, kind, bad, fragment):
    e = raises(TypeError, fragment, compile_fn, bad, "complex64", None, compute_capability="90")
    assert f"{kind}_fn" in str(e)


def test_arity_per_kind():
    raises(TypeError, "exactly 5 positional arguments", F.compile_epilog, prolog_fn, "complex64", None)
    raises(TypeError, "exactly 4 positional arguments", F.compile_prolog, epilog_fn, "complex64", None)
    raises(TypeError, "generator", F.compile_prolog, _gen, "complex64", None)


@pytest.mark.parametrize("dtype", ["int32", "float16", "complex32", "bool", "nonsense"])
def test_element_dtype_checked(dtype):
    raises(ValueError, "element_dtype=", F.compile_prolog, prolog_fn, dtype, None)


@pytest.mark.parametrize("dtype", ["bool", "complex32", "str", "object"])
def test_user_info_dtype_checked(dtype):
    raises(ValueError, "user_info_dtype=", F.compile_prolog, prolog_fn, "complex64", dtype)


@pytest.mark.parametrize("cc", ["abc", 42, (9,), "sm_", 3.5, "99.9.9"])
def test_compute_capability_checked(cc):
    raises(ValueError, "compute_capability=", C.normalize_compute_capability, cc)


@pytest.mark.parametrize("cc", ["90", "9.0", "sm_90", "compute_90", 90, (9, 0), [9, 0]])
def test_compute_capability_forms(cc):
    assert C.normalize_compute_capability(cc) == (9, 0)


def test_validation_comes_before_the_missing_extra(monkeypatch):
    monkeypatch.setitem(numba_compat._versions, "numba_cuda", None)
    raises(TypeError, "positional arguments", F.compile_prolog, _three, "complex64", None)
    raises(ValueError, "element_dtype", F.compile_prolog, prolog_fn, "int8", None)


# ------------------------------------------------------------------------------------- missing extra

@pytest.mark.parametrize("compile_fn", [F.compile_prolog, F.compile_epilog])
def test_missing_numba_cuda_names_the_extra(monkeypatch, compile_fn):
    monkeypatch.setitem(numba_compat._versions, "numba_cuda", None)
    fn = prolog_fn if compile_fn is F.compile_prolog else epilog_fn
    e = raises(ImportError, 'pip install "cumath[dx]"', compile_fn, fn, "complex64", None, compute_capability="90")
    assert "numba-cuda" in str(e)


def test_failing_numba_import_names_the_extra(monkeypatch):
    monkeypatch.setitem(numba_compat._versions, "numba_cuda", "0.30.4")
    monkeypatch.setitem(sys.modules, "numba.cuda", None)  # makes `import numba.cuda` fail
    e = raises(ImportError, 'pip install "cumath[dx]"', numba_compat.import_numba_cuda, feature="compile_prolog",
               np_module=types.SimpleNamespace(row_stack=1))
    assert "compile_prolog" in str(e)


def test_import_cumath_fft_does_not_import_numba():
    code = ("import sys, cumath.fft\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'numba_cuda', 'llvmlite')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------------------------- numba_compat

def _fake_numpy(with_row_stack=False):
    mod = types.ModuleType("fake_numpy")
    mod.vstack = lambda arrays: ("vstack", arrays)
    mod.__version__ = "2.5.2"
    if with_row_stack:
        mod.row_stack = lambda arrays: ("row_stack", arrays)
    return mod


@pytest.fixture
def fake_numba_cuda_module(monkeypatch):
    numba = types.ModuleType("numba")
    cuda = types.ModuleType("numba.cuda")
    numba.cuda = cuda
    monkeypatch.setitem(sys.modules, "numba", numba)
    monkeypatch.setitem(sys.modules, "numba.cuda", cuda)
    monkeypatch.setattr(numba_compat, "_alias_logged", False)
    return cuda


def test_row_stack_alias_for_old_numba_cuda(monkeypatch, caplog, fake_numba_cuda_module):
    monkeypatch.setitem(numba_compat._versions, "numba_cuda", "0.30.4")
    fake_np = _fake_numpy()
    with caplog.at_level(logging.INFO, logger="cumath._core.numba_compat"):
        assert numba_compat.import_numba_cuda(np_module=fake_np) is fake_numba_cuda_module
        numba_compat.import_numba_cuda(np_module=_fake_numpy())
    assert fake_np.row_stack is fake_np.vstack
    msgs = [r.getMessage() for r in caplog.records if "row_stack" in r.getMessage()]
    assert len(msgs) == 1 and "0.30.4" in msgs[0] and "2.5.2" in msgs[0], msgs


@pytest.mark.parametrize("version", ["0.31.0", "1.2", "unknown"])
def test_no_alias_for_other_versions(monkeypatch, fake_numba_cuda_module, version):
    monkeypatch.setitem(numba_compat._versions, "numba_cuda", version)
    fake_np = _fake_numpy()
    numba_compat.import_numba_cuda(np_module=fake_np)
    assert not hasattr(fake_np, "row_stack")


def test_no_alias_when_numpy_has_row_stack(monkeypatch, fake_numba_cuda_module):
    monkeypatch.setitem(numba_compat._versions, "numba_cuda", "0.30.4")
    fake_np = _fake_numpy(with_row_stack=True)
    original = fake_np.row_stack
    numba_compat.import_numba_cuda(np_module=fake_np)
    assert fake_np.row_stack is original


def test_import_numba_cuda_without_the_package(monkeypatch):
    monkeypatch.setitem(numba_compat._versions, "numba_cuda", None)
    raises(ImportError, 'pip install "cumath[dx]"', numba_compat.import_numba_cuda, feature="device APIs")


def test_distribution_version_reads_dist_info(tmp_path, monkeypatch):
    pkg = tmp_path / "somepkg_xyz"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (tmp_path / "somepkg_xyz-1.2.3.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    numba_compat._versions.pop("somepkg_xyz", None)
    try:
        assert numba_compat.distribution_version("somepkg_xyz") == "1.2.3"
        assert "somepkg_xyz" not in sys.modules  # found, not imported
        assert numba_compat.distribution_version("no_such_package_qq") is None
    finally:
        numba_compat._versions.pop("somepkg_xyz", None)
        numba_compat._versions.pop("no_such_package_qq", None)


# ------------------------------------------------------------------------------------------ cache keys

def _key(fn, kind="prolog", elem="complex64", uinfo=None, cc="90"):
    return C.callback_cache_key(kind, fn, elem, uinfo, cc)[0]


def _make(src, **env):
    scope = dict(env)
    exec(src, scope)
    return scope["f"]


SRC = "def f(data_in, offset, user_info, unused):\n    return data_in[offset] * SCALE\n"


def test_key_is_stable_and_content_addressed():
    f1, f2 = _make(SRC, SCALE=2.0), _make(SRC, SCALE=2.0)
    assert _key(f1) == _key(f1) == _key(f2)  # the same code and values in two function objects


def test_key_changes_with_code_constants_globals_and_closures():
    base = _key(_make(SRC, SCALE=2.0))
    assert _key(_make(SRC, SCALE=3.0)) != base  # a global's value
    assert _key(_make(SRC.replace("* SCALE", "* SCALE + 1"), SCALE=2.0)) != base  # the code
    assert _key(_make(SRC.replace("* SCALE", "+ SCALE"), SCALE=2.0)) != base

    def closure(v):
        def f(data_in, offset, user_info, unused):
            return data_in[offset] * v
        return f

    assert _key(closure(2)) == _key(closure(2))
    assert _key(closure(2)) != _key(closure(3))
    assert _key(closure(2)) != _key(closure(2.0))  # int and float constants compile differently


def test_key_follows_arrays_functions_and_defaults():
    a = np.arange(4.0)
    f = _make(SRC, SCALE=a)
    k = _key(f)
    a[0] = 7.0
    assert _key(f) != k  # global arrays are frozen into the code: their contents count
    helper_src = "def helper(x):\n    return x * K\n"
    s1, s2 = {"K": 1}, {"K": 2}
    exec(helper_src + SRC.replace("* SCALE", "* helper(2)"), s1)
    exec(helper_src + SRC.replace("* SCALE", "* helper(2)"), s2)
    assert _key(s1["f"]) != _key(s2["f"])  # a called function's globals count too
    d1 = _make("def f(data_in, offset, user_info, unused, k=1):\n    return data_in[offset]\n")
    d2 = _make("def f(data_in, offset, user_info, unused, k=2):\n    return data_in[offset]\n")
    assert C.function_fingerprint(d1)[0] != C.function_fingerprint(d2)[0]


def test_key_changes_with_types_target_and_toolchain(monkeypatch):
    f = _make(SRC, SCALE=2.0)
    base = _key(f)
    assert _key(f, elem="complex128") != base
    assert _key(f, uinfo="float32") != base
    assert _key(f, uinfo="float32") != _key(f, uinfo="complex64")
    assert _key(f, cc="80") != base
    assert _key(f, kind="prolog") != _key(_make(SRC.replace("return", "x =").replace(
        "def f(data_in, offset, user_info, unused)", "def f(data_out, offset, element, user_info, unused)"),
        SCALE=2.0), kind="epilog")
    for pkg, version in (("numba_cuda", "0.31.0"), ("numba", "0.69.0"), ("llvmlite", "0.47.0")):
        monkeypatch.setattr(C, "_toolchain_cache", None)
        monkeypatch.setitem(numba_compat._versions, pkg, version)
        assert _key(f) != base, pkg
    monkeypatch.setattr(C, "_toolchain_cache", None)
    monkeypatch.setattr(C, "_nvvm_files", lambda: (("/x/libnvvm.so.4", 1, 2),))
    assert _key(f) != base


def test_objects_without_identity_make_process_local_keys():
    class Thing:
        pass

    f = _make(SRC, SCALE=Thing())
    _, persistent = C.callback_cache_key("prolog", f, "complex64", None, "90")
    assert persistent is False
    assert C.callback_cache_key("prolog", _make(SRC, SCALE=2.0), "complex64", None, "90")[1] is True


def test_modules_and_builtins_in_keys():
    import cmath
    import math

    f = _make("def f(data_in, offset, user_info, unused):\n    return data_in[offset] * m.exp(abs(2.0))\n",
              m=math)
    g = _make("def f(data_in, offset, user_info, unused):\n    return data_in[offset] * m.exp(abs(2.0))\n",
              m=cmath)
    assert C.callback_cache_key("prolog", f, "complex64", None, "90")[1] is True
    assert _key(f) != _key(g)


# ------------------------------------------------------------------------------------ compile and cache

def test_compile_returns_named_ltoir(fake_numba):
    ir = F.compile_epilog(epilog_fn, "complex64", "float32", compute_capability="90")
    assert isinstance(ir, bytes) and type(ir) is CB.LTOIR
    assert ir.kind == "epilog" and ir.element_dtype == "complex64" and ir.user_info_dtype == "float32"
    assert ir.symbol == f"cumath_epilog_c64_{ir.key[:16]}"
    mangled = f"_Z{len(ir.symbol)}{ir.symbol}Pvy6float2S_S_"
    assert fake_numba.calls == [("epilog_fn", mangled, (9, 0))]
    assert mangled.encode() in ir
    ir2 = F.compile_epilog(epilog_fn, "complex64", "float32", compute_capability="90")
    assert ir2 is ir and len(fake_numba.calls) == 1  # memory hit


@pytest.mark.parametrize("kind,elem,suffix", [
    ("prolog", "complex64", "PvyS_S_"), ("prolog", "float64", "PvyS_S_"),
    ("epilog", "complex64", "Pvy6float2S_S_"), ("epilog", "complex128", "Pvy7double2S_S_"),
    ("epilog", "float32", "PvyfS_S_"), ("epilog", "float64", "PvydS_S_"),
])
def test_mangled_names(kind, elem, suffix):
    assert CB.mangled_name("my_cb", kind, elem) == "_Z5my_cb" + suffix
    assert CB.mangled_name("my_load", "prolog", elem) == "_Z7my_loadPvyS_S_"  # as in the probe


def test_disk_cache_round_trip(fake_numba, tmp_path):
    ir = F.compile_prolog(prolog_fn, "complex128", None, compute_capability=(8, 0))
    path = tmp_path / "ltoir" / f"{ir.key}.ltoir"
    assert path.is_file()
    assert not [p for p in os.listdir(tmp_path / "ltoir") if p.startswith(".tmp-")]
    C.clear_memory_cache()
    again = F.compile_prolog(prolog_fn, "complex128", None, compute_capability=(8, 0))
    assert len(fake_numba.calls) == 1  # loaded, not compiled
    assert again == ir and type(again) is CB.LTOIR
    assert (again.kind, again.element_dtype, again.symbol, again.key) == (ir.kind, ir.element_dtype, ir.symbol,
                                                                         ir.key)


def test_damaged_cache_file_is_recompiled(fake_numba, tmp_path, caplog):
    ir = F.compile_prolog(prolog_fn, "complex64", None, compute_capability="90")
    path = tmp_path / "ltoir" / f"{ir.key}.ltoir"
    raw = path.read_bytes()
    path.write_bytes(raw[:-3] + b"XYZ")
    C.clear_memory_cache()
    with caplog.at_level(logging.WARNING):
        again = F.compile_prolog(prolog_fn, "complex64", None, compute_capability="90")
    assert again == ir and len(fake_numba.calls) == 2
    assert any("damaged" in r.getMessage() for r in caplog.records)


def test_process_local_functions_are_not_written(fake_numba, tmp_path):
    class Thing:
        pass

    f = _make(SRC, SCALE=Thing())
    F.compile_prolog(f, "complex64", None, compute_capability="90")
    assert not (tmp_path / "ltoir").exists() or not os.listdir(tmp_path / "ltoir")
    F.compile_prolog(f, "complex64", None, compute_capability="90")
    assert len(fake_numba.calls) == 1  # memory still serves it


def test_compile_errors_are_explained(fake_numba, monkeypatch):
    class TypingError(Exception):
        pass

    def failing(*a, **k):
        raise TypingError("No conversion from none to complex64")

    monkeypatch.setattr(fake_numba, "compile", failing)
    e = raises(TypeError, "numba-cuda could not compile", F.compile_prolog, prolog_fn, "complex64", "float32",
               compute_capability="90")
    assert "No conversion" in str(e) and "prolog_fn(data_in, offset" in str(e)

    def crashing(*a, **k):
        raise OSError("libnvvm missing")

    monkeypatch.setattr(fake_numba, "compile", crashing)
    raises(RuntimeError, "libnvvm missing", F.compile_prolog, prolog_fn, "complex64", None, compute_capability="90")


SECOND_PROCESS = r"""
import sys, time
from cumath._core import numba_compat
numba_compat._versions.update({versions!r})
def fail(*a, **k):
    raise AssertionError("compiled instead of loading")
numba_compat.import_numba_cuda = fail
import cumath.fft as F
from cumath.fft import _compile as C
C.import_numba_cuda = fail
src = {src!r}
scope = {{}}
exec(src, scope)
t0 = time.perf_counter()
ir = F.compile_epilog(scope["f"], "complex64", "float32", compute_capability="90")
dt = time.perf_counter() - t0
print(ir.symbol, dt, any(m.split(".")[0] in ("numba", "numba_cuda") for m in sys.modules))
"""

EPILOG_SRC = ("def f(data_out, offset, element, user_info, unused):\n"
              "    data_out[offset] = element * user_info[offset]\n")


def test_second_process_loads_from_disk_without_numba(fake_numba, tmp_path):
    scope = {}
    exec(EPILOG_SRC, scope)
    ir = F.compile_epilog(scope["f"], "complex64", "float32", compute_capability="90")
    code = SECOND_PROCESS.format(versions=FAKE_VERSIONS, src=EPILOG_SRC)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=ROOT, CUMATH_CACHE_DIR=str(tmp_path)))
    assert out.returncode == 0, out.stderr
    symbol, seconds, numba_loaded = out.stdout.split()
    assert symbol == ir.symbol
    assert numba_loaded == "False"
    assert float(seconds) < 0.5  # < 50 ms on the GPU machine (benchmarks/fft.py --case callbacks); lenient here


# ------------------------------------------------------------------------------------- DeviceCallable

IR = b"\x00junk cumath_epilog_c64_0123456789abcdef more junk"


def test_device_callable_forms():
    a = F.DeviceCallable(IR, data=0x1000)
    assert a.ltoir == IR and a.size == len(IR) and a.data == 0x1000 and a.symbol is None
    assert a == F.DeviceCallable(bytearray(IR), data=0x1000) == F.DeviceCallable(memoryview(IR), data=0x1000)
    assert hash(a) == hash(F.DeviceCallable(IR, data=0x1000))
    assert a != F.DeviceCallable(IR, data=0x2000)
    assert F.DeviceCallable(IR).data == 0 and F.DeviceCallable(IR, data=0).data == 0  # nvmath-python: None is 0
    buf = ctypes.create_string_buffer(IR, len(IR))
    assert F.DeviceCallable(ctypes.addressof(buf), size=len(IR)).ltoir == IR
    assert F.DeviceCallable(IR + b"tail", size=len(IR)).ltoir == IR
    assert "0x1000" in repr(a)


@pytest.mark.parametrize("kwargs,exc,fragment", [
    ({}, ValueError, "needs ltoir"),
    ({"ltoir": 1234}, ValueError, "needs size="),
    ({"ltoir": IR, "size": len(IR) + 1}, ValueError, "size="),
    ({"ltoir": b""}, ValueError, "empty"),
    ({"ltoir": 3.5}, ValueError, "ltoir must be LTO-IR bytes"),
    ({"ltoir": "code"}, ValueError, "ltoir must be LTO-IR bytes"),
    ({"ltoir": IR, "size": 2.0}, TypeError, "size must be an int"),
    ({"ltoir": IR, "data": -1}, ValueError, "non-negative"),
    ({"ltoir": IR, "data": True}, TypeError, "not a bool"),
    ({"ltoir": IR, "data": "ptr"}, TypeError, "data must be"),
    ({"ltoir": IR, "symbol": "not a name"}, ValueError, "symbol"),
])
def test_device_callable_errors(kwargs, exc, fragment):
    raises(exc, fragment, F.DeviceCallable, **kwargs)


def test_device_callable_rejects_host_data():
    raises(ValueError, "GPU memory", F.DeviceCallable, IR, data=np.ones(4, dtype=np.float32))


def test_callback_keys_for_plan_caches():
    assert CB.callback_key(None) is None
    assert CB.callback_key(IR) is IR
    d = CB.callback_key({"ltoir": IR, "data": 0x1000})
    assert d == F.DeviceCallable(IR, data=0x1000)
    assert CB.callback_key(bytearray(IR)) == IR
    raises(ValueError, "unknown DeviceCallable field", CB.callback_key, {"ltoir": IR, "user_data": 1})
    raises(TypeError, "LTO-IR bytes", CB.callback_key, 42)
    x = random_array((4, 8), "complex64")
    k1 = F.FFT.create_key(x, prolog={"ltoir": IR, "data": 0x1000})
    k2 = F.FFT.create_key(x, prolog=F.DeviceCallable(IR, data=0x1000))
    assert k1 == k2 and hash(k1) == hash(k2)
    assert F.FFT.create_key(x, prolog=F.DeviceCallable(IR, data=0x2000)) != k1


# ----------------------------------------------------------------------------------- plan-time checks

def _ir(kind, elem, key="0123456789abcdef"):
    return b"\x01\x02" + f"cumath_{kind}_{CB.SHORT[elem]}_{key}".encode() + b"\x03"


@pytest.mark.parametrize("fft_type,precision,prolog_elem,epilog_elem", [
    ("C2C", "float32", "complex64", "complex64"), ("C2C", "float64", "complex128", "complex128"),
    ("R2C", "float32", "float32", "complex64"), ("R2C", "float64", "float64", "complex128"),
    ("C2R", "float32", "complex64", "float32"), ("C2R", "float64", "complex128", "float64"),
])
def test_resolve_matches_element_types(fft_type, precision, prolog_elem, epilog_elem):
    pro, epi = CB.resolve_callbacks(_ir("prolog", prolog_elem), F.DeviceCallable(_ir("epilog", epilog_elem),
                                                                                  data=0x10), fft_type, precision)
    assert pro.kind == "prolog" and pro.element_dtype == prolog_elem
    assert pro.cbtype == {"complex64": 0, "complex128": 1, "float32": 2, "float64": 3}[prolog_elem]
    assert epi.cbtype == {"complex64": 4, "complex128": 5, "float32": 6, "float64": 7}[epilog_elem]
    assert pro.name == b"cumath_prolog_" + CB.SHORT[prolog_elem].encode() + b"_0123456789abcdef"
    assert epi.data == 0x10 and pro.data == 0
    assert ctypes.c_void_p.from_address(epi.caller_info_address).value == 0x10
    wrong = {"complex64": "complex128", "complex128": "complex64", "float32": "float64", "float64": "float32"}
    e = raises(ValueError, f"compiled for {wrong[prolog_elem]} elements", CB.resolve_callbacks,
               _ir("prolog", wrong[prolog_elem]), None, fft_type, precision)
    assert f"element_dtype='{prolog_elem}'" in str(e)
    raises(ValueError, f"element_dtype='{epilog_elem}'", CB.resolve_callbacks, None,
           _ir("epilog", wrong[epilog_elem]), fft_type, precision)


def test_resolve_checks_kind_and_naming():
    raises(ValueError, "holds an epilog", CB.resolve_callbacks, _ir("epilog", "complex64"), None, "C2C", "float32")
    raises(ValueError, "holds a prolog", CB.resolve_callbacks, None, _ir("prolog", "complex64"), "C2C", "float32")
    raises(ValueError, "no callback compiled by cumath", CB.resolve_callbacks, b"foreign IR", None, "C2C",
           "float32")
    both = _ir("prolog", "complex64", "1" * 16) + _ir("prolog", "complex64", "2" * 16)
    raises(ValueError, "several callbacks", CB.resolve_callbacks, both, None, "C2C", "float32")
    (foreign,) = CB.resolve_callbacks(F.DeviceCallable(b"foreign IR", symbol="my_load"), None, "C2R", "float64")
    assert foreign.name == b"my_load" and foreign.mangled == "_Z7my_loadPvyS_S_" and foreign.cbtype == 1
    raises(TypeError, "half-precision", CB.resolve_callbacks, _ir("prolog", "complex64"), None, "C2C", "float16")


def test_ltoir_metadata_is_used_and_pickled():
    import pickle

    ir = CB.LTOIR(b"opaque", kind="epilog", element_dtype="float32", user_info_dtype="void",
                  symbol="cumath_epilog_f32_" + "a" * 16, key="a" * 64)
    (att,) = CB.resolve_callbacks(None, ir, "C2R", "float32")
    assert att.name == ir.symbol.encode() and att.cbtype == 6
    back = pickle.loads(pickle.dumps(ir))
    assert type(back) is CB.LTOIR and back == ir and back.symbol == ir.symbol and back.kind == "epilog"


# -------------------------------------------------------------------------------------- CPU execution

@pytest.mark.parametrize("name,dtype", [("fft", "complex128"), ("ifft", "complex64"), ("rfft", "float64"),
                                        ("irfft", "complex128")])
@pytest.mark.parametrize("where", ["prolog", "epilog"])
def test_cpu_execution_rejects_callbacks(name, dtype, where):
    x = random_array((8, 6), dtype)
    raises(ValueError, "not supported with CPU execution", getattr(F, name), x, **{where: IR})
    with F.FFT(x, options={"fft_type": {"fft": "C2C", "ifft": "C2C", "rfft": "R2C", "irfft": "C2R"}[name]}) as f:
        raises(ValueError, "not supported with CPU execution", f.plan, **{where: IR})


def test_stateful_layouts_on_the_cpu():
    x = random_array((6, 10), "float64")
    with F.FFT(x) as f:
        lin, lout = f.get_input_layout(), f.get_output_layout()
    assert lin == ((6, 10), (10, 1)) and lin.shape == (6, 10) and lin.strides == (10, 1)
    assert lout.shape == (6, 6) and lout.strides == (6, 1)


def test_overwrite_input_option():
    assert F.FFTOptions(overwrite_input=True).overwrite_input is True
    raises(ValueError, "overwrite_input=", F.FFTOptions, overwrite_input="yes")


# --------------------------------------------------------------------------- layouts the callbacks see

def _geom(shape, dtype, axes=None, fft_type=None, strides=None, inplace=False, parity="even"):
    strides = strides or tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    return fft_geometry(shape, strides, dtype, axes, fft_type, parity, "optimized", inplace), strides


def test_device_layouts_follow_the_operand():
    g, s = _geom((4, 6, 8), "complex64")
    assert device_strides(g, s, host_operand=False) == ((48, 8, 1), (48, 8, 1))
    g, s = _geom((4, 6, 8), "float32", axes=(1, 2))
    assert device_strides(g, s, host_operand=False) == ((48, 8, 1), (30, 5, 1))
    inner = (1, 32, 4)  # batch axis 0 innermost: cuFFT reads it as is (stride 4, distance 1)
    g, _ = _geom((4, 6, 8), "complex128", axes=(1, 2), strides=inner)
    assert device_strides(g, inner, host_operand=False)[0] == inner
    fs = (1, 4, 24)  # Fortran order: axis 2 outside axis 1, which cuFFT cannot describe: a dense copy
    g, _ = _geom((4, 6, 8), "complex128", axes=(1, 2), strides=fs)
    assert device_strides(g, fs, host_operand=False)[0] == (48, 8, 1)  # canonical: batch axis outermost
    g, s = _geom((5, 7), "complex64", inplace=True)
    assert device_strides(g, s, host_operand=False) == ((7, 1), (7, 1))


def test_device_layouts_of_c2r_and_overwrite_input():
    g, s = _geom((4, 5), "complex64", fft_type="C2R")
    assert device_strides(g, s, host_operand=False) == ((5, 1), (8, 1))  # a dense copy, then the result
    assert device_strides(g, s, host_operand=False, overwrite_input=True) == ((5, 1), (8, 1))
    neg = (-5, 1)  # negative strides: copied (into the canonical layout), whatever the option
    g2, _ = _geom((4, 5), "complex64", fft_type="C2R", strides=neg)
    assert device_strides(g2, neg, host_operand=False, overwrite_input=True)[0] == (5, 1)
    g3, s3 = _geom((4, 6, 5), "complex64", axes=(1, 2), fft_type="C2R")
    assert device_strides(g3, s3, host_operand=True) == ((30, 5, 1), (48, 8, 1))


# ------------------------------------------------------------------------------------- content store

def test_digest_is_type_tagged_and_stable():
    assert digest(1) != digest(1.0) != digest("1") != digest(b"1") != digest(True)
    assert digest((1, 2)) != digest([1, 2])
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})
    assert digest(("x", (1, 2.5, None))) == digest(("x", (1, 2.5, None)))
    assert len(digest()) == 64
    raises(TypeError, "plain values", digest, object())


def test_content_store_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    store = ContentStore("blobs", suffix=".bin")
    key = digest("k")
    assert store.get(key) is None
    entry = store.put(key, b"\x00payload", {"kind": "test", "n": 3})
    assert entry.data == b"\x00payload" and entry.meta == {"kind": "test", "n": 3}
    fresh = ContentStore("blobs", suffix=".bin")  # another process's view: disk only
    got = fresh.get(key)
    assert got == entry
    assert fresh.get(key, disk=False) == entry  # now in its memory
    assert sorted(os.listdir(tmp_path / "blobs")) == [key + ".bin"]
    store.discard(key)
    assert ContentStore("blobs", suffix=".bin").get(key) is None
    raises(ValueError, "hex digests", store.path, "../escape")


@pytest.mark.parametrize("damage", ["truncate", "magic", "header", "flip"])
def test_content_store_ignores_damaged_files(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    key = digest(damage)
    ContentStore("blobs").put(key, b"0123456789" * 10, {"a": 1})
    path = tmp_path / "blobs" / (key + ".bin")
    raw = path.read_bytes()
    raw = {"truncate": raw[:-5], "magic": b"X" + raw[1:], "header": raw[:18] + b"x" + raw[19:],
           "flip": raw[:-1] + bytes([raw[-1] ^ 1])}[damage]
    path.write_bytes(raw)
    assert ContentStore("blobs").get(key) is None


def test_content_store_survives_an_unwritable_folder(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    store = ContentStore("blobs")
    import tempfile  # (the disk cache imports it where it writes)

    monkeypatch.setattr(tempfile, "mkstemp", lambda **k: (_ for _ in ()).throw(OSError("read-only")))
    with caplog.at_level(logging.WARNING):
        store.put(digest("x"), b"data")
    assert store.get(digest("x")).data == b"data"  # memory still has it
    assert any("could not write" in r.getMessage() for r in caplog.records)


def test_content_store_memory_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    store = ContentStore("blobs", max_memory_entries=3)
    keys = [digest(i) for i in range(5)]
    for k in keys:
        store.put(k, b"x", disk=False)
    assert [store.get(k, disk=False) is not None for k in keys] == [False, False, True, True, True]


def test_plain_bytes_of_compiled_ir_are_recognised(fake_numba):
    ir = F.compile_epilog(epilog_fn, "float64", None, compute_capability="90")
    plain = bytes(ir)
    assert type(plain) is bytes
    (att,) = CB.resolve_callbacks(None, plain, "C2R", "float64")
    assert att.name == ir.symbol.encode() and att.cbtype == 7
    C.clear_memory_cache()  # another process sharing the cache folder: the index file on disk
    (att,) = CB.resolve_callbacks(None, {"ltoir": plain, "data": 16}, "C2R", "float64")
    assert att.name == ir.symbol.encode() and att.data == 16
    raises(ValueError, "compiled for float64 elements", CB.resolve_callbacks, None, plain, "C2R", "float32")
    assert CB.describe_ltoir(plain + b"x") is None
