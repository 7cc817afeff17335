"""NVIDIA NVPL (Arm) as CPU engines: the FFT ('nvpl', FFTW3 API through its advanced interface), BLAS and LAPACK.

This machine is x86: the tests check that NVPL is never looked for here, that on an Arm machine without the
nvpl-* wheels the engines fall back, that the loader looks in the wheel's folder first, and (with FFTW itself
standing in for libnvpl_fftw.so.0) that the guru64 layouts cumath plans are translated to plan_many exactly.
"""

import glob
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cumath._bindings import _loader as L
from cumath._bindings import blas, fftw, lapack
from cumath.errors import LibraryNotFoundError

ROOT = Path(__file__).resolve().parents[2]
NVPL = ("nvpl_fftw", "nvpl_blas", "nvpl_lapack")


@pytest.fixture
def arm(monkeypatch):
    """Pretend to be an Arm machine (no library is really loaded: CDLL records its calls and fails)."""
    monkeypatch.setattr(L, "machine", lambda: "aarch64")
    calls = []

    def fake_cdll(path, mode=0):
        calls.append(path)
        raise OSError(f"{path}: cannot open shared object file (test)")

    monkeypatch.setattr(L.ctypes, "CDLL", fake_cdll)
    for name in NVPL:
        L._loaded.pop(name, None)
    return calls


@pytest.mark.skipif(os.uname().machine in ("aarch64", "arm64"), reason="checks what an x86 machine does")
@pytest.mark.parametrize("name", NVPL)
def test_x86_never_looks_for_nvpl(name, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("NVPL was looked for on x86")

    monkeypatch.setattr(L, "_candidates", fail)
    monkeypatch.setattr(L.ctypes, "CDLL", fail)
    with pytest.raises(LibraryNotFoundError, match=r"built for aarch64 and arm64 machines only; this one is x86_64"):
        L.load_library(name)
    assert L.find_library(name) is None


@pytest.mark.skipif(os.uname().machine in ("aarch64", "arm64"), reason="checks what an x86 machine does")
def test_x86_auto_engines_skip_nvpl():
    from cumath.fft._backends import cpu_engine

    assert cpu_engine("auto") != "nvpl"
    assert blas.find_blas("auto").name != "nvpl"
    with pytest.raises(LibraryNotFoundError, match="x86_64"):
        blas.find_blas("nvpl")
    with pytest.raises(LibraryNotFoundError, match="x86_64"):
        lapack.find_lapack("nvpl")


def test_nvpl_libraries_come_with_the_cpu_extra():
    for name in NVPL:
        spec = L.LIBRARIES[name]
        assert spec.extra == "cpu" and spec.machines == ("aarch64", "arm64")
        assert all(g.startswith("nvpl/lib/") for g in spec.wheel_globs)
        assert 'pip install "cumath[cpu]"' in L.install_hint(name)


def test_arm_without_the_wheels_falls_back(arm, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])  # no nvpl/lib anywhere
    for name in NVPL:
        with pytest.raises(LibraryNotFoundError, match=r"cumath\[cpu\]"):
            L.load_library(name)
    # only the sonames were tried (by the system loader), after an empty wheel search
    assert arm == ["libnvpl_fftw.so.0", "libnvpl_blas_ilp64_gomp.so.0", "libnvpl_lapack_ilp64_gomp.so.0"]
    from cumath.fft._backends import REGISTRY

    with pytest.raises(LibraryNotFoundError):
        REGISTRY.get("nvpl")
    assert REGISTRY.get("auto").name != "nvpl"
    with pytest.raises(LibraryNotFoundError, match="nvpl"):
        blas.find_blas("nvpl")


def _fake_wheel(tmp_path) -> Path:
    lib = tmp_path / "site" / "nvpl" / "lib"
    lib.mkdir(parents=True)
    for name in ("libnvpl_fftw.so.0", "libnvpl_blas_core.so.0", "libnvpl_blas_ilp64_gomp.so.0",
                 "libnvpl_lapack_core.so.0", "libnvpl_lapack_ilp64_gomp.so.0"):
        (lib / name).write_bytes(b"")
    return tmp_path / "site"


def test_arm_loader_looks_in_the_wheel_folder_first(arm, monkeypatch, tmp_path):
    site = _fake_wheel(tmp_path)
    monkeypatch.setattr(sys, "path", [str(site)])
    lib = site / "nvpl" / "lib"
    for name, soname in (("nvpl_fftw", "libnvpl_fftw.so.0"), ("nvpl_blas", "libnvpl_blas_ilp64_gomp.so.0"),
                         ("nvpl_lapack", "libnvpl_lapack_ilp64_gomp.so.0")):
        found = list(L._candidates(name, L.LIBRARIES[name]))
        assert found == [(str(lib / soname), "bundled copy"), (soname, "system loader")], found
    arm.clear()
    with pytest.raises(LibraryNotFoundError, match="cannot open shared object file"):
        L.load_library("nvpl_blas")
    # the core library is loaded from the same folder first (the interface library needs it), then the library
    assert arm[:2] == [str(lib / "libnvpl_blas_core.so.0"), str(lib / "libnvpl_blas_ilp64_gomp.so.0")], arm


