"""numba-cuda typing and lowering of the cuRAND device functions (imported when a kernel uses one).

A call ``random.normal4(states[i])`` is typed from the state's record type (its one field is named after the
generator, see ``_states.state_dtype``) and lowered to a call of the shim function
``cumath_curand_normal4_philox(state*, float* out)`` on a local array, whose values become the result (a
numba-cuda vector type such as ``float32x4`` for vector results).
"""

from __future__ import annotations

from .._numba_lowering import call_c, pointer_of, stub_function_type
from ._compile import active_files
from ._shim import FUNCTIONS, STATE_POSITION, symbol
from ._states import FIELD_PREFIX

from numba.cuda import types  # noqa: E402
from numba.cuda.core.errors import TypingError  # noqa: E402

__all__ = ["function_type", "generator_of"]

_C_TYPES = {"unsigned int": types.uint32, "unsigned long long": types.uint64, "float": types.float32,
            "double": types.float64}
_VECTOR_NAMES = {(types.uint32, 4): "uint32x4", (types.float32, 2): "float32x2", (types.float32, 4): "float32x4",
                 (types.float64, 2): "float64x2", (types.float64, 4): "float64x4"}
_TABLE = {(f.name, g): f for f in FUNCTIONS for g in f.generators}


def generator_of(ty) -> str | None:
    """The generator a state argument's numba type belongs to (a record of a States array), or None."""
    if isinstance(ty, types.Record) and len(ty.fields) == 1:
        name = next(iter(ty.fields))
        if isinstance(name, str) and name.startswith(FIELD_PREFIX):
            return name[len(FIELD_PREFIX):]
    return None


def _result_type(f):
    if f.out is None:
        return types.none
    scalar = _C_TYPES[f.out]
    if f.out_count == 1:
        return scalar
    from numba.cuda.vector_types import vector_types

    return vector_types[_VECTOR_NAMES[(scalar, f.out_count)]]


def _resolve(stub, args):
    name = stub.__name__
    if not args:
        raise TypingError(f"random.{name}() needs a state argument")
    pos = STATE_POSITION.get(name, 0)
    state_ty = args[pos]
    gen = generator_of(state_ty)
    if gen is None:
        raise TypingError(f"random.{name}(): the state argument must be an element of a random.States* array "
                          f"(e.g. states[i]), not {state_ty}")
    f = _TABLE.get((name, gen))
    if f is None:
        raise TypingError(f"random.{name}() is not available for {gen} states; it takes states of "
                          f"{', '.join(stub.generators)}")
    others = list(args[:-1]) if pos == -1 else list(args[1:])
    if len(others) != len(f.inputs):
        expected = ", ".join(n for n, _ in f.inputs)
        raise TypingError(f"random.{name}() for {gen} states takes {len(f.inputs)} argument(s) besides the state "
                          f"({expected}), {len(others)} given")
    for (pname, ctype), ty in zip(f.inputs, others):
        if ctype.endswith("*"):
            elem = _C_TYPES[ctype[:-1]]
            ok = isinstance(ty, (types.Array, types.CPointer)) and ty.dtype in (elem, types.uint8, types.void)
            if not (ok or ty == types.voidptr):
                raise TypingError(f"random.{name}(): {pname} must be an array (or pointer) of {elem}, not {ty}")
        elif not isinstance(ty, (types.Integer, types.Float, types.Boolean)):
            raise TypingError(f"random.{name}(): {pname} must be a number, not {ty}")
        elif ctype in ("unsigned int", "unsigned long long") and isinstance(ty, types.Float):
            raise TypingError(f"random.{name}(): {pname} must be an integer, not {ty}")
    return f, gen


def _lower(stub):
    def impl(context, builder, sig, args):
        from llvmlite import ir

        f, gen = _resolve(stub, sig.args)
        pos = STATE_POSITION.get(stub.__name__, 0)
        state_ty, state = sig.args[pos], args[pos]
        rest = list(zip(sig.args[:-1], args[:-1])) if pos == -1 else list(zip(sig.args[1:], args[1:]))
        values = [pointer_of(context, builder, state_ty, state)]
        for (pname, ctype), (ty, v) in zip(f.inputs, rest):
            if ctype.endswith("*"):
                values.append(pointer_of(context, builder, ty, v))
            else:
                values.append(context.cast(builder, v, ty, _C_TYPES[ctype]))
        out = None
        if f.out is not None:
            elem = context.get_value_type(_C_TYPES[f.out])
            from numba.cuda import cgutils

            out = cgutils.alloca_once(builder, elem, size=f.out_count)
            values.append(builder.bitcast(out, context.get_value_type(types.voidptr)))
        call_c(context, builder, symbol(f.name, gen), values, active_files())
        if f.out is None:
            return context.get_dummy_value()
        items = [builder.load(builder.gep(out, [ir.Constant(ir.IntType(32), i)])) for i in range(f.out_count)]
        if f.out_count == 1:
            return items[0]
        from numba.cuda import cgutils

        vec = cgutils.create_struct_proxy(sig.return_type)(context, builder)
        for attr, item in zip("xyzw", items):
            setattr(vec, attr, item)
        return vec._getvalue()

    return impl


def function_type(stub):
    return stub_function_type(stub, f"random.{stub.__name__}", lambda args: _result_type(_resolve(stub, args)[0]),
                              _lower(stub))
