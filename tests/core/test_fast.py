"""The compiled hot path (cumath/_core/_fast) and its ctypes fallback: the same calls, the same errors."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from cumath._core import _fast

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PROTO_VOID = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_PROTO_LONG = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def _c_functions():
    """(void function, status function, calls seen): C-callable functions (ctypes callbacks) to call."""
    seen = []

    def record(a, b, c):
        seen.append((a, b, c))

    def status(a, b, c):
        seen.append((a, b, c))
        return a or 0

    void_cb, long_cb = _PROTO_VOID(record), _PROTO_LONG(status)
    # as a library's function would be bound: a typed ctypes function at the callback's address
    lib_void = _PROTO_VOID(ctypes.cast(void_cb, ctypes.c_void_p).value)
    lib_long = _PROTO_LONG(ctypes.cast(long_cb, ctypes.c_void_p).value)
    return lib_void, lib_long, seen, (void_cb, long_cb)


def test_native_is_built_here():
    # the build backend builds it (setup.py); a source checkout needs `python setup.py build_ext --inplace`
    if not _fast.NATIVE:
        pytest.skip("the C extension is not built in this checkout (the ctypes fallback is in use)")
    assert type(_fast.call3(_c_functions()[0])).__name__ == "Call3"


def test_calls_pass_the_pointers_and_statuses():
    fv, fl, seen, _keep = _c_functions()
    fast_v = _fast.call3(fv)
    assert fast_v(1, 2, 3) is None
    errors = []
    fast_l = _fast.call3(fl, status=True, on_error=errors.append)
    assert fast_l(0, 5, 1 << 40) == 0 and not errors
    assert fast_l(7, 0, 0) == 7 and errors == [7]
    assert seen == [(1, 2, 3), (None, 5, 1 << 40), (7, None, None)]


def test_a_failing_status_raises_what_on_error_raises():
    fv, fl, seen, _keep = _c_functions()

    def boom(status):
        raise RuntimeError(f"status {status}")

    fast_l = _fast.call3(fl, status=True, on_error=boom)
    with pytest.raises(RuntimeError, match="status 3"):
        fast_l(3, 0, 0)


_PROTO_IPPI = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)


def test_the_int_pointer_pointer_int_caller():
    seen = []

    def exec_like(h, a, b, d):  # cufftXtExec(handle, in, out, direction)
        seen.append((h, a, b, d))
        return 0 if d != 99 else 5

    cb = _PROTO_IPPI(exec_like)
    lib_fn = _PROTO_IPPI(ctypes.cast(cb, ctypes.c_void_p).value)
    errors = []
    f = _fast.call_ippi(lib_fn, errors.append)
    assert f(7, 1 << 33, 16, -1) == 0 and not errors
    assert f(7, 0, 0, 99) == 5 and errors == [5]
    assert seen == [(7, 1 << 33, 16, -1), (7, None, None, 99)]
    assert _fast.call_ippi(lib_fn)(3, 0, 0, 1) == 0
    if _fast.NATIVE:
        with pytest.raises(TypeError, match="4 positional arguments"):
            f(1, 2, 3)
        with pytest.raises(OverflowError, match="C int range"):
            f(1 << 40, 0, 0, 1)
        with pytest.raises(ValueError, match="signature 'pppp' is not supported"):
            _fast._native.Call3(f.address, True, None, "pppp")


class _Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


def test_the_word_caller_of_sixteen_arguments():
    """cublasLtMatmul's shape: 12 pointers, a pointer to a struct, a pointer, a size_t, a pointer."""
    proto_args = [ctypes.c_void_p] * 12 + [ctypes.POINTER(_Algo), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    seen = []

    def matmul_like(*args):
        algo = args[12]
        seen.append((args[:12], ctypes.addressof(algo.contents) if algo else None, args[13:]))
        return 0 if args[0] != 99 else 13

    cb = ctypes.CFUNCTYPE(ctypes.c_int, *proto_args)(matmul_like)
    lib_fn = ctypes.CFUNCTYPE(ctypes.c_int, *proto_args)(ctypes.cast(cb, ctypes.c_void_p).value)
    algo = _Algo()
    errors = []
    f = _fast.call_words(lib_fn, errors.append)
    words = list(range(1, 13)) + [ctypes.addressof(algo), 1 << 45, 4096, None]
    assert f(*words) == 0 and not errors
    assert seen[-1] == (tuple(range(1, 13)), ctypes.addressof(algo), (1 << 45, 4096, None))
    assert f(99, *words[1:12], None, 0, 0, 0) == 13 and errors == [13]
    assert seen[-1][1] is None
    if _fast.NATIVE:
        assert type(f).__name__ == "CallWords"
        with pytest.raises(TypeError, match="takes 16 positional arguments"):
            f(1, 2)
        with pytest.raises(ValueError, match="1 <= N <= 16"):
            _fast._native.Call3(f.address, True, None, "w17")


def test_a_table_of_calls_runs_its_rows_in_order_with_their_words():
    """run_table: rows lo..hi-1 called, each with its own words (getrs' shape: nine pointers and a size_t)."""
    if _fast.run_table is None:
        pytest.skip("the C extension is not built in this checkout (run_table is None: callers use ctypes)")
    import numpy as np

    seen = []
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 9 + [ctypes.c_size_t]))
    cb = proto(lambda *args: seen.append(args))
    other = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda a: seen.append(("other", a)))
    table = np.zeros((4, 11), dtype=np.intp)
    for r in range(4):
        table[r, 0] = ctypes.cast(cb if r != 2 else other, ctypes.c_void_p).value
        table[r, 1:] = np.arange(1, 11) + 100 * r
    table[1, 10] = 1 << 40  # a full 64-bit word
    _fast.run_table(table.ctypes.data, 4, 11, 1, 4)
    assert seen == [(101, 102, 103, 104, 105, 106, 107, 108, 109, (1 << 40)), ("other", 201),
                    tuple(range(301, 311))]
    seen.clear()
    _fast.run_table(table.ctypes.data, 4, 11, 2, 2)  # an empty range calls nothing
    narrow = np.ascontiguousarray(table[:, :2])  # a width of 2: the function and one word
    narrow[:, 0] = ctypes.cast(other, ctypes.c_void_p).value
    _fast.run_table(narrow.ctypes.data, 4, 2, 0, 2)
    assert seen == [("other", 1), ("other", 101)]
    for args, message in (((table.ctypes.data, 4, 11, 0, 5), "cannot run rows 0..5"),
                          ((table.ctypes.data, 4, 18, 0, 1), "4 x 18 words"),
                          ((table.ctypes.data, 4, 1, 0, 1), "4 x 1 words"),
                          ((table.ctypes.data, 4, 11, 3, 2), "cannot run rows 3..2"),
                          ((0, 4, 11, 0, 1), "cannot run rows 0..1")):
        with pytest.raises(ValueError, match=message):
            _fast.run_table(*args)
    with pytest.raises(TypeError, match="takes 5 arguments"):
        _fast.run_table(table.ctypes.data, 4, 11)
    with pytest.raises(TypeError):
        _fast.run_table("x", 4, 11, 0, 1)


