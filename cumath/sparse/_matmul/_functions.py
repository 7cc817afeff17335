"""The stateless sparse matmul: a Matmul planned once per sparsity pattern and kept in the plan cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._core.execution import execution_key
from ..._core.options import check_options
from ..._core.plan_cache import cached_call
from ..._core.streams import stream_key
from ._options import MatmulOptions
from ._planner import Matmul, wrap_a, wrap_dense

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ComputeCapabilityLike, ExecutionLike, StreamLike

__all__ = ["matmul"]


#: the options of a stateless call that names none: MKL reads the caller's arrays at every call (no inspector
#: copy of the pattern, which a plan found by the arrays' addresses could not trust)
_STATELESS = MatmulOptions(expected_calls=0)


def _pattern_key(A, stream):
    """What a cached plan depends on of the sparsity pattern. CSR and CSC run on the caller's index arrays
    themselves (the plan keeps them alive, the engines read them at every call): their addresses. Other formats
    are read through a gather planned from the pattern, and a Universal Sparse Tensor that a generated kernel
    reads has tables made from it (DIA's row ranges): a CRC-32 of every index array (GPU ones are read back,
    logged)."""
    import zlib

    from .._operand import host_arrays

    if A.format in ("csr", "csc"):
        return tuple(op.ptr for op in A.index.values())
    crcs = []
    for op in A.index.values():
        arr = np.ascontiguousarray(host_arrays(op, stream))
        crcs.append(zlib.crc32(arr))
    return tuple(crcs)


def _planned(A, B, C, alpha, beta, qualifiers, options, execution, stream, plan_args):
    mm = Matmul(A, B, C, alpha=alpha, beta=beta, qualifiers=qualifiers, options=options, execution=execution,
                stream=stream)
    try:
        mm.plan(**plan_args)
    except BaseException:
        mm.free()
        raise
    return mm


def matmul(a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, alpha: complex | None = None,
           beta: complex | None = None, qualifiers: Any = None, prologs: Any = None, epilog: Any = None,
           semiring: Any = None, compute_capability: ComputeCapabilityLike | None = None,
           options: MatmulOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
           stream: StreamLike = None) -> AnyTensor:
    """``alpha * op(a) @ op(b) + beta * c`` with a sparse ``a`` (see :class:`Matmul` for operands and results).

    Plans are cached by the operands' kinds and ``a``'s sparsity pattern (for CSR and CSC: the index arrays
    themselves, which the engines read at every call; for other formats: a checksum of the pattern): calling again
    with new values reuses the plan. Without ``options``, MKL's inspector is not used (``expected_calls=0``):
    the cached plan reads the caller's arrays at every call.

    >>> import numpy as np, scipy.sparse as sp, cumath
    >>> a = sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0]]))
    >>> cumath.sparse.matmul(a, np.ones((3, 2))).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """
    if options is None:
        options = _STATELESS
    elif type(options) is not MatmulOptions:
        options = check_options(options, MatmulOptions, "sparse matmul options")
    A, B = wrap_a(a, options), wrap_dense(b, "b")
    C = None if c is None else wrap_dense(c, "c")
    plan_args = {k: v for k, v in (("prologs", prologs), ("epilog", epilog), ("semiring", semiring),
                                   ("compute_capability", compute_capability)) if v is not None}
    if plan_args:  # user code in the plan: not cached
        with _planned(A, B, C, alpha, beta, qualifiers, options, execution, stream, plan_args) as mm:
            return mm.execute()
    skey = None if stream is None and A.device_id is None else stream_key(stream, B)
    qkey = None if qualifiers is None else (np.asarray(qualifiers).dtype.str, np.asarray(qualifiers).tobytes())
    key = (Matmul, A.signature, _pattern_key(A, skey), B.signature, None if C is None else (C.signature, C.readonly),
           qkey, options, None if execution is None else execution_key(execution), skey)
    return cached_call(key, lambda: _planned(A, B, C, alpha, beta, qualifiers, options, execution, stream, {}),
                       {"a": A, "b": B, "c": C}, alpha, beta)
