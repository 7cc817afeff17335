"""The GPU engine of the dense direct solver for small systems (LU or Cholesky, order up to 32, one system or a
batch): cumath's own kernels (``_small_kernels``: a warp per system, the matrix in registers), compiled by NVRTC through
``_core/jit`` and cached on disk.

- factorize: one launch factorizes every system (LU with partial pivoting, or Cholesky of a's lower triangle)
  into the factor storage (reading a where the caller keeps it
  when the plan factorizes in a buffer of its own: no copy of a before it), writes its permutation and
  judges it (the zero pivot of getrf's ``info``, the pivots' spread, NaN or inf anywhere in a or its factor)
  into an 8-byte verdict word; ``read_back`` copies that word into page-locked memory and waits once, and fetches
  the ``info`` array and the pivot magnitudes only when it is set.
- factorize + solve (the stateless call): the same launch solves the right-hand sides too, before the wait.
- solve: one launch of the solve kernel on the kept factors and permutations.

The systems' addresses are a base plus a fixed offset per system (uploaded once at planning, or a constant step
for evenly spaced batches), so a new operand address costs nothing. ``create`` falls back to the library
engines (logged) when the kernels cannot be built and the plan did not ask for them by name.
"""

from __future__ import annotations

import logging
from collections import deque

import numpy as np

from ...._core import cuda
from ...._core._fast import launch_words
from ...._core.kernels import ArgPacker, Kernel, get_kernel
from ....errors import LAPACKError
from . import ProgramCache
from ._small_kernels import FLAG, FUSED_ARGS, MAX_ORDER, SMALL_SOURCE, SOLVE_ARGS, WARPS, grid, kernel_names
from .cusolver import _Buffers

__all__ = ["SmallSystemsEngine", "check_fits", "create"]

logger = logging.getLogger(__name__)

_unavailable: list = []  # why the kernels could not be built (logged once; 'auto' plans then use the libraries)


def check_fits(geom) -> None:
    """ValueError unless the kernels take ``geom`` (order at most MAX_ORDER, sizes of 32-bit ints)."""
    if geom.n > MAX_ORDER:
        raise ValueError(f"batch_method='kernel' runs systems of order at most {MAX_ORDER}, not order {geom.n}; "
                         f"use batch_method='auto', 'batched' or 'loop'")
    if geom.count > (1 << 31) - 1 - WARPS * 32 or geom.nrhs > (1 << 31) - 1:
        raise ValueError(f"batch_method='kernel' takes batches below 2^31 systems, not {geom.count}; use 'loop'")


