"""The memory-bound GEMM of cumath.linalg.advanced: selection rules (CPU) and results against NumPy float64
(GPU): dtypes, row- and column-major layouts, padded and negative strides, misaligned pointers, batches,
alpha/beta, with and without C, a broadcast column C, odd and prime m."""

from __future__ import annotations

import ctypes
import logging

import numpy as np
import pytest

from cumath.errors import InvalidStateError
from cumath.linalg.advanced import _memory_bound as mb

M = 10_000_000


def rowmajor(m, n, k, dtype="float32", c=True, **kw):
    return mb.GemmProblem(m, n, k, dtype, (k, 1), (n, 1), (n, 1) if c else None, (n, 1), **kw)


def colmajor(m, n, k, dtype="float32", c=True, **kw):
    return mb.GemmProblem(m, n, k, dtype, (1, m), (1, k), (1, m) if c else None, (1, m), **kw)


# ------------------------------------------------------------------------------ rules (no GPU)


@pytest.mark.parametrize("problem", [
    rowmajor(M, 40, 10), colmajor(M, 40, 10), rowmajor(M, 40, 10, "float64"), rowmajor(M, 40, 10, c=False),
    rowmajor(M, 40, 10, "float16"), rowmajor(M, 40, 10, "bfloat16"), rowmajor(1_000_003, 7, 3),
    mb.GemmProblem(M, 40, 10, "float32", (10, 1), (40, 1), (1, 0), (40, 1)),  # broadcast column
    rowmajor(2_000_000, 8, 64), rowmajor(2_000_000, 256, 10), rowmajor(2_000_000, 40, 10, "float64"),
])
def test_tall_skinny_problems_are_chosen(problem):
    ok, why = mb.decide(problem)
    assert ok, why
    assert "memory-bound" in why


@pytest.mark.parametrize("problem, reason", [
    (rowmajor(M, 40, 10, "complex64"), "dtype complex64"),
    (rowmajor(M, 40, mb.TUNING.max_k + 1), "above the limits"),
    (rowmajor(M, mb.TUNING.max_n + 1, 10), "above the limits"),
    (rowmajor(1000, 40, 10), "launch-bound"),
    (rowmajor(M, 40, 32), "5.7 flop/byte, above 4.0"),  # measured: 1.09x cuBLAS's time
    (rowmajor(M, 128, 32, "float64"), "above 3.0"),  # measured: a tie
    (rowmajor(M, 128, 32, "float16"), "above 6.0"),  # measured: 2.7x, cuBLAS on tensor cores
    (rowmajor(0, 40, 10), "empty problem"),
    (mb.GemmProblem(M, 40, 10, "float32", (10, 1), (40, 1), (40, 1), (80, 2)), "D has no unit stride"),
    (mb.GemmProblem(M, 40, 10, "float32", (10, 1), (40, 1), (1, M), (40, 1)), "do not follow D's unit stride"),
])
def test_other_problems_are_left_to_cublaslt(problem, reason):
    ok, why = mb.decide(problem)
    assert not ok and reason in why


def test_the_intensity_limit():
    tight = mb.Tuning(max_intensity=1.0)
    ok, why = mb.decide(rowmajor(M, 40, 10), tight)
    assert not ok and "flop/byte" in why and "cuBLASLt wins" in why


def test_select_logs_its_decision(caplog):
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced._memory_bound"):
        assert mb.select(rowmajor(M, 40, 10, "complex64")) is None
    assert "not chosen" in caplog.text and "complex64" in caplog.text


