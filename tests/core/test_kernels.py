"""cumath._core.kernels: argument packing, errors, the image get_kernel compiles (through cumath._core.jit) and
its disk cache; on a GPU compile + launch and reuse of the compiled image by another process."""

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
from cumath._bindings._cuda_bindings import LazyModule
from cumath._bindings._loader import LibrarySpec
from cumath._core import jit, kernels
from cumath.errors import LibraryNotFoundError, NVRTCError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SOURCE = textwrap.dedent(r"""
    extern "C" __global__ void axpby(float* y, const float* x, float a, double b, long long n, int add) {
      long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + (float)b * y[i] + (float)add;
    }
    template <int N> __global__ void times(float* y) { y[threadIdx.x] *= N; }
""")


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

    monkeypatch.setattr(jit, "_nvrtc_compile", no_compile)
    jit.clear_memory_cache()
    yield
    jit.clear_memory_cache()


def _kernel_key(names=()):
    """The key of SOURCE's image for sm_90 under NVRTC 13.0."""
    return jit.compile_key(SOURCE, jit.DEFAULT_OPTIONS + ("-arch=sm_90",), (13, 0), output="cubin", names=names)


def test_compile_source_reads_the_disk_cache(fake_nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    key = _kernel_key(("times<3>",))
    jit.STORE.put(key, b"\x7fELF fake image\n with newlines",
                  {"kind": "cubin", "lowered": {"times<3>": "_Z5timesILi3EEvPf"}})
    jit.clear_memory_cache()
    assert os.path.exists(tmp_path / "jit" / (key + ".bin"))
    assert not [f for f in os.listdir(tmp_path / "jit") if f.startswith(".tmp-")]
    art = jit.compile_source(SOURCE, cc=90, names=("times<3>",))
    assert (art.data, art.kind, art.key) == (b"\x7fELF fake image\n with newlines", "cubin", key)
    assert art.lowered == {"times<3>": "_Z5timesILi3EEvPf"}


def test_a_damaged_cache_file_is_compiled_again(fake_nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    key = _kernel_key()
    os.makedirs(tmp_path / "jit", exist_ok=True)
    (tmp_path / "jit" / (key + ".bin")).write_bytes(b"garbage without a header")
    calls = []
    monkeypatch.setattr(jit, "_nvrtc_compile", lambda *a: calls.append(a) or (b"new", {}))
    assert jit.compile_source(SOURCE, cc=90).data == b"new" and len(calls) == 1
    jit.clear_memory_cache()
    entry = jit.STORE.get(key)
    assert entry.data == b"new" and entry.meta["kind"] == "cubin" and entry.meta["lowered"] == {}
    assert jit.compile_source(SOURCE, cc=90).data == b"new" and len(calls) == 1  # from the file


def test_without_nvrtc_compiling_names_the_extra(monkeypatch):
    monkeypatch.setitem(_loader.LIBRARIES, "nvrtc_absent", LibrarySpec(("libnvrtc_absent.so.13",), "cu13"))
    monkeypatch.setattr(nvrtc, "_nv", LazyModule("cuda.bindings.nvrtc", library="nvrtc_absent"))
    with pytest.raises(LibraryNotFoundError, match=r"cumath\[cu13\]"):
        jit.compile_source(SOURCE, cc=90)


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
        jit.compile_source("__global__ void k() { no_such_identifier; }", cc=90)
    art = jit.compile_source(SOURCE, cc=90, names=("times<3>",))
    assert art.kind == "cubin" and art.data[:4] == b"\x7fELF" and art.lowered["times<3>"].startswith("_Z")
    assert os.path.exists(tmp_path / "jit" / (art.key + ".bin"))


# ------------------------------------------------------------------------------------------ GPU


@pytest.mark.gpu
def test_compile_load_and_launch(cuda_device, tmp_path, monkeypatch, caplog):
    from cumath._bindings import cudart

    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    jit.clear_memory_cache()
    with caplog.at_level(logging.INFO, logger="cumath._core.jit"):
        k = kernels.get_kernel(SOURCE, "axpby", "PPfdqi", device_id=cuda_device)
    assert any("compiled the kernel axpby with NVRTC" in r.getMessage() for r in caplog.records)
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
        from cumath._core import jit, kernels
        if sys.argv[1] == "second":
            def refuse(*a):
                raise SystemExit("compiled again")
            jit._nvrtc_compile = refuse
        k = kernels.get_kernel({SOURCE!r}, "axpby", "PPfdqi", device_id={cuda_device})
        print("ok", k.key)
    """)
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join([REPO_ROOT] + sys.path))
    outs = [subprocess.run([sys.executable, "-c", script, which], capture_output=True, text=True, env=env)
            for which in ("first", "second")]
    for out in outs:
        assert out.returncode == 0, out.stderr
    assert outs[0].stdout.split() == outs[1].stdout.split() and outs[0].stdout.startswith("ok")
