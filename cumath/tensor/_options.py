"""Options, enums and qualifiers of the tensor contractions (the shape of nvmath-python's ``nvmath.tensor``)."""

from __future__ import annotations

import dataclasses
import enum
import logging
from typing import Literal

import numpy as np

from .._bindings import cutensor as ct
from .._bindings.cutensor import Operator
from .._core.options import check_choice

__all__ = ["ContractionOptions", "ContractionAlgo", "ContractionAutotuneMode", "ContractionJitMode",
           "ContractionCacheMode", "ComputeDesc", "Operator", "tensor_qualifiers_dtype", "operators_of",
           "UNARY_OPERATORS", "COMPLEX_OPERATORS", "RESULT_LAYOUTS"]


_DOCS = {
    "ContractionAlgo": "cuTENSOR's contraction algorithms (cutensorAlgo_t); values >= 0 pick one GEMM-like kernel.",
    "ContractionAutotuneMode": "cutensorAutotuneMode_t: INCREMENTAL tries another kernel on each plan of a "
                               "recurring problem.",
    "ContractionJitMode": "cutensorJitMode_t: DEFAULT lets cuTENSOR compile a kernel for the problem (longer "
                          "planning).",
    "ContractionCacheMode": "cutensorCacheMode_t: PEDANTIC keeps the chosen kernel in the handle's plan cache.",
}


def _public(values: type, name: str) -> type:
    """The binding's enum ``values`` under its public name (one table of values: the binding's, from the header)."""
    cls = enum.IntEnum(name, {m.name: m.value for m in values}, module=__name__)
    cls.__doc__ = _DOCS[name]
    return cls


ContractionAlgo = _public(ct.Algo, "ContractionAlgo")
ContractionAutotuneMode = _public(ct.AutotuneMode, "ContractionAutotuneMode")
ContractionJitMode = _public(ct.JitMode, "ContractionJitMode")
ContractionCacheMode = _public(ct.CacheMode, "ContractionCacheMode")


class ComputeDesc(enum.IntEnum):
    """Compute types of a contraction (cuTENSOR's CUTENSOR_COMPUTE_DESC_* constants, by name).

    The integer values are cumath's own (the C constants are pointers read from the library when a plan is made).
    On the CPU: COMPUTE_64F computes in float64, every other compute type in the operands' precision (half and
    bfloat16 operands in float32).
    """

    COMPUTE_16F = 1
    COMPUTE_16BF = 2
    COMPUTE_TF32 = 3
    COMPUTE_3XTF32 = 4
    COMPUTE_32F = 5
    COMPUTE_64F = 6
    COMPUTE_9X16BF = 7
    COMPUTE_8XINT8 = 8
    COMPUTE_4X16F = 9

    @property
    def library_name(self) -> str:
        """The name without its ``COMPUTE_`` prefix (``'32F'``, ``'3XTF32'``...)."""
        return self.name[len("COMPUTE_"):]


#: a structured NumPy dtype: one record per operand (a, b, c[, d]) holding its unary Operator
tensor_qualifiers_dtype = np.dtype([("operator", np.int32)])

#: the unary operators a contraction applies to its inputs as it loads them
UNARY_OPERATORS = frozenset(op for op in Operator if op not in (
    Operator.OP_ADD, Operator.OP_MUL, Operator.OP_MAX, Operator.OP_MIN, Operator.OP_UNKNOWN))
#: the ones cuTENSOR defines for complex operands
COMPLEX_OPERATORS = frozenset((Operator.OP_IDENTITY, Operator.OP_CONJ))

RESULT_LAYOUTS = ("auto", "C", "F", "optimized")


