"""cumath._core.kernels: cache keys, argument packing, the disk cache, errors; on a GPU compile + launch and
reuse of the compiled image by another process."""

from __future__ import annotations

import ctypes
import logging
import os
import struct
import subprocess
import sys
import textwrap

import pytest

from cumath._bindings import _loader, nvrtc
from cumath._bindings._loader import LazyFunctions, LibrarySpec
from cumath._core import kernels
from cumath.errors import LibraryNotFoundError, NVRTCError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SOURCE = textwrap.dedent(r"""
    extern "C" __global__ void axpby(float* y, const float* x, float a, double b, long long n, int add) {
      long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + (float)b * y[i] + (float)add;
    }
    template <int N> __global__ void times(float* y) { y[threadIdx.x] *= N; }
""")


# ------------------------------------------------------------------------------------ cache keys


def test_cache_key_depends_on_everything_that_changes_the_image():
    base = kernels.cache_key("src", ("-std=c++17",), "-arch=sm_90", (13, 0))
    assert len(base) == 64 and base == kernels.cache_key("src", ("-std=c++17",), "-arch=sm_90", (13, 0))
    others = {
        kernels.cache_key("src ", ("-std=c++17",), "-arch=sm_90", (13, 0)),
        kernels.cache_key("src", ("-std=c++20",), "-arch=sm_90", (13, 0)),
        kernels.cache_key("src", ("-std=c++17",), "-arch=sm_80", (13, 0)),
        kernels.cache_key("src", ("-std=c++17",), "-arch=sm_90", (13, 1)),
        kernels.cache_key("src", ("-std=c++17",), "-arch=sm_90", (13, 0), ("k<1>",)),
        # no ambiguity from where one part ends and the next begins
        kernels.cache_key("src-std=c++17", (), "-arch=sm_90", (13, 0)),
    }
    assert base not in others and len(others) == 6


def test_target_is_a_cubin_for_a_known_architecture_else_ptx_for_the_newest_older_one():
    assert kernels._pick_target(90, [80, 90, 100]) == ("-arch=sm_90", "cubin")
    assert kernels._pick_target(95, [80, 90, 100]) == ("-arch=compute_90", "ptx")
    with pytest.raises(ValueError, match="none of which runs on compute capability 70"):
        kernels._pick_target(70, [75, 80])


# ------------------------------------------------------------------------------------- packing


def test_argument_packing_puts_each_value_in_its_own_8_byte_slot():
    p = kernels.ArgPacker("PifdqIQ")
    p.pack((0x1234_5678_9ABC, -7, 1.5, 2.25, -(1 << 40), 0xFFFF_FFFF, 1 << 63))
    raw = p.raw()
    assert len(raw) == 7 * 8
    assert struct.unpack_from("<Q", raw, 0)[0] == 0x1234_5678_9ABC
    assert struct.unpack_from("<i", raw, 8)[0] == -7
    assert struct.unpack_from("<f", raw, 16)[0] == 1.5
    assert struct.unpack_from("<d", raw, 24)[0] == 2.25
    assert struct.unpack_from("<q", raw, 32)[0] == -(1 << 40)
    assert struct.unpack_from("<I", raw, 40)[0] == 0xFFFF_FFFF
    assert struct.unpack_from("<Q", raw, 48)[0] == 1 << 63
    base = ctypes.addressof(p._buffer)
    assert [p.params[i] for i in range(7)] == [base + 8 * i for i in range(7)]


def test_argument_packing_errors():
    with pytest.raises(ValueError, match="unknown kernel argument code"):
        kernels.ArgPacker("Px")
    p = kernels.ArgPacker("Pf")
    with pytest.raises(TypeError, match="takes 2 arguments"):
        p.pack((1,))
    with pytest.raises(TypeError, match="do not fit the types"):
        p.pack(("not a pointer", 1.0))
    with pytest.raises(TypeError, match="do not fit the types"):
        kernels.ArgPacker("i").pack((1 << 40,))


def test_argument_packing_takes_ints_for_floats():
    p = kernels.ArgPacker("fd")
    p.pack((3, 4))
    assert struct.unpack("<f4xd", p.raw()) == (3.0, 4.0)


# ------------------------------------------------------------------------------------ disk cache


@pytest.fixture
def fake_nvrtc(monkeypatch):
    """NVRTC 13.0 knowing sm_80 and sm_90, without loading anything; compiling raises."""
    monkeypatch.setattr(nvrtc, "nvrtcVersion", lambda: (13, 0))
    monkeypatch.setattr(nvrtc, "nvrtcGetSupportedArchs", lambda: [80, 90])

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled although the image was cached")

    monkeypatch.setattr(kernels, "_compile", no_compile)
    kernels.clear_memory_cache()
    yield
    kernels.clear_memory_cache()


