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

A method is described by a :class:`MethodSpec`: the symbol and one :class:`Param` per argument. Pointer
parameters take arrays (local, shared or global; their data pointer is passed), raw pointers, or records
(an element of a record array, passed by reference); "ref" parameters take a scalar, which is stored in a
temporary of the parameter's dtype whose address is passed (alpha and beta of a GEMM), or an array.
"""

from __future__ import annotations

from typing import NamedTuple

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

__all__ = ["Param", "MethodSpec", "DeviceFunctionType", "device_function_type", "pointer_of", "numba_dtype",
           "stub_function_type",
           "call_c", "refresh_contexts", "METHOD_NAMES"]


class Param(NamedTuple):
    name: str
    kind: str  # "ptr" (array/pointer/record) or "ref" (a scalar passed by address)
    dtype: str | None = None  # NumPy-style name the data must have (None: any)


class MethodSpec(NamedTuple):
    symbol: str
    params: tuple  # of Param
    files: object  # link files (a tuple of paths, or a callable returning one: generated when first lowered)


# Methods the objects may have inside kernels; each object says which of them it offers (_numba_methods()).
METHOD_NAMES = ("__call__", "execute", "factorize", "solve", "multiply")

_NUMBA_DTYPES = {
    "float16": "float16", "float32": "float32", "float64": "float64", "complex64": "complex64",
    "complex128": "complex128", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
}


def numba_dtype(name: str):
    """The numba type of a NumPy-style dtype name (or of a half-precision vector type, 'float16x4'...)."""
    from ._vector import VECTORS

    if name in VECTORS:
        from ._numba_vectors import vector_type

        return vector_type(VECTORS[name])
    try:
        return getattr(types, _NUMBA_DTYPES[name])
    except KeyError:
        raise TypeError(f"cumath.device has no numba type for {name!r}") from None


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
    if isinstance(value, str) and value in _NUMBA_DTYPES:
        return types.NumberClass(numba_dtype(value))
    if isinstance(value, str):
        from ._vector import VECTORS

        if value in VECTORS:
            from ._numba_vectors import vector_class_type

            return vector_class_type(VECTORS[value])
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
            from ._numba_tensors import factory_type

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


def pointer_of(context, builder, ty, value, dtype=None):
    """A ``void*`` to an array's data, a pointer, a record (passed by reference), or a scalar stored in a
    temporary (cast to numba type ``dtype`` first when given)."""
    from numba.cuda import cgutils

    voidptr = context.get_value_type(types.voidptr)
    if isinstance(ty, types.Array):
        return builder.bitcast(context.make_array(ty)(context, builder, value).data, voidptr)
    if isinstance(ty, (types.CPointer, types.Record)) or ty == types.voidptr:
        return builder.bitcast(value, voidptr)
    if dtype is not None and ty != dtype:
        value = context.cast(builder, value, ty, dtype)
    return builder.bitcast(cgutils.alloca_once_value(builder, value), voidptr)


def _check_param(obj, label: str, p: Param, ty) -> None:
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

_libraries: dict[tuple, object] = {}


def _library(context, files: tuple):
    """An external code library holding ``files`` (one per set of files and process), to link into kernels."""
    lib = _libraries.get(files)
    if lib is None:
        from numba.cuda.codegen import ExternalCodeLibrary

        lib = ExternalCodeLibrary(context.codegen(), f"cumath_device_{len(_libraries)}")
        for f in files:
            lib.add_linking_file(f)
        _libraries[files] = lib
    return lib


def call_c(context, builder, symbol: str, values, files=(), return_type=None):
    """Call ``extern "C"`` function ``symbol`` with LLVM ``values`` (its prototype is made from their types,
    returning ``return_type``, an llvmlite type, or void) and link ``files`` into the kernel being compiled."""
    from llvmlite import ir
    from numba.cuda import cgutils

    if files:
        context.add_linking_libs([_library(context, tuple(files))])
    fnty = ir.FunctionType(return_type or ir.VoidType(), [v.type for v in values])
    fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
    return builder.call(fn, list(values))


def _label(method: str) -> str:
    return "call" if method == "__call__" else method


def _method_spec(obj, method: str, args) -> MethodSpec:
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
                from ._numba_tensors import type_execute

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
            from ._numba_tensors import lower_execute

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


_stub_types: dict = {}


def stub_function_type(stub, label: str, return_type, lower):
    """The numba type of a host stub of a kernel-only function, registered once per stub: calls are typed by
    ``return_type(args) -> numba type`` (raising TypingError for wrong calls; keywords are refused) and lowered by
    ``lower`` (a lower_builtin implementation). ``label`` names the function in messages."""
    t = _stub_types.get(id(stub))
    if t is not None:
        return t[1]
    from numba.cuda.typing.templates import AbstractTemplate, signature

    class _Template(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if kws:
                raise TypingError(f"{label}() takes positional arguments only")
            return signature(return_type(args), *args)

    lower_builtin(stub, types.VarArg(types.Any))(lower)
    t = types.Function(_Template)
    _stub_types[id(stub)] = (stub, t)  # the stub is kept alive with its id
    refresh_contexts()
    return t


def refresh_contexts() -> None:
    """Make the registrations above visible to a compilation already under way (this module is imported while
    numba types the first object, after the contexts loaded their registries)."""
    from numba.cuda.descriptor import cuda_target

    cuda_target.typing_context.refresh()
    cuda_target.target_context.refresh()


refresh_contexts()
