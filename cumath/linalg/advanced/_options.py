"""Options, preferences and enums of ``cumath.linalg.advanced`` (the shape of nvmath-python's).

Enum values are cuBLASLt's (``cublasLt.h`` / ``cublas_api.h`` of cuBLAS 13.1), so they can be passed to the
library as they are. Nothing here loads a native library.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
from typing import Literal

from ..._core.options import check_allocator, settable

__all__ = [
    "MatmulEpilog", "MatmulComputeType", "MatmulNumericalImplFlags", "MatmulReductionScheme", "MatmulInnerShape",
    "MatmulOptions", "MatmulPlanPreferences", "MatmulEpilogPreferences", "MatmulQuantizationScales",
    "parse_memory_limit", "conjugations", "data_type_name", "CUDA_DATA_TYPES",
]


class MatmulEpilog(enum.IntEnum):
    """What cuBLASLt applies to ``alpha * a @ b + beta * c`` before storing it (cublasLtEpilogue_t)."""

    DEFAULT = 1
    RELU = 2
    RELU_AUX = 130
    BIAS = 4
    RELU_BIAS = 6
    RELU_AUX_BIAS = 134
    DRELU = 136
    DRELU_BGRAD = 152
    GELU = 32
    GELU_AUX = 160
    GELU_BIAS = 36
    GELU_AUX_BIAS = 164
    DGELU = 192
    DGELU_BGRAD = 208
    BGRADA = 256
    BGRADB = 512


class MatmulComputeType(enum.IntEnum):
    """Precision of the products and the accumulator (cublasComputeType_t)."""

    COMPUTE_16F = 64
    COMPUTE_16F_PEDANTIC = 65
    COMPUTE_32F = 68
    COMPUTE_32F_PEDANTIC = 69
    COMPUTE_32F_FAST_16F = 74
    COMPUTE_32F_FAST_16BF = 75
    COMPUTE_32F_FAST_TF32 = 77
    COMPUTE_32F_EMULATED_16BFX9 = 78
    COMPUTE_64F = 70
    COMPUTE_64F_PEDANTIC = 71
    COMPUTE_64F_EMULATED_FIXEDPOINT = 79
    COMPUTE_32I = 72
    COMPUTE_32I_PEDANTIC = 73


class MatmulNumericalImplFlags(enum.IntFlag):
    """Numerical implementation details of an algorithm (cublasLtNumericalImplFlags_t); combine with ``|``."""

    FMA = 0x01
    HMMA = 0x02
    IMMA = 0x04
    DMMA = 0x08
    TENSOR_OP_MASK = 0xFE
    OP_TYPE_MASK = 0xFF
    ACCUMULATOR_16F = 0x01 << 8
    ACCUMULATOR_32F = 0x02 << 8
    ACCUMULATOR_64F = 0x04 << 8
    ACCUMULATOR_32I = 0x08 << 8
    ACCUMULATOR_TYPE_MASK = 0xFF << 8
    INPUT_16F = 0x01 << 16
    INPUT_16BF = 0x02 << 16
    INPUT_TF32 = 0x04 << 16
    INPUT_32F = 0x08 << 16
    INPUT_64F = 0x10 << 16
    INPUT_8I = 0x20 << 16
    INPUT_8F_E4M3 = 0x40 << 16
    INPUT_8F_E5M2 = 0x80 << 16
    OP_INPUT_TYPE_MASK = 0xFF << 16
    GAUSSIAN = 0x01 << 32
    ALL = 0xFFFFFFFFFFFFFFFF


class MatmulReductionScheme(enum.IntFlag):
    """How split-K partial results are reduced (cublasLtReductionScheme_t); combine with ``|``."""

    NONE = 0
    INPLACE = 1
    COMPUTE_TYPE = 2
    OUTPUT_TYPE = 4
    MASK = 7


class MatmulInnerShape(enum.IntEnum):
    """Inner shape of an algorithm's MMA (cublasLtMatmulInnerShape_t)."""

    UNDEFINED = 0
    MMA884 = 1
    MMA1684 = 2
    MMA1688 = 3
    MMA16816 = 4


