"""The stateless ``matmul`` on the CPU stand-in of cuBLASLt (fake_cublaslt.py): every call goes through the plan
cache (host operands, qualifiers, algorithms and epilog inputs included), a repeated call plans nothing, the
per-call parameters are bound on each call, the cached GPU path stays within four Python frames of the library
call; and the engine registry (the memory-bound kernel taking a variant over), the named argument slots, and
result recycling across the variants of a feed-back loop."""

from __future__ import annotations

import ctypes
import logging
import sys

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath._core.frameworks.numpy import aligned_empty, from_pointer
from cumath.config import plan_cache
from cumath.linalg.advanced import MatmulEpilog as E
from cumath.linalg.advanced import _algorithms, _functions, _scales
from cumath.linalg.advanced._backends import cublaslt as backend, memory_bound
from helpers.matmul_reference import epilog_ref, rel_error

import fake_cublaslt as fake
from fake_cublaslt import fake_library  # noqa: F401 (an autouse fixture)
from test_matmul_fake import ok

RNG = np.random.default_rng(29)


def r(shape, order="C", dtype=np.float64):
    """Random values at a 256-byte boundary (GPU allocators' alignment: another would plan another variant)."""
    x = RNG.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    out = aligned_empty(shape[::-1] if order == "F" else shape, dtype, 256)
    out = out.T if order == "F" else out
    out[...] = x
    return out


dev = fake.device_operand


def ptr(x):
    return x.__array_interface__["data"][0]


def planned(caplog):
    """The number of variants planned so far (one INFO record each)."""
    return sum(1 for rec in caplog.records if rec.getMessage().startswith("planned "))


# ------------------------------------------------------------------------------------ one plan per problem
@pytest.mark.parametrize("where", ["device", "host"])
def test_a_repeated_call_plans_nothing(where, caplog):
    on = dev if where == "device" else (lambda x: x)
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced"):
        for i in range(3):
            a, b = r((7, 5)), r((5, 3))
            ok(la.matmul(on(a), on(b), alpha=1.0 + i), (1.0 + i) * (a @ b))
    assert planned(caplog) == 1
    assert plan_cache.stats()["hits"] == 2 and plan_cache.stats()["misses"] == 1


def test_host_calls_bind_every_parameter(caplog):
    """Host operands, c broadcast over the columns (copied into the result), a host bias: new values each call."""
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced"):
        for i in range(3):
            a, b, c, bias = r((2, 7, 5)), r((5, 3)), r((7, 1)), r((7,))
            alpha, beta = 0.5 + i, 2.0 - i
            d = la.matmul(a, b, c, alpha=alpha, beta=beta, epilog=E.BIAS, epilog_inputs={"bias": bias})
            ok(d, alpha * (a @ b) + beta * c + bias[:, None])
            a2 = r((2, 7, 5), "F")  # another host layout: the staging reorders it; the plan stays
            ok(la.matmul(a2, b, c, alpha=alpha, beta=beta, epilog=E.BIAS, epilog_inputs={"bias": bias}),
               alpha * (a2 @ b) + beta * c + bias[:, None])
    assert planned(caplog) == 2  # the F-ordered a is another key (its strides), planned once
    assert plan_cache.stats()["hits"] == 4


def test_host_aux_outputs_and_inplace():
    for _ in range(2):
        a, b = r((9, 5)), r((5, 6))
        d, aux = la.matmul(a, b, epilog=E.GELU_AUX)
        ref, extras = epilog_ref("GELU_AUX", a, b)
        ok(d, ref)
        assert isinstance(aux["gelu_aux"], np.ndarray) and aux["gelu_aux"].shape[-1] in (6, 8)
        c = r((9, 6), "F")
        want = a @ b + 0.25 * c
        assert la.matmul(a, b, c, beta=0.25, options={"inplace": True}) is c
        ok(c, want)
    assert plan_cache.stats()["hits"] == 2


