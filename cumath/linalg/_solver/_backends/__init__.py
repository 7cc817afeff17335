"""Engines of the dense direct solver, behind one small protocol, and the registry that picks one per plan:
``lapack`` (CPU: LAPACK getrf/getrs, potrf/potrs, over threads for batches), ``cusolver`` (GPU: one cuSOLVER
64-bit call per system), ``cublas_batched`` (GPU: one pointer-array call for a whole batch of small
systems: cuBLAS getrfBatched/getrsBatched for LU, cuSOLVER potrfBatched/potrsBatched for Cholesky) and
``small_lu`` (GPU: cumath's own kernels for LU of order up to 32, factorization, check and solve in one launch).

An engine turns the addresses of the factor storage and of the right-hand sides into *programs*: lists of
``(fn, args)`` whose every entry is one native call (``fn`` the bound ctypes function; it returns None on the CPU,
a status on the GPU, where a non-zero status is passed to ``engine.failed``). The executors run programs
themselves, so a cached stateless call reaches the library within the frame budget. Programs are cached per
address: plans that work in buffers of their own build them once. After a factorization ``read_back(a_base)``
gives the ``info`` of every system and the magnitudes of the factors' diagonals (one row per system; None where
the engine cannot read them cheaply), with one synchronisation on the GPU; a GPU engine whose pivot kernel judged
every system fine on the device gives (None, None).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["Engine", "Problems", "ProgramCache", "ENGINES", "KERNEL_ENV", "kernel_enabled", "create_engine"]

#: engine choice -> module ('cpu': the CPU engine; 'loop' / 'batched': the GPU libraries' two ways to run a batch;
#: 'kernel': cumath's own LU kernels for small systems)
ENGINES = {"cpu": "lapack", "loop": "cusolver", "batched": "cublas_batched", "kernel": "small_lu"}

KERNEL_ENV = "CUMATH_SOLVER_KERNEL"  # '0', 'off', 'false' or 'no': batch_method='auto' uses the libraries instead


def kernel_enabled() -> bool:
    """Whether batch_method='auto' may pick the small-system kernels (the environment variable
    ``CUMATH_SOLVER_KERNEL``; read at each plan)."""
    return os.environ.get(KERNEL_ENV, "").strip().lower() not in ("0", "off", "false", "no")


@dataclass(frozen=True, eq=False)
class Problems:
    """What an engine runs: the geometry, the layouts, and per system the byte offsets of its matrix in the
    factor storage (``a_offsets``) and of its right-hand sides in b/x (``b_offsets``) from the base addresses
    the programs are built for."""

    geom: object  # _traits.Geometry
    factor: object  # _traits.FactorLayout
    rhs: object  # _traits.RhsLayout
    a_offsets: np.ndarray
    b_offsets: np.ndarray
    a_base: int = 0  # an address of the factor storage at planning (workspace queries take one)
    # where the plan copies a into its factor buffer: (byte offsets of a's systems from its address, a's row and
    # column strides in elements), for an engine that reads a itself while it factorizes (``reads_a``)
    a_source: tuple | None = None
    # likewise where the plan copies b into x: (byte offsets, b's row stride, column stride) for ``reads_b``
    b_source: tuple | None = None


class ProgramCache:
    """An engine's recent programs by (phase, addresses): ``factor_program``, ``solve_program`` and
    ``fused_program`` are built once per address by the engine's ``_factor_calls`` / ``_solve_calls`` /
    ``_fused_calls``, and ``_finish_program(prog)`` (identity by default) prepares a new one. Addresses change
    with every new caller-owned operand, so only the recent ones are kept."""

    KEEP = 8

    def _programs(self) -> dict:
        cache = self.__dict__.get("_cache")
        if cache is None:
            cache = self.__dict__["_cache"] = {}
        return cache

    def _program(self, key, build):
        cache = self._programs()
        prog = cache.get(key)
        if prog is None:
            prog = self._finish_program(build())
            if len(cache) >= self.KEEP:
                cache.pop(next(iter(cache)))
            cache[key] = prog
        return prog

    def _finish_program(self, prog):
        return prog

    def factor_program(self, a_base: int):
        return self._program(("f", a_base), lambda: self._factor_calls(a_base))

    def solve_program(self, a_base: int, b_base: int):
        return self._program(("s", a_base, b_base), lambda: self._solve_calls(a_base, b_base))

    def fused_program(self, a_base: int, b_base: int):
        return self._program(("fs", a_base, b_base), lambda: self._fused_calls(a_base, b_base))

    def _clear_programs(self) -> None:
        self.__dict__.pop("_cache", None)


class Engine(Protocol):
    space: str  # 'cpu' or 'cuda'
    description: str
    routines: tuple  # the library routines it calls, for the log
    threads: int  # CPU: worker threads a program is split across (1: the calling thread)
    nbytes: int  # workspaces and pivots it holds

    def factor_program(self, a_base: int) -> list: ...

    def solve_program(self, a_base: int, b_base: int) -> list: ...

    def fused_program(self, a_base: int, b_base: int) -> list: ...

    def run(self, program) -> None: ...

    def read_back(self, a_base: int, pivots: bool = True) -> tuple: ...

    def failed(self, status: int, fn) -> None: ...

    def set_stream(self, stream: int) -> None: ...

    def free(self) -> None: ...


def create_engine(choice: str, problems: Problems, placement, options, log, allocator=None, stream=None) -> Engine:
    """The engine ``choice`` ('cpu', 'loop' or 'batched') for ``problems``."""
    module = importlib.import_module(f"{__name__}.{ENGINES[choice]}")
    return module.create(problems, placement, options, log, allocator, stream)
