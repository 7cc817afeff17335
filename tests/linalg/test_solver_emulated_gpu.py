"""The GPU code paths of the dense direct solver (the cuSOLVER and batched engines, the device, host-to-device
and device-to-host executors) run on the CPU against an emulation: cuSOLVER's and cuBLAS's routines written
with SciPy's LAPACK on host addresses, CUDA copies as memmove, "device" operands that are NumPy arrays tagged
with device 0, "device" memory from NumPy buffers that the fake library knows. This checks the argument order,
enums, pointer arrays, staging and copies of those paths on every CI run; the GPU tests check them against the
real libraries."""

from __future__ import annotations

import ctypes
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("scipy")
import scipy.linalg.lapack as sl  # noqa: E402

from cumath._core.frameworks.numpy import from_pointer  # noqa: E402
from cumath.config import plan_cache  # noqa: E402
from cumath.linalg._solver import DirectSolver, IllConditionedWarning, SingularMatrixError, direct_solver  # noqa: E402
from helpers.matrix import random_array, with_layout  # noqa: E402
from test_generic_emulated_gpu import HostAllocator, device  # noqa: E402
from test_generic_emulated_gpu import emulation as cuda_emulation  # noqa: E402
from test_solver_cpu import assert_solves, check_nonfinite, frames_to, near_singular, system  # noqa: E402

CUDA_TYPES = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128"}
_LETTER = {"S": "float32", "D": "float64", "C": "complex64", "Z": "complex128"}
_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _mat(ptr, rows, cols, ld, dtype):
    """The column-major rows x cols matrix at ptr (a writable view)."""
    return from_pointer(ptr, (cols, rows), (ld, 1), dtype).T


def _ints(ptr, count, dtype):
    return from_pointer(ptr, (count,), (1,), dtype)


def _lapack(name, dtype):
    return getattr(sl, _PREFIX[dtype] + name)


