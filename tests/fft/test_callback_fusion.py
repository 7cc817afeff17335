"""FFT callbacks run fused or as separate passes, without a GPU: the option, the 'auto' rule and its log, the
layouts a pass walks, the kernel source and its cache key, the nvJitLink binding (enums from nvJitLink.h of
nvidia-nvjitlink 13.0.88, versioned-symbol selection and error logs with a fake library), and, where NVRTC and
nvJitLink load, a real compile and link of a pass with a C++ callback (no numba, no GPU needed)."""

from __future__ import annotations

import logging

import pytest

import cumath.fft as F
from cumath._bindings import nvjitlink as nvj
from cumath.errors import LibraryNotFoundError, NVJitLinkError
from cumath.fft import _separate as S
from cumath.fft._callbacks import AttachedCallback, mangled_name
from cumath.fft._traits import fft_geometry


def geom(shape, dtype="complex64", axes=None, fft_type=None):
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    return fft_geometry(shape, strides, dtype, axes, fft_type)


# ------------------------------------------------------------------------------------------ the option

def test_option_values_and_equality():
    assert F.FFTOptions().callback_fusion == "auto"
    for mode in ("auto", "fused", "separate"):
        assert F.FFTOptions(callback_fusion=mode).callback_fusion == mode
    with pytest.raises(ValueError, match=r"callback_fusion='inline' is not supported; the allowed values are "
                                         r"\['auto', 'fused', 'separate'\]"):
        F.FFTOptions(callback_fusion="inline")
    a, b = F.FFTOptions(callback_fusion="fused"), F.FFTOptions(callback_fusion="separate")
    assert a != b and hash(a) != hash(F.FFTOptions()) and a == F.FFTOptions(callback_fusion="fused")


def test_option_keys_stateful_and_stateless_plans():
    import numpy as np

    x = np.ones((4, 8), np.complex64)
    k1 = F.FFT.create_key(x, options={"callback_fusion": "fused"})
    k2 = F.FFT.create_key(x, options={"callback_fusion": "separate"})
    assert k1 != k2 and k1 == F.FFT.create_key(x, options=F.FFTOptions(callback_fusion="fused"))


# ------------------------------------------------------------------------------------------ the rule

@pytest.mark.parametrize("shape, axes, fft_type, kind, expected", [
    ((8192, 8192), None, "R2C", "epilog", "separate"),     # fused 2.97x, separate 1.36x (of plain cuFFT)
    ((8192, 8192), None, "R2C", "prolog", "separate"),     # 1.56x, 1.33x
    ((4096, 4096), None, "C2R", "prolog", "separate"),     # 1.89x, 1.33x
    ((4096, 4096), None, "C2C", "prolog", "separate"),     # 2.48x, 1.39x
    ((4096, 4096), None, "C2C", "epilog", "fused"),        # 1.15x, 1.37x
    ((64, 1 << 16), (-1,), "C2C", "epilog", "separate"),   # 2.24x, 1.39x
    ((4096, 1000), (-1,), "C2R", "prolog", "separate"),    # 2.49x, 1.60x
    ((16, 1 << 18), (-1,), "C2C", "prolog", "fused"),      # 1.24x, 1.43x
    ((16, 1 << 20), (-1,), "R2C", "epilog", "fused"),      # 1.02x, 1.25x
    ((2, 1 << 21), (-1,), "C2C", "prolog", "fused"),
    ((64, 64, 64), None, "C2C", "epilog", "separate"),     # 3-D: not measured, separate like 2-D
])
def test_auto_rule_follows_the_table(shape, axes, fft_type, kind, expected):
    dtype = "float32" if fft_type == "R2C" else "complex64"
    g = geom(shape, dtype, axes, fft_type)
    mode, reason = S.choose_fusion(g, kind)
    assert mode == expected, reason
    assert reason


def test_explicit_modes_and_shared_memory():
    g = geom((8192, 8192), "float32", None, "R2C")
    assert S.choose_fusion(g, "epilog", "fused")[0] == "fused"
    assert S.choose_fusion(geom((2, 1 << 20), axes=(-1,)), "epilog", "separate")[0] == "separate"
    mode, reason = S.choose_fusion(g, "epilog", "auto", shared_size=1024)
    assert mode == "fused" and "shared memory" in reason
    with pytest.raises(ValueError, match="allowed values are"):
        S.choose_fusion(g, "epilog", "sometimes")


