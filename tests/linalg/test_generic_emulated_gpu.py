"""The GPU code paths of the generic matmul (cuBLAS engine, device, host-to-device and device-to-host executors)
run on the CPU against an emulation: cuBLAS routines written in NumPy on host addresses, CUDA copies as
memmove, "device" operands that are NumPy arrays tagged with device 0. This checks the argument order,
enums, staging and copies of those paths on every CI run; the GPU tests check them against the real library."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import cumath.linalg as L
from cumath._core.frameworks.numpy import from_pointer
from cumath._core.operand import Operand
from cumath.memory import MemoryPointer
from helpers.matrix import random_array, with_layout
from test_generic_reference import assert_matmul_close, matmul_ref, qualifier, qualifiers

_DT = {"S": np.float32, "D": np.float64, "C": np.complex64, "Z": np.complex128}


def _mat(ptr, rows, cols, ld, dtype):
    """The column-major rows x cols matrix at ptr (a writable view)."""
    return from_pointer(ptr, (cols, rows), (ld, 1), np.dtype(dtype).name).T


def _op(m, o):
    return m if o == 0 else (m.T if o == 1 else m.conj().T)


def _scalar(ptr, dtype):
    return from_pointer(ptr, (1,), (1,), np.dtype(dtype).name)[0]


def _sym(a, uplo, herm):
    strict = np.tril(a, -1) if uplo == 0 else np.triu(a, 1)
    other = strict.conj().T if herm else strict.T
    d = np.diag(a).real if herm else np.diag(a)
    return strict + other + np.diag(d)


_FAKE = []  # the FakeCublas of the running test (HostAllocator registers its "device" memory there)


class FakeCublas:
    """cuBLAS's column-major routines in NumPy, called as the engine calls the raw ctypes functions.
    Records the routines called (``calls``), the handle of each call (``call_handles``), the handles created
    and destroyed, and which memory is "device" memory (``device``: allocations of HostAllocator), so that
    the pointer-array routines can check where each of their arguments lives."""

    def __init__(self):
        self.calls = []
        self.call_handles = []
        self.created = []
        self.destroyed = []
        self.device = []  # (lo, hi, buffer) of "device" allocations, kept alive during the test
        self.copies = []  # what each CUDA copy was for
        self.syncs = []  # streams synchronised

    def create(self):
        self.created.append(0x1000 + 16 * len(self.created))
        return self.created[-1]

    def destroy(self, handle):
        assert handle in self.created and handle not in self.destroyed, f"handle {handle:#x} destroyed twice"
        self.destroyed.append(handle)

    def is_device(self, ptr, nbytes=1) -> bool:
        return any(lo <= ptr and ptr + nbytes <= hi for lo, hi, _ in self.device)

    def raw(self, name):
        dtype = _DT[name[6]]
        routine = name[7:].replace("_v2_64", "").replace("_64", "")
        fn = getattr(self, "_" + routine)

        def call(handle, *args):
            assert handle in self.created and handle not in self.destroyed, f"{name} on a dead handle"
            self.calls.append(name)
            self.call_handles.append(handle)
            fn(dtype, *args)
            return 0
        return call

    def _host_array(self, ptr, count, dtype):
        """An array argument cuBLAS reads from host memory (never from the device)."""
        assert ptr and not self.is_device(ptr), "a grouped-batched parameter array must be in host memory"
        return from_pointer(ptr, (count,), (1,), np.dtype(dtype).name).copy()

    def _pointers(self, ptr, count):
        """Aarray, Barray, Carray: device memory holding one device pointer per problem."""
        assert self.is_device(ptr, 8 * count), "a pointer array must be in device memory"
        return [int(p) for p in from_pointer(ptr, (count,), (1,), "int64")]

    def _gemmBatched(self, dt, ta, tb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc, count):
        assert count >= 1
        for pa, pb, pc in zip(*(self._pointers(x, count) for x in (Aarray, Barray, Carray))):
            self._gemm(dt, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc)

    def _gemmGroupedBatched(self, dt, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,
                            group_count, group_size):
        assert dt in (np.float32, np.float64), "grouped-batched exists for S and D only"
        g = int(group_count)
        assert g >= 1
        ops = [self._host_array(x, g, np.int32) for x in (transa, transb)]  # cublasOperation_t: a C enum
        dims = [self._host_array(x, g, np.int64) for x in (m, n, k, lda, ldb, ldc)]
        al, be = self._host_array(alpha, g, dt), self._host_array(beta, g, dt)
        sizes = self._host_array(group_size, g, np.int64)
        assert all(sizes >= 1)
        total = int(sizes.sum())
        pa, pb, pc = (self._pointers(x, total) for x in (Aarray, Barray, Carray))
        scal = np.empty(2, dt)
        p = 0
        for i in range(g):
            scal[:] = al[i], be[i]
            for _ in range(int(sizes[i])):
                self._gemm(dt, int(ops[0][i]), int(ops[1][i]), *(int(d[i]) for d in dims[:3]), scal.ctypes.data,
                           pa[p], int(dims[3][i]), pb[p], int(dims[4][i]), scal.ctypes.data + scal.itemsize, pc[p],
                           int(dims[5][i]))
                p += 1

    def _gemm(self, dt, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        a = _mat(A, m if ta == 0 else k, k if ta == 0 else m, lda, dt)
        b = _mat(B, k if tb == 0 else n, n if tb == 0 else k, ldb, dt)
        c = _mat(C, m, n, ldc, dt)
        res = _scalar(alpha, dt) * (_op(a, ta) @ _op(b, tb))
        be = _scalar(beta, dt)
        c[...] = res + be * c if be != 0 else res

    def _gemmStridedBatched(self, dt, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count):
        item = np.dtype(dt).itemsize
        for i in range(count):
            self._gemm(dt, ta, tb, m, n, k, alpha, A + i * sa * item, lda, B + i * sb * item, ldb, beta,
                       C + i * sc * item, ldc)

    def _symm(self, dt, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc, herm=False):
        ka = m if side == 0 else n
        s = _sym(_mat(A, ka, ka, lda, dt), uplo, herm)
        b, c = _mat(B, m, n, ldb, dt), _mat(C, m, n, ldc, dt)
        res = _scalar(alpha, dt) * (s @ b if side == 0 else b @ s)
        be = _scalar(beta, dt)
        c[...] = res + be * c if be != 0 else res

    def _hemm(self, dt, *args):
        self._symm(dt, *args, herm=True)

    def _trmm(self, dt, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc):
        ka = m if side == 0 else n
        a = _mat(A, ka, ka, lda, dt)
        t = np.tril(a) if uplo == 0 else np.triu(a)
        if diag == 1:
            t = t - np.diag(np.diag(t)) + np.eye(ka)
        t = _op(t, trans)
        b = _mat(B, m, n, ldb, dt).copy()
        _mat(C, m, n, ldc, dt)[...] = _scalar(alpha, dt) * (t @ b if side == 0 else b @ t)

    def _geam(self, dt, ta, tb, m, n, alpha, A, lda, beta, B, ldb, C, ldc):
        al, be = _scalar(alpha, dt), _scalar(beta, dt)
        res = al * _op(_mat(A, m if ta == 0 else n, n if ta == 0 else m, lda, dt), ta)
        if be != 0:
            res = res + be * _op(_mat(B, m if tb == 0 else n, n if tb == 0 else m, ldb, dt), tb)
        _mat(C, m, n, ldc, dt)[...] = res

    def _dgmm(self, dt, mode, m, n, A, lda, x, incx, C, ldc):
        nx = m if mode == 0 else n
        start = x if incx >= 0 else x + (nx - 1) * (-incx) * np.dtype(dt).itemsize
        v = from_pointer(start, (nx,), (incx,), np.dtype(dt).name)
        a = _mat(A, m, n, lda, dt)
        _mat(C, m, n, ldc, dt)[...] = v[:, None] * a if mode == 0 else a * v[None, :]


class HostAllocator:
    """'Device' memory from NumPy buffers."""

    def __init__(self):
        self.live = []

    def memalloc(self, size):
        buf = np.empty(max(1, size), np.uint8)
        self.live.append(buf)
        if _FAKE:
            _FAKE[-1].device.append((buf.ctypes.data, buf.ctypes.data + buf.nbytes, buf))
        return MemoryPointer(buf.ctypes.data, size, lambda: None)


@pytest.fixture
def emulated(monkeypatch):
    """Patch cuBLAS, the CUDA copies and the device checks; returns the fake library (it records calls)."""
    yield from emulation(monkeypatch)


def emulation(monkeypatch):
    """The body of the ``emulated`` fixture (other test modules make their fixture from it)."""
    from cumath._core import cuda
    from cumath.linalg._backends import cublas as engine_mod

    fake = FakeCublas()
    lib = engine_mod.cublas
    monkeypatch.setattr(lib, "raw", fake.raw)
    monkeypatch.setattr(lib, "cublasCreate_v2", fake.create)
    monkeypatch.setattr(lib, "cublasDestroy_v2", fake.destroy)
    monkeypatch.setattr(lib, "cublasSetPointerMode_v2", lambda h, m: None)
    monkeypatch.setattr(lib, "cublasSetStream_v2", lambda h, s: None)
    monkeypatch.setattr(lib, "cublasGetVersion_v2", lambda h: 130102)
    monkeypatch.setattr(engine_mod, "set_device", lambda d: None)
    monkeypatch.setattr(engine_mod.cudart, "cudaMemsetAsync",
                        lambda ptr, value, count, stream: ctypes.memset(ptr, value, count))

    def copy(dst, src, n, kind, stream, what=""):
        fake.copies.append(what)
        ctypes.memmove(dst, src, n)

    monkeypatch.setattr(cuda, "copy", copy)
    monkeypatch.setattr(cuda, "synchronize", lambda stream: fake.syncs.append(stream))
    monkeypatch.setattr(cuda, "require_device", lambda device_id: None)
    _FAKE.append(fake)
    yield fake
    _FAKE.remove(fake)


def device(x) -> Operand:
    """A NumPy array presented as an operand in GPU 0's memory."""
    item = x.dtype.itemsize
    return Operand(x, x.__array_interface__["data"][0], x.shape, tuple(s // item for s in x.strides), x.dtype.name,
                   0, "numpy")


DTYPES = ("float32", "float64", "complex64", "complex128")
CASES = [("ge", "a", False), ("ge", "a", True), ("sy", "a", False), ("sy", "b", True), ("he", "a", False),
         ("he", "b", True), ("tr", "a", True), ("tr", "b", False), ("dg", "a", False), ("dg", "b", True)]


def _problem(kind, side, conj, dtype, c_mode, layout):
    n, other = 5, 3
    if kind == "ge":
        a0, b0 = random_array((2, 4, n), dtype), random_array((n, other), dtype)
        q = qualifiers(qualifier("ge", conjugate=conj), qualifier("ge", conjugate=not conj))
    else:
        s0 = random_array((n,) if kind == "dg" else (n, n), dtype)
        g0 = random_array((n, other) if side == "a" else (other, n), dtype)
        qs = qualifier(kind, conjugate=conj, uplo="U", diag="U", incx=-1)
        q = qualifiers(qs, None) if side == "a" else qualifiers(None, qs)
        a0, b0 = (s0, g0) if side == "a" else (g0, s0)
    shape = np.matmul(np.zeros(a0.shape if kind != "dg" or side != "a" else (n, n)),
                      np.zeros(b0.shape if kind != "dg" or side != "b" else (n, n))).shape
    c0 = random_array(shape, dtype) if c_mode != "none" else None
    return (with_layout(a0, layout), with_layout(b0, "F"), None if c0 is None else with_layout(c0, layout), q,
            a0, b0, c0)


def _run(kind, side, conj, dtype, c_mode, layout, execution, wrap):
    a, b, c, q, a0, b0, c0 = _problem(kind, side, conj, dtype, c_mode, layout)
    alpha, beta = (1.5 - 0.5j, 0.5 + 1j) if dtype.startswith("complex") else (1.5, 0.5)
    opts = {"inplace": c_mode == "inplace", "allocator": HostAllocator()}
    args = (wrap(a), wrap(b), None if c is None else wrap(c))
    with L.Matmul(*args, alpha=alpha, beta=beta if c is not None else None, qualifiers=q, options=opts,
                  execution=execution) as mm:
        mm.plan()
        for _ in range(2):
            r = mm.execute()
            ref = matmul_ref(a0, b0, c0, alpha, beta, q)
            assert_matmul_close(r, ref, dtype, a0.shape[-1])
            if c_mode == "inplace":
                assert r is c
                c0 = ref.astype(dtype)  # the next execution accumulates onto the result


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind,side,conj", CASES)
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
@pytest.mark.parametrize("layout", ["C", "step"])
def test_device_operands_on_cublas(emulated, dtype, kind, side, conj, c_mode, layout):
    _run(kind, side, conj, dtype, c_mode, layout, None, device)
    assert emulated.calls


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("kind,side,conj", CASES)
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
@pytest.mark.parametrize("layout", ["C", "permuted", "step"])
def test_host_operands_staged_to_cublas(emulated, dtype, kind, side, conj, c_mode, layout):
    _run(kind, side, conj, dtype, c_mode, layout, "cuda", lambda x: x)
    assert emulated.calls


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("kind,side,conj", CASES[::2])
@pytest.mark.parametrize("c_mode", ["none", "c", "inplace"])
def test_device_operands_staged_to_the_cpu(emulated, dtype, kind, side, conj, c_mode):
    _run(kind, side, conj, dtype, c_mode, "step", "cpu", device)
    assert not emulated.calls


def test_zero_k_and_batches_on_cublas(emulated):
    a, b = np.ones((3, 2, 0)), np.ones((0, 4))
    with L.Matmul(device(a), device(b), options={"allocator": HostAllocator()}) as mm:
        mm.plan()
        np.testing.assert_array_equal(mm.execute(), np.zeros((3, 2, 4)))
    a0, b0 = random_array((4, 3, 5), "float32"), random_array((4, 5, 2), "float32")
    with L.Matmul(device(a0), device(b0), options={"allocator": HostAllocator()}) as mm:
        mm.plan()
        assert [s.routine for s in mm.layout.steps] == ["gemm_batched"]
        assert_matmul_close(mm.execute(), matmul_ref(a0, b0), "float32", 5)
    assert "cublasSgemmStridedBatched_64" in emulated.calls


class FailingAllocator(HostAllocator):
    """HostAllocator that refuses its n-th allocation and counts the buffers given back."""

    def __init__(self, fail_at: int):
        super().__init__()
        self.calls, self.fail_at, self.freed = 0, fail_at, 0

    def memalloc(self, size):
        self.calls += 1
        if self.calls == self.fail_at:
            raise MemoryError("no device memory")
        ptr = super().memalloc(size)
        return MemoryPointer(ptr.device_ptr, size, self._count_free)

    def _count_free(self):
        self.freed += 1


@pytest.mark.parametrize("where", ["device", "host"])
def test_failed_plan_frees_the_handle_and_the_buffers(emulated, where):
    a0, b0, c0 = random_array((4, 4), "float64"), random_array((4, 3), "float64"), random_array((4, 3), "float64")
    q = qualifiers(qualifier("tr"), None)  # trmm with c: a workspace on the GPU (and staging mirrors from the host)
    wrap, execution = (device, None) if where == "device" else ((lambda x: x), "cuda")
    allocator = FailingAllocator(fail_at=1 if where == "device" else 3)
    mm = L.Matmul(wrap(a0), wrap(b0), wrap(c0), beta=0.5, qualifiers=q, options={"allocator": allocator},
                  execution=execution)
    try:
        with pytest.raises(MemoryError):
            mm.plan()
        assert emulated.destroyed == emulated.created and len(emulated.created) == 1  # the failed plan's handle
        assert allocator.freed == allocator.calls - 1  # every buffer made before the failure
        with pytest.raises(L.InvalidMatmulState, match="plan"):
            mm.execute()
        allocator.fail_at = 0
        mm.plan()  # planning again works
        assert_matmul_close(mm.execute(), matmul_ref(a0, b0, c0, 1.0, 0.5, q), "float64", 4)
    finally:
        mm.free()
    assert emulated.destroyed == emulated.created
