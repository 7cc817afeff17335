"""Locate and load native libraries: lazily, once, thread-safely.

Search order for an NVIDIA library: cuda-pathfinder (when installed), then the ``nvidia/cu13/lib`` and
``nvidia/*/lib`` folders of every ``sys.path`` entry (covers ``pip install --target`` and ``PYTHONPATH``,
and sonames that an older cuda-pathfinder does not know), then the system loader by soname.
CPU libraries (FFTW, MKL, NVPL) are looked for in the wheels that bring them and then by soname; a library built
for other machines (NVPL: Arm only) is not looked for at all.

CUDA 12 and CUDA 13 libraries have different sonames (cuFFT 11 / 12, cuSOLVER 11 / 12, ...) and must not be
mixed in one process: one CUDA major version is chosen (``cuda_major()``: ``CUMATH_CUDA_MAJOR``, else 12 when the
driver supports no CUDA 13 or only CUDA 12 runtimes are installed, else 13) and only its sonames are looked for.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import sys
import threading
from dataclasses import dataclass

from ..errors import LibraryNotFoundError

__all__ = ["LIBRARIES", "load_library", "find_library", "locatable", "loaded_libraries", "LibrarySpec", "cuda_major",
           "install_hint", "EXTRAS_HINT", "once", "machine"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LibrarySpec:
    """Where a library may be found and which pip extra brings it."""

    sonames: tuple[str, ...]  # preferred first; the first part before '.so' is the glob stem
    extra: str
    pathfinder: str | None = None  # cuda-pathfinder's short name
    wheel_globs: tuple[str, ...] = ()  # globs relative to a sys.path entry (bundled copies)
    prefix_lib: bool = False  # also look in <sys.prefix>/lib (MKL installs there)
    # A library that belongs to another one (FFTW's threading layer to FFTW): it is looked for only next to
    # that library (or by soname when that one came from the system), after loading ``preload`` globs from
    # the same folder (a bundled dependency the dynamic loader cannot find by itself, e.g. libgomp-<hash>).
    # For a library that is no companion, ``preload`` globs are loaded from its own folder right after it
    # (NVRTC dlopens libnvrtc-builtins by soname, which its wheel folder does not put on the search path).
    companion_of: str | None = None
    preload: tuple[str, ...] = ()
    # Bind the library's calls to its own symbols first (RTLD_DEEPBIND), so that a library exporting the same
    # names into the global scope (oneMKL's FFTW3 wrappers, loaded by libmkl_rt with RTLD_GLOBAL) cannot
    # capture FFTW's internal calls (seen: FFTW's wisdom import failing once MKL's BLAS had been used).
    deepbind: bool = False
    # The sonames of the CUDA 12 build (NVIDIA libraries), looked for instead of ``sonames`` when cuda_major()
    # is 12, and the extra that brings them.
    cuda12: tuple[str, ...] = ()
    extra12: str = "cu12"
    # The machines (``os.uname().machine``) the library is built for; elsewhere it is not looked for at all
    # (NVIDIA's NVPL libraries exist for Arm only). Empty: any machine.
    machines: tuple[str, ...] = ()
    # Globs loaded (RTLD_GLOBAL) from a candidate's folder before the candidate itself: libraries it needs that
    # the dynamic loader may not find by itself (NVPL's interface libraries need their core library).
    before: tuple[str, ...] = ()
    # Load with RTLD_GLOBAL: another library of cumath's resolves its symbols (NVPL LAPACK calls NVPL BLAS).
    global_symbols: bool = False
    # Use the copy already in the process when there is one (looked up by soname with RTLD_NOLOAD), before
    # any search: NCCL preloaded (LD_PRELOAD) or loaded by another package first is the one every library
    # linking libnccl.so.2 by soname binds to, so loading a second file of the same soname by path would leave
    # two NCCLs in the process.
    reuse_loaded: bool = False


def _nv(name: str, soname: str, soname12: str | None = None, *, extra: str = "cu13",
        extra12: str = "cu12") -> LibrarySpec:
    return LibrarySpec(sonames=(soname,), extra=extra, pathfinder=name, cuda12=(soname12,) if soname12 else (),
                       extra12=extra12)


_CUDA_MAJOR: list = []


def _driver_major() -> int | None:
    """The newest CUDA major version the installed driver supports (None without a driver)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
        return version.value // 1000
    except (OSError, AttributeError):
        return None