def test_table_is_small_and_thresholds_are_powers_of_two():
    assert set(S.FUSED_FROM_LENGTH) <= {1, 2, 3}
    assert all(v > 0 and v & (v - 1) == 0 for v in S.FUSED_FROM_LENGTH.values())
    for rank, typ, kind in S.FUSED_ALWAYS:
        assert rank in (1, 2, 3) and typ in ("C2C", "R2C", "C2R") and kind in ("prolog", "epilog")


def _attached(kind, element, name="cumath_epilog_c64_0123456789abcdef"):
    return AttachedCallback(kind, element, name, b"IR", 0x1000, None)


def test_split_logs_each_decision(caplog):
    cbs = (_attached("prolog", "complex64", "cumath_prolog_c64_0123456789abcdef"), _attached("epilog", "complex64"))
    log = logging.getLogger("test.fusion")
    with caplog.at_level(logging.INFO, logger="test.fusion"):
        fused, separate = S.split_callbacks(cbs, geom((8, 64), axes=(-1,)), "auto", log)
    assert fused == () and set(separate) == {"prolog", "epilog"}
    text = caplog.text
    assert "prolog cumath_prolog_c64_0123456789abcdef: run as a separate pass" in text
    assert "cheaper than cuFFT's callback kernels" in text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="test.fusion"):
        fused, separate = S.split_callbacks(cbs[1:], geom((2, 1 << 20), axes=(-1,)), "auto", log)
    assert fused == cbs[1:] and separate == {}
    assert "fused into cuFFT" in caplog.text and "1048576 >= 262144" in caplog.text


# ------------------------------------------------------------------------------------------ layouts

@pytest.mark.parametrize("shape, src, dst, expected", [
    ((4, 6, 8), (48, 8, 1), (48, 8, 1), [(192, 1, 1)]),                  # dense: one run
    ((4, 6, 8), (1, 32, 4), (1, 32, 4), [(192, 1, 1)]),                  # a permuted dense layout
    ((4, 1, 8), (800, 5, 1), (8, 8, 1), [(8, 1, 1), (4, 800, 8)]),       # gaps in the source
    ((3, 5), (10, 1), (10, 1), [(5, 1, 1), (3, 10, 10)]),                # gaps in both (inplace epilog)
    ((1, 1), (1, 1), (1, 1), [(1, 1, 1)]),
])
def test_collapse_dims(shape, src, dst, expected):
    assert S.collapse_dims(shape, src, dst) == expected


# ------------------------------------------------------------------------------------------ kernel source

@pytest.mark.parametrize("kind, element, decl", [
    ("prolog", "complex64", "extern __device__ float2 NAME(void*, u64, void*, void*);"),
    ("prolog", "float64", "extern __device__ double NAME(void*, u64, void*, void*);"),
    ("epilog", "complex128", "extern __device__ void NAME(void*, u64, double2, void*, void*);"),
    ("epilog", "float32", "extern __device__ void NAME(void*, u64, float, void*, void*);"),
])
def test_kernel_source_declares_the_callback_as_cufft_does(kind, element, decl):
    src = S.kernel_source(kind, element, "NAME")
    assert decl in src
    assert 'extern "C" __global__' in src and "cumath_cb_dense" in src and "cumath_cb_strided" in src
    assert "nullptr" in src


