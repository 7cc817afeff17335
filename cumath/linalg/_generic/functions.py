"""The stateless generic matmul: a Matmul planned once and kept in the plan cache, executed per call."""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools

import numpy as np

from ..._core.execution import execution_key
from ..._core.operand import Operand, wrap_operand
from ..._core.options import check_options, snapshot
from ..._core.plan_cache import cached_call
from ..._core.streams import stream_key
from .options import MatmulOptions
from .batch import MatmulBatch
from .planner import BETA_WITHOUT_C, SEQUENCES, Matmul

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["matmul"]


def _qualifiers_key(qualifiers):
    q = np.asarray(qualifiers)
    if q.dtype.names is None:
        return False  # invalid: let Matmul() raise the error
    return (q.dtype.descr.__repr__(), q.tobytes())


def _planned(a, b, c, alpha, beta, qualifiers, options, execution, stream) -> Matmul:
    """A new planned Matmul (a plan-cache miss)."""
    mm = Matmul(a, b, c, alpha=alpha, beta=beta, qualifiers=qualifiers, options=options, execution=execution,
                stream=stream)
    try:
        mm.plan()
    except BaseException:
        mm.free()
        raise
    return mm


def matmul(a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, alpha: complex | None = None,
           beta: complex | None = None, qualifiers: Any = None,
           options: MatmulOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
           stream: StreamLike = None) -> AnyTensor:
    """The matrix product ``alpha * a @ b + beta * c`` (numpy.matmul semantics; see :class:`Matmul`).

    ``a``, ``b``, ``c``: NumPy, CuPy or PyTorch arrays (CPU or CUDA) of one dtype (float32, float64,
    complex64, complex128), or sequences of them (explicit batching: a list of results). ``beta`` is
    required with ``c``. ``qualifiers``: an array of ``matrix_qualifiers_dtype`` for a, b (and c).
    ``options``: :class:`MatmulOptions` or a dict (``{"inplace": True}`` writes the result into ``c``).
    ``execution``: 'cpu', 'cuda', ExecutionCPU(...) or ExecutionCUDA(...); by default where the operands are.
    Plans are cached (``cumath.config.plan_cache``), so repeated calls on operands of one kind plan once
    (explicit batches are planned per call).

    >>> import numpy as np, cumath
    >>> a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    >>> np.allclose(cumath.linalg.matmul(a, b), a @ b)
    True
    """
    if isinstance(a, SEQUENCES) or isinstance(b, SEQUENCES):
        with MatmulBatch(a, b, c, alpha=alpha, beta=beta, qualifiers=qualifiers, options=options,
                         execution=execution, stream=stream) as mm:
            mm.plan()
            return mm.execute()
    qkey = None if qualifiers is None else _qualifiers_key(qualifiers)
    if qkey is False:
        return Matmul(a, b, c, qualifiers=qualifiers)  # raises the qualifiers' TypeError
    A = a if type(a) is Operand else wrap_operand(a, "a")  # (internal callers may pass wrapped operands)
    B = b if type(b) is Operand else wrap_operand(b, "b")
    C = None if c is None else (c if type(c) is Operand else wrap_operand(c, "c"))
    if options is not None:  # the frozen snapshot of settable options: the key cannot change under the cache
        options = snapshot(options) if type(options) is MatmulOptions else check_options(options, MatmulOptions,
                                                                                          "matmul options")
    if C is not None and beta is None:
        raise ValueError(BETA_WITHOUT_C)
    key = (Matmul, A.signature, A.readonly, B.signature, None if C is None else (C.signature, C.readonly), qkey,
           options, None if execution is None else execution_key(execution),
           None if stream is None and A.device_id is None else stream_key(stream, A))

    make = functools.partial(_planned, A, B, C, alpha, beta, qualifiers, options, execution, stream)
    return cached_call(key, make, {"a": A, "b": B, "c": C}, alpha, beta)
