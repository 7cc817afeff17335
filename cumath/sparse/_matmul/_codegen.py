"""Generated SpMM / SpMV kernels for any UST format: CUDA C++ emitted from the format's level structure, compiled
by NVRTC to LTO-IR and linked with the user's prologs, epilog and semiring operators by nvJitLink (the one JIT
driver of ``_core/jit.py``, cached on disk by content).

The kernel walks the levels as nested loops, one per level (the level formats of ``ust/_storage.py``):

    DENSE/BATCH   for c in [0, size):               p = parent * size + c
    COMPRESSED    for p in [pos[parent], pos[parent+1]): c = crd[p]
    SINGLETON     p = parent;                        c = crd[p]
    RANGE         for c in [lo[parent], hi[parent]): p = off[parent] + c - lo[parent]   (tables made at plan)

Level 0 is spread over thread blocks, the columns of b over the threads of a block. At the innermost level the
dimension coordinates come from the format's inverse (``TensorFormat.lvl2dim``, emitted as C expressions) and
``d[i, col] += alpha * mul(prolog_a(v), prolog_b(b[j, col]))`` is accumulated (atomically unless each block owns
its rows, see :func:`schedule`). A first pass writes ``beta * c`` (or zeros), a last one applies the epilog.
Diagonal formats whose inner level runs over the result's rows are generated as a gather instead: one thread per
result element, beta and the epilog applied in the same pass. :func:`emulate` runs the
same loop nest in Python, which is how the structure is tested without a GPU.
"""

from __future__ import annotations

import numpy as np

from ..ust._dsl import LevelFormat as F, TensorFormat
from . import _dia

__all__ = ["spmm_source", "emulate", "range_tables", "arg_types", "schedule", "fuses_beta", "vector_width",
           "launch_shape", "kernel_kinds", "decoded_crd", "vectors_per_thread", "KERNEL", "SCALE_KERNEL",
           "EPILOG_KERNEL", "CTYPES"]

KERNEL, SCALE_KERNEL, EPILOG_KERNEL = "cumath_ust_spmm", "cumath_ust_spmm_scale", "cumath_ust_spmm_epilog"
CTYPES = {"float32": "float", "float64": "double", "complex64": "cplx<float>", "complex128": "cplx<double>"}


def kernel_kinds(fmt: TensorFormat) -> tuple:
    """The level formats as the kernel walks them: a DELTA level is read as COMPRESSED, from its coordinates
    decoded once at plan() (:func:`decoded_crd`)."""
    return tuple(F.COMPRESSED if k == F.DELTA else k for k in fmt.level_formats)


def decoded_crd(fmt: TensorFormat, pos, crd) -> list:
    """The coordinate arrays with every DELTA level's gaps summed into coordinates (host arrays)."""
    from ..ust._storage import _delta_decode

    return [_delta_decode(np.asarray(pos[lvl], np.int64), np.asarray(c, np.int64)[: int(np.asarray(pos[lvl])[-1])])
            .astype(np.asarray(c).dtype) if kind == F.DELTA else c
            for lvl, (kind, c) in enumerate(zip(fmt.level_formats, crd))]


