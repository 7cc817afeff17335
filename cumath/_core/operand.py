"""The one operand type the internals see, and the boundary that wraps and unwraps user arrays.

Arrays are read through their own attributes or the standard protocols (``__array_interface__``,
``__cuda_array_interface__``, DLPack); the framework that made an array is identified from
``type(x).__module__`` and its adapter (``_core/frameworks/<package>.py``) is imported only then.
"""

from __future__ import annotations

import importlib
import logging

from .dtypes import ITEMSIZE

__all__ = ["Operand", "wrap_operand", "adapter", "check_same_place", "immutable_hint"]

logger = logging.getLogger(__name__)


class Operand:
    """A view of a user array: address, shape, strides (in elements), dtype name, device, package.

    ``device_id`` is None for host memory. ``obj`` is the array itself (kept alive while wrapped).
    """

    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "device_id", "package", "readonly")

    def __init__(self, obj, ptr, shape, strides, dtype, device_id, package, readonly=False):
        self.obj = obj
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device_id = device_id
        self.package = package
        self.readonly = readonly

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def on_gpu(self) -> bool:
        return self.device_id is not None

    @property
    def signature(self) -> tuple:
        """What a plan depends on: package, device, shape, strides and dtype."""
        return (self.package, self.device_id, self.shape, self.strides, self.dtype)

    def is_dense_in(self, perm) -> bool:
        """Whether the memory is dense with axes ``perm`` from outermost to innermost."""
        expected = 1
        for axis in reversed(perm):
            if self.shape[axis] != 1 and self.strides[axis] != expected:
                return False
            expected *= self.shape[axis]
        return True

    def __repr__(self):
        where = "host" if self.device_id is None else f"cuda:{self.device_id}"
        return f"Operand({self.package} {self.dtype}{list(self.shape)} strides={list(self.strides)} on {where})"


_ADAPTERS: dict[str, object] = {}
_PACKAGES = {"numpy": "numpy", "cupy": "cupy", "torch": "torch", "cupy_backends": "cupy", "jax": "jax",
             "jaxlib": "jax"}


def adapter(package: str):
    """The adapter module of ``package`` ("numpy", "cupy", "torch", "jax"), imported on first use."""
    mod = _ADAPTERS.get(package)
    if mod is None:
        mod = importlib.import_module(f"cumath._core.frameworks.{package}")
        _ADAPTERS[package] = mod
    return mod


_WRAPPERS: dict[type, object] = {}  # array type -> its adapter's wrap(), filled as types are seen


def wrap_operand(x, name: str = "operand") -> Operand:
    """Wrap a NumPy/CuPy/PyTorch array, or any DLPack / array-interface producer."""
    wrap = _WRAPPERS.get(type(x))
    if wrap is not None:
        return wrap(x)
    package = _PACKAGES.get(type(x).__module__.partition(".")[0])
    if package is not None:
        wrap = _WRAPPERS[type(x)] = adapter(package).wrap
        return wrap(x)
    return adapter("numpy").wrap(_convert_foreign(x, name))


def _convert_foreign(x, name):
    """A zero-copy view of a foreign array through a package cumath knows, which also builds the result."""
    if hasattr(x, "__cuda_array_interface__") or _dlpack_device_type(x) == 2:
        for package in ("cupy", "torch"):
            try:
                mod = importlib.import_module(package)
            except ImportError:
                continue
            view = mod.asarray(x) if package == "cupy" else mod.from_dlpack(x)
            logger.info("%s of type %s is read through %s (zero-copy)", name, type(x).__name__, package)
            return view
        raise TypeError(
            f"{name} of type {type(x).__name__} is a CUDA array; reading it needs CuPy or PyTorch installed"
        )
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__") or _dlpack_device_type(x) == 1:
        import numpy as np

        if hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
            return np.from_dlpack(x)
        return np.asarray(x)
    raise TypeError(
        f"{name} must be an array: a numpy.ndarray, cupy.ndarray, torch.Tensor, or an object with "
        f"__array_interface__, __cuda_array_interface__ or __dlpack__; got {type(x).__name__}"
    )


def _dlpack_device_type(x):
    try:
        return x.__dlpack_device__()[0]
    except Exception:
        return None


def immutable_hint(op: Operand) -> str:
    """What to add to a "read-only" message for ``op``: JAX arrays can never be written."""
    if op.package == "jax":
        return " (JAX arrays are immutable: call it out of place, inplace=False, and use the result)"
    return ""


def check_same_place(operands: dict) -> None:
    """All operands must come from one package and one device; the message names the culprits."""
    items = [(k, v) for k, v in operands.items() if v is not None]
    first_name, first = items[0]
    for name, op in items[1:]:
        if op.package != first.package:
            raise TypeError(
                f"{name} is a {op.package} array while {first_name} is a {first.package} array; "
                f"pass operands from one package"
            )
        if op.device_id != first.device_id:
            where = lambda o: "host memory" if o.device_id is None else f"GPU {o.device_id}"  # noqa: E731
            raise ValueError(
                f"{name} is in {where(op)} while {first_name} is in {where(first)}; move them to one device"
            )
