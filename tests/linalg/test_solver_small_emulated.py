"""The small-system LU engine (cumath/linalg/_solver/_backends/small_lu.py) through the public API on the CPU:
the dense solver's CUDA emulation (test_solver_emulated_gpu: "device" operands are NumPy arrays tagged with GPU
0, copies are memmove) with the engine's kernels compiled from their CUDA source as C++
(test_solver_small_kernel) and launched on the host, so the executors' layouts, offsets, the verdict word's
read-back, the error semantics and the choice of the engine are checked end to end without a GPU. The GPU
tests (test_solver_gpu.py) run the same through NVRTC on the device."""

from __future__ import annotations

import ctypes
import logging
import re
import warnings

import numpy as np
import pytest

pytest.importorskip("scipy")
import scipy.linalg.lapack as sl  # noqa: E402

from cumath.config import plan_cache  # noqa: E402
from cumath.linalg._solver import DirectSolver, IllConditionedWarning, SingularMatrixError, direct_solver  # noqa: E402
from cumath.linalg._solver._backends import small_lu  # noqa: E402
from helpers.matrix import random_array, with_layout  # noqa: E402
from test_generic_emulated_gpu import HostAllocator, device  # noqa: E402
from test_solver_cpu import assert_solves, near_singular, system  # noqa: E402
from test_solver_emulated_gpu import emulation, solve_device_operands  # noqa: E402
from test_solver_small_kernel import _SUFFIX, _Args, lib  # noqa: E402,F401 - lib: the compiled kernels (fixture)

_TYPES = {"float": "float32", "double": "float64", "cumath_c32": "complex64", "cumath_c64": "complex128"}


class HostKernel:
    """A kernel of the engine, run by its host-compiled twin (the arguments in the order of FUSED_ARGS or
    SOLVE_ARGS); records its name in the fake library's calls and checks that the plan's buffers are "device"
    memory."""

    def __init__(self, lib, fake, name):
        kind, ctype, order = re.fullmatch(r"cumath_small_(lus?|chols?)<(\w+), (\d+)>", name).groups()
        self.fn = getattr(lib, f"cumath_host_{kind}_{_SUFFIX[_TYPES[ctype]]}{order}")
        self.fused, self.name, self.fake = kind in ("lu", "chol"), name, fake

    def launch(self, grid, block, shared, stream, *args):
        self.fake.calls.append(self.name)
        if self.fused:
            (s, s_off, s_step, srs, scs, a, a_off, a_step, rs, cs, n, count, perm, info, x, x_off, x_step, ldx, b,
             b_off, b_step, brs, bcs, nrhs, solve, eps, flag, out, flagged) = args
            for ptr, nbytes in ((perm, 4 * n * count), (info, 4 * count), (out, 16 * count), (flagged, 8)):
                assert self.fake.is_device(ptr, nbytes), "the kernel's outputs live in device memory"
        else:
            a, a_off, a_step, rs, cs, n, count, perm, x, x_off, x_step, ldx, b, b_off, b_step, brs, bcs, nrhs = args
            info = solve = eps = flag = out = flagged = s = s_off = s_step = srs = scs = 0
        assert block % 32 == 0 and grid * block // 32 >= count
        st = _Args(s or None, s_off or None, s_step, srs, scs, a, a_off or None, a_step, rs, cs, n, count, perm,
                   info or None, x or None, x_off or None, x_step, ldx, b or None, b_off or None, b_step, brs, bcs,
                   nrhs, solve, eps, flag, out or None, flagged or None)
        self.fn(grid, block, ctypes.byref(st))


@pytest.fixture
def emulated(monkeypatch, lib):
    plan_cache.clear()
    gen = emulation(monkeypatch)
    fake = next(gen)
    monkeypatch.setattr(small_lu, "get_kernel", lambda src, name, args, device_id=None: HostKernel(lib, fake, name))
    monkeypatch.setattr(small_lu, "_unavailable", [])
    monkeypatch.delenv("CUMATH_SOLVER_KERNEL", raising=False)
    yield fake
    next(gen, None)
    plan_cache.clear()


def _opts(method="auto", **more):
    return {"allocator": HostAllocator(), "batch_method": method, **more}


def _kernels_only(calls):
    assert calls and all(n.startswith("cumath_small_") for n in calls), calls