@pytest.mark.parametrize("problem, mode, vec, va, async_ok", [
    (rowmajor(M, 40, 10), "R", 4, 2, True),
    (rowmajor(M, 40, 10, "float64"), "R", 2, 2, True),
    (rowmajor(M, 40, 10, "float16"), "R", 8, 2, True),
    (rowmajor(M, 41, 12), "R", 1, 4, True),
    (mb.GemmProblem(M, 40, 10, "float32", (10, 1), (40, 1), (42, 1), (42, 1)), "R", 2, 2, False),
    (mb.GemmProblem(M, 40, 10, "float32", (1, M), (40, 1), (40, 1), (40, 1)), "R", 4, 1, False),
    (colmajor(M, 40, 10), "C", 4, 1, False),
    (colmajor(M, 40, 32), "C", 2, 1, False),
    (mb.GemmProblem(M + 1, 40, 10, "float32", (1, M + 1), (1, 10), (1, M + 1), (1, M + 1)), "C", 1, 1, False),
    (mb.GemmProblem(M, 1, 10, "float32", (1, M), (1, 10), (1, M), (1, M)), "C", 4, 1, False),
])
def test_layout_plans(problem, mode, vec, va, async_ok):
    layout, why = mb.plan_layout(problem)
    assert why == "ok"
    assert (layout.mode, layout.vec, layout.va, layout.async_ok) == (mode, vec, va, async_ok)


def test_variant_defines_are_pure_and_name_unit_strides():
    p = rowmajor(M, 40, 10)
    layout, _ = mb.plan_layout(p)
    d = mb.variant_defines(p, layout, mb.TUNING, True, True)
    assert d == mb.variant_defines(p, layout, mb.TUNING, True, True)
    assert (d["K_"], d["N_"], d["VEC"], d["SA_K"], d["SA_M"], d["SD_N"], d["MODE_R"]) == (10, 40, 4, "1", "sa_m", "1", 1)
    assert d["BLOCK"] % d["CH"] == 0 and d["BLOCK"] % 32 == 0
    scalar = mb.variant_defines(p, layout, mb.TUNING, False, False)
    assert (scalar["VEC"], scalar["HAS_C"], scalar["ASYNC"]) == (1, 0, 0)
    src = mb.render(d)
    assert src.startswith("#define ELEM float\n") and "cumath_mbgemm" in src


@pytest.mark.parametrize("problem", [
    rowmajor(M, 40, 10), colmajor(M, 40, 10), rowmajor(M, 40, 10, "float64", c=False), rowmajor(M, 40, 10, "float16"),
    colmajor(M, 8, 4, "bfloat16"), mb.GemmProblem(M, 40, 10, "float32", (10, 1), (40, 1), (1, 0), (40, 1)),
])
@pytest.mark.parametrize("aligned", [True, False])
def test_every_variant_compiles_for_sm_90(nvrtc_present, problem, aligned):
    """The kernel source of a variant goes through the JIT driver as the GPU path compiles it (no GPU needed)."""
    from cumath._core import jit

    layout, _ = mb.plan_layout(problem)
    defines = mb.variant_defines(problem, layout, mb.TUNING, aligned, problem.c_strides is not None)
    art = jit.compile_source(mb.render(defines), cc=90, names=(), what="a memory-bound GEMM variant")
    assert art.kind == "cubin" and art.data[:4] == b"\x7fELF" and mb.KERNEL_NAME.encode() in art.data


# ------------------------------------------------------------------------------------ on the GPU


def _bf16_bits(x32):
    b = np.ascontiguousarray(x32, dtype=np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def _bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


_STORAGE = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.uint16}
_TOL = {"float32": 2e-5, "float64": 1e-12, "float16": 3e-3, "bfloat16": 2e-2}


class Operand:
    """A random strided operand (batch, rows, cols) in host memory, its float64 values, and a device copy."""

    def __init__(self, rng, dtype, shape, strides, batch_stride=0, offset=0, nan=False):
        self.dtype = dtype
        b, r, c = shape
        steps = [(b - 1) * batch_stride, (r - 1) * strides[0], (c - 1) * strides[1]]
        lo = sum(min(0, s) for s in steps)
        hi = sum(max(0, s) for s in steps)
        size = hi - lo + 1 + offset
        values = rng.uniform(-1, 1, size) + 0.25
        if nan:
            values[:] = np.nan
        if dtype == "bfloat16":
            self.buf = _bf16_bits(values)
            exact = _bf16_value(self.buf).astype(np.float64)
        else:
            self.buf = values.astype(_STORAGE[dtype])
            exact = self.buf.astype(np.float64)
        self.start = offset - lo
        item = np.lib.stride_tricks.as_strided
        self.values = item(exact[self.start:], shape, [8 * batch_stride, 8 * strides[0], 8 * strides[1]])
        self.nbytes = self.buf.nbytes
        self.itemsize = self.buf.itemsize
        self.dev = 0

    def upload(self):
        from cumath._bindings import cudart

        self.dev = cudart.cudaMalloc(max(self.nbytes, 16))
        cudart.cudaMemcpy(self.dev, self.buf.ctypes.data, self.nbytes, 1)
        return self

    @property
    def ptr(self):
        return self.dev + self.start * self.itemsize

    def download(self):
        from cumath._bindings import cudart

        out = np.empty_like(self.buf)
        cudart.cudaMemcpy(out.ctypes.data, self.dev, self.nbytes, 2)
        exact = _bf16_value(out).astype(np.float64) if self.dtype == "bfloat16" else out.astype(np.float64)
        return exact

    def free(self):
        from cumath._bindings import cudart

        if self.dev:
            cudart.cudaFree(self.dev)
            self.dev = 0


