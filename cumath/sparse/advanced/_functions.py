"""The stateless sparse direct solve: a DirectSolver planned once per sparsity pattern and kept in the plan
cache; a call with new values of a cached pattern refactorizes and solves without planning.

``direct_solver`` is ``cached_call(key, make, operands)``: the key holds the sparsity pattern's fingerprint
(CRC-32s of the row offsets and column indices, see ``cumath.sparse._operand``), the operands' signatures, the
options, preferences, execution and stream.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..._core.execution import execution_key
from ..._core.options import check_options
from ..._core.plan_cache import cached_call
from ..._core.streams import stream_key
from ._options import (DirectSolverFactorizationPreferences, DirectSolverOptions, DirectSolverPlanPreferences,
                       DirectSolverSolutionPreferences)
from ._planner import DirectSolver, fingerprint, wrap_lhs, wrap_rhs

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["direct_solver"]

logger = logging.getLogger(__name__)


def _prefs(value, cls, what: str):
    return None if value is None else check_options(value, cls, what)


def _planned(a, b, options, execution, stream, preferences, hosts=None) -> DirectSolver:
    """A new DirectSolver of the call, its preferences applied and planned (a miss of the plan cache); ``hosts``:
    host copies of a's index arrays the call already made (the planning's structure check reads them)."""
    start = time.perf_counter()
    solver = DirectSolver(a, b, options=options, execution=execution, stream=stream)
    if hosts:
        solver._host_patterns = hosts
    if solver._log.isEnabledFor(logging.DEBUG):
        solver._log.debug("stateless call, a new plan: the solver made in %.3f ms",
                          (time.perf_counter() - start) * 1e3)
    try:
        configs = (solver.plan_config, solver.factorization_config, solver.solution_config)
        for prefs, config in zip(preferences, configs):
            if prefs is not None:
                for name in type(config)._FIELDS:
                    value = getattr(prefs, name)
                    if value is not None:
                        setattr(config, name, value)
        solver.plan()
    except BaseException:
        solver.free()
        raise
    return solver


def direct_solver(a: AnyTensor, b: AnyTensor, /, *, options: DirectSolverOptions | Mapping[str, Any] | None = None,
                  execution: ExecutionLike | None = None, stream: StreamLike = None, plan_preferences: Any = None,
                  factorization_preferences: Any = None, solution_preferences: Any = None) -> AnyTensor:
    """Solve ``a @ x = b`` for ``x`` (see :class:`DirectSolver` for the operands, the result and where it runs).

    Plans are cached by sparsity pattern: calling again with new values of the same pattern (same options and
    right-hand side layout) refactorizes the cached analysis and solves. ``plan_preferences``,
    ``factorization_preferences``, ``solution_preferences``: :class:`DirectSolverPlanPreferences` (and the
    factorization and solution ones), or dicts of their fields, applied before planning.

    >>> import numpy as np, scipy.sparse as sp, cumath
    >>> a = sp.csr_array(np.array([[4.0, 1, 0], [1, 3, 0], [0, 0, 2]]))
    >>> x = cumath.sparse.advanced.direct_solver(a, np.array([1.0, 2, 3]))
    >>> bool(np.allclose(a @ x, [1, 2, 3]))
    True
    """
    A, B = wrap_lhs(a), wrap_rhs(b)
    opts = options if options is None or type(options) is DirectSolverOptions else check_options(
        options, DirectSolverOptions, "sparse direct solver options")
    prefs = (_prefs(plan_preferences, DirectSolverPlanPreferences, "plan preferences"),
             _prefs(factorization_preferences, DirectSolverFactorizationPreferences, "factorization preferences"),
             _prefs(solution_preferences, DirectSolverSolutionPreferences, "solution preferences"))
    first_b = B[0] if isinstance(B, tuple) else B
    skey = None if stream is None and first_b.device_id is None else stream_key(stream, first_b)
    start = time.perf_counter()
    hosts = []
    fp = fingerprint(A, skey, hosts)  # (GPU index arrays: copied to the host, waited for, checksummed)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("stateless call: the sparsity pattern's fingerprint in %.3f ms", (time.perf_counter() - start)
                     * 1e3)
    key = (DirectSolver, A.signature, fp, B.signature, opts,
           execution if type(execution) is not dict else execution_key(execution), skey, prefs)
    return cached_call(key, lambda: _planned(A, B, opts, execution, stream, prefs, hosts), {"a": A, "b": B})
