"""The GPU engine of the dense direct solver for batches of small systems: one call for the whole batch through
arrays of device pointers (one per system, in a device buffer of the plan, uploaded again only when the
addresses they are built from change).

The pointer arrays of the last few addresses seen are kept on the device (``_POINTER_SETS`` per operand): a plan
whose results come from a small pool (the recycler) or whose operands alternate between buffers switches
between them with one device-to-device copy instead of building and uploading the array again.

- LU: cuBLAS ``cublas<t>getrfBatched`` / ``cublas<t>getrsBatched`` on a cuBLAS handle of the plan (int32 pivots;
  getrs's ``info`` is one host int, checked after the call).
- Cholesky: cuSOLVER ``cusolverDn<t>potrfBatched`` / ``potrsBatched`` on the cuSOLVER handle (the caller's, or
  the plan's). potrsBatched takes one right-hand side per call, so k right-hand sides are k calls, each with
  the pointers of its column.

32-bit integers: n, the leading dimensions and the batch size must be below 2^31. ``read_back`` runs a small
kernel of cumath's own (``_pivots``: one warp per system, every entry of its factor checked for NaN and inf
and the smallest and largest magnitude of its diagonal, judged on the GPU with the factorizations' ``info``) and waits once for an 8-byte verdict word; the
``info`` array and the magnitudes come back only when it flags a system. When the kernel cannot be had (no
NVRTC), batches are solved without the IllConditionedWarning check (the ``info`` array is copied).
"""

from __future__ import annotations

import logging

import numpy as np

from ...._bindings import cublas, cusolver
from ...._core import cuda
from ....errors import CUBLASError, CUSOLVERError
from ..._backends.cublas import CublasHandle
from ._pivots import _PREFIX, PART, PivotCheck
from .cusolver import _FILL, _OP, SolverHandle, _Buffers

__all__ = ["BatchedEngine", "create"]

logger = logging.getLogger(__name__)

_INT32 = (1 << 31) - 1
_POINTER_SETS = 4  # device copies of pointer arrays kept per operand, by base address