_PRELUDE = r"""
template <typename R> struct cplx { R x, y; };
template <typename R> __device__ __forceinline__ cplx<R> operator*(cplx<R> a, cplx<R> b) {
  return {a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x}; }
template <typename R> __device__ __forceinline__ cplx<R> operator+(cplx<R> a, cplx<R> b) { return {a.x + b.x, a.y + b.y}; }
template <typename R> __device__ __forceinline__ bool is_zero(cplx<R> a) { return a.x == 0 && a.y == 0; }
template <typename R> __device__ __forceinline__ cplx<R> conj_(cplx<R> a) { return {a.x, -a.y}; }
template <typename R> __device__ __forceinline__ void atomic_acc(cplx<R>* p, cplx<R> v) {
  atomicAdd(&p->x, v.x); atomicAdd(&p->y, v.y); }
__device__ __forceinline__ bool is_zero(float a) { return a == 0; }
__device__ __forceinline__ bool is_zero(double a) { return a == 0; }
__device__ __forceinline__ float conj_(float a) { return a; }
__device__ __forceinline__ double conj_(double a) { return a; }
__device__ __forceinline__ void atomic_acc(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_acc(double* p, double v) { atomicAdd(p, v); }
template <typename T, int W> union vec_t { uint4 u; T v[W]; __device__ vec_t() {} };
template <int W, typename T> __device__ __forceinline__ void load_vec(T (&out)[W], const T* p) {
  if constexpr (W == 1) { out[0] = *p; } else {
    static_assert(sizeof(T) * W == 16, "16-byte vectors");
    vec_t<T, W> x; x.u = *reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int w = 0; w < W; ++w) out[w] = x.v[w]; } }
// 16-byte stores written out (NVVM splits a float4 store of a register array into four scalar stores): plain
// (st.global) and streaming, evict-first (st.global.cs) for results nothing reads soon
#define CUMATH_STORE16(NAME, OP) \
__device__ __forceinline__ void NAME(float* p, const float (&a)[4]) { \
  asm volatile(OP ".v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(a[0]), "f"(a[1]), "f"(a[2]), "f"(a[3]) \
               : "memory"); } \
__device__ __forceinline__ void NAME(double* p, const double (&a)[2]) { \
  asm volatile(OP ".v2.f64 [%0], {%1, %2};" :: "l"(p), "d"(a[0]), "d"(a[1]) : "memory"); } \
__device__ __forceinline__ void NAME(cplx<float>* p, const cplx<float> (&a)[2]) { \
  asm volatile(OP ".v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(a[0].x), "f"(a[0].y), "f"(a[1].x), \
               "f"(a[1].y) : "memory"); }
CUMATH_STORE16(store16, "st.global")
CUMATH_STORE16(store16_cs, "st.global.cs")
template <typename T> __device__ __forceinline__ void store1_cs(T* p, T v) { __stcs(p, v); }
template <> __device__ __forceinline__ void store1_cs(cplx<float>* p, cplx<float> v) {
  __stcs(reinterpret_cast<float2*>(p), make_float2(v.x, v.y)); }
template <> __device__ __forceinline__ void store1_cs(cplx<double>* p, cplx<double> v) {
  __stcs(reinterpret_cast<double2*>(p), make_double2(v.x, v.y)); }
template <int W, typename T> __device__ __forceinline__ void store_vec(T* p, const T (&in)[W]) {
  if constexpr (W == 1) { *p = in[0]; } else { store16(p, in); } }
template <int W, typename T> __device__ __forceinline__ void store_vec_shared(T* p, const T (&in)[W]) {
  if constexpr (W == 1) { *p = in[0]; } else {
    vec_t<T, W> x;
#pragma unroll
    for (int w = 0; w < W; ++w) x.v[w] = in[w];
    *reinterpret_cast<uint4*>(p) = x.u; } }
template <int W, typename T> __device__ __forceinline__ void store_vec_cs(T* p, const T (&in)[W]) {
  if constexpr (W == 1) { store1_cs(p, in[0]); } else { store16_cs(p, in); } }
// loads through the read-only path (complex values as the float2 / double2 of their parts)
template <typename T> __device__ __forceinline__ T ldg_(const T* p) { return __ldg(p); }
template <> __device__ __forceinline__ cplx<float> ldg_(const cplx<float>* p) {
  const float2 x = __ldg(reinterpret_cast<const float2*>(p)); return {x.x, x.y}; }
template <> __device__ __forceinline__ cplx<double> ldg_(const cplx<double>* p) {
  const double2 x = __ldg(reinterpret_cast<const double2*>(p)); return {x.x, x.y}; }
template <int W, typename T> __device__ __forceinline__ void load_vec_nc(T (&out)[W], const T* p) {
  if constexpr (W == 1) { out[0] = ldg_(p); } else {
    static_assert(sizeof(T) * W == 16, "16-byte vectors");
    vec_t<T, W> x; x.u = __ldg(reinterpret_cast<const uint4*>(p));
#pragma unroll
    for (int w = 0; w < W; ++w) out[w] = x.v[w]; } }
"""


def range_tables(fmt: TensorFormat, extents, host_pos, host_crd) -> dict:
    """{level: (lo, hi, off)} int64 arrays per parent position of every RANGE level (made once at plan)."""
    from ..ust._storage import _range_bounds, level_sizes

    sizes = level_sizes(fmt, extents)
    host_crd = decoded_crd(fmt, host_pos, host_crd)
    out, table, nparents = {}, [], 1
    for level, kind in enumerate(kernel_kinds(fmt)):
        size = sizes[level]
        if kind in (F.DENSE, F.BATCH):
            table = [np.repeat(t, size) for t in table] + [np.tile(np.arange(size, dtype=np.int64), nparents)]
            nparents *= size
        elif kind == F.COMPRESSED:
            p = np.asarray(host_pos[level], np.int64)
            owner = np.repeat(np.arange(nparents, dtype=np.int64), np.diff(p))
            table = [t[owner] for t in table] + [np.asarray(host_crd[level], np.int64)[: p[-1]]]
            nparents = int(p[-1])
        elif kind == F.SINGLETON:
            table = table + [np.asarray(host_crd[level], np.int64)[:nparents]]
        elif kind == F.STRUCTURED:
            n = fmt.level_param(level)
            table = [np.repeat(t, n) for t in table] + [np.asarray(host_crd[level], np.int64)[: nparents * n]]
            nparents *= n
        elif kind == F.RANGE:
            lo, hi = _range_bounds(fmt, extents, level, table, size)
            off = np.concatenate([[0], np.cumsum(hi - lo)[:-1]]).astype(np.int64)
            out[level] = (lo, hi, off)
            if level == len(fmt.level_formats) - 1:  # the coordinates of the entries are needed by no level below
                break
            rep = hi - lo
            table = [np.repeat(t, rep) for t in table] + [np.concatenate(
                [np.arange(a, b, dtype=np.int64) for a, b in zip(lo, hi)]) if rep.size else np.zeros(0, np.int64)]
            nparents = int(rep.sum())
        else:
            raise NotImplementedError(f"generated kernels do not walk {kind.name} levels yet")
    return out