def _installed(soname: str) -> bool:
    for base in _sys_path_dirs():
        for sub in ("nvidia/cu13/lib", "nvidia/cu12/lib", "nvidia/*/lib"):
            if glob.glob(os.path.join(base, sub, soname)):
                return True
    try:
        ctypes.CDLL(soname, mode=ctypes.RTLD_LOCAL)
        return True
    except OSError:
        return False


def cuda_major() -> int:
    """The CUDA major version (12 or 13) whose libraries this process loads, chosen once: ``CUMATH_CUDA_MAJOR``
    when set; 12 when the driver supports no CUDA 13, or when only the CUDA 12 runtime is installed; else 13."""
    if _CUDA_MAJOR:
        return _CUDA_MAJOR[0]
    with _lock:
        if _CUDA_MAJOR:
            return _CUDA_MAJOR[0]
        env = os.environ.get("CUMATH_CUDA_MAJOR", "").strip()
        if env:
            if env not in ("12", "13"):
                raise ValueError(f"CUMATH_CUDA_MAJOR={env!r} is not supported; the allowed values are '12', '13'")
            major, why = int(env), "CUMATH_CUDA_MAJOR"
        else:
            driver = _driver_major()
            if driver is not None and driver < 13:
                major, why = 12, f"the driver supports CUDA {driver}"
            elif not _installed("libcudart.so.13") and _installed("libcudart.so.12"):
                major, why = 12, "only the CUDA 12 runtime is installed"
            else:
                major, why = 13, "default"
        logger.info("loading CUDA %d libraries (%s)", major, why)
        _CUDA_MAJOR.append(major)
        return major


def _sonames(spec: LibrarySpec) -> tuple[str, ...]:
    if spec.cuda12 and cuda_major() == 12:
        return spec.cuda12
    return spec.sonames


def _extra(spec: LibrarySpec) -> str:
    return spec.extra12 if spec.cuda12 and cuda_major() == 12 else spec.extra


# NVIDIA libraries: the CUDA 13 soname, the CUDA 12 one (cuda_major() picks), the extras that bring them.
_ARM = ("aarch64", "arm64")


def machine() -> str:
    """This machine's architecture as the kernel names it (``x86_64``, ``aarch64``)."""
    return os.uname().machine


