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
kernel of cumath's own (one thread per system: the smallest and largest magnitude of its factor's diagonal,
compiled by NVRTC once and cached on disk) and copies its output and the factorizations' ``info`` back with one
wait. When the kernel cannot be had (no NVRTC), batches are solved without the IllConditionedWarning check.
"""

from __future__ import annotations

import logging

import numpy as np

from ...._bindings import cublas, cusolver
from ...._core import cuda
from ...._core.kernels import get_kernel
from ....errors import CUBLASError, CUSOLVERError
from ..._backends.cublas import CublasHandle
from .cusolver import _FILL, _OP, SolverHandle, _Buffers

__all__ = ["BatchedEngine", "create"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
_INT32 = (1 << 31) - 1
_BLOCK = 128
_POINTER_SETS = 4  # device copies of pointer arrays kept per operand, by base address

PIVOTS_SOURCE = r"""
// The smallest and largest magnitude of the diagonal of each matrix of a batch (given by an array of device
// pointers, leading dimension lda): out[2 p] and out[2 p + 1] for matrix p, both NaN when a diagonal element is
// not finite. One thread per matrix: the diagonals of a batch of small systems are a few values each.
struct cumath_c32 { float x, y; };
struct cumath_c64 { double x, y; };

__device__ __forceinline__ double cumath_mag(float v) { return fabs((double)v); }
__device__ __forceinline__ double cumath_mag(double v) { return fabs(v); }
__device__ __forceinline__ double cumath_mag(cumath_c32 v) { return hypot((double)v.x, (double)v.y); }
__device__ __forceinline__ double cumath_mag(cumath_c64 v) { return hypot(v.x, v.y); }

template <typename T>
__device__ __forceinline__ void cumath_pivots(const T* const* a, long long lda, int n, int count, double* out)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= count) return;
    const T* m = a[p];
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
    bool finite = true;
    for (int i = 0; i < n; ++i) {
        const double v = cumath_mag(m[(long long)i * (lda + 1)]);
        finite = finite && (v - v == 0.0);
        lo = fmin(lo, v);
        hi = fmax(hi, v);
    }
    const double nan = __longlong_as_double(0x7ff8000000000000LL);
    out[2 * p] = finite ? lo : nan;
    out[2 * p + 1] = finite ? hi : nan;
}

// The same for large matrices: one block of WIDE threads per matrix, striding its diagonal, then a reduction.
#define CUMATH_WIDE 256
template <typename T>
__device__ __forceinline__ void cumath_pivots_wide(const T* const* a, long long lda, int n, int count, double* out)
{
    __shared__ double lo_s[CUMATH_WIDE], hi_s[CUMATH_WIDE];
    __shared__ int bad_s[CUMATH_WIDE];
    const int p = blockIdx.x, t = threadIdx.x;
    if (p >= count) return;
    const T* m = a[p];
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
    int bad = 0;
    for (int i = t; i < n; i += CUMATH_WIDE) {
        const double v = cumath_mag(m[(long long)i * (lda + 1)]);
        bad |= !(v - v == 0.0);
        lo = fmin(lo, v);
        hi = fmax(hi, v);
    }
    lo_s[t] = lo; hi_s[t] = hi; bad_s[t] = bad;
    __syncthreads();
    for (int s = CUMATH_WIDE / 2; s > 0; s >>= 1) {
        if (t < s) {
            lo_s[t] = fmin(lo_s[t], lo_s[t + s]);
            hi_s[t] = fmax(hi_s[t], hi_s[t + s]);
            bad_s[t] |= bad_s[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        const double nan = __longlong_as_double(0x7ff8000000000000LL);
        out[2 * p] = bad_s[0] ? nan : lo_s[0];
        out[2 * p + 1] = bad_s[0] ? nan : hi_s[0];
    }
}

#define CUMATH_PIVOTS(suffix, T) \
    extern "C" __global__ void cumath_solver_pivots_##suffix(const T* const* a, long long lda, int n, int count, \
                                                            double* out) { cumath_pivots<T>(a, lda, n, count, out); } \
    extern "C" __global__ void cumath_solver_pivots_wide_##suffix(const T* const* a, long long lda, int n, \
                                                                 int count, double* out) \
    { cumath_pivots_wide<T>(a, lda, n, count, out); }
CUMATH_PIVOTS(s, float)
CUMATH_PIVOTS(d, double)
CUMATH_PIVOTS(c, cumath_c32)
CUMATH_PIVOTS(z, cumath_c64)
"""

_unavailable: list = []  # why the kernel could not be had (logged once)


class BatchedEngine:
    """Pointer-array programs for one batch (see the module's docstring)."""

    space = "cuda"
    threads = 1
    direct = True

    def __init__(self, problems, device_id: int, stream: int, allocator, handle: int | None = None, log=logger):
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
            self._h = CublasHandle(device_id, stream) if self.lu else SolverHandle(device_id, stream, handle)
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
        self._pivot_out = self._mem.get(16 * count)
        self._host_pivots = np.zeros((count, 2), np.float64)
        self._kernel = None
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
        diagonal (the pivot kernel, on the pointers of ``a_base``), copied to the host with one wait."""
        stream = self._h.stream
        kernel = self._pivot_kernel() if pivots else None
        if kernel is not None:
            self._upload("a", a_base)
            g = self.geom
            kernel.launch(-(-g.count // _BLOCK), _BLOCK, 0, stream, self._a_ptrs, self.problems.factor.ld, g.n,
                          g.count, self._pivot_out)
            cuda.copy(self._host_pivots.ctypes.data, self._pivot_out, self._host_pivots.nbytes, cuda.D2H, stream,
                      "solver pivots")
        cuda.copy(self._host_infos.ctypes.data, self._info, self._host_infos.nbytes, cuda.D2H, stream, "solver info")
        cuda.synchronize(stream)
        return self._host_infos, (self._host_pivots if kernel is not None else None)

    def _pivot_kernel(self):
        if self._kernel is None:
            self._kernel = pivot_kernel(self.geom.dtype, self.device_id)
        return self._kernel

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


WIDE = 256  # threads per matrix of the wide kernel (CUMATH_WIDE)


def pivot_kernel(dtype: str, device_id: int, wide: bool = False):
    """The pivot kernel for matrices of ``dtype`` (None, logged once, when it cannot be built): one thread per
    matrix, or (``wide``) one block of ``WIDE`` threads per matrix, launched with one block per matrix."""
    if _unavailable:
        return None
    name = ("cumath_solver_pivots_wide_" if wide else "cumath_solver_pivots_") + _PREFIX[dtype].lower()
    try:
        return get_kernel(PIVOTS_SOURCE, name, "PqiiP", device_id=device_id)
    except Exception as exc:  # noqa: BLE001 - the check is optional; the solve is not
        _unavailable.append(exc)
        logger.warning("the pivot check of GPU solves is off: its kernel could not be built (%s)", exc)
        return None


def create(problems, placement, options, log, allocator=None, stream=None) -> BatchedEngine:
    engine = BatchedEngine(problems, placement.device, stream, allocator, options.handle, log)
    if log.isEnabledFor(logging.INFO):
        log.info("solver engine: %s (%s), a batch of %d systems of order %d in one call, on GPU %d",
                 engine.description, ", ".join(engine.routines), problems.geom.count, problems.geom.n, placement.device)
    return engine
