"""Generated SpMM kernels for any UST format: the loop nest (run by ``emulate``, the same levels, tables and
coordinate expressions as the CUDA C++) against a dense product, and the emitted CUDA C++ compiled by NVRTC to
LTO-IR and linked by nvJitLink into an sm_90 CUBIN (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cumath.sparse._matmul._codegen import emulate, fuses_beta, schedule, spmm_source
from cumath.sparse.ust import Dimension, LevelFormat as F, NamedFormats as N, Tensor, TensorFormat

_i, _j = Dimension("i"), Dimension("j")
FORMATS = [N.CSR, N.CSC, N.COO, N.DCSR, N.DCSC, N.CROW, N.CCOL, N.DIAI, N.DIAJ, N.SkewDIAI, N.SkewDIAJ,
           N.BSRRight(2, 3), N.BSRLeft(3, 2), N.BSCRight(2, 2), N.BSCLeft(2, 4), N.DenseMatrixRight,
           N.DenseMatrixLeft, TensorFormat((_i, _j), {_j // 2: F.COMPRESSED, _i: F.COMPRESSED, _j % 2: F.DENSE},
                                           name="ColumnPairs"),
           N.Structured(2, 3), N.Delta(N.CSR), N.Delta(N.DCSC), N.Delta(N.DIAI), N.Delta(N.BSRRight(2, 2))]


def _pruned_to(fmt, d):
    """d with at most N nonzeros in every block of M columns when fmt is N:M structured (the rest zeroed)."""
    if not fmt.name.startswith("Structured"):
        return d
    n, m = fmt.level_param(2), fmt.level_exprs[2].divisor
    d = d.copy()
    for r in range(d.shape[0]):
        for b0 in range(0, d.shape[1], m):
            nz = np.flatnonzero(d[r, b0:b0 + m])
            d[r, b0 + nz[n:]] = 0
    return d


def storage(fmt, d):
    u = Tensor.from_package(sp.csr_array(d)).convert(tensor_format=fmt)
    pos = [None if p is None else np.asarray(p) for p in u._pos]
    crd = [None if c is None else np.asarray(c) for c in u._crd]
    return pos, crd, np.asarray(u.val)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_loop_nest(fmt):
    rng = np.random.default_rng(abs(hash(fmt.name)) % 2**32)
    d = rng.standard_normal((7, 9)) + 1j * rng.standard_normal((7, 9))
    d[rng.random(d.shape) > 0.4] = 0
    d = _pruned_to(fmt, d)
    pos, crd, val = storage(fmt, d)
    b, bt, c = rng.standard_normal((9, 3)), rng.standard_normal((7, 2)), rng.standard_normal((7, 3))
    assert np.abs(emulate(fmt, (7, 9), pos, crd, val, b, alpha=2.0, beta=0.5, c=c) - (2 * d @ b + 0.5 * c)).max() < 1e-12
    assert np.abs(emulate(fmt, (7, 9), pos, crd, val, bt, transpose=True, conjugate=True) - d.conj().T @ bt).max() \
        < 1e-12
    x = rng.standard_normal(9)
    assert np.abs(emulate(fmt, (7, 9), pos, crd, val, x) - d @ x).max() < 1e-12


def test_operators_semiring():
    rng = np.random.default_rng(3)
    d = rng.random((6, 5))
    d[d < 0.5] = 0
    pos, crd, val = storage(N.CSR, d)
    b = rng.random((5, 2))
    # (min, +) semiring: d[i, col] = min over stored j of (a[i, j] + b[j, col]), starting from +inf
    got = emulate(N.CSR, (6, 5), pos, crd, val, b, beta=1, c=np.full((6, 2), np.inf), add=min, mul=lambda x, y: x + y)
    ref = np.full((6, 2), np.inf)
    for i, j in zip(*np.nonzero(d)):
        ref[i] = np.minimum(ref[i], d[i, j] + b[j])
    assert np.array_equal(got, ref)
    got = emulate(N.CSR, (6, 5), pos, crd, val, b, prolog_a=lambda v: 2 * v, prolog_b=np.abs, epilog=lambda v: v + 1)
    assert np.abs(got - ((2 * d) @ np.abs(b) + 1)).max() < 1e-12


@pytest.mark.parametrize("fmt", [N.CSR, N.COO, N.DIAI, N.BSRRight(2, 2), FORMATS[-6]], ids=lambda f: f.name)
@pytest.mark.parametrize("dtype", ("float32", "float64", "complex64", "complex128"))
@pytest.mark.parametrize("index_type", ("int32", "int64"))
def test_source_compiles_and_links(fmt, dtype, index_type):
    _compile_and_link(fmt, dtype, index_type)


@pytest.mark.parametrize("fmt", [N.Structured(2, 4), N.Delta(N.CSR), N.Delta(N.DIAI)], ids=lambda f: f.name)
@pytest.mark.parametrize("dtype,index_type", [("float32", "int32"), ("complex128", "int64")])
def test_structured_and_delta_sources_compile(fmt, dtype, index_type):
    _compile_and_link(fmt, dtype, index_type)


def _compile_and_link(fmt, dtype, index_type):
    from cumath._core import jit

    try:
        jit.nvrtc_version()
    except Exception as exc:  # pragma: no cover - NVRTC is part of the test environment
        pytest.skip(f"NVRTC is not available: {exc}")
    src = spmm_source(fmt, (1001, 997), dtype, index_type, transpose=dtype == "complex64", conjugate=True)
    art = jit.compile_source(src, cc=90, output="ltoir", options=("-rdc=true",), what="a generated SpMM")
    cubin = jit.link([art], cc=90, what="a generated SpMM")
    assert cubin.kind == "cubin" and len(cubin.data) > 1000


def test_operator_symbols_are_declared():
    src = spmm_source(N.CSR, (5, 5), "float64", "int32", prolog_a="pa", prolog_b="pb", epilog="ep", add="ad", mul="mu",
                      atomic_add="aa")
    for decl in ('extern "C" __device__ double pa(double);', 'extern "C" __device__ double mu(double, double);',
                 'extern "C" __device__ void aa(double*, double);', "mu(pa(v), pb(bv))", "ep(D[r * ldd + col])"):
        assert decl in src
    with pytest.raises(ValueError, match="matrix format"):
        spmm_source(N.COOd(3), (2, 2, 2), "float64", "int32")
    with pytest.raises(TypeError, match="generated kernels support"):
        spmm_source(N.CSR, (2, 2), "float16", "int32")


def test_schedules():
    """Diagonal formats over the result's rows gather (no atomics), formats whose level 0 is the row own their
    rows, the rest accumulate atomically; a semiring known only by its atomic sum accumulates in memory."""
    want = {"CSR": ("owned", "atomic"), "CSC": ("atomic", "owned"), "COO": ("atomic", "atomic"),
            "DCSR": ("owned", "atomic"), "CROW": ("owned", "atomic"), "DIAI": ("gather", "atomic"),
            "DIAJ": ("atomic", "gather"), "SkewDIAI": ("gather", "atomic"), "BSRRight2x3": ("owned", "atomic")}
    for fmt in (N.CSR, N.CSC, N.COO, N.DCSR, N.CROW, N.DIAI, N.DIAJ, N.SkewDIAI, N.BSRRight(2, 3)):
        assert (schedule(fmt), schedule(fmt, True)) == want[fmt.name], fmt.name
    assert schedule(N.DIAI, atomic_add="aa") == "atomic" and schedule(N.DIAI, add="ad", atomic_add="aa") == "gather"
    gather = spmm_source(N.DIAI, (9, 9), "float32", "int32", epilog="ep", add="ad", mul="mu")
    main = gather[gather.index("schedule: gather"):gather.index("cumath_ust_spmm_scale")]
    assert "atomic" not in main and "ep(acc[u][w])" in main and "acc[u][w] = ad(acc[u][w], t);" in main
    # the diagonals' tables are staged in shared memory, b and d move as 16-byte vectors (4 floats) where allowed
    assert "__shared__ long long s_c0[DCH]" in main and "cumath_ust_rows<4>(" in main and "cumath_ust_rows<1>(" in main
    assert "load_vec<W>(b_, B + qb + col)" in main and "store_vec<W>(D + r * ldd + col, out)" in main
    owned = spmm_source(N.CSR, (9, 9), "float32", "int32")
    main = owned[owned.index("schedule: owned"):owned.index("cumath_ust_spmm_scale")]
    assert "atomic_acc(" not in main and "acc[r - c0][u][w] = acc[r - c0][u][w] + t;" in main
    assert "constexpr int V = 2, ROWS = 1;" in main
    bsr = spmm_source(N.BSRRight(4, 4), (9, 9), "float32", "int32")
    assert "acc[r - (c0 * 4LL)][u][w] = acc[r - (c0 * 4LL)][u][w] + t;" in bsr and "float acc[ROWS][V][W];" in bsr
    assert "constexpr int V = 1, ROWS = 4;" in bsr and "cumath_ust_rows<2>(" in spmm_source(
        N.BSRRight(4, 4), (9, 9), "float64", "int32") and "cumath_ust_rows<1>(" in spmm_source(
        N.DIAI, (9, 9), "complex128", "int32")
    assert fuses_beta(N.DIAI) and fuses_beta(N.CSR) and fuses_beta(N.BSRRight(2, 3)) and fuses_beta(N.CSC, True)
    assert not fuses_beta(N.DCSR) and not fuses_beta(N.COO) and not fuses_beta(N.CSR, atomic_add="aa")
    assert "atomic_acc(&D" in spmm_source(N.COO, (9, 9), "float32", "int32")
    assert "aa(&D" in spmm_source(N.CSR, (9, 9), "float32", "int32", atomic_add="aa")


@pytest.mark.parametrize("fmt", [N.DIAI, N.SkewDIAI], ids=lambda f: f.name)
def test_gather_semiring_and_operators(fmt):
    rng = np.random.default_rng(4)
    d = rng.random((8, 11))
    d[d < 0.6] = 0
    pos, crd, val = storage(fmt, d)
    b = rng.random((11, 3))
    got = emulate(fmt, (8, 11), pos, crd, val, b, beta=1, c=np.full((8, 3), np.inf), add=min, mul=lambda x, y: x + y)
    ref = np.full((8, 3), np.inf)
    for i, j in zip(*np.nonzero(d)):
        ref[i] = np.minimum(ref[i], d[i, j] + b[j])
    assert np.array_equal(got, ref)
    c = rng.random((8, 3))
    got = emulate(fmt, (8, 11), pos, crd, val, b, alpha=1.5, beta=0.5, c=c, prolog_a=lambda v: 2 * v,
                  prolog_b=np.abs, epilog=lambda v: v + 1)
    assert np.abs(got - (1.5 * (2 * d) @ np.abs(b) + 0.5 * c + 1)).max() < 1e-12


@pytest.mark.parametrize("fmt", [N.DIAI, N.DIAJ, N.CSR, N.DCSR, N.BSRRight(3, 2), N.BSCRight(2, 2)],
                         ids=lambda f: f.name)
def test_gather_and_owned_sources_compile(fmt):
    from cumath._core import jit

    try:
        jit.nvrtc_version()
    except Exception as exc:  # pragma: no cover - NVRTC is part of the test environment
        pytest.skip(f"NVRTC is not available: {exc}")
    transpose = fmt.name in ("DIAJ", "BSCRight2x2")
    src = spmm_source(fmt, (1001, 997), "complex128", "int64", transpose=transpose, conjugate=True,
                      prolog_a="pa", epilog="ep", add="ad", mul="mu")
    assert f"schedule: {'gather' if fmt.name.startswith('DIA') else 'owned'}" in src
    art = jit.compile_source(src, cc=90, output="ltoir", options=("-rdc=true",), what="a generated SpMM")
    assert art.data


def test_launch_shape_and_vector_widths():
    """The 'gather' / 'owned' launch shape covers every row and column with 256-thread blocks (a power-of-two
    number of column threads, at most a warp), within CUDA's grid limits; 16-byte vectors per dtype."""
    from cumath.sparse._matmul._codegen import launch_shape, vector_width, vectors_per_thread

    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=200, deadline=None)
    @hyp.given(rows=st.integers(0, 10**9), n=st.integers(1, 10**7), width=st.sampled_from([1, 2, 4]),
               per=st.sampled_from([1, 2]))
    def check(rows, n, width, per):
        (gx, gy, gz), (bx, by, bz) = launch_shape(rows, n, width, per)
        assert bx * by == 256 and bz == gz == 1 and bx & (bx - 1) == 0 and 1 <= bx <= 32
        assert 1 <= gx <= 1 << 22 and 1 <= gy <= 65535
        assert gx * by >= min(rows, (1 << 22) * by)  # the kernels stride over the rest
        assert gy * bx * width * per >= min(n, 65535 * bx * width * per)
        if n <= 32 * width * per:
            assert gy == 1

    check()
    assert launch_shape(1_000_000, 64, 4, 2) == ((31250, 1, 1), (8, 32, 1))  # the Laplacian case: 32 rows a block
    assert launch_shape(50_000, 64, 4, 1) == ((3125, 1, 1), (16, 16, 1))  # 4x4 BSR: 16 block rows a block
    assert launch_shape(10, 1, 1, 2) == ((1, 1, 1), (1, 256, 1))  # SpMV: a thread per row
    assert [vector_width(d) for d in ("float32", "float64", "complex64", "complex128")] == [4, 2, 2, 1]
    assert vectors_per_thread(N.DIAI) == 2 and vectors_per_thread(N.CSR) == 2 and vectors_per_thread(N.BSRRight(4, 4)) == 1
