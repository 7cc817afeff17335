"""numba-cuda typing and lowering of cuBLASDx's tensor API (see :mod:`cumath.device._tensors`).

Types: a :class:`LayoutType` is a compile-time constant (its traits are integer literals); a :class:`TensorType`
is a struct passed *by value* to the generated functions, as libmathdx's tensors are (``{void* ptr}``, plus
``long long ld`` in global memory); an :class:`AccumulatorType` holds the pointer of its register fragment; a
:class:`PartitionerType` is a constant. Calls lower to the ``extern "C"`` functions the Matmul generates
(``Matmul._tensor_function``, see :func:`~cumath.device._tensors.tensor_function`), whose link files are added
to the kernel. Integer outputs of the partitioner queries go through stack temporaries (``int*``).

The host objects are read through their attributes (a layout's ``kind``, ``matmul``, ``memory_space``...; a
partitioner's ``owns_fragment``), so this module imports none of them.
"""

from __future__ import annotations

from .._core.numba_compat import import_numba_cuda

cuda = import_numba_cuda(feature="cumath.device")

from llvmlite import ir  # noqa: E402
from numba.cuda import cgutils, types  # noqa: E402
from numba.cuda.core.errors import TypingError  # noqa: E402
from numba.cuda.core.imputils import lower_constant  # noqa: E402
from numba.cuda.extending import (  # noqa: E402
    core_models,
    infer_getattr,
    lower_builtin,
    lower_getattr_generic,
    models,
    register_model,
)
from numba.cuda.typing.templates import AbstractTemplate, AttributeTemplate, signature  # noqa: E402

from ._numba_lowering import call_c, pointer_of, refresh_contexts, stub_function_type  # noqa: E402
from ._numba_vectors import numba_dtype  # noqa: E402

__all__ = ["LayoutType", "TensorType", "PartitionerType", "AccumulatorType", "layout_type", "partitioner_type",
           "helper_type", "factory_type", "is_tensor", "type_execute", "lower_execute"]


class LayoutType(types.Dummy):
    def __init__(self, layout):
        self.layout = layout
        super().__init__(f"cumath.Layout({layout.kind}, {layout.matmul._numba_key}, ld={layout.leading_dimension})")


class TensorType(types.Type):
    is_cumath_tensor = True

    def __init__(self, layout):
        self.layout = layout
        super().__init__(f"cumath.OpaqueTensor({layout.kind}, {layout.matmul._numba_key}, "
                         f"ld={layout.leading_dimension})")


class PartitionerType(types.Dummy):
    def __init__(self, partitioner):
        self.partitioner = partitioner
        super().__init__(f"cumath.{type(partitioner).__name__}({partitioner.kind}, "
                         f"{partitioner.matmul._numba_key})")


class AccumulatorType(types.Type):
    is_cumath_tensor = True

    def __init__(self, partitioner):
        self.partitioner = partitioner
        self.layout = partitioner.layout
        super().__init__(f"cumath.Accumulator({partitioner.kind}, {partitioner.matmul._numba_key})")


@register_model(TensorType)
class _TensorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [("ptr", types.voidptr)]
        if fe_type.layout.memory_space == "gmem":
            members.append(("ld", types.int64))
        super().__init__(dmm, fe_type, members)


@register_model(AccumulatorType)
class _AccumulatorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("ptr", types.voidptr)])


register_model(LayoutType)(core_models.OpaqueModel)
register_model(PartitionerType)(core_models.OpaqueModel)

_cache: dict = {}


def _cached(cls, obj, key):
    k = (cls.__name__, key)
    t = _cache.get(k)
    if t is None:
        t = _cache[k] = cls(obj)
    return t


def layout_type(layout) -> LayoutType:
    return _cached(LayoutType, layout, layout.key)


def tensor_type(layout) -> TensorType:
    return _cached(TensorType, layout, layout.key)


def partitioner_type(p) -> PartitionerType:
    return _cached(PartitionerType, p, (type(p).__name__, p.matmul._numba_key, p.kind))


def accumulator_type(p) -> AccumulatorType:
    return _cached(AccumulatorType, p, (p.matmul._numba_key, p.kind))


def is_tensor(ty) -> bool:
    return bool(getattr(ty, "is_cumath_tensor", False))


for _t in (LayoutType, PartitionerType):
    lower_constant(_t)(lambda context, builder, ty, pyval: context.get_dummy_value())

