"""cuFFTDx block and thread FFTs inside numba-cuda kernels: :class:`FFT` and the function form :func:`fft`.

Construction validates the arguments (no library is touched); traits are computed through libmathdx on first
use, and the device code is generated when ``.files`` is read or a kernel that calls the object is compiled.
Both are cached in memory and on disk (see ``_codegen``).
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
    is_suggested,
    MethodSpec,
    normalize_cc,
    normalize_precision,
    np_dtype,
    Param,
    positive_int,
    precision_enum,
)

if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from ._common import ComputeCapability
    from ._vector import HalfVector

__all__ = ["FFT", "fft"]

_TYPES = {"c2c": "CUFFTDX_TYPE_C2C", "r2c": "CUFFTDX_TYPE_R2C", "c2r": "CUFFTDX_TYPE_C2R"}
_DIRECTIONS = {"forward": "CUFFTDX_DIRECTION_FORWARD", "inverse": "CUFFTDX_DIRECTION_INVERSE"}
_EXECUTIONS = {"Block": "COMMONDX_EXECUTION_BLOCK", "Thread": "COMMONDX_EXECUTION_THREAD"}
_APIS = {"register_memory": "CUFFTDX_API_LMEM", "shared_memory": "CUFFTDX_API_SMEM"}
_LAYOUTS = {"natural": "CUFFTDX_COMPLEX_LAYOUT_NATURAL", "packed": "CUFFTDX_COMPLEX_LAYOUT_PACKED",
            "full": "CUFFTDX_COMPLEX_LAYOUT_FULL"}
_MODES = {"normal": "CUFFTDX_REAL_MODE_NORMAL", "folded": "CUFFTDX_REAL_MODE_FOLDED"}


def _knob(value, what: str):
    if value is None or is_suggested(value):
        return None if value is None else "suggested"
    if isinstance(value, str):
        raise ValueError(f"{what}={value!r} is not supported; pass a positive integer, 'suggested' or None")
    return positive_int(value, what)


class FFT(DeviceFunction):
    """A cuFFTDx FFT for use inside numba-cuda kernels (the shape of ``nvmath.device.FFT``).

    Args:
        size: length of the FFT.
        precision: ``numpy.float16``, ``numpy.float32`` or ``numpy.float64`` (the computation precision). Half
            precision computes two FFTs at once per thread (``implicit_type_batching`` is 2): ``value_type`` is
            :data:`~cumath.device.float16x4` (real parts of the pair in ``x, y``, imaginary parts in ``z, w``),
            and real r2c/c2r data are :data:`~cumath.device.float16x2`.
        fft_type: ``'c2c'``, ``'r2c'`` or ``'c2r'``.
        execution: ``'Block'`` (the threads of a block cooperate; needs shared memory) or ``'Thread'``.
        sm: target compute capability (``90``, ``'9.0'``, ``(9, 0)``...); default: the current GPU's.
        direction: ``'forward'`` or ``'inverse'``; required for c2c, implied by r2c (forward) and c2r (inverse).
        ffts_per_block: FFTs one block computes (Block execution), an int or ``'suggested'``; default 1.
        elements_per_thread: elements each thread holds, an int or ``'suggested'``; default: cuFFTDx's choice.
        real_fft_options: for r2c/c2r, ``{'complex_layout': 'natural'|'packed'|'full',
            'real_mode': 'normal'|'folded'}``.
        execute_api: ``'register_memory'`` (default: data in each thread's ``thread_data``) or
            ``'shared_memory'`` (data in shared memory, Block execution only: element i of the block's FFT j at
            ``shared_memory[j * size + i]``, the call ``f(shared_memory)``; launch with
            ``max(shared_memory_size, ffts_per_block * size * itemsize)`` bytes of shared memory).

    Inside a kernel::

        thread_data = cuda.local.array(fft.storage_size, dtype=fft.value_type)
        shared_mem = cuda.shared.array(0, dtype=fft.value_type)
        ...                                   # load: element i of FFT threadIdx.y is at threadIdx.x + i*stride
        fft.execute(thread_data, shared_mem)  # or fft(thread_data, shared_mem)

    launched with ``kernel[blocks, fft.block_dim, stream, fft.shared_memory_size](...)``.
    """

    def __init__(self, size: Any, precision: Any, fft_type: str, execution: str, *, sm: Any = None,
                 direction: Any = None, ffts_per_block: Any = None, elements_per_thread: Any = None,
                 real_fft_options: Any = None, execute_api: Any = None) -> None:
        self._size = positive_int(size, "size")
        self._precision = normalize_precision(precision, allowed=("float16", "float32", "float64"))
        self._fft_type = choice(fft_type, tuple(_TYPES), "fft_type")
        self._execution = choice(execution, tuple(_EXECUTIONS), "execution")
        implied = {"r2c": "forward", "c2r": "inverse"}.get(self._fft_type)
        if direction is None:
            if implied is None:
                raise ValueError("direction is required for a c2c FFT; pass direction='forward' or 'inverse'")
            direction = implied
        self._direction = choice(direction, tuple(_DIRECTIONS), "direction")
        if implied is not None and self._direction != implied:
            raise ValueError(f"a {self._fft_type} FFT goes in the {implied} direction, not {self._direction!r}")
        self._ffts_per_block = _knob(ffts_per_block, "ffts_per_block")
        self._elements_per_thread = _knob(elements_per_thread, "elements_per_thread")
        if self._execution == "Thread":
            if self._ffts_per_block not in (None, 1):
                raise ValueError(f"ffts_per_block={ffts_per_block!r} applies to Block execution only; a Thread FFT "
                                 f"is computed by one thread")
            if self._elements_per_thread not in (None, "suggested", self._size):
                raise ValueError(f"elements_per_thread={elements_per_thread!r}: a Thread FFT holds all {self._size} "
                                 f"elements in one thread")
        self._real_fft_options = self._real_options(real_fft_options)
        api = "register_memory" if execute_api is None else execute_api
        self._execute_api = choice(api, tuple(_APIS), "execute_api")
        if self._execute_api == "shared_memory" and self._execution == "Thread":
            raise ValueError("execute_api='shared_memory' needs Block execution")
        self._sm = normalize_cc(sm)
        self._gen = None

    def _real_options(self, options):
        if options is None:
            return None
        if self._fft_type == "c2c":
            raise ValueError("real_fft_options apply to r2c and c2r FFTs only")
        if not isinstance(options, dict):
            raise TypeError(f"real_fft_options must be a dict, not {type(options).__name__}")
        unknown = set(options) - {"complex_layout", "real_mode"}
        if unknown:
            raise ValueError(f"real_fft_options has unknown keys {sorted(unknown)}; the allowed keys are "
                             f"'complex_layout' and 'real_mode'")
        layout = choice(options.get("complex_layout", "natural"), tuple(_LAYOUTS), "complex_layout")
        mode = choice(options.get("real_mode", "normal"), tuple(_MODES), "real_mode")
        return {"complex_layout": layout, "real_mode": mode}

    # ------------------------------------------------------------------------------------------- operators
    def _operators(self, ffts_per_block, elements_per_thread) -> tuple:
        ops = [("CUFFTDX_OPERATOR_SIZE", self._size), ("CUFFTDX_OPERATOR_DIRECTION", _DIRECTIONS[self._direction]),
               ("CUFFTDX_OPERATOR_TYPE", _TYPES[self._fft_type]),
               ("CUFFTDX_OPERATOR_PRECISION", precision_enum(self._precision)),
               ("CUFFTDX_OPERATOR_SM", self._sm.sm), ("CUFFTDX_OPERATOR_EXECUTION", _EXECUTIONS[self._execution]),
               ("CUFFTDX_OPERATOR_API", _APIS[self._execute_api])]
        if isinstance(ffts_per_block, int):
            ops.append(("CUFFTDX_OPERATOR_FFTS_PER_BLOCK", ffts_per_block))
        if isinstance(elements_per_thread, int) and self._execution == "Block":
            ops.append(("CUFFTDX_OPERATOR_ELEMENTS_PER_THREAD", elements_per_thread))
        if self._real_fft_options is not None:
            ops.append(("CUFFTDX_OPERATOR_REAL_FFT_OPTIONS", (_LAYOUTS[self._real_fft_options["complex_layout"]],
                                                              _MODES[self._real_fft_options["real_mode"]])))
        return tuple(ops)

    @staticmethod
    def _descriptor(ops) -> Descriptor:
        return Descriptor("cufftdx", ops, "cumath_fft_" + digest("cumath.device.FFT", ops)[:24])

    @property
    def _generator(self) -> Generator:
        if self._gen is None:
            fpb = self._ffts_per_block
            if fpb == "suggested":
                probe = Generator([self._descriptor(self._operators(None, self._elements_per_thread))], self._sm)
                fpb = probe.traits()["suggested_ffts_per_block"]
            self._gen = Generator([self._descriptor(self._operators(fpb, self._elements_per_thread))], self._sm)
        return self._gen

    # ----------------------------------------------------------------------------------------- description
    @property
    def size(self) -> int:
        """Length of the FFT."""
        return self._size

    @property
    def precision(self) -> str:
        """The computation precision, 'float16', 'float32' or 'float64'."""
        return self._precision

    @property
    def fft_type(self) -> str:
        """'c2c', 'r2c' or 'c2r'."""
        return self._fft_type

    @property
    def execution(self) -> str:
        """'Block' (the threads of a block cooperate) or 'Thread'."""
        return self._execution

    @property
    def direction(self) -> str:
        """'forward' or 'inverse'."""
        return self._direction

    @property
    def sm(self) -> ComputeCapability:
        """The target compute capability."""
        return self._sm

    @property
    def execute_api(self) -> str:
        """'register_memory' (data in each thread's thread_data) or 'shared_memory'."""
        return self._execute_api

    @property
    def real_fft_options(self) -> dict[str, str] | None:
        """``{'complex_layout': ..., 'real_mode': ...}`` of an r2c/c2r FFT (a copy); None for c2c."""
        return None if self._real_fft_options is None else dict(self._real_fft_options)

    @property
    def code_type(self) -> CodeType:
        """The kind of code generated (LTO IR) and the compute capability it is for."""
        return CodeType("lto", self._sm)

    # --------------------------------------------------------------------------------------------- traits
    @property
    def value_type(self) -> np.dtype[Any] | HalfVector:
        """The complex type the FFT computes in, NumPy complex64 or complex128, or
        :data:`~cumath.device.float16x4` for half precision (a pair of FFTs)."""
        return np_dtype(VALUE_TYPES[self._trait("value_type")])

    @property
    def input_type(self) -> np.dtype[Any] | HalfVector:
        """The type of the FFT's input elements (real for r2c; in half precision a vector of the pair)."""
        return np_dtype(VALUE_TYPES[self._trait("input_type")])

    @property
    def output_type(self) -> np.dtype[Any] | HalfVector:
        """The type of the FFT's output elements (real for c2r; in half precision a vector of the pair)."""
        return np_dtype(VALUE_TYPES[self._trait("output_type")])

    @property
    def storage_size(self) -> int:
        """Elements of value_type each thread's thread_data array must hold."""
        return self._trait("storage_size")

    @property
    def shared_memory_size(self) -> int:
        """Bytes of dynamic shared memory a block needs (0 for Thread execution)."""
        return self._trait("shared_memory_size") or 0

    @property
    def stride(self) -> int:
        """Distance between a thread's successive elements."""
        return self._trait("stride")

    @property
    def elements_per_thread(self) -> int:
        """Elements of the FFT each thread holds."""
        return self._trait("elements_per_thread")

    @property
    def ffts_per_block(self) -> int | None:
        """FFTs one block computes (None for Thread execution)."""
        return self._trait("ffts_per_block")

    @property
    def implicit_type_batching(self) -> int:
        """FFTs each thread computes at once in one value_type (2 in half precision, else 1)."""
        return self._trait("implicit_type_batching")

    @property
    def input_length(self) -> int:
        """Elements of the FFT's input (of input_type)."""
        return self._trait("input_length")

    @property
    def output_length(self) -> int:
        """Elements of the FFT's output (of output_type)."""
        return self._trait("output_length")

    @property
    def input_elements_per_thread(self) -> int:
        """Input elements each thread holds."""
        return self._trait("input_elements_per_thread")

    @property
    def output_elements_per_thread(self) -> int:
        """Output elements each thread holds."""
        return self._trait("output_elements_per_thread")

    @property
    def suggested_ffts_per_block(self) -> int | None:
        """cuFFTDx's suggested ffts_per_block (None for Thread execution)."""
        return self._trait("suggested_ffts_per_block")

    @property
    def workspace_size(self) -> int:
        """Always 0 (cuFFTDx workspaces are not offered)."""
        return 0

    @property
    def block_dim(self) -> Dim3:
        """Threads per block to launch with (Block execution); Dim3(1, 1, 1) for Thread execution."""
        bd = self._trait("block_dim")
        return Dim3(*bd) if bd else Dim3(1, 1, 1)

    def __repr__(self):
        return (f"FFT(size={self._size}, precision={self._precision}, fft_type={self._fft_type!r}, "
                f"execution={self._execution!r}, direction={self._direction!r}, sm={tuple(self._sm)})")

    # -------------------------------------------------------------------------------------------- numba
    def _numba_constants(self) -> dict:
        c = {name: getattr(self, name) for name in (
            "size", "storage_size", "shared_memory_size", "stride", "elements_per_thread", "ffts_per_block",
            "implicit_type_batching", "input_length", "output_length", "input_elements_per_thread",
            "output_elements_per_thread", "workspace_size")}
        c["block_dim"] = tuple(self.block_dim)
        for name in ("value_type", "input_type", "output_type"):
            c[name] = VALUE_TYPES[self._trait(name)]
        return c

    def _numba_methods(self) -> dict:
        vt = VALUE_TYPES[self._trait("value_type")]
        data_dtype = vt if self._fft_type == "c2c" else None  # r2c/c2r: real data may be stored in thread_data
        if self._execute_api == "shared_memory":
            params = (Param("shared_memory", "ptr", data_dtype),)
        elif self._execution == "Block":
            params = (Param("thread_data", "ptr", data_dtype), Param("shared_memory", "ptr", None))
        else:
            params = (Param("thread_data", "ptr", data_dtype),)
        spec = MethodSpec(self.symbol, params, tuple(self.files))
        return {"execute": spec, "__call__": spec}


def fft(*, compiler: Any = None, code_type: Any = None, execute_api: Any = None, **kwargs: Any) -> FFT:
    """The function form of :class:`FFT` (``nvmath.device.fft``): the same keyword arguments (``size``,
    ``precision``, ``fft_type``, ``execution``, ``direction``, ``ffts_per_block``, ``elements_per_thread``,
    ``real_fft_options``, ``sm``), plus ``compiler`` (None or ``'numba'``) and ``code_type`` (a
    :class:`CodeType` or ``('lto', cc)``; its compute capability is the target). Its ``.files`` go to
    ``@cuda.jit(link=...)`` and it is called inside the kernel as ``f(thread_data, shared_memory)``.
    """
    function_form_sm(compiler, code_type, kwargs)
    missing = [k for k in ("size", "precision", "fft_type") if k not in kwargs]
    if missing:
        raise TypeError(f"fft() needs the keyword arguments {', '.join(missing)}")
    kwargs.setdefault("execution", "Block")
    return FFT(execute_api=execute_api, **kwargs)
