"""cuda-bindings (NVIDIA's Cython binding of the CUDA runtime, driver, NVRTC and nvJitLink), imported on first use.

``cudart``, ``cuda`` (driver), ``nvrtc`` and ``nvjitlink`` call ``cuda.bindings.<module>`` through a
:class:`LazyModule`: ``import cumath`` imports none of it; the first attribute read

1. loads the native library with cumath's loader where the binding loads one at run time (the driver, NVRTC,
   nvJitLink; the runtime is linked into cuda-bindings), so the search order, the CUDA 12 / 13 choice and the
   error that names the extra stay cumath's; cuda-bindings then finds the library already loaded;
2. imports the module, raising :class:`~cumath.errors.LibraryNotFoundError` that names the extra to install when
   cuda-bindings is missing, or is built for another CUDA major version than the libraries in use;
3. keeps every attribute it reads, so a later read costs one instance-dict lookup.
"""

from __future__ import annotations

import importlib
import threading

from ..errors import LibraryNotFoundError

__all__ = ["LazyModule", "bindings_major", "missing_message", "status_checker", "lazy_attributes"]

_lock = threading.Lock()


def bindings_major() -> int | None:
    """The CUDA major version cuda-bindings was built for (its own major version), None when not installed."""
    try:
        from cuda.bindings import __version__
    except ImportError:
        return None
    return int(__version__.split(".")[0])


def missing_message(what: str, major: int) -> str:
    """Why ``what`` cannot be used without cuda-bindings ``major``.x, and how to install it."""
    from ._loader import hint_for_extra

    extra = "cu12" if major == 12 else "cu13"
    return (f"{what} needs cuda-bindings {major}.x (NVIDIA's Python binding of the CUDA runtime, driver, NVRTC and "
            f"nvJitLink), which is not installed: install it with {hint_for_extra(extra)}")


class LazyModule:
    """``cuda.bindings.<name>``, imported (after its native ``library`` is loaded) on the first attribute read."""

    def __init__(self, name: str, library: str | None = None, what: str = ""):
        self.__dict__["_name"] = name
        self.__dict__["_library"] = library
        self.__dict__["_what"] = what or name
        self.__dict__["_module"] = None

    def _load(self):
        from ._loader import cuda_major, load_library

        with _lock:
            if self._module is not None:
                return self._module
            major = cuda_major()
            have = bindings_major()
            if have is None:
                raise LibraryNotFoundError(missing_message(self._what, major))
            if have != major:
                raise LibraryNotFoundError(
                    f"{self._what}: the installed cuda-bindings {have}.x is built for CUDA {have}, but this process "
                    f"uses the CUDA {major} libraries; install cuda-bindings {major}.x with "
                    f"`pip install \"cumath[{'cu12' if major == 12 else 'cu13'}]\"` (or set CUMATH_CUDA_MAJOR={have})")
            if self._library is not None:
                load_library(self._library)  # raises LibraryNotFoundError naming the extra (or the driver)
            module = importlib.import_module(self._name)
            self.__dict__["_module"] = module
            return module

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        module = self._module or self._load()
        value = getattr(module, attr)
        self.__dict__[attr] = value
        return value

    def __setattr__(self, attr, value):  # tests replace a function of the binding
        self.__dict__[attr] = value

    def __delattr__(self, attr):
        self.__dict__.pop(attr, None)


def status_checker(error_class, types: LazyModule, enum_name: str, prefix: str = ""):
    """``check(status, detail=None)``: raise ``error_class(status, name, detail)`` unless ``status`` (an int or one of
    cuda-bindings' enum members) is 0. The name is ``prefix`` + the member's name in ``types.<enum_name>`` (None,
    so that the message keeps the number, for a status it does not know or without cuda-bindings);
    ``check.name(status)`` gives it alone."""

    def name(status) -> str | None:
        member = status if hasattr(status, "name") else None
        if member is None:
            try:
                member = getattr(types, enum_name)(int(status))
            except Exception:  # cuda-bindings missing, or a status it does not know
                return None
        return prefix + member.name

    def check(status, detail: str | None = None) -> None:
        if status:
            raise error_class(int(status), name(status), detail)

    check.name = name
    return check


def lazy_attributes(module: str, names: dict):
    """A module ``__getattr__`` giving ``names[attr]()`` for the attributes of ``names`` (made once, then kept in
    the module's globals), AttributeError for any other."""
    import sys

    def __getattr__(attr: str):
        if attr in names:
            value = names[attr]()
            setattr(sys.modules[module], attr, value)
            return value
        raise AttributeError(f"module {module!r} has no attribute {attr!r}")

    return __getattr__