def _offsets(mem, offsets, stream) -> tuple:
    """(device array of the byte offsets or 0, step): evenly spaced systems need no array."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    step = int(offsets[1] - offsets[0]) if offsets.size > 1 else 0
    if offsets.size < 2 or (offsets[0] == 0 and np.array_equal(offsets, np.arange(offsets.size) * step)):
        return 0, step
    ptr = mem.get(offsets.nbytes)
    cuda.copy(ptr, offsets.ctypes.data, offsets.nbytes, cuda.H2D, stream, "solver system offsets")
    cuda.synchronize(stream)  # (the host array is a temporary)
    return ptr, 0


class SmallSystemsEngine(ProgramCache):
    """Kernel programs for one problem set (see the module's docstring)."""

    space = "cuda"
    threads = 1
    direct = True
    error_class = LAPACKError  # (info < 0, a refused argument, never comes from the kernels)

    def __init__(self, problems, device_id: int, stream: int, allocator, kernels):
        g, f, r = problems.geom, problems.factor, problems.rhs
        self.geom, self.problems, self.device_id = g, problems, device_id
        self._fused_kernel, self._solve_kernel = kernels
        self.routines = kernel_names(g.dtype, g.n, g.kind)
        self.factor_routine = self.routines[0].split("<")[0]
        what = "LU" if g.kind == "lu" else "Cholesky"
        self.description = f"cumath's {what} kernels for small systems (a warp per system, order {g.n})"
        self._stream = stream
        self._packed = deque(maxlen=2 * self.KEEP + 2)  # the arguments the native launchers of the programs point at
        self._mem = mem = _Buffers(allocator, stream)
        try:
            self._info = mem.get(4 * g.count)
            self._perm = mem.get(4 * g.count * g.n)
            self._out = mem.get(16 * g.count)
            self._flagged = mem.get(8)
            cuda.memset(self._flagged, 0, 8, stream)
            self._a_off, self._a_step = _offsets(mem, problems.a_offsets, stream)
            self._x_off, self._x_step = _offsets(mem, problems.b_offsets, stream)
            src = problems.a_source
            if src is not None:  # a is read where the caller keeps it, the factors written into the plan's buffer
                self._s_off, self._s_step = _offsets(mem, src[0], stream)
                self._srs, self._scs = int(src[1]), int(src[2])
            bsrc = problems.b_source
            if bsrc is not None:  # b is read where the caller keeps it, x written by the solve
                self._b_off, self._b_step = _offsets(mem, bsrc[0], stream)
                self._brs, self._bcs = int(bsrc[1]), int(bsrc[2])
            cuda.synchronize(stream)  # (the cleared verdict word, before a check on another stream)
        except BaseException:
            self.free()
            raise
        self._host_flagged = cuda.pinned_word(self)
        self._host_infos = np.zeros(g.count, np.int32)
        self.host_pivots = np.zeros((g.count, 2), np.float64)
        # a(i, j) at rs * i + cs * j: the factor storage holds a column-major, or a^T ('C': a row-major a)
        self._rs, self._cs = (1, f.ld) if f.order == "F" else (f.ld, 1)
        self.reads_a = problems.a_source is not None
        self.source = 0  # the caller's a of the next factorization (reads_a), set by the executor
        self.reads_b = problems.b_source is not None
        self.b_source = 0  # the caller's b of the next solve (reads_b), set by the executor
        self._ldx = r.ld
        self._eps = float(np.finfo(g.dtype).eps)
        self.nbytes = mem.nbytes

    # ------------------------------------------------------------------------------------------ programs
    def _launch_args(self, a_base: int, src: tuple = ()):
        return (grid(self.geom.count), 32 * WARPS, 0, self._stream, *src, a_base, self._a_off, self._a_step,
                self._rs, self._cs, self.geom.n, self.geom.count, self._perm)

    def _entry(self, kernel, launch: tuple) -> tuple:
        """A program's (fn, args) for one launch (``launch``: grid, block, shared memory, stream, the kernel's
        arguments): one native call for a loaded kernel, its arguments packed once (a program is built once per
        address and stream: only the stream is passed per call); the kernel's own launch() for a stand-in."""
        if not isinstance(kernel, Kernel):
            return kernel.launch, launch
        grid_x, block, shared, stream = launch[:4]
        packer = ArgPacker(kernel.arg_types)
        packer.pack(launch[4:])
        self._packed.append(packer)
        fn = launch_words(kernel.function, (grid_x, 1, 1), (block, 1, 1), shared, list(packer.params), (), 0, 1)
        return fn, (stream,)

    def factor_program(self, a_base: int) -> list:
        return self._program(("f", a_base, self.source), lambda: self._factor_calls(a_base))

    def fused_program(self, a_base: int, b_base: int) -> list:
        key = ("fs", a_base, b_base, self.source, self.b_source)
        return self._program(key, lambda: self._fused_calls(a_base, b_base))

    def solve_program(self, a_base: int, b_base: int) -> list:
        return self._program(("s", a_base, b_base, self.b_source), lambda: self._solve_calls(a_base, b_base))

    def _rhs_args(self, x_base: int) -> tuple:
        """x and where the right-hand sides are read from (the caller's b, or x itself) as the kernels take them."""
        if self.reads_b:
            b = (self.b_source, self._b_off, self._b_step, self._brs, self._bcs)
        else:
            b = (x_base, self._x_off, self._x_step, 1, self._ldx)
        return (x_base, self._x_off, self._x_step, self._ldx) + b + (self.geom.nrhs,)

    def _factor_launch(self, a_base: int, x_base: int, solve: int) -> list:
        if self.reads_a:
            src = (self.source, self._s_off, self._s_step, self._srs, self._scs)
        else:
            src = (a_base, self._a_off, self._a_step, self._rs, self._cs)
        args = self._launch_args(a_base, src) + (self._info,) + self._rhs_args(x_base) + (
            solve, self._eps, FLAG, self._out, self._flagged)
        return [self._entry(self._fused_kernel, args)]

    def _factor_calls(self, a_base: int) -> list:
        return self._factor_launch(a_base, 0, 0)

    def _fused_calls(self, a_base: int, b_base: int) -> list:
        return self._factor_launch(a_base, b_base, 1)

    def _solve_calls(self, a_base: int, b_base: int) -> list:
        args = self._launch_args(a_base) + self._rhs_args(b_base)
        return [self._entry(self._solve_kernel, args)]

    # ------------------------------------------------------------------------------------------ status
    def read_back(self, a_base: int, pivots: bool = True) -> tuple:
        """(None, None) when the verdict word is clear (one 8-byte copy, one wait); else the ``info`` array and
        the pivot magnitudes (a second wait), and the word is cleared for the next check."""
        stream = self._stream
        cuda.copy(self._host_flagged.ctypes.data, self._flagged, 8, cuda.D2H, stream, "solver check")
        cuda.synchronize(stream)
        if int(self._host_flagged[0]) != FLAG:
            return None, None
        cuda.copy(self._host_infos.ctypes.data, self._info, self._host_infos.nbytes, cuda.D2H, stream, "solver info")
        cuda.copy(self.host_pivots.ctypes.data, self._out, self.host_pivots.nbytes, cuda.D2H, stream,
                  "solver pivots")
        cuda.memset(self._flagged, 0, 8, stream)
        cuda.synchronize(stream)
        return self._host_infos, self.host_pivots

    def failed(self, status: int, fn) -> None:
        """A launch's status (cuLaunchKernel's CUresult) as CUDADriverError."""
        from ...._bindings import cuda as driver

        driver.check(int(status), f"cuLaunchKernel of {self.routines[0]} for {self.geom.count} systems")

    def set_stream(self, stream: int) -> None:
        if stream != self._stream:
            self._stream = stream
            self._clear_programs()

    def free(self) -> None:
        mem = self.__dict__.pop("_mem", None)
        if mem is not None:
            mem.free()
        self._clear_programs()


def create(problems, placement, options, log, allocator=None, stream=None):
    """The kernel engine, or (batch_method 'auto' and the kernels cannot be built) the library engine 'auto'
    would pick without them."""
    g = problems.geom
    check_fits(g)
    kernels = None
    if not _unavailable:
        try:
            kernels = tuple(get_kernel(SMALL_SOURCE, name, args, device_id=placement.device)
                            for name, args in zip(kernel_names(g.dtype, g.n, g.kind), (FUSED_ARGS, SOLVE_ARGS)))
        except Exception as exc:  # noqa: BLE001 - no NVRTC, no driver: the libraries can still solve
            if options.batch_method == "kernel":
                raise
            _unavailable.append(exc)
            log.warning("the small-system kernels could not be built (%s); dense GPU solves use the libraries", exc)
    elif options.batch_method == "kernel":
        raise _unavailable[0]
    if kernels is not None:
        engine = SmallSystemsEngine(problems, placement.device, stream, allocator, kernels)
        if log.isEnabledFor(logging.INFO):
            log.info("solver engine: %s, %d systems of order %d in one launch, on GPU %d", engine.description,
                     g.count, g.n, placement.device)
        return engine
    from . import create_engine
    from .._traits import choose_batch_method

    method = choose_batch_method(g.kind, g.n, g.count, "auto", kernel=False)
    log.debug("solver engine: the library path (%s) instead of the kernels", method)
    return create_engine(method, problems, placement, options, log, allocator, stream)
