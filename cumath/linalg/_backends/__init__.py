"""Engines of the generic matmul, behind one small protocol, and the registry that picks one per execution space:
``blas`` (CPU CBLAS: OpenBLAS or MKL) and ``cublas`` (GPU).

An engine compiles the backend-neutral steps of a plan (``linalg/_generic/traits.py``) into calls of its
library: ``compile(steps)`` gives one ``run(ptrs)`` per step, ``gemm_call(step)`` the single general product
of a one-call plan as the raw library function and its fixed arguments (so that the executor's hot path calls
the library itself). alpha and beta live in the engine's :class:`Scalars`.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple, Protocol

import numpy as np

from .._generic.traits import Ptr

__all__ = ["Engine", "GemmCall", "Scalars", "ENGINES", "create_engine", "gemm_call"]

#: execution space -> the engine module (each defines ``create(dtype, placement, options, log, handle=None)``)
ENGINES = {"cpu": "blas", "cuda": "cublas"}

_NAMES = ("alpha", "beta", "one", "zero")


class Scalars:
    """alpha, beta, one and zero in host memory, as the library's functions take them: ``args[name]`` is the
    value itself (``by_value``: CBLAS's real routines) or its address (CBLAS's complex routines, cuBLAS in host
    pointer mode). ``args`` is updated in place by ``set``, so callers may keep a reference to it."""

    def __init__(self, dtype: str, by_value: bool):
        self.values = np.zeros(4, dtype=dtype)
        self.values[2] = 1
        item = self.values.itemsize
        self._addr = {n: self.values.ctypes.data + i * item for i, n in enumerate(_NAMES)}
        self.by_value = by_value
        self.args = dict(self._addr)
        self.set(1, 0)

    def set(self, alpha, beta) -> None:
        self.values[0] = alpha
        self.values[1] = beta
        if self.by_value:
            self.args.update(zip(_NAMES, self.values.tolist()))

    def value(self, name: str):
        """The NumPy scalar of ``name``."""
        return self.values[_NAMES.index(name)]

    def address(self, name: str) -> int:
        return self._addr[name]


class GemmCall(NamedTuple):
    """A plan's one general product, ready to call: ``fn(*head, args[alpha], ptr(first), ld_first, ptr(second),
    ld_second, args[beta], ptr(d), ld_d)`` where ``first``/``second`` name operands 'a' or 'b' and ``args`` is
    the engine's ``Scalars.args``; ``check``: None, or ``check(status, what)`` for a function that returns a
    status (cuBLAS)."""

    fn: object
    head: tuple
    alpha: str
    first: str
    ld_first: int
    second: str
    ld_second: int
    beta: str
    ld_d: int
    check: object


def gemm_call(step, ops: dict, fn, first: tuple, check) -> GemmCall | None:
    """The GemmCall of a plan step that is one general product at offset 0 (None for any other step): ``ops``
    maps the step's transpose letters to the library's values (a letter it lacks: None), ``fn`` is the library's
    gemm, ``first`` the leading arguments before the transposes (cuBLAS's handle, CBLAS's layout)."""
    if step.routine != "gemm" or len(step.offsets) != 1 or any(step.offsets[0]):
        return None
    args = step.args
    if any(a.offset for a in args if isinstance(a, Ptr)) or args[0] not in ops or args[1] not in ops:
        return None
    head = (*first, ops[args[0]], ops[args[1]], args[2], args[3], args[4])
    return GemmCall(fn(), head, args[5], args[6].name.lower(), args[7], args[8].name.lower(), args[9], args[10],
                    args[12], check)


class Engine(Protocol):
    """What the executors need from an engine."""

    space: str  # 'cpu' or 'cuda'
    dtype: str
    threaded: bool  # enter()/exit() set a thread count around each execution
    caps: object  # traits.Caps: what the library can do
    scalars: Scalars

    @property
    def description(self) -> str: ...

    def compile(self, steps) -> list: ...

    def gemm_call(self, step) -> GemmCall | None: ...

    def enter(self): ...

    def exit(self, token) -> None: ...

    def free(self) -> None: ...


def create_engine(space: str, dtype: str, placement, options, log, handle=None) -> Engine:
    """The engine of execution space ``space`` ('cpu' or 'cuda') for one plan; ``handle``: a library handle
    the engine shares rather than owns (explicit batches)."""
    module = importlib.import_module(f"{__name__}.{ENGINES[space]}")
    return module.create(dtype, placement, options, log, handle)