def _dims_c(fmt: TensorFormat) -> list:
    """C expressions of the dimension coordinates in terms of the level coordinates c0, c1, ..."""
    exprs = {}
    for step in fmt._solve:
        name, how = step[0], step[1]
        if how == "divmod":
            exprs[name] = f"(c{step[2]} * {fmt.level_exprs[step[2]].divisor}LL + c{step[3]})"
        else:
            e = fmt.level_exprs[step[2]]
            rest = " ".join(f"- ({v}LL * {exprs[k]})" for k, v in e.terms.items() if k != name)
            exprs[name] = f"((c{step[2]} {rest}) * {e.terms[name]}LL)"
    return [exprs[d.dimension_name] for d in fmt.dimensions]


def _loops(fmt: TensorFormat):
    """(opening lines, number of closing braces) of the level loop nest (level 0 over blocks)."""
    lines = []
    for level, kind in enumerate(kernel_kinds(fmt)):
        par = "0LL" if level == 0 else f"p{level - 1}"
        if kind in (F.DENSE, F.BATCH):
            if level == 0:
                lines.append(f"for (long long c0 = blockIdx.x; c0 < S0; c0 += gridDim.x) {{ long long p0 = c0;")
            else:
                lines.append(f"for (long long c{level} = 0; c{level} < S{level}; ++c{level}) {{ "
                             f"long long p{level} = {par} * S{level} + c{level};")
        elif kind == F.COMPRESSED:
            if level == 0:
                lines.append("for (long long p0 = (long long)pos0[0] + blockIdx.x; p0 < (long long)pos0[1]; "
                             "p0 += gridDim.x) { long long c0 = crd0[p0];")
            else:
                lines.append(f"for (long long p{level} = pos{level}[{par}]; p{level} < (long long)pos{level}[{par} + 1];"
                             f" ++p{level}) {{ long long c{level} = crd{level}[p{level}];")
        elif kind == F.SINGLETON:
            lines.append(f"{{ long long p{level} = {par}; long long c{level} = crd{level}[p{level}];")
        elif kind == F.STRUCTURED:
            n = fmt.level_param(level)
            lines.append(f"for (long long p{level} = {par} * {n}LL; p{level} < ({par} + 1) * {n}LL; ++p{level}) {{ "
                         f"long long c{level} = crd{level}[p{level}];")
        elif kind == F.RANGE:
            lines.append(f"for (long long c{level} = rlo{level}[{par}]; c{level} < rhi{level}[{par}]; ++c{level}) {{ "
                         f"long long p{level} = roff{level}[{par}] + (c{level} - rlo{level}[{par}]);")
        else:
            raise NotImplementedError(f"generated kernels do not walk {kind.name} levels yet")
    return lines, len(lines)


def schedule(fmt: TensorFormat, transpose: bool = False, *, add=None, atomic_add=None) -> str:
    """How the generated kernel spreads the work and accumulates:

    'gather'  diagonal formats whose inner RANGE level runs over the result's rows (DIAI, SkewDIAI; DIAJ
              transposed): a thread per result element (threadIdx.x over columns, threadIdx.y over rows), summing
              over the stored diagonals in a register, with ``beta * c`` and the epilog fused; no atomics (a
              diagonal holds at most one element of a row).
    'owned'   level 0 is unique and the result's row or a block of rows (``i // r``) (CSR, DCSR, CROW, BSR; CSC
              transposed): a block owns the rows of its level-0 coordinate, a thread its column; the rows are
              summed in registers and written once.
    'atomic'  anything else (COO, CSC, DIAJ): rows are met by several blocks; atomic accumulation.

    A semiring given only by its atomic sum (``atomic_add`` without ``add``) accumulates in memory: 'gather' is
    not possible, and 'owned' calls the atomic sum.
    """
    row = fmt.dimensions[1 if transpose else 0].dimension_name
    e0 = fmt.level_exprs[0]
    kinds = kernel_kinds(fmt)
    if len(kinds) == 2 and kinds[0] == F.COMPRESSED and kinds[1] == F.RANGE and (add or not atomic_add):
        e1 = fmt.level_exprs[1]
        if e1.op == "affine" and e1.dims == (row,) and e1.terms[row] == 1:
            return "gather"
    if fmt.level_unique(0) and e0.dims == (row,) and kinds[0] in (F.DENSE, F.BATCH, F.COMPRESSED) and (
            e0.op == "div" or (e0.op == "affine" and e0.terms[row] == 1)):
        return "owned"
    return "atomic"


