"""The pivot kernels of the GPU engines of the dense direct solver: per factor of a batch (given by a device array
of pointers), the smallest and largest magnitude of its diagonal, and on the GPU the verdict the host would
otherwise compute from them: a device word that says whether a system failed (``info`` not 0), is numerically
singular or holds non-finite values. The host reads that word alone (8 bytes) and fetches the ``info`` array and
the per-system magnitudes only when it flags something. Compiled by NVRTC once and cached on disk.

- ``cumath_solver_pivots_<t>`` (batches of small systems): one warp per system reads every entry of the part of
  its factor the factorization wrote (``part``), column by column, for NaN and inf, and reduces its diagonal's
  magnitudes with warp shuffles. For order 32 in float32 a column is one 128-byte line, the lines the diagonal
  alone touched already: the pass reads four times the sectors (64 MiB for 16,384 factors, about 20 us on an
  H200 against the batch's 0.5 ms) and sees a NaN a pivot search moved into L. No scan of the input is needed
  here: the batched routines factorize in place, and IEEE arithmetic keeps a non-finite entry non-finite through
  every update of it (x - y, x / y, x * y with x NaN or inf is NaN or inf), so a non-finite entry of ``a`` stays
  somewhere in the part of the factor that holds it.
- ``cumath_solver_finite_<t>`` then ``cumath_solver_pivots_wide_<t>`` (single systems, large ones): the scan
  checks every entry of each factor (``part``: the whole matrix for LU, the lower or upper triangle for
  Cholesky) for NaN and inf with many blocks per system, coalesced down the columns; then one block of ``WIDE``
  threads per system reduces its diagonal. Where a NaN of ``a`` lands depends on how the library pivots (NaN
  compares false, so a pivot search by magnitude may pass over it and move it into L): the diagonal alone can
  miss it. The scan reads the factor once (an order-8192 float64 factor: 512 MiB, about 0.15 ms on an H200,
  ~1% of its factorization). The single-system engine runs the scan on the matrices before the factorization
  too, with the same epoch: a library need not keep a NaN of ``a`` in its factors at all.
- ``cumath_solver_copy_finite_<t>`` (single-system engine, LU): the copy of a dense ``a`` into the plan's buffer
  with that input scan on the way (one read of ``a`` where a copy and then a scan read it twice: 512 MiB less at
  order 8192 in float64); with a null destination, the scan alone of factors that are dense whole matrices (ld
  n), as one flat array with several loads in flight per thread, in place of the scan by columns.

Without NVRTC they are unavailable (logged once) and the engines solve without the check, or copy the diagonals.
"""

from __future__ import annotations

import logging

import numpy as np

from ...._core import cuda
from ...._core.kernels import get_kernel

__all__ = ["SCALARS_SOURCE", "PIVOTS_SOURCE", "WIDE", "NARROW_BLOCK", "ARG_TYPES", "SCAN_ARG_TYPES", "PART",
           "PivotCheck", "pivot_kernel", "scan_grid", "copy_grid"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}

SCALARS_SOURCE = r"""
// Per matrix p of a batch (an array of device pointers, leading dimension lda, column-major): out[2 p] and
// out[2 p + 1] are the smallest and largest magnitude of its diagonal, both NaN when an entry it reads is not
// finite. *flagged becomes epoch (a number the host gives each check: nothing needs clearing between checks)
// when a system's info[p] is not 0, its ratio (lo / hi)^power is not at least eps (a NaN ratio included:
// hi == 0) or it holds a non-finite entry. Every comparison is written so
// that NaN fails it: fmin/fmax drop NaN, so finiteness is tracked apart from the magnitudes.
struct cumath_c32 { float x, y; };
struct cumath_c64 { double x, y; };

__device__ __forceinline__ double cumath_mag(float v) { return fabs((double)v); }
__device__ __forceinline__ double cumath_mag(double v) { return fabs(v); }
__device__ __forceinline__ double cumath_mag(cumath_c32 v) { return hypot((double)v.x, (double)v.y); }
__device__ __forceinline__ double cumath_mag(cumath_c64 v) { return hypot(v.x, v.y); }

// x - x is 0 for finite x only (inf - inf and NaN - NaN are NaN, and NaN == 0 is false)
__device__ __forceinline__ bool cumath_finite(float v) { return v - v == 0.0f; }
__device__ __forceinline__ bool cumath_finite(double v) { return v - v == 0.0; }
__device__ __forceinline__ bool cumath_finite(cumath_c32 v) { return v.x - v.x == 0.0f && v.y - v.y == 0.0f; }
__device__ __forceinline__ bool cumath_finite(cumath_c64 v) { return v.x - v.x == 0.0 && v.y - v.y == 0.0; }

__device__ __forceinline__ void cumath_verdict(int p, double lo, double hi, bool bad, const int* info, int power,
                                               double eps, unsigned long long epoch, double* out,
                                               unsigned long long* flagged)
{
    const double nan = __longlong_as_double(0x7ff8000000000000LL);
    out[2 * p] = bad ? nan : lo;
    out[2 * p + 1] = bad ? nan : hi;
    double r = lo / hi;
    if (power == 2) r = r * r;
    if (bad || !(r >= eps) || info[p] != 0) *flagged = epoch;  // (every writer stores the same value)
}

"""