LIBRARIES: dict[str, LibrarySpec] = {
    "cudart": _nv("cudart", "libcudart.so.13", "libcudart.so.12"),
    "cufft": _nv("cufft", "libcufft.so.12", "libcufft.so.11"),
    "cublas": _nv("cublas", "libcublas.so.13", "libcublas.so.12"),
    "cublasLt": _nv("cublasLt", "libcublasLt.so.13", "libcublasLt.so.12"),
    "curand": _nv("curand", "libcurand.so.10", "libcurand.so.10", extra="dx", extra12="cu12"),
    "cusparse": _nv("cusparse", "libcusparse.so.12", "libcusparse.so.12", extra="sparse", extra12="cu12"),
    "cusolver": _nv("cusolver", "libcusolver.so.12", "libcusolver.so.11"),
    "nvrtc": LibrarySpec(("libnvrtc.so.13",), "cu13", pathfinder="nvrtc", preload=("libnvrtc-builtins.so.*",),
                         cuda12=("libnvrtc.so.12",)),
    "nvJitLink": _nv("nvJitLink", "libnvJitLink.so.13", "libnvJitLink.so.12"),
    "cudss": _nv("cudss", "libcudss.so.1", "libcudss.so.0", extra="cudss", extra12="cudss-cu12"),
    # the cutensor-cu13 wheel puts the library in site-packages/cutensor/lib (not under nvidia/); cutensor-cu12
    # has the same soname (the `tensor-cu12` extra brings it)
    "cutensor": LibrarySpec(("libcutensor.so.2",), "tensor", pathfinder="cutensor", cuda12=("libcutensor.so.2",),
                            extra12="tensor-cu12",
                            wheel_globs=("cutensor/lib/libcutensor.so.2", "nvidia/cu13/lib/libcutensor.so.2")),
    "mathdx": _nv("mathdx", "libmathdx.so.0", extra="dx"),
    # the distributed GPU engines: NCCL (nvidia/nccl/lib), cuBLASMp (nvidia/cublasmp/cu13/lib), cuSOLVERMp
    # (nvidia/cu13/lib); CUDA 13 builds only
    "nccl": LibrarySpec(("libnccl.so.2",), "cu13-distributed", pathfinder="nccl",
                        wheel_globs=("nvidia/nccl/lib/libnccl.so.2",), reuse_loaded=True),
    "cublasmp": LibrarySpec(("libcublasmp.so.0",), "cu13-distributed", pathfinder="cublasmp",
                            wheel_globs=("nvidia/cublasmp/cu13/lib/libcublasmp.so.0",)),
    "cusolvermp": LibrarySpec(("libcusolverMp.so.0",), "cu13-distributed", pathfinder="cusolvermp",
                              wheel_globs=("nvidia/cu13/lib/libcusolverMp.so.0",
                                           "nvidia/cusolvermp/cu13/lib/libcusolverMp.so.0")),
    # NVTX (ranges for profilers, cumath/_core/nvtx.py): NVTX 3's compiled interop library
    "nvtx": LibrarySpec(("libnvtx3interop.so.1",), "cu13", pathfinder="nvtx", cuda12=("libnvtx3interop.so.1",)),
    # NVSHMEM's host library (cumath.distributed on GPUs) and cuFFTMp, a cuFFT of its own that links it: cuFFTMp
    # is kept local and deep-bound so that its cuFFT entry points and the single-GPU libcufft's never mix.
    "nvshmem_host": LibrarySpec(("libnvshmem_host.so.3",), "cu13-distributed", pathfinder="nvshmem_host"),
    "cufftMp": LibrarySpec(("libcufftMp.so.12",), "cu13-distributed", deepbind=True, wheel_globs=(
        "nvidia/cufftmp/cu13/lib/libcufftMp.so.12", "nvidia/cufftmp/lib/libcufftMp.so.12")),
    # The CUDA driver comes with the NVIDIA driver, not a wheel: found by soname only.
    "cuda": LibrarySpec(("libcuda.so.1",), "driver"),
    # FFTW3 double and single precision with its OpenMP threading layer, as bundled by the pyFFTW wheel
    # (names carry a hash there), or as installed by the system (libfftw3-dev and friends).
    "fftw3": LibrarySpec(("libfftw3.so.3",), "cpu", wheel_globs=("pyfftw.libs/libfftw3-*.so*",), deepbind=True),
    "fftw3f": LibrarySpec(("libfftw3f.so.3",), "cpu", wheel_globs=("pyfftw.libs/libfftw3f-*.so*",), deepbind=True),
    "fftw3_omp": LibrarySpec(("libfftw3_omp.so.3", "libfftw3_threads.so.3"), "cpu",
                             wheel_globs=("libfftw3_omp-*.so*",), companion_of="fftw3", preload=("libgomp-*.so*",),
                             deepbind=True),
    "fftw3f_omp": LibrarySpec(("libfftw3f_omp.so.3", "libfftw3f_threads.so.3"), "cpu",
                              wheel_globs=("libfftw3f_omp-*.so*",), companion_of="fftw3f", preload=("libgomp-*.so*",),
                              deepbind=True),
    # Intel MKL's single dynamic library; it exports the FFTW3 interface too.
    "mkl_rt": LibrarySpec(("libmkl_rt.so.3", "libmkl_rt.so.2"), "mkl", prefix_lib=True),
    # CBLAS (cumath.linalg on the CPU): the OpenBLAS copies the NumPy wheel (ILP64, symbols scipy_*64_) and
    # the SciPy wheel (LP64, symbols scipy_*) bundle, or the scipy-openblas64/32 wheels; a system OpenBLAS.
    "scipy_openblas64": LibrarySpec(("libscipy_openblas64_.so",), "numpy", wheel_globs=(
        "numpy.libs/libscipy_openblas64_*.so*", "scipy_openblas64/lib/libscipy_openblas64_*.so*")),
    "scipy_openblas32": LibrarySpec(("libscipy_openblas.so",), "cpu", wheel_globs=(
        "scipy.libs/libscipy_openblas-*.so*", "scipy_openblas32/lib/libscipy_openblas.so*")),
    "openblas": LibrarySpec(("libopenblas.so.0", "libopenblas.so"), "system"),
    # The same from NumPy < 2 / SciPy < 1.14 wheels (NumPy 1.24-1.26, SciPy 1.9-1.13): the library is named
    # libopenblas64_p-r0-<hash>.<version>.so (ILP64, symbols cblas_*64_) and libopenblasp-r0-<hash>.<version>.so
    # (LP64, plain symbols).
    "numpy_openblas64_legacy": LibrarySpec((), "numpy", wheel_globs=("numpy.libs/libopenblas64_p-r0-*.so*",)),
    "scipy_openblas_legacy": LibrarySpec((), "cpu", wheel_globs=("scipy.libs/libopenblasp-r0-*.so*",)),
    # NVIDIA NVPL on Arm (Grace): the FFTW3-compatible FFT (one library for both precisions and threads), the
    # ILP64 OpenMP builds of BLAS and LAPACK; the nvpl-* wheels (the cpu extra on aarch64) put them in nvpl/lib.
    "nvpl_fftw": LibrarySpec(("libnvpl_fftw.so.0",), "cpu", wheel_globs=("nvpl/lib/libnvpl_fftw.so.0",),
                             deepbind=True, machines=_ARM),
    "nvpl_blas": LibrarySpec(("libnvpl_blas_ilp64_gomp.so.0",), "cpu",
                             wheel_globs=("nvpl/lib/libnvpl_blas_ilp64_gomp.so.0",), machines=_ARM,
                             before=("libnvpl_blas_core.so.0",), global_symbols=True),
    "nvpl_lapack": LibrarySpec(("libnvpl_lapack_ilp64_gomp.so.0",), "cpu",
                               wheel_globs=("nvpl/lib/libnvpl_lapack_ilp64_gomp.so.0",), machines=_ARM,
                               before=("libnvpl_lapack_core.so.0",)),
}