def run_case(dtype, m, n, k, *, layout="row", c="full", alpha=1.5, beta=0.5, batch=1, pad=0, offset=0,
             neg=False, b_shared=False, c_nan=False, tuning=mb.TUNING, seed=0):
    """Build the operands, run MemoryBoundGemm directly (no select), compare with NumPy float64."""
    from cumath._bindings import cudart

    rng = np.random.default_rng(seed)
    if layout == "row":
        sa, sd = (k + pad, 1), (n + pad, 1)
        sc = (n + pad, 1)
    else:
        sa, sd = (1, m + pad), (1, m + pad)
        sc = (1, m + pad)
    if neg:
        sa = (-sa[0], sa[1]) if layout == "row" else (sa[0], -sa[1])
    sb = (1, k) if layout == "col" else (n, 1)
    if c == "bcast":
        sc = (1, 0)
    bsa = (m * k + 3 * pad) * (1 if batch > 1 else 0)
    bsb = 0 if b_shared else k * n
    bsc = 0 if c == "bcast" else (m + pad) * (n + pad)
    bsd = (m + pad) * (n + pad)
    A = Operand(rng, dtype, (batch, m, k), sa, bsa if batch > 1 else 0, offset=offset)
    B = Operand(rng, dtype, (batch, k, n), sb, bsb if batch > 1 else 0)
    C = Operand(rng, dtype, (batch, m, n), sc, bsc if batch > 1 else 0, offset=offset, nan=c_nan) \
        if c != "none" else None
    D = Operand(rng, dtype, (batch, m, n), sd, bsd if batch > 1 else 0, offset=offset)
    problem = mb.GemmProblem(m, n, k, dtype, sa, sb, sc if C is not None else None, sd, batch=batch,
                             a_batch_stride=bsa if batch > 1 else 0, b_batch_stride=bsb if batch > 1 else 0,
                             c_batch_stride=(bsc if batch > 1 else 0) if C is not None else 0,
                             d_batch_stride=bsd if batch > 1 else 0, device_id=cudart.cudaGetDevice())
    ops = [A, B, D] + ([C] if C is not None else [])
    try:
        for op in ops:
            op.upload()
        gemm = mb.MemoryBoundGemm(problem, tuning)
        gemm.launch(A.ptr, B.ptr, C.ptr if C is not None else 0, D.ptr, alpha, beta, 0)
        cudart.cudaDeviceSynchronize()
        out = D.download()
        got = np.lib.stride_tricks.as_strided(out[D.start:], (batch, m, n),
                                              [8 * (bsd if batch > 1 else 0), 8 * sd[0], 8 * sd[1]])
        ref = alpha * np.matmul(A.values, B.values)
        if C is not None and beta != 0:
            ref = ref + beta * C.values
        err = np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30)
        assert err < _TOL[dtype], f"relative error {err:.2e} for {problem}"
        if pad:  # padding between rows/columns of D is left alone
            mask = np.ones(out.shape, bool)
            idx = (D.start + np.arange(batch)[:, None, None] * (bsd if batch > 1 else 0)
                   + np.arange(m)[None, :, None] * sd[0] + np.arange(n)[None, None, :] * sd[1])
            mask[idx.ravel()] = False
            before = D.buf.astype(np.float64) if dtype != "bfloat16" else _bf16_value(D.buf).astype(np.float64)
            np.testing.assert_array_equal(out[mask], before[mask])
        return gemm
    finally:
        for op in ops:
            op.free()