class FakeSolverLibs:
    """cuSOLVER's (64-bit API, batched Cholesky) and cuBLAS's (batched LU) routines with SciPy's LAPACK,
    called as the engines call the raw ctypes functions, on top of the generic matmul's CUDA emulation
    (``cuda``: its fake, which knows the "device" memory of HostAllocator, records copies and synchronisations,
    and creates the handles). Records the calls and the streams set, and checks that every workspace, pivot,
    info and pointer array argument lives where the library expects it."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.calls = []
        self.streams = []
        self.params = []
        self.factored = []  # the address of every matrix cusolverDnXgetrf / Xpotrf factorized
        self.drops_nan = False  # a library whose factors need not keep a NaN of a (as cuSOLVER's LU was seen to)
        self.nan_into_l = False  # a batched LU whose factor of a NaN matrix holds it in L alone (off U's diagonal)
        self.created, self.destroyed, self.copies = cuda.created, cuda.destroyed, cuda.copies
        self.cublas_created, self.cublas_destroyed = [], []  # the cuBLAS handles of the LU solve step (trsm)

    def create_cublas(self):
        self.cublas_created.append(0x5000 + 16 * len(self.cublas_created))
        return self.cublas_created[-1]

    def destroy_cublas(self, handle):
        assert handle in self.cublas_created and handle not in self.cublas_destroyed
        self.cublas_destroyed.append(handle)

    # ------------------------------------------------------------------------------------ memory
    def is_device(self, ptr, nbytes=1) -> bool:
        return self.cuda.is_device(ptr, nbytes)

    def _device_ints(self, ptr, count, dtype):
        assert self.is_device(ptr, count * np.dtype(dtype).itemsize), "expected device memory"
        return _ints(ptr, count, dtype)

    def _pointers(self, ptr, count):
        assert self.is_device(ptr, 8 * count), "a pointer array must be in device memory"
        return [int(p) for p in _ints(ptr, count, "uint64")]

    # ------------------------------------------------------------------------------------ kernels
    def get_kernel(self, source, name, arg_types, *, device_id=None):
        """The pivot kernels in NumPy: the wide one reads the diagonals, the scan and the narrow one check every
        entry of the part ``part`` of each factor; where a system is flagged they store the check's epoch as the
        CUDA source does (whose logic test_solver_pivot_kernel.py checks on the CPU)."""
        if name.startswith("cumath_lu_permute_"):
            return self._permute_kernel(source, name, arg_types)
        kinds = ("cumath_solver_pivots_", "cumath_solver_pivots_wide_", "cumath_solver_finite_",
                 "cumath_solver_copy_finite_")
        assert name[:-1] in kinds and name[-1] in "sdcz"
        copy = "copy" in name
        scan, wide = "finite" in name and not copy, "wide" in name
        assert arg_types == ("PPqqQP" if copy else "PqiiiQP" if scan else "PqiiPPidQPPi")
        assert f"CUMATH_PIVOTS({name[-1]}, " in source
        dtype = _LETTER[name[-1].upper()]
        fake = self

        def matrices(aptrs, count, n, lda):
            return [_mat(ptr, n, n, lda, dtype) for ptr in fake._pointers(aptrs, count)]

        def finite(m, part):
            return bool(np.all(np.isfinite(m if part == 0 else np.tril(m) if part == 1 else np.triu(m))))

        class Scan:
            def launch(self, grid, block, shared, stream, aptrs, lda, n, count, part, epoch, bad):
                assert grid[0] == count and 1 <= grid[1] <= max(1, n) and block == 256
                fake.calls.append(name)
                flags = fake._device_ints(bad, count, "uint64")
                for p, m in enumerate(matrices(aptrs, count, n, lda)):
                    if not finite(m, part):
                        flags[p] = epoch

        class Kernel:
            def launch(self, grid, block, shared, stream, aptrs, lda, n, count, info, bad, power, eps, epoch, out,
                       flagged, part):
                assert (grid == count and block == 256) if wide else (grid * block >= 32 * count and block == 128)
                assert bool(bad) == wide
                fake.calls.append(name)
                res = from_pointer(out, (count, 2), (2, 1), "float64")
                assert fake.is_device(out, 16 * count) and fake.is_device(flagged, 8)
                infos = fake._device_ints(info, count, "int32")
                verdict = fake._device_ints(flagged, 1, "uint64")
                flags = fake._device_ints(bad, count, "uint64") if wide else np.zeros(count, np.uint64)
                for p, m in enumerate(matrices(aptrs, count, n, lda)):
                    d = np.abs(np.diagonal(m))
                    ok = bool(np.all(np.isfinite(d))) and flags[p] != epoch and (wide or finite(m, part))
                    res[p] = (d.min(), d.max()) if ok else (np.nan, np.nan)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio = (d.min() / d.max()) ** power
                    if not ok or not ratio >= eps or infos[p] != 0:
                        verdict[0] = epoch

        class Copy:
            """The copy of dense matrices with their scan: src into dst, a flag per system of per entries."""

            def launch(self, grid, block, shared, stream, src, dst, total, per, epoch, bad):
                assert 1 <= grid <= 4096 and block == 256 and total % per == 0
                fake.calls.append(name)
                item = np.dtype(dtype).itemsize
                if dst:  # (null: the flat scan of dense factors alone)
                    assert src + total * item <= dst or dst + total * item <= src, "the copy's ends overlap"
                    ctypes.memmove(dst, src, total * item)
                    fake.calls.append(name + ":copy")
                flags = fake._device_ints(bad, total // per, "uint64")
                values = from_pointer(src, (total // per, per), (per, 1), dtype)
                flags[~np.isfinite(values).all(axis=1)] = epoch

        return Copy() if copy else Scan() if scan else Kernel()

    def _permute_kernel(self, source, name, arg_types):
        """The LU solve step's permutation (``_lu_solve``): getrf's 1-based interchanges composed in order, then
        each column of x gathered (scatter 0) or scattered (1) through the scratch column w, moved as bytes."""
        item = int(name.rsplit("_", 1)[1])
        assert item in (4, 8, 16) and arg_types == "PiPqiPii" and f"CUMATH_PERMUTE({item}, " in source
        fake = self

        class Permute:
            attributes = {}

            def set_attribute(self, attrib, value):
                self.attributes[attrib] = value

            def launch(self, grid, block, shared, stream, ipiv, n, x, ldx, nrhs, w, scatter, piv_shared):
                assert grid == 1 and block == 1024 and shared == (8 if piv_shared else 4) * n
                assert shared <= 48 * 1024 or self.attributes.get(8, 0) >= shared
                assert fake.is_device(w, n * item), "the scratch column must be in device memory"
                fake.calls.append(name)
                perm = np.arange(n)
                for i, p in enumerate(fake._device_ints(ipiv, n, "int64") - 1):
                    assert i <= p < n
                    perm[i], perm[p] = perm[p], perm[i]
                for j in range(nrhs):
                    col = from_pointer(x + j * ldx * item, (n, item), (item, 1), "uint8")
                    if scatter:
                        moved = np.empty_like(col)
                        moved[perm] = col
                    else:
                        moved = col[perm]
                    col[...] = moved

        return Permute()

    # ----------------------------------------------------------------------------------- handles
    def live(self, handle):
        assert handle not in self.destroyed, "a call on a destroyed handle"

    def create_params(self):
        self.params.append(0x9000 + 16 * len(self.params))
        return self.params[-1]

    # ---------------------------------------------------------------------------------- routines
    def raw(self, name):
        fn = getattr(self, "_" + name)

        def call(*args):
            self.calls.append(name)
            return fn(name, *args)

        call.__name__ = name
        return call

    def _cusolverDnXgetrf(self, name, h, params, m, n, dt, A, lda, ipiv, ct, dwork, dsize, hwork, hsize, info):
        self.live(h)
        dtype = CUDA_TYPES[dt]
        assert dt == ct and m == n and lda >= max(1, n)
        assert self.is_device(dwork, max(1, dsize)), "the workspace must be in device memory"
        self.factored.append(A)
        a = _mat(A, n, n, lda, dtype)
        lu, piv, inf = _lapack("getrf", dtype)(a.copy())
        a[...] = np.nan_to_num(lu, nan=1.0) if self.drops_nan else lu
        self._device_ints(ipiv, n, "int64")[:] = piv + 1
        self._device_ints(info, 1, "int32")[0] = inf
        return 0

    def _cusolverDnXgetrs(self, name, h, params, trans, n, nrhs, dta, A, lda, ipiv, dtb, B, ldb, info):
        self.live(h)
        dtype = CUDA_TYPES[dta]
        assert dta == dtb and trans in (0, 1)
        lu = _mat(A, n, n, lda, dtype)
        b = _mat(B, n, nrhs, ldb, dtype)
        piv = self._device_ints(ipiv, n, "int64") - 1
        x, inf = _lapack("getrs", dtype)(lu, piv, b.copy(), trans=trans)
        b[...] = x
        self._device_ints(info, 1, "int32")[0] = inf
        return 0

    def _trsm(self, name, h, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        """cublas<t>trsm_v2_64, left side: op(A) X = alpha B with A's triangle ``uplo`` (0 lower), B overwritten."""
        import scipy.linalg

        dtype = _LETTER[name[len("cublas")]]
        assert side == 0 and trans in (0, 1) and diag in (0, 1) and lda >= max(1, m) and ldb >= max(1, m)
        assert not self.is_device(alpha, 1), "alpha is read on the host (pointer mode HOST)"
        a = _mat(A, m, m, lda, dtype)
        b = _mat(B, m, n, ldb, dtype)
        scale = from_pointer(alpha, (1,), (1,), dtype)[0]
        try:
            b[...] = scipy.linalg.solve_triangular(a, scale * b, trans=trans, lower=uplo == 0,
                                                   unit_diagonal=diag == 1, check_finite=False)
        except np.linalg.LinAlgError:  # a zero on the diagonal: cuBLAS divides by it
            b[...] = np.nan

        return 0

    def _cusolverDnXpotrf(self, name, h, params, uplo, n, dt, A, lda, ct, dwork, dsize, hwork, hsize, info):
        self.live(h)
        dtype = CUDA_TYPES[dt]
        assert self.is_device(dwork, max(1, dsize))
        self.factored.append(A)
        a = _mat(A, n, n, lda, dtype)
        c, inf = _lapack("potrf", dtype)(a.copy(), lower=int(uplo == 0), clean=0)
        a[...] = c
        self._device_ints(info, 1, "int32")[0] = inf
        return 0

    def _cusolverDnXpotrs(self, name, h, params, uplo, n, nrhs, dta, A, lda, dtb, B, ldb, info):
        self.live(h)
        dtype = CUDA_TYPES[dta]
        c = _mat(A, n, n, lda, dtype)
        b = _mat(B, n, nrhs, ldb, dtype)
        x, inf = _lapack("potrs", dtype)(c, b.copy(), lower=int(uplo == 0))
        b[...] = x
        self._device_ints(info, 1, "int32")[0] = inf
        return 0

    def _potrfBatched(self, name, h, uplo, n, Aarray, lda, info, count):
        self.live(h)
        dtype = _LETTER[name[len("cusolverDn")]]
        infos = self._device_ints(info, count, "int32")
        for i, p in enumerate(self._pointers(Aarray, count)):
            a = _mat(p, n, n, lda, dtype)
            c, inf = _lapack("potrf", dtype)(a.copy(), lower=int(uplo == 0), clean=0)
            a[...] = c
            infos[i] = inf
        return 0

    def _potrsBatched(self, name, h, uplo, n, nrhs, Aarray, lda, Barray, ldb, d_info, count):
        self.live(h)
        assert nrhs == 1, "cusolverDn<t>potrsBatched supports nrhs == 1 only"
        dtype = _LETTER[name[len("cusolverDn")]]
        for pa, pb in zip(self._pointers(Aarray, count), self._pointers(Barray, count)):
            b = _mat(pb, n, 1, ldb, dtype)
            x, _ = _lapack("potrs", dtype)(_mat(pa, n, n, lda, dtype), b.copy(), lower=int(uplo == 0))
            b[...] = x
        self._device_ints(d_info, 1, "int32")[0] = 0
        return 0

    def _getrfBatched(self, name, h, n, Aarray, lda, P, info, count):
        self.live(h)
        dtype = _LETTER[name[len("cublas")]]
        piv = self._device_ints(P, n * count, "int32")
        infos = self._device_ints(info, count, "int32")
        for i, p in enumerate(self._pointers(Aarray, count)):
            a = _mat(p, n, n, lda, dtype)
            lu, pv, inf = _lapack("getrf", dtype)(a.copy())
            if self.nan_into_l and not np.all(np.isfinite(lu)) and n > 1:
                lu = np.nan_to_num(lu, nan=1.0, posinf=1.0, neginf=1.0)
                lu[n - 1, 0] = np.nan
            a[...] = lu
            piv[i * n:(i + 1) * n] = pv + 1
            infos[i] = inf
        return 0

    def _getrsBatched(self, name, h, trans, n, nrhs, Aarray, lda, P, Barray, ldb, info, count):
        self.live(h)
        assert not self.is_device(info, 4), "getrsBatched's info is host memory"
        dtype = _LETTER[name[len("cublas")]]
        piv = self._device_ints(P, n * count, "int32")
        for i, (pa, pb) in enumerate(zip(self._pointers(Aarray, count), self._pointers(Barray, count))):
            b = _mat(pb, n, nrhs, ldb, dtype)
            x, _ = _lapack("getrs", dtype)(_mat(pa, n, n, lda, dtype), piv[i * n:(i + 1) * n] - 1, b.copy(),
                                           trans=trans)
            b[...] = x
        _ints(info, 1, "int32")[0] = 0
        return 0


