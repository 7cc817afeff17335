"""Tests of the FFTW3 ctypes binding (cumath._bindings.fftw) against numpy.fft, for FFTW itself and oneMKL."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from cumath._bindings import fftw as F
from cumath._core.frameworks.numpy import aligned_empty
from cumath.errors import FFTWError, LibraryNotFoundError

PROVIDERS = ("fftw", "mkl")
PRECISIONS = ("double", "single")
TOL = {"double": 1e-12, "single": 1e-5}
CDT = {"double": np.complex128, "single": np.complex64}
RDT = {"double": np.float64, "single": np.float32}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(params=[(p, q) for q in PROVIDERS for p in PRECISIONS], ids=lambda pq: f"{pq[1]}-{pq[0]}")
def lib(request):
    precision, provider = request.param
    L = F.get_fftw(precision, provider)
    try:
        L.load()
    except LibraryNotFoundError as exc:
        pytest.skip(f"{provider} not installed: {exc}")
    with F.planner_lock:
        L.plan_with_nthreads(1)
    return L


@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy  # fresh data each run; the seed is in the failure message
    return np.random.default_rng(seed), seed


def crandom(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def rel_err(got, ref) -> float:
    got = np.asarray(got).astype(np.complex128)
    ref = np.asarray(ref).astype(np.complex128)
    return float(np.linalg.norm((got - ref).ravel()) / np.linalg.norm(ref.ravel()))


def guru(x, y, axes, logical=None):
    """(dims, howmany_dims) in elements for transforming ``axes`` of x into y (logical sizes from ``logical``)."""
    logical = x if logical is None else logical
    xs = [s // x.itemsize for s in x.strides]
    ys = [s // y.itemsize for s in y.strides]
    axes = [a % x.ndim for a in axes]
    dims = [(logical.shape[a], xs[a], ys[a]) for a in axes]
    howmany = [(x.shape[a], xs[a], ys[a]) for a in range(x.ndim) if a not in axes]
    return dims, howmany


def plan_c2c(L, x, y, axes, sign, flags):
    dims, howmany = guru(x, y, axes)
    with F.planner_lock:
        return L.plan_guru64_dft(dims, howmany, x.ctypes.data, y.ctypes.data, sign, flags)


def destroy(L, plan):
    with F.planner_lock:
        L.destroy_plan(plan)


# ------------------------------------------------------------------------------------------------- import
def test_nothing_loads_at_import():
    code = (
        "import cumath._bindings.fftw as F\n"
        "from cumath._bindings._loader import loaded_libraries\n"
        "libs = [F.get_fftw(p, q) for p in ('double', 'single') for q in ('fftw', 'mkl')]\n"
        "_ = [repr(x) for x in libs]\n"
        "assert not loaded_libraries(), loaded_libraries()\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert 'libfftw3' not in maps and 'mkl_rt' not in maps\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_constants_match_header():
    header = "/usr/include/fftw3.h"
    if not os.path.exists(header):
        pytest.skip("fftw3.h not installed (apt-get install libfftw3-dev)")
    text = open(header).read()
    for name in ("FFTW_MEASURE", "FFTW_DESTROY_INPUT", "FFTW_UNALIGNED", "FFTW_CONSERVE_MEMORY", "FFTW_EXHAUSTIVE",
                 "FFTW_PRESERVE_INPUT", "FFTW_PATIENT", "FFTW_ESTIMATE", "FFTW_WISDOM_ONLY"):
        m = re.search(rf"#define {name} \((\d+)U(?: << (\d+))?\)", text)
        assert m, name
        value = int(m.group(1)) << int(m.group(2) or 0)
        assert getattr(F, name) == value, name
    assert "#define FFTW_FORWARD (-1)" in text and F.FFTW_FORWARD == -1
    assert "#define FFTW_BACKWARD (+1)" in text and F.FFTW_BACKWARD == 1
    assert ctypes.sizeof(F.IODim64) == 3 * ctypes.sizeof(ctypes.c_void_p)


def test_get_fftw_caches_and_validates():
    assert F.get_fftw("double", "fftw") is F.get_fftw("double", "fftw")
    assert F.get_fftw("single", "mkl") is not F.get_fftw("double", "mkl")
    with pytest.raises(ValueError):
        F.FFTWLibrary("half", "fftw")
    with pytest.raises(ValueError):
        F.FFTWLibrary("double", "cufft")


# ------------------------------------------------------------------------------------------------- c2c
@pytest.mark.parametrize("n", [16, 60, 257])
@pytest.mark.parametrize("flags", [F.FFTW_ESTIMATE, F.FFTW_MEASURE], ids=["estimate", "measure"])
def test_c2c_1d_forward_backward(lib, rng, n, flags):
    g, seed = rng
    cdt = CDT[lib.precision]
    x = np.empty(n, cdt)
    y = np.empty(n, cdt)
    pf = plan_c2c(lib, x, y, [0], F.FFTW_FORWARD, flags)
    pb = plan_c2c(lib, y, x, [0], F.FFTW_BACKWARD, flags)
    assert pf and pb
    try:
        data = crandom(g, n, cdt)  # after planning: MEASURE overwrites the arrays
        x[:] = data
        lib.execute(pf)
        assert rel_err(y, np.fft.fft(data.astype(np.complex128))) < TOL[lib.precision], seed
        lib.execute(pb)  # unnormalised inverse
        assert rel_err(x, data.astype(np.complex128) * n) < TOL[lib.precision], seed
    finally:
        destroy(lib, pf)
        destroy(lib, pb)


@pytest.mark.parametrize("step", [2, -1, -3])
def test_c2c_strided_and_negative_strides(lib, rng, step):
    g, seed = rng
    cdt = CDT[lib.precision]
    n = 48
    base = np.empty(abs(step) * n + 5, cdt)
    x = base[::step][:n]
    assert x.shape == (n,) and x.strides[0] == step * x.itemsize
    obase = np.empty(2 * n, cdt)
    y = obase[::-2]  # negative output stride as well
    for flags in (F.FFTW_ESTIMATE, F.FFTW_MEASURE):
        p = plan_c2c(lib, x, y, [0], F.FFTW_FORWARD, flags)
        assert p, (lib, step, flags)
        try:
            base[:] = crandom(g, base.shape, cdt)
            ref = np.fft.fft(x.astype(np.complex128))
            lib.execute(p)
            assert rel_err(y, ref) < TOL[lib.precision], (seed, flags)
        finally:
            destroy(lib, p)


def test_c2c_batched_two_howmany_dims(lib, rng):
    g, seed = rng
    cdt = CDT[lib.precision]
    # (3, 4, 32) window of a (3, 5, 40) array: the two batch dimensions cannot be merged into one.
    big_in = np.empty((3, 5, 40), cdt)
    x = big_in[:, :4, 3:35]
    y = np.empty((4, 3, 32), cdt).transpose(1, 0, 2)  # output batch axes in another order
    if lib.provider == "mkl":  # oneMKL's wrappers have one batch loop only: a clear error, not a NULL plan
        with pytest.raises(F.FFTWNotAvailableError, match="howmany_rank"):
            plan_c2c(lib, x, y, [2], F.FFTW_FORWARD, F.FFTW_ESTIMATE)
        with pytest.raises(NotImplementedError):
            plan_c2c(lib, x, y, [2], F.FFTW_FORWARD, F.FFTW_ESTIMATE)
        return
    for sign, fn in ((F.FFTW_FORWARD, np.fft.fft), (F.FFTW_BACKWARD, lambda a, axis: np.fft.ifft(a, axis=axis) * 32)):
        p = plan_c2c(lib, x, y, [2], sign, F.FFTW_ESTIMATE)
        assert p
        try:
            big_in[:] = crandom(g, big_in.shape, cdt)
            lib.execute(p)
            assert rel_err(y, fn(x.astype(np.complex128), axis=2)) < TOL[lib.precision], seed
        finally:
            destroy(lib, p)


def test_c2c_2d_transform_with_2d_batch(lib, rng):
    """Two contiguous batch axes: FFTW takes them as they are; for MKL the binding fuses them into one loop."""
    g, seed = rng
    cdt = CDT[lib.precision]
    x = np.empty((2, 3, 8, 6), cdt)
    y = np.empty((2, 3, 8, 6), cdt)
    p = plan_c2c(lib, x, y, [2, 3], F.FFTW_FORWARD, F.FFTW_MEASURE)
    assert p
    try:
        x[:] = crandom(g, x.shape, cdt)
        lib.execute(p)
        assert rel_err(y, np.fft.fftn(x.astype(np.complex128), axes=(2, 3))) < TOL[lib.precision], seed
    finally:
        destroy(lib, p)


def test_new_array_execute(lib, rng):
    """Plan on one pair of arrays, execute on others of the same alignment and layout (twice, batched)."""
    g, seed = rng
    cdt = CDT[lib.precision]
    shape = (5, 3, 64)
    a, b = aligned_empty(shape, cdt), aligned_empty(shape, cdt)
    p = plan_c2c(lib, a, b, [2], F.FFTW_FORWARD, F.FFTW_MEASURE)
    assert p
    try:
        for _ in range(2):
            c, d = aligned_empty(shape, cdt), aligned_empty(shape, cdt)
            assert lib.alignment_of(c.ctypes.data) == lib.alignment_of(a.ctypes.data)
            c[:] = crandom(g, shape, cdt)
            lib.execute_dft(p, c.ctypes.data, d.ctypes.data)
            assert rel_err(d, np.fft.fft(c.astype(np.complex128), axis=2)) < TOL[lib.precision], seed
    finally:
        destroy(lib, p)


def test_in_place_c2c(lib, rng):
    g, seed = rng
    cdt = CDT[lib.precision]
    x = np.empty((4, 30), cdt)
    p = plan_c2c(lib, x, x, [1], F.FFTW_FORWARD, F.FFTW_ESTIMATE)
    assert p
    try:
        data = crandom(g, x.shape, cdt)
        x[:] = data
        lib.execute(p)
        assert rel_err(x, np.fft.fft(data.astype(np.complex128), axis=1)) < TOL[lib.precision], seed
    finally:
        destroy(lib, p)


# ------------------------------------------------------------------------------------------------- r2c / c2r
@pytest.mark.parametrize("shape,axes", [((15,), [0]), ((16,), [0]), ((6, 9), [0, 1]), ((7, 10), [0, 1]),
                                        ((3, 4, 21), [2]), ((3, 4, 5, 8), [2, 3])])
@pytest.mark.parametrize("flags", [F.FFTW_ESTIMATE, F.FFTW_MEASURE], ids=["estimate", "measure"])
def test_r2c(lib, rng, shape, axes, flags):
    g, seed = rng
    rdt = RDT[lib.precision]
    x = np.empty(shape, rdt)
    oshape = list(shape)
    oshape[axes[-1]] = shape[axes[-1]] // 2 + 1
    y = np.empty(oshape, CDT[lib.precision])
    dims, howmany = guru(x, y, axes)
    with F.planner_lock:
        p = lib.plan_guru64_dft_r2c(dims, howmany, x.ctypes.data, y.ctypes.data, flags)
    assert p
    try:
        x[:] = g.standard_normal(shape)
        lib.execute(p)
        ref = np.fft.rfftn(x.astype(np.float64), axes=axes)
        assert rel_err(y, ref) < TOL[lib.precision], seed
    finally:
        destroy(lib, p)


@pytest.mark.parametrize("shape,axes", [((15,), [0]), ((16,), [0]), ((6, 9), [0, 1]), ((7, 10), [0, 1]),
                                        ((3, 4, 21), [2]), ((3, 4, 5, 8), [2, 3])])
def test_c2r_on_a_copy(lib, rng, shape, axes):
    g, seed = rng
    rdt, cdt = RDT[lib.precision], CDT[lib.precision]
    real = g.standard_normal(shape)
    spec = np.fft.rfftn(real, axes=axes)  # Hermitian input of a real signal
    # Plan (MEASURE) on scratch arrays, execute on a copy of the spectrum: c2r destroys its input.
    xs = aligned_empty(spec.shape, cdt)
    ys = aligned_empty(shape, rdt)
    dims, howmany = guru(xs, ys, axes, logical=ys)
    with F.planner_lock:
        p = lib.plan_guru64_dft_c2r(dims, howmany, xs.ctypes.data, ys.ctypes.data, F.FFTW_MEASURE)
    assert p
    try:
        x = aligned_empty(spec.shape, cdt)
        y = aligned_empty(shape, rdt)
        x[:] = spec
        lib.execute_dft_c2r(p, x.ctypes.data, y.ctypes.data)
        n = int(np.prod([shape[a] for a in axes]))
        assert rel_err(y, real * n) < TOL[lib.precision], seed
        # And with the plan's own arrays
        xs[:] = spec
        lib.execute(p)
        assert rel_err(ys, real * n) < TOL[lib.precision], seed
    finally:
        destroy(lib, p)


def test_new_array_r2c(lib, rng):
    g, seed = rng
    rdt, cdt = RDT[lib.precision], CDT[lib.precision]
    shape = (4, 50)
    a, b = aligned_empty(shape, rdt), aligned_empty((4, 26), cdt)
    dims, howmany = guru(a, b, [1])
    with F.planner_lock:
        p = lib.plan_guru64_dft_r2c(dims, howmany, a.ctypes.data, b.ctypes.data, F.FFTW_MEASURE)
    assert p
    try:
        c, d = aligned_empty(shape, rdt), aligned_empty((4, 26), cdt)
        c[:] = g.standard_normal(shape)
        lib.execute_dft_r2c(p, c.ctypes.data, d.ctypes.data)
        assert rel_err(d, np.fft.rfft(c.astype(np.float64), axis=1)) < TOL[lib.precision], seed
    finally:
        destroy(lib, p)


# ------------------------------------------------------------------------------------------------- wisdom
def test_wisdom_only(lib, rng):
    g, seed = rng
    cdt = CDT[lib.precision]
    n = 1000
    x, y = np.empty((3, n), cdt), np.empty((3, n), cdt)
    with F.planner_lock:
        lib.forget_wisdom()
        p0 = plan_c2c(lib, x, y, [1], F.FFTW_FORWARD, F.FFTW_WISDOM_ONLY)
        if lib.provider == "mkl":
            # oneMKL's wrappers ignore the flag (no wisdom there): the plan is made anyway.
            assert p0
            destroy(lib, p0)
            return
        assert p0 == 0
        pm = plan_c2c(lib, x, y, [1], F.FFTW_FORWARD, F.FFTW_MEASURE)
        pw = plan_c2c(lib, x, y, [1], F.FFTW_FORWARD, F.FFTW_WISDOM_ONLY)
    assert pm and pw
    try:
        x[:] = crandom(g, x.shape, cdt)
        lib.execute(pw)
        assert rel_err(y, np.fft.fft(x.astype(np.complex128), axis=1)) < TOL[lib.precision], seed
    finally:
        destroy(lib, pm)
        destroy(lib, pw)


def test_wisdom_round_trip(lib, tmp_path):
    cdt = CDT[lib.precision]
    x, y = np.empty(384, cdt), np.empty(384, cdt)
    if lib.provider == "mkl":
        for call in (lib.export_wisdom_to_string, lambda: lib.import_wisdom_from_string(b"x"),
                     lambda: lib.export_wisdom_to_filename(tmp_path / "w"),
                     lambda: lib.import_wisdom_from_filename(tmp_path / "w")):
            with pytest.raises(F.FFTWNotAvailableError):
                call()
        return
    with F.planner_lock:
        lib.forget_wisdom()
        p = plan_c2c(lib, x, y, [0], F.FFTW_FORWARD, F.FFTW_PATIENT)
        destroy(lib, p)
        text = lib.export_wisdom_to_string()
        assert isinstance(text, bytes) and text.startswith(b"(fftw-") and lib.prefix.encode() + b"wisdom" in text
        lib.export_wisdom_to_filename(tmp_path / "wisdom.txt")
        lib.forget_wisdom()
        assert plan_c2c(lib, x, y, [0], F.FFTW_FORWARD, F.FFTW_PATIENT | F.FFTW_WISDOM_ONLY) == 0
        assert lib.import_wisdom_from_string(text) is True
        p = plan_c2c(lib, x, y, [0], F.FFTW_FORWARD, F.FFTW_PATIENT | F.FFTW_WISDOM_ONLY)
        assert p
        destroy(lib, p)
        again = lib.export_wisdom_to_string()
        lib.forget_wisdom()
        assert lib.import_wisdom_from_string(again) is True
        lib.forget_wisdom()
        assert lib.import_wisdom_from_filename(tmp_path / "wisdom.txt") is True
        p = plan_c2c(lib, x, y, [0], F.FFTW_FORWARD, F.FFTW_PATIENT | F.FFTW_WISDOM_ONLY)
        assert p
        destroy(lib, p)
        assert lib.import_wisdom_from_string(b"not wisdom") is False
        assert lib.import_wisdom_from_filename(tmp_path / "missing.txt") is False
        with pytest.raises(FFTWError):
            lib.export_wisdom_to_filename(tmp_path / "no-such-dir" / "w")


# ------------------------------------------------------------------------------------------------- threads
def test_threads_same_result(lib, rng):
    g, seed = rng
    cdt = CDT[lib.precision]
    shape = (16, 4096)
    x, y1, y2 = np.empty(shape, cdt), np.empty(shape, cdt), np.empty(shape, cdt)
    with F.planner_lock:
        lib.plan_with_nthreads(1)
        p1 = plan_c2c(lib, x, y1, [1], F.FFTW_FORWARD, F.FFTW_ESTIMATE)
        lib.plan_with_nthreads(2)
        p2 = plan_c2c(lib, x, y2, [1], F.FFTW_FORWARD, F.FFTW_MEASURE)
        lib.plan_with_nthreads(1)
    assert p1 and p2
    try:
        if lib.provider == "fftw":
            assert "thr" in lib.sprint_plan(p2) or "thr" not in lib.sprint_plan(p1)
        x[:] = crandom(g, shape, cdt)
        lib.execute(p1)
        lib.execute(p2)
        ref = np.fft.fft(x.astype(np.complex128), axis=1)
        assert rel_err(y1, ref) < TOL[lib.precision], seed
        assert rel_err(y2, ref) < TOL[lib.precision], seed
        assert rel_err(y2, y1) < TOL[lib.precision], seed
    finally:
        destroy(lib, p1)
        destroy(lib, p2)


def test_fftw_threading_library_matches_main():
    L = F.get_fftw("double", "fftw")
    try:
        L.load()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    assert L.threads_available
    main_dir = os.path.dirname(L.library_path)
    assert os.path.dirname(L.threads_library_path) == main_dir, (L.library_path, L.threads_library_path)
    x, y = np.empty(1 << 16, np.complex128), np.empty(1 << 16, np.complex128)
    with F.planner_lock:
        L.plan_with_nthreads(2)
        p = plan_c2c(L, x, y, [0], F.FFTW_FORWARD, F.FFTW_ESTIMATE)
        L.plan_with_nthreads(1)
    try:
        assert "thr" in L.sprint_plan(p)  # the threaded solvers were registered in this very planner
    finally:
        destroy(L, p)


def test_optional_functions(lib):
    if lib.has("planner_nthreads"):
        with F.planner_lock:
            lib.plan_with_nthreads(3)
            assert lib.planner_nthreads() == 3
            lib.plan_with_nthreads(1)
    else:
        with pytest.raises(F.FFTWNotAvailableError):
            lib.planner_nthreads()
    if lib.has("make_planner_thread_safe"):
        lib.make_planner_thread_safe()
    else:
        with pytest.raises(NotImplementedError):
            lib.make_planner_thread_safe()


# ------------------------------------------------------------------------------------------------- misc
def test_plan_info_alignment_version(lib):
    cdt = CDT[lib.precision]
    x = aligned_empty(256, cdt)
    y = aligned_empty(256, cdt)
    p = plan_c2c(lib, x, y, [0], F.FFTW_FORWARD, F.FFTW_ESTIMATE)
    try:
        add, mul, fma = lib.flops(p)
        cost = lib.cost(p)
        if lib.provider == "fftw":
            assert add > 0 and mul > 0 and fma >= 0
            assert cost >= 0
            assert lib.sprint_plan(p).startswith("(")
        else:  # MKL fills these with zeros
            assert (add, mul, fma) == (0.0, 0.0, 0.0)
    finally:
        destroy(lib, p)
    a = lib.simd_alignment
    assert a in (1, 8, 16, 32, 64, 128)
    assert lib.alignment_of(x.ctypes.data) == 0
    if a > 4:
        assert lib.alignment_of(x.ctypes.data + 4) == 4
    assert isinstance(lib.version, str) and lib.version
    if lib.provider == "fftw":
        assert lib.version.startswith("fftw-3.")
    with F.planner_lock:
        lib.set_timelimit(5.0)
        lib.set_timelimit(F.FFTW_NO_TIMELIMIT)
        lib.destroy_plan(0)  # ignored


def test_hot_path_is_the_ctypes_function(lib):
    for name in ("execute", "execute_dft", "execute_dft_r2c", "execute_dft_c2r"):
        fn = getattr(lib, name)
        assert isinstance(fn, ctypes._CFuncPtr), name
        assert name in vars(lib)


def test_merge_howmany():
    m = F._merge_howmany
    assert m([(2, 192, 192), (3, 64, 64)]) == [(6, 64, 64)]  # contiguous: one loop
    assert m([(3, 64, 64), (2, 192, 192)]) == [(6, 64, 64)]  # order does not matter
    assert m([(3, 200, 200), (4, 40, 40), (1, 7, 7)]) == [(3, 200, 200), (4, 40, 40)]  # gap: two loops
    assert m([(2, 192, 10), (3, 64, 64)]) == [(2, 192, 10), (3, 64, 64)]  # output not fusable
    assert m([(1, 5, 5)]) == []


def _run_python(code):
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _require(provider):
    try:
        F.get_fftw("double", provider).load()
    except LibraryNotFoundError as exc:
        pytest.skip(f"{provider} not installed: {exc}")


_PLAN_384 = (
    "import numpy as np\n"
    "from cumath._bindings import fftw as F\n"
    "L = F.get_fftw('double', 'fftw')\n"
    "x, y = np.empty(384, complex), np.empty(384, complex)\n"
    "def plan(flags):\n"
    "    with F.planner_lock:\n"
    "        return L.plan_guru64_dft([(384, 1, 1)], [], x.ctypes.data, y.ctypes.data, F.FFTW_FORWARD, flags)\n"
)


def test_wisdom_exchange_between_processes(tmp_path):
    """Wisdom written by one process is accepted by another (both call init_threads first)."""
    _require("fftw")
    path = str(tmp_path / "wisdom")
    _run_python(_PLAN_384 + f"assert plan(F.FFTW_MEASURE)\nL.export_wisdom_to_filename({path!r})\n")
    out = _run_python(_PLAN_384 + f"print(L.import_wisdom_from_filename({path!r}), bool(plan(F.FFTW_WISDOM_ONLY)))\n")
    assert out.split() == ["True", "True"]


def test_fftw_still_fftw_after_mkl_was_used():
    """MKL puts its fftw_* symbols in the global scope; the binding must still reach FFTW itself."""
    _require("fftw")
    _require("mkl")
    code = (
        "import numpy as np\n"
        "from cumath._bindings import fftw as F\n"
        "M = F.get_fftw('double', 'mkl')\n"
        "a = np.empty(64, complex)\n"
        "pm = M.plan_guru64_dft([(64, 1, 1)], [], a.ctypes.data, a.ctypes.data, -1, F.FFTW_ESTIMATE)\n"
        "M.execute(pm)\n"
        + _PLAN_384.split("\n", 2)[2]
        + "p = plan(F.FFTW_MEASURE)\n"
        "assert L.sprint_plan(p).startswith('(') and L.flops(p)[0] > 0\n"
        "w = L.export_wisdom_to_string()\n"
        "L.forget_wisdom()\n"
        "assert plan(F.FFTW_WISDOM_ONLY) == 0\n"
        "assert L.import_wisdom_from_string(w) and plan(F.FFTW_WISDOM_ONLY)\n"
        "L.plan_with_nthreads(2)\n"
        "b, c = np.empty(1 << 16, complex), np.empty(1 << 16, complex)\n"
        "p2 = L.plan_guru64_dft([(1 << 16, 1, 1)], [], b.ctypes.data, c.ctypes.data, -1, F.FFTW_ESTIMATE)\n"
        "assert 'thr' in L.sprint_plan(p2)\n"
        "b[:] = np.random.default_rng().standard_normal(b.shape)\n"
        "L.execute(p2)\n"
        "assert np.allclose(c, np.fft.fft(b))\n"
        "print('ok')\n"
    )
    assert _run_python(code).strip() == "ok"