def fuses_beta(fmt: TensorFormat, transpose: bool = False, *, add=None, atomic_add=None) -> bool:
    """Whether the main kernel applies ``beta * c`` itself (its schedule writes every result row once: 'gather',
    and 'owned' with a dense level 0); otherwise a first pass writes ``beta * c`` and the main kernel adds to it
    (it is then launched with beta = 1)."""
    how = schedule(fmt, transpose, add=add, atomic_add=atomic_add)
    if how == "gather":
        return True
    return how == "owned" and not (atomic_add and not add) and kernel_kinds(fmt)[0] in (F.DENSE, F.BATCH)


def arg_types(fmt: TensorFormat, dtype: str) -> tuple:
    """The launch-argument codes (``_core/kernels.ArgPacker``) of the main, scale and epilog kernels (the main
    kernel takes beta too: the 'gather' schedule applies it itself)."""
    r = "f" if dtype in ("float32", "complex64") else "d"
    n = sum({F.COMPRESSED: 2, F.SINGLETON: 1, F.STRUCTURED: 1, F.RANGE: 3}.get(k, 0) for k in kernel_kinds(fmt))
    return "P" * n + "PPPqqiqq" + r * 4 + "ii", "PPqiqq" + r + r + "i", "Pqiq"


def _params(fmt: TensorFormat, it: str) -> list:
    ps = []
    for level, kind in enumerate(kernel_kinds(fmt)):
        if kind == F.COMPRESSED:
            ps += [f"const {it}* __restrict__ pos{level}", f"const {it}* __restrict__ crd{level}"]
        elif kind in (F.SINGLETON, F.STRUCTURED):
            ps.append(f"const {it}* __restrict__ crd{level}")
        elif kind == F.RANGE:
            ps += [f"const long long* __restrict__ rlo{level}", f"const long long* __restrict__ rhi{level}",
                   f"const long long* __restrict__ roff{level}"]
    return ps