def test_the_pass_is_compiled_and_linked_through_the_jit_driver(monkeypatch):
    """linked_image compiles the pass to LTO-IR for the architecture, then links it with the callback's IR."""
    from cumath._core import jit

    calls = []

    def compile_source(source, **kw):
        calls.append(("compile", source, kw["cc"], kw["output"]))
        return jit.Artifact(b"PASS-IR", "ltoir", "0" * 64, {})

    def link(pieces, **kw):
        calls.append(("link", [(k, bytes(d)) for k, d, *_ in pieces], kw["cc"]))
        return jit.Artifact(b"CUBIN", "cubin", "1" * 64, {})

    monkeypatch.setattr(jit, "compile_source", compile_source)
    monkeypatch.setattr(jit, "link", link)
    cb = AttachedCallback("epilog", "complex64", "cumath_epilog_c64_00112233445566aa", b"CB-IR", 0, None)
    art = S.linked_image(cb, 90)
    assert art.data == b"CUBIN" and art.key == "1" * 64
    assert calls == [("compile", S.kernel_source("epilog", "complex64", cb.name.decode()), 90, "ltoir"),
                     ("link", [("ltoir", b"PASS-IR"), ("ltoir", b"CB-IR")], 90)]


# ------------------------------------------------------------------------------------------ nvJitLink binding

@pytest.fixture
def nvj_bindings():
    return pytest.importorskip("cuda.bindings.nvjitlink", reason="cuda-bindings is not installed")


@pytest.mark.parametrize("enum_name, member, value", [
    ("nvJitLinkResult", "NVJITLINK_SUCCESS", 0), ("nvJitLinkResult", "NVJITLINK_ERROR_MISSING_ARCH", 2),
    ("nvJitLinkResult", "NVJITLINK_ERROR_NVVM_COMPILE", 5), ("nvJitLinkResult", "NVJITLINK_ERROR_INTERNAL", 6),
    ("nvJitLinkResult", "NVJITLINK_ERROR_ARCH_MISMATCH", 13),
    ("nvJitLinkResult", "NVJITLINK_ERROR_LTO_NOT_ENABLED", 18),
    ("nvJitLinkInputType", "NVJITLINK_INPUT_CUBIN", 1), ("nvJitLinkInputType", "NVJITLINK_INPUT_LTOIR", 3),
    ("nvJitLinkInputType", "NVJITLINK_INPUT_INDEX", 7), ("nvJitLinkInputType", "NVJITLINK_INPUT_ANY", 10),
])
def test_nvjitlink_enum_values(nvj_bindings, enum_name, member, value):
    assert int(getattr(getattr(nvj, enum_name), member)) == value


def test_failed_link_raises_with_the_error_log(nvj_bindings, monkeypatch):
    from cumath._bindings import _loader

    if _loader.find_library("nvJitLink") is None:
        pytest.skip("no nvJitLink library here (the cu13 extra brings it)")
    def complete(handle):
        assert handle == 0x1234
        raise nvj_bindings.nvJitLinkError(6)

    log = b"error: undefined symbol _Z1fPvyS_S_"
    monkeypatch.setattr(nvj._nj, "complete", complete)
    monkeypatch.setattr(nvj._nj, "get_error_log_size", lambda h: len(log) + 1)
    monkeypatch.setattr(nvj._nj, "get_error_log", lambda h, buf: buf.__setitem__(slice(0, len(log) + 1), log + b"\0"))
    with pytest.raises(NVJitLinkError, match=r"NVJITLINK_ERROR_INTERNAL \(6\): error: undefined symbol") as info:
        nvj.nvJitLinkComplete(0x1234)
    assert "undefined symbol _Z1fPvyS_S_" in info.value.log and info.value.library == "nvJitLink"


def test_check_names_the_status(nvj_bindings):
    nvj.check(0)
    with pytest.raises(NVJitLinkError, match=r"NVJITLINK_ERROR_MISSING_ARCH \(2\)"):
        nvj.check(2)


# ------------------------------------------------------------------------------------------ a real link

@pytest.fixture
def toolchain():
    from cumath._bindings import nvrtc

    try:
        return nvrtc.nvrtcVersion(), nvj.nvJitLinkVersion()
    except (LibraryNotFoundError, OSError) as exc:
        pytest.skip(f"NVRTC / nvJitLink not available: {exc}")


CPP_CALLBACKS = {
    "prolog": "__device__ float2 {name}(void* p, unsigned long long o, void* info, void*) {{ "
              "return ((float2*)p)[o]; }}",
    "epilog": "__device__ void {name}(void* p, unsigned long long o, float2 v, void* info, void*) {{ "
              "((float2*)p)[o] = v; }}",
}


