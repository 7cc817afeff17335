"""numba-cuda typing and lowering of ``cumath.device.load`` / ``store`` (see ``_access``): the element's
address from the array's data pointer and strides (no wrap-around), then one PTX vector access (inline
assembly, which NVVM and nvJitLink's LTO keep as written)."""

from __future__ import annotations

from .._core.numba_compat import import_numba_cuda

import_numba_cuda(feature="cumath.device")

from llvmlite import ir  # noqa: E402
from numba.cuda import cgutils, types  # noqa: E402
from numba.cuda.core.errors import TypingError  # noqa: E402

from ._numba_lowering import stub_function_type  # noqa: E402

__all__ = ["access_type"]

# element type -> (PTX type of one part, number of parts, LLVM type of one part)
_PARTS = {types.complex64: ("f32", 2), types.complex128: ("f64", 2), types.float32: ("f32", 1),
          types.float64: ("f64", 1), types.int32: ("b32", 1), types.uint32: ("b32", 1), types.int64: ("b64", 1),
          types.uint64: ("b64", 1)}


def _check(name, args):
    want = 3 if name == "store" else 2
    if len(args) != want:
        raise TypingError(f"{name}() takes {want} arguments ({'array, index, value' if want == 3 else 'array, index'}),"
                          f" {len(args)} given")
    array, index = args[0], args[1]
    if not isinstance(array, types.Array):
        raise TypingError(f"{name}(): the first argument must be an array in global memory, not {array}")
    if array.dtype not in _PARTS:
        raise TypingError(f"{name}(): arrays of {array.dtype} are not supported; use complex64, complex128, "
                          f"float32, float64, int32, uint32, int64 or uint64")
    indices = list(index) if isinstance(index, types.BaseTuple) else [index]
    if len(indices) != array.ndim or not all(isinstance(i, types.Integer) for i in indices):
        raise TypingError(f"{name}(): the index must be {array.ndim} integer(s) for a {array.ndim}-D array, "
                          f"not {index}")
    if name == "store" and not isinstance(args[2], (types.Number, types.Boolean)):
        raise TypingError(f"{name}(): the value must be a number, not {args[2]}")
    return array.dtype if name == "load" else types.none


def _pointer(context, builder, aty, array, ity, index):
    ary = context.make_array(aty)(context, builder, value=array)
    if isinstance(ity, types.BaseTuple):
        values = [builder.extract_value(index, i) for i in range(len(ity))]
        itys = list(ity)
    else:
        values, itys = [index], [ity]
    idx = [context.cast(builder, v, t, types.intp) for v, t in zip(values, itys)]
    return cgutils.get_item_pointer(context, builder, aty, ary, idx, wraparound=False)


def _lower(name):
    def impl(context, builder, sig, args):
        aty = sig.args[0]
        ptx, parts = _PARTS[aty.dtype]
        part_ty = {"f32": ir.FloatType(), "f64": ir.DoubleType(), "b32": ir.IntType(32), "b64": ir.IntType(64)}[ptx]
        reg = {"f32": "f", "f64": "d", "b32": "r", "b64": "l"}[ptx]
        ptr = _pointer(context, builder, aty, args[0], sig.args[1], args[1])
        vec = ".v2" if parts == 2 else ""
        if name == "load":
            outs = ", ".join(f"${i}" for i in range(parts))
            text = f"ld.global{vec}.{ptx} {{{outs}}}, [${parts}];" if parts > 1 else f"ld.global.{ptx} $0, [$1];"
            ret = ir.LiteralStructType([part_ty] * parts) if parts > 1 else part_ty
            fnty = ir.FunctionType(ret, [ptr.type])
            value = builder.call(ir.InlineAsm(fnty, text, ",".join([f"={reg}"] * parts + ["l"])), [ptr])
            if parts == 1:
                return value
            z = cgutils.create_struct_proxy(aty.dtype)(context, builder)
            z.real, z.imag = builder.extract_value(value, 0), builder.extract_value(value, 1)
            return z._getvalue()
        value = context.cast(builder, args[2], sig.args[2], aty.dtype)
        if parts == 2:
            z = cgutils.create_struct_proxy(aty.dtype)(context, builder, value=value)
            items = [z.real, z.imag]
            text = f"st.global.v2.{ptx} [$0], {{$1, $2}};"
        else:
            items = [value]
            text = f"st.global.{ptx} [$0], $1;"
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type] + [part_ty] * parts)
        builder.call(ir.InlineAsm(fnty, text, ",".join(["l"] + [reg] * parts), side_effect=True), [ptr, *items])
        return context.get_dummy_value()

    return impl


def access_type(stub):
    return stub_function_type(stub, stub.__name__, lambda args: _check(stub.__name__, args), _lower(stub.__name__))
