"""Lenient or confusing validation made strict and clear: each bad argument raises TypeError/ValueError whose
message says what is allowed; cache files that are hostile read as misses."""
import os
import struct

import numpy as np
import pytest

import cumath
from cumath._core import disk_cache
from cumath._core.disk_cache import ContentStore, read_file
from helpers.matrix import random_array

X = random_array((4, 6), "complex128")


@pytest.mark.parametrize("axes,match", [
    ([1.5], "1.5 is a float"), (["1"], "'1' is a str"), ("10", "not str"), ({0: 1}, "not dict"),
    ([True], "not bools"), ({0, 1}, "not set"), ((a for a in [0]), "pass list"), (5, "not int"),
])
@pytest.mark.parametrize("fn", ["fft", "FFT", "create_key"])
def test_bad_axes(fn, axes, match):
    call = {"fft": cumath.fft.fft, "FFT": cumath.fft.FFT, "create_key": cumath.fft.FFT.create_key}[fn]
    with pytest.raises(TypeError, match=match):
        call(X, axes=axes)


def test_a_generator_of_axes_is_refused_before_anything_consumes_it():
    gen = (a for a in [0])
    with pytest.raises(TypeError):
        cumath.fft.fft(X, axes=gen)
    assert next(gen) == 0


@pytest.mark.parametrize("axes", [[0], (1,), np.array([1]), range(2), [np.int64(-1)]])
def test_good_axes(axes):
    ref = np.fft.fftn(X, axes=list(np.asarray(axes)))
    np.testing.assert_allclose(cumath.fft.fft(X, axes=axes), ref, rtol=1e-12, atol=1e-12)


def test_alpha_must_be_a_scalar():
    a = np.random.rand(4, 4)
    cumath.linalg.matmul(a, a)  # planned and cached: the second call is a hit
    for alpha in (np.array([1.0, 2.0]), [1.0, 2.0]):
        with pytest.raises(ValueError, match="alpha must be a scalar"):
            cumath.linalg.matmul(a, a, alpha=alpha)
    np.testing.assert_allclose(cumath.linalg.matmul(a, a, alpha=np.array(2.0)), 2 * a @ a)


def test_execution_dict_values_must_be_single_values():
    with pytest.raises(TypeError, match="'num_threads' is a list"):
        cumath.fft.fft(X, execution={"name": "cpu", "num_threads": [1]})


def test_device_callable_arguments():
    with pytest.raises(TypeError, match="size must be an int"):
        cumath.fft.DeviceCallable(ltoir=b"abc", size=1.5)
    with pytest.raises(ValueError, match="readable host memory"):
        cumath.fft.DeviceCallable(ltoir=12345, size=100, data=42)


# --------------------------------------------------------------------------------------------- cache files
def _blob(header: bytes, data: bytes = b"x") -> bytes:
    return disk_cache._MAGIC + struct.pack("<Q", len(header)) + header + data


def test_a_deeply_nested_header_is_a_miss():
    assert ContentStore._parse(_blob(b"[" * 200000 + b"]" * 200000)) is None


def test_the_checksum_covers_the_metadata(tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    store = ContentStore("t")
    key = "ab" * 32
    store.put(key, b"payload", {"kind": "cubin"})
    path = store.path(key)
    raw = open(path, "rb").read()
    forged = raw.replace(b'"cubin"', b'"ptx__"')
    open(path, "wb").write(forged)
    store.clear_memory()
    assert store.get(key) is None
    open(path, "wb").write(raw)
    assert store.get(key).meta == {"kind": "cubin"}


def test_read_file_refuses_links_devices_folders_and_huge_files(tmp_path):
    link = tmp_path / "zero"
    os.symlink("/dev/zero", link)
    with pytest.raises(OSError):
        read_file(str(link))
    with pytest.raises(OSError):
        read_file("/dev/zero")
    with pytest.raises(OSError):
        read_file(str(tmp_path))
    big = tmp_path / "big"
    big.write_bytes(b"0" * 100)
    with pytest.raises(OSError, match="more than"):
        read_file(str(big), max_bytes=10)
    assert read_file(str(big)) == b"0" * 100


def test_an_exported_link_file_of_the_right_size_but_other_content_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    store = ContentStore("t")
    path = store.export("k-0.ltoir", b"good bytes")
    open(path, "wb").write(b"evil bytes")
    assert store.export("k-0.ltoir", b"good bytes") == path
    assert open(path, "rb").read() == b"good bytes"


def test_reading_a_cache_creates_no_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path / "none"))
    assert ContentStore("t").get("ab" * 32) is None
    assert not (tmp_path / "none").exists()


def test_an_unwritable_cache_logs_one_warning(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(blocker / "sub"))
    store = ContentStore("t")
    with caplog.at_level("WARNING", logger="cumath"):
        for i in range(3):
            store.put("ab" * 32, b"x")
    assert sum("could not write the cache file" in r.message for r in caplog.records) == 1
    assert store.get("ab" * 32).data == b"x"  # kept in memory


# --------------------------------------------------------------------------------------------- the CLI
@pytest.mark.parametrize("name", ["../../x", "/etc/passwd", "harness", "fft.py", "percall_compare", ""])
def test_bench_runs_only_known_benchmarks(name, capsys):
    from cumath.__main__ import main

    assert main(["bench", name]) == 2
    assert "unknown benchmark" in capsys.readouterr().err


def test_bench_names():
    from cumath.__main__ import benchmark_names

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    names = benchmark_names(os.path.join(root, "benchmarks"))
    assert "fft" in names and "matmul" in names and "harness" not in names


def test_a_result_larger_than_memory_is_refused_before_planning():
    from numpy.lib.stride_tricks import as_strided

    z = as_strided(np.zeros(1, complex), shape=(2**40,), strides=(0,))
    with pytest.raises(MemoryError, match="more than this machine's"):
        cumath.fft.fft(z)