def test_compile_source_reads_the_disk_cache(fake_nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    opts = tuple(kernels.DEFAULT_OPTIONS) + ("-arch=sm_90",)
    key = kernels.cache_key(SOURCE, opts, "-arch=sm_90", (13, 0), ("times<3>",))
    kernels._store.put(key, b"\x7fELF fake image\n with newlines",
                       {"kind": "cubin", "lowered": {"times<3>": "_Z5timesILi3EEvPf"}})
    kernels.clear_memory_cache()
    assert os.path.exists(tmp_path / "kernels" / (key + ".cubin"))
    assert not [f for f in os.listdir(tmp_path / "kernels") if f.startswith(".tmp-")]
    image, kind, lowered, got = kernels.compile_source(SOURCE, cc=90, names=("times<3>",))
    assert (image, kind, got) == (b"\x7fELF fake image\n with newlines", "cubin", key)
    assert lowered == {"times<3>": "_Z5timesILi3EEvPf"}


def test_a_damaged_cache_file_is_compiled_again(fake_nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    opts = tuple(kernels.DEFAULT_OPTIONS) + ("-arch=sm_90",)
    key = kernels.cache_key(SOURCE, opts, "-arch=sm_90", (13, 0))
    os.makedirs(tmp_path / "kernels", exist_ok=True)
    (tmp_path / "kernels" / (key + ".cubin")).write_bytes(b"garbage without a header")
    calls = []
    monkeypatch.setattr(kernels, "_compile", lambda *a: calls.append(a) or (b"new", "cubin", {}))
    assert kernels.compile_source(SOURCE, cc=90)[0] == b"new" and len(calls) == 1
    kernels.clear_memory_cache()
    entry = kernels._store.get(key)
    assert entry.data == b"new" and entry.meta == {"kind": "cubin", "lowered": {}}
    assert kernels.compile_source(SOURCE, cc=90)[0] == b"new" and len(calls) == 1  # memory cache


def test_without_nvrtc_compiling_names_the_extra(monkeypatch):
    monkeypatch.setitem(_loader.LIBRARIES, "nvrtc_absent", LibrarySpec(("libnvrtc_absent.so.13",), "cu13"))
    monkeypatch.setattr(nvrtc, "_L", LazyFunctions("nvrtc_absent", nvrtc.TABLE))
    with pytest.raises(LibraryNotFoundError, match=r"cumath\[cu13\]"):
        kernels.compile_source(SOURCE, cc=90)


def test_without_a_gpu_get_kernel_says_so():
    from cumath._core.cuda import device_count

    if device_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="no CUDA GPU is usable here"):
        kernels.get_kernel(SOURCE, "axpby", "PPfdqi", device_id=0)


def test_compile_errors_surface_with_the_log(tmp_path, monkeypatch):
    try:
        nvrtc.nvrtcVersion()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    with pytest.raises(NVRTCError, match="no_such_identifier"):
        kernels.compile_source("__global__ void k() { no_such_identifier; }", cc=90)
    image, kind, lowered, key = kernels.compile_source(SOURCE, cc=90, names=("times<3>",))
    assert kind == "cubin" and image[:4] == b"\x7fELF" and lowered["times<3>"].startswith("_Z")
    assert os.path.exists(tmp_path / "kernels" / (key + ".cubin"))


# ------------------------------------------------------------------------------------------ GPU


@pytest.mark.gpu
def test_compile_load_and_launch(cuda_device, tmp_path, monkeypatch, caplog):
    from cumath._bindings import cudart

    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    kernels.clear_memory_cache()
    with caplog.at_level(logging.INFO, logger="cumath._core.kernels"):
        k = kernels.get_kernel(SOURCE, "axpby", "PPfdqi", device_id=cuda_device)
    assert any("compiled a kernel with NVRTC" in r.getMessage() for r in caplog.records)
    assert kernels.get_kernel(SOURCE, "axpby", "PPfdqi", device_id=cuda_device) is k
    n = 1001
    x, y = cudart.cudaMalloc(4 * n), cudart.cudaMalloc(4 * n)
    try:
        xs = (ctypes.c_float * n)(*[float(i) for i in range(n)])
        ys = (ctypes.c_float * n)(*([1.0] * n))
        cudart.cudaMemcpy(x, ctypes.addressof(xs), 4 * n, 1)
        cudart.cudaMemcpy(y, ctypes.addressof(ys), 4 * n, 1)
        stream = cudart.cudaStreamCreateWithFlags(1)
        k.launch((n + 255) // 256, 256, 0, stream, y, x, 2.0, 0.5, n, 3)
        k.launch(((n + 127) // 128, 1, 1), (128, 1, 1), 0, stream, y, x, 2.0, 0.5, n, 3)
        cudart.cudaStreamSynchronize(stream)
        cudart.cudaStreamDestroy(stream)
        cudart.cudaMemcpy(ctypes.addressof(ys), y, 4 * n, 2)
        # y1 = 2x + 0.5 + 3, y2 = 2x + 0.5 y1 + 3
        for i in (0, 1, 500, 1000):
            y1 = 2 * i + 0.5 + 3
            assert ys[i] == pytest.approx(2 * i + 0.5 * y1 + 3)
        with pytest.raises(TypeError, match="takes 6 arguments"):
            k.launch(1, 1, 0, 0, y, x)
    finally:
        cudart.cudaFree(x)
        cudart.cudaFree(y)
    t = kernels.get_kernel(SOURCE, "times<3>", "P", device_id=cuda_device)
    assert t.function and t.attribute(4) > 0  # CU_FUNC_ATTRIBUTE_NUM_REGS
    assert t.max_active_blocks_per_sm(128) >= 1


@pytest.mark.gpu
def test_another_process_reuses_the_compiled_image(cuda_device, tmp_path):
    script = textwrap.dedent(f"""
        import sys
        from cumath._core import kernels
        if sys.argv[1] == "second":
            def refuse(*a):
                raise SystemExit("compiled again")
            kernels._compile = refuse
        k = kernels.get_kernel({SOURCE!r}, "axpby", "PPfdqi", device_id={cuda_device})
        print("ok", k.key)
    """)
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join([REPO_ROOT] + sys.path))
    outs = [subprocess.run([sys.executable, "-c", script, which], capture_output=True, text=True, env=env)
            for which in ("first", "second")]
    for out in outs:
        assert out.returncode == 0, out.stderr
    assert outs[0].stdout.split() == outs[1].stdout.split() and outs[0].stdout.startswith("ok")
