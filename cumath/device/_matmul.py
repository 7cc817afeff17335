"""cuBLASDx block GEMMs inside numba-cuda kernels: :class:`Matmul` and the function form :func:`matmul`.

The in-kernel call computes ``C = alpha * op(A) @ op(B) + beta * C`` on tiles in shared memory, all threads of
the block taking part (cuBLASDx's shared-memory pointer API; the leading dimensions are fixed when the code is
generated, or passed at run time with ``execute_api='dynamic_leading_dimensions'``). The same object also
offers cuBLASDx's tensor API (layouts, register-fragment accumulators, copies: see ``_tensors``): ``execute``
called with tensors made by ``make_tensor`` uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.disk_cache import digest
from ._codegen import Descriptor, Generator
from ._common import (
    VALUE_TYPES,
    choice,
    CodeType,
    DeviceFunction,
    Dim3,
    function_form_sm,
    int_triple,
    is_suggested,
    LeadingDimension,
    MethodSpec,
    normalize_cc,
    normalize_precision,
    np_dtype,
    Param,
    precision_enum,
    TransposeMode,
    value_type_enum,
)

if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from ._common import ComputeCapability

__all__ = ["Matmul", "matmul"]

_DATA_TYPES = {"real": "CUBLASDX_TYPE_REAL", "complex": "CUBLASDX_TYPE_COMPLEX"}
_ARRANGEMENTS = {"col_major": "CUBLASDX_ARRANGEMENT_COL_MAJOR", "row_major": "CUBLASDX_ARRANGEMENT_ROW_MAJOR"}
_TRANSPOSE = {"non_transposed": "CUBLASDX_TRANSPOSE_MODE_NON_TRANSPOSED",
              "transposed": "CUBLASDX_TRANSPOSE_MODE_TRANSPOSED",
              "conj_transposed": "CUBLASDX_TRANSPOSE_MODE_CONJ_TRANSPOSED"}
_APIS = {"static_leading_dimensions": "CUBLASDX_API_SMEM", "dynamic_leading_dimensions": "CUBLASDX_API_SMEM_DYNAMIC_LD",
         "tensors": "CUBLASDX_API_SMEM"}  # 'tensors': the pointer API stays available; tensor calls use their own
_TENSOR_TYPES = ("suggested_smem_a", "suggested_smem_b", "suggested_smem_c", "smem_a", "smem_b", "smem_c",
                 "suggested_rmem_c", "rmem_c")
_PRECISIONS = ("float16", "float32", "float64")


class Matmul(DeviceFunction):
    """A cuBLASDx GEMM for use inside numba-cuda kernels (the shape of ``nvmath.device.Matmul``).

    Args:
        size: ``(m, n, k)``: C is m x n, op(A) m x k, op(B) k x n.
        precision: ``numpy.float16``, ``numpy.float32`` or ``numpy.float64``, or a 3-sequence for A, B and C.
        data_type: ``'real'`` or ``'complex'``.
        sm: target compute capability; default: the current GPU's.
        block_size: threads of a 1-D block (or ``'suggested'``); exclusive with ``block_dim``.
        block_dim: a ``Dim3``/3-sequence of threads per block (or ``'suggested'``).
        leading_dimension: ``(lda, ldb, ldc)`` of the shared-memory tiles, or ``'suggested'`` (padded to avoid
            bank conflicts); default: the tiles' leading extents.
        transpose_mode: ``(a_mode, b_mode)`` from 'non_transposed', 'transposed', 'conj_transposed' (A and B
            are stored column-major as ``a_dim`` / ``b_dim``); exclusive with ``arrangement``.
        arrangement: ``(a, b, c)`` from 'col_major' and 'row_major'; default: all column-major.
        alignment: ``(a, b, c)`` alignments of the tiles in bytes.
        static_block_dim: promise that the kernel is launched with exactly ``block_dim``.
        execution: ``'Block'`` (the only one cuBLASDx offers).
        execute_api: ``'static_leading_dimensions'`` (default) or ``'dynamic_leading_dimensions'`` (the
            in-kernel call then takes ``lda``, ``ldb``, ``ldc`` after each tile), or ``'tensors'`` (a hint: the
            tensor API is available whatever this says).
        global_memory_alignment: ``(a, b, c)`` alignments in bytes of the global-memory tensors (tensor API).

    Inside a kernel (tiles in shared memory, ``a_size`` elements for A and so on)::

        MM(alpha, smem_a, smem_b, beta, smem_c)       # or MM.execute(...)

    or with cuBLASDx tensors (``get_layout_gmem_a()``, ``suggest_layout_smem_a()``, ``suggest_partitioner()``,
    ``suggest_accumulator()``..., callable on the host and inside kernels; see :mod:`cumath.device._tensors`)::

        MM.execute(smem_a_tensor, smem_b_tensor, c_fragment)           # c_fragment += A @ B
    """

    def __init__(self, size: Any, precision: Any, data_type: str, *, sm: Any = None, block_size: Any = None,
                 block_dim: Any = None, leading_dimension: Any = None, transpose_mode: Any = None,
                 arrangement: Any = None, alignment: Any = None, function: Any = "MM", static_block_dim: Any = False,
                 execution: str = "Block", execute_api: Any = None, global_memory_alignment: Any = None,
                 tensor_types: Any = None) -> None:
        self._size = int_triple(size, "size")
        if not isinstance(size, (tuple, list)) or len(size) != 3:
            raise ValueError(f"size={size!r} must be a sequence (m, n, k)")
        if isinstance(precision, (tuple, list)):
            if len(precision) != 3:
                raise ValueError(f"precision={precision!r} must be one dtype or three (for A, B and C)")
            self._precision = tuple(normalize_precision(p, allowed=_PRECISIONS) for p in precision)
        else:
            self._precision = (normalize_precision(precision, allowed=_PRECISIONS),) * 3
        self._data_type = choice(data_type, tuple(_DATA_TYPES), "data_type")
        if self._data_type == "complex" and "float16" in self._precision:
            raise ValueError("complex half-precision GEMMs are not offered by cumath.device (no numba type for "
                             "complex32); use float32 or float64")
        if choice(function, ("MM",), "function", case=str.upper) != "MM":
            raise ValueError(f"function={function!r}")
        self._execution = choice(execution, ("Block",), "execution")
        if block_size is not None and block_dim is not None:
            raise ValueError("pass block_size or block_dim, not both")
        if block_size is not None and not is_suggested(block_size):
            self._block_dim = int_triple(block_size, "block_size")
            if isinstance(block_size, (tuple, list)):
                raise TypeError("block_size must be an integer (use block_dim for a 2-D or 3-D block)")
        elif block_dim is not None and not is_suggested(block_dim):
            self._block_dim = int_triple(block_dim, "block_dim")
        else:
            self._block_dim = None
        if transpose_mode is not None and arrangement is not None:
            raise ValueError("pass transpose_mode or arrangement, not both (transpose_mode is cuBLASDx's older "
                             "spelling)")
        self._transpose_mode = None
        self._arrangement = None
        if transpose_mode is not None:
            if isinstance(transpose_mode, str) or len(transpose_mode) != 2:
                raise ValueError(f"transpose_mode={transpose_mode!r} must be a pair (a_mode, b_mode)")
            self._transpose_mode = TransposeMode(*(choice(t, tuple(_TRANSPOSE), "transpose_mode")
                                                   for t in transpose_mode))
        else:
            arr = arrangement if arrangement is not None else ("col_major",) * 3
            if isinstance(arr, str) or len(arr) != 3:
                raise ValueError(f"arrangement={arrangement!r} must be a triple (a, b, c)")
            self._arrangement = tuple(choice(a, tuple(_ARRANGEMENTS), "arrangement") for a in arr)
        if leading_dimension is None or is_suggested(leading_dimension):
            self._ld = None if leading_dimension is None else "suggested"
        else:
            self._ld = LeadingDimension(*int_triple(leading_dimension, "leading_dimension"))
            if len(tuple(leading_dimension)) != 3:
                raise ValueError(f"leading_dimension={leading_dimension!r} must be a triple (lda, ldb, ldc)")
            for name, ld, need in zip("abc", self._ld, self._min_ld()):
                if ld < need:
                    raise ValueError(f"leading_dimension: ld{name}={ld} is less than the tile's leading extent {need}")
        self._alignment = None if alignment is None else int_triple(alignment, "alignment")
        if isinstance(static_block_dim, str) or not isinstance(static_block_dim, (bool, int)):
            raise TypeError("static_block_dim must be True or False")
        self._static_block_dim = bool(static_block_dim)
        api = "static_leading_dimensions" if execute_api is None else execute_api
        self._execute_api = choice(api, tuple(_APIS), "execute_api")
        self._gmem_alignment = None if global_memory_alignment is None else int_triple(
            global_memory_alignment, "global_memory_alignment")
        if tensor_types is None:
            self._tensor_types = None
        elif isinstance(tensor_types, str) or len(tensor_types) != 3:
            raise ValueError(f"tensor_types={tensor_types!r} must be a triple (a, b, c)")
        else:
            self._tensor_types = tuple(choice(t, _TENSOR_TYPES, "tensor_types") for t in tensor_types)
            for t, m in zip(self._tensor_types, "abc"):
                if t[-1] != m:
                    raise ValueError(f"tensor_types: {t!r} is not a tensor of {m.upper()}")
        self._sm = normalize_cc(sm)
        self._gen = None
        self._ttraits = None

    # --------------------------------------------------------------------------------------- arithmetic
    def _dims(self):
        """Stored (rows, cols) of A, B, C and whether each is stored column-major."""
        m, n, k = self._size
        if self._transpose_mode is not None:
            a = (m, k) if self._transpose_mode.a == "non_transposed" else (k, m)
            b = (k, n) if self._transpose_mode.b == "non_transposed" else (n, k)
            return (a, b, (m, n)), (True, True, True)
        return ((m, k), (k, n), (m, n)), tuple(a == "col_major" for a in self._arrangement)

    def _min_ld(self):
        dims, col = self._dims()
        return tuple(r if c else cl for (r, cl), c in zip(dims, col))

    def _arrangement_of(self, matrix: str) -> str:
        return "col_major" if self._dims()[1]["abc".index(matrix)] else "row_major"

    # ---------------------------------------------------------------------------------------- operators
    def _operators(self, ld) -> tuple:
        ops = [("CUBLASDX_OPERATOR_FUNCTION", "CUBLASDX_FUNCTION_MM"), ("CUBLASDX_OPERATOR_SIZE", self._size),
               ("CUBLASDX_OPERATOR_TYPE", _DATA_TYPES[self._data_type]),
               ("CUBLASDX_OPERATOR_PRECISION", tuple(precision_enum(p) for p in self._precision)),
               ("CUBLASDX_OPERATOR_SM", self._sm.sm), ("CUBLASDX_OPERATOR_EXECUTION", "COMMONDX_EXECUTION_BLOCK"),
               ("CUBLASDX_OPERATOR_API", _APIS[self._execute_api])]
        if self._block_dim is not None:
            ops.append(("CUBLASDX_OPERATOR_BLOCK_DIM", self._block_dim))
        if self._transpose_mode is not None:
            ops.append(("CUBLASDX_OPERATOR_TRANSPOSE_MODE", tuple(_TRANSPOSE[t] for t in self._transpose_mode)))
        else:
            ops.append(("CUBLASDX_OPERATOR_ARRANGEMENT", tuple(_ARRANGEMENTS[a] for a in self._arrangement)))
        if ld is not None:
            ops.append(("CUBLASDX_OPERATOR_LEADING_DIMENSION", tuple(ld)))
        if self._alignment is not None:
            ops.append(("CUBLASDX_OPERATOR_ALIGNMENT", self._alignment))
        if self._static_block_dim:
            ops.append(("CUBLASDX_OPERATOR_STATIC_BLOCK_DIM", "CUBLASDX_STATIC_BLOCK_DIM_ENABLED"))
        return tuple(ops)

    @staticmethod
    def _descriptor(ops) -> Descriptor:
        return Descriptor("cublasdx", ops, "cumath_gemm_" + digest("cumath.device.Matmul", ops)[:24])

    def _resolved_ld(self):
        ld = self._ld
        if ld == "suggested":
            probe = Generator([self._descriptor(self._operators(None))], self._sm)
            ld = tuple(probe.traits()["suggested_leading_dimension"])
        return ld

    @property
    def _generator(self) -> Generator:
        if self._gen is None:
            self._gen = Generator([self._descriptor(self._operators(self._resolved_ld()))], self._sm)
        return self._gen

    def _tensor_operators(self) -> tuple:
        """The operators of the tensor-API descriptor (the same GEMM, API ``TENSORS``)."""
        return tuple((op, "CUBLASDX_API_TENSORS" if op == "CUBLASDX_OPERATOR_API" else v)
                     for op, v in self._generator.descriptors[0].operators)

    def _tensor_traits(self) -> dict:
        if self._ttraits is None:
            from ._tensors import tensor_traits

            self._ttraits = tensor_traits(self)
        return self._ttraits

    def _tensor_function(self, function: str, kinds: tuple) -> tuple[str, tuple]:
        """(symbol, link files) of the tensor-API device function ``function`` on tensors of ``kinds``."""
        from ._tensors import tensor_function

        return tensor_function(self, function, kinds)

    @property
    def _numba_key(self) -> str:
        # the tensor API's code depends on the global-memory alignment, which is not one of the descriptor's
        # operators: two Matmuls that differ only there are two numba types
        key = "+".join(self._generator.symbols())
        return key if self._gmem_alignment is None else key + "_ga%d_%d_%d" % self._gmem_alignment

    # -------------------------------------------------------------------------------------- description
    @property
    def size(self) -> tuple[int, int, int]:
        """(m, n, k), where C is m x n, op(A) m x k, op(B) k x n."""
        return self._size

    @property
    def m(self) -> int:
        """Rows of C and of op(A)."""
        return self._size[0]

    @property
    def n(self) -> int:
        """Columns of C and of op(B)."""
        return self._size[1]

    @property
    def k(self) -> int:
        """The contracted extent (columns of op(A), rows of op(B))."""
        return self._size[2]

    @property
    def precision(self) -> str | tuple[str, str, str]:
        """The computation precision ('float16', 'float32', 'float64'); a triple for A, B and C when they differ."""
        return self._precision if len(set(self._precision)) > 1 else self._precision[0]

    @property
    def data_type(self) -> str:
        """'real' or 'complex'."""
        return self._data_type

    @property
    def execution(self) -> str:
        """'Block' (the only execution cuBLASDx offers)."""
        return self._execution

    @property
    def execute_api(self) -> str:
        """'static_leading_dimensions', 'dynamic_leading_dimensions' or 'tensors'."""
        return self._execute_api

    @property
    def transpose_mode(self) -> TransposeMode | None:
        """(a_mode, b_mode) when given (cuBLASDx's older spelling), else None."""
        return self._transpose_mode

    @property
    def arrangement(self) -> tuple[str, str, str] | None:
        """'col_major' or 'row_major' of A, B and C (None when transpose_mode was given)."""
        return self._arrangement

    @property
    def sm(self) -> ComputeCapability:
        """The target compute capability."""
        return self._sm

    @property
    def static_block_dim(self) -> bool:
        """Whether the kernel promises to launch with exactly block_dim."""
        return self._static_block_dim

    @property
    def code_type(self) -> CodeType:
        """The kind of code generated (LTO IR) and the compute capability it is for."""
        return CodeType("lto", self._sm)

    @property
    def a_dim(self) -> tuple[int, int]:
        """(rows, cols) of A as stored."""
        return self._dims()[0][0]

    @property
    def b_dim(self) -> tuple[int, int]:
        """(rows, cols) of B as stored."""
        return self._dims()[0][1]

    @property
    def c_dim(self) -> tuple[int, int]:
        """(rows, cols) of C."""
        return self._dims()[0][2]

    # -------------------------------------------------------------------------------------------- traits
    def _value_types(self):
        complex_ = self._data_type == "complex"
        expected = [VALUE_TYPES[value_type_enum(p, complex_)] for p in self._precision]
        vt = self._trait("value_type")
        return tuple(VALUE_TYPES.get(v, e) for v, e in zip(vt, expected)) if vt else tuple(expected)

    @property
    def value_type(self) -> np.dtype[Any]:
        """NumPy dtype of the tiles when A, B and C share it (else see a/b/c_value_type)."""
        a, b, c = self._value_types()
        if not a == b == c:
            raise AttributeError("A, B and C have different value types: read a_value_type, b_value_type and "
                                 "c_value_type")
        return np_dtype(c)

    @property
    def a_value_type(self) -> np.dtype[Any]:
        """NumPy dtype of A's elements."""
        return np_dtype(self._value_types()[0])

    @property
    def b_value_type(self) -> np.dtype[Any]:
        """NumPy dtype of B's elements."""
        return np_dtype(self._value_types()[1])

    @property
    def c_value_type(self) -> np.dtype[Any]:
        """NumPy dtype of C's elements."""
        return np_dtype(self._value_types()[2])

    @property
    def leading_dimension(self) -> LeadingDimension:
        """(lda, ldb, ldc) of the shared-memory tiles, elements."""
        ld = self._trait("leading_dimension")
        return LeadingDimension(*ld) if ld else LeadingDimension(*self._min_ld())

    @property
    def block_dim(self) -> Dim3:
        """Threads per block to launch with."""
        return Dim3(*self._trait("block_dim"))

    @property
    def block_size(self) -> int:
        """Threads per block (the product of block_dim)."""
        bd = self.block_dim
        return bd.x * bd.y * bd.z

    @property
    def max_threads_per_block(self) -> int:
        """The most threads a block of this GEMM may have."""
        return self._trait("max_threads_per_block")

    @property
    def alignment(self) -> tuple[int, int, int]:
        """(a, b, c) alignments of the shared-memory tiles, bytes."""
        return tuple(self._trait("alignment"))

    @property
    def suggested_leading_dimension(self) -> LeadingDimension:
        """cuBLASDx's suggested (lda, ldb, ldc) (padded against shared-memory bank conflicts)."""
        return LeadingDimension(*self._trait("suggested_leading_dimension"))

    @property
    def suggested_block_dim(self) -> Dim3:
        """cuBLASDx's suggested threads per block."""
        return Dim3(*self._trait("suggested_block_dim"))

    def _tile_sizes(self):
        dims, col = self._dims()
        ld = self.leading_dimension
        return tuple(l * (cl if c else r) for (r, cl), c, l in zip(dims, col, ld))

    @property
    def a_size(self) -> int:
        """Elements of the shared-memory tile of A."""
        return self._tile_sizes()[0]

    @property
    def b_size(self) -> int:
        """Elements of the shared-memory tile of B."""
        return self._tile_sizes()[1]

    @property
    def c_size(self) -> int:
        """Elements of the shared-memory tile of C."""
        return self._tile_sizes()[2]

    def get_shared_storage_size(self, a_layout: Any = None, b_layout: Any = None, c_layout: Any = None) -> int:
        """Bytes of shared memory holding the A, B and C tiles one after the other, each aligned: the
        pointer API's tiles, or the given shared-memory layouts (tensor API; give all three or see
        :meth:`get_shared_storage_size_ab`)."""
        import numpy as np

        if a_layout is None and b_layout is None and c_layout is None:
            parts = [(size, np.dtype(vt).itemsize, align)
                     for size, vt, align in zip(self._tile_sizes(), self._value_types(), self.alignment)]
        else:
            parts = [(lay.cosize, lay.dtype.itemsize, lay.alignment) for lay in self._smem_layouts(
                ("a", a_layout), ("b", b_layout), ("c", c_layout))]
        total = 0
        for size, itemsize, align in parts:
            total = -(-total // align) * align + size * itemsize
        return total

    def get_shared_storage_size_ab(self, a_layout: Any, b_layout: Any) -> int:
        """Bytes of shared memory holding A and B in the given shared-memory layouts (C in registers)."""
        total = 0
        for lay in self._smem_layouts(("a", a_layout), ("b", b_layout)):
            total = -(-total // lay.alignment) * lay.alignment + lay.cosize * lay.dtype.itemsize
        return total

    def _smem_layouts(self, *pairs):
        from ._tensors import Layout

        out = []
        for m, lay in pairs:
            if not isinstance(lay, Layout) or lay.memory_space != "smem" or lay.matrix != m:
                raise ValueError(f"{m}_layout must be a shared-memory layout of {m.upper()} (from "
                                 f"get_layout_smem_{m}() or suggest_layout_smem_{m}()), not {lay!r}")
            out.append(lay)
        return out

    # --------------------------------------------------------------------------------------- tensor API
    _NUMBA_FACTORIES = ("get_layout_gmem_a", "get_layout_gmem_b", "get_layout_gmem_c", "get_layout_smem_a",
                        "get_layout_smem_b", "get_layout_smem_c", "suggest_layout_smem_a", "suggest_layout_smem_b",
                        "suggest_layout_smem_c", "get_layout_rmem_c", "suggest_layout_rmem_c",
                        "suggest_partitioner", "get_partitioner", "suggest_accumulator", "get_accumulator")

    def _layout(self, kind, leading_dimension=None):
        from ._tensors import Layout

        return Layout(self, kind, leading_dimension)

    def get_layout_gmem_a(self, leading_dimension: Any = None) -> Any:
        """Layout of A in global memory (leading dimension: A's leading extent unless given)."""
        return self._layout("gmem_a", leading_dimension)

    def get_layout_gmem_b(self, leading_dimension: Any = None) -> Any:
        return self._layout("gmem_b", leading_dimension)

    def get_layout_gmem_c(self, leading_dimension: Any = None) -> Any:
        return self._layout("gmem_c", leading_dimension)

    def get_layout_smem_a(self) -> Any:
        """Layout of A in shared memory: plain row/column-major with the Matmul's leading dimension."""
        return self._layout("smem_a")

    def get_layout_smem_b(self) -> Any:
        return self._layout("smem_b")

    def get_layout_smem_c(self) -> Any:
        return self._layout("smem_c")

    def suggest_layout_smem_a(self) -> Any:
        """Layout of A in shared memory that cuBLASDx suggests (possibly swizzled or padded)."""
        return self._layout("suggested_smem_a")

    def suggest_layout_smem_b(self) -> Any:
        return self._layout("suggested_smem_b")

    def suggest_layout_smem_c(self) -> Any:
        return self._layout("suggested_smem_c")

    def get_layout_rmem_c(self) -> Any:
        """Layout of C's register fragment (per thread) matching the plain shared-memory layouts."""
        return self._layout("rmem_c")

    def suggest_layout_rmem_c(self) -> Any:
        """Layout of C's register fragment matching the suggested shared-memory layouts."""
        return self._layout("suggested_rmem_c")

    def suggest_partitioner(self) -> Any:
        from ._tensors import Partitioner

        return Partitioner(self, "suggested_rmem_c")

    def get_partitioner(self) -> Any:
        from ._tensors import Partitioner

        return Partitioner(self, "rmem_c")

    def suggest_accumulator(self) -> Any:
        """The suggested register accumulator; created inside a kernel it owns a zeroed fragment."""
        from ._tensors import Accumulator

        return Accumulator(self, "suggested_rmem_c")

    def get_accumulator(self) -> Any:
        from ._tensors import Accumulator

        return Accumulator(self, "rmem_c")

    @property
    def tensor_types(self) -> tuple[str, str, str] | None:
        """The tensor kinds of A, B and C the kernel uses, when given (else None)."""
        return self._tensor_types

    @property
    def global_memory_alignment(self) -> tuple[int, int, int] | None:
        """(a, b, c) alignments in bytes of the global-memory tensors, when given (else None)."""
        return self._gmem_alignment

    def __repr__(self):
        return (f"Matmul(size={self._size}, precision={self.precision}, data_type={self._data_type!r}, "
                f"sm={tuple(self._sm)})")

    # --------------------------------------------------------------------------------------------- numba
    def _numba_constants(self) -> dict:
        a, b, c = self._value_types()
        return {"m": self.m, "n": self.n, "k": self.k, "size": self._size, "a_dim": self.a_dim, "b_dim": self.b_dim,
                "c_dim": self.c_dim, "a_size": self.a_size, "b_size": self.b_size, "c_size": self.c_size,
                "leading_dimension": tuple(self.leading_dimension), "lda": self.leading_dimension.a,
                "ldb": self.leading_dimension.b, "ldc": self.leading_dimension.c,
                "block_dim": tuple(self.block_dim), "block_size": self.block_size,
                "max_threads_per_block": self.max_threads_per_block,
                "a_value_type": a, "b_value_type": b, "c_value_type": c, **({"value_type": c} if a == b == c else {})}

    def _numba_methods(self) -> dict:
        a, b, c = self._value_types()
        if self._execute_api == "static_leading_dimensions":
            params = (Param("alpha", "ref", c), Param("a", "ptr", a), Param("b", "ptr", b), Param("beta", "ref", c),
                      Param("c", "ptr", c))
        else:
            params = (Param("alpha", "ref", c), Param("a", "ptr", a), Param("lda", "ref", "uint32"),
                      Param("b", "ptr", b), Param("ldb", "ref", "uint32"), Param("beta", "ref", c),
                      Param("c", "ptr", c), Param("ldc", "ref", "uint32"))
        spec = MethodSpec(self.symbol, params, lambda: tuple(self.files))
        return {"execute": spec, "__call__": spec}


def matmul(*, compiler: Any = None, code_type: Any = None, execute_api: Any = None, tensor_types: Any = None,
           global_memory_alignment: Any = None, **kwargs: Any) -> Matmul:
    """The function form of :class:`Matmul` (``nvmath.device.matmul``): the same keyword arguments, plus
    ``compiler`` (None or ``'numba'``) and ``code_type`` (``('lto', cc)``, the target). Pass its ``.files``
    to ``@cuda.jit(link=...)`` and call it in the kernel as ``MM(alpha, a, b, beta, c)``. ``execute_api='tensors'``,
    ``tensor_types`` (``(a, b, c)`` from 'suggested_smem_a', 'smem_a', ..., 'suggested_rmem_c', 'rmem_c': the
    layouts the kernel means to use, recorded as ``MM.tensor_types``) and ``global_memory_alignment`` go with
    the tensor API, which every Matmul offers."""
    function_form_sm(compiler, code_type, kwargs)
    missing = [k for k in ("size", "precision", "data_type") if k not in kwargs]
    if missing:
        raise TypeError(f"matmul() needs the keyword arguments {', '.join(missing)}")
    return Matmul(execute_api=execute_api, tensor_types=tensor_types, global_memory_alignment=global_memory_alignment,
                  **kwargs)
