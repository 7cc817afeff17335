"""Packaging: extras bring what the install hints promise, the conda recipe and pixi manifest follow pyproject,
the metadata is complete, and the loader picks one CUDA major version."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
DATA = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = DATA["project"]["optional-dependencies"]


def _generator():
    spec = importlib.util.spec_from_file_location("cumath_packaging_generate", ROOT / "packaging" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()

# library of the loader -> (extra, the requirement of that extra that brings it), for CUDA 13 and CUDA 12
BRINGS = {
    "cudart": [("cu13", "cuda-toolkit[cudart]"), ("cu12", "nvidia-cuda-runtime-cu12")],
    "cufft": [("cu13", "cuda-toolkit[cufft]"), ("cu12", "nvidia-cufft-cu12")],
    "cublas": [("cu13", "cuda-toolkit[cublas]"), ("cu12", "nvidia-cublas-cu12")],
    "cublasLt": [("cu13", "cuda-toolkit[cublas]"), ("cu12", "nvidia-cublas-cu12")],
    "cusolver": [("cu13", "cuda-toolkit[cusolver]"), ("cu12", "nvidia-cusolver-cu12")],
    "cusparse": [("sparse", "cuda-toolkit[cusparse]"), ("cu12", "nvidia-cusparse-cu12")],
    "curand": [("dx", "cuda-toolkit[curand]"), ("cu12", "nvidia-curand-cu12")],
    "nvrtc": [("cu13", "cuda-toolkit[nvrtc]"), ("cu12", "nvidia-cuda-nvrtc-cu12")],
    "nvJitLink": [("cu13", "cuda-toolkit[nvjitlink]"), ("cu12", "nvidia-nvjitlink-cu12")],
    "cudss": [("cudss", "nvidia-cudss-cu13"), ("cudss-cu12", "nvidia-cudss-cu12")],
    "cutensor": [("tensor", "cutensor-cu13"), ("tensor-cu12", "cutensor-cu12")],
    "mathdx": [("dx", "nvidia-libmathdx-cu13")],
    "nccl": [("cu13-distributed", "nvidia-nccl-cu13")],
    "cublasmp": [("cu13-distributed", "nvidia-cublasmp-cu13")],
    "cusolvermp": [("cu13-distributed", "nvidia-cusolvermp-cu13")],
    "nvshmem_host": [("cu13-distributed", "nvidia-nvshmem-cu13")],
    "cufftMp": [("cu13-distributed", "nvidia-cufftmp-cu13")],
    "nvtx": [("cu13", "cuda-toolkit[nvtx]"), ("cu12", "nvidia-nvtx-cu12")],
    "fftw3": [("cpu", "pyfftw")], "fftw3f": [("cpu", "pyfftw")],
    "fftw3_omp": [("cpu", "pyfftw")], "fftw3f_omp": [("cpu", "pyfftw")],
    "mkl_rt": [("mkl", "mkl")],
    # NVPL on Arm: the cpu extra's aarch64 branch (environment markers)
    "nvpl_fftw": [("cpu", "nvpl-fft")], "nvpl_blas": [("cpu", "nvpl-blas")], "nvpl_lapack": [("cpu", "nvpl-lapack")],
    "scipy_openblas32": [("cpu", "scipy")],
    # NumPy < 2 / SciPy < 1.14 wheels bundle OpenBLAS under older names (the lowest NumPy the package declares)
    "scipy_openblas_legacy": [("cpu", "scipy")],
}


def _brings(extra: str, requirement: str) -> bool:
    name, extras = re.match(r"([^\[]+)(?:\[(.*)\])?", requirement).groups()
    for req in GEN.expand([extra], EXTRAS):
        rname, rextras, _, _ = GEN.parse(req)
        if rname == name.lower() and (extras is None or extras in rextras):
            return True
    return False


@pytest.mark.parametrize("library", sorted(BRINGS))
def test_each_extra_brings_its_library(library):
    for extra, requirement in BRINGS[library]:
        assert extra in EXTRAS, f"{library}: extra {extra} does not exist"
        assert _brings(extra, requirement), f"extra {extra} does not bring {requirement} ({library})"


def test_every_library_names_an_existing_extra():
    from cumath._bindings._loader import LIBRARIES, _NOT_AN_EXTRA

    for name, spec in LIBRARIES.items():
        for extra in (spec.extra, spec.extra12 if spec.cuda12 else None):
            if extra is not None:
                assert extra in EXTRAS or extra in _NOT_AN_EXTRA, f"{name} names the extra {extra}, which is missing"
        if spec.extra not in _NOT_AN_EXTRA:
            assert name in BRINGS, f"add {name} to BRINGS: which requirement of {spec.extra} brings it?"


def test_install_hint_names_index_and_checkout():
    from cumath._bindings._loader import install_hint

    hint = install_hint("cudss")
    assert 'pip install "cumath[cudss]"' in hint and 'pip install ".[cudss]"' in hint
    assert "NumPy" in install_hint("scipy_openblas64")
    assert "apt install" in install_hint("openblas")
    assert "driver" in install_hint("cuda")


def test_hints_in_sources_name_existing_extras():
    pattern = re.compile(r"cumath\[([a-z0-9_,\-]+)\]|\"\.\[([a-z0-9_,\-]+)\]")
    bad = []
    for path in (ROOT / "cumath").rglob("*.py"):
        for m in pattern.finditer(path.read_text()):
            for extra in (m.group(1) or m.group(2)).split(","):
                if extra not in EXTRAS and extra not in ("{extra}",):
                    bad.append(f"{path.relative_to(ROOT)}: {extra}")
    for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for m in pattern.finditer(path.read_text()):
            for extra in (m.group(1) or m.group(2)).split(","):
                if extra not in EXTRAS:
                    bad.append(f"{path.relative_to(ROOT)}: {extra}")
    assert not bad, f"hints name extras that do not exist: {bad}"


def test_self_references_resolve():
    for extra, reqs in EXTRAS.items():
        for req in reqs:
            name, sub, _, _ = GEN.parse(req)
            if name == "cumath":
                assert set(sub) <= set(EXTRAS), f"{extra} refers to cumath{sub}"


def test_numba_extra_can_compile_callbacks():
    """FFT callbacks need numba-cuda, NVRTC and nvJitLink: the numba extra alone brings all three."""
    for requirement in ("numba-cuda", "cuda-toolkit[nvrtc]", "cuda-toolkit[nvjitlink]"):
        assert _brings("numba", requirement)


def test_cu13_brings_nothing_unused():
    reqs = " ".join(EXTRAS["cu13"])
    for unused in ("cusparse", "curand", "cuda-core"):
        assert unused not in reqs


def test_cuda_extras_bring_cuda_bindings_of_their_major():
    """The runtime, driver, NVRTC and nvJitLink are called through cuda-bindings, built per CUDA major version."""
    assert "cuda-bindings>=13.0,<14" in EXTRAS["cu13"]
    assert "cuda-bindings>=12.0,<14" in EXTRAS["test"]  # (the CPU tests run with either; uv resolves it with cu12 too)
    assert "cuda-bindings>=12.0,<13" in EXTRAS["cu12"]


def test_conda_recipe_and_pixi_follow_pyproject():
    assert GEN.main(["--check"]) == 0


def test_generator_detects_an_unknown_requirement():
    with pytest.raises(KeyError, match="CONDA_NAMES"):
        GEN.conda_requirements(["no-such-package>=1"])


def test_variants_cover_cpu_gpu_device_distributed():
    assert set(GEN.VARIANTS) == {"cpu", "gpu", "device", "distributed"}
    recipe = (ROOT / "packaging" / "conda" / "recipe.yaml").read_text()
    for name in ("cumath", "cumath-gpu", "cumath-device", "cumath-distributed"):
        assert f"name: {name}\n" in recipe


def test_metadata_and_license():
    project = DATA["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0" in text
    assert project["authors"] and all(a.get("name") for a in project["authors"])
    # PEP 639: the license expression replaces License :: classifiers (setuptools refuses both)
    assert not any(c.startswith("License ::") for c in project["classifiers"])
    for needed in ("Typing :: Typed", "Programming Language :: C", "Operating System :: POSIX :: Linux"):
        assert needed in project["classifiers"]
    trove = pytest.importorskip("trove_classifiers")
    assert set(project["classifiers"]) <= trove.classifiers, set(project["classifiers"]) - trove.classifiers


def test_no_placeholder_urls():
    """cumath has no public repository or hosted documentation: no address is declared that leads nowhere."""
    urls = DATA["project"].get("urls", {})
    assert not any("github.com/cumath" in url or "example" in url for url in urls.values()), urls
    recipe = (ROOT / "packaging" / "conda" / "recipe.yaml").read_text()
    assert "github.com/cumath" not in recipe


def test_cpu_extra_brings_nvpl_on_arm_only():
    for name in ("nvpl-fft", "nvpl-blas", "nvpl-lapack"):
        reqs = [r for r in EXTRAS["cpu"] if GEN.parse(r)[0] == name]
        assert len(reqs) == 1 and GEN.parse(reqs[0])[3] == "platform_machine == 'aarch64'", reqs
    recipe = (ROOT / "packaging" / "conda" / "recipe.yaml").read_text()
    assert "        - if: aarch64\n          then: libnvpl-fft >=" in recipe
    pixi = tomllib.loads((ROOT / "pixi.toml").read_text())
    assert "libnvpl-blas" in pixi["target"]["linux-aarch64"]["dependencies"]
    assert "libnvpl-blas" not in pixi["dependencies"]
    with pytest.raises(KeyError, match="MARKERS"):
        GEN.conda_requirements(["scipy>=1; sys_platform == 'win32'"])


def test_conda_recipe_is_platform_specific():
    """The cumath package carries the optional C extension: built per platform with a C compiler, not noarch."""
    recipe = (ROOT / "packaging" / "conda" / "recipe.yaml").read_text()
    assert "noarch" not in recipe.replace("not noarch", "")
    head, _, rest = recipe.partition("      name: cumath\n")
    first = rest.split("  - package:")[0]
    assert "${{ compiler('c') }}" in first and "pip install ." in first
    for variant in ("gpu", "device", "distributed"):  # metapackages pinned to that build, nothing to compile
        block = recipe.split(f"      name: cumath-{variant}\n")[1].split("  - package:")[0]
        assert "pin_subpackage('cumath', exact=True)" in block and "compiler" not in block and "script" not in block


# ------------------------------------------------------------------------------------------------- CUDA 12 loader
def _in_subprocess(code: str, **env) -> str:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full,
                          check=True).stdout.strip()


def test_cuda12_sonames_and_hints():
    out = _in_subprocess(
        "from cumath._bindings import _loader as L\n"
        "print(L.cuda_major(), L._sonames(L.LIBRARIES['cufft']), L._sonames(L.LIBRARIES['cusolver']),"
        " L._sonames(L.LIBRARIES['cudart']), L.install_hint('cufft'), L.install_hint('cudss'),"
        " L.install_hint('cutensor'), sep='|')",
        CUMATH_CUDA_MAJOR="12")
    major, cufft, cusolver, cudart, hint, hint_dss, hint_tensor = out.split("|")
    assert "cumath[tensor-cu12]" in hint_tensor, hint_tensor
    assert major == "12"
    assert "libcufft.so.11" in cufft and "libcusolver.so.11" in cusolver and "libcudart.so.12" in cudart
    assert "cumath[cu12]" in hint and "cumath[cudss-cu12]" in hint_dss


def test_cuda13_sonames_by_default():
    out = _in_subprocess("from cumath._bindings import _loader as L\n"
                         "print(L._sonames(L.LIBRARIES['cufft']), L._sonames(L.LIBRARIES['mkl_rt']), sep='|')",
                         CUMATH_CUDA_MAJOR="13")
    cufft, mkl = out.split("|")
    assert "libcufft.so.12" in cufft and "libcufft.so.11" not in cufft
    assert "libmkl_rt" in mkl  # CPU libraries do not depend on the CUDA major version


def test_cuda_major_from_an_old_driver(monkeypatch):
    from cumath._bindings import _loader as L

    monkeypatch.delenv("CUMATH_CUDA_MAJOR", raising=False)
    monkeypatch.setattr(L, "_CUDA_MAJOR", [])
    monkeypatch.setattr(L, "_driver_major", lambda: 12)
    assert L.cuda_major() == 12
    monkeypatch.setattr(L, "_CUDA_MAJOR", [])
    monkeypatch.setattr(L, "_driver_major", lambda: 13)
    monkeypatch.setattr(L, "_installed", lambda soname: soname == "libcudart.so.12")
    assert L.cuda_major() == 12
    monkeypatch.setattr(L, "_CUDA_MAJOR", [])
    monkeypatch.setattr(L, "_installed", lambda soname: True)
    assert L.cuda_major() == 13


def test_cuda_major_rejects_a_bad_value(monkeypatch):
    from cumath._bindings import _loader as L

    monkeypatch.setattr(L, "_CUDA_MAJOR", [])
    monkeypatch.setenv("CUMATH_CUDA_MAJOR", "11")
    with pytest.raises(ValueError, match="allowed values are '12', '13'"):
        L.cuda_major()


@pytest.mark.gpu
def test_gpu_machine_loads_one_cuda_major():
    """On the GPU machine: the libraries loaded all belong to the chosen CUDA major version."""
    out = _in_subprocess(
        "from cumath._bindings import _loader as L\n"
        "import os\n"
        "for n in ('cudart', 'cufft', 'cublas', 'nvrtc'):\n"
        "    p = L.find_library(n)\n"
        "    print(n, L.cuda_major(), os.path.basename(p) if p else None)\n")
    rows = [line.split() for line in out.splitlines()]
    assert all(r[2] != "None" for r in rows), out
    major = rows[0][1]
    expected = {"13": {"cudart": "libcudart.so.13", "cufft": "libcufft.so.12"},
                "12": {"cudart": "libcudart.so.12", "cufft": "libcufft.so.11"}}[major]
    for name, _, base in rows:
        if name in expected:
            assert base.startswith(expected[name]), out