_lock = threading.RLock()
_loaded: dict[str, ctypes.CDLL] = {}
_paths: dict[str, str] = {}


def _sys_path_dirs() -> list[str]:
    return [p for p in sys.path if p and os.path.isdir(p)]


def _other_major_folder(spec: LibrarySpec, path: str) -> bool:
    """Whether ``path`` lies in the wheel folder of the CUDA major version this process does not load: cuRAND
    (``libcurand.so.10``) and cuSPARSE (``libcusparse.so.12``) keep one soname across CUDA 12 and 13, so only the
    folder tells a CUDA 13 build (``nvidia/cu13/lib``) from a CUDA 12 one (``nvidia/<component>/lib``,
    ``nvidia/cu12/lib``)."""
    if not spec.cuda12:
        return False
    parts = os.path.normpath(path).split(os.sep)
    other = "cu13" if cuda_major() == 12 else "cu12"
    return any(a == "nvidia" and b == other for a, b in zip(parts, parts[1:]))


def _nvidia_wheel_candidates(spec: LibrarySpec) -> list[str]:
    found = []
    subs = ("nvidia/cu13/lib", "nvidia/*/lib", "nvidia/*/lib64")
    if spec.cuda12 and cuda_major() == 12:  # CUDA 12 wheels: nvidia/<component>/lib (nvidia/cu12/lib for some)
        subs = ("nvidia/cu12/lib", "nvidia/*/lib", "nvidia/*/lib64", "cutensor/lib")
    for base in _sys_path_dirs():
        for sub in subs:
            for soname in _sonames(spec):
                found.extend(p for p in sorted(glob.glob(os.path.join(base, sub, soname)))
                             if p not in found and not _other_major_folder(spec, p))
    return found


