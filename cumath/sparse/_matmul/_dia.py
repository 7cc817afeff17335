"""The 'gather' kernel of the diagonal formats specialised on the number of stored diagonals (a plan-time constant
of DIA: the pattern is the plan's), with its variants.

The general gather body (``_codegen._gather_body``) walks the diagonals in a loop of runtime length whose every
step branches twice on loaded data (the row inside the diagonal's range, then the value being zero) before it
loads b, so each thread waits for one load after another (a value, then b's vectors one by one): the kernel is
bound by load latency, not by DRAM (benchmarks/NOTES.md, "Generated DIA kernel, third pass"). Here:

- the diagonals' level-0 coordinate, row range and value base are read once per thread into registers (uniform
  loads, one address per warp: no shared-memory staging of the table, no barrier for it);
- the diagonal loop is unrolled ``ND`` times and has no branch: a row outside a diagonal's range reads row 0 of b
  and element 0 of the values (valid addresses) and discards them by a select, a stored zero is skipped by a
  select too (as the general kernel skips it), so all ``ND x R x V`` loads of b of a thread are independent and
  in flight together;
- the row and column indices are 32-bit when the extents allow it (64-bit only for the address of b's row);
- b is read through the read-only path (``__ldg``), d may be stored with ``st.global.cs`` (streaming: evict
  first, so the result does not push b's window out of L2);
- the staged layouts (the default) copy the rows of b a tile's diagonals need into shared memory once per block
  (segments of the union of the diagonals' row ranges, their offsets constants of the source), so each row of b
  crosses L2 -> SM about (tile + 2 + 2 tile) / tile times for the Laplacian rather than once per diagonal;
- how many of a thread's loads ptxas keeps in flight follows the register budget the launch bounds give it:
  without a minimum of blocks per SM it keeps ~48 registers and issues b's loads four at a time, with 3 blocks of
  256 (85 registers at most) all ten of the '8x2' layout at once.

:data:`DIA_VARIANTS` names the layouts (threads per row, vectors per thread, rows per thread or a window of
consecutive rows, block size, register budget, the load and store paths); :data:`DIA_VARIANT` is the one plans
use. A GPU probe sets it to compare them on the same data; a measurement that overrules the default changes that
one constant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DiaVariant", "DIA_VARIANTS", "DIA_VARIANT", "MAX_UNROLLED", "dia_variant", "specialised", "dia_body",
           "index_c_type", "diagonal_offsets", "rows_per_thread", "stage_segments", "staged", "MAX_STAGE_BYTES"]

#: the largest diagonal count the specialised kernel unrolls (more diagonals: the general gather, whose shared
#: chunks of 64 keep the registers bounded)
MAX_UNROLLED = 16


@dataclass(frozen=True)
class DiaVariant:
    """A layout of the specialised gather kernel.

    ``column_threads``: threads over a row's columns at most (blockDim.x, a power of two <= 32; fewer when the row
    has fewer vectors); ``vectors``: 16-byte vectors of columns a thread carries (strided by blockDim.x, so a
    warp's loads stay contiguous); ``rows``: result rows a thread carries (strided by blockDim.y); ``block``:
    threads per block; ``ldg``: b and the values read with ``__ldg``; ``streaming``: d stored with
    ``st.global.cs``; ``min_blocks``: the blocks per SM the kernel's launch bounds ask of ptxas (0: none; ptxas
    then keeps few registers, ~48 for '8x2', and issues b's loads four at a time; 2 lets it keep a thread's ten
    loads of b in flight in ~94 registers); ``persistent``: as many blocks as the GPU holds at once (the
    occupancy calculator's blocks per SM times the SMs), each striding over the row tiles, so the diagonals'
    table is read once per thread rather than once per tile; ``window``: a thread carries that many consecutive
    rows instead (``rows`` is then ignored) and, where every diagonal has a constant offset (DIAI, DIAJ
    transposed), reads each row of b its window needs once for all the diagonals that need it: with the offsets
    0 and +-1 a window of W rows reads W + 2 rows of b for them instead of 3 W, whatever L1 keeps (the offsets are
    constants of the source, so a pattern with other offsets compiles a kernel of its own); ``stage``: where the
    offsets are constant, a block first copies the rows of b its tile's diagonals need (the union of the
    diagonals' row ranges, merged into segments at generation) into shared memory, once per block, then every
    row reads its diagonals' rows from there: each row of b crosses L2 -> SM once per tile that needs it, not once
    per diagonal (blockDim is then exactly ``column_threads`` x ``block / column_threads``)."""

    column_threads: int = 8
    vectors: int = 2
    rows: int = 1
    block: int = 256
    ldg: bool = True
    streaming: bool = True
    min_blocks: int = 0
    persistent: bool = False
    window: int = 0
    stage: bool = False

    def __post_init__(self):
        ct = self.column_threads
        if ct < 1 or ct > 32 or ct & (ct - 1):
            raise ValueError(f"column_threads={ct} must be a power of two from 1 to 32")
        if self.vectors not in (1, 2, 4) or self.rows not in (1, 2, 4):
            raise ValueError(f"vectors={self.vectors} and rows={self.rows} must be 1, 2 or 4")
        if self.stage and (self.window or self.rows != 1):
            raise ValueError("a staged layout carries one row a thread: stage=True excludes window and rows")
        if self.window not in (0, 2, 4, 8):
            raise ValueError(f"window={self.window} must be 0 (off), 2, 4 or 8 rows")
        if self.block not in (128, 256, 512) or self.block % ct:
            raise ValueError(f"block={self.block} must be 128, 256 or 512 threads (a multiple of column_threads)")


#: the variants a GPU probe compares (64 float32 columns are 16 vectors: '8x2' covers a row with 8 threads of
#: two vectors, a warp reading 4 rows x 128 contiguous bytes per load; '16x1' with 16 threads of one, 2 rows x
#: 256 bytes)
DIA_VARIANTS = {
    "8x2": DiaVariant(),
    "8x2-plain": DiaVariant(ldg=False, streaming=False),
    "8x2-nocs": DiaVariant(streaming=False),
    "8x2-r2": DiaVariant(rows=2),
    "8x2-b512": DiaVariant(block=512),
    "16x1": DiaVariant(16, 1),
    "16x1-r2": DiaVariant(16, 1, rows=2),
    "16x1-r4": DiaVariant(16, 1, rows=4),
    "16x1-b512": DiaVariant(16, 1, block=512),
    "4x4": DiaVariant(4, 4),
    "32x1": DiaVariant(32, 1),
    "8x2-r2-b128": DiaVariant(rows=2, block=128),
    "8x2-mb2": DiaVariant(min_blocks=2),
    "8x2-mb3": DiaVariant(min_blocks=3),
    "16x1-r2-mb2": DiaVariant(16, 1, rows=2, min_blocks=2),
    "16x1-mb4": DiaVariant(16, 1, min_blocks=4),
    "16x1-mb6": DiaVariant(16, 1, min_blocks=6),
    "8x2-r2-mb2": DiaVariant(rows=2, min_blocks=2),
    "16x1-mb5": DiaVariant(16, 1, min_blocks=5),
    "16x1-r2-mb3": DiaVariant(16, 1, rows=2, min_blocks=3),
    "8x2-b128-mb4": DiaVariant(block=128, min_blocks=4),
    "8x2-mb3-persistent": DiaVariant(min_blocks=3, persistent=True),
    "16x1-mb5-persistent": DiaVariant(16, 1, min_blocks=5, persistent=True),
    "8x2-w2": DiaVariant(window=2, min_blocks=2),
    "8x2-w4": DiaVariant(window=4, min_blocks=2),
    "16x1-w4": DiaVariant(16, 1, window=4, min_blocks=3),
    "16x1-w8": DiaVariant(16, 1, window=8, min_blocks=2),
    "16x1-w4-b128": DiaVariant(16, 1, window=4, block=128, min_blocks=6),
    "8x2-stage": DiaVariant(stage=True),
    "8x2-stage-b128": DiaVariant(block=128, stage=True),
    "16x1-stage": DiaVariant(16, 1, stage=True),
}

#: the variant plans use, chosen by measurement on an H200 (the 5-point Laplacian, 1,000,000 x 64 float32, two
#: runs): "8x2-mb3-persistent" (8 threads a row, two 16-byte vectors each, a register budget for 3 blocks per SM
#: so all ten b loads of a thread are in flight, a grid of resident blocks looping over row tiles) took 156.6-157.0
#: us, 1.24x the memory floor; the b-staging layout "8x2-stage" took 246 us and the non-persistent "8x2-mb3"
#: 178 us (results/2026-12-02-dia-layouts-gpu-run*.json)
DIA_VARIANT = "8x2-mb3-persistent"


def dia_variant(name: str | None = None) -> DiaVariant:
    """The variant ``name`` (default :data:`DIA_VARIANT`, read when a plan is made)."""
    name = DIA_VARIANT if name is None else name
    try:
        return DIA_VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown DIA kernel variant {name!r}; the variants are {', '.join(DIA_VARIANTS)}") from None


def specialised(ndiag) -> bool:
    """Whether a gather of ``ndiag`` stored diagonals runs the specialised (unrolled) kernel."""
    return ndiag is not None and 1 <= int(ndiag) <= MAX_UNROLLED


def diagonal_offsets(fmt, c0s, transpose: bool = False):
    """``q - r`` (b's row less the result's row) of each diagonal with level-0 coordinate in ``c0s``, when it is
    constant along every diagonal (DIAI; DIAJ transposed), else None (SkewDIAI's anti-diagonals)."""
    out = []
    for c0 in c0s:
        (q0, q1) = ((fmt.lvl2dim([int(c0), r])[0 if transpose else 1]) for r in (0, 1))
        if q1 - q0 != 1:
            return None
        out.append(int(q0))
    return tuple(out)


#: the most shared memory a staged layout's tile may take (a static allocation: 48 KiB, less for other blocks)
MAX_STAGE_BYTES = 40 * 1024


def stage_segments(offsets, rows: int) -> list:
    """(first shift, rows, first slot) of the segments of b a tile of ``rows`` rows needs, the shifts relative to
    the tile's first row: the union of ``[offset, offset + rows)`` over the diagonals, merged."""
    out = []
    for o in sorted(set(offsets)):
        if out and o <= out[-1][0] + out[-1][1]:
            out[-1][1] = max(out[-1][1], o + rows - out[-1][0])
        else:
            out.append([o, rows])
    slot, segs = 0, []
    for first, n in out:
        segs.append((first, n, slot))
        slot += n
    return segs


def staged(variant: DiaVariant, offsets, itemsize: int) -> bool:
    """Whether ``variant`` stages b in shared memory for these offsets (constant, and the tile fits)."""
    if not variant.stage or offsets is None:
        return False
    by = variant.block // variant.column_threads
    rows = sum(n for _, n, _ in stage_segments(offsets, by))
    # both instantiations' arrays (16-byte vectors and single elements) are the kernel's static shared memory
    return rows * variant.column_threads * variant.vectors * (16 + itemsize) <= MAX_STAGE_BYTES


def rows_per_thread(variant: DiaVariant, offsets) -> int:
    """Rows a thread of ``variant`` carries: its window where the offsets allow one, else ``rows``."""
    return variant.window if variant.window and offsets is not None else variant.rows


def index_c_type(extents) -> str:
    """The C type of row and column indices: 32-bit when every intermediate of the diagonal arithmetic fits."""
    return "int" if sum(int(e) for e in extents) < 2**31 - 1 else "long long"


def dia_body(T, inner, prod, conjugate, add, epilog, ndiag, variant: DiaVariant, extents, init, store,
             combine, offsets=None) -> str:
    """The specialised gather body (the template ``cumath_ust_rows<W>``'s statements): ``inner`` the C expression
    of b's row from ``c0`` (the diagonal) and ``c1`` (the result row); ``init``/``store``/``combine`` the
    accumulator helpers of ``_codegen`` (shared with the general kernels)."""
    semi = bool(add)
    I = index_c_type(extents)  # noqa: E741
    if I == "int":
        inner = re.sub(r"(\d)LL\b", r"\1", inner)
    ld = (lambda p: f"ldg_({p})") if variant.ldg else (lambda p: f"*({p})")
    loadv = "load_vec_nc<W>" if variant.ldg else "load_vec<W>"
    ep = (lambda x: f"{epilog}({x})") if epilog else (lambda x: x)
    step = f"acc[k][u][w] = nz_ ? {add}(acc[k][u][w], t) : acc[k][u][w];" if add else \
        "acc[k][u][w] = nz_ ? acc[k][u][w] + t : acc[k][u][w];"
    col = "const long long col = cb + ((long long)threadIdx.x + (long long)u * blockDim.x) * W;"
    window = variant.window if variant.window and offsets is not None else 0
    R = window or variant.rows
    row_k = "r0 + k" if window else "r0 + (long long)k * blockDim.y"
    first = "tile * rows_blk + (long long)threadIdx.y * R" if window else "tile * rows_blk + threadIdx.y"
    if staged(variant, offsets, {"float": 4, "double": 8, "cplx<float>": 8, "cplx<double>": 16}[T]):
        products = _staged_products(T, prod, conjugate, step, combine, ld, loadv, offsets, variant)
    elif window:
        products = _window_products(T, prod, conjugate, step, combine, ld, loadv, col, offsets, R)
    else:
        products = _strided_products(T, inner, prod, conjugate, step, combine, ld, loadv, col)
    return "\n".join([
        f"  constexpr int V = {variant.vectors}, R = {R}, ND = {int(ndiag)};",
        f"  typedef {I} I;",
        "  const long long d0 = (long long)pos0[0];",
        "  I dc0[ND], dlo[ND], dhi[ND]; long long dvb[ND];  // per diagonal: level-0 coordinate, rows, value base",
        "#pragma unroll",
        "  for (int g = 0; g < ND; ++g) {",
        f"    dc0[g] = (I){ld('crd0 + d0 + g')}; dlo[g] = (I){ld('rlo1 + d0 + g')}; dhi[g] = (I){ld('rhi1 + d0 + g')};",
        f"    dvb[g] = {ld('roff1 + d0 + g')} - (long long)dlo[g]; }}",
        "  const long long span = (long long)blockDim.x * W * V, rows_blk = (long long)blockDim.y * R;",
        "  for (long long cb = (long long)blockIdx.y * span; cb < N; cb += (long long)gridDim.y * span)",
        "  for (long long tile = blockIdx.x; tile * rows_blk < M; tile += gridDim.x) {",
        f"    const long long r0 = {first};",
        f"    {T} acc[R][V][W];",
        "#pragma unroll",
        "    for (int k = 0; k < R; ++k) {",
        f"      const long long rr = {row_k};",
        "#pragma unroll",
        "      for (int u = 0; u < V; ++u) {",
        f"        {col}",
        "        const bool ok = rr < M && col < N;",
        f"        {T} (&acc_)[W] = acc[k][u];",
        *init(T, semi, "        ", "rr * ldd + col"),
        "      }",
        "    }",
        *products,
        "#pragma unroll",
        "    for (int k = 0; k < R; ++k) {",
        f"      const long long rr = {row_k};",
        "      if (rr >= M) continue;",
        "#pragma unroll",
        "      for (int u = 0; u < V; ++u) {",
        f"        {col}",
        "        if (col >= N) continue;",
        *store(T, semi, "        ", "acc[k][u][w]", "rr * ldd + col", ep,
               "store_vec_cs" if variant.streaming else "store_vec"),
        "      }",
        "    }",
        "  }",
    ])


def _strided_products(T, inner, prod, conjugate, step, combine, ld, loadv, col) -> list:
    """Rows strided by blockDim.y: every load of the tile first (all in flight together), then the products."""
    return [
        "    // every load of the tile first (all in flight together), then the products",
        f"    {T} vv[ND][R]; bool nz[ND][R]; {T} bb[ND][R][V][W];",
        "#pragma unroll",
        "    for (int g = 0; g < ND; ++g) {",
        "#pragma unroll",
        "      for (int k = 0; k < R; ++k) {",
        "        const I c0 = dc0[g], c1 = (I)(r0 + (long long)k * blockDim.y);",
        f"        const I q = {inner};",
        "        const bool in = r0 + (long long)k * blockDim.y < M && c1 >= dlo[g] && c1 < dhi[g] && q >= 0 && q < K;",
        f"        vv[g][k] = {ld('val + (in ? dvb[g] + (long long)c1 : 0LL)')}; nz[g][k] = in;",
        f"        const {T}* __restrict__ bq = B + (long long)(in ? q : (I)0) * ldb;",
        "#pragma unroll",
        "        for (int u = 0; u < V; ++u) {",
        f"          {col}",
        f"          {loadv}(bb[g][k][u], bq + (col < N ? col : 0LL));",
        "        }",
        "      }",
        "    }",
        "#pragma unroll",
        "    for (int g = 0; g < ND; ++g) {",
        "#pragma unroll",
        "      for (int k = 0; k < R; ++k) {",
        f"        {T} v = vv[g][k]; const bool nz_ = nz[g][k] && !is_zero(v); {'v = conj_(v);' if conjugate else ''}",
        "#pragma unroll",
        "        for (int u = 0; u < V; ++u) {",
        f"          const {T} (&b_)[W] = bb[g][k][u];",
        "#pragma unroll",
        "          for (int w = 0; w < W; ++w) { " + combine(T, None, "acc[k][u][w]", prod).replace(
            "acc[k][u][w] = acc[k][u][w] + t;", step) + " }",
        "        }",
        "      }",
        "    }",
    ]


def _window_products(T, prod, conjugate, step, combine, ld, loadv, col, offsets, R) -> list:
    """Consecutive rows ``r0 .. r0 + R - 1``: each row of b the window needs (``r0 + k + offset``) loaded once,
    then every (diagonal, row) pair multiplies the one it needs."""
    shifts = sorted({k + o for o in offsets for k in range(R)})
    slot = {s: i for i, s in enumerate(shifts)}
    lines = [f"    {T} bb[{len(shifts)}][V][W]; bool bok[{len(shifts)}];"]
    for i, sh in enumerate(shifts):
        lines += [f"    {{ const long long q = r0 + ({sh}LL); bok[{i}] = q >= 0 && q < K;",
                  f"      const {T}* __restrict__ bq = B + (bok[{i}] ? q : 0LL) * ldb;",
                  "#pragma unroll",
                  "      for (int u = 0; u < V; ++u) {",
                  f"        {col}",
                  f"        {loadv}(bb[{i}][u], bq + (col < N ? col : 0LL)); }} }}"]
    lines.append(f"    {T} vv[{len(offsets)}][{R}]; bool in_[{len(offsets)}][{R}];")
    for g, o in enumerate(offsets):  # the values, every one in flight too
        for k in range(R):
            lines += [f"    {{ const long long rr = r0 + {k};",
                      f"      in_[{g}][{k}] = rr < M && rr >= dlo[{g}] && rr < dhi[{g}] && bok[{slot[k + o]}];",
                      f"      vv[{g}][{k}] = {ld(f'val + (in_[{g}][{k}] ? dvb[{g}] + rr : 0LL)')}; }}"]
    for g, o in enumerate(offsets):
        for k in range(R):
            i = slot[k + o]
            lines += [f"    {{ {T} v = vv[{g}][{k}];",
                      f"      const bool nz_ = in_[{g}][{k}] && !is_zero(v); {'v = conj_(v);' if conjugate else ''}",
                      "#pragma unroll",
                      "      for (int u = 0; u < V; ++u) {",
                      f"        const {T} (&b_)[W] = bb[{i}][u];",
                      "#pragma unroll",
                      "        for (int w = 0; w < W; ++w) { " + combine(T, None, f"acc[{k}][u][w]", prod).replace(
                          f"acc[{k}][u][w] = acc[{k}][u][w] + t;", step.replace("[k]", f"[{k}]")) + " } } }"]
    return lines


def _staged_products(T, prod, conjugate, step, combine, ld, loadv, offsets, variant) -> list:
    """One row a thread, blockDim exactly BX x BY: the tile's rows of b copied into shared memory (the segments
    of :func:`stage_segments`, every thread of the block loading its share), then each (diagonal, row) reads its
    row of b from there."""
    bx, by = variant.column_threads, variant.block // variant.column_threads
    segs = stage_segments(offsets, by)
    nrows = sum(n for _, n, _ in segs)
    lines = [f"    constexpr int BX = {bx}, BY = {by}, SV = BX * V;  // vectors of a staged row",
             f"    __shared__ __align__(16) {T} sb[{nrows} * SV * W];",
             "    const long long t0 = tile * rows_blk;",
             "    const int tid = threadIdx.y * BX + threadIdx.x;",
             "    __syncthreads();  // the previous tile's reads of sb are done"]
    for first, n, slot in segs:
        lines += ["#pragma unroll",
                  f"    for (int e = tid; e < {n} * SV; e += BX * BY) {{",
                  f"      const int ri = e / SV, vs = e % SV; const long long q = t0 + ({first}LL) + ri;",
                  "      const long long cc = cb + (long long)vs * W; const bool ok = q >= 0 && q < K && cc < N;",
                  f"      {T} x_[W]; {loadv}(x_, B + (ok ? q : 0LL) * ldb + (ok ? cc : 0LL));",
                  f"      store_vec_shared<W>(sb + ((long long)({slot} + ri) * SV + vs) * W, x_); }}"]
    lines += ["    __syncthreads();"]
    slot_of = {}
    for first, n, slot in segs:
        for o in offsets:
            if first <= o and o + by <= first + n:
                slot_of.setdefault(o, slot + (o - first))
    lines.append(f"    {T} vv[{len(offsets)}]; bool in_[{len(offsets)}];")
    for g, o in enumerate(offsets):
        lines += [f"    {{ const long long rr = r0, q = r0 + ({o}LL);",
                  f"      in_[{g}] = rr < M && rr >= dlo[{g}] && rr < dhi[{g}] && q >= 0 && q < K;",
                  f"      vv[{g}] = {ld(f'val + (in_[{g}] ? dvb[{g}] + rr : 0LL)')}; }}"]
    for g, o in enumerate(offsets):
        lines += [f"    {{ {T} v = vv[{g}];",
                  f"      const bool nz_ = in_[{g}] && !is_zero(v); {'v = conj_(v);' if conjugate else ''}",
                  f"      const {T}* srow = sb + (long long)({slot_of[o]} + threadIdx.y) * SV * W;",
                  "#pragma unroll",
                  "      for (int u = 0; u < V; ++u) {",
                  f"        {T} b_[W]; load_vec<W>(b_, srow + (threadIdx.x + u * BX) * W);",
                  "#pragma unroll",
                  "        for (int w = 0; w < W; ++w) { " + combine(T, None, "acc[0][u][w]", prod).replace(
                      "acc[0][u][w] = acc[0][u][w] + t;", step.replace("[k]", "[0]")) + " } } }"]
    return lines