# cudaDataType values (library_types.h) <-> cumath dtype names
CUDA_DATA_TYPES = {
    "float16": 2, "bfloat16": 14, "float32": 0, "float64": 1, "complex64": 4, "complex128": 5,
    "float8_e4m3fn": 28, "float8_e5m2": 29, "uint8": 8, "int8": 3, "int32": 10,
}
_TYPE_NAMES = {v: k for k, v in CUDA_DATA_TYPES.items()}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "cfloat": "complex64",
            "cdouble": "complex128", "float8_e4m3": "float8_e4m3fn", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def data_type_name(value, what: str) -> str | None:
    """A cudaDataType (int, e.g. ``nvmath.CudaDataType.CUDA_R_32F``), a dtype or a dtype name, as cumath's name."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        name = _TYPE_NAMES.get(int(value))
        if name is None:
            raise ValueError(f"{what}={value!r} is not a supported cudaDataType; the allowed values are "
                             f"{sorted(_TYPE_NAMES)} ({', '.join(CUDA_DATA_TYPES)})")
        return name
    name = getattr(value, "name", None) if not isinstance(value, str) else value
    if name is None:
        name = str(value)
    name = name.removeprefix("torch.").removeprefix("CUDA_")
    name = _ALIASES.get(name, name)
    if name not in CUDA_DATA_TYPES:
        raise ValueError(f"{what}={value!r} is not supported; pass a cudaDataType or one of {list(CUDA_DATA_TYPES)}")
    return name


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000 ** 2, "mb": 1000 ** 2, "mib": 1 << 20,
          "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1 << 30, "t": 1000 ** 4, "tb": 1000 ** 4, "tib": 1 << 40}
_LIMIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z%]*)\s*$")


def parse_memory_limit(value, total_bytes: int | None = None) -> int:
    """Bytes of ``memory_limit``: an int (bytes), a float, ``"8 GiB"``, ``"512MB"``, or ``"50%"`` of
    ``total_bytes`` (the device's memory). Raises ValueError naming the allowed forms."""
    allowed = "a number of bytes (int), a size such as '8 GiB' or '512 MB', or a percentage such as '50%'"
    if isinstance(value, bool):
        raise TypeError(f"memory_limit must be {allowed}, not a bool")
    if isinstance(value, (int, float)):
        if value < 0 or value != value:
            raise ValueError(f"memory_limit={value!r} must be non-negative")
        return int(value)
    if not isinstance(value, str):
        raise TypeError(f"memory_limit must be {allowed}, not {type(value).__name__}")
    m = _LIMIT.match(value)
    if m is None:
        raise ValueError(f"memory_limit={value!r} is not understood; pass {allowed}")
    number, unit = float(m.group(1)), m.group(2).lower()
    if unit == "%":
        if not 0 <= number <= 100:
            raise ValueError(f"memory_limit={value!r}: a percentage must be within 0% and 100%")
        if total_bytes is None:
            raise ValueError("memory_limit as a percentage needs the device's memory size")
        return int(total_bytes * number / 100)
    factor = _UNITS.get(unit)
    if factor is None:
        raise ValueError(f"memory_limit={value!r}: unknown unit {m.group(2)!r}; use B, KB, KiB, MB, MiB, GB, GiB, "
                         f"TB, TiB or %")
    return int(number * factor)


def _check_bool(name, value):
    if value is not True and value is not False:
        raise ValueError(f"{name}={value!r} is not supported; the allowed values are [True, False]")


@settable
@dataclasses.dataclass(frozen=True, kw_only=True)
class MatmulOptions:
    """Options of :class:`cumath.linalg.advanced.Matmul` and :func:`cumath.linalg.advanced.matmul`.

    Attributes:
        inplace: write the result into ``c`` (which then must have the result's shape and a layout cuBLASLt
            can write; no broadcasting).
        compute_type: a :class:`MatmulComputeType`; by default chosen from the operand dtypes (COMPUTE_32F for
            half, bfloat16, float32 and FP8; COMPUTE_64F for float64).
        scale_type: cudaDataType of alpha and beta; by default the one consistent with the compute type.
        result_type: cudaDataType (or dtype name) of the result; only narrow-precision (FP8) products may
            choose one that differs from the default.
        result_amax: (FP8) also return the maximum absolute value of the result, as ``aux["result_amax"]``.
        block_scaling: MXFP8 block scaling (needs a GPU of compute capability 10.0 or newer).
        sm_count_target: number of SMs the kernels may use (0: all).
        fast_accumulation: FP8 fast accumulation (faster, less accurate).
        device_id: the GPU for host (NumPy, PyTorch CPU) operands; GPU operands run where they live.
        handle: a cuBLASLt handle to use (an int); by default cumath keeps one per device.
        logger: a ``logging.Logger``; by default the ``cumath.linalg.advanced`` loggers.
        memory_limit: the most workspace memory a matmul may use: bytes, a size string ("8 GiB") or a
            percentage of the GPU's memory ("50%").
        blocking: True waits for the GPU; 'auto' returns at once for GPU operands (host operands always wait).
        allocator: device memory for workspaces and staging buffers (see :mod:`cumath.memory`).
    """

    inplace: bool = False
    compute_type: int | None = None
    scale_type: int | None = None
    result_type: int | str | None = None
    result_amax: bool = False
    block_scaling: bool = False
    sm_count_target: int | None = 0
    fast_accumulation: bool | None = False
    device_id: int | None = None
    handle: int | None = dataclasses.field(default=None, compare=False)
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)
    memory_limit: int | str | None = "80%"
    blocking: Literal[True, "auto"] = "auto"
    allocator: object | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self):
        _check_bool("inplace", self.inplace)
        _check_bool("result_amax", self.result_amax)
        _check_bool("block_scaling", self.block_scaling)
        if self.fast_accumulation is not None:
            _check_bool("fast_accumulation", self.fast_accumulation)
        if self.compute_type is not None:
            try:
                object.__setattr__(self, "compute_type", MatmulComputeType(self.compute_type))
            except ValueError:
                raise ValueError(f"compute_type={self.compute_type!r} is not supported; the allowed values are "
                                 f"{[m.name for m in MatmulComputeType]}") from None
        if self.scale_type is not None:
            data_type_name(self.scale_type, "scale_type")
        if self.result_type is not None:
            data_type_name(self.result_type, "result_type")
        if self.sm_count_target is not None and (not isinstance(self.sm_count_target, int)
                                                 or self.sm_count_target < 0):
            raise ValueError(f"sm_count_target={self.sm_count_target!r} must be a non-negative int (0: all SMs)")
        if self.device_id is not None and (not isinstance(self.device_id, int) or self.device_id < 0):
            raise ValueError(f"device_id={self.device_id!r} must be a non-negative int")
        if self.handle is not None and not isinstance(self.handle, int):
            raise TypeError(f"handle must be a cuBLASLt handle (int), not {type(self.handle).__name__}")
        if self.memory_limit is not None:
            parse_memory_limit(self.memory_limit, 1 << 40)  # the form is checked now, the size at plan time
        if self.blocking is not True and self.blocking != "auto":
            raise ValueError(f"blocking={self.blocking!r} is not supported; the allowed values are [True, 'auto']")
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise TypeError(f"logger must be a logging.Logger, not {type(self.logger).__name__}")
        check_allocator(self.allocator)