def test_host_operands_of_another_layout_are_reordered_into_the_mirrors(caplog):
    a, b, c = r((3, 7, 5)), r((5, 4)), r((3, 7, 4))
    with la.Matmul(a, b, c, beta=0.5) as mm:
        mm.plan()
        ok(mm.execute(), a @ b + 0.5 * c)
        a2, c2 = r((3, 7, 5), "F"), r((3, 7, 4), "F")
        with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced"):
            mm.reset_operands(a=a2, c=c2)
            ok(mm.execute(), a2 @ b + 0.5 * c2)
        assert "host copy of the matmul a into the staging layout" in caplog.text
        assert len(mm._executor.variants) == 1  # the mirrors keep their layout: no other variant


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_pytorch_cpu_tensors_are_staged_by_their_package(dtype, monkeypatch):
    torch = pytest.importorskip("torch")
    import cumath._core.placement as placement

    monkeypatch.setattr(placement, "default_stream", lambda package, device: 0)  # no CUDA in this PyTorch
    tdt = getattr(torch, dtype)
    tol = 1e-6 if dtype == "float32" else 1e-2
    for _ in range(2):
        a, b, c = torch.randn(2, 9, 5).to(tdt), torch.randn(5, 6).to(tdt), torch.randn(9, 1).to(tdt)
        bias = torch.randn(9).to(tdt)
        ref = (a.double() @ b.double() + 0.5 * c.double()).numpy()
        d = la.matmul(a, b, c, beta=0.5)
        assert isinstance(d, torch.Tensor) and d.dtype == tdt and d.device.type == "cpu"
        ok(d.double().numpy(), ref, tol)
        d, aux = la.matmul(a[0].t().contiguous().t(), b, epilog=E.GELU_AUX_BIAS, epilog_inputs={"bias": bias})
        want, extras = epilog_ref("GELU_AUX_BIAS", a[0].double().numpy(), b.double().numpy(),
                                  bias=bias.double().numpy())
        ok(d.double().numpy(), want, tol)
        assert isinstance(aux["gelu_aux"], torch.Tensor) and aux["gelu_aux"].dtype == tdt
        c2 = torch.randn(9, 6).to(tdt).t().contiguous().t()
        want = (a[1].double() @ b.double() + c2.double()).numpy()
        assert la.matmul(a[1], b, c2, options={"inplace": True}) is c2
        ok(c2.double().numpy(), want, tol)
    assert plan_cache.stats()["hits"] == 3


def test_qualifiers_and_algorithms_are_cached(caplog, monkeypatch):
    monkeypatch.setattr(_algorithms, "check_algorithm", lambda *args: None)
    q = np.zeros(3, dtype=la.matrix_qualifiers_dtype)
    q["is_conjugate"][0] = 1
    alg = fake.FakeAlgorithm(None)
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced"):
        for _ in range(2):
            a, b = r((6, 4), dtype=np.complex128), r((4, 5), dtype=np.complex128)
            ok(la.matmul(dev(a), dev(b), qualifiers=q), np.matmul(a.conj(), b))
            ok(la.matmul(dev(a), dev(b), algorithm=alg), a @ b)
        q2 = np.zeros(3, dtype=la.matrix_qualifiers_dtype)  # the same flags in another array: the same plan
        q2["is_conjugate"][0] = 1
        ok(la.matmul(dev(a), dev(b), qualifiers=q2), np.matmul(a.conj(), b))
    assert planned(caplog) == 2
    assert plan_cache.stats()["hits"] == 3


def test_epilog_inputs_of_another_layout_are_another_plan():
    a, b = r((8, 5)), r((5, 6))
    bias = r((8,))
    ok(la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(bias)}),
       np.maximum(a @ b + bias[:, None], 0))
    strided = r((16,))[::2]
    assert plan_cache.stats()["plans"] == 1
    with pytest.raises(ValueError, match="must be contiguous along its 8 elements"):
        la.matmul(dev(a), dev(b), epilog=E.RELU_BIAS, epilog_inputs={"bias": dev(strided)})
    assert plan_cache.stats()["plans"] == 1  # the failed plan was freed, not kept


def test_a_failed_bind_leaves_the_cached_plan_unbound():
    a, b = r((7, 5)), r((5, 3))
    la.matmul(dev(a), dev(b))
    with pytest.raises(TypeError, match="alpha must be a number"):
        la.matmul(dev(a), dev(b), alpha="2")
    (mm, _n), = plan_cache._mine().entries.values()
    assert mm._ops == {"a": None, "b": None, "c": None}
    ok(la.matmul(dev(a), dev(b), alpha=3.0), 3.0 * (a @ b))


def test_scales_key():
    assert _scales.key(None) is None and _scales.key({}) is None
    assert _scales.key({"a": 2.0, "b": 0.5}) == _scales.key({"b": 1.0, "a": 1})
    assert _scales.key({"a": 2.0, "b": 0.5}) != _scales.key({"a": 2.0, "b": 0.5, "d": 1.0})
    assert _scales.key(la.MatmulQuantizationScales(a=1.0, b=np.float32(2.0))) == (("a", "number"), ("b", "number"))
    with pytest.raises(ValueError, match="unknown quantization scales"):
        _scales.key({"e": 1.0})


# ---------------------------------------------------------------------------------------------- hot path
def test_cached_call_frames(monkeypatch):
    """At most four Python frames from matmul() to the library call on a cached GPU call."""
    depths = []

    def raw(*args):
        f, n = sys._getframe(1), 1
        while f is not None and f.f_code is not _functions.matmul.__code__:
            f, n = f.f_back, n + 1
        depths.append(n if f is not None else None)
        return fake._matmul(*args)

    monkeypatch.setattr(backend, "RAW_MATMUL", raw)
    a, b = r((7, 5)), r((5, 3))
    la.matmul(dev(a), dev(b))
    depths.clear()
    a2 = r((7, 5))
    ok(la.matmul(dev(a2), dev(b)), a2 @ b)
    assert depths and depths[0] is not None and depths[0] <= 4, depths


