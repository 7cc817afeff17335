"""The small-GEMM engine inside the planner, end to end on the CPU: cuBLASLt is the NumPy stand-in of
fake_cublaslt.py and the kernel is the generated source compiled for the host (small_gemm_host.py), launched
through the very parameter template ``SmallGemm.launcher`` builds (alpha and beta read from the plan's scalar
buffers at launch time, the extents and strides from the kernel's own buffer, a/b/c/d and the stream from the
cuBLASLt-shaped word list). Checked: which engine a plan uses (and the DEBUG line saying so), ``execute()``'s hot
path through the launcher, ``execute(algorithm=...)`` and ``autotune`` staying with cuBLASLt, resets, alpha/beta
changes, ``CUMATH_SMALL_MATMUL=0``, compute types that are not the kernel's, and results against NumPy."""

from __future__ import annotations

import ctypes
import logging
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fake_cublaslt as fake  # noqa: E402
import small_gemm_host as host  # noqa: E402
from fake_cublaslt import fake_library  # noqa: E402,F401 (an autouse fixture)

import cumath.linalg.advanced as la  # noqa: E402
from cumath.linalg.advanced import _small_gemm as sg  # noqa: E402

pytestmark = pytest.mark.skipif(not host.available(), reason="no host C++ compiler (g++)")

RNG = np.random.default_rng(11)


class HostKernels:
    """Stands in for ``get_kernel`` and ``launch_words``; counts the launches of each path."""

    def __init__(self):
        self.by_function: dict = {}
        self.launches = {"launch": 0, "words": 0}

    def get_kernel(self, source, name, arg_types, device_id=None):
        assert name == sg.KERNEL_NAME and arg_types in sg.ARG_TYPES.values()
        kernels = self
        lib = host.compile_kernel(source)
        double = arg_types == sg.ARG_TYPES_D
        fn = lib.host_launch
        acc = ctypes.c_double if double else ctypes.c_float
        fn.argtypes = [ctypes.c_uint] * 4 + [ctypes.c_void_p] * 4 + [acc, acc, ctypes.c_void_p]

        class K:
            function = 0x1000 + len(self.by_function)
            acc_type = acc

            @staticmethod
            def launch(grid, block, smem, stream, a, b, c, d, alpha, beta, *static):
                kernels.launches["launch"] += 1
                st = (ctypes.c_longlong * 15)(*static)
                fn(grid[0], grid[1], grid[2], block, a, b, c or None, d, alpha, beta, st)

        K.run = fn
        self.by_function[K.function] = K
        return K

    def launch_words(self, function, grid, block, shared, params, word_map, stream_word, nwords, on_error=None):
        k = self.by_function[function]
        params = list(params)
        kernels = self

        def call(*words):
            assert len(words) == nwords
            assert all(params), "every kernelParams entry must point at a value"
            assert ctypes.c_uint64.from_address(params[2]).value == 0  # C's value until a word maps it
            vals = list(params)
            for w, p in word_map:
                vals[p] = words[w]
            alpha = k.acc_type.from_address(vals[4]).value
            beta = k.acc_type.from_address(vals[5]).value
            st = ctypes.cast(vals[6], ctypes.POINTER(ctypes.c_longlong))
            kernels.launches["words"] += 1
            k.run(grid[0], grid[1], grid[2], block[0], vals[0], vals[1], vals[2] or None, vals[3], alpha, beta, st)
            return 0

        return call


@pytest.fixture
def kernels(monkeypatch):
    from cumath._core import _fast, kernels as core_kernels

    hk = HostKernels()
    monkeypatch.setattr(core_kernels, "get_kernel", hk.get_kernel)
    monkeypatch.setattr(core_kernels, "device_arch", lambda device=None: 90)
    monkeypatch.setattr(_fast, "launch_words", hk.launch_words)
    monkeypatch.delenv("CUMATH_SMALL_MATMUL", raising=False)
    return hk


def r(shape, order="C", dtype=np.float32):
    x = RNG.standard_normal(shape).astype(dtype)
    return np.asfortranarray(x) if order == "F" else x


def dev(x):
    return fake.device_operand(x)


def check(got, ref, tol):
    got = np.asarray(got, np.float64)
    assert got.shape == ref.shape
    assert np.max(np.abs(got - ref)) <= tol * max(1.0, np.max(np.abs(ref)))