def _bundled_candidates(spec: LibrarySpec) -> list[str]:
    found = []
    for base in _sys_path_dirs():
        for pattern in spec.wheel_globs:
            found.extend(sorted(glob.glob(os.path.join(base, pattern))))
    if spec.prefix_lib:
        for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX", ""))):
            if prefix:
                for soname in spec.sonames:
                    found.extend(sorted(glob.glob(os.path.join(prefix, "lib", soname))))
    return found


def _try_pathfinder(spec: LibrarySpec) -> str | None:
    if spec.pathfinder is None:
        return None
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
    except ImportError:
        return None
    try:
        loaded = load_nvidia_dynamic_lib(spec.pathfinder)
    except Exception as exc:  # not found, unknown to this version, ...
        logger.debug("cuda-pathfinder did not find %s: %s", spec.pathfinder, exc)
        return None
    path = getattr(loaded, "abs_path", None)
    if path and spec.cuda12 and os.path.basename(path) not in _sonames(spec) and not any(
            os.path.basename(path).startswith(s + ".") for s in _sonames(spec)):
        logger.debug("cuda-pathfinder found %s, not a CUDA %d build: looking further", path, cuda_major())
        return None
    if path and _other_major_folder(spec, path):  # the same soname in the other major version's folder
        logger.debug("cuda-pathfinder found %s, in a CUDA %d wheel folder: looking further", path,
                     25 - cuda_major())
        return None
    return path


_preloaded: list = []  # bundled dependencies kept loaded for the life of the process


def _companion_candidates(spec: LibrarySpec):
    """Candidates of a library that must come from the folder of the library it belongs to."""
    load_library(spec.companion_of)
    owner = _paths[spec.companion_of]
    folder = os.path.dirname(owner)
    if not os.path.isabs(owner) or folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib"):
        for soname in spec.sonames:  # the owner came from the system: so does its companion
            yield soname, "system loader"
        return
    _preload_next_to(owner, spec.preload, ctypes.RTLD_LOCAL)
    for pattern in spec.wheel_globs + spec.sonames:
        for path in sorted(glob.glob(os.path.join(folder, pattern))):
            yield path, f"next to {os.path.basename(owner)}"


def _candidates(name: str, spec: LibrarySpec):
    if spec.companion_of is not None:
        yield from _companion_candidates(spec)
        return
    path = _try_pathfinder(spec)
    wheels = _nvidia_wheel_candidates(spec)
    sonames = _sonames(spec)
    if path and not _named(path, sonames[0]):
        # cuda-pathfinder may know only an older soname (libcudss.so.0 where cuDSS 1.0 ships .so.1): a wheel
        # folder's copy of the preferred version comes first, so a second install beside it (another library's
        # pin) is not picked up instead
        for w in wheels:
            if _named(w, sonames[0]):
                yield w, "sys.path wheel folder (preferred version)"
    if path and any(_named(path, soname) for soname in sonames):  # (not another major version's soname)
        yield path, "cuda-pathfinder"
    for path in wheels:
        yield path, "sys.path wheel folder"
    for path in _bundled_candidates(spec):
        yield path, "bundled copy"
    for soname in _sonames(spec):
        yield soname, "system loader"


def _named(path: str, soname: str) -> bool:
    base = os.path.basename(path)
    return base == soname or base.startswith(soname + ".")


def find_library(name: str) -> str | None:
    """The path a library would be (or was) loaded from, or None; does not raise."""
    try:
        load_library(name)
    except LibraryNotFoundError:
        return None
    return _paths.get(name)