for _p in "SDCZ":  # the batched routines are found by their generic names
    setattr(FakeSolverLibs, f"_cusolverDn{_p}potrfBatched", FakeSolverLibs._potrfBatched)
    setattr(FakeSolverLibs, f"_cusolverDn{_p}potrsBatched", FakeSolverLibs._potrsBatched)
    setattr(FakeSolverLibs, f"_cublas{_p}getrfBatched", FakeSolverLibs._getrfBatched)
    setattr(FakeSolverLibs, f"_cublas{_p}getrsBatched", FakeSolverLibs._getrsBatched)
    setattr(FakeSolverLibs, f"_cublas{_p}trsm_v2_64", FakeSolverLibs._trsm)

def emulation(monkeypatch):
    """The generic matmul's CUDA emulation, plus cuSOLVER and cuBLAS's batched LU; yields the solvers' fake."""
    from cumath._bindings import cublas, cudart, cusolver
    from cumath.linalg._solver._backends import cusolver as cusolver_engine

    cuda = cuda_emulation(monkeypatch)
    fake = FakeSolverLibs(next(cuda))
    monkeypatch.setattr(cusolver, "raw", fake.raw)
    monkeypatch.setattr(cublas, "raw", fake.raw)
    monkeypatch.setattr(cusolver, "cusolverDnCreate", fake.cuda.create)
    monkeypatch.setattr(cusolver, "cusolverDnDestroy", fake.cuda.destroy)
    monkeypatch.setattr(cusolver, "cusolverDnSetStream", lambda h, s: fake.streams.append((h, s)))
    monkeypatch.setattr(cusolver, "cusolverDnCreateParams", fake.create_params)
    monkeypatch.setattr(cusolver, "cusolverDnDestroyParams", lambda p: None)
    monkeypatch.setattr(cusolver, "cusolverDnXgetrf_bufferSize", lambda *a: (256, 0))
    monkeypatch.setattr(cusolver, "cusolverDnXpotrf_bufferSize", lambda *a: (128, 16))
    monkeypatch.setattr(cusolver_engine, "set_device", lambda d: None)
    from cumath.linalg._solver._backends import _pivots

    monkeypatch.setattr(_pivots, "get_kernel", fake.get_kernel)
    from cumath.linalg._solver._backends import _lu_solve

    monkeypatch.setattr(_lu_solve, "get_kernel", fake.get_kernel)
    monkeypatch.setattr(_lu_solve, "_unavailable", [])
    monkeypatch.setattr(cublas, "cublasCreate_v2", fake.create_cublas)
    monkeypatch.setattr(cublas, "cublasDestroy_v2", fake.destroy_cublas)
    monkeypatch.setattr(cudart, "cudaDeviceGetAttribute", lambda attr, dev: 232448 if attr == 97 else 0)

    def copy2d(dst, dpitch, src, spitch, width, height, kind, stream=0):
        fake.copies.append("2d")
        for row in range(height):
            ctypes.memmove(dst + row * dpitch, src + row * spitch, width)

    monkeypatch.setattr(cudart, "cudaMemcpy2DAsync", copy2d)
    yield fake
    next(cuda, None)


