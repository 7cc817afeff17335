"""numba-cuda typing and lowering of the device-API objects (FFT, Matmul, solvers).

Imported only when numba types one of these objects (through their ``_numba_type_``), so numba-cuda is
already being imported; it goes through :func:`cumath._core.numba_compat.import_numba_cuda` all the same
(the NumPy 2.5 compatibility step).

Each object becomes a :class:`DeviceFunctionType` instance. Inside a kernel:

- its traits are compile-time constants (``fft.storage_size``, ``fft.value_type``, ``MM.a_dim``...), so they
  can size ``cuda.local.array`` and ``cuda.shared.array``;
- its methods (``execute``, ``factorize``, ``solve``... and the call itself) lower to calls of the generated
  ``extern "C"`` device functions, declared with ``cuda.declare_device(..., link=obj.files, abi="c")``, so a
  kernel links the code whether or not it was given ``link=obj.files`` (numba-cuda keeps link files in a set).

A method is described by a ``MethodSpec`` (``_common``): the symbol and one ``Param`` per argument. Pointer
parameters take arrays (local, shared or global; their data pointer is passed), raw pointers, or records
(an element of a record array, passed by reference); "ref" parameters take a scalar, which is stored in a
temporary of the parameter's dtype whose address is passed (alpha and beta of a GEMM), or an array.
"""

from __future__ import annotations

from .._core.numba_compat import import_numba_cuda

cuda = import_numba_cuda(feature="cumath.device")

from numba.cuda import types  # noqa: E402
from numba.cuda.extending import (  # noqa: E402
    core_models,
    infer_getattr,
    lower_builtin,
    lower_getattr_generic,
    register_model,
)
from numba.cuda.core.imputils import lower_constant  # noqa: E402
from numba.cuda.typing.templates import AttributeTemplate  # noqa: E402
from numba.cuda.core.errors import TypingError  # noqa: E402

from ._numba_lowering import call_c, pointer_of, refresh_contexts  # noqa: E402
from ._numba_tensors import factory_type, lower_execute, type_execute  # noqa: E402
from ._numba_vectors import is_vector, numba_dtype, scalar_names, vector_class_type  # noqa: E402

__all__ = ["DeviceFunctionType", "device_function_type", "METHOD_NAMES"]

# Methods the objects may have inside kernels; each object says which of them it offers (_numba_methods()).
METHOD_NAMES = ("__call__", "execute", "factorize", "solve", "multiply")


class DeviceFunctionType(types.Opaque):
    """The numba type of one device-API object (the object itself is ``self.obj``)."""

    def __init__(self, obj):
        self.obj = obj
        super().__init__(name=f"cumath.device.{type(obj).__name__}({obj._numba_key})")


register_model(DeviceFunctionType)(core_models.OpaqueModel)

_types: dict[str, DeviceFunctionType] = {}


def device_function_type(obj) -> DeviceFunctionType:
    key = obj._numba_key
    t = _types.get(key)
    if t is None:
        t = _types[key] = DeviceFunctionType(obj)
    return t


@lower_constant(DeviceFunctionType)
def _lower_constant(context, builder, ty, pyval):
    return context.get_dummy_value()


# ------------------------------------------------------------------------------------------- attributes

def _constant_type(value):
    if isinstance(value, bool):
        return types.boolean
    if isinstance(value, int):
        return types.IntegerLiteral(value)
    if isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return types.UniTuple(types.int64, len(value)) if value else types.Tuple(())
    if isinstance(value, str) and value in scalar_names():
        return types.NumberClass(numba_dtype(value))
    if isinstance(value, str) and is_vector(value):
        return vector_class_type(value)
    return None


@infer_getattr
class _DeviceFunctionAttributes(AttributeTemplate):
    key = DeviceFunctionType

    def generic_resolve(self, typ, attr):
        if attr in METHOD_NAMES:
            if attr not in typ.obj._numba_methods():
                return None
            return types.BoundFunction(_TEMPLATES[attr], typ)
        if attr in getattr(typ.obj, "_NUMBA_FACTORIES", ()):  # Matmul's layouts, partitioners, accumulators
            return factory_type(typ.obj, attr, typ)
        constants = typ.obj._numba_constants()
        if attr not in constants:
            return None
        return _constant_type(constants[attr])


@lower_getattr_generic(DeviceFunctionType)
def _lower_attribute(context, builder, typ, value, attr):
    v = typ.obj._numba_constants()[attr]
    if isinstance(v, bool):
        return context.get_constant(types.boolean, v)
    if isinstance(v, int):
        return context.get_constant(types.int64, v)
    if isinstance(v, tuple):
        return context.make_tuple(builder, _constant_type(v), [context.get_constant(types.int64, x) for x in v])
    return context.get_dummy_value()  # a dtype (NumberClass) has no run-time value