def once(table: dict, key, lock, make):
    """``table[key]``, made by ``make()`` under ``lock`` the first time (checked again under the lock: two threads
    never make it twice; a hit takes no lock). What loads a native thing once per process uses it."""
    value = table.get(key)
    if value is not None:
        return value
    with lock:
        value = table.get(key)
        if value is None:
            value = table[key] = make()
        return value


def load_library(name: str) -> ctypes.CDLL:
    """Load library ``name`` (a key of ``LIBRARIES``) once and return its handle.

    Raises ``LibraryNotFoundError`` naming the pip extra that brings the library.
    """
    lib = _loaded.get(name)
    return lib if lib is not None else once(_loaded, name, _lock, lambda: _load(name))


def _load(name: str) -> ctypes.CDLL:
    spec = LIBRARIES[name]
    if spec.machines and machine() not in spec.machines:
        raise LibraryNotFoundError(
            f"the {name} library is built for {' and '.join(spec.machines)} machines only; this one is "
            f"{machine()} (not looked for)")
    errors = []
    if spec.reuse_loaded:
        lib = _already_loaded(name, spec)
        if lib is not None:
            return lib
    for path, how in _candidates(name, spec):
        if spec.before and os.path.isabs(path):
            _preload_next_to(path, spec.before)
        try:
            mode = ctypes.RTLD_GLOBAL if spec.pathfinder or spec.global_symbols else ctypes.RTLD_LOCAL
            if spec.deepbind:
                mode |= getattr(os, "RTLD_DEEPBIND", 0)
            lib = ctypes.CDLL(path, mode=mode)
        except OSError as exc:
            errors.append(f"{path}: {exc}")
            continue
        _paths[name] = path if os.path.isabs(path) else _resolved_path(lib, path)
        logger.info("loaded %s from %s (%s)", name, _paths[name], how)
        if spec.preload and spec.companion_of is None:
            _preload_next_to(_paths[name], spec.preload)
        return lib
    raise LibraryNotFoundError(
        f"could not load the {name} library (looked for {', '.join(_sonames(spec))} through cuda-pathfinder, "
        f"the nvidia/*/lib folders of sys.path and the system loader); {install_hint(name)}"
        + (f". Tried: {'; '.join(dict.fromkeys(errors))}" if errors else "")
    )


