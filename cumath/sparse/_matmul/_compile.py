"""Prologs, epilogs and semiring operators of the sparse matmul: Python functions to LTO-IR through numba-cuda,
cached by content in memory and on disk (the FFT callbacks' fingerprint of a function and toolchain).

Each compiled function is a device function with C linkage and a name of its own (``cumath_spmm_<kind>_<key>``)
that the generated SpMM kernels call: a prolog ``x -> x'`` applied to every element of a or b as it is read,
an epilog ``x -> x'`` applied to every result element before it is stored, and the semiring's ``add(x, y)``,
``atomic_add(ptr, x)`` and ``mul(x, y)`` replacing ``+``, the atomic accumulation and ``*``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import time
import types as pytypes

from ..._core.disk_cache import ContentStore, digest
from ..._core.numba_compat import EXTRA_HINT, import_numba_cuda, numba_cuda_version
from ...fft._compile import function_fingerprint, normalize_compute_capability, toolchain

if TYPE_CHECKING:
    from typing import Any
    from ..._core.typing import ComputeCapabilityLike, DTypeLike

__all__ = ["compile_matmul_prolog", "compile_matmul_epilog", "compile_matmul_add", "compile_matmul_atomic_add",
           "compile_matmul_mul", "symbol_of", "ARITY"]

logger = logging.getLogger(__name__)

_STORE = ContentStore("ltoir", suffix=".ltoir")
_KEY_VERSION = 1
ARITY = {"prolog": 1, "epilog": 1, "add": 2, "atomic_add": 2, "mul": 2}
_SCALARS = ("float16", "float32", "float64", "complex64", "complex128", "int32", "int64")


class MatmulLTOIR(bytes):
    """LTO-IR of a compiled operator (``bytes``) with what the kernel generator needs: ``kind``, ``dtype``,
    ``symbol``, ``operand_label`` (prologs)."""

    kind = dtype = symbol = operand_label = None


def symbol_of(kind: str, key: str) -> str:
    return f"cumath_spmm_{kind}_{key[:24]}"


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", None) or str(dtype)
    try:
        import numpy as np

        name = np.dtype(name).name
    except TypeError:
        pass
    if name not in _SCALARS:
        raise ValueError(f"dtype={dtype!r} is not supported; use one of {', '.join(_SCALARS)}")
    return name


def _signature(kind: str, dt: str):
    from numba import types

    el = getattr(types, dt)
    if kind == "atomic_add":
        return types.void(types.CPointer(el), el)
    return el(*([el] * ARITY[kind]))


def _compile(kind: str, fn, dtype, compute_capability, label=None) -> MatmulLTOIR:
    py = getattr(fn, "py_func", fn)
    if not isinstance(py, pytypes.FunctionType):
        raise TypeError(f"the {kind} must be a Python function of {ARITY[kind]} argument(s), not {type(fn).__name__}")
    if py.__code__.co_argcount != ARITY[kind]:
        raise TypeError(f"the {kind} must take {ARITY[kind]} argument(s); {py.__qualname__} takes "
                        f"{py.__code__.co_argcount}")
    dt = _dtype_name(dtype)
    if numba_cuda_version() is None:
        raise ImportError(f"compiling a matmul {kind} needs numba-cuda, which is not installed; install it with "
                          f"{EXTRA_HINT}")
    cc = normalize_compute_capability(compute_capability)
    parts, persistent = function_fingerprint(py)
    key = digest("cumath.sparse matmul operator", _KEY_VERSION, kind, dt, cc, toolchain(), parts)
    symbol = symbol_of(kind, key)
    t0 = time.perf_counter()

    def make():
        cuda = import_numba_cuda(feature=f"compile_matmul_{kind}")
        code, _ = cuda.compile(py, _signature(kind, dt), device=True, abi="c", abi_info={"abi_name": symbol},
                               output="ltoir", cc=cc)
        logger.info("compiled matmul %s %s for %s to %d bytes of LTO-IR (sm_%d%d) in %.2f s", kind, py.__qualname__,
                    dt, len(code), cc[0], cc[1], time.perf_counter() - t0)
        return bytes(code), {"kind": kind, "dtype": dt, "symbol": symbol, "compute_capability": list(cc)}

    entry = _STORE.get_or_make(key, make, disk=persistent)
    ir = MatmulLTOIR(entry.data)
    ir.kind, ir.dtype, ir.symbol, ir.operand_label = kind, dt, symbol, label
    return ir


def compile_matmul_prolog(prolog: Any, *, operand_label: Any, dtype: DTypeLike,
                          compute_capability: ComputeCapabilityLike | None = None) -> MatmulLTOIR:
    """Compile a unary function ``x -> x'`` applied to each element of operand ``operand_label`` ('a' or 'b')
    as the product reads it. Returns LTO-IR (``bytes``) for ``Matmul.plan(prologs={'a': ...})``."""
    if operand_label not in ("a", "b", "c"):
        raise ValueError(f"operand_label={operand_label!r} is not supported; use 'a', 'b' or 'c'")
    return _compile("prolog", prolog, dtype, compute_capability, operand_label)


def compile_matmul_epilog(epilog: Any, *, dtype: DTypeLike,
                          compute_capability: ComputeCapabilityLike | None = None) -> MatmulLTOIR:
    """Compile a unary function applied to each result element before it is stored."""
    return _compile("epilog", epilog, dtype, compute_capability)


def compile_matmul_add(add: Any, *, dtype: DTypeLike,
                       compute_capability: ComputeCapabilityLike | None = None) -> MatmulLTOIR:
    """Compile the semiring's addition ``add(x, y)``."""
    return _compile("add", add, dtype, compute_capability)


def compile_matmul_atomic_add(atomic_add: Any, *, dtype: DTypeLike,
                              compute_capability: ComputeCapabilityLike | None = None) -> MatmulLTOIR:
    """Compile the semiring's atomic accumulation ``atomic_add(ptr, x)`` (``ptr[0] = add(ptr[0], x)``
    atomically)."""
    return _compile("atomic_add", atomic_add, dtype, compute_capability)


def compile_matmul_mul(mul: Any, *, dtype: DTypeLike,
                       compute_capability: ComputeCapabilityLike | None = None) -> MatmulLTOIR:
    """Compile the semiring's multiplication ``mul(x, y)``."""
    return _compile("mul", mul, dtype, compute_capability)
