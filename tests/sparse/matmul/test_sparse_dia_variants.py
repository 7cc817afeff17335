"""The specialised DIA gather kernel (``_dia.py``: unrolled over the plan's diagonal count, branch-free) in every
layout of ``DIA_VARIANTS``, executed on the CPU (``host_kernels``) through the generated executor, against NumPy
float64: dtypes, odd and rectangular sizes, diagonals at the matrix's corners, column counts off the 16-byte path,
unaligned b and d (the element path), stored zeros against non-finite b, operators, transposes, batches."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import host_kernels  # noqa: E402
from test_sparse_generated_host import TOL, rand, relerr, run  # noqa: E402

from cumath.sparse._matmul import _dia  # noqa: E402
from cumath.sparse._matmul._codegen import launch_shape, spmm_source  # noqa: E402
from cumath.sparse.ust import NamedFormats as N  # noqa: E402

pytestmark = pytest.mark.skipif(not host_kernels.available(), reason="no host C++ compiler (g++)")


def laplacian(nx, ny, dtype):
    """The 5-point Laplacian of an nx x ny grid (dense; the couplings across grid rows left out)."""
    n = nx * ny
    d = np.zeros((n, n), dtype)
    for i in range(n):
        d[i, i] = 4
        if i % nx:
            d[i, i - 1] = -1
        if (i + 1) % nx:
            d[i, i + 1] = -1
        if i >= nx:
            d[i, i - nx] = -1
        if i + nx < n:
            d[i, i + nx] = -1
    return d


def diagonals(rng, m, k, offsets, dtype):
    d = np.zeros((m, k), dtype)
    for off in offsets:
        i = np.arange(max(0, -off), min(m, k - off))
        d[i, i + off] = rand(rng, (i.size,), dtype)
    return d


def antidiagonals(rng, n, sums):
    """An n x n float64 matrix with entries where i + j is one of ``sums`` (SkewDIAI's diagonals)."""
    d = np.zeros((n, n))
    for t in sums:
        i = np.arange(max(0, t - n + 1), min(n, t + 1))
        d[i, t - i] = rng.standard_normal(i.size)
    return d


@pytest.fixture
def variant(monkeypatch):
    def use(name):
        monkeypatch.setattr(_dia, "DIA_VARIANT", name)
        return _dia.DIA_VARIANTS[name]
    return use


@pytest.mark.parametrize("name", list(_dia.DIA_VARIANTS))
def test_every_variant(monkeypatch, variant, name):
    """The Laplacian of a 7 x 9 grid (63 rows, diagonals 0, +-1, +-7) times 64 float32 columns (16-byte vectors),
    13 columns (the element path) and an unaligned b; the launch follows the variant's layout."""
    v = variant(name)
    rng = np.random.default_rng(1)
    d = laplacian(7, 9, "float32")
    b = rand(rng, (63, 64), "float32")
    got, k = run(N.DIAI, d, b, monkeypatch=monkeypatch)
    assert relerr(got, d.astype(np.float64) @ b) < TOL["float32"], name
    (grid, block), = k["cumath_ust_spmm"].launches
    bx = v.column_threads if v.stage else min(v.column_threads, -(-16 // v.vectors))  # staged: blockDim exact
    assert block[0] == bx and block[0] * block[1] == v.block
    rows = v.window or v.rows  # (the Laplacian's diagonals have constant offsets: a window where asked)
    assert grid[0] * block[1] * rows >= 63 > (grid[0] - 1) * block[1] * rows
    b13, c13 = rand(rng, (63, 13), "float32"), rand(rng, (63, 13), "float32")
    got, _ = run(N.DIAI, d, b13, c13, 1.5, -0.5, monkeypatch=monkeypatch)
    assert relerr(got, 1.5 * d.astype(np.float64) @ b13 - 0.5 * c13) < TOL["float32"], name
    wide = rand(rng, (63, 66), "float32")
    got, _ = run(N.DIAI, d, wide[:, 1:65], monkeypatch=monkeypatch)  # 4 bytes past an aligned address
    assert relerr(got, d.astype(np.float64) @ wide[:, 1:65]) < TOL["float32"], name


@pytest.mark.parametrize("dtype", ("float32", "float64", "complex64", "complex128"))
def test_dtypes_edges_and_shapes(monkeypatch, dtype):
    """Rectangular 37 x 41 with single-element diagonals at both corners, N odd (5), on the vector path (8, and
    a column tile boundary at 72), beta != 0, a vector b, a batch of b, DIAJ transposed (a gather too)."""
    rng = np.random.default_rng(2)
    offsets = [-36, -5, 0, 3, 40]  # (36, 0) and (0, 40): one element each
    d = diagonals(rng, 37, 41, offsets, dtype)
    for n in (5, 8, 72):
        b, c = rand(rng, (41, n), dtype), rand(rng, (37, n), dtype)
        got, k = run(N.DIAI, d, b, c, 2.0, 0.25, monkeypatch=monkeypatch)
        assert relerr(got, 2 * d.astype(np.complex128) @ b + 0.25 * c) < TOL[dtype], (dtype, n)
        assert "ND = 5" in k["cumath_ust_spmm"].source
    x = rand(rng, (41,), dtype)
    got, _ = run(N.DIAI, d, x, monkeypatch=monkeypatch)
    assert relerr(got, d @ x) < TOL[dtype]
    bb = rand(rng, (2, 41, 6), dtype)
    got, _ = run(N.DIAI, d, bb, monkeypatch=monkeypatch)
    assert got.shape == (2, 37, 6) and relerr(got, np.matmul(d, bb)) < TOL[dtype]
    bt = rand(rng, (37, 4), dtype)
    got, _ = run(N.DIAJ, d, bt, transpose=True, monkeypatch=monkeypatch)
    assert relerr(got, d.T @ bt) < TOL[dtype]


def test_skew_diagonals_and_unaligned_result(monkeypatch):
    """SkewDIAI (anti-diagonals: b's row falls as the result's row rises) and a result that is a view one element
    into its buffer (the element path for d)."""
    rng = np.random.default_rng(3)
    d = antidiagonals(rng, 30, (10, 29, 40))
    b = rand(rng, (30, 8), "float64")
    got, k = run(N.SkewDIAI, d, b, monkeypatch=monkeypatch)
    assert relerr(got, d @ b) < TOL["float64"] and "ND = 3" in k["cumath_ust_spmm"].source
    buf = rand(rng, (30, 9), "float64")
    c = buf[:, 1:]
    got, _ = run(N.SkewDIAI, d, b, c, 1.0, 2.0, monkeypatch=monkeypatch)
    assert relerr(got, d @ b + 2 * c) < TOL["float64"]


def test_stored_zeros_skip_non_finite_b(monkeypatch, variant):
    """A stored zero is skipped (as the general kernel and a CSR of the same matrix do): an inf or NaN in b's row
    behind it does not reach the result; a real entry in front of an inf does."""
    rng = np.random.default_rng(4)
    d = diagonals(rng, 20, 20, [-2, 0, 3], "float32")
    d[5, 8] = 0  # inside the diagonal +3: stored as a zero by DIAI
    d[4, 2] = 0
    b = rand(rng, (20, 8), "float32")
    b[8, :], b[2, 3] = np.inf, np.nan
    for name in ("8x2", "16x1-r2"):
        variant(name)
        got, _ = run(N.DIAI, d, b, monkeypatch=monkeypatch)
        ref = np.zeros((20, 8))
        for i, j in zip(*np.nonzero(d)):
            ref[i] += float(d[i, j]) * b[j].astype(np.float64)
        finite = np.isfinite(ref)
        assert np.array_equal(np.isfinite(got), finite), name
        assert relerr(np.where(finite, got, 0), np.where(finite, ref, 0)) < TOL["float32"]


def test_operators_on_the_specialised_kernel(monkeypatch):
    """(min, +) with an epilog, and prologs of a and b with alpha and beta, on five diagonals."""
    ops = 'extern "C" double ad(double a, double b) { return a < b ? a : b; }\n' \
          'extern "C" double mu(double a, double b) { return a + b; }\n' \
          'extern "C" double ep(double a) { return a + 1; }\n' \
          'extern "C" double pa(double a) { return 2 * a; }\n' \
          'extern "C" double pb(double b) { return b < 0 ? -b : b; }\n'
    import cumath.sparse._matmul._generated as G

    monkeypatch.setattr(G, "_symbol", lambda ir, what: ir)
    rng = np.random.default_rng(5)
    d = np.abs(diagonals(rng, 23, 19, [-4, -1, 0, 2, 7], "float64")) + 0
    b = rng.random((19, 8))
    ref = np.full((23, 8), np.inf)
    for i, j in zip(*np.nonzero(d)):
        ref[i] = np.minimum(ref[i], d[i, j] + b[j])
    got, k = run(N.DIAI, d, b, np.full((23, 8), np.inf), 1.0, 1.0, monkeypatch=monkeypatch, operators=ops,
                 prologs=(None, "ep", {"add": "ad", "mul": "mu"}, 90))
    assert np.array_equal(got, ref + 1) and "ND = 5" in k["cumath_ust_spmm"].source
    b2, c = rng.standard_normal((19, 8)), rng.standard_normal((23, 8))
    got, _ = run(N.DIAI, d, b2, c, 1.5, 0.5, monkeypatch=monkeypatch, operators=ops,
                 prologs=({"a": "pa", "b": "pb"}, None, None, 90))
    assert relerr(got, 1.5 * (2 * d) @ np.abs(b2) + 0.5 * c) < 1e-12


def test_where_the_specialised_kernel_applies():
    """Up to MAX_UNROLLED diagonals the source is specialised on their number; beyond, or unknown, the general
    gather (shared-memory chunks); indices are 32-bit while the extents allow."""
    src = lambda nd, ext=(100, 100): spmm_source(N.DIAI, ext, "float32", "int32", ndiag=nd)  # noqa: E731
    assert f"ND = {_dia.MAX_UNROLLED};" in src(_dia.MAX_UNROLLED) and "typedef int I;" in src(3)
    for nd in (None, 0, _dia.MAX_UNROLLED + 1):
        assert "__shared__ long long s_c0[DCH]" in src(nd) and "ND =" not in src(nd)
    assert "typedef long long I;" in src(4, (2**31, 10))
    src3 = spmm_source(N.DIAI, (100, 100), "float32", "int32", ndiag=5, variant="8x2-mb3")
    assert "__launch_bounds__(256, 3)" in src3 and "store_vec_cs<W>" in src3
    assert "store_vec<W>(D + rr" in spmm_source(N.DIAI, (9, 9), "float32", "int32", ndiag=2, variant="8x2-plain")
    assert "load_vec<W>(bb" in spmm_source(N.DIAI, (9, 9), "float32", "int32", ndiag=2, variant="8x2-plain")
    assert _dia.specialised(1) and not _dia.specialised(0) and not _dia.specialised(None)


@pytest.mark.parametrize("kwargs,message", [
    ({"column_threads": 6}, "column_threads=6 must be a power of two from 1 to 32"),
    ({"rows": 3}, "vectors=2 and rows=3 must be 1, 2 or 4"),
    ({"block": 1024}, "block=1024 must be 128, 256 or 512 threads"),
    ({"window": 3}, "window=3 must be 0 \\(off\\), 2, 4 or 8 rows"),
])
def test_variant_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _dia.DiaVariant(**kwargs)


def test_unknown_variant():
    with pytest.raises(ValueError, match="unknown DIA kernel variant 'x'; the variants are 8x2"):
        _dia.dia_variant("x")
    with pytest.raises(ValueError, match="unknown DIA kernel variant"):
        spmm_source(N.DIAI, (9, 9), "float32", "int32", ndiag=2, variant="nope")


def test_launch_shape_rows_per_thread():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=200, deadline=None)
    @hyp.given(rows=st.integers(0, 10**9), n=st.integers(1, 10**6), width=st.sampled_from([1, 2, 4]),
               name=st.sampled_from(sorted(_dia.DIA_VARIANTS)))
    def check(rows, n, width, name):
        v = _dia.DIA_VARIANTS[name]
        (gx, gy, _), (bx, by, _) = launch_shape(rows, n, width, v.vectors, column_threads=v.column_threads,
                                                threads=v.block, rows_per_thread=v.rows)
        assert bx * by == v.block and bx <= v.column_threads and 1 <= gx <= 1 << 22 and 1 <= gy <= 65535
        assert gx * by * v.rows >= min(rows, (1 << 22) * by * v.rows)  # the kernel strides over the rest

    check()
    assert launch_shape(1_000_000, 64, 4, 2, column_threads=8, threads=256) == ((31250, 1, 1), (8, 32, 1))
    assert launch_shape(1_000_000, 64, 4, 1, column_threads=16, threads=256, rows_per_thread=2) == \
        ((31250, 1, 1), (16, 16, 1))


def test_persistent_blocks_stride_over_tiles(monkeypatch, variant):
    """A persistent layout launches at most the blocks the GPU holds (here 2) and strides over the row tiles."""
    import cumath.sparse._matmul._generated as G

    variant("8x2-mb3-persistent")
    monkeypatch.setattr(G, "_resident_blocks", lambda kernel, block, device: 2)
    rng = np.random.default_rng(6)
    d = laplacian(10, 17, "float32")  # 170 rows: 6 tiles of 32
    b, c = rand(rng, (170, 64), "float32"), rand(rng, (170, 64), "float32")
    got, k = run(N.DIAI, d, b, c, 1.0, 1.0, monkeypatch=monkeypatch)
    assert relerr(got, d.astype(np.float64) @ b + c) < TOL["float32"]
    assert k["cumath_ust_spmm"].launches == [((2, 1, 1), (8, 32, 1))]
    monkeypatch.setattr(G, "_resident_blocks", lambda kernel, block, device: None)  # no driver: every tile a block
    got, k = run(N.DIAI, d, b, monkeypatch=monkeypatch)
    assert relerr(got, d.astype(np.float64) @ b) < TOL["float32"]
    assert k["cumath_ust_spmm"].launches == [((6, 1, 1), (8, 32, 1))]


@pytest.mark.parametrize("name", ["8x2-w2", "16x1-w8"])
def test_window_layouts(monkeypatch, variant, name):
    """A window of consecutive rows shares b's rows between diagonals of constant offset (DIAI, DIAJ transposed),
    the last window partial, diagonals at the corners; SkewDIAI has no constant offsets: rows strided instead."""
    v = variant(name)
    rng = np.random.default_rng(7)
    d = diagonals(rng, 45, 38, [-44, -3, 0, 1, 9, 37], "complex64")
    b, c = rand(rng, (38, 8), "complex64"), rand(rng, (45, 8), "complex64")
    got, k = run(N.DIAI, d, b, c, 1.5, 0.5, monkeypatch=monkeypatch)
    assert relerr(got, 1.5 * d.astype(np.complex128) @ b + 0.5 * c) < TOL["complex64"]
    src = k["cumath_ust_spmm"].source
    assert f"R = {v.window}," in src and "r0 + (-44LL)" in src and "bok[" in src
    (grid, block), = k["cumath_ust_spmm"].launches
    assert grid[0] * block[1] * v.window >= 45
    bt = rand(rng, (45, 4), "complex64")
    got, _ = run(N.DIAJ, d, bt, transpose=True, monkeypatch=monkeypatch)
    assert relerr(got, d.T.astype(np.complex128) @ bt) < TOL["complex64"]
    s = antidiagonals(rng, 30, (10, 29, 40))
    bs = rand(rng, (30, 5), "float64")
    got, k = run(N.SkewDIAI, s, bs, monkeypatch=monkeypatch)
    assert relerr(got, s @ bs) < TOL["float64"] and "bok[" not in k["cumath_ust_spmm"].source


def _nvrtc_or_skip():
    from cumath._core import jit

    try:
        jit.nvrtc_version()
    except Exception as exc:  # pragma: no cover - NVRTC is part of the test environment
        pytest.skip(f"NVRTC is not available: {exc}")
    return jit


@pytest.mark.parametrize("name", list(_dia.DIA_VARIANTS))
@pytest.mark.parametrize("dtype", ("float32", "complex128"))
def test_every_variant_compiles_for_the_gpu(name, dtype):
    """Each layout's CUDA C++ (both instantiations, W = 4 or 2 and W = 1) through NVRTC to LTO-IR for sm_90."""
    jit = _nvrtc_or_skip()
    src = spmm_source(N.DIAI, (1_000_000, 1_000_000), dtype, "int32", ndiag=5, variant=name,
                      offsets=(-1000, -1, 0, 1, 1000), conjugate=dtype.startswith("complex"))
    assert jit.compile_source(src, cc=90, output="ltoir", options=("-rdc=true",), what="a DIA layout").data


@pytest.mark.parametrize("dtype", ("float64", "complex64"))
def test_operators_compile_for_the_gpu(dtype):
    jit = _nvrtc_or_skip()
    for variant in (_dia.DIA_VARIANT, "8x2-w2"):
        src = spmm_source(N.DIAI, (5000, 4000), dtype, "int64", ndiag=3, variant=variant, offsets=(-7, 0, 2),
                          prolog_a="pa", prolog_b="pb", epilog="ep", add="ad", mul="mu")
        assert jit.compile_source(src, cc=90, output="ltoir", options=("-rdc=true",), what="a DIA layout").data


def _main_ptx(jit, src):
    ptx = bytes(jit.compile_source(src, cc=90, output="ptx", what="a DIA layout").data).decode(errors="ignore")
    main = ptx[ptx.index(".entry cumath_ust_spmm("):]
    return main[:main.index(".entry", 10)] if ".entry" in main[10:] else main


def test_ptx_of_the_layouts():
    """The register layouts' PTX: 16-byte read-only loads of b, streaming 16-byte stores of d, no shared memory
    or barrier (the diagonals' table is in registers), no 64-bit divide or modulo (the default, the persistent
    register layout, too); the staged layout: b through shared memory (16-byte shared loads and stores, a
    barrier), offsets as constants."""
    jit = _nvrtc_or_skip()
    offs = (-1000, -1, 0, 1, 1000)
    main = _main_ptx(jit, spmm_source(N.DIAI, (1_000_000, 1_000_000), "float32", "int32", ndiag=5, variant="8x2-mb3"))
    assert "ld.global.nc.v4" in main and "st.global.cs.v4.f32" in main
    assert "bar.sync" not in main and ".shared" not in main
    assert not any(op in main for op in ("div.s64", "rem.s64", "div.u64", "rem.u64"))
    main = _main_ptx(jit, spmm_source(N.DIAI, (1_000_000, 1_000_000), "float32", "int32", ndiag=5, offsets=offs))
    assert "ld.global.nc.v4" in main and "st.global.cs.v4.f32" in main and ".shared" not in main  # the default
    main = _main_ptx(jit, spmm_source(N.DIAI, (1_000_000, 1_000_000), "float32", "int32", ndiag=5, offsets=offs,
                                      variant="8x2-stage"))
    assert "ld.global.nc.v4" in main and "st.shared.v4" in main and "ld.shared.v4" in main and "bar.sync" in main
    assert "st.global.cs.v4.f32" in main
    plain = spmm_source(N.DIAI, (1_000_000, 1_000_000), "float32", "int32", ndiag=5, variant="8x2-plain")
    ptx = bytes(jit.compile_source(plain, cc=90, output="ptx", what="a DIA layout").data).decode(errors="ignore")
    assert "st.global.cs" not in ptx and "st.global.v4.f32" in ptx


def test_stage_segments():
    assert _dia.stage_segments((-1000, -1, 0, 1, 1000), 32) == [(-1000, 32, 0), (-1, 34, 32), (1000, 32, 66)]
    assert _dia.stage_segments((5, -3, 40), 8) == [(-3, 16, 0), (40, 8, 16)]
    assert _dia.stage_segments((0,), 16) == [(0, 16, 0)]
    v = _dia.DIA_VARIANTS["8x2-stage"]
    assert _dia.staged(v, (-1000, -1, 0, 1, 1000), 4) and not _dia.staged(v, None, 4)
    assert not _dia.staged(v, tuple(range(0, 1600, 100)), 4)  # 16 separate segments: 80 KiB, not staged
    assert not _dia.staged(_dia.DIA_VARIANTS["8x2"], (0,), 4)
    with pytest.raises(ValueError, match="stage=True excludes window and rows"):
        _dia.DiaVariant(stage=True, rows=2)


@pytest.mark.parametrize("name,dtype", [("8x2-stage", "float64"), ("16x1-stage", "float32"),
                                        ("8x2-stage-b128", "complex128"), ("8x2-stage-b128", "complex64")])
def test_staged_layouts(monkeypatch, variant, name, dtype):
    """b's rows staged in shared memory per tile: partial last tile, diagonals at the corners and beyond the
    tile's rows (segments apart), N below blockDim.x's columns (idle column threads), several column tiles,
    beta, DIAJ transposed, too many separate diagonals for the shared memory (the strided layout instead)."""
    v = variant(name)
    rng = np.random.default_rng(8)
    d = diagonals(rng, 75, 70, [-74, -1, 0, 2, 69], dtype)  # segments [-74, -74 + BY), [-1, 2 + BY), [69, ..)
    for n in (3, 8, 72):
        b, c = rand(rng, (70, n), dtype), rand(rng, (75, n), dtype)
        got, k = run(N.DIAI, d, b, c, -1.0, 2.0, monkeypatch=monkeypatch)
        assert relerr(got, -d.astype(np.complex128) @ b + 2 * c) < TOL[dtype], (name, dtype, n)
        src = k["cumath_ust_spmm"].source
        assert "__shared__ __align__(16)" in src and "store_vec_shared<W>" in src
        (grid, block), = k["cumath_ust_spmm"].launches
        assert block == (v.column_threads, v.block // v.column_threads, 1)
    bt = rand(rng, (75, 5), dtype)
    got, _ = run(N.DIAJ, d, bt, transpose=True, monkeypatch=monkeypatch)
    assert relerr(got, d.T.astype(np.complex128) @ bt) < TOL[dtype]
    many = diagonals(rng, 300, 300, list(range(-150, 150, 20)), dtype)  # 15 diagonals, 15 segments
    bm = rand(rng, (300, 4), dtype)
    got, k = run(N.DIAI, many, bm, monkeypatch=monkeypatch)
    assert relerr(got, many.astype(np.complex128) @ bm) < TOL[dtype] and "sb[" not in k["cumath_ust_spmm"].source
