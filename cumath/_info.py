"""`python -m cumath info`: versions, native libraries found (and where), GPUs, the CPU FFT engine."""

from __future__ import annotations

import importlib.metadata as md
import platform
import sys

from ._bindings._loader import LIBRARIES, find_library, install_hint

PACKAGES = ("numpy", "scipy", "pyfftw", "mkl", "cupy-cuda13x", "cupy-cuda12x", "torch", "jax", "cuda-core",
            "cuda-bindings", "cuda-pathfinder", "numba-cuda", "mpi4py")


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def gather() -> dict:
    from . import __version__
    from ._core.cuda import device_count
    from ._core.execution import available_cpus

    info = {"cumath": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
            "packages": {p: _version(p) for p in PACKAGES}, "libraries": {}, "gpus": [], "cpu": {}}
    for name in LIBRARIES:
        info["libraries"][name] = find_library(name) or f"not found ({install_hint(name)})"
    n = device_count()
    if n:
        from ._bindings import cudart

        info["cuda"] = {"driver": cudart.cudaDriverGetVersion(), "runtime": cudart.cudaRuntimeGetVersion()}
        for d in range(n):
            free, total = (None, None)
            try:
                cudart.cudaSetDevice(d)
                free, total = cudart.cudaMemGetInfo()
            except Exception:
                pass
            info["gpus"].append({
                "id": d, "name": cudart.cudaGetDeviceName(d),
                "compute_capability": "%d.%d" % (
                    cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrComputeCapabilityMajor, d),
                    cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrComputeCapabilityMinor, d)),
                "memory_GiB": round(total / 2**30, 1) if total else None})
    info["cpu"] = {"cores_available": available_cpus(), **cpu_engines()}
    return info


def cpu_engines() -> dict:
    """The CPU engines that will actually run: ``fft`` (FFT) and ``blas`` (matmul), each with what it is."""
    out = {}
    try:
        from .fft._backends import cpu_engine

        engine = cpu_engine("auto")
        if engine in ("fftw", "mkl", "nvpl", "fftw+dfti"):
            from ._bindings.fftw import get_fftw

            lib = engine if engine in ("mkl", "nvpl") else "fftw"
            out["fft"] = f"{engine} ({get_fftw('double', lib).version})" + (
                "; MKL DFTI runs problems FFTW has no wisdom for" if engine == "fftw+dfti" else "")
        elif engine == "scipy":
            import importlib.util

            out["fft"] = ("scipy.fft (pocketfft)" if importlib.util.find_spec("scipy") is not None
                          else "numpy.fft (SciPy is not installed: `pip install \"cumath[cpu]\"` brings FFTW and SciPy)")
        else:
            out["fft"] = engine
    except Exception as exc:  # noqa: BLE001 - no engine at all
        out["fft"] = f"none ({exc})"
    try:
        from ._bindings._loader import loaded_libraries
        from ._bindings.blas import find_blas

        blas = find_blas("auto")
        p = blas.provider
        out["blas"] = f"{p.description or p.name} ({loaded_libraries().get(p.library, p.library)})"
    except Exception as exc:  # noqa: BLE001
        out["blas"] = f"none ({exc})"
    from ._core import _fast

    out["compiled_hot_path"] = _fast.NATIVE
    return out


def main() -> int:
    info = gather()
    print(f"cumath {info['cumath']}  (Python {info['python']}, {info['platform']})")
    print("\npackages:")
    for k, v in info["packages"].items():
        print(f"  {k:18s} {v or '-'}")
    print("\nnative libraries:")
    width = max(len(k) for k in info["libraries"])
    for k, v in info["libraries"].items():
        print(f"  {k:<{width}}  {v}")
    print("\nGPUs:")
    if not info["gpus"]:
        print("  none found (CPU execution only)")
    else:
        print(f"  CUDA driver {info['cuda']['driver']}, runtime {info['cuda']['runtime']}")
        for g in info["gpus"]:
            print(f"  [{g['id']}] {g['name']}  compute capability {g['compute_capability']}, {g['memory_GiB']} GiB")
    cpu = info["cpu"]
    print(f"\nCPU: {cpu['cores_available']} cores available")
    print(f"  FFT engine:    {cpu['fft']}")
    print(f"  matmul (BLAS): {cpu['blas']}")
    print("  hot path:      " + ("compiled (cumath._core._fast)" if cpu["compiled_hot_path"]
                                 else "ctypes (the compiled extension is not built)"))
    if info["gpus"]:
        print("GPU engines: cuFFT (FFT), cuBLASLt and cuBLAS (matmul), cuSOLVER (dense solvers), cuDSS (sparse "
              "solvers, when found above)")
    return 0
