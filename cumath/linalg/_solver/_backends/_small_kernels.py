"""The CUDA source of cumath's own LU and Cholesky kernels for batches of small systems (order up to
``MAX_ORDER``), used by the ``small_lu`` engine, and the pure arithmetic of their launches.

One warp per system, row i of the matrix in the registers of lane i (``N`` of them: the order rounded up to 4,
8, 16 or 32, every loop unrolled so that each entry stays in a register):

- ``cumath_small_lu<T, N>`` loads the matrix from ``s`` (the caller's a, any strides ``srs``, ``scs``, or the
  factor storage itself), factorizes it with partial pivoting (LU of ``P a = L U``), stores the factors in the
  factor storage ``a`` (element strides ``rs``, ``cs``: column-major, or the row-major transpose read as a) and
  the permutation in ``perm``, judges the system in the same pass (``info``: the first exactly zero
  pivot, 1-based, as getrf reports it; the smallest and largest magnitude of U's diagonal; NaN or inf anywhere
  in a or its factor) and, with ``solve``, solves the right-hand sides in x in place. Rows are not moved between
  lanes: a row stays in its lane and remembers the step at which it became the pivot (``pos``), so a step costs
  one shuffle per column to its right (the pivot row's entry) instead of three for a swap; the factor's row
  ``pos`` is written by that lane. The pivot of a step is the largest ``|re| + |im|`` (LAPACK's i?amax measure)
  among the rows not yet pivots, ties going to the first row in LAPACK's order (the positions its swaps give:
  ``cur``), a NaN counting as the largest; a zero pivot is not divided by (getrf's rule), and the factorization
  goes on.
- ``cumath_small_lus<T, N>``: the solve alone, from the factors and ``perm`` of an earlier factorization.
- ``cumath_small_chol<T, N>`` / ``cumath_small_chols<T, N>``: the same for Cholesky (``a = L L^H``) of a's lower
  triangle, the part potrf reads: it stops at the first pivot that is not positive (or NaN), ``info`` that step
  (1-based), and a system that failed gets NaN for x rather than whatever its memory held.

The solve, per right-hand side column, reads b where the caller keeps it (or x itself), then forward substitution
with the unit lower L and back substitution with U, each a shuffle of the current unknown per step, and writes x.
Every lane reads its entries of the column before any lane writes (the shuffles order them), so x may be b
itself even though the rows are permuted.

The verdict is the pivot kernels' (``_pivots.SCALARS_SOURCE``: ``cumath_verdict``): the host reads one 8-byte
word; the kernel stores ``FLAG`` there when a system needs the host's attention, and the host clears it again
only then.
"""

from __future__ import annotations

from ._pivots import SCALARS_SOURCE

__all__ = ["SMALL_SOURCE", "MAX_ORDER", "ORDERS", "C_TYPES", "FUSED_ARGS", "SOLVE_ARGS", "FLAG", "WARPS",
           "padded_order", "kernel_names", "grid"]

MAX_ORDER = 32  # one lane per row of a warp
ORDERS = (4, 8, 16, 32)  # the orders the kernels are compiled for (a system of order n runs the first >= n)
C_TYPES = {"float32": "float", "float64": "double", "complex64": "cumath_c32", "complex128": "cumath_c64"}
FUSED_ARGS = "PPqqqPPqqqiiPPPPqqPPqqqiidQPP"  # s, s_off, s_step, srs, scs, a, a_off, a_step, rs, cs, n, count,
#                                               perm, info, x, x_off, x_step, ldx, b, b_off, b_step, brs, bcs,
#                                               nrhs, solve, eps, flag, out, flagged
SOLVE_ARGS = "PPqqqiiPPPqqPPqqqi"  # a, a_off, a_step, rs, cs, n, count, perm, x, x_off, x_step, ldx, b, b_off,
#                                    b_step, brs, bcs, nrhs
FLAG = 1  # what a flagged check stores in the verdict word (cleared by the host after it read a flag)
WARPS = 4  # systems per block of 128 threads

