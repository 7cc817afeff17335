"""A memory-bound GEMM of our own for small k and n: D = alpha * A @ B + beta * C, any m, batched.

For tall-skinny products (k and n small, m large) the time is the time to move A, C and D through memory;
cuBLASLt's GEMM kernels, built around tiles for compute-bound shapes, reach about half the bandwidth there
(benchmarks/NOTES.md, "Tall-skinny GEMM"). ``select(problem)`` returns a ``MemoryBoundGemm`` when this
kernel is expected to beat cuBLASLt (a rule on k, n and the arithmetic intensity, set from measurements on
an H200), else None; ``MemoryBoundGemm.launch(a_ptr, b_ptr, c_ptr, d_ptr, alpha, beta, stream)`` runs it.

The kernel is CUDA C++ compiled with NVRTC (``cumath._core.kernels.get_kernel``, through the JIT driver
``cumath._core.jit``), one variant per (dtype, k, n, layout, vector widths), cached on disk. Supported:
float32, float64, float16 and bfloat16 (float accumulation); D with unit stride along n (row-major) or along m
(column-major); A and C with any strides (vector loads where their unit stride matches D's), C broadcast across
columns (strides (s, 0)), no C.
Pointers that are not aligned for the vector loads run a scalar variant (chosen per launch).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace

from ...errors import InvalidStateError

__all__ = ["GemmProblem", "MemoryBoundGemm", "select", "decide", "plan_layout", "Tuning", "TUNING", "render",
           "INTENSITY_LIMITS"]

logger = logging.getLogger(__name__)

KERNEL_NAME = "cumath_mbgemm"


@dataclass(frozen=True)
class GemmProblem:
    """D (m x n) = alpha * A (m x k) @ B (k x n) + beta * C (m x n), strides in elements."""

    m: int
    n: int
    k: int
    dtype: str  # numpy dtype name, the same for A, B, C, D
    a_strides: tuple[int, int]  # (row, column) strides of A
    b_strides: tuple[int, int]
    c_strides: tuple[int, int] | None  # None: no C; (s, 0): one column broadcast across n
    d_strides: tuple[int, int]
    batch: int = 1
    a_batch_stride: int = 0
    b_batch_stride: int = 0
    c_batch_stride: int = 0
    d_batch_stride: int = 0
    device_id: int = 0


@dataclass(frozen=True)
class _DType:
    elem: str  # C storage type
    acc: str  # C accumulation type (also of alpha and beta)
    size: int
    conv: int  # 0 plain, 1 IEEE half, 2 bfloat16 (stored as unsigned short, converted in PTX)


_DTYPES = {
    "float32": _DType("float", "float", 4, 0),
    "float64": _DType("double", "double", 8, 0),
    "float16": _DType("unsigned short", "float", 2, 1),
    "bfloat16": _DType("unsigned short", "float", 2, 2),
}


@dataclass(frozen=True)
class Tuning:
    """Launch shape and selection limits, set from the H200 sweep of 2026-11-29 (benchmarks/NOTES.md,
    "Tall-skinny GEMM")."""

    max_k: int = 64
    max_n: int = 256
    # largest flop per byte moved (A, C and D; k and n fix it) at which the kernel still beat cuBLAS;
    # 0 takes the measured limit of the dtype from INTENSITY_LIMITS
    max_intensity: float = 0.0
    min_bytes: int = 1 << 20  # below this both are launch-bound; leave it to cuBLASLt
    block_r: int = 256  # threads per block aimed at, D row-major
    unroll_r: int = 1  # rows per thread and tile, D row-major (tile = rows per block step x unroll)
    b_regs_max: int = 64  # alpha * B in registers when k * VEC <= this, D row-major
    block_c: int = 256  # D column-major
    junroll_c: int = 1  # columns unrolled, D column-major (more unrolling cost registers and time)
    waves: int = 1  # blocks launched = waves x resident blocks (a persistent grid); 0: one block per tile
    stream_hints: bool = True  # __ldcs / __stcs on C and D
    min_blocks: int = 0  # __launch_bounds__ second argument (0: none)
    async_copy: bool = True  # D row-major with contiguous A and C rows: stream tiles through shared memory
    stages: int = 4  # shared-memory buffers of the cp.async pipeline


# flop/byte where the kernel stopped beating cuBLAS (in-place addmm_) on the H200, m = 2e6, row-major:
# float32 won up to 3.2 (k=64, n=8: 0.63x cuBLAS's time) and lost from 5.7 (k=32, n=40: 1.09x);
# float64 won at 1.1 (0.73x) and tied at 3.6 (k=32, n=128: 0.99x); float16 won at 4.4 (0.42x) and lost at
# 14.2 (2.7x: cuBLAS uses tensor cores there). bfloat16 is taken to behave as float16.
INTENSITY_LIMITS = {"float32": 4.0, "float64": 3.0, "float16": 6.0, "bfloat16": 6.0}


TUNING = Tuning()


@dataclass(frozen=True)
class _Layout:
    """The pure plan of a problem: mapping mode, operand kinds, vector widths of the aligned variant."""

    mode: str  # "R": D row-major, "C": D column-major
    a_kind: int  # 0 unit stride along k, 1 along m, 2 general
    c_kind: int  # 0 no C, 1 unit stride along D's unit axis, 2 broadcast column, 3 general
    vec: int  # elements per vector along D's unit axis (C and D; A too in mode C when a_kind == 1)
    va: int  # elements per vector along k for A's rows (mode R, a_kind == 0)
    a_align: int  # bytes a_ptr must be aligned to for the vector variant (1: none)
    c_align: int
    d_align: int
    async_ok: bool = False  # rows of A and C contiguous (lda == k, ldc == n): tiles can be copied in 16 B pieces


def _fits(width: int, *strides: int) -> bool:
    return all(s % width == 0 for s in strides)


def plan_layout(p: GemmProblem) -> tuple[_Layout | None, str]:
    """The layout plan of ``p``, or (None, why not)."""
    dt = _DTYPES.get(p.dtype)
    if dt is None:
        return None, f"dtype {p.dtype} (supported: {', '.join(_DTYPES)})"
    sa_m, sa_k = p.a_strides
    sd_m, sd_n = p.d_strides
    if sd_n == 1 and (p.n > 1 or sd_m != 1):
        mode = "R"
    elif sd_m == 1:
        mode = "C"
    else:
        return None, f"D has no unit stride (strides {p.d_strides})"
    if p.c_strides is None:
        c_kind = 0
    else:
        sc_m, sc_n = p.c_strides
        if sc_n == 0 and p.n > 1:
            c_kind = 2
        elif (mode == "R" and (sc_n == 1 or p.n == 1)) or (mode == "C" and sc_m == 1):
            c_kind = 1
        else:
            c_kind = 3
    a_kind = 0 if (sa_k == 1 or p.k == 1) else 1 if sa_m == 1 else 2
    size = dt.size
    widest = max(1, 16 // size)
    vec = va = 1
    a_align = c_align = d_align = 1
    if mode == "R":
        lead = [sd_m, p.d_batch_stride] + ([p.c_strides[0], p.c_batch_stride] if c_kind == 1 else [])
        vec = next(w for w in (widest, widest // 2, widest // 4, widest // 8, 1)
                   if w >= 1 and p.n % w == 0 and _fits(w, *lead))
        if a_kind == 0:
            va = next(w for w in (widest, widest // 2, widest // 4, widest // 8, 1)
                      if w >= 1 and p.k % w == 0 and _fits(w, sa_m, p.a_batch_stride))
        a_align = va * size if va > 1 else 1
    else:
        lead = [sd_n, p.d_batch_stride] + ([p.c_strides[1], p.c_batch_stride] if c_kind == 1 else [])
        # A's K x VEC values stay in registers: keep them within 64
        cap = max(1, min(widest, 64 // max(p.k, 1)))
        vec = next(w for w in (8, 4, 2, 1) if w <= cap and _fits(w, *lead))
        if a_kind == 1 and _fits(vec, sa_k, p.a_batch_stride):
            a_align = vec * size
    d_align = vec * size
    c_align = vec * size if c_kind == 1 else 1
    async_ok = (mode == "R" and a_kind == 0 and sa_m == p.k and (p.a_batch_stride * size) % 16 == 0
                and (c_kind == 0 or (c_kind == 1 and p.c_strides[0] == p.n and (p.c_batch_stride * size) % 16 == 0)))
    return _Layout(mode, a_kind, c_kind, vec, va, a_align, c_align, d_align, async_ok), "ok"


def _intensity(p: GemmProblem) -> tuple[float, int]:
    """(flop per byte moved, bytes moved) of one product: A and C read, D written, B read once."""
    size = _DTYPES[p.dtype].size
    c_elems = 0 if p.c_strides is None else (p.m if p.c_strides[1] == 0 and p.n > 1 else p.m * p.n)
    nbytes = size * p.batch * (p.m * p.k + p.k * p.n + c_elems + p.m * p.n)
    return 2.0 * p.m * p.n * p.k * p.batch / max(nbytes, 1), nbytes


def decide(p: GemmProblem, tuning: Tuning = TUNING) -> tuple[bool, str]:
    """Whether the memory-bound kernel is expected to beat cuBLASLt on ``p``, and why (pure)."""
    if min(p.m, p.n, p.k, p.batch) <= 0:
        return False, f"empty problem (m={p.m}, n={p.n}, k={p.k}, batch={p.batch})"
    if p.k > tuning.max_k or p.n > tuning.max_n:
        return False, f"k={p.k}, n={p.n} above the limits (k <= {tuning.max_k}, n <= {tuning.max_n})"
    layout, why = plan_layout(p)
    if layout is None:
        return False, why
    if layout.c_kind == 3:
        return False, f"C strides {p.c_strides} do not follow D's unit stride {p.d_strides}"
    intensity, nbytes = _intensity(p)
    limit = tuning.max_intensity or INTENSITY_LIMITS[p.dtype]
    if intensity > limit:
        return False, f"{intensity:.1f} flop/byte, above {limit}: compute matters, cuBLASLt wins"
    if nbytes < tuning.min_bytes:
        return False, f"{nbytes} bytes moved, below {tuning.min_bytes}: launch-bound either way"
    return True, (f"memory-bound: {intensity:.2f} flop/byte (<= {limit}), k={p.k} n={p.n}, "
                  f"{nbytes / 1e6:.1f} MB moved, D {'row' if layout.mode == 'R' else 'column'}-major, "
                  f"vector width {layout.vec}")


def select(problem: GemmProblem, tuning: Tuning = TUNING) -> "MemoryBoundGemm | None":
    """A ``MemoryBoundGemm`` for ``problem`` when it is expected to beat cuBLASLt, else None (logged)."""
    ok, why = decide(problem, tuning)
    if ok and problem.dtype == "bfloat16":
        from ..._core.kernels import device_arch

        try:
            if device_arch(problem.device_id) < 80:
                ok, why = False, "bfloat16 conversions need compute capability 8.0"
        except Exception as exc:  # no GPU: nothing to run on
            ok, why = False, f"no usable GPU ({exc})"
    return built("memory-bound GEMM", ok, why, problem, lambda: MemoryBoundGemm(problem, tuning))


def built(label: str, ok: bool, why: str, problem, make, log=logger):
    """The engine ``make()`` builds for ``problem`` where the rules allowed it (``ok``), else None; the choice,
    or why there is none, logged on ``log`` (a build failure: no NVRTC, no GPU, a compile error, leaves cuBLASLt the work)."""
    dims = (problem.m, problem.n, problem.k, problem.dtype)
    if not ok:
        log.info("%s not chosen for m=%d n=%d k=%d %s: %s", label, *dims, why)
        return None
    try:
        engine = make()
    except Exception as exc:
        log.warning("%s unavailable for m=%d n=%d k=%d %s (%s: %s); using cuBLASLt", label, *dims,
                       type(exc).__name__, exc)
        return None
    log.info("%s chosen for m=%d n=%d k=%d %s: %s", label, *dims, why)
    return engine


def _rows_per_block(ch: int, target: int) -> int:
    """Rows per block step for ``ch`` column chunks: blocks near ``target`` threads, whole warps if possible."""
    unit = 32 // math.gcd(ch, 32)
    rpb = unit * max(1, round(target / (ch * unit)))
    while rpb > unit and ch * rpb > 1024:
        rpb -= unit
    if ch * rpb > 1024:
        rpb = max(1, 1024 // ch)
    return rpb


def _bs_bytes(p: GemmProblem) -> int:
    """Bytes of alpha * B in shared memory, rounded up to 16 (the tile buffers follow it)."""
    acc = 8 if _DTYPES[p.dtype].acc == "double" else 4
    return -(-p.k * p.n * acc // 16) * 16


def stride_define(name: str, value: int) -> str:
    """A stride in a kernel's ``#define``: ``1`` where it is one (the compiler folds it), else the argument's name."""
    return "1" if value == 1 else name


def variant_defines(p: GemmProblem, layout: _Layout, tuning: Tuning, aligned: bool, has_c: bool) -> dict:
    """The ``#define``s of one kernel variant (pure: the rendered text is the cache address)."""
    dt = _DTYPES[p.dtype]
    vec = layout.vec if aligned else 1
    va = layout.va if aligned else 1
    av = vec if (aligned and layout.mode == "C" and layout.a_align > 1) else 1
    mode_r = layout.mode == "R"
    ch = p.n // vec if mode_r else 0
    rpb = _rows_per_block(ch, tuning.block_r) if mode_r else 0
    block = ch * rpb if mode_r else tuning.block_c
    b_regs = int(mode_r and p.k * vec <= tuning.b_regs_max)
    tr = rpb * tuning.unroll_r
    use_async = bool(aligned and layout.async_ok and tuning.async_copy and tuning.stages >= 2
                     and (tr * p.n * dt.size) % 16 == 0 and (tr * p.k * dt.size) % 16 == 0)
    bounds = f"__launch_bounds__({block}, {tuning.min_blocks})" if tuning.min_blocks else f"__launch_bounds__({block})"

    stride = stride_define
    sc = p.c_strides or (0, 0)
    return {
        "ELEM": dt.elem, "ACC": dt.acc, "ELEM_BYTES": dt.size, "CONV": dt.conv,
        "K_": p.k, "N_": p.n, "VEC": vec, "VA": va, "AV": av, "CH": max(ch, 1), "RPB": max(rpb, 1),
        "BLOCK": block, "UNROLL": tuning.unroll_r, "JUNROLL": tuning.junroll_c,
        "MODE_R": int(mode_r), "HAS_C": int(has_c), "C_KIND": layout.c_kind if has_c else 0,
        "A_KIND": layout.a_kind, "B_REGS": b_regs, "STREAM_HINTS": int(tuning.stream_hints),
        "ASYNC": int(use_async), "STAGES": tuning.stages, "TR": max(tr, 1),
        "CS_ELEMS": tuning.stages * tr * p.n if (use_async and has_c) else 0,
        "BS_BYTES": _bs_bytes(p),
        "LAUNCH_BOUNDS": bounds,
        "SA_M": stride("sa_m", p.a_strides[0]), "SA_K": stride("sa_k", p.a_strides[1]),
        "SB_K": stride("sb_k", p.b_strides[0]), "SB_N": stride("sb_n", p.b_strides[1]),
        "SC_M": stride("sc_m", sc[0]), "SC_N": stride("sc_n", sc[1]),
        "SD_M": stride("sd_m", p.d_strides[0]), "SD_N": stride("sd_n", p.d_strides[1]),
    }