@pytest.fixture
def emulated(monkeypatch):
    plan_cache.clear()
    yield from emulation(monkeypatch)
    plan_cache.clear()


# ------------------------------------------------------------------------------------------------ problems
DTYPES = ("float32", "float64", "complex64", "complex128")


MT = {"lu": "general", "cholesky": "hpd"}


def _opts(kind, method, **more):
    return {"matrix_type": MT[kind], "allocator": HostAllocator(), "batch_method": method, **more}


def solve_device_operands(opts, dtype, kind, layout, vector):
    """A batch of three systems of order 7 as "device" operands of ``layout``: factorize, solve, a new b, solve
    again; the caller's a and b are never written."""
    a0, b0, ref = system((3,), 7, 2, dtype, kind, vector)
    a, b = with_layout(a0, layout), with_layout(b0, layout)
    keep_a, keep_b = a.copy(), b.copy()
    with DirectSolver(device(a), device(b), options=opts) as s:
        s.plan()
        s.factorize()
        assert_solves(ref, s.solve(), b0, dtype)
        b1 = random_array(b0.shape, dtype)
        s.reset_operands(b=device(with_layout(b1, layout)))
        assert_solves(ref, s.solve(), b1, dtype)
    np.testing.assert_array_equal(a, keep_a)  # the caller's memory is never written
    np.testing.assert_array_equal(b, keep_b)


# ------------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["lu", "cholesky"])
@pytest.mark.parametrize("method", ["loop", "batched"])
@pytest.mark.parametrize("layout", ["C", "F", "step"])
@pytest.mark.parametrize("vector", [False, True])
def test_device_operands(emulated, dtype, kind, method, layout, vector):
    solve_device_operands(_opts(kind, method), dtype, kind, layout, vector)
    used = set(emulated.calls)
    if method == "batched":
        assert all("Batched" in n or n.startswith("cumath_solver_pivots_") for n in used), used
    else:
        assert all(n.startswith(("cusolverDnX", "cumath_solver_pivots_wide_", "cumath_solver_finite_",
                                 "cumath_solver_copy_finite_", "cumath_lu_permute_")) or
                   (n.startswith("cublas") and n.endswith("trsm_v2_64")) for n in used), used
        # LU: a dense a of the buffer's order (here: C, the batch outermost) is copied and scanned in one pass,
        # another one is copied, then scanned; the plan's buffer (dense, ld n) is scanned as one flat array after
        # the factorization. Cholesky: a copy, and both scans by columns over the triangle
        calls = emulated.calls
        copies = sum(n.startswith("cumath_solver_copy_finite_") and n.endswith(":copy") for n in calls)
        flat = sum(n.startswith("cumath_solver_copy_finite_") and not n.endswith(":copy") for n in calls)
        columns = sum(n.startswith("cumath_solver_finite_") for n in calls)
        want = ((1, 2, 0) if layout == "C" else (0, 2, 0)) if kind == "lu" else (0, 0, 2)
        assert (copies, flat, columns) == want, calls
    # one library handle (cuSOLVER's, or cuBLAS's for the batched LU); the LU solve step of single systems
    # (permutation + trsm) has a cuBLAS handle of its own; all destroyed with the plan
    assert len(set(emulated.created)) + len(emulated.cublas_created) == 1 + (kind == "lu" and method == "loop")
    assert emulated.destroyed == emulated.created and emulated.cublas_destroyed == emulated.cublas_created


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("kind", ["lu", "cholesky"])
@pytest.mark.parametrize("method", ["loop", "batched"])
@pytest.mark.parametrize("layout", ["C", "F", "permuted"])
def test_host_operands_staged_to_the_gpu(emulated, dtype, kind, method, layout):
    a0, b0, ref = system((4,), 5, 3, dtype, kind)
    a, b = with_layout(a0, layout), with_layout(b0, layout)
    x = direct_solver(a, b, options=_opts(kind, method), execution="cuda")
    assert type(x) is np.ndarray and x.shape == b0.shape
    assert_solves(ref, x, b0, dtype)
    assert "solver matrix a" in emulated.copies and "solver b and x" in emulated.copies
    np.testing.assert_array_equal(a, a0)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("kind", ["lu", "cholesky"])
