"""The stateless contractions: a contraction planned once per kind of operands, kept in the plan cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools

import numpy as np

from .._core.execution import execution_key
from .._core.operand import Operand, wrap_operand
from .._core.options import check_options
from .._core.plan_cache import cached_call
from .._core.streams import stream_key
from ._options import ContractionOptions
from ._planner import BinaryContraction, TernaryContraction

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from .._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["binary_contraction", "ternary_contraction"]


def _qualifiers_key(qualifiers):
    if qualifiers is None:
        return None
    if isinstance(qualifiers, np.ndarray):
        return (qualifiers.dtype.str if qualifiers.dtype.names is None else repr(qualifiers.dtype.descr),
                qualifiers.tobytes())
    try:
        return tuple(int(q) for q in qualifiers)
    except (TypeError, ValueError):
        return ("invalid", id(qualifiers))


def _w(x, name):
    if x is None:
        return None
    if type(x) is Operand:
        return x
    if isinstance(x, np.generic):  # a NumPy scalar is no array: read it as a 0-d one
        x = np.asarray(x)
    return wrap_operand(x, name)


def _sig(op):
    return None if op is None else (op.signature, op.readonly)


def _planned(cls, *args, **kwargs):
    op = cls(*args, **kwargs)
    try:
        op.plan()
    except BaseException:
        op.free()
        raise
    return op


def _key(cls, expr, ops, qualifiers, options, execution, stream, first):
    if options is not None and type(options) is not ContractionOptions:
        options = check_options(options, ContractionOptions, "contraction options")
    return (cls, expr, *(_sig(o) for o in ops), _qualifiers_key(qualifiers), options,
            None if execution is None else execution_key(execution),
            None if stream is None and first.device_id is None else stream_key(stream, first),
            # cuTENSOR plans assume the pointers' alignment
            None if first.device_id is None else tuple(min(256, o.ptr & -o.ptr) if o.ptr else 256
                                                       for o in ops if o is not None)), options


def binary_contraction(expr: str, a: AnyTensor, b: AnyTensor, *, c: AnyTensor = None, alpha: complex = 1.0,
                       beta: complex | None = None, out: AnyTensor = None, qualifiers: Any = None,
                       options: ContractionOptions | Mapping[str, Any] | None = None,
                       execution: ExecutionLike | None = None, stream: StreamLike = None) -> AnyTensor:
    """``alpha * einsum(expr, a, b) + beta * c`` (see :class:`BinaryContraction`); plans are cached, so repeated
    calls on operands of one kind plan once.

    >>> import numpy as np, cumath
    >>> a, b = np.random.rand(3, 4), np.random.rand(4, 5)
    >>> np.allclose(cumath.tensor.binary_contraction("ij,jk->ik", a, b), a @ b)
    True
    """
    A, B, C, O = _w(a, "a"), _w(b, "b"), _w(c, "c"), _w(out, "out")
    key, options = _key(BinaryContraction, expr, (A, B, C, O), qualifiers, options, execution, stream, A)
    make = functools.partial(_planned, BinaryContraction, expr, A, B, c=C, out=O, qualifiers=qualifiers,
                             options=options, execution=execution, stream=stream)
    return cached_call(key, make, {"a": A, "b": B, "c": C, "out": O}, alpha=alpha, beta=beta)


def ternary_contraction(expr: str, a: AnyTensor, b: AnyTensor, c: AnyTensor, *, d: AnyTensor = None,
                        alpha: complex = 1.0, beta: complex | None = None, out: AnyTensor = None,
                        qualifiers: Any = None, options: ContractionOptions | Mapping[str, Any] | None = None,
                        execution: ExecutionLike | None = None, stream: StreamLike = None) -> AnyTensor:
    """``alpha * einsum(expr, a, b, c) + beta * d`` (see :class:`TernaryContraction`); plans are cached.

    >>> import numpy as np, cumath
    >>> a, b, c = np.random.rand(3, 4), np.random.rand(4, 5), np.random.rand(5, 2)
    >>> np.allclose(cumath.tensor.ternary_contraction("ij,jk,kl->il", a, b, c), a @ b @ c)
    True
    """
    A, B, C, D, O = _w(a, "a"), _w(b, "b"), _w(c, "c"), _w(d, "d"), _w(out, "out")
    key, options = _key(TernaryContraction, expr, (A, B, C, D, O), qualifiers, options, execution, stream, A)
    make = functools.partial(_planned, TernaryContraction, expr, A, B, C, d=D, out=O, qualifiers=qualifiers,
                             options=options, execution=execution, stream=stream)
    return cached_call(key, make, {"a": A, "b": B, "c": C, "d": D, "out": O}, alpha=alpha, beta=beta)
