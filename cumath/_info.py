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
    try:
        from .fft._executors import cpu_engine

        engine = cpu_engine("auto")
    except Exception as exc:  # no engine at all
        engine = f"none ({exc})"
    info["cpu"] = {"cores_available": available_cpus(), "fft_engine": engine}
    if engine in ("fftw", "mkl", "fftw+dfti"):
        from ._bindings.fftw import get_fftw

        info["cpu"]["fft_engine_version"] = get_fftw("double", "mkl" if engine == "mkl" else "fftw").version
    from ._core import _fast

    info["cpu"]["compiled_hot_path"] = _fast.NATIVE
    return info


def main() -> int:
    info = gather()
    print(f"cumath {info['cumath']}  (Python {info['python']}, {info['platform']})")
    print("\npackages:")
    for k, v in info["packages"].items():
        print(f"  {k:18s} {v or '-'}")
    print("\nnative libraries:")
    for k, v in info["libraries"].items():
        print(f"  {k:12s} {v}")
    print("\nGPUs:")
    if not info["gpus"]:
        print("  none found (CPU execution only)")
    else:
        print(f"  CUDA driver {info['cuda']['driver']}, runtime {info['cuda']['runtime']}")
        for g in info["gpus"]:
            print(f"  [{g['id']}] {g['name']}  compute capability {g['compute_capability']}, {g['memory_GiB']} GiB")
    cpu = info["cpu"]
    print(f"\nCPU: {cpu['cores_available']} cores available; FFT engine: {cpu['fft_engine']}"
          + (f" ({cpu['fft_engine_version']})" if "fft_engine_version" in cpu else "")
          + ("; compiled hot path" if cpu["compiled_hot_path"] else "; ctypes hot path (no compiled extension)"))
    return 0
