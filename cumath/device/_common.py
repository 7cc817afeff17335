"""Shared pieces of the device APIs: compute capabilities, precisions and value types, small named tuples, and
the base class of the objects that stand for generated device functions.

Nothing here imports numba or loads a library at import time.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NamedTuple

from .._core.compute_capability import current_compute_capability, parse_compute_capability

if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["KernelOnlyFunction", "ComputeCapability", "Dim3", "LeadingDimension", "TransposeMode", "CodeType", "normalize_cc",
           "current_cc", "normalize_precision", "choice", "function_form_sm", "positive_int", "int_triple",
           "VALUE_TYPES", "DeviceFunction", "HOST_CALL_MESSAGE", "Param", "MethodSpec"]

logger = logging.getLogger(__name__)


class ComputeCapability(NamedTuple):
    major: int
    minor: int

    @property
    def sm(self) -> int:
        """The integer libmathdx takes (900 for 9.0)."""
        return self.major * 100 + self.minor * 10

    def __str__(self) -> str:
        return f"{self.major}{self.minor}"


class Dim3(NamedTuple):
    x: int = 1
    y: int = 1
    z: int = 1


class LeadingDimension(NamedTuple):
    a: int
    b: int
    c: int


class TransposeMode(NamedTuple):
    a: str
    b: str


class CodeType(NamedTuple):
    """The kind of code to generate ('lto') and the compute capability it is for."""

    kind: str
    cc: ComputeCapability


def normalize_cc(cc, *, what: str = "sm") -> ComputeCapability:
    """(major, minor) from 90, '90', '9.0', 'sm_90', (9, 0), a ComputeCapability or a CodeType; None: the GPU's.
    The device libraries start at 7.0."""
    if cc is None:
        return current_cc(what)
    if isinstance(cc, CodeType):
        return cc.cc
    return ComputeCapability(*parse_compute_capability(cc, what=what, min_major=7, oldest=" (Volta)"))


def current_cc(what: str = "sm") -> ComputeCapability:
    """The compute capability of the current GPU; ValueError naming ``what`` to pass when there is none."""
    try:
        return ComputeCapability(*current_compute_capability())
    except Exception as exc:
        raise ValueError(f"no CUDA GPU to generate device code for ({exc}); pass {what}= (e.g. {what}=(9, 0)) "
                         f"to generate it without one") from exc


# precision name -> (commondxPrecision member name, real value type name, complex value type name)
_PRECISIONS = {
    "float16": ("COMMONDX_PRECISION_F16", "COMMONDX_R_16F", "COMMONDX_C_16F"),
    "float32": ("COMMONDX_PRECISION_F32", "COMMONDX_R_32F", "COMMONDX_C_32F"),
    "float64": ("COMMONDX_PRECISION_F64", "COMMONDX_R_64F", "COMMONDX_C_64F"),
}
# commondxValueType member name -> NumPy dtype name (the value types the device objects hand to kernels)
VALUE_TYPES = {
    "COMMONDX_R_16F": "float16", "COMMONDX_R_32F": "float32", "COMMONDX_R_64F": "float64",
    "COMMONDX_R_16F2": "float16x2", "COMMONDX_C_16F2": "float16x4",  # half2 pairs: two FFTs at once
    "COMMONDX_C_16F": "complex32", "COMMONDX_C_32F": "complex64", "COMMONDX_C_64F": "complex128",
    "COMMONDX_R_32I": "int32", "COMMONDX_R_64I": "int64", "COMMONDX_R_8I": "int8", "COMMONDX_R_16I": "int16",
    "COMMONDX_R_8UI": "uint8", "COMMONDX_R_16UI": "uint16", "COMMONDX_R_32UI": "uint32", "COMMONDX_R_64UI": "uint64",
}


def normalize_precision(precision, *, allowed=("float32", "float64"), what: str = "precision") -> str:
    """'float32' or 'float64' (or another allowed name) from a NumPy dtype, a type such as numpy.float32, or a name."""
    name = None
    if isinstance(precision, str):
        name = precision.strip().lower()
    elif precision is not None:
        name = getattr(precision, "__name__", None) if isinstance(precision, type) else None
        if name is None:
            name = getattr(precision, "name", None) or str(precision)
        name = str(name).lower()
    aliases = {"float": "float64", "double": "float64", "single": "float32", "half": "float16", "f4": "float32",
               "f8": "float64", "f2": "float16", "fp32": "float32", "fp64": "float64", "fp16": "float16"}
    name = aliases.get(name, name)
    if name not in allowed:
        raise ValueError(f"{what}={precision!r} is not supported; the allowed values are "
                         f"{', '.join('numpy.' + a for a in allowed)}")
    return name


def precision_enum(name: str) -> str:
    return _PRECISIONS[name][0]


def value_type_enum(precision: str, complex_: bool) -> str:
    return _PRECISIONS[precision][2 if complex_ else 1]


def choice(value, allowed, what: str, *, case=str.lower):
    """``value`` normalised by ``case`` if it is one of ``allowed``, else ValueError listing them."""
    if isinstance(value, str):
        v = case(value.strip())
        for a in allowed:
            if case(a) == v:
                return a
    raise ValueError(f"{what}={value!r} is not supported; the allowed values are {', '.join(map(repr, allowed))}")


def positive_int(value, what: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
    v = int(value.__index__())
    if v < minimum:
        raise ValueError(f"{what}={value!r} must be at least {minimum}")
    return v


def int_triple(value, what: str, *, pad: int = 1, minimum: int = 1) -> tuple[int, int, int]:
    """A 3-tuple of ints from an int, a 1- to 3-sequence (padded with ``pad``) or a Dim3."""
    if isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    else:
        try:
            items = list(value)
        except TypeError:
            raise TypeError(f"{what} must be an integer or a sequence of 1 to 3 integers, not "
                            f"{type(value).__name__}") from None
    if not 1 <= len(items) <= 3:
        raise ValueError(f"{what}={value!r} must have 1 to 3 entries")
    out = [positive_int(v, what, minimum=minimum) for v in items]
    return tuple(out + [pad] * (3 - len(out)))


def function_form_sm(compiler, code_type, kwargs: dict) -> None:
    """Check the function forms' ``compiler`` and fold ``code_type`` (``('lto', cc)``) into ``kwargs['sm']``."""
    if compiler not in (None, "numba"):
        raise ValueError(f"compiler={compiler!r} is not supported; the allowed values are None and 'numba'")
    if code_type is None:
        return
    if "sm" in kwargs:
        raise ValueError("pass the compute capability once: code_type= or sm=, not both")
    kind = getattr(code_type, "kind", None)
    cc = getattr(code_type, "cc", None)
    if kind is None and isinstance(code_type, (tuple, list)) and len(code_type) == 2:
        kind, cc = code_type
    if kind not in ("lto", "ltoir"):
        raise ValueError(f"code_type={code_type!r} is not supported; cumath generates LTO-IR: pass "
                         f"code_type=('lto', cc) or leave it out")
    kwargs["sm"] = cc


