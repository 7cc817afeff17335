"""The pivot kernels of the GPU engines of the dense direct solver: the smallest and largest magnitude of the
diagonal of each factor of a batch (given by a device array of pointers), compiled by NVRTC once and cached on
disk. One thread per matrix for batches of small systems; one block of ``WIDE`` threads per matrix for large
ones. Without NVRTC they are unavailable (logged once) and the engines solve without the check, or copy the
diagonals.
"""

from __future__ import annotations

import logging

from ...._core.kernels import get_kernel

__all__ = ["PIVOTS_SOURCE", "WIDE", "pivot_kernel"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}

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