def operators_of(qualifiers, names: tuple, dtype: str) -> tuple:
    """The unary Operator of each operand in ``names`` from ``qualifiers`` (None, a sequence of Operators or
    ints, or a NumPy array of ``tensor_qualifiers_dtype``); checked against the dtype."""
    n = len(names)
    if qualifiers is None:
        return (Operator.OP_IDENTITY,) * n
    if isinstance(qualifiers, np.ndarray) and qualifiers.dtype == tensor_qualifiers_dtype:
        values = [int(v) for v in qualifiers["operator"].ravel()]
    elif isinstance(qualifiers, np.ndarray) and qualifiers.dtype.kind in "iu":
        values = [int(v) for v in qualifiers.ravel()]
    elif isinstance(qualifiers, (list, tuple)):
        values = list(qualifiers)
    else:
        raise TypeError(f"qualifiers must be a NumPy array of dtype tensor_qualifiers_dtype, a sequence of "
                        f"Operator values or None, not {type(qualifiers).__name__}")
    if len(values) > n or len(values) < n - 1:
        raise ValueError(f"qualifiers has {len(values)} entries; give one per operand ({', '.join(names)}), "
                         f"the last one optional")
    values = values + [Operator.OP_IDENTITY] * (n - len(values))
    ops = []
    for name, v in zip(names, values):
        try:
            op = Operator(int(v))
        except (ValueError, TypeError):
            raise ValueError(f"the qualifier of {name} ({v!r}) is not an Operator; the allowed values are the "
                             f"unary operators {sorted(o.name for o in UNARY_OPERATORS)}") from None
        if op not in UNARY_OPERATORS:
            raise ValueError(f"the qualifier of {name} is {op.name}, a binary operator; the allowed values are the "
                             f"unary operators {sorted(o.name for o in UNARY_OPERATORS)}")
        if dtype.startswith("complex") and op not in COMPLEX_OPERATORS:
            raise ValueError(f"the operator {op.name} of {name} is not supported for {dtype} operands; complex "
                             f"operands take OP_IDENTITY or OP_CONJ")
        ops.append(op)
    return tuple(ops)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContractionOptions:
    """Options of :class:`BinaryContraction`, :class:`TernaryContraction` and the functions.

    Attributes:
        compute_type: a :class:`ComputeDesc` (None: the operands' precision; float32 for half and bfloat16).
        logger: a ``logging.Logger``; by default the ``cumath.tensor`` loggers (nvmath-python uses the root one).
        blocking: True waits for GPU work to finish; 'auto' returns at once for GPU operands (host operands
            always wait).
        handle: a cuTENSOR handle (an int) to use; by default cumath creates one per device and thread.
        allocator: device memory for workspaces and intermediates (see :mod:`cumath.memory`).
        memory_limit: the most workspace a plan may use: bytes (int), a string with a unit ('1.5 GiB', '200 MB')
            or a percentage of the GPU memory ('80%').
        result_layout: the memory order of a new result (out= keeps its own): 'C', 'F', 'optimized' (the order
            the engine writes directly: [batch, m, n] of the final product, from the operands' layouts) or 'auto'
            (the default: 'C' when every input is in C order, 'F' when every input is in F order, provided the
            engine writes that layout without a copy, as cuTENSOR always does and the CPU's GEMM does when the
            strides nest into its matrices; 'optimized' otherwise, and where every input is in both orders, as
            1-D operands are). C in, C out, and never an extra pass.
    """

    compute_type: int | None = None
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)
    blocking: Literal[True, "auto"] = "auto"
    handle: int | None = dataclasses.field(default=None, compare=False)
    allocator: object | None = dataclasses.field(default=None, compare=False)
    memory_limit: int | str | None = "80%"
    result_layout: Literal["auto", "C", "F", "optimized"] = "auto"

    def __hash__(self):  # hashed once: a stateless call's cache key holds the options
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.compute_type, self.blocking, self.memory_limit, self.result_layout))
            object.__setattr__(self, "_hash", h)
        return h

    def __post_init__(self):
        if self.compute_type is not None:
            try:
                object.__setattr__(self, "compute_type", ComputeDesc(self.compute_type) if not isinstance(
                    self.compute_type, str) else ComputeDesc[self.compute_type.upper()])
            except (ValueError, KeyError):
                raise ValueError(f"compute_type={self.compute_type!r} is not supported; the allowed values are "
                                 f"{[f'ComputeDesc.{m.name}' for m in ComputeDesc]} or None") from None
        if self.blocking is not True and self.blocking != "auto":
            raise ValueError(f"blocking={self.blocking!r} is not supported; the allowed values are [True, 'auto']")
        check_choice("result_layout", self.result_layout, RESULT_LAYOUTS)
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise TypeError(f"logger must be a logging.Logger, not {type(self.logger).__name__}")
        if self.handle is not None and (not isinstance(self.handle, int) or isinstance(self.handle, bool)):
            raise TypeError(f"handle must be an int (a cutensorHandle_t) or None, not {type(self.handle).__name__}")
        ml = self.memory_limit
        if ml is not None and not (isinstance(ml, str) or (isinstance(ml, int) and not isinstance(ml, bool)
                                                          and ml >= 0)):
            raise ValueError(f"memory_limit={ml!r} is not supported; give a number of bytes, a string such as "
                             f"'80%' or '2 GiB', or None")


_UNITS = {"b": 1, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3}


def memory_limit_bytes(limit, total: int) -> int:
    """``memory_limit`` in bytes for a device with ``total`` bytes."""
    if limit is None:
        return int(total * 0.8)
    if isinstance(limit, int):
        return limit
    text = limit.strip().lower().replace(" ", "")
    try:
        if text.endswith("%"):
            return int(total * float(text[:-1]) / 100)
        for unit in sorted(_UNITS, key=len, reverse=True):
            if text.endswith(unit):
                return int(float(text[: -len(unit)]) * _UNITS[unit])
        return int(float(text))
    except ValueError:
        raise ValueError(f"memory_limit={limit!r} cannot be read; give a number of bytes, a percentage such as "
                         f"'80%' or a size such as '2 GiB'") from None