def test_device_operands_on_the_cpu(emulated, dtype, kind):
    a0, b0, ref = system((2,), 6, 2, dtype, kind)
    x = direct_solver(device(a0), device(b0), options={"matrix_type": MT[kind]}, execution="cpu")
    assert_solves(ref, x, b0, dtype)
    assert not emulated.calls


@pytest.mark.parametrize("method", ["loop", "batched"])
@pytest.mark.parametrize("kind", ["lu", "cholesky"])
def test_inplace_on_the_gpu(emulated, method, kind):
    dtype = "float64"
    for layout in ("F", "C"):
        a0, b0, ref = system((2,), 6, 2, dtype, kind)
        a, b = with_layout(a0, layout), with_layout(b0, layout)
        opts = _opts(kind, method, inplace_a=True, inplace_b=True)
        with DirectSolver(device(a), device(b), options=opts) as s:
            s.plan()
            s.factorize()
            x = s.solve()
        assert x is b
        assert_solves(ref, b, b0, dtype)
        # a holds the factors of a itself, in its own layout
        for i in range(2):
            if kind == "lu":
                lu, piv, _ = sl.dgetrf(a0[i])
                np.testing.assert_allclose(a[i], lu, rtol=1e-12, atol=1e-12)
            else:
                low = np.tril(a[i])
                np.testing.assert_allclose(low @ low.T, ref[i], rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("n", [7, 257])
def test_consecutive_stateless_gpu_calls_solve_their_own_systems(emulated, layout, n):
    """A cached plan (one shape, one layout) lent to calls with new matrices factorizes each call's own matrix:
    a sound one, a numerically singular one, then one with a NaN on its diagonal, whose factors hold it."""
    rng = np.random.default_rng(n)
    opts = _opts("lu", "loop")
    hits = plan_cache.stats()["hits"]
    good = rng.standard_normal((n, n)) + n * np.eye(n)
    other = rng.standard_normal((n, n)) + n * np.eye(n)
    bad = good.copy()
    bad[n - 2, n - 2] = np.nan
    ones = np.ones(n)
    for a in (good, other):
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            x = direct_solver(device(with_layout(a, layout)), device(ones.copy()), options=opts)
        np.testing.assert_allclose(a @ x, ones, rtol=1e-10, atol=1e-10)
    with pytest.warns(IllConditionedWarning, match="numerically singular"):
        direct_solver(device(with_layout(near_singular(n), layout)), device(ones.copy()), options=opts)
    with pytest.warns(IllConditionedWarning, match="non-finite pivots"):
        direct_solver(device(with_layout(bad, layout)), device(ones.copy()), options=opts)
    x = direct_solver(device(with_layout(other, layout)), device(ones.copy()), options=opts)
    np.testing.assert_allclose(other @ x, ones, rtol=1e-10, atol=1e-10)
    assert plan_cache.stats()["hits"] - hits == 4  # one plan, lent to every later call


@pytest.mark.parametrize("inplace", [False, True])
def test_a_nan_the_factorization_drops_is_still_reported(emulated, inplace):
    """The single-system engine scans the matrices before the factorization too: a library whose factors do not
    keep a NaN of a (a pivot search that passes over it) cannot hide it; a sound matrix after it is not flagged."""
    emulated.drops_nan = True
    n = 257
    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    bad = a.copy()
    bad[n - 2, n - 2] = np.nan
    opts = _opts("lu", "loop", inplace_a=inplace)
    for m, flagged in ((a, False), (bad, True), (a, False)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            x = direct_solver(device(np.asfortranarray(m)), device(np.ones(n)), options=opts)
        messages = [str(w.message) for w in seen if issubclass(w.category, IllConditionedWarning)]
        assert any("non-finite pivots" in msg for msg in messages) == flagged, messages
        if not flagged:
            np.testing.assert_allclose(a @ x, np.ones(n), rtol=1e-10, atol=1e-10)
    assert "cumath_solver_copy_finite_d" in emulated.calls  # (the scans of a dense a, ld n: flat)


@pytest.mark.parametrize("kind", ["lu", "cholesky"])
def test_inplace_a_factorizes_the_callers_memory(emulated, kind):
    """With inplace_a and a column-major a, the library factorizes a's own memory (no staging copy): each new
    a of a reused plan is factorized where it is, and a NaN in it stays in its factors."""
    n = 257
    rng = np.random.default_rng(3)
    opts = _opts(kind, "loop", inplace_a=True)
    mats = []
    for k in range(3):
        m = rng.standard_normal((n, n))
        m = m @ m.T + n * np.eye(n) if kind == "cholesky" else m + n * np.eye(n)
        mats.append(np.asfortranarray(m))
    mats[2][n - 2, n - 2] = np.nan
    keep = [m.copy() for m in mats]
    with DirectSolver(device(mats[0]), device(np.ones(n)), options=opts) as s:
        s.plan()
        for k, m in enumerate(mats):
            if k:
                s.reset_operands(a=device(m))
            before = len(emulated.factored)
            if k == 2:
                with pytest.warns(IllConditionedWarning, match="non-finite pivots"):
                    s.factorize()
            else:
                s.factorize()
            assert emulated.factored[before:] == [m.__array_interface__["data"][0]]
            if kind == "lu":
                np.testing.assert_array_equal(m, sl.dgetrf(keep[k])[0])
            else:
                np.testing.assert_array_equal(np.tril(m), np.tril(sl.dpotrf(keep[k], lower=1, clean=0)[0]))
            if k < 2:
                x = s.solve()
                np.testing.assert_allclose(keep[k] @ x, np.ones(n), rtol=1e-10, atol=1e-10)
    assert int(np.sum(~np.isfinite(mats[2]))) >= 1


def test_singular_system_of_a_gpu_batch(emulated):
    a = np.stack([np.eye(4) + 0.1, np.ones((4, 4)), np.eye(4)])
    for method in ("loop", "batched"):
        with pytest.raises(SingularMatrixError, match=r"a\[1\] is singular") as err:
            direct_solver(device(a), device(np.ones((3, 4))), options=_opts("lu", method))
        assert err.value.problem == (1,) and isinstance(err.value, np.linalg.LinAlgError)
    with pytest.raises(SingularMatrixError, match="not positive definite"):
        direct_solver(device(-np.eye(3)), device(np.ones(3)), options=_opts("cholesky", "loop"))


def test_pointer_arrays_upload_only_when_addresses_change(emulated):
    a0, b0, ref = system((5,), 4, 1, "float64")
    with DirectSolver(device(a0), device(b0), options=_opts("lu", "batched")) as s:
        s.plan()
        for _ in range(3):
            s.factorize()
            s.solve()
        # the factor buffer stays; each solve's x is the recycled one (dropped by the caller): one upload each
        assert emulated.copies.count("solver pointer array") == 2
    a0, b0, ref = system((5,), 4, 1, "float64")
    with DirectSolver(device(a0), device(b0), options=_opts("lu", "batched", inplace_a=True, inplace_b=True)) as s:
        s.plan()
        before = emulated.copies.count("solver pointer array")
        for _ in range(3):
            s.factorize()
            s.solve()
        assert emulated.copies.count("solver pointer array") - before == 2  # in place: the same addresses


def test_pointer_arrays_of_alternating_addresses_are_kept_on_the_device(emulated):
    a0, b0, ref = system((6,), 4, 1, "float64")
    b1 = b0 * 3.0
    a_dev, b_dev, b_dev1 = device(a0), device(b0), device(b1)
    with DirectSolver(a_dev, b_dev, options=_opts("lu", "batched", inplace_b=True)) as s:
        s.plan()
        s.factorize()
        for k in range(6):  # b alternates between two arrays: each one's pointer array is built once
            rhs = (b_dev, b_dev1)[k % 2]
            s.reset_operands(b=rhs)
            s.solve()
        assert emulated.copies.count("solver pointer array") == 3  # a's, and one per b
    with DirectSolver(device(a0), device(b0), options=_opts("lu", "batched")) as s:
        s.plan()
        s.factorize()
        kept = [s.solve() for _ in range(8)]  # every result held: new addresses, at most 4 sets kept
        for x in kept:
            assert_solves(ref, x, b0, "float64")


def test_the_callers_cusolver_handle_is_borrowed(emulated):
    a0, b0, ref = system((), 5, 2, "float64")
    with DirectSolver(device(a0), device(b0), options=_opts("lu", "loop", handle=0x7777)) as s:
        s.plan()
        s.factorize()
        assert_solves(ref, s.solve(), b0, "float64")
    assert not emulated.created and not emulated.destroyed
    assert (0x7777, 0) in emulated.streams


def test_explicit_gpu_batch_shares_one_handle(emulated):
    systems = [system((), n, 2, "float64") for n in (3, 5, 8)]
    a = [device(s[0]) for s in systems]
    b = [device(s[1]) for s in systems]
    xs = direct_solver(a, b, options=_opts("lu", "loop"))
    for (a0, b0, ref), x in zip(systems, xs):
        assert_solves(ref, x, b0, "float64")
    assert len(emulated.created) == 1 and emulated.destroyed == emulated.created


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("method", ["loop", "batched"])
def test_ill_conditioned_gpu_system_warns(emulated, layout, method):
    a = with_layout(np.stack([near_singular(6, 1.0), near_singular(6)]), layout)
    with pytest.warns(IllConditionedWarning, match=r"a\[1\] is numerically singular: the smallest pivot .* 1\.0e-20"):
        direct_solver(device(a), device(np.ones((2, 6))), options=_opts("lu", method))
    a[0, 2, 2] = np.nan
    with pytest.warns(IllConditionedWarning, match=r"a\[0\] has non-finite pivots .*\(2 of the 2 systems"):
        direct_solver(device(a), device(np.ones((2, 6))), options=_opts("lu", method))
    wanted = ({"cumath_solver_pivots_d"} if method == "batched"
              else {"cumath_solver_copy_finite_d", "cumath_solver_pivots_wide_d"})
    assert wanted <= set(emulated.calls)


@pytest.mark.parametrize("method", ["loop", "batched"])
def test_a_sound_factorization_reads_back_eight_bytes(emulated, method):
    """The pivot kernel judges the systems on the device: a factorization with nothing to raise or warn about
    copies the 8-byte verdict alone and waits once; the info array and the magnitudes come back (a second wait)
    only for a flagged system."""
    a0, b0, ref = system((6,), 7, 1, "float64")
    with DirectSolver(device(a0), device(b0), options=_opts("lu", method)) as s:
        s.plan()
        s.factorize()
        del emulated.copies[:], emulated.cuda.syncs[:]
        s.factorize()
        assert [c for c in emulated.copies if c.startswith("solver")] == ["solver check"]
        assert len(emulated.cuda.syncs) == 1
        assert_solves(ref, s.solve(), b0, "float64")
        bad = a0.copy()
        bad[4] = near_singular(7)
        s.reset_operands(a=device(bad))
        del emulated.copies[:], emulated.cuda.syncs[:]
        with pytest.warns(IllConditionedWarning, match=r"a\[4\] is numerically singular"):
            s.factorize()
        assert {"solver check", "solver info", "solver pivots"} <= set(emulated.copies)
        assert len(emulated.cuda.syncs) == 2
        s.reset_operands(a=device(a0))  # sound again: the flags of the last check are not read as this one's
        del emulated.copies[:], emulated.cuda.syncs[:]
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            s.factorize()
        assert [c for c in emulated.copies if c.startswith("solver")] == ["solver check"]


def test_batches_solve_without_the_pivot_kernel(emulated, monkeypatch, caplog):
    from cumath.linalg._solver._backends import _pivots

    def no_kernel(*args, **kwargs):
        raise RuntimeError("no NVRTC here")

    monkeypatch.setattr(_pivots, "get_kernel", no_kernel)
    monkeypatch.setattr(_pivots, "_unavailable", [])
    a0, b0, ref = system((8,), 5, 2, "float32")
    with caplog.at_level("WARNING", logger="cumath"):
        for _ in range(2):
            assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts("lu", "batched")), b0, "float32")
            plan_cache.clear()
    assert caplog.text.count("the pivot check of GPU solves is off") == 1
    a1, b1, ref1 = system((3,), 6, 1, "float64")  # the single-system engine copies the diagonals instead
    assert_solves(ref1, direct_solver(device(a1), device(b1), options=_opts("lu", "loop")), b1, "float64")
    assert "2d" in emulated.copies
    bad = a1.copy()
    bad[1] = 0.0
    with pytest.raises(SingularMatrixError):
        direct_solver(device(bad), device(b1), options=_opts("lu", "loop"))