@pytest.mark.parametrize("kind", ["prolog", "epilog"])
def test_compile_and_link_a_pass_with_nvrtc_and_nvjitlink(kind, toolchain, tmp_path, monkeypatch):
    """The pass declares the callback so that its name mangles as cuFFT's kernels expect it (a C++ callback
    defined with cuFFT's signature links); the CUBIN is cached by content."""
    from cumath._bindings import nvrtc

    from cumath._core import jit

    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    jit.clear_memory_cache()
    name = f"cumath_{kind}_c64_00112233445566aa"
    prog = nvrtc.nvrtcCreateProgram(CPP_CALLBACKS[kind].format(name=name), "cb.cu")
    try:
        nvrtc.nvrtcCompileProgram(prog, ("-dlto", "-rdc=true", "-arch=sm_90"))
        ir = nvrtc.nvrtcGetLTOIR(prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    cb = AttachedCallback(kind, "complex64", name, ir, 0, None)
    assert cb.mangled == mangled_name(name, kind, "complex64")
    art = S.linked_image(cb, 90)
    assert art.data[:4] == b"\x7fELF" and b"cumath_cb_dense" in art.data and b"cumath_cb_strided" in art.data
    assert (tmp_path / "jit" / f"{art.key}.bin").exists()
    monkeypatch.setattr(jit, "_nvrtc_compile", lambda *a: pytest.fail("compiled again instead of the cache"))
    monkeypatch.setattr(jit, "_nvjitlink_link", lambda *a: pytest.fail("linked again instead of the cache"))
    jit.clear_memory_cache()
    assert S.linked_image(cb, 90) == art


def test_an_unresolved_callback_fails_with_the_log(toolchain, tmp_path, monkeypatch):
    from cumath._bindings import nvrtc

    monkeypatch.setenv("CUMATH_CACHE_DIR", str(tmp_path))
    prog = nvrtc.nvrtcCreateProgram("__device__ int other(int x) { return x; }", "cb.cu")
    try:
        nvrtc.nvrtcCompileProgram(prog, ("-dlto", "-rdc=true", "-arch=sm_90"))
        ir = nvrtc.nvrtcGetLTOIR(prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    cb = AttachedCallback("epilog", "complex64", "cumath_epilog_c64_ffeeddccbbaa9988", ir, 0, None)
    with pytest.raises(NVJitLinkError) as info:
        S.linked_image(cb, 90)
    assert "cumath_epilog_c64_ffeeddccbbaa9988" in str(info.value)


def _strided_offsets(dims, n):
    """cumath_cb_strided's index arithmetic, replayed: (source, destination) offset of element i."""
    dims = list(dims) + [(1, 0, 0)] * (S.MAX_DIMS - len(dims))
    out = []
    for i in range(n):
        rem, so, do = i, 0, 0
        for e, s, d in dims:
            q, r = divmod(rem, e)
            so += r * s
            do += r * d
            rem = q
        out.append((so, do))
    return out


@pytest.mark.parametrize("shape, src, dst", [
    ((4, 6, 8), (48, 8, 1), (48, 8, 1)),
    ((4, 1, 8), (800, 5, 1), (8, 8, 1)),
    ((3, 5), (10, 1), (10, 1)),
    ((2, 3, 4), (1, 2, 6), (12, 4, 1)),       # source transposed against the destination
    ((5, 7), (1, 5), (7, 1)),
])
def test_strided_pass_visits_every_element_once_with_matching_offsets(shape, src, dst):
    import itertools

    dims = S.collapse_dims(shape, src, dst)
    n = 1
    for e in shape:
        n *= e
    got = sorted(_strided_offsets(dims, n))
    want = sorted((sum(i * s for i, s in zip(idx, src)), sum(i * d for i, d in zip(idx, dst)))
                  for idx in itertools.product(*map(range, shape)))
    assert got == want
    # destinations in visiting order are increasing for dense destinations (coalesced writes)
    if sorted(d for _, d in got) == list(range(n)):
        assert [d for _, d in _strided_offsets(dims, n)] == list(range(n))