_last = {"matmul": None}  # the Matmul of the tensor call typed last (copy_wait() uses its functions)


def _fn(matmul, function, kinds):
    _last["matmul"] = matmul
    return matmul._tensor_function(function, tuple(kinds))


# ------------------------------------------------------------------------------------------- attributes

@infer_getattr
class _LayoutAttributes(AttributeTemplate):
    key = LayoutType

    def generic_resolve(self, typ, attr):
        if attr in ("size", "cosize", "alignment", "leading_dimension"):
            v = getattr(typ.layout, attr)
            return None if v is None else types.IntegerLiteral(int(v))
        return None


@lower_getattr_generic(LayoutType)
def _layout_attribute(context, builder, typ, value, attr):
    return context.get_constant(types.int64, int(getattr(typ.layout, attr)))


# ------------------------------------------------------------------------------------------------ helpers

def _tensor_of(ty, what):
    if not is_tensor(ty):
        raise TypingError(f"{what} must be a tensor made by make_tensor() (or an accumulator), not {ty}")
    return ty


def _same_matrix(src, dst, what):
    a, b = src.layout, dst.layout
    if a.matmul._numba_key != b.matmul._numba_key:
        raise TypingError(f"{what}: the tensors belong to different Matmul objects")
    if a.matrix != b.matrix:
        raise TypingError(f"{what}: cannot copy a tensor of {a.matrix.upper()} to one of {b.matrix.upper()}")


def _check_helper(name, args):
    if name == "make_tensor":
        if len(args) != 2 or not isinstance(args[1], LayoutType):
            raise TypingError("make_tensor(array, layout) takes an array and a layout (MM.get_layout_...())")
        arr, layout = args[0], args[1].layout
        if not isinstance(arr, (types.Array, types.CPointer)):
            raise TypingError(f"make_tensor: the data must be an array or a pointer, not {arr}")
        dt = arr.dtype
        want = numba_dtype(layout.dtype.name)
        if dt != want and dt not in (types.uint8, types.int8):
            raise TypingError(f"make_tensor: a {layout.kind} tensor holds {layout.dtype.name}, the array holds {dt}")
        return tensor_type(layout)
    if name in ("copy", "copy_fragment"):
        if len(args) != 2:
            raise TypingError(f"{name}(src, dst) takes two tensors")
        src, dst = (_tensor_of(a, f"{name}() argument") for a in args)
        _same_matrix(src, dst, f"{name}()")
        if name == "copy_fragment" and "rmem" not in (src.layout.memory_space, dst.layout.memory_space):
            raise TypingError("copy_fragment() copies to or from a register fragment; use copy() otherwise")
        _fn(src.layout.matmul, "COPY", (src.layout.kind, dst.layout.kind))
        return types.none
    if name == "clear":
        if len(args) != 1 or _tensor_of(args[0], "clear() argument").layout.memory_space != "rmem":
            raise TypingError("clear(fragment) takes one register fragment")
        _fn(args[0].layout.matmul, "CLEAR", (args[0].layout.kind,))
        return types.none
    if name == "axpby":
        if len(args) != 4 or not all(isinstance(a, types.Number) for a in (args[0], args[2])):
            raise TypingError("axpby(alpha, x, beta, y) takes two scalars and two register fragments")
        x, y = _tensor_of(args[1], "axpby() x"), _tensor_of(args[3], "axpby() y")
        if x.layout.memory_space != "rmem" or y.layout.memory_space != "rmem":
            raise TypingError("axpby() works on register fragments")
        _same_matrix(x, y, "axpby()")
        _fn(x.layout.matmul, "AXPBY", (x.layout.kind, y.layout.kind))
        return types.none
    if name == "copy_wait":
        if args:
            raise TypingError("copy_wait() takes no arguments")
        return types.none
    raise AssertionError(name)


def helper_type(helper):
    name = helper.__name__
    return stub_function_type(helper, name, lambda args: _check_helper(name, args), _lower_helper(name))


def _alloca_fragment(context, builder, layout):
    ety = context.get_data_type(numba_dtype(layout.dtype.name))
    ptr = cgutils.alloca_once(builder, ir.ArrayType(ety, max(layout.cosize, 1)))
    ptr.align = max(layout.alignment, 16)
    return builder.bitcast(ptr, context.get_value_type(types.voidptr))