@pytest.mark.parametrize("orders", ["CC", "FF", "CF", "FC"])
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-13)])
def test_the_kernel_runs_the_default_execution(kernels, orders, dtype, tol, caplog):
    a, b = r((23, 17), orders[0], dtype), r((17, 29), orders[1], dtype)
    with caplog.at_level(logging.DEBUG, logger="cumath.linalg.advanced"):
        mm = la.Matmul(dev(a), dev(b), alpha=0.5)
        mm.plan()
    assert mm._v.engine == "small" and mm._v.hot
    assert "matmul engine: small" in caplog.text
    calls = len(fake.CALLS)
    d = mm.execute()  # the hot path: the launcher over the word list
    assert kernels.launches["words"] == 1 and len(fake.CALLS) == calls
    check(d, 0.5 * (a.astype(np.float64) @ b), tol)
    a2 = r((23, 17), orders[0], dtype)
    mm.reset_operands(a=dev(a2), alpha=-2.0)
    check(mm.execute(), -2.0 * (a2.astype(np.float64) @ b), tol)
    assert kernels.launches["words"] == 2
    mm.free()


def test_c_alpha_beta_and_the_general_path(kernels):
    a, b, c = r((9, 31)), r((31, 7), "F"), r((9, 7), "F")
    mm = la.Matmul(dev(a), dev(b), dev(c), alpha=1.5, beta=-0.5)
    mm.plan()
    assert mm._v.engine == "small"
    ref = 1.5 * (a.astype(np.float64) @ b) + -0.5 * c
    check(mm.execute(), ref, 1e-5)
    mm.reset_operands(beta=2.0)
    check(mm.execute(), 1.5 * (a.astype(np.float64) @ b) + 2.0 * c, 1e-5)
    check(mm.execute(release_workspace=True), 1.5 * (a.astype(np.float64) @ b) + 2.0 * c, 1e-5)  # general path
    assert kernels.launches["launch"] == 1
    assert mm._v.hot  # a kernel needs no workspace: releasing it keeps the hot path
    mm.free()


@pytest.mark.parametrize("orders", ["CCF", "FFC", "CCC", "FFF"])
def test_c_of_any_layout_is_read_in_place(kernels, orders):
    """c of another memory order than the result (which cuBLASLt would copy into the result first) is read by the
    kernel where it is, on the hot path and on the general one; c itself is never written."""
    a, b, c = r((11, 13), orders[0]), r((13, 6), orders[1]), r((11, 6), orders[2])
    c0 = c.copy()
    mm = la.Matmul(dev(a), dev(b), dev(c), beta=0.5)
    mm.plan()
    assert mm._v.engine == "small" and mm._v.hot and not mm._v.c_is_d
    ref = a.astype(np.float64) @ b + 0.5 * c
    check(mm.execute(), ref, 1e-5)
    check(mm.execute(release_workspace=True), ref, 1e-5)
    assert kernels.launches == {"launch": 1, "words": 1} and np.array_equal(c, c0)
    mm.free()


def test_algorithm_and_autotune_stay_with_cublaslt(kernels, monkeypatch, caplog):
    from cumath.linalg.advanced import _algorithms

    # autotune's timing without CUDA events: every algorithm run once into the scratch result, in order
    monkeypatch.setattr(_algorithms, "autotune", lambda run, algs, **kw: [run(x) or x for x in algs])
    a, b = r((16, 16)), r((16, 16))
    mm = la.Matmul(dev(a), dev(b))
    algs = mm.plan()
    calls = len(fake.CALLS)
    check(mm.execute(algorithm=algs[0]), a.astype(np.float64) @ b, 1e-5)
    assert len(fake.CALLS) == calls + 1 and kernels.launches == {"launch": 0, "words": 0}
    with caplog.at_level(logging.INFO, logger="cumath.linalg.advanced"):
        mm.autotune(iterations=1)
    assert len(fake.CALLS) > calls + 1 and kernels.launches == {"launch": 0, "words": 0}
    assert "the small kernel keeps running the problem" in caplog.text
    check(mm.execute(), a.astype(np.float64) @ b, 1e-5)
    assert kernels.launches["words"] == 1
    mm.free()