def test_python_callables_are_returned_as_they_are():
    def stub(a, b, c):
        return a

    assert _fast.call3(stub) is stub
    assert _fast.call_ippi(stub) is stub
    assert _fast.call_words(stub) is stub


@pytest.mark.skipif(not _fast.NATIVE, reason="the C extension is not built")
def test_native_argument_errors():
    fv, fl, seen, _keep = _c_functions()
    f = _fast.call3(fv)
    with pytest.raises(TypeError, match="3 positional arguments"):
        f(1, 2)
    with pytest.raises(TypeError):
        f(1, 2, "x")
    with pytest.raises(TypeError, match="3 positional arguments"):
        f(1, 2, c=3)
    with pytest.raises(ValueError, match="non-zero function address"):
        _fast._native.Call3(0)
    with pytest.raises(TypeError, match="on_error must be callable"):
        _fast._native.Call3(f.address, True, 5)
    assert f.address == ctypes.cast(fv, ctypes.c_void_p).value
    assert seen == []


def _run(code, **env):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, *sys.path]), **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, capture_output=True, text=True,
                          timeout=300)


FFT_CHECK = """
    import numpy as np, cumath
    from cumath._core import _fast
    x = np.random.default_rng(0).standard_normal(4096) + 1j
    for engine in ("auto", "fftw", "dfti", "scipy"):
        try:
            y = cumath.fft.fft(x, options={"cpu_engine": engine})
        except OSError:
            continue
        assert np.allclose(y, np.fft.fft(x)), engine
    print(_fast.NATIVE)
"""


def test_the_fallback_runs_ffts():
    res = _run(FFT_CHECK, CUMATH_NATIVE="0")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[-1] == "False"


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_the_build_backend_builds_it_and_a_missing_compiler_does_not_stop_the_build(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "*.so", "__pycache__", "build", "tests",
                                                             "benchmarks", "docs", "examples"))
    built = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=src,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    assert list((src / "cumath" / "_core" / "_fast").glob("_native*.so"))
    env = {k: v for k, v in os.environ.items() if k != "CUMATH_NATIVE"}
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(FFT_CHECK)], cwd=src, capture_output=True, text=True,
                         env=dict(env, PYTHONPATH=os.pathsep.join([str(src), *sys.path])), timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[-1] == "True"
    for so in (src / "cumath" / "_core" / "_fast").glob("_native*.so"):
        so.unlink()
    shutil.rmtree(src / "build", ignore_errors=True)
    nocc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=src,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, CC="/bin/false"))
    assert nocc.returncode == 0, nocc.stderr  # optional extension: the build goes on without it
    assert not list((src / "cumath" / "_core" / "_fast").glob("_native*.so"))