def _make_struct(context, builder, ty, ptr, ld=None):
    s = cgutils.create_struct_proxy(ty)(context, builder)
    s.ptr = ptr
    if ld is not None:
        s.ld = context.get_constant(types.int64, ld)
    return s._getvalue()


def _lower_helper(name):
    def impl(context, builder, sig, args):
        if name == "make_tensor":
            layout = sig.return_type.layout
            ptr = pointer_of(context, builder, sig.args[0], args[0])
            return _make_struct(context, builder, sig.return_type, ptr,
                                layout.leading_dimension if layout.memory_space == "gmem" else None)
        if name in ("copy", "copy_fragment"):
            src, dst = sig.args
            sym, files = _fn(src.layout.matmul, "COPY", (src.layout.kind, dst.layout.kind))
            call_c(context, builder, sym, list(args), files)
        elif name == "clear":
            sym, files = _fn(sig.args[0].layout.matmul, "CLEAR", (sig.args[0].layout.kind,))
            call_c(context, builder, sym, list(args), files)
        elif name == "axpby":
            x, y = sig.args[1], sig.args[3]
            sym, files = _fn(x.layout.matmul, "AXPBY", (x.layout.kind, y.layout.kind))
            xt, yt = numba_dtype(x.layout.dtype.name), numba_dtype(y.layout.dtype.name)
            alpha = pointer_of(context, builder, sig.args[0], args[0], xt)
            beta = pointer_of(context, builder, sig.args[2], args[2], yt)
            call_c(context, builder, sym, [alpha, args[1], beta, args[3]], files)
        elif name == "copy_wait":
            mm = _last["matmul"]
            if mm is None:
                raise TypingError("copy_wait() needs a cuBLASDx tensor copy in the kernel")
            sym, files = _fn(mm, "COPY_WAIT", ())
            call_c(context, builder, sym, [], files)
        return context.get_dummy_value()

    return impl


# ----------------------------------------------------------------------------------- Matmul factories

_factory_templates: dict = {}


def _factory_result(obj, name, args):
    values = []
    for a in args:
        if not isinstance(a, (types.IntegerLiteral, types.NoneType, types.Omitted)):
            raise TypingError(f"{type(obj).__name__}.{name}() inside a kernel takes integer constants, not {a}")
        values.append(getattr(a, "literal_value", None))
    host = getattr(obj, name)(*values)  # a Layout, Partitioner or Accumulator
    if getattr(host, "owns_fragment", False):
        return accumulator_type(host)
    return host._numba_type_


def factory_type(obj, name: str, this):
    if name not in getattr(obj, "_NUMBA_FACTORIES", ()):
        return None
    t = _factory_templates.get(name)
    if t is None:
        class _Factory(AbstractTemplate):
            key = f"cumath.device.Matmul.{name}"

            def generic(self, args, kws):
                if kws:
                    raise TypingError(f"{name}() takes positional arguments only")
                return signature(_factory_result(self.this.obj, name, args), *args, recvr=self.this)

        t = _factory_templates[name] = _Factory

        def impl(context, builder, sig, args):
            rt = sig.return_type
            if isinstance(rt, AccumulatorType):
                p = rt.partitioner
                ptr = _alloca_fragment(context, builder, rt.layout)
                value = _make_struct(context, builder, rt, ptr)
                sym, files = _fn(p.matmul, "CLEAR", (p.kind,))
                call_c(context, builder, sym, [value], files)
                return value
            return context.get_dummy_value()

        lower_builtin(_Factory.key, types.Any, types.VarArg(types.Any))(impl)
        refresh_contexts()
    return types.BoundFunction(t, this)


# ------------------------------------------------------------------------------------ Matmul.execute