@settable
@dataclasses.dataclass(frozen=True, kw_only=True)
class MatmulEpilogPreferences:
    """Epilog preferences: ``aux_type`` (cudaDataType of the auxiliary output; narrow-precision products only)
    and ``aux_amax`` (also return the auxiliary output's maximum absolute value)."""

    aux_type: int | str | None = None
    aux_amax: bool = False

    def __post_init__(self):
        if self.aux_type is not None:
            data_type_name(self.aux_type, "aux_type")
        _check_bool("aux_amax", self.aux_amax)


@settable
@dataclasses.dataclass(frozen=True, kw_only=True)
class MatmulPlanPreferences:
    """Preferences of :meth:`Matmul.plan` and :func:`matmul`.

    Attributes:
        reduction_scheme_mask: allowed :class:`MatmulReductionScheme` values, combined with ``|``.
        max_waves_count: exclude algorithms whose device utilisation exceeds this (0: no limit).
        numerical_impl_mask: allowed :class:`MatmulNumericalImplFlags`, combined with ``|``.
        limit: how many algorithms the heuristic returns (and autotuning times).
        epilog: :class:`MatmulEpilogPreferences` (or a dict of its fields).
    """

    reduction_scheme_mask: int = MatmulReductionScheme.MASK
    max_waves_count: float = 0.0
    numerical_impl_mask: int = MatmulNumericalImplFlags.ALL
    limit: int = 8
    epilog: MatmulEpilogPreferences | dict | None = None

    def __post_init__(self):
        if not isinstance(self.limit, int) or isinstance(self.limit, bool) or not 1 <= self.limit <= 1024:
            raise ValueError(f"limit={self.limit!r} must be an int within 1 and 1024")
        if not isinstance(self.max_waves_count, (int, float)) or self.max_waves_count < 0:
            raise ValueError(f"max_waves_count={self.max_waves_count!r} must be a non-negative number")
        if not isinstance(self.reduction_scheme_mask, int) or not 0 <= int(self.reduction_scheme_mask) <= 7:
            raise ValueError(f"reduction_scheme_mask={self.reduction_scheme_mask!r} must combine "
                             f"{[m.name for m in MatmulReductionScheme]}")
        if not isinstance(self.numerical_impl_mask, int) or not 0 <= int(self.numerical_impl_mask) < 1 << 64:
            raise ValueError(f"numerical_impl_mask={self.numerical_impl_mask!r} must be a 64-bit mask of "
                             f"MatmulNumericalImplFlags")
        if isinstance(self.epilog, dict):
            object.__setattr__(self, "epilog", MatmulEpilogPreferences(**self.epilog))
        elif self.epilog is not None and not isinstance(self.epilog, MatmulEpilogPreferences):
            raise TypeError(f"epilog preferences must be a MatmulEpilogPreferences, a dict or None, not "
                            f"{type(self.epilog).__name__}")


