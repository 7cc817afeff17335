"""The stateless generic matmul: a Matmul object, planned once and kept in the plan cache, executed per call."""

from __future__ import annotations

import numpy as np

from ..._core.cache import plan_cache
from ..._core.operand import wrap_operand
from ..._core.options import check_options
from ..._core.execution import execution_key
from ..._core.streams import stream_key
from .options import MatmulOptions
from .planner import Matmul, _is_sequence

__all__ = ["matmul"]


def _qualifiers_key(qualifiers):
    if qualifiers is None:
        return None
    q = np.asarray(qualifiers)
    if q.dtype.names is None:
        return False  # invalid: let Matmul() raise the error
    return (q.dtype.descr.__repr__(), q.tobytes())


def matmul(a, b, /, c=None, *, alpha=None, beta=None, qualifiers=None, options=None, execution=None, stream=None):
    """The matrix product ``alpha * a @ b + beta * c`` (numpy.matmul semantics; see :class:`Matmul`).

    ``a``, ``b``, ``c``: NumPy, CuPy or PyTorch arrays (CPU or CUDA) of one dtype (float32, float64,
    complex64, complex128), or sequences of them (explicit batching: a list of results). ``beta`` is
    required with ``c``. ``qualifiers``: an array of ``matrix_qualifiers_dtype`` for a, b (and c).
    ``options``: :class:`MatmulOptions` or a dict (``{"inplace": True}`` writes the result into ``c``).
    ``execution``: 'cpu', 'cuda', ExecutionCPU(...) or ExecutionCUDA(...); by default where the operands are.
    Plans are cached (``cumath.config.plan_cache``), so repeated calls on operands of one kind plan once.

    >>> import numpy as np, cumath
    >>> a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    >>> np.allclose(cumath.linalg.matmul(a, b), a @ b)
    True
    """
    if not plan_cache.enabled or _is_sequence(a) or _is_sequence(b):
        with Matmul(a, b, c, alpha=alpha, beta=beta, qualifiers=qualifiers, options=options, execution=execution,
                    stream=stream) as mm:
            mm.plan()
            return mm.execute()
    qkey = _qualifiers_key(qualifiers)
    if qkey is False:
        return Matmul(a, b, c, qualifiers=qualifiers)  # raises the qualifiers' TypeError
    A, B = wrap_operand(a, "a"), wrap_operand(b, "b")
    C = None if c is None else wrap_operand(c, "c")
    if options is not None and type(options) is not MatmulOptions:
        options = check_options(options, MatmulOptions, "matmul options")
    skey = stream_key(stream, A)
    key = ("linalg.matmul", A.signature, A.readonly, B.signature, None if C is None else (C.signature, C.readonly),
           qkey, options, execution_key(execution), skey)
    mm = plan_cache.get(key)
    if mm is None:
        mm = Matmul(A, B, C, alpha=alpha, beta=beta, qualifiers=qualifiers, options=options, execution=execution,
                    stream=stream)
        try:
            mm.plan()
            result = mm.execute()
        except BaseException:
            mm.free()
            raise
        mm._last_scalars = (alpha, beta)
        mm.release_operands()
        plan_cache.put(key, mm, mm.nbytes)  # after executing: put() may evict (and free) this very plan
        return result
    if C is not None and beta is None:
        raise ValueError("beta must be given with c (the result is alpha * a @ b + beta * c)")
    mm._ops = {"a": A, "b": B, "c": C}
    mm._released = False
    scalars = (alpha, beta)
    if scalars != mm._last_scalars:  # converted and set only when they change between calls
        mm._alpha = mm._scalar_of(alpha, 1, "alpha")
        mm._beta = mm._scalar_of(beta if C is not None else None, 0, "beta")
        mm._engine.scalars.set(mm._alpha, mm._beta)
        mm._last_scalars = scalars
    try:
        return mm.execute()
    finally:
        mm._ops = {"a": None, "b": None, "c": None}
        mm._released = True
