"""``Redistribute`` / ``redistribute``: move a distributed array to another distribution."""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

import numpy as np

from .._core.lifecycle import Stateful, requires
from ._context import require_context
from ._operands import gather_layout, host_view, target_indices, wrap_result
from ._redistribute import plan_exchange

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any
    from .._core.typing import AnyTensor

__all__ = ["Redistribute", "redistribute"]

logger = logging.getLogger(__name__)


class Redistribute(Stateful):
    """A planned move of a distributed array from ``input_distribution`` to ``output_distribution``.

    Every rank constructs it with its own piece (``operand``) and the distributions (Slab, Box: this rank's box,
    BlockCyclic, BlockNonCyclic); ``plan()`` works out who sends what to whom; ``execute()`` moves the data in one
    all-to-all and returns this rank's piece of the result, a new array of the operand's package (C order).
    ``reset_operand(x)`` takes another piece of the same shape and dtype.

    Example (every rank)::

        x = np.random.rand(nx_local, 64, 64)            # a Slab.X piece
        y = cumath.distributed.redistribute(x, Slab.X, Slab.Y)
    """

    _STATES = {"planned": ("_planned", "needs a plan: call plan() first")}

    def __init__(self, operand: AnyTensor, input_distribution: Any, output_distribution: Any, *,
                 global_shape: Sequence[int] | None = None) -> None:
        self._ctx = require_context()
        self._group = self._ctx.process_group
        self._arr, self._package = host_view(operand, "operand")
        self._in, self._out = input_distribution, output_distribution
        self._group.agree("Redistribute", dtype=self._arr.dtype.str, input=_name(input_distribution),
                          output=_name(output_distribution), ndim=self._arr.ndim)
        self.global_shape, self._src = gather_layout(self._group, self._arr.shape, input_distribution, "input",
                                                     global_shape)
        self._dst = target_indices(self._group, output_distribution, self.global_shape, "output")
        self._exchange = None

    def plan(self) -> None:
        self._exchange = plan_exchange(self._src, self._dst, self._group.rank)
        self._planned = True
        if logger.isEnabledFor(logging.INFO):
            logger.info("redistribution planned: rank %d sends %d and receives %d elements", self._group.rank,
                        int(self._exchange.send_counts.sum()), int(self._exchange.recv_counts.sum()))

    @requires("planned")
    def reset_operand(self, operand: AnyTensor) -> None:
        arr, package = host_view(operand, "operand")
        if arr.shape != self._arr.shape or arr.dtype != self._arr.dtype:
            raise ValueError(f"reset_operand: the new operand has shape {arr.shape} and dtype {arr.dtype}, the "
                             f"planned one {self._arr.shape} and {self._arr.dtype}; create a new Redistribute")
        self._arr, self._package = arr, package

    @requires("planned")
    def execute(self) -> AnyTensor:
        self._group.agree("Redistribute.execute")
        return wrap_result(self._exchange.execute(self._group, self._arr), self._package)

    def _release(self) -> None:
        self._exchange = None
        self._arr = None


def _name(dist) -> str:
    from ._distributions import Box

    return "Box" if isinstance(dist, Box) else repr(dist)


def redistribute(operand: AnyTensor, input_distribution: Any, output_distribution: Any, *,
                 global_shape: Sequence[int] | None = None) -> AnyTensor:
    """This rank's piece of ``operand`` moved from ``input_distribution`` to ``output_distribution`` (collective)."""
    with Redistribute(operand, input_distribution, output_distribution, global_shape=global_shape) as op:
        op.plan()
        return op.execute()
