"""The stateless sparse matmul: a Matmul planned once per sparsity pattern and kept in the plan cache."""

from __future__ import annotations

import numpy as np

from ..._core.execution import execution_key
from ..._core.options import check_options
from ..._core.plan_cache import cached_call
from ..._core.streams import stream_key
from ._options import MatmulOptions
from ._planner import Matmul, wrap_a, wrap_dense

__all__ = ["matmul"]


def _pattern_key(A, stream):
    """The sparsity pattern's fingerprint (CRC-32 of every index array; GPU ones are read back, logged)."""
    import zlib

    from .._operand import host_arrays

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


def matmul(a, b, /, c=None, *, alpha=None, beta=None, qualifiers=None, prologs=None, epilog=None, semiring=None,
           compute_capability=None, options=None, execution=None, stream=None):
    """``alpha * op(a) @ op(b) + beta * c`` with a sparse ``a`` (see :class:`Matmul` for operands and results).

    Plans are cached by the operands' kinds and ``a``'s sparsity pattern: calling again with new values of the
    same pattern reuses the analysis.

    >>> import numpy as np, scipy.sparse as sp, cumath
    >>> a = sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0]]))
    >>> cumath.sparse.matmul(a, np.ones((3, 2))).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """
    A, B = wrap_a(a), wrap_dense(b, "b")
    C = None if c is None else wrap_dense(c, "c")
    if options is not None and type(options) is not MatmulOptions:
        options = check_options(options, MatmulOptions, "sparse matmul options")
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