SHAPES = [(10, 40), (1, 1), (3, 7), (32, 128), (16, 33)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("k, n", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layouts_and_shapes(cuda_device, dtype, k, n, layout):
    run_case(dtype, 100_003, n, k, layout=layout)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["row", "col"])
def test_half_precisions(cuda_device, dtype, layout):
    run_case(dtype, 20_011, 40, 10, layout=layout)
    run_case(dtype, 20_011, 24, 5, layout=layout, c="bcast")


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 2, 31, 63, 64, 65, 1009, 64 * 133 + 17, 1_000_003])
def test_odd_and_prime_m_hit_every_tail(cuda_device, m):
    run_case("float32", m, 40, 10, layout="row")
    run_case("float32", m, 40, 10, layout="col", alpha=-2.0, beta=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("c", ["none", "bcast", "full"])
@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("alpha, beta", [(1.5, 0.5), (1.0, 0.0), (-2.25, 1.0)])
def test_alpha_beta_and_c(cuda_device, c, layout, alpha, beta):
    run_case("float32", 10_007, 40, 10, layout=layout, c=c, alpha=alpha, beta=beta)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["row", "col"])
def test_beta_zero_does_not_read_c(cuda_device, layout):
    run_case("float32", 5003, 40, 10, layout=layout, beta=0.0, c_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batches(cuda_device, dtype, layout):
    run_case(dtype, 4099, 40, 10, layout=layout, batch=3)
    run_case(dtype, 4099, 40, 10, layout=layout, batch=5, b_shared=True, c="bcast")


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["row", "col"])
def test_padded_negative_and_misaligned(cuda_device, layout):
    run_case("float32", 30_011, 40, 10, layout=layout, pad=3)  # leading dimensions not multiples of 4
    run_case("float32", 30_011, 40, 10, layout=layout, offset=1)  # pointers not 16-byte aligned
    run_case("float32", 30_011, 40, 10, layout=layout, neg=True)  # negative strides of A
    run_case("float64", 30_011, 40, 10, layout=layout, offset=1)


@pytest.mark.gpu
@pytest.mark.parametrize("tuning", [
    mb.Tuning(async_copy=False), mb.Tuning(async_copy=False, unroll_r=4, b_regs_max=0, waves=2),
    mb.Tuning(stages=2, unroll_r=1), mb.Tuning(stages=4, unroll_r=4, waves=1), mb.Tuning(stream_hints=False),
    mb.Tuning(junroll_c=1, block_c=128, waves=1),
])
def test_every_tuning_is_right(cuda_device, tuning):
    for m in (64 * 70 + 5, 100_003):
        run_case("float32", m, 40, 10, layout="row", tuning=tuning)
        run_case("float32", m, 40, 10, layout="col", tuning=tuning)


@pytest.mark.gpu
def test_select_free_and_errors(cuda_device, caplog):
    p = mb.GemmProblem(M, 40, 10, "float32", (10, 1), (40, 1), (40, 1), (40, 1), device_id=cuda_device)
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced._memory_bound"):
        gemm = mb.select(p)
    assert isinstance(gemm, mb.MemoryBoundGemm) and "chosen" in caplog.text
    with pytest.raises(ValueError, match="no C was given"):
        gemm.launch(16, 16, 0, 16, 1.0, 0.5, 0)
    no_c = mb.MemoryBoundGemm(mb.GemmProblem(5, 40, 10, "float32", (10, 1), (40, 1), None, (40, 1),
                                             device_id=cuda_device))
    with pytest.raises(ValueError, match="planned without C"):
        no_c.launch(16, 16, 16, 16, 1.0, 0.5, 0)
    gemm.free()
    gemm.free()
    with pytest.raises(InvalidStateError, match="freed"):
        gemm.launch(16, 16, 16, 16, 1.0, 0.5, 0)
    assert "MemoryBoundGemm(m=10000000" in repr(gemm)
    assert ctypes  # keep the import used when the GPU tests are skipped