# ------------------------------------------------------------------------------------- NumPy operand fields
import numpy as np  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from cumath._core.operand import wrap_operand  # noqa: E402


def _expected(a):
    return (a.__array_interface__["data"][0], a.shape, tuple(s // a.itemsize for s in a.strides),
            not a.flags.writeable)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=4), dtype=st.sampled_from(
    ["float32", "float64", "complex64", "complex128", "float16"]), steps=st.lists(
    st.sampled_from([1, 2, -1, -2]), min_size=4, max_size=4), readonly=st.booleans(), transpose=st.booleans())
def test_wrapped_numpy_operands_match_numpy(shape, dtype, steps, readonly, transpose):
    a = np.zeros([n * 2 for n in shape], dtype=dtype)
    a = a[(Ellipsis, *(slice(None, None, s) for s in steps[:a.ndim]))]  # Ellipsis: a 0-d array stays one
    if transpose:
        a = a.T
    if readonly:
        a.flags.writeable = False
    op = wrap_operand(a)
    assert (op.ptr, op.shape, op.strides, op.readonly) == _expected(a)
    reader = _fast.numpy_fields_reader()
    if reader is not None:
        assert reader(a, a.itemsize) == _expected(a)


def test_odd_strides_and_subclasses():
    from cumath.errors import UnsupportedLayoutError

    raw = np.zeros(40, dtype=np.uint8)[1:33].view(np.complex128)  # aligned to nothing, whole elements
    assert wrap_operand(raw).ptr == raw.__array_interface__["data"][0]
    rec = np.zeros(8, dtype=[("a", "<f8"), ("b", "<c16")])["b"]  # stride 24: not whole complex128 elements
    reader = _fast.numpy_fields_reader()
    if reader is not None:
        assert reader(rec, 16) is None
    with pytest.raises(UnsupportedLayoutError, match="not multiples of its item size"):
        wrap_operand(rec)
    m = np.memmap  # a NumPy subclass of ndarray (module numpy): read as an array struct too
    sub = np.ones((2, 6), dtype=np.complex128)[:, ::2].view(m)
    assert type(sub) is m
    op = wrap_operand(sub)
    assert (op.ptr, op.shape, op.strides, op.readonly) == _expected(sub)


@pytest.mark.skipif(not _fast.NATIVE, reason="the C extension is not built")
def test_numpy_fields_argument_errors():
    with pytest.raises(TypeError, match="numpy_fields"):
        _fast._native.numpy_fields(np.zeros(2))
    with pytest.raises(ValueError, match="itemsize must be positive"):
        _fast._native.numpy_fields(np.zeros(2), 0)


# ------------------------------------------------------------------------------------------------ GPU
@pytest.mark.gpu
def test_gpu_hot_paths_run_through_the_compiled_callers():
    cp = pytest.importorskip("cupy")
    import cumath
    from cumath.linalg.advanced._backends import cublaslt as lt_backend

    x = cp.random.rand(2048) + 1j * cp.random.rand(2048)
    with cumath.fft.FFT(x) as f:
        f.plan()
        for _ in range(3):
            y = f.execute()
        assert (type(f._executor.backend.exec_fn).__name__ == "Call3") == _fast.NATIVE
    cp.testing.assert_allclose(y, cp.fft.fft(x), rtol=1e-10, atol=1e-10 * float(abs(y).max()))
    a = cp.random.rand(64, 48, dtype=cp.float32)
    b = cp.random.rand(48, 80, dtype=cp.float32)
    for _ in range(3):
        d = cumath.linalg.advanced.matmul(a, b)
    assert (type(lt_backend.RAW_MATMUL).__name__ == "CallWords") == _fast.NATIVE
    cp.testing.assert_allclose(d, a @ b, rtol=2e-3, atol=1e-3)
    with cumath.linalg.advanced.Matmul(a, b) as mm:
        mm.plan()
        for alg in mm.algorithms[:2]:  # an explicit algorithm: its address in the argument list
            cp.testing.assert_allclose(mm.execute(algorithm=alg), a @ b, rtol=2e-3, atol=1e-3)
        cp.testing.assert_allclose(mm.execute(), a @ b, rtol=2e-3, atol=1e-3)
