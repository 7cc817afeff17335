"""The GPU engine of the dense direct solver for single systems and batches of large ones: cuSOLVER's 64-bit API
(cusolverDnXgetrf/Xgetrs, Xpotrf/Xpotrs), one call per system, on one handle bound to the plan's stream.

The workspace (from the ``_bufferSize`` query for the plan's n and leading dimension) is shared by the systems,
which run one after another on the stream. Pivots (int64), the factorizations' ``info`` (one int per system) and
the solves' ``info`` live in device memory from the plan's allocator; ``read_back`` copies the factorizations'
``info`` and the smallest and largest magnitude of each factor's diagonal to the host and waits once: the
finiteness scan and the wide pivot kernel (``_pivots``: many blocks per system, then a block per system) check
every entry of the factors for NaN and inf, reduce the diagonals and judge them with the ``info`` array on the
GPU, and only an 8-byte verdict word comes back unless a system is flagged (a strided copy of n single
elements per system is many small transfers: slow for large n); without the kernel (no NVRTC) the ``info``
array and the diagonals are copied.
"""

from __future__ import annotations

import logging
import weakref

import numpy as np

from ...._bindings import cublas, cudart, cusolver
from ...._core import cuda
from ...._core.cuda import set_device
from ....errors import CUSOLVERError
from ....memory import allocate
from . import ProgramCache, kernel_enabled
from ._lu_solve import TriangularSolve, permute_kernel, shared_bytes
from ._pivots import PART, PivotCheck

__all__ = ["SolverHandle", "CusolverEngine", "DATA_TYPES", "create"]

logger = logging.getLogger(__name__)

#: dtype -> cudaDataType of the matrices (the compute type is the same)
DATA_TYPES = {"float32": int(cudart.cudaDataType.CUDA_R_32F), "float64": int(cudart.cudaDataType.CUDA_R_64F),
              "complex64": int(cudart.cudaDataType.CUDA_C_32F), "complex128": int(cudart.cudaDataType.CUDA_C_64F)}
_OP = {"N": int(cusolver.cublasOperation_t.CUBLAS_OP_N), "T": int(cusolver.cublasOperation_t.CUBLAS_OP_T)}
_FILL = {"L": int(cusolver.cublasFillMode_t.CUBLAS_FILL_MODE_LOWER),
         "U": int(cusolver.cublasFillMode_t.CUBLAS_FILL_MODE_UPPER)}
_D2H = 2  # cudaMemcpyDeviceToHost
_ALLOW_NON_DETERMINISTIC = 2  # cusolverDeterministicMode_t: CUSOLVER_ALLOW_NON_DETERMINISTIC_RESULTS


def _destroy(handle: int, params: int, owned: bool) -> None:
    try:
        if params:
            cusolver.cusolverDnDestroyParams(params)
        if owned:
            cusolver.cusolverDnDestroy(handle)
    except Exception:  # interpreter shutdown, context gone
        pass


class SolverHandle:
    """A cusolverDn handle on GPU ``device_id`` (created, or the caller's ``handle``, which is borrowed: never
    destroyed) with a parameters object of the 64-bit API, bound to one stream at a time; ``free()`` destroys
    what it owns (once; a finalizer does it if nobody calls free)."""

    def __init__(self, device_id: int, stream: int, handle: int | None = None, deterministic: bool = True):
        set_device(device_id)
        self.device_id = device_id
        self.owned = handle is None
        self.value = cusolver.cusolverDnCreate() if handle is None else int(handle)
        try:
            if self.owned and not deterministic:  # (a created handle starts deterministic: cuSOLVER's default)
                cusolver.cusolverDnSetDeterministicMode(self.value, _ALLOW_NON_DETERMINISTIC)
            self.params = cusolver.cusolverDnCreateParams()
        except BaseException:
            _destroy(self.value, 0, self.owned)
            raise
        self._finalizer = weakref.finalize(self, _destroy, self.value, self.params, self.owned)
        self.stream = None
        self.set_stream(stream)

    def set_stream(self, stream: int) -> None:
        if stream != self.stream:
            cusolver.cusolverDnSetStream(self.value, stream)
            self.stream = stream

    def free(self) -> None:
        self._finalizer()
        self.value = self.params = 0


class _Buffers:
    """Device allocations of one engine, freed together."""

    def __init__(self, allocator, stream):
        self.allocator, self.stream, self.held = allocator, stream, []

    def get(self, nbytes: int) -> int:
        buf = allocate(self.allocator, max(1, int(nbytes)), self.stream)
        self.held.append(buf)
        return buf.device_ptr

    @property
    def nbytes(self) -> int:
        return sum(b.size for b in self.held)

    def free(self) -> None:
        held, self.held = self.held, []
        for b in held:
            b.free()