PIVOTS_SOURCE = SCALARS_SOURCE + r"""
// Batches of small systems: one warp per matrix (blockDim.x a multiple of 32). The warp reads every entry of the
// part of the factor the factorization wrote (part 0: all of it, 1: the lower triangle, 2: the upper) for NaN and
// inf, and the diagonal's magnitudes on the way: a NaN that a pivot search passed over and moved into L is seen as
// one on U's diagonal is. The entries are walked as one flat sequence, column after column (lanes on consecutive
// rows: a coalesced read), unrolled so that each lane has several reads in flight: with a loop per column each
// read would wait for the last. I: the index type (int where n * n fits, else long long).
template <typename T, typename I>
__device__ __forceinline__ void cumath_factor_scan(const T* m, long long lda, int n, int part, int lane, double& lo,
                                                   double& hi, int& bad)
{
    const I total = (I)n * (I)n;
#pragma unroll 4
    for (I t = lane; t < total; t += 32) {
        const I j = t / n, i = t - j * n;
        if ((part == 1 && i < j) || (part == 2 && i > j)) continue;
        const T v = m[(long long)j * lda + (long long)i];
        bad |= !cumath_finite(v);
        if (i == j) {
            const double g = cumath_mag(v);
            lo = fmin(lo, g);
            hi = fmax(hi, g);
        }
    }
}

template <typename T>
__device__ __forceinline__ void cumath_pivots(const T* const* a, long long lda, int n, int count, const int* info,
                                              int power, double eps, unsigned long long epoch, double* out,
                                              unsigned long long* flagged, int part)
{
    const int p = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (p >= count) return;  // (the whole warp)
    const T* m = a[p];
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
    int bad = 0;
    if (n <= 46340)  // n * n < 2^31
        cumath_factor_scan<T, int>(m, lda, n, part, lane, lo, hi, bad);
    else
        cumath_factor_scan<T, long long>(m, lda, n, part, lane, lo, hi, bad);
    for (int s = 16; s > 0; s >>= 1) {
        lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, s));
        hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, s));
        bad |= __shfl_xor_sync(0xffffffffu, bad, s);
    }
    if (lane == 0) cumath_verdict(p, lo, hi, bad != 0, info, power, eps, epoch, out, flagged);
}

// Large matrices, finiteness: block (p, y) of a grid (count, ny) checks the columns y, y + ny, ... of matrix p,
// rows down each column (coalesced), over the part the factorization wrote (part 0: all of it, 1: the lower
// triangle, 2: the upper), and sets bad[p] to epoch when an entry is NaN or inf. Many blocks per matrix: one
// block alone would read an order-8192 factor at the bandwidth of one SM.
#define CUMATH_WIDE 256
template <typename T>
__device__ __forceinline__ void cumath_finite_scan(const T* const* a, long long lda, int n, int count, int part,
                                                   unsigned long long epoch, unsigned long long* bad)
{
    const int p = blockIdx.x, t = threadIdx.x;
    if (p >= count) return;
    const T* m = a[p];
    int found = 0;
    for (int j = blockIdx.y; j < n; j += gridDim.y) {
        const T* col = m + (long long)j * lda;
        const int first = part == 1 ? j : 0, last = part == 2 ? j + 1 : n;
        for (int i = first + t; i < last; i += blockDim.x) found |= !cumath_finite(col[i]);
    }
    if (found) bad[p] = epoch;  // (every writer stores the same value)
}

// Large matrices, pivots: one block of CUMATH_WIDE threads per matrix reduces its diagonal, then judges it with
// bad[p] == epoch from the scan above (null: the diagonal alone).
template <typename T>
__device__ __forceinline__ void cumath_pivots_wide(const T* const* a, long long lda, int n, int count,
                                                   const int* info, const unsigned long long* bad, int power,
                                                   double eps, unsigned long long epoch, double* out,
                                                   unsigned long long* flagged)
{
    __shared__ double lo_s[CUMATH_WIDE], hi_s[CUMATH_WIDE];
    __shared__ int bad_s[CUMATH_WIDE];
    const int p = blockIdx.x, t = threadIdx.x;
    if (p >= count) return;  // (the whole block)
    const T* m = a[p];
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
    int nonfinite = 0;
    for (int i = t; i < n; i += CUMATH_WIDE) {
        const T v = m[(long long)i * (lda + 1)];
        nonfinite |= !cumath_finite(v);
        const double g = cumath_mag(v);
        lo = fmin(lo, g);
        hi = fmax(hi, g);
    }
    lo_s[t] = lo; hi_s[t] = hi; bad_s[t] = nonfinite;
    __syncthreads();
    for (int s = CUMATH_WIDE / 2; s > 0; s >>= 1) {
        if (t < s) {
            lo_s[t] = fmin(lo_s[t], lo_s[t + s]);
            hi_s[t] = fmax(hi_s[t], hi_s[t + s]);
            bad_s[t] |= bad_s[t + s];
        }
        __syncthreads();
    }
    if (t == 0)
        cumath_verdict(p, lo_s[0], hi_s[0], bad_s[0] != 0 || (bad != 0 && bad[p] == epoch), info, power, eps,
                       epoch, out, flagged);
}

// The copy of a into the plan's buffer with the input scan on the way (one pass where a copy and a scan read a
// twice): src and dst are dense in the same order, total entries in all, per entries per system; bad[k / per]
// becomes epoch for each non-finite entry k (the failure path alone writes). Each thread has UNROLL independent
// loads in flight before its first store: a loop of single loads would wait for each one. dst null: the scan
// alone, of dense whole matrices (LU's factors, ld n, one after another).
#define CUMATH_COPY_UNROLL 4
template <typename T>
__device__ __forceinline__ void cumath_copy_finite(const T* src, T* dst, long long total, long long per,
                                                   unsigned long long epoch, unsigned long long* bad)
{
    const long long step = (long long)gridDim.x * blockDim.x;
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; k + (CUMATH_COPY_UNROLL - 1) * step < total; k += CUMATH_COPY_UNROLL * step) {
        T v[CUMATH_COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < CUMATH_COPY_UNROLL; ++u) v[u] = src[k + u * step];
#pragma unroll
        for (int u = 0; u < CUMATH_COPY_UNROLL; ++u) {
            if (dst) dst[k + u * step] = v[u];
            if (!cumath_finite(v[u])) bad[(k + u * step) / per] = epoch;
        }
    }
    for (; k < total; k += step) {
        const T v = src[k];
        if (dst) dst[k] = v;
        if (!cumath_finite(v)) bad[k / per] = epoch;
    }
}

#define CUMATH_PIVOT_ARGS(T) const T* const* a, long long lda, int n, int count, const int* info, \
    const unsigned long long* bad, int power, double eps, unsigned long long epoch, double* out, \
    unsigned long long* flagged, int part
#define CUMATH_PIVOTS(suffix, T) \
    extern "C" __global__ void cumath_solver_pivots_##suffix(CUMATH_PIVOT_ARGS(T)) \
    { cumath_pivots<T>(a, lda, n, count, info, power, eps, epoch, out, flagged, part); } \
    extern "C" __global__ void cumath_solver_pivots_wide_##suffix(CUMATH_PIVOT_ARGS(T)) \
    { cumath_pivots_wide<T>(a, lda, n, count, info, bad, power, eps, epoch, out, flagged); } \
    extern "C" __global__ void cumath_solver_finite_##suffix(const T* const* a, long long lda, int n, int count, \
                                                            int part, unsigned long long epoch, \
                                                            unsigned long long* bad) \
    { cumath_finite_scan<T>(a, lda, n, count, part, epoch, bad); } \
    extern "C" __global__ void cumath_solver_copy_finite_##suffix(const T* src, T* dst, long long total, \
                                                                 long long per, unsigned long long epoch, \
                                                                 unsigned long long* bad) \
    { cumath_copy_finite<T>(src, dst, total, per, epoch, bad); }
CUMATH_PIVOTS(s, float)
CUMATH_PIVOTS(d, double)
CUMATH_PIVOTS(c, cumath_c32)
CUMATH_PIVOTS(z, cumath_c64)
"""

