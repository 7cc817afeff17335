"""numba-cuda types of the value types the device APIs hand to kernels: :func:`numba_dtype` of a NumPy-style
name, the half-precision vectors (:mod:`cumath.device._vector`) included.

A half-precision vector ``float16x<n>`` gets a numba struct type of ``n`` float16 members (built with numba-cuda's
own ``make_vector_type``, so ``.x .y .z .w`` work as for ``float32x4``) and a *class* type that is both a dtype
(``cuda.local.array(n, dtype=float16x4)``) and a constructor (``float16x4(a, b, c, d)``, each argument cast to
float16). Both are made from the name, which says what the vector holds. Imported when numba first types a
device-API object.
"""

from __future__ import annotations

from .._core.numba_compat import import_numba_cuda

cuda = import_numba_cuda(feature="cumath.device")

from numba.cuda import cgutils, types  # noqa: E402
from numba.cuda.core.imputils import lower_constant  # noqa: E402
from numba.cuda.extending import core_models, lower_builtin, register_model  # noqa: E402
from numba.cuda.typing.templates import signature  # noqa: E402
from numba.cuda.vector_types import make_vector_type  # noqa: E402

from ._numba_lowering import refresh_contexts  # noqa: E402

__all__ = ["numba_dtype", "scalar_names", "is_vector", "vector_type", "vector_class_type", "VectorClass"]

_SCALARS = ("float16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32", "int64", "uint8",
            "uint16", "uint32", "uint64")
_HALF_VECTOR = "float16x"
_LANES = ("x", "y", "z", "w")


def scalar_names() -> tuple:
    """The NumPy-style scalar names :func:`numba_dtype` knows."""
    return _SCALARS


def is_vector(name: str) -> bool:
    """Whether ``name`` is a half-precision vector type: 'float16x2' or 'float16x4'."""
    return name in (_HALF_VECTOR + "2", _HALF_VECTOR + "4")


def numba_dtype(name: str):
    """The numba type of a NumPy-style dtype name (or of a half-precision vector type, 'float16x4'...)."""
    if is_vector(name):
        return vector_type(name)
    if name in _SCALARS:
        return getattr(types, name)
    raise TypeError(f"cumath.device has no numba type for {name!r}")


class VectorClass(types.Callable, types.DTypeSpec, types.Opaque):
    """The type of a HalfVector object in a kernel: a dtype whose call constructs a value."""

    def __init__(self, instance_type):
        self.instance_type = instance_type
        super().__init__(f"class({instance_type})")

    @property
    def key(self):
        return self.instance_type

    @property
    def dtype(self):
        return self.instance_type

    def get_call_type(self, context, args, kws):
        if kws or len(args) != len(self.instance_type.attr_names) or not all(isinstance(a, types.Number)
                                                                              for a in args):
            return None
        return signature(self.instance_type, *args)

    def get_call_signatures(self):
        return (), True

    def get_impl_key(self, sig):
        return type(self)


register_model(VectorClass)(core_models.OpaqueModel)

_vectors: dict[str, object] = {}
_classes: dict[str, VectorClass] = {}


def vector_type(name: str):
    """The numba struct type of half-precision vector ``name`` (one per process)."""
    t = _vectors.get(name)
    if t is None:
        if not is_vector(name):
            raise TypeError(f"{name!r} is not a half-precision vector type (float16x2, float16x4)")
        lanes = _LANES[:int(name[len(_HALF_VECTOR):])]
        t = _vectors[name] = make_vector_type(name, types.float16, lanes, None)
        refresh_contexts()  # the attribute wrappers were registered after the contexts loaded their registries
    return t


def vector_class_type(name: str) -> VectorClass:
    """The type of the host object ``cumath.device.<name>`` in kernels (a dtype and a constructor)."""
    c = _classes.get(name)
    if c is None:
        c = _classes[name] = VectorClass(vector_type(name))
    return c


@lower_constant(VectorClass)
def _lower_class(context, builder, ty, pyval):
    return context.get_dummy_value()


@lower_builtin(VectorClass, types.VarArg(types.Any))
def _construct(context, builder, sig, args):
    vt = sig.return_type
    out = cgutils.create_struct_proxy(vt)(context, builder)
    for name, ty, value in zip(vt.attr_names, sig.args, args):
        setattr(out, name, context.cast(builder, value, ty, types.float16))
    return out._getvalue()