def test_the_pivot_kernel_compiles():
    """The CUDA source of the pivot kernel compiles with NVRTC for the H200 (sm_90) on this machine."""
    from cumath._core import jit
    from cumath.linalg._solver._backends import _pivots

    try:
        art = jit.compile_source(_pivots.PIVOTS_SOURCE, cc=90, name="pivots.cu", what="the pivot kernel")
    except Exception as exc:  # noqa: BLE001 - no NVRTC in this environment
        pytest.skip(f"NVRTC is not usable here: {exc}")
    assert art.kind in ("cubin", "ptx") and len(art.data) > 1000


def test_the_lu_permutation_kernel_compiles():
    """The CUDA source of the LU solve step's permutation compiles with NVRTC for sm_90 (where NVRTC is here)."""
    from cumath._core import jit
    from cumath.linalg._solver._backends import _lu_solve

    try:
        art = jit.compile_source(_lu_solve.PERMUTE_SOURCE, cc=90, name="lu_permute.cu", what="the permutation")
    except Exception as exc:  # noqa: BLE001 - no NVRTC in this environment
        pytest.skip(f"NVRTC is not usable here: {exc}")
    assert art.kind in ("cubin", "ptx") and len(art.data) > 1000


def test_lu_solve_step_keeps_getrs_where_the_permutation_does_not_fit(emulated, monkeypatch, caplog):
    """Orders whose permutation does not fit the device's shared memory (and CUMATH_SOLVER_KERNEL=0) solve with
    getrs; the solutions are the same."""
    from cumath._bindings import cudart

    a0, b0, ref = system((), 9, 2, "float64")
    monkeypatch.setattr(cudart, "cudaDeviceGetAttribute", lambda attr, dev: 4 * 9 - 1)
    assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts("lu", "loop")), b0, "float64")
    assert "cusolverDnXgetrs" in emulated.calls and not any(c.startswith("cumath_lu_permute") for c in emulated.calls)
    plan_cache.clear()
    emulated.calls.clear()
    monkeypatch.setattr(cudart, "cudaDeviceGetAttribute", lambda attr, dev: 4 * 9)  # the pivots in device memory
    assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts("lu", "loop")), b0, "float64")
    assert "cumath_lu_permute_8" in emulated.calls and "cusolverDnXgetrs" not in emulated.calls
    plan_cache.clear()
    emulated.calls.clear()
    monkeypatch.setenv("CUMATH_SOLVER_KERNEL", "0")
    assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts("lu", "loop")), b0, "float64")
    assert "cusolverDnXgetrs" in emulated.calls