def type_execute(obj, args):
    """The result type of ``MM.execute(...)`` with tensors (or a TypingError)."""
    if len(args) == 3:
        a, b, c = (_tensor_of(x, "execute() argument") for x in args)
        if c.layout.memory_space != "rmem":
            raise TypingError("execute(a, b, c) accumulates into a register fragment; with C in shared memory "
                              "call execute(alpha, a, b, beta, c)")
    elif len(args) == 5:
        if not isinstance(args[0], types.Number) or not isinstance(args[3], types.Number):
            raise TypingError("execute(alpha, a, b, beta, c): alpha and beta must be scalars")
        a, b, c = (_tensor_of(x, "execute() argument") for x in (args[1], args[2], args[4]))
        if c.layout.memory_space != "smem":
            raise TypingError("execute(alpha, a, b, beta, c) needs C in shared memory; with a register fragment "
                              "call execute(a, b, c)")
    else:
        raise TypingError("execute() with tensors takes (a, b, c) or (alpha, a, b, beta, c)")
    for t, m in ((a, "a"), (b, "b"), (c, "c")):
        if t.layout.matmul._numba_key != obj._numba_key:
            raise TypingError(f"execute(): tensor {m} belongs to another Matmul")
        if t.layout.matrix != m:
            raise TypingError(f"execute(): argument {m} is a tensor of {t.layout.matrix.upper()}")
    if a.layout.memory_space != "smem" or b.layout.memory_space != "smem":
        raise TypingError("execute(): A and B must be shared-memory tensors")
    _fn(obj, "EXECUTE", (a.layout.kind, b.layout.kind, c.layout.kind))
    return types.none


def lower_execute(context, builder, obj, arg_types, values):
    if len(arg_types) == 3:
        kinds = tuple(t.layout.kind for t in arg_types)
        sym, files = _fn(obj, "EXECUTE", kinds)
        call_c(context, builder, sym, list(values), files)
        return
    ct = numba_dtype(arg_types[4].layout.dtype.name)
    kinds = (arg_types[1].layout.kind, arg_types[2].layout.kind, arg_types[4].layout.kind)
    sym, files = _fn(obj, "EXECUTE", kinds)
    alpha = pointer_of(context, builder, arg_types[0], values[0], ct)
    beta = pointer_of(context, builder, arg_types[3], values[3], ct)
    call_c(context, builder, sym, [alpha, values[1], values[2], beta, values[4]], files)


# ------------------------------------------------------------------------------ partitioner methods

_P_METHODS = ("is_thread_active", "is_predicated", "is_index_in_bounds", "map_fragment_index",
              "make_accumulator_fragment", "make_empty_fragment")
_A_METHODS = ("get_results", "clear", "make_partition_and_copy", "partition_and_copy")


def _p_signature(ty, method, args):
    p = ty.partitioner
    n = {"is_index_in_bounds": 1, "map_fragment_index": 1, "make_partition_and_copy": 1,
         "partition_and_copy": 2}.get(method, 0)
    if len(args) != n:
        raise TypingError(f"{method}() takes {n} argument{'s' if n != 1 else ''}, {len(args)} given")
    if method in ("is_index_in_bounds", "map_fragment_index"):
        if not isinstance(args[0], types.Integer):
            raise TypingError(f"{method}(index) takes an integer index")
        _fn(p.matmul, {"is_index_in_bounds": "IS_INDEX_IN_BOUNDS",
                       "map_fragment_index": "MAP_IDX2CRD_PARTITIONER"}[method], (p.kind,))
        return types.boolean if method == "is_index_in_bounds" else types.UniTuple(types.int64, 2)
    if method in ("is_thread_active", "is_predicated"):
        _fn(p.matmul, method.upper(), (p.kind,))
        return types.boolean
    if method in ("make_accumulator_fragment", "make_empty_fragment", "get_results"):
        return tensor_type(p.layout)
    if method == "clear":
        _fn(p.matmul, "CLEAR", (p.kind,))
        return types.none
    if method == "make_partition_and_copy":
        src = _tensor_of(args[0], "make_partition_and_copy() argument")
        if src.layout.matrix != "c":
            raise TypingError("make_partition_and_copy() loads a tensor of C")
        _fn(p.matmul, "COPY", (src.layout.kind, p.kind))
        return tensor_type(p.layout)
    frag, dst = (_tensor_of(a, "partition_and_copy() argument") for a in args)
    if dst.layout.matrix != "c" or frag.layout.memory_space != "rmem":
        raise TypingError("partition_and_copy(fragment, dst) stores a register fragment into a tensor of C")
    _fn(p.matmul, "COPY", (frag.layout.kind, dst.layout.kind))
    return types.none


def _method_template(method):
    class _PMethod(AbstractTemplate):
        key = f"cumath.device.Partitioner.{method}"

        def generic(self, args, kws):
            if kws:
                raise TypingError(f"{method}() takes positional arguments only")
            return signature(_p_signature(self.this, method, args), *args, recvr=self.this)

    return _PMethod