DTYPES = ("float32", "float64", "complex64", "complex128")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F", "step"])
@pytest.mark.parametrize("vector", [False, True])
def test_device_operands(emulated, dtype, layout, vector):
    solve_device_operands(_opts(), dtype, "lu", layout, vector)
    _kernels_only(emulated.calls)
    assert emulated.calls.count(emulated.calls[0]) == 1  # one factorization launch, then solve launches


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("vector", [False, True])
def test_device_operands_cholesky(emulated, dtype, layout, vector):
    solve_device_operands(_opts(matrix_type="hpd"), dtype, "cholesky", layout, vector)
    _kernels_only(emulated.calls)
    assert emulated.calls[0].startswith("cumath_small_chol<")


@pytest.mark.parametrize("method", ["auto", "batched"])
def test_not_positive_definite_raises_as_the_library_path_does(emulated, method):
    a0, b0, _ = system((2, 3), 6, 1, "float64", "cholesky")
    a0[1, 0, 3, 3] = -50.0
    a0 = with_layout(a0, "F")
    with pytest.raises(SingularMatrixError, match=r"a\[1, 0\] is not positive definite: its leading minor of order "
                                                  r"4 is not positive") as e:
        direct_solver(device(a0), device(b0), options=_opts(method, matrix_type="spd"))
    assert (e.value.problem, e.value.info, e.value.count) == ((1, 0), 4, 1)


@pytest.mark.parametrize("n", [5, 32])
def test_non_finite_entries_warn_as_on_the_cpu(emulated, n):
    """The CPU engine's cases (NaN and inf on, below and above the diagonal; a Cholesky NaN where potrf stops;
    the triangle a Cholesky factor never reads) on the kernels: the same warnings."""
    from test_solver_cpu import check_nonfinite

    check_nonfinite(lambda a, b, kind: direct_solver(device(a), device(b), options=_opts(
        matrix_type="general" if kind == "lu" else "hpd")), n)
    _kernels_only(emulated.calls)


def test_inplace_cholesky(emulated):
    """inplace_a: L in a's lower triangle (its upper triangle as it was)."""
    for layout in ("F", "C"):
        a0, b0, ref = system((2,), 6, 2, "float64", "cholesky")
        a = with_layout(a0, layout)
        with DirectSolver(device(a), device(b0.copy()), options=_opts(inplace_a=True, matrix_type="spd")) as s:
            s.plan()
            s.factorize()
            assert_solves(ref, s.solve(), b0, "float64")
        for i in range(2):
            low = np.tril(a[i])
            np.testing.assert_allclose(low @ low.T, ref[i], rtol=1e-12, atol=1e-10)
            np.testing.assert_array_equal(np.triu(a[i], 1), np.triu(a0[i], 1))


@pytest.mark.parametrize("n", [1, 2, 16, 31, 32])
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_stateless_calls_one_launch_each(emulated, dtype, n):
    """direct_solver: one fused launch per call (factorization, check and solve), served by one cached plan."""
    hits = plan_cache.stats()["hits"]
    for seed in range(3):
        a0, b0, ref = system((4,), n, 3, dtype, "lu")
        assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts()), b0, dtype)
    assert emulated.calls == [emulated.calls[0]] * 3 and emulated.calls[0].startswith("cumath_small_lu<")
    assert plan_cache.stats()["hits"] - hits == 2


def test_single_system_and_uneven_batches(emulated):
    """One system (no batch); a batch view whose systems are not evenly spaced (an offsets array)."""
    a0, b0, ref = system((), 9, 1, "float64", "lu")
    assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts()), b0, "float64")
    big = random_array((3, 5, 6, 6), "float64") + 6 * np.eye(6)
    a = big[::2, 1:4]  # batch (2, 3): strides that no single step covers
    b = random_array((2, 3, 6), "float64")
    x = direct_solver(device(a), device(b), options=_opts("kernel"))
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", a, x), b, rtol=1e-10, atol=1e-10)
    _kernels_only(emulated.calls)


@pytest.mark.parametrize("method,layout", [("auto", "F"), ("batched", "F"), ("auto", "C")])
def test_singular_systems_raise_as_the_library_path_does(emulated, method, layout):
    """The same exception, batch index, info and count from the kernels and from cuBLAS's batched LU (column-major
    a; for a row-major a the library path factorizes a^T, whose info differs, while the kernels report getrf's
    info of a itself in every layout)."""
    a0, b0, _ = system((2, 3), 6, 1, "float64", "lu")
    a0[1, 2, :, 3] = 0  # a zero column: getrf's info 4
    a0[0, 1, :, 0] = 0
    a0 = with_layout(a0, layout)
    with pytest.raises(SingularMatrixError, match=r"a\[0, 1\] is singular: U\[0, 0\].*info 1.*\(2 of the 6") as e:
        direct_solver(device(a0), device(b0), options=_opts(method))
    assert (e.value.problem, e.value.info, e.value.pivot, e.value.count) == ((0, 1), 1, 0, 2)
    a0[0, 1] = np.eye(6)
    with DirectSolver(device(a0), device(b0), options=_opts(method)) as s:
        s.plan()
        with pytest.raises(SingularMatrixError, match=r"a\[1, 2\] is singular: U\[3, 3\]") as e:
            s.factorize()
        assert (e.value.problem, e.value.info) == ((1, 2), 4)
        with pytest.raises(Exception, match="factorize"):
            s.solve()
    if method == "auto":
        _kernels_only(emulated.calls)


