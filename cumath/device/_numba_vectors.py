"""numba-cuda typing of the half-precision vector types (:mod:`cumath.device._vector`).

Each :class:`~cumath.device._vector.HalfVector` gets a numba struct type of float16 members (built with
numba-cuda's own ``make_vector_type``, so ``.x .y .z .w`` work as for ``float32x4``) and a *class* type that is
both a dtype (``cuda.local.array(n, dtype=float16x4)``) and a constructor (``float16x4(a, b, c, d)``, each
argument cast to float16). Imported when numba first types one of the objects.
"""

from __future__ import annotations

from .._core.numba_compat import import_numba_cuda

cuda = import_numba_cuda(feature="cumath.device")

from numba.cuda import cgutils, types  # noqa: E402
from numba.cuda.core.imputils import lower_constant  # noqa: E402
from numba.cuda.extending import core_models, lower_builtin, register_model  # noqa: E402
from numba.cuda.typing.templates import signature  # noqa: E402
from numba.cuda.vector_types import make_vector_type  # noqa: E402

__all__ = ["vector_type", "vector_class_type", "VectorClass"]


class VectorClass(types.Callable, types.DTypeSpec, types.Opaque):
    """The type of a HalfVector object in a kernel: a dtype whose call constructs a value."""

    def __init__(self, instance_type, host):
        self.instance_type = instance_type
        self.host = host
        super().__init__(f"class({instance_type})")

    @property
    def key(self):
        return self.instance_type

    @property
    def dtype(self):
        return self.instance_type

    def get_call_type(self, context, args, kws):
        if kws or len(args) != self.host.count or not all(isinstance(a, types.Number) for a in args):
            return None
        return signature(self.instance_type, *args)

    def get_call_signatures(self):
        return (), True

    def get_impl_key(self, sig):
        return type(self)


register_model(VectorClass)(core_models.OpaqueModel)

_vectors: dict[str, object] = {}
_classes: dict[str, VectorClass] = {}


def vector_type(host):
    """The numba struct type of a HalfVector (one per process)."""
    t = _vectors.get(host.name)
    if t is None:
        t = _vectors[host.name] = make_vector_type(host.name, types.float16, host.attributes, host)
        from ._numba_support import refresh_contexts

        refresh_contexts()  # the attribute wrappers were registered after the contexts loaded their registries
    return t


def vector_class_type(host) -> VectorClass:
    c = _classes.get(host.name)
    if c is None:
        c = _classes[host.name] = VectorClass(vector_type(host), host)
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