# ---------------------------------------------------------------------------------------------- pointers

def _element_dtype(ty):
    if isinstance(ty, (types.Array, types.CPointer)):
        return ty.dtype
    return None


def _check_param(obj, label: str, p, ty) -> None:
    what = f"{type(obj).__name__}.{label}() argument {p.name!r}"
    if p.kind == "ref":
        if isinstance(ty, (types.Number, types.Boolean)):
            return
        if isinstance(ty, (types.Array, types.CPointer)):
            dt = _element_dtype(ty)
            if p.dtype is None or dt == numba_dtype(p.dtype):
                return
            raise TypingError(f"{what} must hold {p.dtype}, not {dt}")
        raise TypingError(f"{what} must be a scalar (or an array of {p.dtype}), not {ty}")
    if isinstance(ty, (types.Array, types.CPointer, types.Record)) or ty == types.voidptr:
        if isinstance(ty, types.Array) and ty.ndim > 1 and not (ty.is_c_contig or ty.is_f_contig):
            raise TypingError(f"{what} must be a contiguous array, not {ty}")
        dt = _element_dtype(ty)
        if p.dtype is None or dt is None or dt == numba_dtype(p.dtype) or dt in (types.uint8, types.int8):
            return
        if p.dtype.startswith("float16x") and dt == types.float16:  # half vectors held as plain halves
            return
        raise TypingError(f"{what} must be an array of {p.dtype}, not of {dt}")
    raise TypingError(f"{what} must be an array or a pointer, not {ty}")


# ------------------------------------------------------------------------------------------------ methods

def _label(method: str) -> str:
    return "call" if method == "__call__" else method


def _method_spec(obj, method: str, args):
    specs = obj._numba_methods()
    spec = specs.get(method)
    if spec is None:
        offered = sorted(_label(m) for m in specs)
        raise TypingError(f"{type(obj).__name__} has no in-kernel method {_label(method)}(); it offers "
                          f"{', '.join(offered) or 'none'}")
    if len(args) != len(spec.params):
        raise TypingError(f"{type(obj).__name__}.{_label(method)}() takes {len(spec.params)} arguments "
                          f"({', '.join(p.name for p in spec.params)}), {len(args)} given")
    for p, ty in zip(spec.params, args):
        _check_param(obj, _label(method), p, ty)
    return spec


def _method_template(method: str):
    from numba.cuda.typing.templates import AbstractTemplate, signature

    class _Method(AbstractTemplate):
        key = f"cumath.device.{method}"

        def generic(self, args, kws):
            if kws:
                raise TypingError(f"{_label(method)}() takes positional arguments only")
            if _tensor_call(self.this.obj, method, args):
                return signature(type_execute(self.this.obj, args), *args, recvr=self.this)
            _method_spec(self.this.obj, method, args)
            return signature(types.none, *args, recvr=self.this)

    return _Method


_TEMPLATES = {m: _method_template(m) for m in METHOD_NAMES}


def _tensor_call(obj, method: str, args) -> bool:
    """Whether ``obj.method(*args)`` is an execute on cuBLASDx tensors (the tensor API of Matmul)."""
    return (method in ("execute", "__call__") and getattr(obj, "_NUMBA_FACTORIES", None) is not None
            and any(getattr(a, "is_cumath_tensor", False) for a in args))


def _lower_method(method: str):
    def impl(context, builder, sig, args):
        self_ty, arg_types, values = sig.args[0], sig.args[1:], args[1:]
        if _tensor_call(self_ty.obj, method, arg_types):
            lower_execute(context, builder, self_ty.obj, arg_types, values)
            return context.get_dummy_value()
        spec = _method_spec(self_ty.obj, method, arg_types)
        ptrs = [pointer_of(context, builder, ty, v, numba_dtype(p.dtype) if p.kind == "ref" and p.dtype else None)
                for p, ty, v in zip(spec.params, arg_types, values)]
        call_c(context, builder, spec.symbol, ptrs, spec.files() if callable(spec.files) else spec.files)
        return context.get_dummy_value()

    return impl


for _m in METHOD_NAMES:
    if _m == "__call__":  # calling the object: numba looks the lowering up by the callee's type (class)
        lower_builtin(DeviceFunctionType, DeviceFunctionType, types.VarArg(types.Any))(_lower_method(_m))
    else:
        lower_builtin(f"cumath.device.{_m}", DeviceFunctionType, types.VarArg(types.Any))(_lower_method(_m))
del _m

refresh_contexts()  # this module is imported while numba types the first object