ARG_TYPES = "PqiiPPidQPPi"  # a, lda, n, count, info, bad (wide: the scan's flags; else 0), power, eps, epoch,
#                            out, flagged, part (narrow: the part of each factor it checks; wide: unused)
SCAN_ARG_TYPES = "PqiiiQP"  # a, lda, n, count, part, epoch, bad
COPY_ARG_TYPES = "PPqqQP"  # src, dst, total, per, epoch, bad
COPY_BLOCKS = 4096  # blocks of the copy with the input scan (grid-stride: fewer where the matrices are small)
PART = {"lu": 0, "L": 1, "U": 2}  # the part of a factor the scan checks: LU's whole matrix, a triangle
SCAN_BLOCKS = 1024  # blocks of the finiteness scan in all (at least one per matrix, at most one per column)
WIDE = 256  # threads per matrix of the wide kernel (CUMATH_WIDE)
NARROW_BLOCK = 128  # threads per block of the narrow kernel: 4 systems (a warp each)

_unavailable: list = []  # why the kernels could not be had (logged once)


def pivot_kernel(dtype: str, device_id: int, wide: bool = False, scan: bool = False, copy: bool = False):
    """A kernel for matrices of ``dtype`` (None, logged once, when it cannot be built): the pivots, one warp per
    matrix (launched with blocks of ``NARROW_BLOCK`` threads) or (``wide``) one block of ``WIDE`` threads per
    matrix; or (``scan``) the finiteness scan of whole factors (a grid of (count, ny) blocks); or (``copy``) the
    copy of dense matrices with their finiteness scan (``copy_grid``)."""
    if _unavailable:
        return None
    kind = "copy_finite_" if copy else "finite_" if scan else "pivots_wide_" if wide else "pivots_"
    name = "cumath_solver_" + kind + _PREFIX[dtype].lower()
    types = COPY_ARG_TYPES if copy else SCAN_ARG_TYPES if scan else ARG_TYPES
    try:
        return get_kernel(PIVOTS_SOURCE, name, types, device_id=device_id)
    except Exception as exc:  # noqa: BLE001 - the check is optional; the solve is not
        _unavailable.append(exc)
        logger.warning("the pivot check of GPU solves is off: its kernel could not be built (%s)", exc)
        return None


