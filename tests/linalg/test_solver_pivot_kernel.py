"""The CUDA source of the dense solver's pivot kernels (cumath/linalg/_solver/_backends/_pivots.py), compiled as
C++ for the CPU and run there: a small shim gives each block of the launch real threads (``__syncthreads`` a
barrier, warp shuffles an exchange through memory (every thread of the block at once), ``__shared__`` one static array per block, ``atomicAdd`` an
atomic), so the kernels' own code, reductions across threads included, is checked against NumPy without a GPU:
the smallest and largest pivot magnitudes, NaN and inf anywhere they are read (on thread 0, on the last thread,
past the 256 threads of the wide kernel's block, off the diagonal for the scan of the single-system engine), the
counter of flagged systems, the early return of the warps past the batch. Skipped without a C++20 compiler."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from cumath.linalg._solver._backends import _pivots

SHIM = r"""
#include <atomic>
#include <barrier>
#include <cmath>
#include <math.h>
#include <cstring>
#include <thread>
#include <vector>
using std::fabs; using std::fmin; using std::fmax; using std::hypot;
struct cumath_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local cumath_dim3 threadIdx, blockIdx;
static cumath_dim3 blockDim, gridDim;
static std::barrier<>* cumath_bar;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
inline void __syncthreads() { cumath_bar->arrive_and_wait(); }
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v)
{ return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
// a shuffle: every thread of the block publishes its value, waits, reads its partner's, waits (every thread of
// a block that is still running calls it together, as every lane of a warp does)
static double cumath_xd[1024];
static float cumath_xf[1024];
static int cumath_xi[1024];
inline double* cumath_slots(double) { return cumath_xd; }
inline float* cumath_slots(float) { return cumath_xf; }
inline int* cumath_slots(int) { return cumath_xi; }
// (lane l of the warp that starts at thread w reads thread w + src: __shfl_sync; w + (l ^ m): __shfl_xor_sync)
template <class T> T cumath_exchange(T v, unsigned from)
{
    T* s = cumath_slots(v);
    s[threadIdx.x] = v;
    __syncthreads();
    const T r = s[from];
    __syncthreads();
    return r;
}
template <class T> T __shfl_xor_sync(unsigned, T v, int m) { return cumath_exchange(v, threadIdx.x ^ (unsigned)m); }
template <class T> T __shfl_sync(unsigned, T v, int src)
{ return cumath_exchange(v, (threadIdx.x & ~31u) + ((unsigned)src & 31u)); }
inline void __syncwarp() { __syncthreads(); }
// every block of a (gx, gy) grid in turn, each with its threads running f() at once
template <class F> void cumath_run(F f, int gx, int gy, int block)
{
    blockDim.x = block;
    gridDim.x = gx;
    gridDim.y = gy;
    for (int by = 0; by < gy; ++by)
        for (int bx = 0; bx < gx; ++bx) {
            std::barrier<> bar(block);
            cumath_bar = &bar;
            std::vector<std::thread> threads;
            for (int t = 0; t < block; ++t)
                threads.emplace_back([=, &bar] {
                    threadIdx.x = t;
                    blockIdx.x = bx;
                    blockIdx.y = by;
                    f();
                    bar.arrive_and_drop();  // a thread that returned no longer holds the others at a barrier
                });
            for (auto& th : threads) th.join();
        }
}
typedef void (*cumath_copy_fn)(const void*, void*, long long, long long, unsigned long long, unsigned long long*);
// the copy with the input scan: gx blocks of block threads, one block after another
extern "C" void cumath_launch_copy(void* fn, int gx, int block, const void* src, void* dst, long long total,
                                   long long per, unsigned long long epoch, unsigned long long* bad)
{
    blockDim.x = block;
    gridDim.x = gx;
    gridDim.y = 1;
    for (int bx = 0; bx < gx; ++bx) {
        std::vector<std::thread> threads;
        for (int t = 0; t < block; ++t)
            threads.emplace_back([=] {
                threadIdx.x = t;
                blockIdx.x = bx;
                blockIdx.y = 0;
                ((cumath_copy_fn)fn)(src, dst, total, per, epoch, bad);
            });
        for (auto& th : threads) th.join();
    }
}
"""

LAUNCHER = r"""
typedef void (*cumath_pivots_fn)(const void* const*, long long, int, int, const int*, const unsigned long long*,
                                 int, double, unsigned long long, double*, unsigned long long*, int);
typedef void (*cumath_scan_fn)(const void* const*, long long, int, int, int, unsigned long long,
                               unsigned long long*);
struct cumath_args {
    const void* const* a; long long lda; int n, count; const int* info; const unsigned long long* bad; int power;
    double eps; unsigned long long epoch; double* out; unsigned long long* flagged; int part;
    unsigned long long* scan_bad;
};
extern "C" void cumath_launch(void* fn, int scan, int gx, int gy, int block, const cumath_args* x)
{
    cumath_run([=] {
        if (scan)
            ((cumath_scan_fn)fn)(x->a, x->lda, x->n, x->count, x->part, x->epoch, x->scan_bad);
        else
            ((cumath_pivots_fn)fn)(x->a, x->lda, x->n, x->count, x->info, x->bad, x->power, x->eps, x->epoch, x->out,
                                   x->flagged, x->part);
    }, gx, gy, block);
}
"""


class _Args(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("lda", ctypes.c_longlong), ("n", ctypes.c_int), ("count", ctypes.c_int),
                ("info", ctypes.c_void_p), ("bad", ctypes.c_void_p), ("power", ctypes.c_int),
                ("eps", ctypes.c_double), ("epoch", ctypes.c_ulonglong), ("out", ctypes.c_void_p),
                ("flagged", ctypes.c_void_p), ("part", ctypes.c_int), ("scan_bad", ctypes.c_void_p)]


_DTYPES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


def compile_on_host(tmp_path_factory, stem: str, source: str, what: str, opt: str = "-O2"):
    """``SHIM + source`` compiled as C++ into a shared library (skips without a C++20 compiler)."""
    cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler here")
    folder = tmp_path_factory.mktemp(stem)
    src, so = folder / f"{stem}.cpp", folder / f"{stem}.so"
    src.write_text(SHIM + source)
    done = subprocess.run([cxx, "-std=c++20", opt, "-shared", "-fPIC", "-pthread", str(src), "-o", str(so)],
                          capture_output=True, text=True)
    if done.returncode:
        if "barrier" in done.stderr and "No such file" in done.stderr:
            pytest.skip("the C++ compiler has no C++20 <barrier>")
        pytest.fail(f"{what} does not compile as C++:\n{done.stderr[-4000:]}")
    return ctypes.CDLL(str(so))


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return compile_on_host(tmp_path_factory, "pivots", _pivots.PIVOTS_SOURCE + LAUNCHER, "the pivot kernels' source")


class State:
    """The device words of one engine's checks, kept from one check to the next as PivotCheck keeps them (zeroed
    once): the verdict and the scan's flags, and the epoch of the last check."""

    def __init__(self, count):
        self.flagged, self.bad, self.epoch = np.zeros(1, np.uint64), np.zeros(count, np.uint64), 0


