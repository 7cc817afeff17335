"""Locate and load native libraries: lazily, once, thread-safely.

Search order for an NVIDIA library: cuda-pathfinder (when installed), then the ``nvidia/cu13/lib`` and
``nvidia/*/lib`` folders of every ``sys.path`` entry (covers ``pip install --target`` and ``PYTHONPATH``,
and sonames that an older cuda-pathfinder does not know), then the system loader by soname.
CPU libraries (FFTW, MKL) are looked for in the wheels that bring them and then by soname.
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

__all__ = ["LIBRARIES", "load_library", "find_library", "loaded_libraries", "LibrarySpec"]

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


def _nv(name: str, *sonames: str, extra: str = "cu13") -> LibrarySpec:
    return LibrarySpec(sonames=sonames, extra=extra, pathfinder=name)


LIBRARIES: dict[str, LibrarySpec] = {
    "cudart": _nv("cudart", "libcudart.so.13", "libcudart.so.12"),
    "cufft": _nv("cufft", "libcufft.so.12", "libcufft.so.11"),
    "cublas": _nv("cublas", "libcublas.so.13", "libcublas.so.12"),
    "cublasLt": _nv("cublasLt", "libcublasLt.so.13", "libcublasLt.so.12"),
    "curand": _nv("curand", "libcurand.so.10"),
    "cusparse": _nv("cusparse", "libcusparse.so.12"),
    "cusolver": _nv("cusolver", "libcusolver.so.12", "libcusolver.so.11"),
    "nvrtc": LibrarySpec(("libnvrtc.so.13", "libnvrtc.so.12"), "cu13", pathfinder="nvrtc",
                         preload=("libnvrtc-builtins.so.*",)),
    "nvJitLink": _nv("nvJitLink", "libnvJitLink.so.13", "libnvJitLink.so.12"),
    "cudss": _nv("cudss", "libcudss.so.1", "libcudss.so.0", extra="cudss"),
    # the cutensor-cu13 wheel puts the library in site-packages/cutensor/lib (not under nvidia/)
    "cutensor": LibrarySpec(("libcutensor.so.2",), "tensor", pathfinder="cutensor",
                            wheel_globs=("cutensor/lib/libcutensor.so.2", "nvidia/cu13/lib/libcutensor.so.2")),
    "mathdx": _nv("mathdx", "libmathdx.so.0", extra="dx"),
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
    "scipy_openblas64": LibrarySpec(("libscipy_openblas64_.so",), "cpu", wheel_globs=(
        "numpy.libs/libscipy_openblas64_*.so*", "scipy_openblas64/lib/libscipy_openblas64_*.so*")),
    "scipy_openblas32": LibrarySpec(("libscipy_openblas.so",), "cpu", wheel_globs=(
        "scipy.libs/libscipy_openblas-*.so*", "scipy_openblas32/lib/libscipy_openblas.so*")),
    "openblas": LibrarySpec(("libopenblas.so.0", "libopenblas.so"), "cpu"),
    # The same from NumPy < 2 / SciPy < 1.14 wheels (NumPy 1.24-1.26, SciPy 1.9-1.13): the library is named
    # libopenblas64_p-r0-<hash>.<version>.so (ILP64, symbols cblas_*64_) and libopenblasp-r0-<hash>.<version>.so
    # (LP64, plain symbols).
    "numpy_openblas64_legacy": LibrarySpec((), "cpu", wheel_globs=("numpy.libs/libopenblas64_p-r0-*.so*",)),
    "scipy_openblas_legacy": LibrarySpec((), "cpu", wheel_globs=("scipy.libs/libopenblasp-r0-*.so*",)),
}

_lock = threading.RLock()
_loaded: dict[str, ctypes.CDLL] = {}
_paths: dict[str, str] = {}


def _sys_path_dirs() -> list[str]:
    return [p for p in sys.path if p and os.path.isdir(p)]


def _nvidia_wheel_candidates(spec: LibrarySpec) -> list[str]:
    found = []
    for base in _sys_path_dirs():
        for sub in ("nvidia/cu13/lib", "nvidia/*/lib", "nvidia/*/lib64", "nvidia/cu12/lib"):
            for soname in spec.sonames:
                found.extend(sorted(glob.glob(os.path.join(base, sub, soname))))
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
    return getattr(loaded, "abs_path", None)


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
    if path:
        yield path, "cuda-pathfinder"
    for path in _nvidia_wheel_candidates(spec):
        yield path, "sys.path wheel folder"
    for path in _bundled_candidates(spec):
        yield path, "bundled copy"
    for soname in spec.sonames:
        yield soname, "system loader"


def find_library(name: str) -> str | None:
    """The path a library would be (or was) loaded from, or None; does not raise."""
    try:
        load_library(name)
    except LibraryNotFoundError:
        return None
    return _paths.get(name)


def load_library(name: str) -> ctypes.CDLL:
    """Load library ``name`` (a key of ``LIBRARIES``) once and return its handle.

    Raises ``LibraryNotFoundError`` naming the pip extra that brings the library.
    """
    lib = _loaded.get(name)
    if lib is not None:
        return lib
    with _lock:
        lib = _loaded.get(name)
        if lib is not None:
            return lib
        spec = LIBRARIES[name]
        errors = []
        for path, how in _candidates(name, spec):
            try:
                mode = ctypes.RTLD_GLOBAL if spec.pathfinder else ctypes.RTLD_LOCAL
                if spec.deepbind:
                    mode |= getattr(os, "RTLD_DEEPBIND", 0)
                lib = ctypes.CDLL(path, mode=mode)
            except OSError as exc:
                errors.append(f"{path}: {exc}")
                continue
            _loaded[name] = lib
            _paths[name] = path if os.path.isabs(path) else _resolved_path(lib, path)
            logger.info("loaded %s from %s (%s)", name, _paths[name], how)
            if spec.preload and spec.companion_of is None:
                _preload_next_to(_paths[name], spec.preload)
            return lib
        raise LibraryNotFoundError(
            f"could not load the {name} library (looked for {', '.join(spec.sonames)} through cuda-pathfinder, "
            f"the nvidia/*/lib folders of sys.path and the system loader); {install_hint(name)}"
            + (f". Last error: {errors[-1]}" if errors else "")
        )


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


def install_hint(name: str) -> str:
    """How to get library ``name``: the pip extra that brings it, or the NVIDIA driver for libcuda."""
    extra = LIBRARIES[name].extra
    if extra == "driver":
        return "it comes with the NVIDIA driver, not with a pip package"
    return f"install it with `pip install cumath[{extra}]`"


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

    def __init__(self, library: str, table: dict):
        self.__dict__["_library"] = library
        self.__dict__["_table"] = table

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
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
