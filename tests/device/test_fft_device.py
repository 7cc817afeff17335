"""cumath.device.FFT / fft on the CPU: argument validation, traits through libmathdx, generated code, the cache."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cumath.device as dev

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
C2C = dict(size=128, precision=np.float32, fft_type="c2c", execution="Block", direction="forward", sm=90)


# ---------------------------------------------------------------------------------------------- validation

@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(size=0), ValueError, "size=0 must be at least 1"),
    (dict(size=12.5), TypeError, "size must be an integer, not float"),
    (dict(size=True), TypeError, "size must be an integer, not bool"),
    (dict(precision=np.int32), ValueError,
     r"precision=.*int32.* the allowed values are numpy.float16, numpy.float32, numpy.float64"),
    (dict(precision=np.complex64), ValueError, "the allowed values are numpy.float16, numpy.float32, numpy.float64"),
    (dict(fft_type="c2d"), ValueError, r"fft_type='c2d' is not supported; the allowed values are 'c2c', 'r2c', 'c2r'"),
    (dict(execution="Warp"), ValueError,
     r"execution='Warp' is not supported; the allowed values are 'Block', 'Thread'"),
    (dict(direction="backward"), ValueError, r"direction='backward' is not supported; the allowed values are "
                                             r"'forward', 'inverse'"),
    (dict(direction=None), ValueError, "direction is required for a c2c FFT"),
    (dict(fft_type="r2c", direction="inverse"), ValueError, "a r2c FFT goes in the forward direction, not 'inverse'"),
    (dict(fft_type="c2r", direction="forward"), ValueError, "a c2r FFT goes in the inverse direction, not 'forward'"),
    (dict(ffts_per_block=0), ValueError, "ffts_per_block=0 must be at least 1"),
    (dict(ffts_per_block="many"), ValueError, r"ffts_per_block='many' is not supported; pass a positive integer, "
                                              r"'suggested' or None"),
    (dict(elements_per_thread=-2), ValueError, "elements_per_thread=-2 must be at least 1"),
    (dict(execution="Thread", ffts_per_block=4), ValueError, "ffts_per_block=4 applies to Block execution only"),
    (dict(execution="Thread", elements_per_thread=8), ValueError, "a Thread FFT holds all 128 elements"),
    (dict(real_fft_options={"complex_layout": "packed"}), ValueError, "real_fft_options apply to r2c and c2r"),
    (dict(fft_type="r2c", real_fft_options=["packed"]), TypeError, "real_fft_options must be a dict, not list"),
    (dict(fft_type="r2c", real_fft_options={"layout": "packed"}), ValueError, r"unknown keys \['layout'\]"),
    (dict(fft_type="r2c", real_fft_options={"complex_layout": "dense"}), ValueError,
     r"complex_layout='dense' is not supported; the allowed values are 'natural', 'packed', 'full'"),
    (dict(execute_api="global_memory"), ValueError, r"execute_api='global_memory' is not supported"),
    (dict(execution="Thread", execute_api="shared_memory"), ValueError, "needs Block execution"),
    (dict(sm="sm_xx"), ValueError, r"sm='sm_xx' is not a compute capability"),
    (dict(sm=(6, 1)), ValueError, r"compute capability 7.0 \(Volta\) and newer"),
])
def test_validation(kwargs, exc, message):
    args = dict(C2C)
    if kwargs.get("fft_type") in ("r2c", "c2r") and "direction" not in kwargs:
        args.pop("direction")
    args.update(kwargs)
    with pytest.raises(exc, match=message):
        dev.FFT(**args)


def test_validation_needs_no_library(monkeypatch):
    """Arguments are checked before anything is loaded: a bad one fails fast even without libmathdx."""
    from cumath._bindings import _loader

    def refuse(name):
        raise AssertionError(f"{name} was loaded")

    monkeypatch.setattr(_loader, "load_library", refuse)
    f = dev.FFT(**C2C)  # a valid construction loads nothing either
    assert f.size == 128 and f.direction == "forward" and f.sm == (9, 0) and f.code_type.kind == "lto"
    assert dev.FFT(size=16, precision="float64", fft_type="R2C", execution="block", sm="9.0").direction == "forward"
    assert dev.FFT(size=16, precision="double", fft_type="c2r", execution="Thread", sm=900).direction == "inverse"


def test_function_form_validation():
    with pytest.raises(ValueError, match=r"compiler='nvcc' is not supported; the allowed values are None and 'numba'"):
        dev.fft(compiler="nvcc", **C2C)
    with pytest.raises(ValueError, match="pass the compute capability once"):
        dev.fft(code_type=("lto", 90), **C2C)
    with pytest.raises(ValueError, match=r"code_type=\('ptx', 90\) is not supported; cumath generates LTO-IR"):
        dev.fft(code_type=("ptx", 90), **{k: v for k, v in C2C.items() if k != "sm"})
    with pytest.raises(TypeError, match="fft\\(\\) needs the keyword arguments size"):
        dev.fft(precision=np.float32, fft_type="c2c", direction="forward", sm=90)
    f = dev.fft(compiler="numba", code_type=dev.CodeType("lto", dev.ComputeCapability(8, 0)),
                **{k: v for k, v in C2C.items() if k != "sm"})
    assert isinstance(f, dev.FFT) and f.sm == (8, 0) and f.execution == "Block"


def test_host_call_is_an_error():
    with pytest.raises(TypeError, match="FFT is a device function: call it inside a numba-cuda kernel"):
        dev.FFT(**C2C)(np.zeros(4), np.zeros(4))


# ---------------------------------------------------------------------------------------------------- traits

def test_traits_block_c2c(mathdx):
    f = dev.FFT(**dict(C2C, elements_per_thread=8, ffts_per_block=2))
    assert f.value_type == np.complex64 and f.input_type == np.complex64 and f.output_type == np.complex64
    assert (f.elements_per_thread, f.storage_size, f.stride, f.ffts_per_block) == (8, 8, 16, 2)
    assert f.block_dim == dev.Dim3(16, 2, 1)
    assert f.shared_memory_size == 2 * 128 * 8  # one value_type per element per FFT
    assert f.implicit_type_batching == 1 and f.workspace_size == 0
    assert f.input_length == f.output_length == 128
    assert f.symbol.startswith("cumath_fft_")


def test_traits_arithmetic_over_sizes(mathdx):
    """stride = size / elements_per_thread and block_dim.x = stride, for a range of sizes and precisions."""
    for size, ept, prec in ((8, 2, np.float32), (64, 8, np.float64), (256, 16, np.float32), (512, 8, np.float64)):
        f = dev.FFT(size=size, precision=prec, fft_type="c2c", execution="Block", direction="inverse", sm=90,
                    elements_per_thread=ept)
        assert f.stride == size // ept == f.block_dim.x
        assert f.storage_size >= ept
        assert f.value_type == (np.complex64 if prec is np.float32 else np.complex128)


def test_traits_real_and_thread(mathdx):
    r2c = dev.FFT(size=64, precision=np.float64, fft_type="r2c", execution="Block", sm=90, elements_per_thread=4)
    assert r2c.input_type == np.float64 and r2c.output_type == np.complex128 and r2c.value_type == np.complex128
    assert r2c.input_length == 64 and r2c.output_length == 33  # natural layout: n/2 + 1
    packed = dev.FFT(size=64, precision=np.float64, fft_type="r2c", execution="Block", sm=90, elements_per_thread=4,
                     real_fft_options={"complex_layout": "packed"})
    assert packed.output_length == 32 and packed.real_fft_options == {"complex_layout": "packed", "real_mode": "normal"}
    t = dev.FFT(size=16, precision=np.float32, fft_type="c2c", execution="Thread", direction="forward", sm=90)
    assert t.elements_per_thread == 16 and t.storage_size >= 16
    assert t.block_dim == dev.Dim3(1, 1, 1)


def test_traits_half_precision(mathdx):
    """cuFFTDx computes half-precision FFTs in pairs: complex<half2> values (float16x4), half2 reals (float16x2)."""
    f = dev.FFT(size=64, precision=np.float16, fft_type="c2c", execution="Block", direction="forward", sm=90,
                ffts_per_block=4)
    assert f.precision == "float16" and f.value_type is dev.float16x4 and f.implicit_type_batching == 2
    assert f.ffts_per_block == 4 and f.block_dim.y == 2  # one thread row per pair of FFTs
    assert f.shared_memory_size > 0 and f.storage_size >= f.elements_per_thread
    r2c = dev.FFT(size=64, precision="half", fft_type="r2c", execution="Block", sm=90, ffts_per_block=2)
    assert r2c.input_type is dev.float16x2 and r2c.output_type is dev.float16x4 and r2c.output_length == 33
    t = dev.FFT(size=16, precision=np.float16, fft_type="c2c", execution="Thread", direction="inverse", sm=90)
    assert t.value_type is dev.float16x4 and t.storage_size >= 16
    assert f._numba_constants()["value_type"] == "float16x4"
    assert [p.dtype for p in f._numba_methods()["execute"].params] == ["float16x4", None]


def test_half_vector_types_on_the_host():
    v = dev.float16x4
    assert (v.name, v.count, v.itemsize, v.attributes) == ("float16x4", 4, 8, ("x", "y", "z", "w"))
    assert v.numpy_dtype == np.dtype([("x", "f2"), ("y", "f2"), ("z", "f2"), ("w", "f2")])
    assert repr(dev.float16x2) == "cumath.device.float16x2" and dev.float16x2.numpy_dtype.itemsize == 4
    with pytest.raises(TypeError, match="float16x4 is constructed inside numba-cuda kernels only"):
        v(1, 2, 3, 4)
    import pickle

    assert pickle.loads(pickle.dumps(v)) is v


def test_shared_memory_api_traits(mathdx):
    f = dev.FFT(**dict(C2C, execute_api="shared_memory", ffts_per_block=2, elements_per_thread=8))
    assert f.execute_api == "shared_memory" and f.block_dim == dev.Dim3(16, 2, 1)
    assert [p.name for p in f._numba_methods()["execute"].params] == ["shared_memory"]
    g = dev.FFT(**dict(C2C, ffts_per_block=2, elements_per_thread=8))
    assert f.symbol != g.symbol  # another API, another function


def test_suggested_knobs(mathdx):
    f = dev.FFT(**dict(C2C, ffts_per_block="suggested", elements_per_thread="suggested"))
    assert f.ffts_per_block == f.suggested_ffts_per_block >= 1
    assert f.block_dim.y == f.ffts_per_block


def test_unsupported_problem_names_itself(mathdx):
    f = dev.FFT(**dict(C2C, size=128, elements_per_thread=3))
    with pytest.raises((ValueError, Exception), match="(cuFFTDx has no implementation|libmathdx)"):
        f.storage_size


# ---------------------------------------------------------------------------------------------- code & cache

def test_ltoir_and_files(mathdx):
    f = dev.fft(**dict(C2C, size=32, elements_per_thread=4))
    codes = f.codes
    assert len(codes) == 1 and codes[0][:4] == b"\xed\x43\x4e\x7f" and len(codes[0]) > 1000
    assert f.ltos == codes
    (path,) = f.files
    assert path.endswith(".ltoir") and os.path.isfile(path)
    with open(path, "rb") as fh:
        assert fh.read() == codes[0]
    g = dev.fft(**dict(C2C, size=32, elements_per_thread=4))
    assert g.files == [path] and g.symbol == f.symbol  # same arguments, same code


def test_cache_keys_follow_the_arguments():
    a = dev.FFT(**C2C)
    b = dev.FFT(**dict(C2C, direction="inverse"))
    c = dev.FFT(**dict(C2C, sm=80))
    d = dev.FFT(**C2C)
    ops = [x._operators(x._ffts_per_block, x._elements_per_thread) for x in (a, b, c, d)]
    syms = [x._descriptor(o).symbol for x, o in zip((a, b, c, d), ops)]
    assert syms[0] == syms[3] and len(set(syms[:3])) == 3


_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import cumath.device as dev
    from cumath.device import _codegen
    if sys.argv[1] == "forbid":
        def refuse(*a, **k):
            raise AssertionError("code was generated again")
        _codegen._generate = refuse
        _codegen._query = refuse
    t0 = time.perf_counter()
    f = dev.FFT(size=64, precision=np.float64, fft_type="c2c", execution="Block", direction="inverse", sm=90,
                elements_per_thread=8)
    out = {"storage": f.storage_size, "files": f.files, "size": len(f.codes[0]), "seconds": time.perf_counter() - t0}
    print(json.dumps(out))
""")


def test_second_process_reuses_the_disk_cache(mathdx, tmp_path):
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = []
    for mode in ("generate", "forbid"):
        res = subprocess.run([sys.executable, "-c", _CHILD, mode], env=env, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, res.stderr
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert runs[0]["files"] == runs[1]["files"] and runs[0]["size"] == runs[1]["size"]
    assert runs[0]["storage"] == runs[1]["storage"] == 8
    assert runs[1]["seconds"] < runs[0]["seconds"]


def test_damaged_cache_entry_is_regenerated(mathdx, tmp_path, monkeypatch):
    from cumath.device import _codegen

    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    f = dev.FFT(size=16, precision=np.float32, fft_type="c2c", execution="Block", direction="forward", sm=90,
                elements_per_thread=2)
    first = f.codes[0]
    key = f._generator.code_key()
    with open(_codegen.STORE.path(key), "r+b") as fh:  # corrupt the stored blob
        fh.seek(-8, os.SEEK_END)
        fh.write(b"\0" * 8)
    _codegen.clear_memory_cache()
    g = dev.FFT(size=16, precision=np.float32, fft_type="c2c", execution="Block", direction="forward", sm=90,
                elements_per_thread=2)
    assert g.codes[0] == first