def render(defines: dict) -> str:
    """The kernel source of one variant: the ``#define`` lines, then the template."""
    return "".join(f"#define {k} {v}\n" for k, v in defines.items()) + _SOURCE


class MemoryBoundGemm:
    """The planned kernel for one ``GemmProblem``; ``launch`` runs it on a stream, ``free`` forgets it.

    Variants (aligned or not for the vector loads, with or without C) are compiled on first use and
    cached; the one for aligned pointers with C (or without, when the problem has none) is compiled here.
    """

    def __init__(self, problem: GemmProblem, tuning: Tuning = TUNING):
        layout, why = plan_layout(problem)
        if layout is None:
            raise ValueError(f"the memory-bound GEMM cannot run this problem: {why}")
        from ..._core.kernels import device_arch

        if tuning.async_copy and device_arch(problem.device_id) < 80:  # cp.async needs compute capability 8.0
            tuning = replace(tuning, async_copy=False)
        self.problem = problem
        self.tuning = tuning
        self.layout = layout
        self._has_c = problem.c_strides is not None
        tiles = layout.async_ok and tuning.async_copy  # 16-byte pieces of A and C in the aligned variant
        self._masks = (max(layout.a_align, 16 if tiles else 1) - 1,
                       max(layout.c_align, 16 if tiles and layout.c_kind == 1 else 1) - 1, layout.d_align - 1)
        self._acc_double = _DTYPES[problem.dtype].acc == "double"
        p = problem
        sc = p.c_strides or (0, 0)
        self._static = (p.m, p.a_strides[0], p.a_strides[1], p.b_strides[0], p.b_strides[1], sc[0], sc[1],
                        p.d_strides[0], p.d_strides[1], p.batch, p.a_batch_stride, p.b_batch_stride,
                        p.c_batch_stride, p.d_batch_stride)
        self._variants: dict = {}
        self._freed = False
        self._prepare(True, self._has_c)

    def _prepare(self, aligned: bool, has_c: bool):
        from ..._bindings import cudart
        from ..._core.kernels import get_kernel

        p = self.problem
        defines = variant_defines(p, self.layout, self.tuning, aligned, has_c)
        args = "PPPP" + ("dd" if self._acc_double else "ff") + "q" * 14
        kernel = get_kernel(render(defines), KERNEL_NAME, args, device_id=p.device_id)
        block = defines["BLOCK"]
        size = _DTYPES[p.dtype].size
        smem = defines["BS_BYTES"]
        if defines["ASYNC"]:
            smem += (defines["CS_ELEMS"] + defines["STAGES"] * defines["TR"] * p.k) * size
        if smem > 48 * 1024:
            kernel.set_attribute(8, smem)  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        if defines["MODE_R"]:
            needed = -(-p.m // (defines["RPB"] * defines["UNROLL"]))
        else:
            needed = -(-p.m // (block * defines["VEC"]))
        gy = min(p.batch, 65535)
        if self.tuning.waves:
            sms = cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrMultiProcessorCount, p.device_id)
            resident = sms * max(1, kernel.max_active_blocks_per_sm(block, smem))
            gx = max(1, min(needed, -(-resident * self.tuning.waves // gy)))
        else:
            gx = max(1, min(needed, 2**31 - 1))
        entry = self._variants[(aligned, has_c)] = (kernel, (gx, gy, 1), block, smem)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("memory-bound GEMM variant aligned=%s has_c=%s: grid %s, block %d, %s", aligned, has_c,
                         (gx, gy), block, {k: defines[k] for k in ("VEC", "VA", "AV", "RPB", "B_REGS", "UNROLL", "ASYNC")})
        return entry

    def launch(self, a_ptr: int, b_ptr: int, c_ptr: int, d_ptr: int, alpha, beta, stream: int) -> None:
        """D = alpha * A @ B + beta * C on ``stream``; ``c_ptr`` is 0 when there is no C (beta then unused)."""
        if self._freed:
            raise InvalidStateError("this MemoryBoundGemm was freed; select() a new one")
        has_c = self._has_c and beta != 0
        if has_c and not c_ptr:
            raise ValueError("beta is non-zero but no C was given (c_ptr is 0)")
        if c_ptr and not self._has_c:
            raise ValueError("a C was given to a problem planned without C (c_strides=None)")
        am, cm, dm = self._masks
        aligned = not ((a_ptr & am) | ((c_ptr & cm) if has_c else 0) | (d_ptr & dm))
        kernel, grid, block, smem = self._variants.get((aligned, has_c)) or self._prepare(aligned, has_c)
        kernel.launch(grid, block, smem, stream, a_ptr, b_ptr, c_ptr if has_c else 0, d_ptr, alpha,
                      beta if has_c else 0.0, *self._static)

    def free(self) -> None:
        """Forget the kernels (the compiled modules stay cached for the process). Idempotent."""
        self._variants.clear()
        self._freed = True

    def __repr__(self) -> str:
        p = self.problem
        return (f"MemoryBoundGemm(m={p.m}, n={p.n}, k={p.k}, {p.dtype}, batch={p.batch}, "
                f"D {'row' if self.layout.mode == 'R' else 'column'}-major, vec={self.layout.vec})")


# The kernel template; variant_defines() supplies the #defines. Two thread mappings, by D's unit-stride axis:
# - MODE_R (D row-major): a thread owns VEC consecutive columns (chunk c of CH = N / VEC) and walks rows; a
#   block covers RPB consecutive rows per step (BLOCK = CH * RPB threads), so a warp's C loads and D stores
#   are consecutive VEC-wide vectors. alpha * B's K x VEC slice sits in registers (B_REGS) or is read from
#   shared memory; A's row goes through the read-only cache, shared by the CH threads of the row. UNROLL
#   rows per thread are loaded before any is computed (more bytes in flight).
# - MODE_C (D column-major): a thread owns VEC consecutive rows, keeps their K x VEC values of A in
#   registers and walks the n columns: one vector load of C and one vector store of D per column,
#   coalesced across the warp; alpha * B comes from shared memory at a warp-uniform address (a broadcast).
# blockIdx.x strides over rows (a persistent grid when fewer blocks are launched than tiles), blockIdx.y over
# the batch. C and D get streaming cache hints (STREAM_HINTS): each byte is touched once.
_SOURCE = r"""
typedef long long i64;

template <int BYTES> struct RawT;
template <> struct RawT<16> { typedef uint4 T; };
template <> struct RawT<8> { typedef uint2 T; };
template <> struct RawT<4> { typedef unsigned int T; };
template <> struct RawT<2> { typedef unsigned short T; };

__device__ __forceinline__ ACC to_acc(ELEM x) {
#if CONV == 0
  return (ACC)x;
#elif CONV == 1
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x)); return f;
#else
  return __uint_as_float(((unsigned int)x) << 16);
#endif
}

__device__ __forceinline__ ELEM from_acc(ACC x) {
#if CONV == 0
  return (ELEM)x;
#elif CONV == 1
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h;
#else
  unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h;
#endif
}

// W consecutive elements, read once (C): streaming hint
template <int W> __device__ __forceinline__ void ld_stream(const ELEM* p, ACC* out) {
  typedef typename RawT<W * ELEM_BYTES>::T R;
  union { R r; ELEM e[W]; } u;
#if STREAM_HINTS
  u.r = __ldcs(reinterpret_cast<const R*>(p));
#else
  u.r = *reinterpret_cast<const R*>(p);
#endif
#pragma unroll
  for (int v = 0; v < W; ++v) out[v] = to_acc(u.e[v]);
}

// W consecutive elements shared by neighbouring threads (A): read-only cache
template <int W> __device__ __forceinline__ void ld_shared_ro(const ELEM* p, ACC* out) {
  typedef typename RawT<W * ELEM_BYTES>::T R;
  union { R r; ELEM e[W]; } u;
  u.r = __ldg(reinterpret_cast<const R*>(p));
#pragma unroll
  for (int v = 0; v < W; ++v) out[v] = to_acc(u.e[v]);
}

template <int W> __device__ __forceinline__ void st_stream(ELEM* p, const ACC* in) {
  typedef typename RawT<W * ELEM_BYTES>::T R;
  union { R r; ELEM e[W]; } u;
#pragma unroll
  for (int v = 0; v < W; ++v) u.e[v] = from_acc(in[v]);
#if STREAM_HINTS
  __stcs(reinterpret_cast<R*>(p), u.r);
#else
  *reinterpret_cast<R*>(p) = u.r;
#endif
}

__device__ __forceinline__ ACC ld1(const ELEM* p) { return to_acc(__ldg(p)); }

#if ASYNC
template <int W> __device__ __forceinline__ void ld_smem(const ELEM* p, ACC* out) {
  typedef typename RawT<W * ELEM_BYTES>::T R;
  union { R r; ELEM e[W]; } u;
  u.r = *reinterpret_cast<const R*>(p);
#pragma unroll
  for (int v = 0; v < W; ++v) out[v] = to_acc(u.e[v]);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned int saddr = (unsigned int)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(saddr), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

// Tile t (TR contiguous rows of C and of A) into buffer `stage`, 16 bytes per cp.async; one commit group
// per call, empty past the last full tile, so that wait_group counts stay uniform.
__device__ __forceinline__ void issue_tile(ELEM* Cs, ELEM* As, const ELEM* Cz, const ELEM* Az, i64 t, i64 full,
                                           int stage) {
  if (t < full) {
#if HAS_C
    {
      const char* src = reinterpret_cast<const char*>(Cz + t * (TR * N_));
      char* dst = reinterpret_cast<char*>(Cs + stage * (TR * N_));
      for (int q = threadIdx.x; q < TR * N_ * ELEM_BYTES / 16; q += BLOCK) cp_async16(dst + 16 * q, src + 16 * q);
    }
#endif
    const char* src = reinterpret_cast<const char*>(Az + t * (TR * K_));
    char* dst = reinterpret_cast<char*>(As + stage * (TR * K_));
    for (int q = threadIdx.x; q < TR * K_ * ELEM_BYTES / 16; q += BLOCK) cp_async16(dst + 16 * q, src + 16 * q);
  }
  cp_async_commit();
}
#endif

extern "C" __global__ void LAUNCH_BOUNDS
cumath_mbgemm(const ELEM* __restrict__ A, const ELEM* __restrict__ B, const ELEM* __restrict__ C,
              ELEM* __restrict__ D, ACC alpha, ACC beta, i64 m, i64 sa_m, i64 sa_k, i64 sb_k, i64 sb_n,
              i64 sc_m, i64 sc_n, i64 sd_m, i64 sd_n, i64 batch, i64 bsa, i64 bsb, i64 bsc, i64 bsd)
{
  // dynamic shared memory: alpha * B (ACC, K x N), then, for ASYNC, the STAGES tile buffers of C and A
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  ACC* Bs = reinterpret_cast<ACC*>(dyn_smem);
  for (i64 z = blockIdx.y; z < batch; z += gridDim.y) {
    const ELEM* __restrict__ Az = A + z * bsa;
    const ELEM* __restrict__ Bz = B + z * bsb;
    ELEM* __restrict__ Dz = D + z * bsd;
#if HAS_C
    const ELEM* __restrict__ Cz = C + z * bsc;
#define Cz_or_null Cz
#else
#define Cz_or_null ((const ELEM*)0)
#endif
    __syncthreads();
    for (int i = threadIdx.x; i < K_ * N_; i += BLOCK) {
      const int p = i / N_, j = i - p * N_;
      Bs[i] = alpha * ld1(Bz + p * SB_K + j * SB_N);
    }
    __syncthreads();

#if MODE_R
    // ------------------------------------------------ D row-major: a thread owns VEC columns, walks rows
    const int c = threadIdx.x % CH;
    const int s = threadIdx.x / CH;
    const int col0 = c * VEC;
#if B_REGS
    ACC br[K_][VEC];
#pragma unroll
    for (int p = 0; p < K_; ++p)
#pragma unroll
      for (int v = 0; v < VEC; ++v) br[p][v] = Bs[p * N_ + col0 + v];
#define BV(p, v) br[p][v]
#else
#define BV(p, v) Bs[(p) * N_ + col0 + (v)]
#endif
#if ASYNC
    // Full tiles of TR = RPB * UNROLL rows stream through STAGES shared-memory buffers with cp.async (the
    // bytes in flight need no registers); the remaining m % TR rows take the register path below.
    ELEM* Cs = reinterpret_cast<ELEM*>(dyn_smem + BS_BYTES);
    ELEM* As = Cs + CS_ELEMS;
    const i64 full = m / TR;
    const i64 tstep = gridDim.x;
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st)
      issue_tile(Cs, As, Cz_or_null, Az, (i64)blockIdx.x + st * tstep, full, st);
    int stage = 0;
    for (i64 t = blockIdx.x; t < full; t += tstep) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      issue_tile(Cs, As, Cz_or_null, Az, t + (STAGES - 1) * tstep, full, (stage + STAGES - 1) % STAGES);
      const ELEM* cs = Cs + stage * (TR * N_);
      const ELEM* as = As + stage * (TR * K_);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int row = s + u * RPB;
        ACC acc[VEC];
#if HAS_C
        ld_smem<VEC>(cs + row * N_ + col0, acc);
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[v] *= beta;
#else
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[v] = (ACC)0;
#endif
#pragma unroll
        for (int p = 0; p < K_; ++p) {
          const ACC av = to_acc(as[row * K_ + p]);
#pragma unroll
          for (int v = 0; v < VEC; ++v) acc[v] += av * BV(p, v);
        }
        st_stream<VEC>(Dz + (t * TR + row) * SD_M + col0, acc);
      }
      stage = stage + 1 == STAGES ? 0 : stage + 1;
    }
    cp_async_wait<0>();
    __syncthreads();
#define PU 1
    const i64 step = (i64)RPB;
    const i64 rbegin = (blockIdx.x == full % gridDim.x) ? full * TR : m;
#else
#define PU UNROLL
    const i64 step = (i64)gridDim.x * (RPB * UNROLL);
    const i64 rbegin = (i64)blockIdx.x * (RPB * UNROLL);
#endif
    for (i64 r0 = rbegin + s; r0 < m; r0 += step) {
      ACC a[PU][K_];
      ACC cv[PU][VEC];
#pragma unroll
      for (int u = 0; u < PU; ++u) {
        const i64 r = r0 + u * RPB;
        if (r < m) {
#if A_KIND == 0 && VA > 1
#pragma unroll
          for (int p = 0; p < K_; p += VA) ld_shared_ro<VA>(Az + r * SA_M + p, &a[u][p]);
#else
#pragma unroll
          for (int p = 0; p < K_; ++p) a[u][p] = ld1(Az + r * SA_M + p * SA_K);
#endif
#if HAS_C
#if C_KIND == 1
          ld_stream<VEC>(Cz + r * SC_M + col0, cv[u]);
#elif C_KIND == 2
          const ACC cb = ld1(Cz + r * SC_M);
#pragma unroll
          for (int v = 0; v < VEC; ++v) cv[u][v] = cb;
#else
#pragma unroll
          for (int v = 0; v < VEC; ++v) cv[u][v] = ld1(Cz + r * SC_M + (col0 + v) * SC_N);
#endif
#endif
        }
      }
#pragma unroll
      for (int u = 0; u < PU; ++u) {
        const i64 r = r0 + u * RPB;
        if (r < m) {
          ACC acc[VEC];
#pragma unroll
          for (int v = 0; v < VEC; ++v) {
#if HAS_C
            acc[v] = beta * cv[u][v];
#else
            acc[v] = (ACC)0;
#endif
          }
#pragma unroll
          for (int p = 0; p < K_; ++p)
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[v] += a[u][p] * BV(p, v);
          st_stream<VEC>(Dz + r * SD_M + col0, acc);
        }
      }
    }
#undef BV
#else
    // ------------------------------------------ D column-major: a thread owns VEC rows, walks columns
    const i64 step = (i64)gridDim.x * BLOCK * VEC;
    for (i64 r0 = ((i64)blockIdx.x * BLOCK + threadIdx.x) * VEC; r0 < m; r0 += step) {
      if (r0 + VEC <= m) {
        ACC a[K_][VEC];
#if A_KIND == 1 && AV > 1
#pragma unroll
        for (int p = 0; p < K_; ++p) ld_shared_ro<VEC>(Az + r0 + p * SA_K, a[p]);
#else
#pragma unroll
        for (int p = 0; p < K_; ++p)
#pragma unroll
          for (int v = 0; v < VEC; ++v) a[p][v] = ld1(Az + (r0 + v) * SA_M + p * SA_K);
#endif
#if HAS_C && C_KIND == 2
        ACC cb[VEC];
#pragma unroll
        for (int v = 0; v < VEC; ++v) cb[v] = ld1(Cz + (r0 + v) * SC_M);
#endif
#pragma unroll (JUNROLL)
        for (int j = 0; j < N_; ++j) {
          ACC acc[VEC];
#if HAS_C
#if C_KIND == 1
          ld_stream<VEC>(Cz + r0 + j * SC_N, acc);
#pragma unroll
          for (int v = 0; v < VEC; ++v) acc[v] *= beta;
#elif C_KIND == 2
#pragma unroll
          for (int v = 0; v < VEC; ++v) acc[v] = beta * cb[v];
#else
#pragma unroll
          for (int v = 0; v < VEC; ++v) acc[v] = beta * ld1(Cz + (r0 + v) * SC_M + j * SC_N);
#endif
#else
#pragma unroll
          for (int v = 0; v < VEC; ++v) acc[v] = (ACC)0;
#endif
#pragma unroll
          for (int p = 0; p < K_; ++p) {
            const ACC b = Bs[p * N_ + j];
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[v] += a[p][v] * b;
          }
          st_stream<VEC>(Dz + r0 + j * SD_N, acc);
        }
      } else {
        for (i64 r = r0; r < m; ++r) {
          for (int j = 0; j < N_; ++j) {
#if HAS_C
            ACC acc = beta * ld1(Cz + r * SC_M + j * SC_N);
#else
            ACC acc = (ACC)0;
#endif
            for (int p = 0; p < K_; ++p) acc += ld1(Az + r * SA_M + p * SA_K) * Bs[p * N_ + j];
            Dz[r * SD_M + j * SD_N] = from_acc(acc);
          }
        }
      }
    }
#endif
  }
}
"""
