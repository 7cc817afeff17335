"""The CUDA source of the dense solver's pivot kernels (cumath/linalg/_solver/_backends/_pivots.py), compiled as
C++ for the CPU and run there: a small shim gives each block of the launch real threads (``__syncthreads`` a
barrier, warp shuffles an exchange through memory, ``__shared__`` one static array per block, ``atomicAdd`` an
atomic), so the kernels' own code, reductions across threads included, is checked against NumPy without a GPU:
the smallest and largest pivot magnitudes, NaN and inf anywhere they are read (on thread 0, on the last thread,
past the 256 threads of the wide kernel's block), the counter of flagged systems, the early return of the warps
past the batch. Skipped without a C++20 compiler."""

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
#include <cstring>
#include <thread>
#include <vector>
using std::fabs; using std::fmin; using std::fmax; using std::hypot;
struct cumath_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local cumath_dim3 threadIdx, blockIdx;
static cumath_dim3 blockDim;
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
static int cumath_xi[1024];
inline double* cumath_slots(double) { return cumath_xd; }
inline int* cumath_slots(int) { return cumath_xi; }
template <class T> T __shfl_xor_sync(unsigned, T v, int m)
{
    T* s = cumath_slots(v);
    const unsigned t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    const T r = s[t ^ (unsigned)m];
    __syncthreads();
    return r;
}
"""

LAUNCHER = r"""
typedef void (*cumath_fn)(const void* const*, long long, int, int, const int*, int, int, double, double*,
                          unsigned long long*);
extern "C" void cumath_launch(void* fn, int grid, int block, const void* const* a, long long lda, int n, int count,
                              const int* info, int part, int power, double eps, double* out,
                              unsigned long long* flagged)
{
    blockDim.x = block;
    for (int b = 0; b < grid; ++b) {
        std::barrier<> bar(block);
        cumath_bar = &bar;
        std::vector<std::thread> threads;
        for (int t = 0; t < block; ++t)
            threads.emplace_back([=, &bar] {
                threadIdx.x = t;
                blockIdx.x = b;
                ((cumath_fn)fn)(a, lda, n, count, info, part, power, eps, out, flagged);
                bar.arrive_and_drop();  // a thread that returned no longer holds the others at a barrier
            });
        for (auto& th : threads) th.join();
    }
}
"""

_DTYPES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler here")
    folder = tmp_path_factory.mktemp("pivots")
    src, so = folder / "pivots.cpp", folder / "pivots.so"
    src.write_text(SHIM + _pivots.PIVOTS_SOURCE + LAUNCHER)
    done = subprocess.run([cxx, "-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", str(src), "-o", str(so)],
                          capture_output=True, text=True)
    if done.returncode:
        if "barrier" in done.stderr and "No such file" in done.stderr:
            pytest.skip("the C++ compiler has no C++20 <barrier>")
        pytest.fail(f"the pivot kernels' source does not compile as C++:\n{done.stderr[-4000:]}")
    return ctypes.CDLL(str(so))


def launch(lib, suffix, mats, *, wide, part=0, power=1, infos=None, lda=None):
    """Run a kernel on the column-major matrices ``mats`` (count, n, n); (out (count, 2), flagged count)."""
    count, n = mats.shape[0], mats.shape[1]
    lda = n if lda is None else lda
    store = np.zeros((count, n, lda), _DTYPES[suffix])  # store[p, j, i]: column j, row i (column-major, ld lda)
    store[:, :, :n] = np.swapaxes(mats, 1, 2)
    ptrs = np.array([store[p].ctypes.data for p in range(count)], np.uint64)
    info = np.zeros(count, np.int32) if infos is None else np.asarray(infos, np.int32)
    out = np.full((count, 2), -1.0)
    flagged = np.zeros(1, np.uint64)
    name = ("cumath_solver_pivots_wide_" if wide else "cumath_solver_pivots_") + suffix
    fn = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    if wide:
        grid, block = count, _pivots.WIDE
    else:
        grid, block = -(-count // (_pivots.NARROW_BLOCK // 32)), _pivots.NARROW_BLOCK
    eps = float(np.finfo(_DTYPES[suffix]).eps)
    lib.cumath_launch(ctypes.c_void_p(fn), grid, block, ctypes.c_void_p(ptrs.ctypes.data), ctypes.c_longlong(lda),
                      n, count, ctypes.c_void_p(info.ctypes.data), part, power, ctypes.c_double(eps),
                      ctypes.c_void_p(out.ctypes.data), ctypes.c_void_p(flagged.ctypes.data))
    return out, int(flagged[0])


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
    out, flagged = launch(lib, suffix, mats, wide=True, lda=n + 3)
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
        out, flagged = launch(lib, "d", mats, wide=True)
        assert flagged == 1, (i, j)
        assert np.isnan(out[1]).all(), (i, j)
        np.testing.assert_allclose(out[[0, 2]], expected(mats)[[0, 2]], rtol=1e-12)


def test_wide_kernel_reads_the_triangle_of_a_cholesky_factor(lib):
    rng = np.random.default_rng(7)
    n = 300
    mats = good(rng, 1, n, np.float32)
    mats[0, 3, n - 2] = np.nan  # above the diagonal: not part of a lower factor
    assert launch(lib, "s", mats, wide=True, part=_pivots.PART["L"], power=2)[1] == 0
    assert launch(lib, "s", mats, wide=True, part=_pivots.PART["U"], power=2)[1] == 1
    assert launch(lib, "s", mats, wide=True, part=_pivots.PART["lu"])[1] == 1


@pytest.mark.parametrize("wide", [False, True])
def test_kernels_flag_tiny_pivots_and_failed_factorizations(lib, wide):
    rng = np.random.default_rng(3)
    n = 270 if wide else 9
    mats = good(rng, 6, n, np.float64)
    mats[2, n - 1, n - 1] = 1e-20 * n  # lo / hi about 1e-20 (the order-1e-16 precision)
    out, flagged = launch(lib, "d", mats, wide=wide)
    assert flagged == 1
    np.testing.assert_allclose(out, expected(mats), rtol=1e-12)
    mats[2, n - 1, n - 1] = 1e-9 * n  # squared (Cholesky): 1e-18, below the precision; LU: 1e-9, above it
    assert launch(lib, "d", mats, wide=wide)[1] == 0
    assert launch(lib, "d", mats, wide=wide, power=2)[1] == 1
    mats[4, 0, 0] = 0.0  # hi == 0 for no system, but lo == 0: the ratio 0 is flagged
    assert launch(lib, "d", mats, wide=wide, power=2)[1] == 2
    infos = [0, 0, 0, 3, 0, -1]
    assert launch(lib, "d", good(rng, 6, n, np.float64), wide=wide, infos=infos)[1] == 2


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