class Param(NamedTuple):
    """One argument of a device function as kernels call it."""

    name: str
    kind: str  # "ptr" (array/pointer/record) or "ref" (a scalar passed by address)
    dtype: str | None = None  # NumPy-style name the data must have (None: any)


class MethodSpec(NamedTuple):
    """A method of a device-API object inside kernels: the ``extern "C"`` symbol it calls, its ``Param`` s, and
    the link files (a tuple of paths, or a callable returning one: generated when the call is first lowered)."""

    symbol: str
    params: tuple
    files: object


HOST_CALL_MESSAGE = ("{name} is a device function: call it inside a numba-cuda kernel (@cuda.jit), where it runs "
                     "on the GPU; from the host, read its traits and pass .files to cuda.jit(link=...)")


def np_dtype(name: str):
    """The NumPy dtype of a libmathdx value type name (the half-precision vectors included)."""
    from ._vector import VECTORS

    if name in VECTORS:
        return VECTORS[name]
    import numpy as np

    return np.dtype(name)


def is_suggested(value) -> bool:
    return isinstance(value, str) and value.strip().lower() == "suggested"


class DeviceFunction:
    """Base of the objects that stand for generated device functions (FFT, Matmul, solvers).

    Subclasses set ``_generator`` (a ``_codegen.Generator``) and implement ``_numba_methods()``; the generated
    code is reached through ``.files`` (paths for ``cuda.jit(link=...)``), ``.codes`` (the bytes) and the
    numba integration (``_numba_type_``), all lazily.
    """

    _generator = None  # set by subclasses

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(HOST_CALL_MESSAGE.format(name=type(self).__name__))

    # ------------------------------------------------------------------------------------ generated code
    @property
    def files(self) -> list[str]:
        """Paths of the generated code (LTO-IR, plus a fatbin where the library needs one) for
        ``@cuda.jit(link=...)``; generated on first use and cached on disk."""
        return list(self._generator.files())

    @property
    def codes(self) -> list[bytes]:
        """The generated code blobs (LTO-IR first)."""
        return list(self._generator.blobs())

    @property
    def ltos(self) -> list[bytes]:
        """The LTO IR blobs of the generated device code."""
        return [b for b, kind in zip(self._generator.blobs(), self._generator.kinds()) if kind == "ltoir"]

    @property
    def symbol(self) -> str:
        """The name of the (first) generated device function."""
        return self._generator.symbols()[0]

    @property
    def _numba_key(self) -> str:
        """What identifies the generated code (one numba type per key)."""
        return "+".join(self._generator.symbols())

    def _trait(self, name, index=0):
        return self._generator.traits(index)[name]

    # ---------------------------------------------------------------------------------------- numba hook
    @property
    def _numba_type_(self):
        # numba reads this with getattr(obj, "_numba_type_", None): an AttributeError raised inside would be
        # taken for "no such attribute" and hidden, so it is re-raised as another type.
        try:
            from ._numba_support import device_function_type

            return device_function_type(self)
        except AttributeError as exc:
            raise RuntimeError(f"could not make the numba type of {type(self).__name__}: {exc}") from exc

    def _numba_methods(self) -> dict:
        """name -> MethodSpec (lowered by ``_numba_support``)."""
        raise NotImplementedError

    def _numba_constants(self) -> dict:
        """Attribute name -> value usable inside kernels (ints, tuples of ints, dtypes)."""
        raise NotImplementedError


class KernelOnlyFunction:
    """A function that exists only inside numba-cuda kernels: on the host, a named stub whose numba type
    (``_numba_type_``, from the subclass's ``_typing()``) carries its typing and lowering. ``hint`` ends the
    TypeError that calling it on the host raises."""

    hint = ""

    def __init__(self, name: str, doc: str):
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(f"{self.__name__}() is called inside numba-cuda kernels{self.hint}; it has no host "
                        f"implementation")

    def __repr__(self):
        return f"cumath.device.{self.__name__}"

    def __reduce__(self):
        return self.__name__

    @property
    def _numba_type_(self):
        try:
            return self._typing()
        except AttributeError as exc:  # numba hides AttributeErrors raised here; make them visible
            raise RuntimeError(f"could not make the numba type of {self!r}: {exc}") from exc

    def _typing(self):
        raise NotImplementedError

