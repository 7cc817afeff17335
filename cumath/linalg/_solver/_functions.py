"""The stateless dense direct solver: a DirectSolver planned once per problem kind and kept in the plan cache;
each call factorizes and solves its own operands with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._core.execution import execution_key
from ..._core.options import check_options
from ..._core.plan_cache import cached_call
from ..._core.streams import stream_key
from ._options import DirectSolverOptions
from ._planner import DirectSolver, is_sequence, wrap

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["direct_solver"]


def direct_solver(a: AnyTensor, b: AnyTensor, *, options: DirectSolverOptions | Mapping[str, Any] | None = None,
                  execution: ExecutionLike | None = None, stream: StreamLike = None) -> AnyTensor:
    """Solve ``a @ x = b`` for x (see :class:`DirectSolver` for the operands, options and errors).

    ``a``: ``(n, n)`` or ``(*batch, n, n)``; ``b``: ``(*batch, n)`` or ``(*batch, n, k)``; or lists of them
    (explicit batching: a list of solutions). NumPy, CuPy or PyTorch arrays (CPU or CUDA) of one dtype
    (float32, float64, complex64, complex128). ``options``: :class:`DirectSolverOptions` or a dict
    (``{"matrix_type": "spd"}``: Cholesky). ``execution``: 'cpu', 'cuda', ExecutionCPU(...) or
    ExecutionCUDA(...); by default where the operands are. Plans are cached (``cumath.config.plan_cache``): a
    second call on operands of the same kind factorizes and solves with the plan of the first (explicit batches
    are planned per call).

    >>> import numpy as np, cumath
    >>> a = np.array([[4.0, 1.0], [2.0, 3.0]]); b = np.array([1.0, 2.0])
    >>> np.allclose(a @ cumath.linalg.direct_solver(a, b), b)
    True
    """
    if is_sequence(a) or is_sequence(b):
        with DirectSolver(a, b, options=options, execution=execution, stream=stream) as solver:
            solver.plan()
            return solver.execute()
    A, B = wrap(a, "a"), wrap(b, "b")
    if options is not None and type(options) is not DirectSolverOptions:
        options = check_options(options, DirectSolverOptions, "direct solver options")
    key = (DirectSolver, A.signature, A.readonly, B.signature, B.readonly, options,
           None if execution is None else execution_key(execution),
           None if stream is None and A.device_id is None else stream_key(stream, A))

    def make():
        solver = DirectSolver(A, B, options=options, execution=execution, stream=stream)
        try:
            solver.plan()
        except BaseException:
            solver.free()
            raise
        return solver

    return cached_call(key, make, {"a": A, "b": B})
