"""The stateless contractions: a contraction planned once per kind of operands, kept in the plan cache.

A call on a planned kind costs: wrapping the operands, one key tuple built from their fields in one pass, the
cache lookup, the result's allocation and (GPU, binary) one native call of cutensorContract whose argument words
the plan keeps (see ``_backends/cutensor.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    if isinstance(qualifiers, np.ndarray):
        return (qualifiers.dtype.str if qualifiers.dtype.names is None else repr(qualifiers.dtype.descr),
                qualifiers.tobytes())
    try:
        return tuple(int(q) for q in qualifiers)
    except (TypeError, ValueError):
        return ("invalid", id(qualifiers))


def _w(x, name):
    return x if x is None or type(x) is Operand else wrap_operand(x, name)


def _align(ptr: int) -> int:
    """The largest power of two up to 256 dividing ``ptr`` (256 for 0): what a cuTENSOR plan assumes."""
    p = ptr | 256
    return p & -p


def _key(cls, expr, A, B, C, D, O, qualifiers, options, execution, stream):
    """Everything a plan depends on, in one flat tuple: the inputs' fields (package, device, shape, strides, dtype;
    ``C`` is None for binary contractions), the addend's and out's signatures (out's read-only flag: a read-only
    out is refused at planning), qualifiers, options, execution, stream and, on the GPU, the pointers'
    alignments."""
    dev = A.device_id
    return (cls, expr, A.package, dev, A.shape, A.strides, A.dtype, B.package, B.device_id, B.shape, B.strides,
            B.dtype, None if C is None else C.signature, None if D is None else D.signature,
            None if O is None else (O.signature, O.readonly),
            None if qualifiers is None else _qualifiers_key(qualifiers), options,
            None if execution is None else execution_key(execution),
            None if stream is None and dev is None else stream_key(stream, A),
            None if dev is None else (_align(A.ptr), _align(B.ptr), C and _align(C.ptr), O and _align(O.ptr)))


def _planned(cls, *args, **kwargs):
    op = cls(*args, **kwargs)
    try:
        op.plan()
    except BaseException:
        op.free()
        raise
    return op


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
    A = a if type(a) is Operand else wrap_operand(a, "a")
    B = b if type(b) is Operand else wrap_operand(b, "b")
    C = None if c is None else _w(c, "c")
    O = None if out is None else _w(out, "out")
    if options is not None and type(options) is not ContractionOptions:
        options = check_options(options, ContractionOptions, "contraction options")
    key = _key(BinaryContraction, expr, A, B, None, C, O, qualifiers, options, execution, stream)
    return cached_call(key, lambda: _planned(BinaryContraction, expr, A, B, c=C, out=O, qualifiers=qualifiers,
                                             options=options, execution=execution, stream=stream),
                       {"a": A, "b": B, "c": C, "out": O}, alpha=alpha, beta=beta)


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
    A, B, C = _w(a, "a"), _w(b, "b"), _w(c, "c")
    D = None if d is None else _w(d, "d")
    O = None if out is None else _w(out, "out")
    if options is not None and type(options) is not ContractionOptions:
        options = check_options(options, ContractionOptions, "contraction options")
    key = _key(TernaryContraction, expr, A, B, C, D, O, qualifiers, options, execution, stream)
    return cached_call(key, lambda: _planned(TernaryContraction, expr, A, B, C, d=D, out=O, qualifiers=qualifiers,
                                             options=options, execution=execution, stream=stream),
                       {"a": A, "b": B, "c": C, "d": D, "out": O}, alpha=alpha, beta=beta)