def test_warnings_and_the_verdict_is_cleared(emulated):
    """A NaN and a numerically singular system warn (as on the library path); a sound call after them does not."""
    n = 8
    ones = np.ones((2, n))
    rng = np.random.default_rng(8)
    good = rng.standard_normal((2, n, n)) + n * np.eye(n)
    bad = good.copy()
    bad[1, 5, 2] = np.nan
    sing = good.copy()
    sing[0] = near_singular(n)
    with pytest.warns(IllConditionedWarning, match=r"a\[1\] has non-finite pivots"):
        direct_solver(device(bad), device(ones.copy()), options=_opts())
    with pytest.warns(IllConditionedWarning, match=r"a\[0\] is numerically singular"):
        direct_solver(device(sing), device(ones.copy()), options=_opts())
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        x = direct_solver(device(good), device(ones.copy()), options=_opts())
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", good, x), ones, rtol=1e-10, atol=1e-10)
    bad[1, 5, 2] = np.inf  # a NaN system with a zero pivot too: non-finite, not singular (as check_infos rules)
    bad[1, :, 0] = 0
    with pytest.warns(IllConditionedWarning, match="non-finite"):
        direct_solver(device(bad), device(ones.copy()), options=_opts())


@pytest.mark.parametrize("layout", ["F", "C"])
def test_inplace(emulated, layout):
    """inplace_a: a holds getrf's LU factors of a itself in its own layout; inplace_b: x is b."""
    a0, b0, ref = system((2,), 6, 2, "float64", "lu")
    a, b = with_layout(a0, layout), with_layout(b0, layout)
    with DirectSolver(device(a), device(b), options=_opts(inplace_a=True, inplace_b=True)) as s:
        s.plan()
        s.factorize()
        x = s.solve()
    assert x is b
    assert_solves(ref, b, b0, "float64")
    for i in range(2):
        np.testing.assert_allclose(a[i], sl.dgetrf(a0[i])[0], rtol=1e-12, atol=1e-12)
    _kernels_only(emulated.calls)


def test_host_operands_staged_to_the_gpu(emulated):
    a0, b0, ref = system((4,), 5, 3, "complex64", "lu")
    x = direct_solver(with_layout(a0, "C"), b0, options=_opts(), execution="cuda")
    assert type(x) is np.ndarray
    assert_solves(ref, x, b0, "complex64")
    _kernels_only(emulated.calls)


def test_the_choice_and_how_to_force_the_library(emulated, monkeypatch, caplog):
    a0, b0, ref = system((3,), 32, 1, "float32", "lu")
    with caplog.at_level(logging.DEBUG, logger="cumath"):
        direct_solver(device(a0), device(b0), options=_opts())
    assert "solver batch method: kernel" in caplog.text
    assert "cumath's LU kernels for small systems" in caplog.text
    _kernels_only(emulated.calls)
    for forced in ({"env": "0"}, {"method": "batched"}):
        emulated.calls.clear()
        plan_cache.clear()
        if "env" in forced:
            monkeypatch.setenv("CUMATH_SOLVER_KERNEL", forced["env"])
        assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts(forced.get("method", "auto"))), b0,
                      "float32")
        assert emulated.calls and all("Batched" in n or n.startswith("cumath_solver_pivots_")
                                      for n in emulated.calls), emulated.calls
    monkeypatch.delenv("CUMATH_SOLVER_KERNEL")
    emulated.calls.clear()
    a1, b1, ref1 = system((3,), 33, 1, "float32", "lu")  # past the kernels' order: the batched routines
    assert_solves(ref1, direct_solver(device(a1), device(b1), options=_opts()), b1, "float32")
    assert not any(n.startswith("cumath_small_") for n in emulated.calls)
    emulated.calls.clear()
    a2, b2, ref2 = system((3,), 5, 1, "float64", "cholesky")  # Cholesky: its kernels
    assert_solves(ref2, direct_solver(device(a2), device(b2), options=_opts(matrix_type="spd")), b2, "float64")
    assert emulated.calls == ["cumath_small_chol<double, 8>"]


