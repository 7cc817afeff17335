"""The GPU code paths of cumath.fft (the device, host-to-device and device-to-host executors and the cuFFT
backend) run on the CPU against an emulation: cuFFT's advanced-layout plans executed with NumPy on host
addresses, CUDA copies as memmove, "device" operands that are NumPy arrays tagged with GPU 0. This checks the
layouts, copies, staging mirrors and workspace handling of those paths on every CI run; the GPU tests check
them against the real library."""

from __future__ import annotations

import ctypes
import math
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import cumath.fft as F
from cumath._core import cuda
from cumath._core.frameworks.numpy import from_pointer
from cumath._core.operand import Operand
from cumath.config import plan_cache
from cumath.memory import MemoryPointer
from helpers.matrix import LAYOUTS, hermitian_array, is_dense, memory_order, random_array, strides_of, with_layout
from helpers.reference import assert_close, fft_ref, ifft_ref, irfft_ref, rfft_ref


class FakeCufft:
    """cuFFT's plans (cufftXtMakePlanMany's advanced layouts) and cufftXtExec in NumPy. Records the plans
    (``plans``), the pointers each execution read and wrote (``execs``), the streams set and the work areas;
    destroys C2R inputs as cuFFT may, and refuses R2C inputs not aligned to their complex type."""

    def __init__(self, device_memory):
        self.plans, self.destroyed, self.execs, self.streams, self.work_areas = {}, [], [], [], []
        self.device_memory = device_memory  # the DeviceMemory: where staged buffers live
        from cumath.fft._backends.cufft import DATA_TYPES

        self.dtypes = {int(v): k for k, v in DATA_TYPES.items()}

    def create(self):
        handle = 0x100 + 16 * (len(self.plans) + len(self.destroyed))
        self.plans[handle] = None
        return handle

    def destroy(self, handle):
        assert handle in self.plans, f"plan {handle:#x} destroyed twice"
        self.destroyed.append(self.plans.pop(handle))

    def make_plan(self, handle, rank, n, inembed, istride, idist, itype, onembed, ostride, odist, otype, batch,
                  exectype):
        assert self.plans[handle] is None
        self.plans[handle] = SimpleNamespace(n=list(n), ins=(list(inembed), istride, idist, self.dtypes[int(itype)]),
                                             outs=(list(onembed), ostride, odist, self.dtypes[int(otype)]),
                                             batch=batch)
        return 4096  # the workspace size

    def _view(self, ptr, layout, extents, batch):
        embed, stride, dist, dtype = layout
        strides = [stride * math.prod(embed[k + 1:]) for k in range(len(extents))]
        assert all(e <= m for e, m in zip(extents[1:], embed[1:])), (extents, embed)
        return from_pointer(ptr, (batch, *extents), (dist, *strides), dtype)

    def execute(self, handle, idata, odata, direction):
        p = self.plans[handle]
        assert p is not None, "execution of a destroyed or unplanned plan"
        in_dtype, out_dtype = p.ins[3], p.outs[3]
        n = p.n
        in_ext, out_ext = list(n), list(n)
        if in_dtype.startswith("float"):  # R2C
            out_ext[-1] = n[-1] // 2 + 1
            assert idata % (2 * np.dtype(in_dtype).itemsize) == 0, "an R2C input not aligned to its complex type"
        elif out_dtype.startswith("float"):  # C2R
            in_ext[-1] = n[-1] // 2 + 1
        x = self._view(idata, p.ins, in_ext, p.batch)
        y = self._view(odata, p.outs, out_ext, p.batch)
        axes = tuple(range(1, len(n) + 1))
        a = x.astype(np.complex128 if in_dtype.startswith("complex") else np.float64)
        if in_dtype.startswith("float"):
            res = np.fft.rfftn(a, axes=axes)
        elif out_dtype.startswith("float"):
            res = np.fft.irfftn(a, s=n, axes=axes) * math.prod(n)
            if idata != odata:
                x[...] = np.nan  # cuFFT's C2R may overwrite its input
        elif direction < 0:
            res = np.fft.fftn(a, axes=axes)
        else:
            res = np.fft.ifftn(a, axes=axes) * math.prod(n)
        y[...] = res.astype(out_dtype)
        self.execs.append((idata, odata))
        return 0


