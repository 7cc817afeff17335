"""``cumath.distributed.distribution``: how a global array is split over the ranks, and moving it between splits.

The distributions (``ProcessGrid``, ``Slab``, ``Box``, ``BlockCyclic``, ``BlockNonCyclic``) are pure data
(``_distributions``, which every operation builds on); ``Redistribute`` / ``redistribute`` move an array from one
to another (``_redistribute_op``), as in nvmath-python's ``nvmath.distributed.distribution``.
"""

from __future__ import annotations

from ._distributions import (BlockCyclic, BlockNonCyclic, Box, Distribution, ProcessGrid, Slab, SlabPartition,
                             balanced_range)
from ._redistribute_op import Redistribute, redistribute

__all__ = ["Distribution", "ProcessGrid", "Slab", "Box", "BlockCyclic", "BlockNonCyclic", "balanced_range",
           "Redistribute", "redistribute", "SlabPartition"]