def test_cached_gpu_call_reaches_the_library_within_four_frames(emulated, monkeypatch):
    import cumath.linalg._solver._functions as F
    from cumath._bindings import cublas, cusolver

    seen = []
    raw = emulated.raw

    def traced(name):
        fn = raw(name)

        def call(*args):
            seen.append(frames_to(F.direct_solver, sys._getframe(1)))
            return fn(*args)

        call.__name__ = name
        return call

    monkeypatch.setattr(cusolver, "raw", traced)
    monkeypatch.setattr(cublas, "raw", traced)
    a0, b0, ref = system((), 6, 1, "float64")
    for method in ("loop", "batched"):
        plan_cache.clear()
        seen.clear()
        for _ in range(3):
            assert_solves(ref, direct_solver(device(a0), device(b0), options=_opts("lu", method)), b0, "float64")
        assert len(seen) == (9 if method == "loop" else 6)  # loop: getrf and two trsm (the solve step) a call
        for frames in seen[2:]:
            assert len(frames) <= 4, frames


@pytest.mark.parametrize("method", ["loop", "batched"])
@pytest.mark.parametrize("n", [5, 33])
def test_non_finite_entries_anywhere_warn_as_on_the_cpu(emulated, method, n):
    """The cases of the CPU engine's test (NaN and inf on, below and above the diagonal; a Cholesky NaN where
    LAPACK's potrf stops; the triangle a Cholesky factor never reads) on both GPU engines: the same warning."""
    def solve(a, b, kind):
        return direct_solver(device(a), device(b), options=_opts(kind, method))
    check_nonfinite(solve, n)