@dataclasses.dataclass(frozen=True)
class MatmulQuantizationScales:
    """Scales of narrow-precision (FP8) operands: D = scale_d * f(scale_a * scale_b * alpha * A @ B + ...).

    Each is a number, or a one-element tensor on the operands' device (read by the GPU at execution, so it may
    change between executions without re-planning). ``a`` and ``b`` are required for FP8 operands, ``d`` for an
    FP8 result; ``c`` applies to an FP8 ``c`` only.
    """

    a: object = None
    b: object = None
    c: object = None
    d: object = None


def conjugations(qualifiers, dtype: str):
    """(conjugate a, conjugate b) from nvmath-style qualifiers (a NumPy array of matrix_qualifiers_dtype)."""
    if qualifiers is None:
        return (False, False)
    try:
        flags = [bool(q) for q in qualifiers["is_conjugate"]]
    except (TypeError, ValueError, KeyError, IndexError):
        raise TypeError("qualifiers must be a NumPy array of cumath.linalg.advanced.matrix_qualifiers_dtype with "
                        "one entry per operand (a, b[, c])") from None
    if len(flags) not in (2, 3):
        raise ValueError(f"qualifiers has {len(flags)} entries; give 2 or 3 (a, b[, c])")
    if len(flags) == 3 and flags[2]:
        raise ValueError("conjugating c is not supported by cuBLASLt; conjugate it before the call")
    if not dtype.startswith("complex"):
        return (False, False)  # the conjugate of a real matrix is itself
    return (flags[0], flags[1])


def _qualifiers_dtype():
    import numpy as np

    return np.dtype([("structure", object), ("is_conjugate", "<i2")])


def __getattr__(name):
    if name == "matrix_qualifiers_dtype":  # NumPy is imported on first use
        value = _qualifiers_dtype()
        globals()[name] = value
        return value
    raise AttributeError(name)