class DeviceMemory:
    """'Device' memory: ctypes buffers, recorded so that a test can tell staging buffers from the caller's
    arrays (an allocator: ``memalloc``)."""

    def __init__(self):
        self.blocks = []

    def memalloc(self, size):
        block = (ctypes.c_char * max(1, size))()
        self.blocks.append(block)
        return MemoryPointer(ctypes.addressof(block), size, lambda: None)

    def holds(self, ptr) -> bool:
        return any(ctypes.addressof(b) <= ptr < ctypes.addressof(b) + ctypes.sizeof(b) for b in self.blocks)


@pytest.fixture
def emulated(monkeypatch):
    from cumath._bindings import cufft
    from cumath.fft._backends import cufft as backend

    alloc = DeviceMemory()
    fake = FakeCufft(alloc)
    monkeypatch.setattr(cufft, "cufftCreate", fake.create)
    monkeypatch.setattr(cufft, "cufftDestroy", fake.destroy)
    monkeypatch.setattr(cufft, "cufftSetAutoAllocation", lambda h, flag: None)
    monkeypatch.setattr(cufft, "cufftXtMakePlanMany", fake.make_plan)
    monkeypatch.setattr(cufft, "cufftSetStream", lambda h, s: fake.streams.append((h, s)))
    monkeypatch.setattr(cufft, "cufftSetWorkArea", lambda h, ptr: fake.work_areas.append((h, ptr)))
    monkeypatch.setattr(cufft, "_L", SimpleNamespace(cufftXtExec=fake.execute))
    monkeypatch.setattr(backend, "set_device", lambda d: None)
    monkeypatch.setattr(backend, "PATIENT_JIT", False)
    monkeypatch.delenv("CUMATH_CUFFT_PATIENT_JIT", raising=False)
    copies = []

    def copy(dst, src, nbytes, kind, stream, what=""):
        copies.append((what, kind))
        ctypes.memmove(dst, src, nbytes)

    monkeypatch.setattr(cuda, "copy", copy)
    monkeypatch.setattr(cuda, "synchronize", lambda stream: None)
    monkeypatch.setattr(cuda, "set_device", lambda d: None)
    monkeypatch.setattr(cuda, "require_device", lambda d: None)
    fake.copies = copies
    fake.alloc = alloc
    plan_cache.clear()
    yield fake
    plan_cache.clear()


def device(x) -> Operand:
    """A NumPy array presented as an operand in GPU 0's memory."""
    return Operand(x, x.__array_interface__["data"][0], x.shape, strides_of(x), x.dtype.name, 0, "numpy")


CASES = [((16,), None), ((6, 10), None), ((5, 12), (1,)), ((8, 6), (0,)), ((4, 6, 8), (1, 2)), ((3, 4, 10), (0, 2))]
CASE_IDS = ["16", "6x10", "5x12-axes1", "8x6-axes0", "4x6x8-axes12", "3x4x10-axes02"]
cases = pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
layouts = pytest.mark.parametrize("layout", LAYOUTS)


def _problem(kind, shape, axes, layout, dtype="complex128"):
    if kind == "C2C":
        values = random_array(shape, dtype)
    elif kind == "R2C":
        values = random_array(shape, dtype.replace("complex128", "float64").replace("complex64", "float32"))
    else:
        values = hermitian_array(shape, dtype, axes)
    ref = {"C2C": fft_ref, "R2C": rfft_ref, "C2R": irfft_ref}[kind](values, axes)
    return values, with_layout(values, layout), ref


def _options(emulated, kind, **more):
    return dict({"fft_type": kind, "allocator": emulated.alloc}, **more)