def vector_width(dtype: str) -> int:
    """Elements per 16-byte vector load of ``dtype`` (float4, double2, two complex64; complex128: 1)."""
    return max(1, 16 // np.dtype(dtype).itemsize)


def vectors_per_thread(fmt: TensorFormat, transpose: bool = False, *, add=None, atomic_add=None) -> int:
    """Vectors of b's columns a thread of the 'gather' and 'owned' schedules carries (strided by blockDim.x, so a
    warp's loads stay contiguous): two where a thread owns one result row (the per-entry index and value reads
    are shared by twice the columns), one for block formats (their row block already fills the registers)."""
    how = schedule(fmt, transpose, add=add, atomic_add=atomic_add)
    if how == "gather":
        return 2
    e0 = fmt.level_exprs[0]
    return 1 if e0.op == "div" and e0.divisor > 1 else 2



def launch_shape(rows: int, n: int, width: int, per_thread: int, *, column_threads: int = 32, threads: int = 256,
                 rows_per_thread: int = 1, exact: bool = False) -> tuple:
    """(grid, block) of the 'gather' and 'owned' kernels for ``rows`` rows (or level-0 coordinates) and ``n``
    columns moved ``width`` at a time, ``per_thread`` vectors a thread: blockDim.x the column threads of a row
    (a power of two, at most ``column_threads``), blockDim.y rows up to ``threads`` threads a block (each thread
    ``rows_per_thread`` rows; with ``exact``, blockDim.x is ``column_threads`` whatever n), blockIdx.y the
    column tiles."""
    nvec = -(-max(n, 1) // width)
    bx = column_threads if exact else 1
    while bx < column_threads and bx * per_thread < nvec:
        bx *= 2
    by = threads // bx
    tiles = -(-nvec // (bx * per_thread))
    return (max(1, min(-(-rows // (by * rows_per_thread)), 1 << 22)), max(1, min(tiles, 65535)), 1), (bx, by, 1)

def _combine(T, add, slot, prod):
    """C lines accumulating the product of ``v`` and ``b_[w]`` into ``slot``."""
    acc = f"{slot} = {add}({slot}, t);" if add else f"{slot} = {slot} + t;"
    return f"const {T} bv = b_[w]; const {T} t = {prod}; {acc}"


def _init(T, semiring, indent, at):
    """C lines of the initial accumulators ``acc_[w]`` of one vector: the semiring starts from ``beta * c`` (its
    sum has no alpha), the plain product from zero (``alpha * sum + beta * c`` is formed once, at the store)."""
    if not semiring:
        return [f"{indent}#pragma unroll", f"{indent}for (int w = 0; w < W; ++w) acc_[w] = {T}{{}};"]
    return [f"{indent}{T} c_[W]; if (!zero && ok) load_vec<W>(c_, D + {at});",
            "#pragma unroll",
            f"{indent}for (int w = 0; w < W; ++w) acc_[w] = (zero || !ok) ? {T}{{}} : beta * c_[w];"]


def _store(T, semiring, indent, acc, at, ep=lambda x: x, fn="store_vec"):
    """C lines storing one vector of accumulators ``acc`` at ``D + at`` (beta * c read as a vector) with ``fn``
    (``store_vec``, or ``store_vec_cs``: streaming)."""
    lines = [f"{indent}{T} out[W];"]
    if semiring:
        lines += ["#pragma unroll", f"{indent}for (int w = 0; w < W; ++w) out[w] = {ep(acc)};"]
    else:
        lines += [f"{indent}{T} c_[W]; if (!zero) load_vec<W>(c_, D + {at});", "#pragma unroll",
                  f"{indent}for (int w = 0; w < W; ++w) {{ const {T} s_ = zero ? alpha * {acc} : alpha * {acc} + "
                  f"beta * c_[w]; out[w] = {ep('s_')}; }}"]
    return lines + [f"{indent}{fn}<W>(D + {at}, out);"]


def _columns(indent: str, lines, skip: bool = True) -> list:
    """C lines running ``lines`` for each of the thread's V vectors of columns (``col``: the vector's first
    column; with ``skip``, vectors past N are skipped)."""
    return ["#pragma unroll", f"{indent}for (int u = 0; u < V; ++u) {{",
            f"{indent}  const long long col = cb + ((long long)threadIdx.x + (long long)u * blockDim.x) * W;",
            *([f"{indent}  if (col >= N) continue;"] if skip else []),
            *(x if x.startswith("#") else f"{indent}  {x}" for x in lines), f"{indent}}}"]


def _accumulate(T, add, prod, slot, indent) -> list:
    """C lines adding ``v`` times row ``q`` of b (16-byte vectors of it) into the thread's accumulators."""
    return [f"{indent}const long long qb = q * ldb;",
            *_columns(indent, [f"{T} b_[W]; load_vec<W>(b_, B + qb + col);", "#pragma unroll",
                               f"for (int w = 0; w < W; ++w) {{ {_combine(T, add, slot, prod)} }}"])]


def _gather_body(T, it, inner, prod, conjugate, add, mul, epilog) -> str:
    """The 'gather' schedule: a thread per result row and V vectors of W columns; the stored diagonals' level-0
    coordinate and RANGE table entries are staged in shared memory in chunks of 64 (read once per block, not per
    thread), the row's sum is kept in registers, b and d are moved as 16-byte vectors where the layout allows."""
    semi = bool(add or mul)
    ep = (lambda x: f"{epilog}({x})") if epilog else (lambda x: x)
    return "\n".join([
        "  constexpr int V = 2, DCH = 64;",
        "  __shared__ long long s_c0[DCH], s_lo[DCH], s_hi[DCH], s_off[DCH];",
        "  const long long d0 = (long long)pos0[0], nd = (long long)pos0[1] - d0;",
        "  const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthr = blockDim.x * blockDim.y;",
        "  const long long span = (long long)blockDim.x * W * V;",
        "  for (long long cb = (long long)blockIdx.y * span; cb < N; cb += (long long)gridDim.y * span)",
        "  for (long long tile = blockIdx.x; tile * blockDim.y < M; tile += gridDim.x) {",
        "    const long long r = tile * blockDim.y + threadIdx.y;",
        "    const bool live = r < M;",
        f"    {T} acc[V][W];",
        *_columns("    ", ["const bool ok = live && col < N;", f"{T} (&acc_)[W] = acc[u];",
                            *_init(T, semi, "", "r * ldd + col")], skip=False),
        "    for (long long base = 0; base < nd; base += DCH) {",
        "      const int cnt = (int)(nd - base < DCH ? nd - base : DCH);",
        "      __syncthreads();",
        "      for (int g = tid; g < cnt; g += nthr) {",
        "        const long long p0 = d0 + base + g;",
        "        s_c0[g] = (long long)crd0[p0]; s_lo[g] = rlo1[p0]; s_hi[g] = rhi1[p0]; s_off[g] = roff1[p0]; }",
        "      __syncthreads();",
        "      if (!live) continue;",
        "#pragma unroll 4",
        "      for (int g = 0; g < cnt; ++g) {",
        "        const long long c0 = s_c0[g], c1 = r, lo = s_lo[g];",
        f"        const long long q = {inner};",
        "        if (c1 < lo || c1 >= s_hi[g] || q < 0 || q >= K) continue;",
        f"        {T} v = val[s_off[g] + (c1 - lo)];",
        f"        if (is_zero(v)) continue; {'v = conj_(v);' if conjugate else ''}",
        *_accumulate(T, add, prod, "acc[u][w]", "        "),
        "      }",
        "    }",
        "    if (!live) continue;",
        *_columns("    ", _store(T, semi, "", "acc[u][w]", "r * ldd + col", ep)),
        "  }",
    ])


def _owned_body(fmt, T, loops, close, row, inner, prod, conjugate, add, mul, last, V) -> str:
    """The 'owned' schedule: a thread per level-0 coordinate (threadIdx.y) and V vectors of W columns
    (threadIdx.x); the rows of the coordinate (a row, or a block row ``i // r``) are summed in registers (dense
    inner levels unrolled, so the row slot is a constant) and written once; b is read as 16-byte vectors where the
    layout allows."""
    semi = bool(add or mul)
    e0 = fmt.level_exprs[0]
    rows = e0.divisor if e0.op == "div" else 1
    row0 = f"(c0 * {rows}LL)" if rows > 1 else "c0"
    first = loops[0].replace("blockIdx.x", "((long long)blockIdx.x * blockDim.y + threadIdx.y)").replace(
        "gridDim.x", "((long long)gridDim.x * blockDim.y)")
    inner_loops = []
    for x in loops[1:]:
        if x.startswith("for (long long c") and " < S" in x:
            inner_loops.append("#pragma unroll")
        inner_loops.append(x)
    slot = f"acc[r - {row0}][u][w]"
    return "\n".join([
        f"  constexpr int V = {V}, ROWS = {rows};",
        "  const long long span = (long long)blockDim.x * W * V;",
        "  for (long long cb = (long long)blockIdx.y * span; cb < N; cb += (long long)gridDim.y * span) {",
        "    " + first,
        f"    {T} acc[ROWS][V][W];",
        "#pragma unroll",
        "    for (int k = 0; k < ROWS; ++k) {",
        f"      const long long rr = {row0} + k;",
        *_columns("      ", ["const bool ok = rr < M && col < N;", f"{T} (&acc_)[W] = acc[k][u];",
                              *_init(T, semi, "", "rr * ldd + col")], skip=False),
        "    }",
        *("    " + x if not x.startswith("#") else x for x in inner_loops),
        f"    long long r = {row}; long long q = {inner};",
        "    if (r >= 0 && r < M && q >= 0 && q < K) {",
        f"      {T} v = val[p{last}];",
        f"      if (!is_zero(v)) {{ {'v = conj_(v);' if conjugate else ''}",
        *_accumulate(T, add, prod, slot, "        "),
        "      }",
        "    }",
        "    " + "}" * (close - 1),
        "#pragma unroll",
        "    for (int k = 0; k < ROWS; ++k) {",
        f"      const long long rr = {row0} + k;",
        "      if (rr >= M) continue;",
        *_columns("      ", _store(T, semi, "", "acc[k][u][w]", "rr * ldd + col")),
        "    }",
        "    }",
        "  }",
    ])


def spmm_source(fmt: TensorFormat, extents, dtype: str, index_type: str, *, transpose: bool = False,
                conjugate: bool = False, prolog_a=None, prolog_b=None, epilog=None, add=None, mul=None,
                atomic_add=None, ndiag=None, variant=None, offsets=None) -> str:
    """The CUDA C++ of the three kernels for ``fmt`` (2-D), ``dtype`` and ``index_type``; operator arguments are
    the device-function symbols of compiled LTO-IR (None: the plain operation). ``ndiag``: the number of stored
    diagonals of a 'gather' schedule, known at plan (1 to ``_dia.MAX_UNROLLED``: the kernel is specialised on it,
    in the layout ``variant``, a :class:`~._dia.DiaVariant` or a name of ``_dia.DIA_VARIANTS``, default
    ``_dia.DIA_VARIANT``); None: the general gather. ``offsets``: each diagonal's ``q - r``
    (:func:`~._dia.diagonal_offsets`), for the layouts with a window of rows."""
    if fmt.num_dimensions != 2:
        raise ValueError(f"a generated SpMM needs a matrix format; {fmt.name} has {fmt.num_dimensions} dimensions")
    if dtype not in CTYPES:
        raise TypeError(f"generated kernels support {', '.join(CTYPES)}; got {dtype}")
    T = CTYPES[dtype]
    it = {"int32": "int", "int64": "long long"}[index_type]
    sizes = fmt.dim2lvl(list(extents), as_size=True)
    decl = []
    for sym, n in ((prolog_a, 1), (prolog_b, 1), (epilog, 1), (add, 2), (mul, 2)):
        if sym:
            decl.append(f'extern "C" __device__ {T} {sym}({", ".join([T] * n)});')
    if atomic_add:
        decl.append(f'extern "C" __device__ void {atomic_add}({T}*, {T});')
    pa = f"{prolog_a}(v)" if prolog_a else "v"
    pb = f"{prolog_b}(bv)" if prolog_b else "bv"
    prod = f"{mul}({pa}, {pb})" if mul else f"({pa}) * ({pb})"
    how = schedule(fmt, transpose, add=add, atomic_add=atomic_add)
    if how == "atomic" or (atomic_add and not add):
        acc = (f"{atomic_add}(&D[r * ldd + col], t);" if atomic_add else "atomic_acc(&D[r * ldd + col], t);")
    else:
        acc = f"D[r * ldd + col] = {add}(D[r * ldd + col], t);" if add else "D[r * ldd + col] = D[r * ldd + col] + t;"
    dims = _dims_c(fmt)
    row, inner = (dims[1], dims[0]) if transpose else (dims[0], dims[1])
    loops, close = _loops(fmt)
    last = fmt.num_levels - 1
    alpha = "" if (add or mul) else "t = alpha * t;"
    bounds = 256
    if how == "gather" and _dia.specialised(ndiag):
        var = variant if isinstance(variant, _dia.DiaVariant) else _dia.dia_variant(variant)
        bounds = f"{var.block}, {var.min_blocks}" if var.min_blocks else var.block
        rows_body = _dia.dia_body(T, inner, prod, conjugate, add, epilog, ndiag, var, extents, _init, _store,
                                  _combine, offsets)
    elif how == "gather":
        rows_body = _gather_body(T, it, inner, prod, conjugate, add, mul, epilog)
    elif how == "owned" and not (atomic_add and not add):
        rows_body = _owned_body(fmt, T, loops, close, row, inner, prod, conjugate, add, mul, last,
                                vectors_per_thread(fmt, transpose, add=add, atomic_add=atomic_add))
    else:
        rows_body = None
    body = None if rows_body else "\n".join([
        f"  for (int col = threadIdx.x; col < N; col += blockDim.x) {{",
        *("    " + x for x in loops),
        f"    long long r = {row}; long long q = {inner};",
        "    if (r >= 0 && r < M && q >= 0 && q < K) {",
        f"      {T} v = val[p{last}];",
        f"      if (!is_zero(v)) {{ {'v = conj_(v);' if conjugate else ''}",
        f"        {T} bv = B[q * ldb + col];",
        f"        {T} t = {prod}; {alpha}",
        f"        {acc}",
        "      }",
        "    }",
        "    " + "}" * close,
        "  }",
    ])
    size_consts = "\n".join(f"constexpr long long S{n} = {s}LL;" for n, s in enumerate(sizes))
    R = {"float32": "float", "float64": "double", "complex64": "float", "complex128": "double"}[dtype]
    cplx = dtype.startswith("complex")
    make = (lambda n: f"const {T} {n} = {{{n}_re, {n}_im}};") if cplx else (lambda n: f"const {T} {n} = {n}_re;")
    args = _params(fmt, it) + [f"const {T}* __restrict__ val", f"const {T}* __restrict__ B", f"{T}* __restrict__ D",
                               "long long M", "long long K", "int N", "long long ldb", "long long ldd"]
    params = ", ".join(args + [f"{R} alpha_re", f"{R} alpha_im", f"{R} beta_re", f"{R} beta_im", "int zero", "int vec"])
    if rows_body:  # one body, instantiated for 16-byte vectors of b and d and for single elements
        names = ", ".join([a.rsplit(" ", 1)[1] for a in args] + ["alpha", "beta", "zero"])
        rows_fn = [f"template <int W> __device__ __forceinline__ void cumath_ust_rows({', '.join(args)}, "
                   f"const {T} alpha, const {T} beta, int zero) {{", rows_body, "}"]
        width = vector_width(dtype)
        body = (f"  if ({width} > 1 && vec) cumath_ust_rows<{width}>({names});\n"
                f"  else cumath_ust_rows<1>({names});")
    else:
        rows_fn = []
    ep = f"{epilog}(D[r * ldd + col])" if epilog else "D[r * ldd + col]"
    return "\n".join([
        f"// generated SpMM for {fmt.name}: levels {[f.name for f in fmt.level_formats]}, extents {list(extents)}",
        _PRELUDE, *decl, size_consts,
        f"// schedule: {how}", *rows_fn,
        f'extern "C" __global__ void __launch_bounds__({bounds}) {KERNEL}({params}) {{',
        "  " + make("alpha"), "  " + make("beta"), body, "}",
        f'extern "C" __global__ void {SCALE_KERNEL}(const {T}* __restrict__ C, {T}* __restrict__ D, long long M, '
        f"int N, long long ldc, long long ldd, {R} beta_re, {R} beta_im, int zero) {{", "  " + make("beta"),
        "  for (long long r = blockIdx.x; r < M; r += gridDim.x)",
        "    for (int col = threadIdx.x; col < N; col += blockDim.x)",
        f"      D[r * ldd + col] = zero ? {T}{{}} : beta * C[r * ldc + col];",
        "}",
        f'extern "C" __global__ void {EPILOG_KERNEL}({T}* __restrict__ D, long long M, int N, long long ldd) {{',
        "  for (long long r = blockIdx.x; r < M; r += gridDim.x)",
        f"    for (int col = threadIdx.x; col < N; col += blockDim.x) D[r * ldd + col] = {ep};",
        "}",
    ]) + "\n"


def emulate(fmt: TensorFormat, extents, pos, crd, val, b: np.ndarray, *, alpha=1, beta=0, c=None, transpose=False,
            conjugate=False, prolog_a=None, prolog_b=None, epilog=None, add=None, mul=None) -> np.ndarray:
    """The generated kernel's loop nest run in Python on host arrays (the same levels, tables and coordinate
    expressions): ``beta * c + alpha * op(a) @ b`` with the operators applied as the kernel applies them."""
    m, k = extents[::-1] if transpose else extents
    b2 = b.reshape(k, -1)
    rt = np.result_type(val, b2) if c is None else np.result_type(val, b2, c)
    d = np.zeros((m, b2.shape[1]), dtype=rt) if c is None or beta == 0 else (beta * c.reshape(m, -1)).astype(rt)
    tables = range_tables(fmt, extents, pos, crd)
    crd = decoded_crd(fmt, pos, crd)
    sizes = fmt.dim2lvl(list(extents), as_size=True)
    kinds = kernel_kinds(fmt)
    last = fmt.num_levels - 1

    def walk(level, parent, coords):
        kind = kinds[level]
        if kind in (F.DENSE, F.BATCH):
            items = ((parent * sizes[level] + cc, cc) for cc in range(sizes[level]))
        elif kind == F.COMPRESSED:
            items = ((p, int(crd[level][p])) for p in range(int(pos[level][parent]), int(pos[level][parent + 1])))
        elif kind == F.SINGLETON:
            items = ((parent, int(crd[level][parent])),)
        elif kind == F.STRUCTURED:
            n = fmt.level_param(level)
            items = ((p, int(crd[level][p])) for p in range(parent * n, (parent + 1) * n))
        else:
            lo, hi, off = (t[parent] for t in tables[level])
            items = ((off + cc - lo, cc) for cc in range(lo, hi))
        for p, cc in items:
            if level < last:
                walk(level + 1, p, coords + [cc])
                continue
            dims = fmt.lvl2dim(coords + [cc])
            r, q = (dims[1], dims[0]) if transpose else (dims[0], dims[1])
            if not (0 <= r < m and 0 <= q < k):
                continue
            v = val[p]
            if v == 0:
                continue
            v = np.conj(v) if conjugate else v
            va = prolog_a(v) if prolog_a else v
            for col in range(b2.shape[1]):
                bv = prolog_b(b2[q, col]) if prolog_b else b2[q, col]
                t = mul(va, bv) if mul else va * bv
                if not (add or mul):
                    t = alpha * t
                d[r, col] = add(d[r, col], t) if add else d[r, col] + t

    def term(v, q, col):
        v = np.conj(v) if conjugate else v
        va = prolog_a(v) if prolog_a else v
        bv = prolog_b(b2[q, col]) if prolog_b else b2[q, col]
        t = mul(va, bv) if mul else va * bv
        return t if (add or mul) else alpha * t

    if schedule(fmt, transpose, add=add) == "gather":  # the gather kernel's order: per result row, per diagonal
        lo, hi, off = tables[1]
        for r in range(m):
            for p0 in range(int(pos[0][0]), int(pos[0][1])):
                c0 = int(crd[0][p0])
                if not lo[p0] <= r < hi[p0]:
                    continue
                dims = fmt.lvl2dim([c0, r])
                q = dims[0] if transpose else dims[1]
                p1 = int(off[p0] + r - lo[p0])
                if not 0 <= q < k or val[p1] == 0:
                    continue
                for col in range(b2.shape[1]):
                    t = term(val[p1], q, col)
                    d[r, col] = add(d[r, col], t) if add else d[r, col] + t
    else:
        walk(0, 0, [])
    if epilog:
        d = np.vectorize(epilog)(d)
    return d.reshape((m,) + b.shape[1:])