def test_blas_and_lapack_provider_tables():
    p = blas.PROVIDERS["nvpl"]
    assert (p.library, p.lapack_library, p.ilp64, p.prefix, p.suffix) == ("nvpl_blas", "nvpl_lapack", True, "", "")
    assert blas._candidates(p, "d", "gemm") == ("cblas_dgemm",)
    assert lapack.SUFFIXES["nvpl"] == ("", "_")
    assert blas.AUTO_ORDER[0] == "nvpl"


# ------------------------------------------------------------------------------- guru64 -> plan_many translation
def test_many_layout_nested_strides():
    # 2-D C2C over the last two axes of a (5, 6, 7) C-contiguous array, batched over the first axis
    n, inembed, istride, onembed, ostride, howmany, idist, odist = fftw._many_layout(
        "C2C", [(6, 7, 7), (7, 1, 1)], [(5, 42, 42)])
    assert (n, inembed, istride, onembed, ostride, howmany, idist, odist) == ([6, 7], [6, 7], 1, [6, 7], 1, 5, 42, 42)
    # R2C along the last axis of (3, 10) reals into (3, 6) complex values
    assert fftw._many_layout("R2C", [(10, 1, 1)], [(3, 10, 6)]) == ([10], [10], 1, [6], 1, 3, 10, 6)
    # C2R: the input holds n // 2 + 1 complex values per row, padded to 8
    assert fftw._many_layout("C2R", [(4, 8, 10), (10, 1, 1)], []) == ([4, 10], [4, 8], 1, [4, 10], 1, 1, 0, 0)


@pytest.mark.parametrize("dims, howmany, match", [
    ([(4, 1, 1), (5, 4, 4)], [], "do not nest"),             # inner stride larger than the outer one
    ([(4, 3, 3), (5, 1, 1)], [], "do not nest"),             # embedding 3 smaller than the extent 5
    ([(4, -1, 1)], [], "positive strides"),
    ([(2, 1, 1)] * 4, [], "rank 1 to 3"),
    ([(8, 1, 1)], [(3, 100, 100), (5, 8, 8)], "one batch loop"),
])
def test_many_layout_refuses_what_plan_many_cannot_express(dims, howmany, match):
    with pytest.raises(fftw.FFTWNotAvailableError, match=match):
        fftw._many_layout("C2C", dims, howmany)


_END_TO_END = r"""
import glob, os, sys
import numpy as np
site, fftw_lib = sys.argv[1], sys.argv[2]
os.makedirs(os.path.join(site, "nvpl", "lib"))
os.symlink(fftw_lib, os.path.join(site, "nvpl", "lib", "libnvpl_fftw.so.0"))
sys.path.insert(0, site)
import cumath
from cumath._bindings import _loader as L
L.machine = lambda: "aarch64"
rng = np.random.default_rng(7)
opts = {"cpu_engine": "nvpl"}
ex = cumath.ExecutionCPU(num_threads=1)
worst = 0.0
def check(got, ref):
    global worst
    worst = max(worst, float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
z = rng.standard_normal((5, 6, 13)) + 1j * rng.standard_normal((5, 6, 13))
check(cumath.fft.fft(z, axes=[1, 2], options=opts, execution=ex), np.fft.fftn(z, axes=(1, 2)))
check(cumath.fft.fft(z[:, ::2, 1:12], axes=[-1], options=opts, execution=ex), np.fft.fft(z[:, ::2, 1:12], axis=-1))
w = np.asfortranarray(z)  # the batch loops of a Fortran-ordered array: outer loops run in Python
check(cumath.fft.fft(w, axes=[0], options=opts, execution=ex), np.fft.fft(w, axis=0))
r = rng.standard_normal((7, 11))
check(cumath.fft.rfft(r, axes=[-1], options=opts, execution=ex), np.fft.rfft(r))
check(cumath.fft.rfft(r, options=opts, execution=ex), np.fft.rfftn(r))  # 2-D R2C over both axes
h = np.fft.rfft(r)
check(cumath.fft.irfft(h, axes=[-1], options={**opts, "last_axis_parity": "odd"}, execution=ex), 11 * np.fft.irfft(h, n=11))  # unnormalized
h2 = np.fft.rfftn(r)
check(cumath.fft.irfft(h2, options={**opts, "last_axis_parity": "odd"}, execution=ex), r.size * np.fft.irfftn(h2, s=r.shape))
used = L.loaded_libraries().get("nvpl_fftw", "")
print(worst, used)
"""


def test_fake_nvpl_fft_end_to_end(tmp_path):
    """FFTW's libfftw3 stands in for libnvpl_fftw.so.0 (NVPL exports the same basic and advanced API): the engine
    loads it from the wheel folder and every transform goes through plan_many, checked against NumPy."""
    libs = sorted(glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "pyfftw.libs", "libfftw3-*.so*")))
    if not libs:
        pytest.skip("pyFFTW's bundled FFTW is not installed")
    res = subprocess.run([sys.executable, "-c", _END_TO_END, str(tmp_path / "site"), os.path.realpath(libs[0])],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "CUMATH_FFT_CPU_ENGINE": ""})
    assert res.returncode == 0, res.stdout + res.stderr
    worst, used = res.stdout.split()
    assert float(worst) < 1e-13, res.stdout
    assert used.endswith(os.path.join("nvpl", "lib", "libnvpl_fftw.so.0")), res.stdout
