"""The generic pieces of numba-cuda lowering the device APIs share: pointers to arguments, calls of ``extern "C"``
functions that link their files into the kernel, stub functions typed and lowered on first use, and the refresh
that makes registrations made during a compilation visible to it.

Imported only by the numba layer (``_numba_*`` modules), when numba types a device-API object; it imports nothing
of the host-side objects.
"""

from __future__ import annotations

from .._core.numba_compat import import_numba_cuda

cuda = import_numba_cuda(feature="cumath.device")

from numba.cuda import types  # noqa: E402
from numba.cuda.core.errors import TypingError  # noqa: E402
from numba.cuda.extending import lower_builtin  # noqa: E402

__all__ = ["pointer_of", "call_c", "stub_function_type", "refresh_contexts"]


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
    """Make the registrations of the numba layer visible to a compilation already under way (its modules are
    imported while numba types the first object, after the contexts loaded their registries)."""
    from numba.cuda.descriptor import cuda_target

    cuda_target.typing_context.refresh()
    cuda_target.target_context.refresh()