def launch(lib, suffix, mats, *, wide, part=0, power=1, infos=None, lda=None, scan_blocks=None, state=None):
    """Run the kernels of an engine on the column-major matrices ``mats`` (count, n, n) as PivotCheck.run does
    (wide: the finiteness scan, then the wide pivot kernel); (out (count, 2), whether a system was flagged)."""
    count, n = mats.shape[0], mats.shape[1]
    lda = n if lda is None else lda
    state = State(count) if state is None else state
    state.epoch += 1
    store = np.zeros((count, n, lda), _DTYPES[suffix])  # store[p, j, i]: column j, row i (column-major, ld lda)
    store[:, :, :n] = np.swapaxes(mats, 1, 2)
    ptrs = np.array([store[p].ctypes.data for p in range(count)], np.uint64)
    info = np.zeros(count, np.int32) if infos is None else np.asarray(infos, np.int32)
    out = np.full((count, 2), -1.0)
    bad = state.bad.ctypes.data
    args = _Args(ptrs.ctypes.data, lda, n, count, info.ctypes.data, bad if wide else None, power,
                 float(np.finfo(_DTYPES[suffix]).eps), state.epoch, out.ctypes.data, state.flagged.ctypes.data, part,
                 bad)

    def run(kind, scan, gx, gy, block):
        fn = ctypes.cast(getattr(lib, "cumath_solver_" + kind + suffix), ctypes.c_void_p).value
        lib.cumath_launch(ctypes.c_void_p(fn), int(scan), gx, gy, block, ctypes.byref(args))

    if wide:
        gx, gy = _pivots.scan_grid(n, count)
        run("finite_", True, gx, gy if scan_blocks is None else scan_blocks, _pivots.WIDE)
        run("pivots_wide_", False, count, 1, _pivots.WIDE)
    else:
        run("pivots_", False, -(-count // (_pivots.NARROW_BLOCK // 32)), 1, _pivots.NARROW_BLOCK)
    return out, int(state.flagged[0] == state.epoch)


def good(rng, count, n, dtype):
    m = rng.standard_normal((count, n, n)) + n * np.eye(n)
    if np.dtype(dtype).kind == "c":
        m = m + 1j * rng.standard_normal((count, n, n))
    return m.astype(dtype)


def expected(mats):
    d = np.abs(np.diagonal(mats, axis1=1, axis2=2)).astype(np.float64)
    return np.stack([d.min(axis=1), d.max(axis=1)], axis=1)


@pytest.mark.parametrize("n", [1, 6, 255, 256, 257, 1031])
@pytest.mark.parametrize("suffix", ["d", "c"])
def test_wide_kernel_on_sound_factors(lib, n, suffix):
    rng = np.random.default_rng(n)
    mats = good(rng, 2, n, _DTYPES[suffix])
    out, flagged = launch(lib, suffix, mats, wide=True, lda=n + 3, scan_blocks=min(n, 5))
    np.testing.assert_allclose(out, expected(mats), rtol=1e-6)
    assert flagged == 0


@pytest.mark.parametrize("n", [6, 257, 1031])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_wide_kernel_sees_non_finite_entries_anywhere(lib, n, value):
    """On the diagonal (thread 0, the last thread, the element past the block's 256 threads, the last one) and
    off it, above and below (where a pivot search that passes over a NaN puts it: into L)."""
    rng = np.random.default_rng(n)
    places = {(0, 0), (n - 2, n - 2), (n - 1, n - 1), (n - 1, n - 2), (0, n - 1), (n // 2, 1)}
    places |= {(i, i) for i in (255, 256, 511, 512) if i < n}
    for i, j in sorted(places):
        mats = good(rng, 3, n, np.float64)
        mats[1, i, j] = value
        out, flagged = launch(lib, "d", mats, wide=True, scan_blocks=3)
        assert flagged == 1, (i, j)
        assert np.isnan(out[1]).all(), (i, j)
        np.testing.assert_allclose(out[[0, 2]], expected(mats)[[0, 2]], rtol=1e-12)


def test_wide_kernel_reads_the_triangle_of_a_cholesky_factor(lib):
    rng = np.random.default_rng(7)
    n = 300
    mats = good(rng, 1, n, np.float32)
    mats[0, 3, n - 2] = np.nan  # above the diagonal: not part of a lower factor
    for part, flagged in (("L", 0), ("U", 1), ("lu", 1)):
        assert launch(lib, "s", mats, wide=True, part=_pivots.PART[part], power=2, scan_blocks=7)[1] == flagged


def test_wide_check_with_the_scan_grid_of_the_engine(lib):
    """The scan's grid as the engine launches it (a block per column here: 40 columns, 2 systems)."""
    assert _pivots.scan_grid(40, 2) == (2, 40) and _pivots.scan_grid(8192, 1) == (1, 1024)
    assert _pivots.scan_grid(3, 5000) == (5000, 1)
    rng = np.random.default_rng(40)
    mats = good(rng, 2, 40, np.float64)
    assert launch(lib, "d", mats, wide=True)[1] == 0
    for i, j in ((39, 38), (0, 39), (17, 3)):
        bad = mats.copy()
        bad[0, i, j] = np.nan
        assert launch(lib, "d", bad, wide=True)[1] == 1


@pytest.mark.parametrize("wide", [False, True])
def test_kernels_flag_tiny_pivots_and_failed_factorizations(lib, wide):
    rng = np.random.default_rng(3)
    n = 270 if wide else 9
    mats = good(rng, 6, n, np.float64)
    mats[2, n - 1, n - 1] = 1e-20 * n  # lo / hi about 1e-20 (the order-1e-16 precision)
    kw = {"wide": wide, "scan_blocks": 2} if wide else {"wide": wide}
    out, flagged = launch(lib, "d", mats, **kw)
    assert flagged == 1
    np.testing.assert_allclose(out, expected(mats), rtol=1e-12)
    mats[2, n - 1, n - 1] = 1e-9 * n  # squared (Cholesky): 1e-18, below the precision; LU: 1e-9, above it
    assert launch(lib, "d", mats, **kw)[1] == 0
    assert launch(lib, "d", mats, power=2, **kw)[1] == 1
    mats[2, n - 1, n - 1] = n
    mats[4, 0, 0] = 0.0  # lo == 0: the ratio 0 is flagged
    assert launch(lib, "d", mats, **kw)[1] == 1
    mats[4, 0, 0] = n
    assert launch(lib, "d", mats, **kw)[1] == 0
    assert launch(lib, "d", mats, infos=[0, 0, 0, 3, 0, 0], **kw)[1] == 1
    assert launch(lib, "d", mats, infos=[-1, 0, 0, 0, 0, 0], **kw)[1] == 1


@pytest.mark.parametrize("wide", [False, True])
def test_a_check_does_not_read_the_flags_of_the_last_one(lib, wide):
    """Nothing is cleared between checks: each has an epoch of its own, and the flags of an earlier one (the
    verdict word, the scan's per-system flags) do not count for it."""
    rng = np.random.default_rng(5)
    n = 40
    mats = good(rng, 3, n, np.float64)
    bad = mats.copy()
    bad[1, n - 1, 0] = np.nan  # below the diagonal (L): the scan's flag (wide), the narrow kernel's own read
    bad[2, 3, 3] = np.inf
    state = State(3)
    kw = {"wide": wide, "scan_blocks": 3} if wide else {"wide": wide}
    out, flagged = launch(lib, "d", bad, state=state, **kw)
    assert flagged == 1 and np.isnan(out[2]).all() and np.isnan(out[1]).all()
    for _ in range(2):
        out, flagged = launch(lib, "d", mats, state=state, **kw)
        assert flagged == 0 and np.isfinite(out).all()
    assert state.epoch == 3 and state.flagged[0] == 1


@pytest.mark.parametrize("count", [1, 4, 5, 11])
@pytest.mark.parametrize("n", [1, 7, 32, 33, 100])
@pytest.mark.parametrize("suffix", ["s", "d", "c", "z"])
def test_narrow_kernel(lib, count, n, suffix):
    """One warp per system (four to a block; the warps past the batch return first): the diagonal's smallest and
    largest magnitude through the warp's shuffles, NaN and inf on it."""
    rng = np.random.default_rng(count * 1000 + n)
    mats = good(rng, count, n, _DTYPES[suffix])
    out, flagged = launch(lib, suffix, mats, wide=False, lda=n + 1)
    np.testing.assert_allclose(out, expected(mats), rtol=1e-6)
    assert flagged == 0
    p = count - 1
    for i in {0, n // 2, n - 1}:
        bad = mats.copy()
        bad[p, i, i] = np.nan if i % 2 == 0 else np.inf
        out, flagged = launch(lib, suffix, bad, wide=False)
        assert flagged == 1 and np.isnan(out[p]).all(), i
        np.testing.assert_allclose(out[:p], expected(mats)[:p], rtol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 70])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_narrow_kernel_sees_non_finite_entries_anywhere_in_the_factor(lib, n, value):
    """Every entry of each factor, not its diagonal alone: below it (a NaN a pivot search moved into L), above it,
    in the first and last rows and columns, at lanes 0 and 31 and past the warp's 32 lanes; the other systems of
    the batch (five: two blocks, the last warps past the batch) keep their magnitudes."""
    rng = np.random.default_rng(100 + n)
    count = 5
    mats = good(rng, count, n, np.float32)
    places = {(0, 0), (n - 1, 0), (0, n - 1), (n - 1, n - 1), (n // 2, n // 3), (n // 3, n // 2)}
    places |= {(i, 0) for i in (31, 32, 40) if i < n}
    for p in (0, 3, count - 1):
        for i, j in sorted(places):
            bad = mats.copy()
            bad[p, i, j] = value
            out, flagged = launch(lib, "s", bad, wide=False, lda=n + 2)
            assert flagged == 1 and np.isnan(out[p]).all(), (p, i, j)
            others = [q for q in range(count) if q != p]
            np.testing.assert_allclose(out[others], expected(mats)[others], rtol=1e-6)


@pytest.mark.parametrize("suffix", ["s", "z"])
def test_narrow_kernel_reads_the_triangle_of_a_cholesky_factor(lib, suffix):
    """A Cholesky factor is the triangle potrf wrote: a NaN in the other triangle (input the library never read)
    is not the factor's; one inside it is seen wherever it sits."""
    rng = np.random.default_rng(9)
    n = 37
    mats = good(rng, 3, n, _DTYPES[suffix])
    for (i, j), part, flagged in (((3, n - 2), "L", 0), ((3, n - 2), "U", 1), ((3, n - 2), "lu", 1),
                                  ((n - 2, 3), "L", 1), ((n - 2, 3), "U", 0), ((n - 1, n - 1), "L", 1),
                                  ((n - 1, n - 1), "U", 1), ((n - 1, 0), "L", 1), ((0, n - 1), "U", 1)):
        bad = mats.copy()
        bad[1, i, j] = np.nan
        out, got = launch(lib, suffix, bad, wide=False, part=_pivots.PART[part], power=2)
        assert got == flagged, (i, j, part)
        assert np.isnan(out[1]).all() == bool(flagged), (i, j, part)


def copy_scan(lib, suffix, src, per, *, grid, block=_pivots.WIDE, epoch=7, bad=None, store=True):
    """The copy kernel on the flat array ``src`` (systems of ``per`` entries): (the copy, the flags); without
    ``store`` the scan alone (a null destination: the copy is None)."""
    dst = np.full_like(src, 3) if store else None
    bad = np.zeros(src.size // per, np.uint64) if bad is None else bad
    fn = ctypes.cast(getattr(lib, "cumath_solver_copy_finite_" + suffix), ctypes.c_void_p).value
    lib.cumath_launch_copy(ctypes.c_void_p(fn), grid, block, ctypes.c_void_p(src.ctypes.data),
                           ctypes.c_void_p(dst.ctypes.data if store else 0), ctypes.c_longlong(src.size),
                           ctypes.c_longlong(per),
                           ctypes.c_ulonglong(epoch), ctypes.c_void_p(bad.ctypes.data))
    return dst, bad


@pytest.mark.parametrize("suffix", ["s", "d", "c", "z"])
@pytest.mark.parametrize("count, n", [(1, 1), (1, 37), (3, 37), (2, 64), (1, 101)])
@pytest.mark.parametrize("grid, block", [(None, _pivots.WIDE), (1, 32), (3, 32), (2, 64)])
def test_copy_with_the_input_scan(lib, suffix, count, n, grid, block):
    """The copy of a into the factor storage with the finiteness scan on the way: every entry copied exactly
    (the unrolled rounds and the tail, one block or several, totals that are and are not multiples of a round),
    each system flagged with the epoch where it holds a NaN or an inf, the others left alone."""
    rng = np.random.default_rng(count * 1000 + n)
    mats = good(rng, count, n, _DTYPES[suffix])
    per = n * n
    grid = _pivots.copy_grid(count * per) if grid is None else grid
    dst, bad = copy_scan(lib, suffix, mats.ravel(), per, grid=grid, block=block)
    np.testing.assert_array_equal(dst, mats.ravel())
    assert not bad.any()
    for p in range(count):
        for k in sorted({0, per - 1, per // 2, min(per - 1, 31), min(per - 1, 4 * block - 1)}):
            for value in (np.nan, np.inf, -np.inf):
                flat = mats.copy().ravel()
                flat[p * per + k] = value
                old = np.full(count, 5, np.uint64)  # the flags of an earlier check: kept unless flagged now
                dst, flags = copy_scan(lib, suffix, flat, per, grid=grid, block=block, epoch=9, bad=old)
                np.testing.assert_array_equal(dst, flat)
                assert flags[p] == 9 and all(flags[q] == 5 for q in range(count) if q != p), (p, k)
                keep = flat.copy()  # the flat scan of the factors: the same kernel with a null destination
                _, flags = copy_scan(lib, suffix, flat, per, grid=grid, block=block, epoch=11, store=False)
                np.testing.assert_array_equal(flat, keep)
                assert flags[p] == 11 and all(flags[q] == 0 for q in range(count) if q != p), (p, k)


def test_copy_grid():
    assert _pivots.copy_grid(1) == 1 and _pivots.copy_grid(1024) == 1 and _pivots.copy_grid(1025) == 2
    assert _pivots.copy_grid(8192 * 8192) == _pivots.COPY_BLOCKS