@pytest.mark.parametrize("kind", ["lu", "cholesky"])
def test_kernel_asked_for_what_it_does_not_take(emulated, kind):
    n, match = 33, (r"batch_method='kernel' runs systems of order at most 32, not order 33; use "
                    r"batch_method='auto', 'batched' or 'loop'")
    a0, b0, _ = system((2,), n, 1, "float64", kind)
    opts = _opts("kernel", matrix_type="general" if kind == "lu" else "spd")
    with pytest.raises(ValueError, match=match):
        direct_solver(device(a0), device(b0), options=opts)


def test_without_the_kernels_auto_falls_back_and_kernel_raises(emulated, monkeypatch, caplog):
    def broken(*args, **kw):
        raise RuntimeError("NVRTC is not installed")

    monkeypatch.setattr(small_lu, "get_kernel", broken)
    a0, b0, ref = system((3,), 8, 1, "float64", "lu")
    with caplog.at_level(logging.WARNING, logger="cumath"):
        assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts()), b0, "float64")
    assert "small-system kernels could not be built (NVRTC is not installed)" in caplog.text
    assert any("Batched" in n for n in emulated.calls)
    plan_cache.clear()
    with pytest.raises(RuntimeError, match="NVRTC is not installed"):
        direct_solver(device(a0), device(b0), options=_opts("kernel"))


def test_cached_call_reaches_the_kernel_within_four_frames(emulated, monkeypatch):
    """The stateless call's hot path: the launch is at most four Python frames below direct_solver."""
    import sys

    import cumath.linalg._solver._functions as F
    from test_solver_cpu import frames_to

    seen = []
    launch = HostKernel.launch

    def traced(self, *args):
        seen.append(frames_to(F.direct_solver, sys._getframe(1)))
        return launch(self, *args)

    monkeypatch.setattr(HostKernel, "launch", traced)
    a0, b0, ref = system((3,), 6, 1, "float64", "lu")
    for _ in range(3):
        assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts()), b0, "float64")
    assert len(seen) == 3
    for frames in seen[1:]:
        assert len(frames) <= 4, frames


@pytest.mark.parametrize("dtype,n,kind", [("float32", 32, "lu"), ("complex64", 5, "lu"), ("float64", 9, "cholesky")])
def test_the_kernels_compile_with_nvrtc(dtype, n, kind):
    """The CUDA source compiles with NVRTC for the H200 (sm_90) on this machine, the template names lowered."""
    from cumath._core import jit
    from cumath.linalg._solver._backends import _small_kernels as K

    for name in K.kernel_names(dtype, n, kind):
        try:
            art = jit.compile_source(K.SMALL_SOURCE, cc=90, names=(name,), name="cumath_kernel.cu", what=name)
        except Exception as exc:  # noqa: BLE001 - no NVRTC in this environment
            pytest.skip(f"NVRTC is not usable here: {exc}")
        assert art.kind in ("cubin", "ptx") and len(art.data) > 1000
        assert art.lowered[name].startswith("_Z")


# ------------------------------------------------------------------------------------------- properties
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_solver_properties import EPS, _layout, _residual, check_singular_raises, systems  # noqa: E402

_PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_PROPERTY
@given(systems())
def test_kernel_solves_any_system(emulated, problem):
    """Any order, batch shape, right-hand sides, dtype, layout and matrix type (the CPU property test's cases) on
    the kernel path: x of b's shape, a small residual, the operands untouched, the stateful object agreeing."""
    dtype, a0, b0, spd, la, lb = problem
    a, b = _layout(a0, la), _layout(b0, lb)
    emulated.calls.clear()
    opts = _opts(matrix_type=("hpd" if dtype.startswith("complex") else "spd") if spd else "general")
    x = direct_solver(device(a), device(b), options=opts)
    assert x.shape == b0.shape and x.dtype == a0.dtype
    assert _residual(a0, x, b0) < EPS[dtype]
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    with DirectSolver(device(a), device(b), options=opts) as s:
        s.plan()
        s.factorize()
        y = s.solve()
    np.testing.assert_allclose(y, x, rtol=0, atol=10 * EPS[dtype] * max(1.0, np.abs(x).max()))
    _kernels_only(emulated.calls)


