"""A small-GEMM kernel of our own: D = alpha * A @ B + beta * C for problems whose every extent is small.

For M, N, K <= 128 a GEMM is launch-bound: cuBLASLt's host cost (~9-12 us a call on an H200 host, measured
through the compiled caller) is most of a call, and its GPU time is a few microseconds of a kernel built around
tiles for large problems. This kernel is launched with one ``cuLaunchKernel`` from C (``launcher()``: the
operand pointers come from the same word list the cuBLASLt call takes, so the hot paths only swap the native
callable), and its GPU time is one round of global loads into shared memory and K fused multiply-adds per
thread.

``select(problem)`` returns a ``SmallGemm`` when the problem is in bounds (``decide``; set off with
``CUMATH_SMALL_MATMUL=0``), else None. Supported: float32 (FP32 compute, never TF32 or another compute type),
float64, float16 and bfloat16 (float32 accumulation, float16/bfloat16 or float32 results); any element strides
of A, B, C and D (the unit-stride axis of each is a compile-time choice of the source: it sets which thread
reads which element, for coalescing), C read where it is (no broadcast), uniform batch strides.

Each output is ``alpha * sum_p fma(A[i, p], B[p, j])`` accumulated in K order, then ``+ beta * C[i, j]``, in
the accumulation type, rounded once to the result type (what a reference implementation computes).

The source is CUDA C++ compiled with NVRTC (``cumath._core.kernels.get_kernel`` over ``cumath._core.jit``), one
variant per (dtypes, unit-stride axes, K capacity, C or not), content-addressed and cached on disk; the extents
and strides are launch arguments, so a new shape of the same layout compiles nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os
from dataclasses import dataclass

from ...errors import InvalidStateError
from ._memory_bound import _DTYPES, GemmProblem, built, stride_define

__all__ = ["SmallProblem", "SmallGemm", "decide", "select", "variant_defines", "render", "enabled", "LIMITS",
           "KERNEL_NAME", "ARG_TYPES", "TILE"]

logger = logging.getLogger(__name__)

KERNEL_NAME = "cumath_small_gemm"
TILE = 16  # a block computes TILE x TILE outputs, one per thread
# A, B, C, D, alpha, beta, then m, n, k, the eight element strides and the four batch strides
ARG_TYPES_F = "PPPPff" + "q" * 15
ARG_TYPES_D = "PPPPdd" + "q" * 15
ARG_TYPES = {"float": ARG_TYPES_F, "double": ARG_TYPES_D}


@dataclass(frozen=True)
class Limits:
    """Which problems the kernel takes (every extent small), and why these numbers (benchmarks/NOTES.md,
    "Small matmuls"): up to K = 128 a block's A and B panels fit in shared memory in one load round (float64:
    2 x 16 x 129 x 8 bytes, 33 KiB), so the GPU time is about one load latency plus K dependent FMAs, below the
    ~4-6 us cuBLASLt's kernels take at these sizes; ``max_work`` (multiply-adds of the whole batch) keeps the
    grid within about one wave of resident blocks, where a tiled library kernel stops losing."""

    max_m: int = 128
    max_n: int = 128
    max_k: int = 128
    max_work: int = 128 * 128 * 128
    max_batch: int = 65535  # gridDim.z


LIMITS = Limits()


@dataclass(frozen=True)
class SmallProblem(GemmProblem):
    """D (m x n) = alpha * A (m x k) @ B (k x n) + beta * C (m x n), strides in elements, per batch entry (the
    memory-bound kernel's problem, any C strides), with the result's dtype (``d_dtype``, of C and D; None: A's)
    and the accumulation type the caller's compute type asks for (``compute``: 'float32' or 'float64'; None: the
    dtype's default)."""

    d_dtype: str | None = None
    compute: str | None = None

    def __post_init__(self):
        if self.d_dtype is None:
            object.__setattr__(self, "d_dtype", self.dtype)
        if self.compute is None:
            object.__setattr__(self, "compute", "float64" if self.dtype == "float64" else "float32")


# (a/b dtype) -> (accumulation type, the result dtypes the kernel writes)
_COMBOS = {"float32": ("float32", ("float32",)), "float64": ("float64", ("float64",)),
           "float16": ("float32", ("float16", "float32")), "bfloat16": ("float32", ("bfloat16", "float32"))}


def enabled() -> bool:
    """False when ``CUMATH_SMALL_MATMUL`` is 0/off/false/no (cuBLASLt then runs every small problem)."""
    return os.environ.get("CUMATH_SMALL_MATMUL", "1").strip().lower() not in ("0", "off", "false", "no")


def decide(p: SmallProblem, limits: Limits = LIMITS) -> tuple[bool, str]:
    """Whether the small-GEMM kernel takes ``p``, and why (pure)."""
    combo = _COMBOS.get(p.dtype)
    if combo is None:
        return False, f"dtype {p.dtype} (the kernel runs {', '.join(_COMBOS)})"
    acc, outs = combo
    if p.d_dtype not in outs:
        return False, f"{p.dtype} operands with a {p.d_dtype} result"
    if p.compute != acc:
        return False, f"compute in {p.compute}; the kernel accumulates {p.dtype} in {acc}"
    if min(p.m, p.n, p.k, p.batch) <= 0:
        return False, f"empty problem (m={p.m}, n={p.n}, k={p.k}, batch={p.batch})"
    if p.m > limits.max_m or p.n > limits.max_n or p.k > limits.max_k:
        return False, (f"m={p.m}, n={p.n}, k={p.k} above the limits (m <= {limits.max_m}, n <= {limits.max_n}, "
                       f"k <= {limits.max_k})")
    work = p.m * p.n * p.k * p.batch
    if work > limits.max_work or p.batch > limits.max_batch:
        return False, f"{work} multiply-adds in a batch of {p.batch}, above {limits.max_work}: cuBLASLt's tiles win"
    return True, f"small problem: m={p.m} n={p.n} k={p.k} batch={p.batch}, {p.dtype} -> {p.d_dtype}"


def _k_capacity(k: int) -> int:
    return next(c for c in (32, 64, 128) if k <= c) if k <= 128 else k


def variant_defines(p: SmallProblem) -> dict:
    """The ``#define``s of the variant for ``p`` (pure: the rendered text is the cache address)."""
    acc = "double" if p.compute == "float64" else "float"
    ti, to = _DTYPES[p.dtype], _DTYPES[p.d_dtype]
    sa_m, sa_k = p.a_strides
    sb_k, sb_n = p.b_strides
    sd_m, sd_n = p.d_strides
    sc = p.c_strides or (0, 0)

    stride = stride_define
    # which thread index walks which axis, for coalesced accesses: A's panel is read along its unit axis,
    # B's likewise, and D is written with threadIdx.x along its unit axis
    return {
        "ELEM_IN": ti.elem, "ELEM_OUT": to.elem, "ACC": acc, "CONV_IN": ti.conv, "CONV_OUT": to.conv,
        "TILE": TILE, "KC": _k_capacity(p.k), "HAS_C": int(p.c_strides is not None),
        "A_MFAST": int(sa_m == 1 and sa_k != 1), "B_KFAST": int(sb_k == 1 and sb_n != 1),
        "D_MFAST": int(sd_m == 1 and sd_n != 1),
        "SA_M": stride("sa_m", sa_m), "SA_K": stride("sa_k", sa_k), "SB_K": stride("sb_k", sb_k),
        "SB_N": stride("sb_n", sb_n), "SC_M": stride("sc_m", sc[0]), "SC_N": stride("sc_n", sc[1]),
        "SD_M": stride("sd_m", sd_m), "SD_N": stride("sd_n", sd_n),
    }


def render(defines: dict) -> str:
    """The kernel source of one variant: the ``#define`` lines, then the template."""
    return "".join(f"#define {k} {v}\n" for k, v in defines.items()) + SOURCE


def launch_shape(p: SmallProblem, defines: dict) -> tuple[tuple[int, int, int], int]:
    """(grid, threads per block): blockIdx.x along D's unit axis, blockIdx.y the other, blockIdx.z the batch."""
    rows, cols = -(-p.m // TILE), -(-p.n // TILE)
    grid = (rows, cols, p.batch) if defines["D_MFAST"] else (cols, rows, p.batch)
    return grid, TILE * TILE


def static_args(p: SmallProblem) -> tuple:
    """The 15 integer launch arguments after A, B, C, D, alpha and beta."""
    sc = p.c_strides or (0, 0)
    return (p.m, p.n, p.k, p.a_strides[0], p.a_strides[1], p.b_strides[0], p.b_strides[1], sc[0], sc[1],
            p.d_strides[0], p.d_strides[1], p.a_batch_stride, p.b_batch_stride, p.c_batch_stride, p.d_batch_stride)


def select(problem: SmallProblem, limits: Limits = LIMITS) -> "SmallGemm | None":
    """A ``SmallGemm`` for ``problem`` when the kernel takes it, else None (logged)."""
    if not enabled():
        logger.info("small-GEMM kernel turned off (CUMATH_SMALL_MATMUL=0)")
        return None
    ok, why = decide(problem, limits)
    if ok:  # asked before anything is compiled: without a GPU there is nothing to run on
        from ..._core.kernels import device_arch

        try:
            if device_arch(problem.device_id) < 80 and "bfloat16" in (problem.dtype, problem.d_dtype):
                ok, why = False, "bfloat16 conversions need compute capability 8.0"
        except Exception as exc:
            ok, why = False, f"no usable GPU ({type(exc).__name__}: {exc})"
    return built("small-GEMM kernel", ok, why, problem, lambda: SmallGemm(problem), logger)


class SmallGemm:
    """The planned kernel of one ``SmallProblem``. ``launch`` runs it (the ``Kernel`` protocol of the engines);
    ``launcher(...)`` gives the hot paths one native callable over a cuBLASLt-shaped word list."""

    def __init__(self, problem: SmallProblem):
        from ..._core.kernels import get_kernel

        ok, why = decide(problem)
        if not ok:
            raise ValueError(f"the small-GEMM kernel cannot run this problem: {why}")
        self.problem = problem
        self.defines = variant_defines(problem)
        self.acc = self.defines["ACC"]
        self.arg_types = ARG_TYPES[self.acc]
        self.kernel = get_kernel(render(self.defines), KERNEL_NAME, self.arg_types, device_id=problem.device_id)
        self.grid, self.block = launch_shape(problem, self.defines)
        self._static = static_args(problem)
        self._has_c = problem.c_strides is not None
        self._freed = False
        self._buffers = []  # what launchers point into (kept as long as this kernel)

    def launch(self, a_ptr: int, b_ptr: int, c_ptr: int, d_ptr: int, alpha, beta, stream: int) -> None:
        """D = alpha * A @ B + beta * C on ``stream`` (``c_ptr`` 0 and beta unused without C)."""
        if self._freed:
            raise InvalidStateError("this SmallGemm was freed; select() a new one")
        if self._has_c and not c_ptr:
            raise ValueError("the problem has C but no C was given (c_ptr is 0)")
        self.kernel.launch(self.grid, self.block, 0, stream, a_ptr, b_ptr, c_ptr if self._has_c else 0, d_ptr,
                           complex(alpha).real, complex(beta).real if self._has_c else 0.0, *self._static)

    def launcher(self, alpha_addr: int, beta_addr: int, slots: dict, nwords: int, on_error=None):
        """One native callable ``f(*words) -> status`` that launches the kernel with A, B, C, D and the stream read
        from ``words`` at ``slots['a'|'b'|'c'|'d'|'stream']`` (the cuBLASLt argument list's positions), alpha and
        beta read at launch time from the host addresses ``alpha_addr``/``beta_addr`` (values of the
        accumulation type, which is the plan's scale type), the rest fixed here."""
        from ..._core._fast import launch_words

        # the fixed integer arguments, then a zero: the value of C's parameter when the problem has no C (every
        # kernelParams entry must point at a value, even one the kernel never dereferences)
        static = (ctypes.c_longlong * (len(self._static) + 1))(*self._static, 0)
        base = ctypes.addressof(static)
        null = base + 8 * len(self._static)
        params = [null, null, null, null, alpha_addr, beta_addr] + [base + 8 * i for i in range(len(self._static))]
        word_map = ((slots["a"], 0), (slots["b"], 1), (slots["d"], 3)) + (((slots["c"], 2),) if self._has_c else ())
        fn = launch_words(self.kernel.function, self.grid, (self.block, 1, 1), 0, params, word_map, slots["stream"],
                          nwords, on_error)
        self._buffers.append(static)
        return fn

    def free(self) -> None:
        """Forget the kernel (the compiled module stays cached for the process). Idempotent."""
        self._freed = True

    def __repr__(self) -> str:
        p = self.problem
        return f"SmallGemm(m={p.m}, n={p.n}, k={p.k}, {p.dtype} -> {p.d_dtype}, batch={p.batch})"


# The kernel template; variant_defines() supplies the #defines. A block owns a TILE x TILE tile of D, one output
# per thread; it stages the tile's A rows (TILE x K) and B columns (K x TILE) in shared memory in one round of
# loads (every thread issues its loads before any is waited for), converted to the accumulation type, then each
# thread runs its K fused multiply-adds in K order. threadIdx.x walks D's unit axis (D_MFAST: rows) so the
# stores of a warp are consecutive; the panels are read along each operand's unit axis (A_MFAST, B_KFAST).
# The padding of the panels (KC + 1, TILE + 1) keeps a warp's reads of one column in distinct banks.
SOURCE = r"""
typedef long long i64;

__device__ __forceinline__ float mad(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double mad(double a, double b, double c) { return fma(a, b, c); }

__device__ __forceinline__ ACC in_to_acc(ELEM_IN x) {
#if CONV_IN == 0
  return (ACC)x;
#elif defined(CUMATH_HOST)
  return cumath_host_to_float(x, CONV_IN);
#elif CONV_IN == 1
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x)); return f;
#else
  return __uint_as_float(((unsigned int)x) << 16);
#endif
}

__device__ __forceinline__ ACC out_to_acc(ELEM_OUT x) {
#if CONV_OUT == 0
  return (ACC)x;
#elif defined(CUMATH_HOST)
  return cumath_host_to_float(x, CONV_OUT);
#elif CONV_OUT == 1
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x)); return f;
#else
  return __uint_as_float(((unsigned int)x) << 16);
#endif
}

__device__ __forceinline__ ELEM_OUT acc_to_out(ACC x) {
#if CONV_OUT == 0
  return (ELEM_OUT)x;
#elif defined(CUMATH_HOST)
  return cumath_host_from_float(x, CONV_OUT);
#elif CONV_OUT == 1
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h;
#else
  unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h;
#endif
}

extern "C" __global__ void __launch_bounds__(TILE * TILE)
cumath_small_gemm(const ELEM_IN* __restrict__ A, const ELEM_IN* __restrict__ B, const ELEM_OUT* __restrict__ C,
                  ELEM_OUT* __restrict__ D, ACC alpha, ACC beta, i64 m, i64 n, i64 k, i64 sa_m, i64 sa_k,
                  i64 sb_k, i64 sb_n, i64 sc_m, i64 sc_n, i64 sd_m, i64 sd_n, i64 bsa, i64 bsb, i64 bsc, i64 bsd)
{
  __shared__ ACC As[TILE][KC + 1];  // As[i][p] = A[r0 + i, p]
  __shared__ ACC Bs[KC][TILE + 1];  // Bs[p][j] = B[p, c0 + j]
  const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
#if D_MFAST
  const i64 r0 = (i64)blockIdx.x * TILE, c0 = (i64)blockIdx.y * TILE;
  const int ti = tx, tj = ty;  // this thread's output: row r0 + ti, column c0 + tj
#else
  const i64 r0 = (i64)blockIdx.y * TILE, c0 = (i64)blockIdx.x * TILE;
  const int ti = ty, tj = tx;
#endif
  const i64 z = blockIdx.z;
  const ELEM_IN* __restrict__ Az = A + z * bsa;
  const ELEM_IN* __restrict__ Bz = B + z * bsb;
  const int kk = (int)k;
  // A's panel: TILE rows, k columns (zero past m)
#if A_MFAST
  for (int p = ty; p < kk; p += TILE) {
    const i64 r = r0 + tx;
    As[tx][p] = r < m ? in_to_acc(Az[r * SA_M + (i64)p * SA_K]) : (ACC)0;
  }
#else
  for (int p = tx; p < kk; p += TILE) {
    const i64 r = r0 + ty;
    As[ty][p] = r < m ? in_to_acc(Az[r * SA_M + (i64)p * SA_K]) : (ACC)0;
  }
#endif
  // B's panel: k rows, TILE columns (zero past n)
#if B_KFAST
  for (int p = tx; p < kk; p += TILE) {
    const i64 c = c0 + ty;
    Bs[p][ty] = c < n ? in_to_acc(Bz[(i64)p * SB_K + c * SB_N]) : (ACC)0;
  }
#else
  for (int p = ty; p < kk; p += TILE) {
    const i64 c = c0 + tx;
    Bs[p][tx] = c < n ? in_to_acc(Bz[(i64)p * SB_K + c * SB_N]) : (ACC)0;
  }
#endif
  __syncthreads();
  const i64 r = r0 + ti, c = c0 + tj;
  if (r >= m || c >= n) return;
  ACC acc = (ACC)0;
#pragma unroll 8
  for (int p = 0; p < kk; ++p) acc = mad(As[ti][p], Bs[p][tj], acc);
  acc *= alpha;
#if HAS_C
  if (beta != (ACC)0) acc = mad(beta, out_to_acc(C[z * bsc + r * SC_M + c * SC_N]), acc);  // beta = 0: C unread
#endif
  D[z * bsd + r * SD_M + c * SD_N] = acc_to_out(acc);
}
"""