class CusolverEngine(ProgramCache):
    """cuSOLVER 64-bit programs for one problem set on GPU ``device_id`` (see the module's docstring)."""

    space = "cuda"
    threads = 1
    direct = True
    error_class = CUSOLVERError

    def __init__(self, problems, device_id: int, stream: int, allocator, handle: int | None = None, log=logger,
                 deterministic: bool = True):
        self.geom, self.problems, self.device_id = problems.geom, problems, device_id
        self._h = SolverHandle(device_id, stream, handle, deterministic)
        self._mem = _Buffers(allocator, stream)
        try:
            self._setup(problems, stream)
        except BaseException:
            self.free()
            raise
        self.description = "cuSOLVER" + ("" if self._h.owned else " (the caller's handle)")

    def _setup(self, problems, stream) -> None:
        g, f = problems.geom, problems.factor
        h, params = self._h.value, self._h.params
        dt = DATA_TYPES[g.dtype]
        n, count = g.n, g.count
        self.lu = g.kind == "lu"
        if self.lu:
            dev, host = cusolver.cusolverDnXgetrf_bufferSize(h, params, n, n, dt, problems.a_base, f.ld, dt)
        else:
            dev, host = cusolver.cusolverDnXpotrf_bufferSize(h, params, _FILL[f.uplo], n, dt, problems.a_base, f.ld,
                                                             dt)
        self._work, self._work_bytes = self._mem.get(dev), int(dev)
        self._host_work = np.empty(max(1, int(host)), np.uint8)
        self._host_bytes = int(host)
        self._info = self._mem.get(4 * count)
        self._sinfo = self._mem.get(4)
        self._ipiv = self._mem.get(8 * count * max(1, n)) if self.lu else 0
        self._host_infos = np.zeros(count, np.int32)
        self._host_diag = None  # without the pivot kernel: the diagonals, copied
        self._check = PivotCheck(self._mem, g, PART["lu"] if self.lu else PART[f.uplo], True)
        self._a_ptrs = self._mem.get(8 * count)
        self._a_ptrs_base = None
        self._a_ptrs_host = np.zeros(count, np.uint64)
        self._copied = False  # copy_input scanned the matrices of the factorization to come
        self._dt = dt
        names = ("cusolverDnXgetrf", "cusolverDnXgetrs") if self.lu else ("cusolverDnXpotrf", "cusolverDnXpotrs")
        self._factor, self._solve = (cusolver.raw(name) for name in names)
        self.routines = names
        self.factor_routine = names[0]
        self._a_off = [int(o) for o in problems.a_offsets]
        item = np.dtype(g.dtype).itemsize
        self._dense = self.lu and f.ld == n and self._a_off == [i * n * n * item for i in range(count)]
        self._b_off = [int(o) for o in problems.b_offsets]
        self._tri = self._triangular(g, item, stream) if self.lu else None
        if self._tri is not None:
            self.routines = (names[0], "cumath_lu_permute", self._tri.routine)
        self.nbytes = self._mem.nbytes + self._host_work.nbytes

    def _triangular(self, g, item: int, stream):
        """The solve step without getrs (``_lu_solve``) where its permutation fits the device's shared memory
        and cumath's own kernels are allowed (``CUMATH_SOLVER_KERNEL``); None keeps getrs."""
        if g.n < 2 or not kernel_enabled():
            return None
        shared, piv_shared = shared_bytes(g.n, self.device_id)
        kernel = permute_kernel(item, self.device_id) if shared else None
        if kernel is None:
            return None
        from ..._backends.cublas import CublasHandle

        self._cublas = CublasHandle(self.device_id, stream)
        return TriangularSolve(kernel, self._cublas, g.dtype, g.n, g.nrhs, self._mem.get(item * g.n), shared,
                               piv_shared)

    # ------------------------------------------------------------------------------------------ programs
    def _fused_calls(self, a_base: int, b_base: int) -> list:
        return self._factor_calls(a_base) + self._solve_calls(a_base, b_base)

    def _factor_calls(self, base: int) -> list:
        g, f = self.geom, self.problems.factor
        h, params, dt, n = self._h.value, self._h.params, self._dt, g.n
        work = (self._work, self._work_bytes, self._host_work.ctypes.data, self._host_bytes)
        calls = [(self._scan_input, (base,))] if self._check.kernel(self.device_id) is not None else []
        for i, off in enumerate(self._a_off):
            info = self._info + 4 * i
            if self.lu:
                ipiv = self._ipiv + 8 * i * max(1, n)
                calls.append((self._factor, (h, params, n, n, dt, base + off, f.ld, ipiv, dt, *work, info)))
            else:
                calls.append((self._factor, (h, params, _FILL[f.uplo], n, dt, base + off, f.ld, dt, *work, info)))
        return calls

    def _solve_calls(self, a_base: int, b_base: int) -> list:
        g, f, r = self.geom, self.problems.factor, self.problems.rhs
        h, params, dt, n, k = self._h.value, self._h.params, self._dt, g.n, g.nrhs
        calls = []
        for i, (oa, ob) in enumerate(zip(self._a_off, self._b_off)):
            if self.lu and self._tri is not None:
                calls.extend(self._tri.calls(a_base + oa, f.ld, self._ipiv + 8 * i * n, b_base + ob, r.ld, f.trans))
            elif self.lu:
                ipiv = self._ipiv + 8 * i * max(1, n)
                calls.append((self._solve, (h, params, _OP[f.trans], n, k, dt, a_base + oa, f.ld, ipiv, dt,
                                            b_base + ob, r.ld, self._sinfo)))
            else:
                calls.append((self._solve, (h, params, _FILL[f.uplo], n, k, dt, a_base + oa, f.ld, dt, b_base + ob,
                                            r.ld, self._sinfo)))
        return calls

    # ------------------------------------------------------------------------------------------ status
    def read_back(self, a_base: int, pivots: bool = True) -> tuple:
        """The factorizations' ``info`` and the magnitudes of the factors' diagonals: judged on the GPU by the
        wide pivot kernel, (None, None) when nothing is to be raised or warned about (one wait for 8 bytes);
        without the kernel, the ``info`` array and the diagonals, copied with one wait."""
        stream = self._h.stream
        g, ld = self.geom, self.problems.factor.ld
        kernel = self._check.kernel(self.device_id) if pivots else None
        if kernel is not None:
            self._pointers(a_base, stream)
            return self._check.run(kernel, stream, self._a_ptrs, ld, self._info, self._host_infos,
                                   self._flat(a_base))
        cuda.copy(self._host_infos.ctypes.data, self._info, self._host_infos.nbytes, cuda.D2H, stream,
                  "solver info")
        if pivots:
            if self._host_diag is None:
                self._host_diag = np.zeros((g.count, max(1, g.n)), g.dtype)
            item = self._host_diag.itemsize
            row = self._host_diag.strides[0]
            dst = self._host_diag.ctypes.data
            for i, off in enumerate(self._a_off):
                cudart.cudaMemcpy2DAsync(dst + i * row, item, a_base + off, (ld + 1) * item, item, g.n, _D2H, stream)
        cuda.synchronize(stream)
        return self._host_infos, (np.abs(self._host_diag[:, :g.n]) if pivots else None)

    def _pointers(self, a_base: int, stream: int) -> None:
        """The device array of the factors' addresses for the check kernels (uploaded when ``a_base`` changes)."""
        if a_base != self._a_ptrs_base:
            np.add(np.asarray(self._a_off, np.int64), a_base, out=self._a_ptrs_host, casting="unsafe")
            cuda.copy(self._a_ptrs, self._a_ptrs_host.ctypes.data, self._a_ptrs_host.nbytes, cuda.H2D, stream,
                      "solver pointer array")
            self._a_ptrs_base = a_base

    def copy_input(self, dst: int, src: int | None) -> bool:
        """Copy the matrices (``src``, dense in the order of the factor storage ``dst``) into ``dst`` and scan
        them for NaN and inf in the same pass, in place of the program's own scan of ``dst``: one read of ``a``
        instead of two. LU alone (Cholesky's scan reads the triangle the library reads, a copy reads all of it).
        False, with nothing done, where it does not apply (no kernel, or ``src`` None: a not dense in that order):
        the caller copies, the program scans."""
        self._copied = False
        if src is None or not self.lu or self._check.kernel(self.device_id) is None:
            return False
        self._copied = self._check.copy_input(self._h.stream, src, dst, self.device_id)
        return self._copied

    def _scan_input(self, a_base: int) -> int:
        """The first entry of a factorization program: the finiteness scan of the matrices about to be factorized
        (``PivotCheck.scan_input``), judged with the check that follows the factorization; skipped where
        ``copy_input`` scanned them on the way into the factor storage. Returns 0 (a program entry's status)."""
        if self._copied:
            self._copied = False
            return 0
        stream = self._h.stream
        self._pointers(a_base, stream)
        self._check.scan_input(stream, self._a_ptrs, self.problems.factor.ld, self._flat(a_base))
        return 0

    def _flat(self, a_base: int) -> int | None:
        """``a_base`` where the factors are dense whole matrices one after another (LU, ld n: one flat array for
        the scans), else None."""
        return a_base if self._dense else None

    def failed(self, status: int, fn) -> None:
        name = str(getattr(fn, "__name__", fn))
        (cublas.check if name.startswith("cublas") else cusolver.check)(
            int(status), f"{name} of a system of order {self.geom.n}")

    def set_stream(self, stream: int) -> None:
        self._h.set_stream(stream)
        tri = self.__dict__.get("_cublas")
        if tri is not None:
            tri.set_stream(stream)

    def free(self) -> None:
        self._clear_programs()
        mem = self.__dict__.pop("_mem", None)
        if mem is not None:
            mem.free()
        for key in ("_h", "_cublas"):
            h = self.__dict__.pop(key, None)
            if h is not None:
                h.free()


def create(problems, placement, options, log, allocator=None, stream=None) -> CusolverEngine:
    engine = CusolverEngine(problems, placement.device, stream, allocator, options.handle, log, options.deterministic)
    if log.isEnabledFor(logging.INFO):
        log.info("solver engine: %s (%s), %d system(s), one call each, on GPU %d", engine.description,
                 ", ".join(engine.routines), problems.geom.count, placement.device)
    return engine