_P_TEMPLATES = {m: _method_template(m) for m in _P_METHODS + _A_METHODS}


class _PartitionerAttributes(AttributeTemplate):
    def generic_resolve(self, typ, attr):
        allowed = _P_METHODS + (_A_METHODS if isinstance(typ, AccumulatorType) else ())
        if attr in allowed:
            return types.BoundFunction(_P_TEMPLATES[attr], typ)
        if attr in ("get_results", "make_partition_and_copy", "partition_and_copy", "clear"):
            raise TypingError(f"{attr}() needs an accumulator created inside the kernel (MM.suggest_accumulator())")
        return None


infer_getattr(type("_PAttrs", (_PartitionerAttributes,), {"key": PartitionerType}))
infer_getattr(type("_AAttrs", (_PartitionerAttributes,), {"key": AccumulatorType}))


def _int_temp(context, builder, value=None, ty=None):
    i32 = ir.IntType(32)
    ptr = cgutils.alloca_once(builder, i32)
    if value is not None:
        builder.store(context.cast(builder, value, ty, types.int32), ptr)
    return ptr


def _lower_p_method(method):
    def impl(context, builder, sig, args):
        ty, this = sig.args[0], args[0]
        p = ty.partitioner
        voidp = context.get_value_type(types.voidptr)
        if method in ("is_thread_active", "is_predicated"):
            sym, files = _fn(p.matmul, method.upper(), (p.kind,))
            out = _int_temp(context, builder)
            call_c(context, builder, sym, [builder.bitcast(out, voidp)], files)
            return builder.icmp_signed("!=", builder.load(out), ir.Constant(ir.IntType(32), 0))
        if method == "is_index_in_bounds":
            sym, files = _fn(p.matmul, "IS_INDEX_IN_BOUNDS", (p.kind,))
            idx, out = _int_temp(context, builder, args[1], sig.args[1]), _int_temp(context, builder)
            call_c(context, builder, sym, [builder.bitcast(idx, voidp), builder.bitcast(out, voidp)], files)
            return builder.icmp_signed("!=", builder.load(out), ir.Constant(ir.IntType(32), 0))
        if method == "map_fragment_index":
            sym, files = _fn(p.matmul, "MAP_IDX2CRD_PARTITIONER", (p.kind,))
            idx = _int_temp(context, builder, args[1], sig.args[1])
            i, j = _int_temp(context, builder), _int_temp(context, builder)
            call_c(context, builder, sym, [builder.bitcast(x, voidp) for x in (idx, i, j)], files)
            i64 = ir.IntType(64)
            return context.make_tuple(builder, sig.return_type,
                                      [builder.sext(builder.load(i), i64), builder.sext(builder.load(j), i64)])
        rmem = tensor_type(p.layout)
        if method in ("make_accumulator_fragment", "make_empty_fragment"):
            return _make_struct(context, builder, rmem, _alloca_fragment(context, builder, p.layout))
        if method == "get_results":
            return _make_struct(context, builder, rmem, cgutils.create_struct_proxy(ty)(context, builder, this).ptr)
        if method == "clear":
            sym, files = _fn(p.matmul, "CLEAR", (p.kind,))
            frag = _make_struct(context, builder, rmem, cgutils.create_struct_proxy(ty)(context, builder, this).ptr)
            call_c(context, builder, sym, [frag], files)
            return context.get_dummy_value()
        if method == "make_partition_and_copy":
            frag = _make_struct(context, builder, rmem, _alloca_fragment(context, builder, p.layout))
            sym, files = _fn(p.matmul, "COPY", (sig.args[1].layout.kind, p.kind))
            call_c(context, builder, sym, [args[1], frag], files)
            return frag
        sym, files = _fn(p.matmul, "COPY", (sig.args[1].layout.kind, sig.args[2].layout.kind))
        call_c(context, builder, sym, [args[1], args[2]], files)
        return context.get_dummy_value()

    return impl


for _m in _P_METHODS + _A_METHODS:
    for _ty in (PartitionerType, AccumulatorType):
        lower_builtin(_P_TEMPLATES[_m].key, _ty, types.VarArg(types.Any))(_lower_p_method(_m))
del _m, _ty

refresh_contexts()