@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
@pytest.mark.parametrize("result_layout", ["optimized", "natural"])
@layouts
@cases
def test_device_operands_on_cufft(emulated, kind, result_layout, layout, shape, axes):
    values, x, ref = _problem(kind, shape, axes, layout)
    before = x.copy()
    with F.FFT(device(x), axes=axes, options=_options(emulated, kind, result_layout=result_layout)) as f:
        f.plan()
        for _ in range(2):
            y = f.execute()
            assert isinstance(y, np.ndarray) and is_dense(y)
            assert_close(y, ref, y.dtype.name)
            if result_layout == "natural":
                assert memory_order(y) == memory_order(x)
        np.testing.assert_array_equal(x, before)  # cuFFT never destroyed the caller's operand
        if kind == "C2C":
            assert_close(f.execute(direction="inverse"), ifft_ref(values, axes), "complex128")
    assert len(emulated.execs) == (3 if kind == "C2C" else 2)
    assert not emulated.plans or all(p is None for p in emulated.plans.values())  # every plan destroyed


@layouts
@pytest.mark.parametrize("shape,axes", CASES[:4], ids=CASE_IDS[:4])
def test_device_operands_in_place(emulated, layout, shape, axes):
    values, x, ref = _problem("C2C", shape, axes, layout)
    with F.FFT(device(x), axes=axes, options=_options(emulated, "C2C", inplace=True)) as f:
        f.plan()
        assert f.execute() is x
        assert_close(x, ref, "complex128")


def test_c2r_overwrite_input_reads_the_operand_itself(emulated):
    values, x, ref = _problem("C2R", (4, 9), (1,), "C")
    with F.FFT(device(x), axes=(1,), options=_options(emulated, "C2R", overwrite_input=True)) as f:
        f.plan()
        assert_close(f.execute(), ref, "float64")
    assert emulated.execs[0][0] == x.ctypes.data  # no copy: cuFFT read (and may have destroyed) the operand
    with F.FFT(device(values.copy()), axes=(1,), options=_options(emulated, "C2R")) as f:
        f.plan()
        f.execute()
    assert emulated.execs[1][0] != x.ctypes.data


def test_r2c_views_not_aligned_to_the_complex_type_are_copied(emulated):
    buf = random_array((4, 17), "float64")
    x = buf[:, 1:]  # 8 bytes past the complex128 alignment
    with F.FFT(device(x), options=_options(emulated, "R2C")) as f:
        f.plan()
        assert_close(f.execute(), rfft_ref(x), "complex128")
        aligned = random_array((4, 17), "float64")[:, :16]
        f.reset_operand(device(aligned))
        assert_close(f.execute(), rfft_ref(aligned), "complex128")


def test_workspace_streams_and_release(emulated, monkeypatch):
    import contextlib

    from cumath._core.frameworks import numpy as numpy_adapter

    contexts = []  # work on a stream the caller names runs in the package's context of that stream
    monkeypatch.setattr(numpy_adapter, "stream_context", lambda device_id, stream: contexts.append(stream) or
                        contextlib.nullcontext(), raising=False)
    x = random_array((8, 32), "complex64")
    with F.FFT(device(x), axes=(1,), options=_options(emulated, "C2C", blocking=True)) as f:
        f.plan()
        backend = f._executor.backend
        assert backend.bound is None and backend._ws is None  # the workspace comes with the first execution
        y = f.execute(release_workspace=True)
        assert_close(y, fft_ref(x, (1,)), "complex64", 32)
        assert backend._ws is None and backend.bound is None and len(emulated.work_areas) == 1
        f.execute()
        assert backend._ws is not None and len(emulated.work_areas) == 2
        f.execute()
        assert len(emulated.work_areas) == 2  # attached once per workspace
        f.execute(stream=0)
        f.reset_operand(device(x), stream=7)
        f.execute()
        assert emulated.streams[-1] == (backend.handle, 7) and backend.bound == 7 and contexts == [7]