class BatchedEngine:
    """Pointer-array programs for one batch (see the module's docstring)."""

    space = "cuda"
    threads = 1
    direct = True

    def __init__(self, problems, device_id: int, stream: int, allocator, handle: int | None = None, log=logger,
                 deterministic: bool = True):
        g, f, r = problems.geom, problems.factor, problems.rhs
        for what, value in (("the order n", g.n), ("the leading dimension of a", f.ld),
                            ("the leading dimension of b", r.ld), ("the batch size", g.count)):
            if value > _INT32:
                raise ValueError(f"{what} ({value}) is too large for the batched routines (32-bit integers); use "
                                 f"DirectSolverOptions(batch_method='loop')")
        self.geom, self.problems, self.device_id = g, problems, device_id
        self.lu = g.kind == "lu"
        self._mem = _Buffers(allocator, stream)
        self._h = None
        try:
            self._h = CublasHandle(device_id, stream) if self.lu else SolverHandle(device_id, stream, handle,
                                                                                        deterministic)
            self._setup(stream)
        except BaseException:
            self.free()
            raise

    def _setup(self, stream) -> None:
        g = self.geom
        count, n, k = g.count, g.n, g.nrhs
        p = _PREFIX[g.dtype]
        if self.lu:
            self._factor = cublas.raw(f"cublas{p}getrfBatched")
            self._solve = cublas.raw(f"cublas{p}getrsBatched")
            self.routines = (f"cublas{p}getrfBatched", f"cublas{p}getrsBatched")
            self.error_class = CUBLASError
            self.description = "cuBLAS (batched LU)"
            self._ipiv = self._mem.get(4 * count * max(1, n))
        else:
            self._factor = cusolver.raw(f"cusolverDn{p}potrfBatched")
            self._solve = cusolver.raw(f"cusolverDn{p}potrsBatched")
            self.routines = (f"cusolverDn{p}potrfBatched", f"cusolverDn{p}potrsBatched")
            self.error_class = CUSOLVERError
            self.description = "cuSOLVER (batched Cholesky)" + ("" if self._h.owned else ", the caller's handle")
            self._ipiv = 0
        self.factor_routine = self.routines[0]
        self._info = self._mem.get(4 * count)
        self._sinfo = self._mem.get(4)  # potrsBatched's d_info (device)
        self._host_sinfo = np.zeros(1, np.int32)  # getrsBatched's info (host)
        self._host_infos = np.zeros(count, np.int32)
        self._check = PivotCheck(self._mem, g, PART["lu"] if self.lu else PART[self.problems.factor.uplo], False)
        # pointer arrays: a's matrices; b's (LU: one array; Cholesky: one per right-hand side column)
        columns = 1 if self.lu else k
        self._a_ptrs = self._mem.get(8 * count)
        self._b_ptrs = self._mem.get(8 * count * columns)
        self._a_host = np.zeros(count, np.uint64)
        self._b_host = np.zeros((columns, count), np.uint64)
        self._a_offsets = np.asarray(self.problems.a_offsets, np.int64)
        col = np.arange(columns, dtype=np.int64)[:, None] * (self.problems.rhs.ld * np.dtype(g.dtype).itemsize)
        self._b_offsets = np.asarray(self.problems.b_offsets, np.int64)[None, :] + col
        self._arrays = {"a": (self._a_host, self._a_ptrs, self._a_offsets), "b": (self._b_host, self._b_ptrs,
                                                                                 self._b_offsets)}
        self._up = {"a": None, "b": None}  # the bases the device arrays hold
        self._known = {"a": {}, "b": {}}  # base -> a device copy of its pointer array (insertion order: age)
        self._build_programs()
        self.nbytes = self._mem.nbytes

    def _build_programs(self) -> None:
        g, f, r = self.geom, self.problems.factor, self.problems.rhs
        h, count, n, k = self._h.value, g.count, g.n, g.nrhs
        if self.lu:
            self._fprog = [(self._factor, (h, n, self._a_ptrs, f.ld, self._ipiv, self._info, count))]
            self._sprog = [(self._solve, (h, _OP[f.trans], n, k, self._a_ptrs, f.ld, self._ipiv, self._b_ptrs, r.ld,
                                          self._host_sinfo.ctypes.data, count))]
        else:
            uplo = _FILL[f.uplo]
            self._fprog = [(self._factor, (h, uplo, n, self._a_ptrs, f.ld, self._info, count))]
            self._sprog = [(self._solve, (h, uplo, n, 1, self._a_ptrs, f.ld, self._b_ptrs + 8 * count * j, r.ld,
                                          self._sinfo, count)) for j in range(k)]
        self._fsprog = self._fprog + self._sprog

    # ------------------------------------------------------------------------------------------ programs
    def _upload(self, which: str, base: int) -> None:
        """Refill the device array of pointers of ``which`` ('a' or 'b') for ``base`` unless it holds them."""
        if base == self._up[which]:
            return
        host, device, offsets = self._arrays[which]
        known = self._known[which]
        stream = self._h.stream
        kept = known.get(base)
        if kept is None:
            np.add(offsets, base, out=host, casting="unsafe")
            if len(known) < _POINTER_SETS:
                kept = self._mem.get(host.nbytes)
            else:  # the oldest set's storage takes the new one
                oldest = next(iter(known))
                kept = known.pop(oldest)
            cuda.copy(kept, host.ctypes.data, host.nbytes, cuda.H2D, stream, "solver pointer array")
            known[base] = kept
            self.nbytes = self._mem.nbytes
        cuda.copy(device, kept, host.nbytes, cuda.D2D, stream)
        self._up[which] = base

    def factor_program(self, a_base: int) -> list:
        self._upload("a", a_base)
        return self._fprog

    def solve_program(self, a_base: int, b_base: int) -> list:
        self._upload("a", a_base)
        self._upload("b", b_base)
        return self._sprog

    def fused_program(self, a_base: int, b_base: int) -> list:
        self._upload("a", a_base)
        self._upload("b", b_base)
        return self._fsprog

    # ------------------------------------------------------------------------------------------ status
    def read_back(self, a_base: int, pivots: bool = True) -> tuple:
        """The factorizations' ``info`` and, per system, the smallest and largest magnitude of its factor's
        diagonal: the pivot kernel (on the pointers of ``a_base``) judges them on the GPU and one wait reads its
        verdict word; (None, None) when it flags nothing (nothing to raise or warn about), else both arrays
        (a second wait). Without the kernel: the ``info`` array and no magnitudes."""
        stream = self._h.stream
        kernel = self._check.kernel(self.device_id) if pivots else None
        if kernel is not None:
            self._upload("a", a_base)
            return self._check.run(kernel, stream, self._a_ptrs, self.problems.factor.ld, self._info,
                                   self._host_infos)
        cuda.copy(self._host_infos.ctypes.data, self._info, self._host_infos.nbytes, cuda.D2H, stream, "solver info")
        cuda.synchronize(stream)
        return self._host_infos, None

    def failed(self, status: int, fn) -> None:
        detail = f"{getattr(fn, '__name__', fn)} of a batch of {self.geom.count} systems of order {self.geom.n}"
        (cublas.check if self.lu else cusolver.check)(int(status), detail)

    def set_stream(self, stream: int) -> None:
        self._h.set_stream(stream)

    def free(self) -> None:
        mem = self.__dict__.pop("_mem", None)
        if mem is not None:
            mem.free()
        h, self._h = self._h, None
        if h is not None:
            h.free()


def create(problems, placement, options, log, allocator=None, stream=None) -> BatchedEngine:
    engine = BatchedEngine(problems, placement.device, stream, allocator, options.handle, log, options.deterministic)
    if log.isEnabledFor(logging.INFO):
        log.info("solver engine: %s (%s), a batch of %d systems of order %d in one call, on GPU %d",
                 engine.description, ", ".join(engine.routines), problems.geom.count, problems.geom.n, placement.device)
    return engine
