"""The pivot kernels of the GPU engines of the dense direct solver: per factor of a batch (given by a device array
of pointers), the smallest and largest magnitude of its diagonal, and on the GPU the verdict the host would
otherwise compute from them: a device counter of the systems that failed (``info`` not 0), are numerically
singular or hold non-finite values. The host reads that counter alone (8 bytes) and fetches the ``info`` array
and the per-system magnitudes only when it is not 0. Compiled by NVRTC once and cached on disk.

- ``cumath_solver_pivots_<t>`` (batches of small systems): one warp per system reads its diagonal, reduced with
  warp shuffles. Only the diagonal is read (a full pass over 16,384 factors of order 32 would cost about a tenth
  of the factorization): a NaN that the factorization keeps off the diagonal is not seen.
- ``cumath_solver_pivots_wide_<t>`` (single systems, large ones): one block of ``WIDE`` threads per system reads
  its diagonal and every entry of the factor (``part``: the whole matrix for LU, the lower or upper triangle for
  Cholesky), coalesced down the columns. Where a NaN lands depends on how the library pivots (NaN compares false,
  so a pivot search by magnitude may pass over it and move it into L): the diagonal alone misses it.

Without NVRTC they are unavailable (logged once) and the engines solve without the check, or copy the diagonals.
"""

from __future__ import annotations

import logging

import numpy as np

from ...._core import cuda
from ...._core.kernels import get_kernel

__all__ = ["PIVOTS_SOURCE", "WIDE", "NARROW_BLOCK", "ARG_TYPES", "PART", "PivotCheck", "pivot_kernel"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}

PIVOTS_SOURCE = r"""
// Per matrix p of a batch (an array of device pointers, leading dimension lda, column-major): out[2 p] and
// out[2 p + 1] are the smallest and largest magnitude of its diagonal, both NaN when an entry it reads is not
// finite. *flagged grows by one for every system whose info[p] is not 0, whose ratio (lo / hi)^power is not at
// least eps (a NaN ratio included: hi == 0) or that holds a non-finite entry. Every comparison is written so
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
                                               double eps, double* out, unsigned long long* flagged)
{
    const double nan = __longlong_as_double(0x7ff8000000000000LL);
    out[2 * p] = bad ? nan : lo;
    out[2 * p + 1] = bad ? nan : hi;
    double r = lo / hi;
    if (power == 2) r = r * r;
    if (bad || !(r >= eps) || info[p] != 0) atomicAdd(flagged, 1ULL);
}

// Batches of small systems: one warp per matrix (blockDim.x a multiple of 32), the diagonal only.
template <typename T>
__device__ __forceinline__ void cumath_pivots(const T* const* a, long long lda, int n, int count, const int* info,
                                              int part, int power, double eps, double* out,
                                              unsigned long long* flagged)
{
    const int p = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (p >= count) return;  // (the whole warp)
    const T* m = a[p];
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
    int bad = 0;
    for (int i = lane; i < n; i += 32) {
        const T v = m[(long long)i * (lda + 1)];
        bad |= !cumath_finite(v);
        const double g = cumath_mag(v);
        lo = fmin(lo, g);
        hi = fmax(hi, g);
    }
    for (int s = 16; s > 0; s >>= 1) {
        lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, s));
        hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, s));
        bad |= __shfl_xor_sync(0xffffffffu, bad, s);
    }
    if (lane == 0) cumath_verdict(p, lo, hi, bad != 0, info, power, eps, out, flagged);
}

// Large matrices: one block of CUMATH_WIDE threads per matrix; the diagonal for the magnitudes, and every entry
// of the part the factorization wrote (part 0: all of it, 1: the lower triangle, 2: the upper) for finiteness.
#define CUMATH_WIDE 256
template <typename T>
__device__ __forceinline__ void cumath_pivots_wide(const T* const* a, long long lda, int n, int count,
                                                   const int* info, int part, int power, double eps, double* out,
                                                   unsigned long long* flagged)
{
    __shared__ double lo_s[CUMATH_WIDE], hi_s[CUMATH_WIDE];
    __shared__ int bad_s[CUMATH_WIDE];
    const int p = blockIdx.x, t = threadIdx.x;
    if (p >= count) return;  // (the whole block)
    const T* m = a[p];
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
    int bad = 0;
    for (int i = t; i < n; i += CUMATH_WIDE) {
        const double g = cumath_mag(m[(long long)i * (lda + 1)]);
        lo = fmin(lo, g);
        hi = fmax(hi, g);
    }
    for (int j = 0; j < n; ++j) {
        const T* col = m + (long long)j * lda;
        const int first = part == 1 ? j : 0, last = part == 2 ? j + 1 : n;
        for (int i = first + t; i < last; i += CUMATH_WIDE) bad |= !cumath_finite(col[i]);
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
    if (t == 0) cumath_verdict(p, lo_s[0], hi_s[0], bad_s[0] != 0, info, power, eps, out, flagged);
}

#define CUMATH_PIVOT_ARGS(T) const T* const* a, long long lda, int n, int count, const int* info, int part, \
    int power, double eps, double* out, unsigned long long* flagged
#define CUMATH_PIVOTS(suffix, T) \
    extern "C" __global__ void cumath_solver_pivots_##suffix(CUMATH_PIVOT_ARGS(T)) \
    { cumath_pivots<T>(a, lda, n, count, info, part, power, eps, out, flagged); } \
    extern "C" __global__ void cumath_solver_pivots_wide_##suffix(CUMATH_PIVOT_ARGS(T)) \
    { cumath_pivots_wide<T>(a, lda, n, count, info, part, power, eps, out, flagged); }
CUMATH_PIVOTS(s, float)
CUMATH_PIVOTS(d, double)
CUMATH_PIVOTS(c, cumath_c32)
CUMATH_PIVOTS(z, cumath_c64)
"""