def test_a_nan_the_batched_lu_moves_into_l_is_reported(emulated):
    """A batched LU whose factor holds the NaN of a only in L (U's diagonal finite): the narrow pivot kernel reads
    every entry of the factor, so the system is still reported; a sound batch after it is not."""
    emulated.nan_into_l = True
    a, b, ref = system((3,), 8, 1, "float64")
    bad = a.copy()
    bad[1, 0, 0] = np.nan
    with pytest.warns(IllConditionedWarning, match=r"a\[1\] has non-finite pivots"):
        direct_solver(device(bad), device(b), options=_opts("lu", "batched"))
    assert "cumath_solver_pivots_d" in emulated.calls
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        assert_solves(ref, direct_solver(device(a), device(b), options=_opts("lu", "batched")), b, "float64")


@pytest.mark.parametrize("ld_extra, flat", [(0, True), (3, False)])
def test_scans_of_a_factorized_in_place(emulated, ld_extra, flat):
    """With inplace_a the caller's column-major a is scanned where it is: as one flat array where its leading
    dimension is n, by columns through the pointer array where it is larger; a NaN is reported either way, and
    entries between the columns (rows n.. of a larger array) are never read as a's."""
    emulated.drops_nan = True
    n = 67
    rng = np.random.default_rng(11)
    a0 = rng.standard_normal((n, n)) + n * np.eye(n)
    for bad, flagged in ((False, False), (True, True)):
        store = np.asfortranarray(np.full((n + ld_extra, n), np.nan))
        a = store[:n]
        a[...] = a0
        if bad:
            a[3, n - 5] = np.nan
        del emulated.calls[:]
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            direct_solver(device(a), device(np.ones(n)), options=_opts("lu", "loop", inplace_a=True))
        messages = [str(w.message) for w in seen if issubclass(w.category, IllConditionedWarning)]
        assert any("non-finite pivots" in msg for msg in messages) == flagged, messages
        kinds = {"cumath_solver_copy_finite_d", "cumath_solver_finite_d"} & set(emulated.calls)
        assert kinds == {"cumath_solver_copy_finite_d" if flat else "cumath_solver_finite_d"}, emulated.calls
        assert not any(c.endswith(":copy") for c in emulated.calls)  # (in place: nothing is copied)


@pytest.mark.parametrize("kind, method", [("lu", "loop"), ("cholesky", "loop"), ("cholesky", "batched")])
def test_deterministic_option_sets_the_mode_of_created_handles_only(emulated, monkeypatch, kind, method):
    """deterministic=False asks cuSOLVER for its non-deterministic algorithms on each handle the plan creates
    (ALLOW_NON_DETERMINISTIC_RESULTS = 2); the default leaves cuSOLVER's deterministic default alone, and the
    caller's handle is never changed but for its stream. Plans of either mode are cached apart."""
    from cumath._bindings import cusolver

    modes = []
    monkeypatch.setattr(cusolver, "cusolverDnSetDeterministicMode", lambda h, mode: modes.append((h, mode)))
    a0, b0, ref = system((2,), 5, 1, "float64", kind)
    for opts, want in ((_opts(kind, method), []), (_opts(kind, method, deterministic=False), [2]),
                       (_opts(kind, method, deterministic=False, handle=0x7777), [])):
        del modes[:], emulated.created[:]
        assert_solves(ref, direct_solver(device(a0), device(b0), options=opts), b0, "float64")
        assert [m for _, m in modes] == want
        assert {h for h, _ in modes} <= set(emulated.created)
