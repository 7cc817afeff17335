"""The solve step of a large LU factorization on the GPU without ``getrs``: the row interchanges as one
permutation, then two cuBLAS triangular solves (``cublas<t>trsm``).

Measured on an H200 (order 8192, float64, one right-hand side): ``cusolverDnXgetrs`` takes 2.24 ms with trans=N
and 2.74 ms with trans=T (the plan's case for a C-order ``a``, whose transpose is factorized), most of it applying
getrf's 8192 interchanges one after another in device memory; the two trsm calls take 0.96 ms (N) and 1.2 ms
(T). getrf's interchanges are sequential by nature (swap row i with row ipiv[i], i = 0, 1, ...), so
``cumath_lu_permute`` composes them into a permutation in shared memory, in one thread (0.27 ms at order 8192,
with the pivots staged in shared memory by the whole block), and then moves every right-hand side through it in
parallel, in place, through a scratch column in device memory: 1.2 ms (N) and 1.46 ms (T) for the whole solve
step against getrs's 2.24 / 2.74.

- trans N (a factorized as P L U): x = P^T b (a gather: x[i] = b[perm[i]]), then L y = x (unit lower), U x = y.
- trans T (a^T factorized, a C-order a: a^T = P L U, so a = U^T L^T P^T): U^T y = b, L^T z = y, x = P z (a
  scatter: x[perm[i]] = z[i]).

The permutation needs 8 bytes of shared memory per row (4 where only it fits; the pivots are then read from
device memory): the device's opt-in limit (227 KiB on an H200) bounds the order (about 29,000, or 58,000). Larger
systems, a device without NVRTC, or ``CUMATH_SOLVER_KERNEL=0`` keep ``getrs``.
"""

from __future__ import annotations

import logging

import numpy as np

from ...._bindings import cublas, cudart
from ...._core.kernels import get_kernel

__all__ = ["PERMUTE_SOURCE", "TriangularSolve", "permute_kernel", "shared_bytes"]

logger = logging.getLogger(__name__)

PERMUTE_SOURCE = r"""
// One block per system: getrf's 1-based interchanges ipiv[0..n) (int64) composed into perm (shared memory), then
// each of the nrhs columns of x (leading dimension ldx) permuted in place through the scratch column w:
// scatter 0: x[i] = x[perm[i]] (P^T x), scatter 1: x[perm[i]] = x[i] (P x). piv_shared: the pivots staged in
// shared memory after perm (8 bytes a row in all), else read from device memory (4 bytes a row).
// T: an unsigned integer type of the element's size (the elements are moved, never computed with).
template <typename T>
__device__ __forceinline__ void cumath_lu_permute(const long long* ipiv, int n, T* x, long long ldx, int nrhs, T* w,
                                                  int scatter, int piv_shared)
{
    extern __shared__ int cumath_sh[];
    int* perm = cumath_sh;
    int* piv = cumath_sh + n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        perm[i] = i;
        if (piv_shared) piv[i] = (int)(ipiv[i] - 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (piv_shared) {
            for (int i = 0; i < n; ++i) { const int p = piv[i]; const int t = perm[i]; perm[i] = perm[p]; perm[p] = t; }
        } else {
#pragma unroll 8
            for (int i = 0; i < n; ++i) {
                const int p = (int)(__ldg(ipiv + i) - 1);
                const int t = perm[i]; perm[i] = perm[p]; perm[p] = t;
            }
        }
    }
    __syncthreads();
    for (int j = 0; j < nrhs; ++j) {
        T* col = x + (long long)j * ldx;
        if (scatter) { for (int i = threadIdx.x; i < n; i += blockDim.x) w[perm[i]] = col[i]; }
        else { for (int i = threadIdx.x; i < n; i += blockDim.x) w[i] = col[perm[i]]; }
        __syncthreads();  // (the block's writes to w are seen by the whole block after the barrier)
        for (int i = threadIdx.x; i < n; i += blockDim.x) col[i] = w[i];
        __syncthreads();
    }
}
struct cumath_u128 { unsigned long long lo, hi; };
#define CUMATH_PERMUTE(suffix, T) \
    extern "C" __global__ void __launch_bounds__(1024) cumath_lu_permute_##suffix( \
        const long long* ipiv, int n, T* x, long long ldx, int nrhs, T* w, int scatter, int piv_shared) \
    { cumath_lu_permute<T>(ipiv, n, x, ldx, nrhs, w, scatter, piv_shared); }
CUMATH_PERMUTE(4, unsigned int)
CUMATH_PERMUTE(8, unsigned long long)
CUMATH_PERMUTE(16, cumath_u128)
"""