ARG_TYPES = "PqiiPiidPP"  # a, lda, n, count, info, part, power, eps, out, flagged
PART = {"lu": 0, "L": 1, "U": 2}  # the part of a factor the wide kernel checks: LU's whole matrix, a triangle
WIDE = 256  # threads per matrix of the wide kernel (CUMATH_WIDE)
NARROW_BLOCK = 128  # threads per block of the narrow kernel: 4 systems (a warp each)

_unavailable: list = []  # why the kernel could not be had (logged once)

def pivot_kernel(dtype: str, device_id: int, wide: bool = False):
    """The pivot kernel for matrices of ``dtype`` (None, logged once, when it cannot be built): one warp per
    matrix (launched with blocks of ``NARROW_BLOCK`` threads), or (``wide``) one block of ``WIDE`` threads per
    matrix, launched with one block per matrix."""
    if _unavailable:
        return None
    name = ("cumath_solver_pivots_wide_" if wide else "cumath_solver_pivots_") + _PREFIX[dtype].lower()
    try:
        return get_kernel(PIVOTS_SOURCE, name, ARG_TYPES, device_id=device_id)
    except Exception as exc:  # noqa: BLE001 - the check is optional; the solve is not
        _unavailable.append(exc)
        logger.warning("the pivot check of GPU solves is off: its kernel could not be built (%s)", exc)
        return None


class PivotCheck:
    """The check of one engine's factorizations on the GPU: the device output of the pivot kernel (two doubles
    per system) and its counter of flagged systems, with their host copies. ``run`` launches the kernel on
    the factors of ``a_ptrs`` and reads the counter with one wait; only when it is not 0 does it copy the
    ``info`` array and the magnitudes too (a second wait, on the failure path alone)."""

    def __init__(self, mem, geom, part: int, wide: bool):
        self.geom, self.part, self.wide = geom, part, wide
        self.power = 2 if geom.kind == "cholesky" else 1  # the pivots of a = L L^H are the squares of L's diagonal
        self.eps = float(np.finfo(geom.dtype).eps)
        self._out = mem.get(16 * geom.count)
        self._flagged = mem.get(8)
        self._host_flagged = np.zeros(1, np.uint64)
        self.host_pivots = np.zeros((geom.count, 2), np.float64)
        self._kernel = None

    def kernel(self, device_id: int):
        """The kernel (None without NVRTC: logged once)."""
        if self._kernel is None:
            self._kernel = pivot_kernel(self.geom.dtype, device_id, wide=self.wide)
        return self._kernel

    def run(self, kernel, stream: int, a_ptrs: int, lda: int, info: int, host_infos) -> tuple:
        """(host_infos, magnitudes) filled from the device when a system was flagged, else (None, None)."""
        g = self.geom
        cuda.memset(self._flagged, 0, 8, stream)
        if self.wide:
            grid, block = g.count, WIDE
        else:
            grid, block = -(-g.count // (NARROW_BLOCK // 32)), NARROW_BLOCK
        kernel.launch(grid, block, 0, stream, a_ptrs, lda, g.n, g.count, info, self.part, self.power, self.eps,
                      self._out, self._flagged)
        cuda.copy(self._host_flagged.ctypes.data, self._flagged, 8, cuda.D2H, stream, "solver check")
        cuda.synchronize(stream)
        if not self._host_flagged[0]:
            return None, None
        cuda.copy(host_infos.ctypes.data, info, host_infos.nbytes, cuda.D2H, stream, "solver info")
        cuda.copy(self.host_pivots.ctypes.data, self._out, self.host_pivots.nbytes, cuda.D2H, stream,
                  "solver pivots")
        cuda.synchronize(stream)
        return host_infos, self.host_pivots