def scan_grid(n: int, count: int) -> tuple:
    """The grid of the finiteness scan: (count, ny), SCAN_BLOCKS blocks in all where the columns allow."""
    return count, max(1, min(n, -(-SCAN_BLOCKS // max(1, count)), 65535))


def copy_grid(total: int) -> int:
    """The blocks (of ``WIDE`` threads) of the copy with the input scan for ``total`` entries: at most
    ``COPY_BLOCKS``, at least one, each thread with up to four entries a round."""
    return max(1, min(COPY_BLOCKS, -(-total // (WIDE * 4))))


class PivotCheck:
    """The check of one engine's factorizations on the GPU: the device output of the pivot kernel (two doubles
    per system), its verdict word and (``wide``) the finiteness scan's flag per system, with their host copies.
    Each check has an epoch of its own (1, 2, ...) that the kernels store where they flag something, so nothing
    is cleared between checks. ``run`` launches the kernel(s) on the factors of ``a_ptrs`` and reads the verdict
    with one wait; only when it is not 0 does it copy the ``info`` array and the magnitudes too (a second wait, on the
    failure path alone)."""

    def __init__(self, mem, geom, part: int, wide: bool):
        self.geom, self.part, self.wide = geom, part, wide
        self.power = 2 if geom.kind == "cholesky" else 1  # the pivots of a = L L^H are the squares of L's diagonal
        self.eps = float(np.finfo(geom.dtype).eps)
        self._out = mem.get(16 * geom.count)
        nbytes = 8 * (1 + (geom.count if wide else 0))  # the verdict, then the scan's flags (epochs, all 64-bit)
        self._flagged = mem.get(nbytes)
        cuda.memset(self._flagged, 0, nbytes, mem.stream)  # once: each check compares with its own epoch
        cuda.synchronize(mem.stream)  # (before a check on another stream)
        self._epoch = 0
        self._scanned = False  # scan_input ran for the check to come (and took its epoch)
        self._host_flagged = cuda.pinned_word(self)
        self.host_pivots = np.zeros((geom.count, 2), np.float64)
        self._kernels = None

    def kernel(self, device_id: int):
        """The pivot kernel (None without NVRTC: logged once); the wide check builds the scan with it, and for
        LU's whole factors the flat scan (the copy kernel without its stores)."""
        if self._kernels is None:
            main = pivot_kernel(self.geom.dtype, device_id, wide=self.wide)
            scan = pivot_kernel(self.geom.dtype, device_id, scan=True) if self.wide and main is not None else None
            flat = (pivot_kernel(self.geom.dtype, device_id, copy=True)
                    if scan is not None and self.part == PART["lu"] else None)
            self._kernels = (main if scan is not None or not self.wide else None, scan, flat)
        return self._kernels[0]

    def _scan(self, stream: int, a_ptrs: int, lda: int, flat: int | None, epoch: int) -> None:
        """The finiteness scan of the factors into the per-system flags: of dense whole matrices one after
        another at ``flat`` (LU, ld n) by the flat kernel, each thread with several loads in flight; else by
        columns through the pointer array."""
        g = self.geom
        if flat is not None and self._kernels[2] is not None:
            total = g.count * g.n * g.n
            self._kernels[2].launch(copy_grid(total), WIDE, 0, stream, flat, 0, total, g.n * g.n, epoch,
                                    self._flagged + 8)
        else:
            self._kernels[1].launch(scan_grid(g.n, g.count), WIDE, 0, stream, a_ptrs, lda, g.n, g.count, self.part,
                                    epoch, self._flagged + 8)

    def scan_input(self, stream: int, a_ptrs: int, lda: int, flat: int | None = None) -> None:
        """Before the factorization: the finiteness scan of the matrices themselves (all of each, or the triangle
        the library reads), flagging with the epoch of the next ``run``. A library need not keep a NaN of ``a``
        in its factors (a pivot search that passes over NaN, or an update that does not read it, can drop it),
        so the check of the factors alone can miss it; the scan of both sees every non-finite input. ``flat``:
        as in ``run``."""
        self._epoch += 1  # (a check left behind by a failed call never lends its flags to the next one)
        self._scanned = True
        self._scan(stream, a_ptrs, lda, flat, self._epoch)

    def copy_input(self, stream: int, src: int, dst: int, device_id: int) -> bool:
        """The copy of the matrices into the factor storage ``dst`` with their finiteness scan in the same pass
        (``src`` and ``dst`` dense in the same order, whole matrices: LU's part), flagging with the epoch of the
        next ``run`` as ``scan_input`` does. False (nothing done) without the kernel."""
        kernel = self._kernels[2]
        if kernel is None:
            return False
        g = self.geom
        self._epoch += 1
        self._scanned = True
        total = g.count * g.n * g.n
        kernel.launch(copy_grid(total), WIDE, 0, stream, src, dst, total, g.n * g.n, self._epoch, self._flagged + 8)
        return True

    def run(self, kernel, stream: int, a_ptrs: int, lda: int, info: int, host_infos, flat: int | None = None) -> tuple:
        """(host_infos, magnitudes) filled from the device when a system was flagged, else (None, None).
        ``flat``: the address of the factors where they are dense whole matrices one after another (LU, ld n),
        scanned as one flat array."""
        g = self.geom
        if not self._scanned:
            self._epoch += 1
        self._scanned = False
        epoch = self._epoch
        if self.wide:
            bad = self._flagged + 8
            self._scan(stream, a_ptrs, lda, flat, epoch)
            grid, block = g.count, WIDE
        else:
            bad, grid, block = 0, -(-g.count // (NARROW_BLOCK // 32)), NARROW_BLOCK
        kernel.launch(grid, block, 0, stream, a_ptrs, lda, g.n, g.count, info, bad, self.power, self.eps, epoch,
                      self._out, self._flagged, self.part)
        cuda.copy(self._host_flagged.ctypes.data, self._flagged, 8, cuda.D2H, stream, "solver check")
        cuda.synchronize(stream)
        if int(self._host_flagged[0]) != epoch:
            return None, None
        cuda.copy(host_infos.ctypes.data, info, host_infos.nbytes, cuda.D2H, stream, "solver info")
        cuda.copy(self.host_pivots.ctypes.data, self._out, self.host_pivots.nbytes, cuda.D2H, stream,
                  "solver pivots")
        cuda.synchronize(stream)
        return host_infos, self.host_pivots
