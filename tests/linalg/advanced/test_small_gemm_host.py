"""The small-GEMM kernel executed on the CPU (``small_gemm_host``: the generated CUDA C++ built by the host C++
compiler, a thread per CUDA thread, a barrier per block) against NumPy float64: every dtype (float16/bfloat16 with
float32 accumulation and either result type), row- and column-major, padded, negative-stride and general strides
of every operand, odd and prime extents (every tile tail), K at each shared-memory capacity, alpha/beta with C,
batches with broadcast operands, and results written through either thread mapping."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import small_gemm_host as host  # noqa: E402

from cumath.linalg.advanced import _small_gemm as sg  # noqa: E402

pytestmark = pytest.mark.skipif(not host.available(), reason="no host C++ compiler (g++)")

TOL = {("float32", "float32"): 2e-6, ("float64", "float64"): 1e-14, ("float16", "float16"): 2e-3,
       ("float16", "float32"): 2e-6, ("bfloat16", "bfloat16"): 1.6e-2, ("bfloat16", "float32"): 2e-6}
STORE = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.uint16}


def to_bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_store(x, dtype):
    if dtype == "bfloat16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


class Strided:
    """A (batch, rows, cols) operand in a padded buffer: 'row', 'col', 'neg' (rows reversed, row-major), 'gen'
    (no unit stride); its element strides and its values as float64."""

    def __init__(self, rng, batch, rows, cols, dtype, layout, bstride_zero=False):
        values = rng.standard_normal((batch, rows, cols))
        pad = 3
        nb = 1 if bstride_zero else batch
        if layout == "row":
            buf_shape, perm, step = (nb, rows, cols + pad), (0, 1, 2), (1, 1, 1)
        elif layout == "col":
            buf_shape, perm, step = (nb, cols, rows + pad), (0, 2, 1), (1, 1, 1)
        elif layout == "neg":
            buf_shape, perm, step = (nb, rows, cols + pad), (0, 1, 2), (1, -1, 1)
        else:  # general: every stride 2 or more
            buf_shape, perm, step = (nb, 2 * cols, 2 * rows), (0, 2, 1), (1, 1, 1)
        self.buf = np.zeros(buf_shape, STORE[dtype])
        view = self.buf.transpose(perm)
        if layout == "gen":
            view = view[:, ::2, ::2]
        view = view[:, :rows, :cols][:, ::step[1], ::step[2]]
        if bstride_zero:
            values = np.broadcast_to(values[:1], values.shape)
        src = values[:1] if bstride_zero else values
        view[...] = to_bf16(src) if dtype == "bfloat16" else src.astype(STORE[dtype])
        self.view = view
        self.values = from_store(np.broadcast_to(view, (batch, rows, cols)), dtype)
        isz = view.itemsize
        self.strides = (view.strides[1] // isz, view.strides[2] // isz)
        self.batch_stride = 0 if bstride_zero else view.strides[0] // isz
        self.ptr = view.__array_interface__["data"][0]


def run(m, n, k, dtype="float32", out=None, layouts=("row", "row", "row", "row"), batch=1, c=False, alpha=1.0,
        beta=0.0, broadcast=(), seed=0):
    out = out or dtype
    rng = np.random.default_rng(seed)
    A = Strided(rng, batch, m, k, dtype, layouts[0], "a" in broadcast)
    B = Strided(rng, batch, k, n, dtype, layouts[1], "b" in broadcast)
    C = Strided(rng, batch, m, n, out, layouts[2]) if c else None
    dl = layouts[3]
    D = Strided(rng, batch, m, n, out, dl if dl in ("row", "col") else "row")
    compute = "float64" if dtype == "float64" else "float32"
    p = sg.SmallProblem(m, n, k, dtype, A.strides, B.strides, C.strides if c else None, D.strides, batch,
                        A.batch_stride, B.batch_stride, C.batch_stride if c else 0, D.batch_stride, d_dtype=out,
                        compute=compute)
    ok, why = sg.decide(p)
    assert ok, why
    host.HostGemm(p).run(A.ptr, B.ptr, C.ptr if c else 0, D.ptr, alpha, beta)
    got = from_store(D.view, out)
    ref = alpha * (A.values @ B.values) + (beta * C.values if c else 0)
    scale = abs(alpha) * (np.abs(A.values) @ np.abs(B.values)) + (abs(beta) * np.abs(C.values) if c else 0)
    err = np.max(np.abs(got - ref) / np.maximum(scale, 1e-300))
    assert err <= TOL[(dtype, out)], f"relative error {err:.3g} for {p}"
    return p


@pytest.mark.parametrize("dtype, out", [("float32", "float32"), ("float64", "float64"), ("float16", "float16"),
                                        ("float16", "float32"), ("bfloat16", "bfloat16"), ("bfloat16", "float32")])
@pytest.mark.parametrize("layouts", [("row", "row", "row", "row"), ("col", "col", "col", "col"),
                                     ("row", "col", "row", "col"), ("col", "row", "col", "row")])
def test_dtypes_and_layouts(dtype, out, layouts):
    run(19, 23, 17, dtype, out, layouts, c=True, alpha=0.75, beta=-1.25)


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (1, 37, 5), (31, 1, 2), (17, 16, 31), (16, 33, 32), (29, 31, 64),
                                     (13, 7, 97), (2, 3, 127), (5, 3, 128), (64, 64, 64)])
def test_odd_prime_and_capacity_extents(m, n, k):
    run(m, n, k, layouts=("row", "col", "row", "row"))


@pytest.mark.parametrize("layouts", [("neg", "row", "neg", "row"), ("gen", "gen", "gen", "row"),
                                     ("row", "neg", "gen", "col"), ("gen", "col", "neg", "col")])
def test_negative_and_general_strides(layouts):
    run(18, 21, 11, "float64", layouts=layouts, c=True, alpha=2.0, beta=0.5)


@pytest.mark.parametrize("broadcast", [(), ("a",), ("b",)])
@pytest.mark.parametrize("dlayout", ["row", "col"])
def test_batches(broadcast, dlayout):
    run(9, 14, 6, layouts=("row", "col", "row", dlayout), batch=5, c=True, alpha=1.5, beta=2.0, broadcast=broadcast)


def test_beta_zero_with_c_and_no_c():
    run(7, 9, 3, c=True, alpha=-1.0, beta=0.0)
    run(7, 9, 3, c=False, alpha=3.0)


def test_beta_zero_does_not_read_c():
    """As cuBLASLt, a zero beta leaves C unread: NaN in C does not reach the result."""
    m, n, k = 5, 6, 7
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    c, d = np.full((m, n), np.nan), np.zeros((m, n))
    p = sg.SmallProblem(m, n, k, "float64", (k, 1), (n, 1), (n, 1), (n, 1))
    host.HostGemm(p).run(a.ctypes.data, b.ctypes.data, c.ctypes.data, d.ctypes.data, 2.0, 0.0)
    np.testing.assert_allclose(d, 2.0 * a @ b, rtol=1e-13)


def test_accumulation_is_in_k_order_with_fma():
    """One output = fma chain over p in order: compare with that exact float32 computation."""
    m = n = 1
    k = 97
    rng = np.random.default_rng(5)
    a = rng.standard_normal((1, k)).astype(np.float32)
    b = rng.standard_normal((k, 1)).astype(np.float32)
    d = np.zeros((1, 1), np.float32)
    p = sg.SmallProblem(m, n, k, "float32", (k, 1), (1, 1), None, (1, 1))
    host.HostGemm(p).run(a.ctypes.data, b.ctypes.data, 0, d.ctypes.data, 1.0, 0.0)
    acc = np.float32(0)
    for i in range(k):  # fma(x, y, acc) == round(x*y + acc) in float32: exact through float64 for one step
        acc = np.float32(np.float64(a[0, i]) * np.float64(b[i, 0]) + np.float64(acc))
    assert d[0, 0] == acc


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 128),
       layouts=st.tuples(*[st.sampled_from(["row", "col", "neg"])] * 3, st.sampled_from(["row", "col"])),
       c=st.booleans(), alpha=st.floats(-2, 2), beta=st.floats(-2, 2), seed=st.integers(0, 2**16))
def test_property_random_problems(m, n, k, layouts, c, alpha, beta, seed):
    run(m, n, k, "float64", layouts=layouts, c=c, alpha=alpha, beta=beta, seed=seed)