def test_batched_and_stateless(kernels):
    a, b = r((3, 12, 10)), r((10, 6))
    check(la.matmul(dev(a), dev(b)), a.astype(np.float64) @ b, 1e-5)
    check(la.matmul(dev(a), dev(b)), a.astype(np.float64) @ b, 1e-5)  # a plan-cache hit
    assert kernels.launches["words"] + kernels.launches["launch"] == 2


def test_half_precision_with_float32_accumulation(kernels):
    a, b = r((20, 40), dtype=np.float16), r((40, 12), dtype=np.float16)
    mm = la.Matmul(dev(a), dev(b))
    mm.plan()
    assert mm._v.engine == "small"
    d = mm.execute()
    assert d.dtype == np.float16
    check(d, a.astype(np.float64) @ b.astype(np.float64), 2e-3)


@pytest.mark.parametrize("how", ["env", "tf32", "algorithms", "large", "epilog"])
def test_cublaslt_runs_what_the_kernel_does_not_take(kernels, monkeypatch, how, caplog):
    from cumath.linalg.advanced import MatmulComputeType as CT, MatmulEpilog

    a, b = r((16, 16)), r((16, 16))
    opts, plan = {}, {}
    if how == "env":
        monkeypatch.setenv("CUMATH_SMALL_MATMUL", "0")
    elif how == "tf32":
        opts = {"compute_type": CT.COMPUTE_32F_FAST_TF32}
    elif how == "algorithms":
        from cumath.linalg.advanced import _algorithms

        monkeypatch.setattr(_algorithms, "check_algorithm", lambda *args: None)  # the stand-in has no AlgoCheck
        first = la.Matmul(dev(a), dev(b))
        plan = {"algorithms": first.plan()}
    elif how == "large":
        a, b = r((200, 16)), r((16, 16))
    else:
        plan = {"epilog": MatmulEpilog.RELU}
    with caplog.at_level(logging.DEBUG, logger="cumath.linalg.advanced"):
        mm = la.Matmul(dev(a), dev(b), options=opts)
        mm.plan(**plan)
    assert mm._v.engine == "cublaslt" and mm._v.kernel is None
    assert "matmul engine: cublaslt" in caplog.text
    ref = a.astype(np.float64) @ b
    check(mm.execute(), np.maximum(ref, 0) if how == "epilog" else ref, 1e-5)
    assert kernels.launches == {"launch": 0, "words": 0}


def test_a_kernel_that_cannot_be_built_leaves_cublaslt(kernels, monkeypatch, caplog):
    from cumath._core import kernels as core_kernels

    def broken(*a, **k):
        raise RuntimeError("no NVRTC here")

    monkeypatch.setattr(core_kernels, "get_kernel", broken)
    with caplog.at_level(logging.WARNING):
        mm = la.Matmul(dev(r((8, 8))), dev(r((8, 8))))
        mm.plan()
    assert mm._v.engine == "cublaslt"
    assert "small-GEMM kernel unavailable" in caplog.text and "no NVRTC here" in caplog.text


def test_freed_kernel_refuses_to_launch(kernels):
    from cumath.errors import InvalidStateError

    mm = la.Matmul(dev(r((8, 8))), dev(r((8, 8))))
    mm.plan()
    k = mm._v.kernel
    mm.free()
    with pytest.raises(InvalidStateError, match="was freed; select"):
        k.launch(1, 1, 0, 1, 1.0, 0.0, 0)
    with pytest.raises(InvalidStateError):
        mm.execute()


def test_the_compiled_stateless_hit_path_launches_the_kernel(kernels, monkeypatch):
    """``hot_mm`` (the C hit path of the stateless matmul) serves cached calls through the variant's launcher."""
    from cumath._core import _fast
    from cumath.config import plan_cache

    if _fast.hot_mm is None:
        pytest.skip("the C extension is not built (ctypes fallback)")
    from helpers.hot_paths import FakeCudaTensor, fake_gpu_tensors

    a, b = r((64, 64)), r((64, 64))
    with fake_gpu_tensors(monkeypatch):
        outs = [la.matmul(FakeCudaTensor(a), FakeCudaTensor(b)) for _ in range(4)]
        assert plan_cache._local.cache.fast.hits == 3
    assert kernels.launches == {"launch": 0, "words": 4}
    for d in outs:
        check(d, a.astype(np.float64) @ b, 1e-5)
    assert not np.shares_memory(outs[2], outs[3])