def _already_loaded(name: str, spec: LibrarySpec) -> ctypes.CDLL | None:
    """The process's copy of ``spec`` if one of its sonames is loaded already (RTLD_NOLOAD: nothing is loaded)."""
    noload = getattr(os, "RTLD_NOLOAD", 0)
    if not noload:
        return None
    for soname in _sonames(spec):
        try:
            lib = ctypes.CDLL(soname, mode=noload | ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        _paths[name] = _resolved_path(lib, soname)
        logger.info("using the %s already loaded in this process from %s (preloaded, or loaded by another "
                    "package first)", soname, _paths[name])
        return lib
    return None


def _preload_next_to(path: str, patterns: tuple[str, ...], mode: int = ctypes.RTLD_GLOBAL) -> None:
    """Load the first match of each glob found in the folder of ``path`` (kept for the process)."""
    folder = os.path.dirname(path)
    if not folder:
        return
    for pattern in patterns:
        for candidate in sorted(glob.glob(os.path.join(folder, pattern))):
            try:
                _preloaded.append(ctypes.CDLL(candidate, mode=mode))
                break
            except OSError as exc:
                logger.debug("could not preload %s: %s", candidate, exc)


def _resolved_path(lib: ctypes.CDLL, fallback: str) -> str:
    """The absolute path of a library loaded by soname, read from /proc/self/maps where possible."""
    try:
        with open("/proc/self/maps") as f:
            stem = fallback.split(".so")[0]
            for line in f:
                path = line.rstrip().split(" ")[-1]
                if os.path.basename(path).startswith(stem + ".so"):
                    return path
    except OSError:
        pass
    return fallback


# Where a library comes from other than one of cumath's extras.
_NOT_AN_EXTRA = {
    "driver": "it comes with the NVIDIA driver, not with a pip package",
    "numpy": "it comes with NumPy's wheels from PyPI (a NumPy built from source or by a distribution has none: "
             "`pip install scipy-openblas64`, or use SciPy's copy with `pip install \"cumath[cpu]\"`)",
    "system": "install your system's OpenBLAS (e.g. `apt install libopenblas0`), or use SciPy's bundled copy "
              "with `pip install \"cumath[cpu]\"`",
}
EXTRAS_HINT = "from a checkout of cumath: pip install \".[{extra}]\""


def install_hint(name: str) -> str:
    """How to get library ``name``: the pip extra that brings it (from an index and from a checkout), or
    where it comes from when no extra does."""
    extra = _extra(LIBRARIES[name])
    if extra in _NOT_AN_EXTRA:
        return _NOT_AN_EXTRA[extra]
    return f'install it with `pip install "cumath[{extra}]"` ({EXTRAS_HINT.format(extra=extra)})'


def hint_for_extra(extra: str) -> str:
    """The install hint of a pip extra, for messages outside the loader."""
    return f'`pip install "cumath[{extra}]"` ({EXTRAS_HINT.format(extra=extra)})'


def locatable(name: str) -> bool:
    """Whether library ``name`` is loaded already or has a file among its bundled copies (the wheel folders of
    ``sys.path``, the environment's ``lib`` folder), found without loading anything and stopping at the first
    (a library reached only through cuda-pathfinder or the system loader is not looked for: False). For choosing
    between engines before deciding which to load."""
    if name in _loaded:
        return True
    spec = LIBRARIES[name]
    if spec.companion_of is not None or (spec.machines and machine() not in spec.machines):
        return False
    for base in _sys_path_dirs():
        if any(glob.glob(os.path.join(base, pattern)) for pattern in spec.wheel_globs):
            return True
    if spec.prefix_lib:
        for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX", ""))):
            if prefix and any(os.path.exists(os.path.join(prefix, "lib", soname)) for soname in spec.sonames):
                return True
    return False


def loaded_libraries() -> dict[str, str]:
    """Name -> path of every library loaded so far."""
    return dict(_paths)


class LazyFunctions:
    """Attribute access to a library's C functions, typed from a table and bound on first use.

    ``table`` maps a C function name to ``(restype, [argtypes...])``. Nothing is loaded until the first
    attribute is read; then every function of the table becomes a plain instance attribute, so later
    reads cost a dict lookup. Functions missing from an older library version are skipped (reading one
    raises AttributeError naming the library).
    """

    def __init__(self, library: str, table: dict, depends: tuple = (), check=None):
        self.__dict__["_library"] = library
        self.__dict__["_table"] = table
        # libraries loaded first, so that the dynamic loader finds them by soname when ``library`` needs them
        # and its RPATH does not lead there (wheels installed in different folders)
        self.__dict__["_depends"] = depends
        # called (once it passes) after the dependencies load and before the library does: a requirement on
        # them that the dynamic loader would only find at the first call (an NCCL too old for cuBLASMp: its
        # functions bind lazily, and a missing one ends the process with a symbol lookup error)
        self.__dict__["_check"] = check

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        for dependency in self._depends:
            load_library(dependency)
        if self._check is not None:
            self._check()
            self.__dict__["_check"] = None
        lib = load_library(self._library)
        with _lock:
            for fname, (restype, argtypes) in self._table.items():
                if fname in self.__dict__:
                    continue
                try:
                    fn = getattr(lib, fname)
                except AttributeError:
                    continue
                fn.restype = restype
                fn.argtypes = argtypes
                self.__dict__[fname] = fn
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"{name} is not available in the loaded {self._library} library") from None

    def has(self, name: str) -> bool:
        try:
            getattr(self, name)
        except AttributeError:
            return False
        return True