@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
@layouts
@cases
def test_host_operands_staged_to_cufft(emulated, kind, layout, shape, axes):
    values, x, ref = _problem(kind, shape, axes, layout, "complex64")
    before = x.copy()
    with F.FFT(x, axes=axes, execution="cuda", options=_options(emulated, kind)) as f:
        f.plan()
        assert f.nbytes >= values.nbytes
        y = f.execute()
    assert isinstance(y, np.ndarray) and y.flags.writeable and is_dense(y)
    assert_close(y, ref, y.dtype.name)
    np.testing.assert_array_equal(x, before)
    (i, o), = emulated.execs
    assert emulated.alloc.holds(i) and emulated.alloc.holds(o)  # cuFFT read and wrote the plan's buffers only
    kinds = [k for _, k in emulated.copies]
    assert kinds.count(cuda.H2D) == 1 and kinds.count(cuda.D2H) == 1  # one copy in, one out


@layouts
def test_host_operands_staged_to_cufft_in_place(emulated, layout):
    values, x, ref = _problem("C2C", (6, 10), None, layout)
    opts = _options(emulated, "C2C", inplace=True)
    assert F.fft(x, execution="cuda", options=opts) is x
    assert_close(x, ref, "complex128")
    forward = x.copy()
    assert F.ifft(x, execution="cuda", options=opts) is x  # the cached plan, the other direction
    assert_close(x, ifft_ref(forward), "complex128")
    assert plan_cache.stats()["plans"] == 1


@pytest.mark.parametrize("kind", ["C2C", "R2C", "C2R"])
@layouts
@cases
def test_device_operands_staged_to_the_cpu(emulated, kind, layout, shape, axes):
    values, x, ref = _problem(kind, shape, axes, layout)
    before = x.copy()
    with F.FFT(device(x), axes=axes, execution="cpu", options={"fft_type": kind}) as f:
        f.plan()
        for _ in range(2):
            y = f.execute()
            assert isinstance(y, np.ndarray) and is_dense(y)
            assert_close(y, ref, y.dtype.name)
    np.testing.assert_array_equal(x, before)
    assert not emulated.execs  # the CPU engine ran
    kinds = [k for _, k in emulated.copies]
    assert kinds.count(cuda.D2H) == 2 and kinds.count(cuda.H2D) == 2


@layouts
def test_device_operands_staged_to_the_cpu_in_place(emulated, layout):
    values, x, ref = _problem("C2C", (6, 10), (1,), layout)
    with F.FFT(device(x), axes=(1,), execution="cpu", options={"inplace": True}) as f:
        f.plan()
        assert f.execute() is x
    assert_close(x, ref, "complex128")


def test_the_device_hot_path_calls_cufft_directly(emulated):
    stacks = []
    real = emulated.execute

    def stub(*args):
        frame, stack = sys._getframe(1), []
        while frame is not None:
            stack.append(frame.f_code)
            frame = frame.f_back
        stacks.append(stack)
        return real(*args)

    from cumath._bindings import cufft

    cufft._L.cufftXtExec = stub
    x = random_array((4, 16), "complex64")
    with F.FFT(device(x), axes=(1,), options=_options(emulated, "C2C")) as f:
        f.plan()
        assert_close(f.execute(), fft_ref(x, (1,)), "complex64", 16)
    # at most four Python frames from the call of execute() (included) to the native call: with the compiled
    # method (fast_execute) execute() has no frame, and the count starts below this test's frame
    method = getattr(F.FFT.execute, "__wrapped__", F.FFT.execute).__code__
    start = stacks[0].index(method) + 1 if method in stacks[0] else stacks[0].index(sys._getframe().f_code)
    assert start <= 4


def test_a_failed_staged_plan_frees_its_buffers(emulated, monkeypatch):
    from cumath._bindings import cufft

    def boom(*args):
        raise RuntimeError("planning failed")

    monkeypatch.setattr(cufft, "cufftXtMakePlanMany", boom)
    freed = []
    real = emulated.alloc.memalloc

    def memalloc(size):
        ptr = real(size)
        return MemoryPointer(ptr.device_ptr, size, lambda: freed.append(size))

    monkeypatch.setattr(emulated.alloc, "memalloc", memalloc)
    f = F.FFT(random_array((4, 8), "complex128"), execution="cuda", options=_options(emulated, "C2C"))
    with pytest.raises(RuntimeError, match="planning failed"):
        f.plan()
    assert len(freed) == 2 and not f._planned
    f.free()