PERMUTE_ARG_TYPES = "PiPqiPii"  # ipiv, n, x, ldx, nrhs, w, scatter, piv_shared
BLOCK = 1024
_MAX_SHARED_OPTIN = 97  # cudaDevAttrMaxSharedMemoryPerBlockOptin
_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
_SIDE_LEFT = int(cublas.cublasSideMode_t.CUBLAS_SIDE_LEFT)
_LOWER = int(cublas.cublasFillMode_t.CUBLAS_FILL_MODE_LOWER)
_UPPER = int(cublas.cublasFillMode_t.CUBLAS_FILL_MODE_UPPER)
_N = int(cublas.cublasOperation_t.CUBLAS_OP_N)
_T = int(cublas.cublasOperation_t.CUBLAS_OP_T)
_UNIT = int(cublas.cublasDiagType_t.CUBLAS_DIAG_UNIT)
_NON_UNIT = int(cublas.cublasDiagType_t.CUBLAS_DIAG_NON_UNIT)

_unavailable: list = []


def shared_bytes(n: int, device_id: int) -> tuple:
    """(dynamic shared memory bytes, pivots staged in shared memory) of the permutation of order ``n`` on GPU
    ``device_id``, or (0, False) where it does not fit."""
    limit = int(cudart.cudaDeviceGetAttribute(_MAX_SHARED_OPTIN, device_id))
    if 8 * n <= limit:
        return 8 * n, True
    if 4 * n <= limit:
        return 4 * n, False
    return 0, False


def permute_kernel(itemsize: int, device_id: int):
    """The permutation kernel for elements of ``itemsize`` bytes (None, logged once, when NVRTC cannot build it)."""
    if _unavailable:
        return None
    try:
        return get_kernel(PERMUTE_SOURCE, f"cumath_lu_permute_{itemsize}", PERMUTE_ARG_TYPES, device_id=device_id)
    except Exception as exc:  # noqa: BLE001 - getrs still solves
        _unavailable.append(exc)
        logger.warning("GPU LU solves use getrs: the permutation kernel could not be built (%s)", exc)
        return None


class TriangularSolve:
    """The solve step of one engine's LU systems of order ``n`` (``nrhs`` right-hand sides, dtype ``dtype``):
    ``calls(lu, ld, ipiv, x, ldx, trans)`` gives the program entries for one system. ``handle`` is a
    ``CublasHandle`` bound to the engine's stream; ``scratch`` the address of ``n`` elements of device memory."""

    def __init__(self, kernel, handle, dtype: str, n: int, nrhs: int, scratch: int, shared: int, piv_shared: bool):
        self.kernel, self.handle, self.n, self.nrhs = kernel, handle, n, nrhs
        self.scratch, self.shared, self.piv_shared = scratch, shared, int(piv_shared)
        if shared > 48 * 1024:
            kernel.set_attribute(_MAX_DYNAMIC_SHARED, shared)
        p = _PREFIX[dtype]
        self.trsm = cublas.raw(f"cublas{p}trsm_v2_64")
        self.routine = f"cublas{p}trsm_v2_64"
        one = np.ones(1, np.complex128 if dtype.startswith("complex") else np.float64).astype(dtype)
        self._one = one  # alpha, read by cuBLAS on the host (pointer mode HOST)

    def _permute(self, ipiv: int, x: int, ldx: int, scatter: int) -> int:
        self.kernel.launch(1, BLOCK, self.shared, self.handle.stream, ipiv, self.n, x, ldx, self.nrhs, self.scratch,
                           scatter, self.piv_shared)
        return 0

    def calls(self, lu: int, ld: int, ipiv: int, x: int, ldx: int, trans: str) -> list:
        h, n, k, one = self.handle.value, self.n, self.nrhs, self._one.ctypes.data
        lower = (_LOWER, _UNIT)
        upper = (_UPPER, _NON_UNIT)
        if trans == "N":
            return [(self._permute, (ipiv, x, ldx, 0)),
                    (self.trsm, (h, _SIDE_LEFT, lower[0], _N, lower[1], n, k, one, lu, ld, x, ldx)),
                    (self.trsm, (h, _SIDE_LEFT, upper[0], _N, upper[1], n, k, one, lu, ld, x, ldx))]
        return [(self.trsm, (h, _SIDE_LEFT, upper[0], _T, upper[1], n, k, one, lu, ld, x, ldx)),
                (self.trsm, (h, _SIDE_LEFT, lower[0], _T, lower[1], n, k, one, lu, ld, x, ldx)),
                (self._permute, (ipiv, x, ldx, 1))]