def test_execute_with_an_algorithm_leaves_the_chosen_one(monkeypatch):
    monkeypatch.setattr(_algorithms, "check_algorithm", lambda *args: None)
    seen = []

    def raw(*args):
        seen.append(args[backend.ALGO])
        return fake._matmul(*args)

    monkeypatch.setattr(backend, "RAW_MATMUL", raw)
    a, b = r((7, 5)), r((5, 3))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        chosen = mm.algorithms[0]
        other = fake.FakeAlgorithm(None)
        ok(mm.execute(algorithm=other), a @ b)
        ok(mm.execute(), a @ b)
        assert seen == [ctypes.addressof(other.algo), ctypes.addressof(chosen.algo)]
        assert mm._v.args[backend.ALGO] == ctypes.addressof(chosen.algo)


# ------------------------------------------------------------------------------------- result recycling
@pytest.mark.usefixtures("recycling_on")
def test_feed_back_results_of_varying_alignment_reuse_two_buffers(monkeypatch):
    """Results whose alignment differs (NumPy's allocator gives 16-byte boundaries) switch the plan between
    variants; the variants share their recycled results, so the loop still allocates two results in all."""
    import cumath._core.frameworks.numpy as numpy_adapter

    def at(shape, align):
        n = int(np.prod(shape))
        raw = aligned_empty((n + 64,), np.float64, 512)
        return raw[align // 8:align // 8 + n].reshape(shape)

    aligns = iter([32, 16, 64, 128, 16, 32, 16, 16])
    made = []

    def empty_factory(shape, dtype, device_id=None, perm=None):
        def new():
            x = at(shape, next(aligns))
            made.append(ptr(x))
            return x
        return new

    monkeypatch.setattr(numpy_adapter, "empty_factory", empty_factory)
    a, b = at((6, 6), 256), at((6, 6), 256)
    a[...], b[...] = r((6, 6)), r((6, 6)) / 3
    x, seen = a.copy(), []
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        for _ in range(8):
            d = mm.execute()
            x = x @ b
            assert rel_error(d, x) < 1e-12
            seen.append(ptr(d))
            mm.reset_operands_unchecked(a=dev(d))
        assert len(mm._executor.variants) == 3  # alignments 256 (planned), 32 and 16
    assert len(made) == 2 and set(seen) == set(made)


# ------------------------------------------------------------------------------------------ engines
class _NumpyKernel:
    """A stand-in for the memory-bound kernel, computed with NumPy over the pointers it is given."""

    def __init__(self, problem):
        self.problem, self.launches = problem, 0

    def launch(self, a_ptr, b_ptr, c_ptr, d_ptr, alpha, beta, stream):
        p = self.problem
        a = from_pointer(a_ptr, (p.m, p.k), p.a_strides, p.dtype)
        b = from_pointer(b_ptr, (p.k, p.n), p.b_strides, p.dtype)
        d = from_pointer(d_ptr, (p.m, p.n), p.d_strides, p.dtype)
        x = alpha * (a @ b)
        if p.c_strides is not None:
            x = x + beta * from_pointer(c_ptr, (p.m, p.n), p.c_strides, p.dtype)
        d[...] = x
        self.launches += 1

    def free(self):
        pass


@pytest.mark.parametrize("c_shape", [None, (40, 1)])
def test_memory_bound_engine_takes_the_variant_over(monkeypatch, c_shape, caplog):
    kernels = []

    def select(problem):
        kernels.append(_NumpyKernel(problem))
        return kernels[-1]

    monkeypatch.setattr(memory_bound, "select_kernel", select)
    a, b = r((40, 4)), r((4, 3))
    c = r(c_shape) if c_shape is not None else None
    args = (dev(a), dev(b)) + ((dev(c),) if c is not None else ())
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced"):
        with la.Matmul(*args, alpha=2.0, beta=0.5 if c is not None else None) as mm:
            mm.plan()
            assert mm._v.engine == "memory_bound" and not mm._v.hot
            ref = 2.0 * (a @ b) + (0.5 * c if c is not None else 0)
            ok(mm.execute(), ref)
            ok(mm.execute(), ref)
    assert kernels[0].launches == 2
    assert "the memory-bound GEMM kernel runs this problem" in caplog.text


def test_memory_bound_engine_declines():
    """Products the kernel cannot run are left to cuBLASLt (no kernel asked for)."""
    from cumath.linalg.advanced._backends import Product, kernel_for
    from cumath.linalg.advanced._traits import dtype_plan, formulations, matmul_geometry

    geom = matmul_geometry((40, 4), (4, 1), (4, 3), (3, 1))
    form = formulations(geom, target="row")[0]
    dt = dtype_plan("float32", "float32", None)
    log = logging.getLogger("test")
    for product in (Product(geom, form, dt, int(E.RELU), (False, False), False, 0),
                    Product(geom, form, dtype_plan("float16", "float16", "float32"), 1, (False, False), False, 0),
                    Product(geom, form, dt, 1, (False, False), True, 0)):
        assert memory_bound.gemm_problem(product) is None
        assert kernel_for(product, log) == ("cublaslt", None)
    p = memory_bound.gemm_problem(Product(geom, form, dt, 1, (False, False), False, 0))
    assert (p.m, p.n, p.k, p.a_strides, p.d_strides) == (40, 3, 4, (4, 1), (3, 1))