SMALL_SOURCE = SCALARS_SOURCE + r"""
#define CUMATH_FULL 0xffffffffu
template <typename T> struct cumath_real { typedef T type; };
template <> struct cumath_real<cumath_c32> { typedef float type; };
template <> struct cumath_real<cumath_c64> { typedef double type; };

__device__ __forceinline__ float cumath_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double cumath_fabs(double v) { return fabs(v); }

#define CUMATH_REAL_OPS(T) \
    __device__ __forceinline__ T cumath_fms(T c, T a, T b) { return c - a * b; } \
    __device__ __forceinline__ T cumath_div(T a, T b) { return a / b; } \
    __device__ __forceinline__ T cumath_abs1(T v) { return cumath_fabs(v); } \
    __device__ __forceinline__ bool cumath_is_zero(T v) { return v == (T)0; } \
    __device__ __forceinline__ T cumath_shfl(T v, int src) { return __shfl_sync(CUMATH_FULL, v, src); }
CUMATH_REAL_OPS(float)
CUMATH_REAL_OPS(double)

// c - a b; a / b by Smith's scaling (no overflow of |b|^2); |re| + |im| (LAPACK's pivot measure)
#define CUMATH_COMPLEX_OPS(C, R) \
    __device__ __forceinline__ C cumath_fms(C c, C a, C b) \
    { return C{c.x - (a.x * b.x - a.y * b.y), c.y - (a.x * b.y + a.y * b.x)}; } \
    __device__ __forceinline__ C cumath_div(C a, C b) \
    { \
        if (cumath_fabs(b.x) >= cumath_fabs(b.y)) { \
            const R r = b.y / b.x, d = b.x + b.y * r; \
            return C{(a.x + a.y * r) / d, (a.y - a.x * r) / d}; \
        } \
        const R r = b.x / b.y, d = b.y + b.x * r; \
        return C{(a.x * r + a.y) / d, (a.y * r - a.x) / d}; \
    } \
    __device__ __forceinline__ R cumath_abs1(C v) { return cumath_fabs(v.x) + cumath_fabs(v.y); } \
    __device__ __forceinline__ bool cumath_is_zero(C v) { return v.x == (R)0 && v.y == (R)0; } \
    __device__ __forceinline__ C cumath_shfl(C v, int src) \
    { return C{__shfl_sync(CUMATH_FULL, v.x, src), __shfl_sync(CUMATH_FULL, v.y, src)}; }
CUMATH_COMPLEX_OPS(cumath_c32, float)
CUMATH_COMPLEX_OPS(cumath_c64, double)

// The kernels' parameters (FUSED_ARGS, SOLVE_ARGS): the source of a (s: the caller's a, or the factor storage
// itself), the factor storage a, the permutations, the verdict's outputs, x, and the source of b (the caller's b,
// or x itself); every system's address is its base plus an offset (an array, or p times a step).
#define CUMATH_FUSED_PARAMS const char* s, const long long* s_off, long long s_step, long long srs, long long scs, \
    char* a, const long long* a_off, long long a_step, long long rs, long long cs, int n, int count, int* perm, \
    int* info, char* x, const long long* x_off, long long x_step, long long ldx, const char* b, \
    const long long* b_off, long long b_step, long long brs, long long bcs, int nrhs, int solve, double eps, \
    unsigned long long flag, double* out, unsigned long long* flagged
#define CUMATH_SOLVE_PARAMS const char* a, const long long* a_off, long long a_step, long long rs, long long cs, \
    int n, int count, const int* perm, char* x, const long long* x_off, long long x_step, long long ldx, \
    const char* b, const long long* b_off, long long b_step, long long brs, long long bcs, int nrhs

// A system's address: the base plus its offset (from the array off, else p * step).
__device__ __forceinline__ long long cumath_offset(const long long* off, long long step, int p)
{ return off ? off[p] : p * step; }

// Row `lane` of a system (element strides rs, cs; lower: the lower triangle only) into r, zeros elsewhere; whether an
// entry read is NaN or inf.
template <typename T, int N>
__device__ __forceinline__ int cumath_load_row(T (&r)[N], const char* base, long long off, long long rs,
                                               long long cs, int lane, int n, bool lower)
{
    const T* m = (const T*)(base + off);
    int bad = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        r[j] = T{};
        if (lane < n && j < n && (!lower || j <= lane)) {
            r[j] = m[lane * rs + j * cs];
            bad |= !cumath_finite(r[j]);
        }
    }
    return bad;
}

// The solve of the right-hand sides of one system into x (column-major, leading dimension ldx) from b (element
// strides brs, bcs: the caller's b, or x itself): lane i holds row i of the factors (r: logical row pos of
// P a = L U), reads its right-hand side entry from row src of b and writes the solution's entry pos; lane k's piv
// names the lane that holds logical row k.
template <typename T, int N>
__device__ __forceinline__ void cumath_small_rhs(const T (&r)[N], int lane, int n, int pos, int piv, long long src,
                                                 const T* b, long long brs, long long bcs, T* x, long long ldx,
                                                 int nrhs)
{
    const bool row = lane < n;
    for (int c = 0; c < nrhs; ++c) {
        T* col = x + (long long)c * ldx;
        T v = T{};
        if (row) v = b[src * brs + c * bcs];
        __syncwarp();
#pragma unroll
        for (int k = 0; k < N; ++k) {  // L y = P b (L's diagonal is 1)
            if (k >= n) break;
            const int pk = __shfl_sync(CUMATH_FULL, piv, k);
            const T y = cumath_shfl(v, pk);
            if (row && pos > k) v = cumath_fms(v, r[k], y);
        }
#pragma unroll
        for (int k = N - 1; k >= 0; --k) {  // U x = y
            if (k >= n) continue;
            const int pk = __shfl_sync(CUMATH_FULL, piv, k);
            if (lane == pk) v = cumath_div(v, r[k]);
            const T y = cumath_shfl(v, pk);
            if (row && pos < k) v = cumath_fms(v, r[k], y);
        }
        if (row) col[pos] = v;
    }
}

template <typename T, int N>
__global__ void cumath_small_lu(CUMATH_FUSED_PARAMS)
{
    typedef typename cumath_real<T>::type R;
    const int p = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (p >= count) return;  // (the whole warp)
    T* m = (T*)(a + cumath_offset(a_off, a_step, p));
    const bool row = lane < n;
    T r[N];
    int bad = cumath_load_row<T, N>(r, s, cumath_offset(s_off, s_step, p), srs, scs, lane, n, false);
    int cur = lane;   // the row's position in LAPACK's order (after its swaps so far)
    int pos = N;      // the step at which the row became the pivot (N: not yet)
    int piv = lane;   // lane k: the lane of step k's pivot
    int zero_at = 0;  // the first zero pivot, 1-based (getrf's info)
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
    const R inf = (R)__longlong_as_double(0x7ff0000000000000LL);
#pragma unroll
    for (int k = 0; k < N; ++k) {
        if (k >= n) break;
        R key = (R)-1;
        if (row && pos == N) {
            key = cumath_abs1(r[k]);
            if (key != key) key = inf;  // (NaN: the largest, so that every lane reduces to the same pivot)
        }
        int who = cur * 32 + lane;  // ties: the first in LAPACK's order
        for (int s = 16; s > 0; s >>= 1) {
            const R ok = __shfl_xor_sync(CUMATH_FULL, key, s);
            const int ow = __shfl_xor_sync(CUMATH_FULL, who, s);
            if (ok > key || (ok == key && ow < who)) {
                key = ok;
                who = ow;
            }
        }
        const int pl = who & 31, pc = who >> 5;
        const T u = cumath_shfl(r[k], pl);
        if (lane == k) piv = pl;
        if (cur == k) cur = pc;  // LAPACK swaps the row at position k into the pivot's place
        if (lane == pl) {
            pos = k;
            cur = k;
        }
        const double g = cumath_mag(u);
        lo = fmin(lo, g);
        hi = fmax(hi, g);
        const bool zero = cumath_is_zero(u);
        if (zero && zero_at == 0) zero_at = k + 1;
        const bool below = row && pos == N;
        T l = r[k];
        if (below && !zero) l = cumath_div(l, u);
        if (below) r[k] = l;
#pragma unroll
        for (int j = k + 1; j < N; ++j) {
            if (j >= n) break;
            const T uj = cumath_shfl(r[j], pl);
            if (below) r[j] = cumath_fms(r[j], l, uj);
        }
    }
#pragma unroll
    for (int j = 0; j < N; ++j)
        if (row && j < n) bad |= !cumath_finite(r[j]);
    for (int s = 16; s > 0; s >>= 1) bad |= __shfl_xor_sync(CUMATH_FULL, bad, s);
    __syncwarp();  // (every lane has read its row before any writes one)
    if (row) {
#pragma unroll
        for (int j = 0; j < N; ++j)
            if (j < n) m[pos * rs + j * cs] = r[j];
        perm[(long long)p * n + pos] = lane;
    }
    if (lane == 0) {
        info[p] = zero_at;
        cumath_verdict(p, lo, hi, bad != 0, info, 1, eps, flag, out, flagged);
    }
    if (solve) {
        T* xp = (T*)(x + cumath_offset(x_off, x_step, p));
        const T* bp = (const T*)(b + cumath_offset(b_off, b_step, p));
        cumath_small_rhs<T, N>(r, lane, n, pos, piv, lane, bp, brs, bcs, xp, ldx, nrhs);
    }
}

template <typename T, int N>
__global__ void cumath_small_lus(CUMATH_SOLVE_PARAMS)
{
    const int p = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (p >= count) return;
    T r[N];
    cumath_load_row<T, N>(r, a, cumath_offset(a_off, a_step, p), rs, cs, lane, n, false);
    const long long src = lane < n ? perm[(long long)p * n + lane] : 0;
    T* xp = (T*)(x + cumath_offset(x_off, x_step, p));
    const T* bp = (const T*)(b + cumath_offset(b_off, b_step, p));
    cumath_small_rhs<T, N>(r, lane, n, lane, lane, src, bp, brs, bcs, xp, ldx, nrhs);
}

// Cholesky's: conj, the real part, a value divided by a real, a real as T (for real types: the value itself)
__device__ __forceinline__ float cumath_conj(float v) { return v; }
__device__ __forceinline__ double cumath_conj(double v) { return v; }
__device__ __forceinline__ cumath_c32 cumath_conj(cumath_c32 v) { return cumath_c32{v.x, -v.y}; }
__device__ __forceinline__ cumath_c64 cumath_conj(cumath_c64 v) { return cumath_c64{v.x, -v.y}; }
__device__ __forceinline__ float cumath_re(float v) { return v; }
__device__ __forceinline__ double cumath_re(double v) { return v; }
__device__ __forceinline__ float cumath_re(cumath_c32 v) { return v.x; }
__device__ __forceinline__ double cumath_re(cumath_c64 v) { return v.x; }
__device__ __forceinline__ float cumath_scale(float v, float s) { return v / s; }
__device__ __forceinline__ double cumath_scale(double v, double s) { return v / s; }
__device__ __forceinline__ cumath_c32 cumath_scale(cumath_c32 v, float s) { return cumath_c32{v.x / s, v.y / s}; }
__device__ __forceinline__ cumath_c64 cumath_scale(cumath_c64 v, double s) { return cumath_c64{v.x / s, v.y / s}; }
__device__ __forceinline__ float cumath_of_real(float s, float) { return s; }
__device__ __forceinline__ double cumath_of_real(double s, double) { return s; }
__device__ __forceinline__ cumath_c32 cumath_of_real(float s, cumath_c32) { return cumath_c32{s, 0.0f}; }
__device__ __forceinline__ cumath_c64 cumath_of_real(double s, cumath_c64) { return cumath_c64{s, 0.0}; }

// Cholesky (a = L L^H, lower): the solve of one system's right-hand sides into x from b, as cumath_small_rhs does
// for LU; lane i holds row i of L. The back substitution with L^H needs L's column k in the lanes above k: lane k
// hands out its row entry by entry (k shuffles at step k).
template <typename T, int N>
__device__ __forceinline__ void cumath_small_chol_rhs(const T (&r)[N], int lane, int n, const T* b, long long brs,
                                                      long long bcs, T* x, long long ldx, int nrhs)
{
    typedef typename cumath_real<T>::type R;
    const bool row = lane < n;
    for (int c = 0; c < nrhs; ++c) {
        T* col = x + (long long)c * ldx;
        T v = T{};
        if (row) v = b[lane * brs + c * bcs];
        __syncwarp();
#pragma unroll
        for (int k = 0; k < N; ++k) {  // L y = b
            if (k >= n) break;
            if (lane == k) v = cumath_scale(v, (R)cumath_re(r[k]));
            const T y = cumath_shfl(v, k);
            if (row && lane > k) v = cumath_fms(v, r[k], y);
        }
#pragma unroll
        for (int k = N - 1; k >= 0; --k) {  // L^H x = y
            if (k >= n) continue;
            if (lane == k) v = cumath_scale(v, (R)cumath_re(r[k]));
            const T y = cumath_shfl(v, k);
#pragma unroll
            for (int i = 0; i < k; ++i) {
                const T lki = cumath_shfl(r[i], k);
                if (lane == i) v = cumath_fms(v, cumath_conj(lki), y);
            }
        }
        if (row) col[lane] = v;
    }
}

// Cholesky of small systems: the arguments of cumath_small_lu (perm unused). Lane i loads row i of a's lower
// triangle (the part potrf reads); the factorization stops at the first pivot that is not positive (or NaN), as
// potrf does, info its 1-based step; L is written over the lower triangle (element strides rs, cs).
template <typename T, int N>
__global__ void cumath_small_chol(CUMATH_FUSED_PARAMS)
{
    typedef typename cumath_real<T>::type R;
    const int p = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (p >= count) return;
    T* m = (T*)(a + cumath_offset(a_off, a_step, p));
    const bool row = lane < n;
    T r[N];
    int bad = cumath_load_row<T, N>(r, s, cumath_offset(s_off, s_step, p), srs, scs, lane, n, true);
    int failed = 0;
    double lo = __longlong_as_double(0x7ff0000000000000LL), hi = 0.0;
#pragma unroll
    for (int k = 0; k < N; ++k) {
        if (k >= n) break;
        const R d = cumath_re(cumath_shfl(r[k], k));
        if (!(d > (R)0)) {  // (NaN too)
            failed = k + 1;
            break;
        }
        const R q = sqrt(d);
        lo = fmin(lo, (double)q);
        hi = fmax(hi, (double)q);
        if (lane == k) r[k] = cumath_of_real(q, r[k]);
        if (row && lane > k) r[k] = cumath_scale(r[k], q);
#pragma unroll
        for (int j = k + 1; j < N; ++j) {
            if (j >= n) break;
            const T ljk = cumath_shfl(r[k], j);
            if (row && lane >= j) r[j] = cumath_fms(r[j], r[k], cumath_conj(ljk));
        }
    }
#pragma unroll
    for (int j = 0; j < N; ++j)
        if (row && j <= lane && j < n) bad |= !cumath_finite(r[j]);
    for (int sh = 16; sh > 0; sh >>= 1) bad |= __shfl_xor_sync(CUMATH_FULL, bad, sh);
    __syncwarp();
    if (row) {
#pragma unroll
        for (int j = 0; j < N; ++j)
            if (j <= lane && j < n) m[lane * rs + j * cs] = r[j];
    }
    if (lane == 0) {
        info[p] = failed;
        cumath_verdict(p, lo, hi, bad != 0, info, 2, eps, flag, out, flagged);
    }
    if (solve) {
        T* xp = (T*)(x + cumath_offset(x_off, x_step, p));
        const T* bp = (const T*)(b + cumath_offset(b_off, b_step, p));
        if (!failed) {
            cumath_small_chol_rhs<T, N>(r, lane, n, bp, brs, bcs, xp, ldx, nrhs);
        } else if (row) {  // (no solution: NaN rather than whatever the memory held)
            const R nan = (R)__longlong_as_double(0x7ff8000000000000LL);
            for (int c = 0; c < nrhs; ++c) xp[(long long)c * ldx + lane] = cumath_of_real(nan, T{});
        }
    }
}

template <typename T, int N>
__global__ void cumath_small_chols(CUMATH_SOLVE_PARAMS)
{
    const int p = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (p >= count) return;
    T r[N];
    cumath_load_row<T, N>(r, a, cumath_offset(a_off, a_step, p), rs, cs, lane, n, true);
    T* xp = (T*)(x + cumath_offset(x_off, x_step, p));
    const T* bp = (const T*)(b + cumath_offset(b_off, b_step, p));
    cumath_small_chol_rhs<T, N>(r, lane, n, bp, brs, bcs, xp, ldx, nrhs);
}
"""


def padded_order(n: int) -> int:
    """The order the kernels are compiled for that holds systems of order ``n`` (at most MAX_ORDER)."""
    for order in ORDERS:
        if n <= order:
            return order
    raise ValueError(f"the small-system LU kernels take orders up to {MAX_ORDER}, not {n}")


def kernel_names(dtype: str, n: int, kind: str = "lu") -> tuple:
    """The name expressions of the factorization (fused with the solve) and the solve kernels for ``dtype`` and
    ``kind`` ('lu' or 'cholesky')."""
    args = f"<{C_TYPES[dtype]}, {padded_order(n)}>"
    stem = "cumath_small_lu" if kind == "lu" else "cumath_small_chol"
    return stem + args, stem + "s" + args


def grid(count: int) -> int:
    """Blocks of ``32 * WARPS`` threads for ``count`` systems (a warp each)."""
    return -(-count // WARPS)
