"""cuBLASDx's tensor API for :class:`~cumath.device.Matmul` (the shape of ``nvmath.device``'s): layouts, opaque
tensors, register-fragment accumulators and the copy helpers, inside numba-cuda kernels.

On the host a :class:`Matmul` hands out plain descriptions: :class:`Layout` (``MM.get_layout_gmem_a()``,
``MM.suggest_layout_smem_a()``, ``MM.suggest_layout_rmem_c()``...: the tensor's memory space, logical size,
``cosize`` (elements of storage), alignment) and :class:`Partitioner` (``MM.suggest_partitioner()``: how the
block's threads own C's register fragment). Inside a kernel::

    a = make_tensor(a_global, MM.get_layout_gmem_a())        # global memory, leading dimension from the layout
    sa = make_tensor(smem_a, MM.suggest_layout_smem_a())     # shared memory (cosize elements)
    c = MM.suggest_partitioner().make_accumulator_fragment() # registers (cosize elements per thread)
    copy(a, sa); copy(b, sb); clear(c); copy_wait()
    MM.execute(sa, sb, c)                                    # c += A @ B (register C); or
    MM.execute(alpha, sa, sb, beta, sc)                      # C = alpha A @ B + beta C (shared C)
    copy_fragment(c, c_global_tensor)                        # registers <-> global memory
    axpby(alpha, c, beta, d)                                 # d = alpha c + beta d (fragments)

plus ``MM.suggest_accumulator()`` / ``MM.get_accumulator()`` inside kernels (a zeroed fragment with
``get_results()``, ``make_partition_and_copy(src)``, ``partition_and_copy(fragment, dst)``) and the partitioner's
``is_thread_active()``, ``is_predicated()``, ``is_index_in_bounds(i)``, ``map_fragment_index(i) -> (row, col)``.

A global-memory tensor takes its leading dimension from its layout (``get_layout_gmem_a(ld)``: a constant, the
matrix's leading extent by default), not from the array's strides: pass the tile's first element (``a[i0:]``,
a row of a batch...) with that spacing between its columns (column-major) or rows (row-major).

Each call lowers to a device function libmathdx generates from the Matmul's descriptor (API ``TENSORS``) and
the tensors' kinds. The functions kernels usually need (copies between each matrix's global, shared and
register tensors, clear, axpby, execute on matching shared/register families, the partitioner queries) are
generated together, once per Matmul (one NVRTC run, cached on disk like all device code); any other
combination is generated on its own when a kernel first uses it. Pipelines and cuBLASDx's opaque stateful
accumulators (``CUBLASDX_TENSOR_*ACCUMULATOR_C``, which only pipelined execution takes) are not offered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import threading
import time

from .._core.disk_cache import digest
from ._codegen import STORE, memory_cache, toolchain
from ._common import KernelOnlyFunction

if TYPE_CHECKING:
    from typing import Any

    import numpy as np

__all__ = ["Layout", "Partitioner", "Accumulator", "OpaqueTensor", "make_tensor", "copy", "copy_fragment", "clear",
           "axpby", "copy_wait", "TENSOR_KINDS", "tensor_traits", "tensor_function", "bundle_specs"]

logger = logging.getLogger(__name__)
_lock = threading.RLock()
_KEY_VERSION = 1

#: user-facing tensor kinds -> cublasdxTensorType member
TENSOR_KINDS = {
    "smem_a": "CUBLASDX_TENSOR_SMEM_A", "smem_b": "CUBLASDX_TENSOR_SMEM_B", "smem_c": "CUBLASDX_TENSOR_SMEM_C",
    "suggested_smem_a": "CUBLASDX_TENSOR_SUGGESTED_SMEM_A", "suggested_smem_b": "CUBLASDX_TENSOR_SUGGESTED_SMEM_B",
    "suggested_smem_c": "CUBLASDX_TENSOR_SUGGESTED_SMEM_C", "suggested_rmem_c": "CUBLASDX_TENSOR_SUGGESTED_RMEM_C",
    "rmem_c": "CUBLASDX_TENSOR_RMEM_C", "gmem_a": "CUBLASDX_TENSOR_GMEM_A", "gmem_b": "CUBLASDX_TENSOR_GMEM_B",
    "gmem_c": "CUBLASDX_TENSOR_GMEM_C",
}
_SPACES = {0: "rmem", 1: "smem", 2: "gmem", 3: "any"}


def _space(kind: str) -> str:
    return kind.split("_")[-2]


# ----------------------------------------------------------------------------------------------- layouts

class Layout:
    """A cuBLASDx tensor layout of one Matmul (plain data; inside kernels a compile-time constant).

    ``size``: logical elements; ``cosize``: elements of storage the tensor needs (0 for global memory, whose
    layout is the array's); ``alignment``: bytes; ``memory_space``: 'rmem', 'smem' or 'gmem';
    ``leading_dimension``: of a global-memory tensor (elements between columns, or rows when row-major).
    """

    def __init__(self, matmul: Any, kind: str, leading_dimension: Any = None) -> None:
        if kind not in TENSOR_KINDS:
            raise ValueError(f"unknown tensor kind {kind!r}; the kinds are {', '.join(TENSOR_KINDS)}")
        self.matmul = matmul
        self.kind = kind
        self.matrix = kind[-1]
        if _space(kind) != "gmem":
            if leading_dimension is not None:
                raise ValueError(f"leading_dimension applies to global-memory layouts, not {kind}")
            self._ld = None
        else:
            from ._common import positive_int

            need = matmul._min_ld()["abc".index(self.matrix)]
            self._ld = need if leading_dimension is None else positive_int(leading_dimension, "leading_dimension")
            if self._ld < need:
                raise ValueError(f"leading_dimension={self._ld} is less than {need}, the leading extent of "
                                 f"{self.matrix.upper()} ({matmul._arrangement_of(self.matrix)})")

    def _traits(self) -> dict:
        return self.matmul._tensor_traits()[self.kind]

    @property
    def memory_space(self) -> str:
        """Where the tensor lives, 'rmem' (registers), 'smem' (shared) or 'gmem' (global memory)."""
        return _space(self.kind)

    @property
    def leading_dimension(self) -> int | None:
        """Elements between columns (rows when row-major) of a global-memory tensor; None for the others."""
        return self._ld

    @property
    def size(self) -> int:
        """Logical elements of the tensor."""
        return self._traits()["logical_size"]

    @property
    def alignment(self) -> int:
        """Alignment of the storage, bytes."""
        return self._traits()["alignment_bytes"]

    @property
    def opaque_name(self) -> str:
        """cuBLASDx's name of the tensor's type (as the generated device code spells it)."""
        return self._traits()["opaque_name"]

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of the tensor's elements (its matrix's value type)."""
        import numpy as np

        return np.dtype(self.matmul._value_types()["abc".index(self.matrix)])

    @property
    def cosize(self) -> int:
        """Elements of storage (of ``dtype``) the tensor needs."""
        return self._traits()["storage_bytes"] // self.dtype.itemsize

    @property
    def key(self) -> tuple[str, str, int | None]:
        """What identifies the layout (the Matmul's code key, the tensor kind, the leading dimension)."""
        return (self.matmul._numba_key, self.kind, self._ld)

    def __eq__(self, other):
        return isinstance(other, Layout) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        ld = f", leading_dimension={self._ld}" if self._ld is not None else ""
        return f"Layout({self.kind}{ld}, {self.matmul!r})"

    @property
    def _numba_type_(self):
        from ._numba_tensors import layout_type

        return layout_type(self)


class Partitioner:
    """How C's register fragment is spread over the block's threads (``MM.suggest_partitioner()`` for the
    suggested register layout, ``MM.get_partitioner()`` for the plain one). In kernels: ``is_thread_active()``,
    ``is_predicated()``, ``is_index_in_bounds(i)``, ``map_fragment_index(i) -> (row, col)`` and
    ``make_accumulator_fragment()`` (an uninitialised register fragment)."""

    owns_fragment = False  # created inside a kernel, an Accumulator owns a register fragment

    def __init__(self, matmul: Any, kind: str) -> None:
        if kind not in ("rmem_c", "suggested_rmem_c"):
            raise ValueError(f"a partitioner describes a register layout of C, not {kind}")
        self.matmul = matmul
        self.kind = kind

    @property
    def layout(self) -> Layout:
        """The :class:`Layout` of the register fragment this partitioner describes."""
        return Layout(self.matmul, self.kind)

    def __repr__(self):
        return f"{type(self).__name__}({self.kind}, {self.matmul!r})"

    @property
    def _numba_type_(self):
        from ._numba_tensors import partitioner_type

        return partitioner_type(self)


class Accumulator(Partitioner):
    """A partitioner that, created inside a kernel (``MM.suggest_accumulator()``), also owns a zeroed register
    fragment: ``MM.execute(sa, sb, acc)`` accumulates into it; ``get_results()`` returns it as a tensor;
    ``make_partition_and_copy(src)`` loads a new fragment from a C tensor; ``partition_and_copy(frag, dst)``
    stores one. The host object only describes it (its fragment exists in kernels)."""

    owns_fragment = True


class OpaqueTensor:
    """A cuBLASDx tensor inside a kernel (a pointer, plus the leading dimension in global memory); made with
    :func:`make_tensor`. Not constructible on the host."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("OpaqueTensor is made inside numba-cuda kernels with make_tensor(array, layout)")


# ----------------------------------------------------------------------------------- device-only helpers

class _DeviceOnly(KernelOnlyFunction):
    hint = " (with tensors made by make_tensor)"

    def _typing(self):
        from ._numba_tensors import helper_type

        return helper_type(self)


make_tensor = _DeviceOnly("make_tensor", "make_tensor(array, layout): an opaque tensor over the array's data.")
copy = _DeviceOnly("copy", "copy(src, dst): copy between two tensors of the same matrix (all threads of the "
                           "block take part; follow with copy_wait() before using shared-memory results).")
copy_fragment = _DeviceOnly("copy_fragment", "copy_fragment(src, dst): copy between a register fragment and a "
                                             "global- or shared-memory tensor of C.")
clear = _DeviceOnly("clear", "clear(fragment): zero a register fragment.")
axpby = _DeviceOnly("axpby", "axpby(alpha, x, beta, y): y = alpha * x + beta * y on register fragments.")
copy_wait = _DeviceOnly("copy_wait", "copy_wait(): wait for the block's outstanding copies (and synchronise).")


# ------------------------------------------------------------------------------------------ code generation

def _cc_key(matmul) -> tuple:
    return tuple(matmul.sm)


def _create_descriptor(ops):
    from .._bindings import mathdx

    from ._codegen import _value

    d = mathdx.cublasdxCreateDescriptor()
    try:
        for op_name, value in ops:
            op = getattr(mathdx, op_name)
            if isinstance(value, tuple):
                mathdx.cublasdxSetOperatorInt64s(d, op, [_value(v) for v in value])
            else:
                mathdx.cublasdxSetOperatorInt64(d, op, _value(value))
    except BaseException:
        mathdx.cublasdxDestroyDescriptor(d)
        raise
    return d


def _make_tensors(d, kinds, gmem_alignment):
    from .._bindings import mathdx

    out = {}
    for kind in kinds:
        t = mathdx.cublasdxCreateTensor(d, getattr(mathdx, TENSOR_KINDS[kind]))
        out[kind] = t
        if gmem_alignment is not None and _space(kind) == "gmem":
            mathdx.cublasdxSetTensorOptionInt64(t, mathdx.CUBLASDX_TENSOR_OPTION_ALIGNMENT_BYTES,
                                                gmem_alignment["abc".index(kind[-1])])
    mathdx.cublasdxFinalizeTensors(list(out.values()))
    return out


def tensor_traits(matmul) -> dict:
    """kind -> {storage_bytes, alignment_bytes, logical_size, memory_space, opaque_name} for every tensor kind of
    ``matmul`` (libmathdx asked once; cached in memory and on disk)."""
    ops, align = matmul._tensor_operators(), matmul._gmem_alignment
    key = digest("cumath.device.tensors", _KEY_VERSION, "traits", ops, align, _cc_key(matmul), toolchain())

    def make():
        from .._bindings import mathdx

        with _lock:
            d = _create_descriptor(ops)
            try:
                tensors = _make_tensors(d, tuple(TENSOR_KINDS), align)
                out = {}
                for kind, t in tensors.items():
                    g = mathdx.cublasdxGetTensorTraitInt64
                    out[kind] = {"storage_bytes": g(t, mathdx.CUBLASDX_TENSOR_TRAIT_STORAGE_BYTES),
                                 "alignment_bytes": g(t, mathdx.CUBLASDX_TENSOR_TRAIT_ALIGNMENT_BYTES),
                                 "logical_size": g(t, mathdx.CUBLASDX_TENSOR_TRAIT_LOGICAL_SIZE),
                                 "memory_space": _SPACES.get(g(t, mathdx.CUBLASDX_TENSOR_TRAIT_MEMORY_SPACE)),
                                 "opaque_name": mathdx.cublasdxGetTensorTraitStr(
                                     t, mathdx.CUBLASDX_TENSOR_TRAIT_OPAQUE_NAME)}
                    mathdx.cublasdxDestroyTensor(t)
            finally:
                mathdx.cublasdxDestroyDescriptor(d)
        return b"", {"traits": out}

    return STORE.get_or_make(key, make).meta["traits"]


def bundle_specs() -> tuple:
    """The device functions generated together for each Matmul: (function, tensor kinds) pairs."""
    specs = []
    for x in "abc":
        for s in ("smem_", "suggested_smem_"):
            specs += [("COPY", ("gmem_" + x, s + x)), ("COPY", (s + x, "gmem_" + x))]
    for r, s in (("rmem_c", "smem_c"), ("suggested_rmem_c", "suggested_smem_c")):
        specs += [("COPY", ("gmem_c", r)), ("COPY", (r, "gmem_c")), ("COPY", (s, r)), ("COPY", (r, s)),
                  ("CLEAR", (r,)), ("AXPBY", (r, r)), ("IS_THREAD_ACTIVE", (r,)), ("IS_PREDICATED", (r,)),
                  ("IS_INDEX_IN_BOUNDS", (r,)), ("MAP_IDX2CRD_PARTITIONER", (r,))]
    specs += [("EXECUTE", ("smem_a", "smem_b", "rmem_c")),
              ("EXECUTE", ("suggested_smem_a", "suggested_smem_b", "suggested_rmem_c")),
              ("EXECUTE", ("smem_a", "smem_b", "smem_c")),
              ("EXECUTE", ("suggested_smem_a", "suggested_smem_b", "suggested_smem_c")),
              ("COPY_WAIT", ())]
    return tuple(specs)


_BUNDLE = bundle_specs()
_codes: dict[str, tuple] = memory_cache()


def _generate(ops, specs, align, cc, prefix) -> tuple[list[bytes], list[str]]:
    from .._bindings import mathdx

    d = _create_descriptor(ops)
    fns, code, tensors = [], None, {}
    try:
        tensors = _make_tensors(d, sorted({k for _, kinds in specs for k in kinds}), align)
        symbols = []
        for i, (fn, kinds) in enumerate(specs):
            f = mathdx.cublasdxCreateDeviceFunction(d, getattr(mathdx, "CUBLASDX_DEVICE_FUNCTION_" + fn),
                                                    [tensors[k] for k in kinds])
            fns.append(f)
            symbols.append(f"{prefix}_{i}")
            mathdx.cublasdxSetDeviceFunctionOptionStr(f, mathdx.CUBLASDX_DEVICE_FUNCTION_OPTION_SYMBOL_NAME,
                                                      symbols[-1])
        code = mathdx.commondxCreateCode()
        mathdx.commondxSetCodeOptionInt64(code, mathdx.COMMONDX_OPTION_TARGET_SM, cc.sm)
        mathdx.cublasdxFinalizeDeviceFunctions(code, fns)
        return mathdx.commondxGetCodeLTOIRs(code), symbols
    finally:
        for f in fns:
            mathdx.cublasdxDestroyDeviceFunction(f)
        for t in tensors.values():
            mathdx.cublasdxDestroyTensor(t)
        if code is not None:
            mathdx.commondxDestroyCode(code)
        mathdx.cublasdxDestroyDescriptor(d)


def _code(matmul, specs) -> tuple[dict, tuple]:
    """({spec: symbol}, link files) of device functions ``specs`` of ``matmul``, generated once and cached."""
    ops, align = matmul._tensor_operators(), matmul._gmem_alignment
    key = digest("cumath.device.tensors", _KEY_VERSION, "code", ops, align, specs, _cc_key(matmul), toolchain())
    hit = _codes.get(key)
    if hit is not None:
        return hit

    def make():
        with _lock:
            t0 = time.perf_counter()
            blobs, symbols = _generate(ops, specs, align, matmul.sm, "cumath_blas_" + key[:20])
            logger.info("generated %d cuBLASDx tensor functions for %r in %.2f s (%d bytes)", len(specs), matmul,
                        time.perf_counter() - t0, sum(len(b) for b in blobs))
        return b"".join(blobs), {"sizes": [len(b) for b in blobs], "symbols": symbols}

    entry = STORE.get_or_make(key, make)
    blobs, offset = [], 0
    for size in entry.meta["sizes"]:
        blobs.append(entry.data[offset:offset + size])
        offset += size
    files = tuple(STORE.export(f"{key[:40]}-{i}.ltoir", b) for i, b in enumerate(blobs))
    out = ({spec: sym for spec, sym in zip(specs, entry.meta["symbols"])}, files)
    _codes[key] = out
    return out


def tensor_function(matmul, function: str, kinds: tuple) -> tuple[str, tuple]:
    """(symbol, link files) of device function ``function`` (a cublasdxDeviceFunctionType suffix: 'COPY',
    'EXECUTE'...) on tensors of ``kinds``: from the Matmul's bundle when it is there, else generated alone."""
    spec = (function, tuple(kinds))
    table, files = _code(matmul, _BUNDLE)
    if spec in table:
        return table[spec], files
    table, files = _code(matmul, (spec,))
    return table[spec], files