@_PROPERTY
@given(st.integers(2, 32), st.integers(1, 5), st.data())
def test_singular_systems_always_raise_on_the_kernel_path(emulated, n, count, data):
    check_singular_raises(lambda a, b: direct_solver(device(a), device(b), options=_opts()), n, count, data)


@_PROPERTY
@given(st.sampled_from(DTYPES), st.integers(1, 32), st.integers(1, 4), st.data(),
       st.sampled_from([np.nan, np.inf, -np.inf]))
def test_a_non_finite_entry_anywhere_is_reported_on_the_kernel_path(emulated, dtype, n, count, data, value):
    """One NaN or inf anywhere in one system: exactly one IllConditionedWarning naming it; the others solved."""
    g = np.random.default_rng(n * 31 + count)
    a = (g.standard_normal((count, n, n)) + 2 * np.sqrt(n) * np.eye(n)).astype(dtype)
    b = g.standard_normal((count, n)).astype(dtype)
    p, i, j = (data.draw(st.integers(0, k - 1)) for k in (count, n, n))
    a[p, i, j] = value
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        x = direct_solver(device(a), device(b), options=_opts())
    messages = [str(w.message) for w in seen if issubclass(w.category, IllConditionedWarning)]
    assert len(messages) == 1 and messages[0].startswith(f"a[{p}] has non-finite pivots"), messages
    others = [q for q in range(count) if q != p]
    if others:
        assert _residual(a[others], x[others], b[others]) < EPS[dtype]


# ------------------------------------------------------------------------------------------ native launches
_LAUNCH_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *([ctypes.c_uint] * 7), ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
_READ = {"P": ctypes.c_uint64, "Q": ctypes.c_uint64, "q": ctypes.c_int64, "i": ctypes.c_int32,
         "d": ctypes.c_double}


@pytest.mark.parametrize("flavour", ["native", "ctypes"])
def test_loaded_kernels_launch_with_one_native_call(emulated, monkeypatch, lib, flavour):
    """A loaded kernel's launches are built once per program as native launchers (launch_words: the arguments
    packed once, the stream the one word per call); a stand-in cuLaunchKernel decodes the kernelParams and runs
    the host twin, so the packing is checked end to end; a failed launch raises CUDADriverError."""
    from cumath._core import _fast
    from cumath._core.kernels import Kernel
    from cumath.errors import CUDADriverError

    if flavour == "native" and not _fast.NATIVE:
        pytest.skip("the C extension is not built")
    if flavour == "ctypes":
        monkeypatch.setattr(_fast, "_native", None)
    twins, status = {}, [0]

    def loaded(src, name, arg_types, device_id=None):
        k = object.__new__(Kernel)
        k.name, k.function, k.arg_types = name, 0x1000 + len(twins), arg_types
        twins[k.function] = HostKernel(lib, emulated, name)
        return k

    def fake_launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        kernel = twins[f]
        code = "PPqqqPPqqqiiPPPPqqPPqqqiidQPP" if kernel.fused else "PPqqqiiPPPqqPPqqqi"
        values = [_READ[c].from_address(params[i]).value for i, c in enumerate(code)]
        if status[0] == 0:
            kernel.launch(gx, bx, smem, stream, *values)
        return status[0]

    cfn = _LAUNCH_T(fake_launch)
    monkeypatch.setattr(_fast, "_cu_launch_kernel", lambda: _LAUNCH_T(ctypes.cast(cfn, ctypes.c_void_p).value))
    monkeypatch.setattr(small_lu, "get_kernel", loaded)
    for kind in ("lu", "cholesky"):
        a0, b0, ref = system((5,), 9, 2, "complex64", kind)
        opts = _opts(matrix_type="general" if kind == "lu" else "hpd")
        assert_solves(ref, direct_solver(device(a0), device(b0), options=opts), b0, "complex64")
        with DirectSolver(device(a0), device(b0), options=opts) as s:
            s.plan()
            s.factorize()
            assert_solves(ref, s.solve(), b0, "complex64")
            assert all(not isinstance(getattr(fn, "__self__", None), HostKernel) and len(args) == 1  # (the stream)
                       for prog in s._executor.engine._programs().values() for fn, args in prog)
    _kernels_only(emulated.calls)
    status[0] = 719  # CUDA_ERROR_LAUNCH_FAILED
    plan_cache.clear()
    with pytest.raises(CUDADriverError, match="cuLaunchKernel of cumath_small_lu<double, 4>"):
        direct_solver(device(np.eye(3)), device(np.ones(3)), options=_opts())
