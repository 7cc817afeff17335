"""The GPU engine's own code (bring-up, symmetric heap, staging, padding, plans per direction, in-place symmetric
operands, leak report) run on the CPU: CuPy, NVSHMEM and cuFFTMp are replaced by host stand-ins that keep the
libraries' contracts (symmetric buffers are host memory at an address; a cuFFTMp execution transforms that
memory in place with NumPy, as cuFFTMp's native slab layout on one PE has it). One process, one rank.

Prints ``OK <case>`` per passing case; exits 1 at the first mismatch.
"""

import ctypes
import sys
import types
import warnings

import numpy as np

# -- a CuPy stand-in: "device" arrays are host arrays of a class whose module is cupy

cupy = types.ModuleType("cupy")


class _Ptr:
    def __init__(self, ptr):
        self.ptr = ptr


class ndarray(np.ndarray):
    @property
    def data(self):
        return _Ptr(self.ctypes.data)


ndarray.__module__ = "cupy"


def _over(ptr, shape, dtype, strides=None):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = (ctypes.c_char * max(n, 1)).from_address(ptr)
    arr = np.frombuffer(raw, dtype=np.uint8, count=n).view(dtype)
    arr = np.lib.stride_tricks.as_strided(arr, shape, strides) if strides else arr.reshape(shape)
    return arr.view(ndarray)


def asarray(x):
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None and not isinstance(x, np.ndarray):
        return _over(cai["data"][0], cai["shape"], cai["typestr"], cai["strides"])
    if isinstance(x, ndarray):
        return x
    return np.array(x).view(ndarray)  # a host -> device copy


class _Ctx:
    def __init__(self, *a):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *e):
        return False


cupy.ndarray = ndarray
cupy.asarray = asarray
cupy.asnumpy = lambda x: np.array(x, copy=True).view(np.ndarray)
cupy.cuda = types.SimpleNamespace(Device=_Ctx, ExternalStream=_Ctx,
                                  get_current_stream=lambda: types.SimpleNamespace(ptr=0))
sys.modules["cupy"] = cupy

# -- NVSHMEM and cuFFTMp stand-ins
from cumath._bindings import cudart, cufftmp, nvshmem  # noqa: E402

heap, events = {}, []


def _malloc(nbytes):
    buf = np.zeros(max(int(nbytes), 1), dtype=np.uint8)
    heap[buf.ctypes.data] = buf
    return buf.ctypes.data


nvshmem.available = lambda: True
nvshmem.version = lambda: (3, 4, 0)
nvshmem.get_uniqueid = lambda: bytes(128)
nvshmem.init_with_uniqueid = lambda uid, rank, nranks: events.append(("init", len(uid), rank, nranks))
nvshmem.my_pe, nvshmem.n_pes = (lambda: 0), (lambda: 1)
nvshmem.malloc = _malloc
nvshmem.sync_all_on_stream = lambda stream: events.append(("sync", stream))
nvshmem.free = lambda ptr: heap.pop(ptr)
_status = [2]
nvshmem.init_status = lambda: _status[0]
nvshmem.finalize = lambda: (events.append(("finalize",)), _status.__setitem__(0, 0))
_current = [-1]


def _set_device(d):
    _current[0] = d
    events.append(("device", d))


cudart.cudaSetDevice = _set_device
cudart.cudaGetDeviceCount = lambda: 1  # the bring-up checks the device before it sets it
cudart.cudaGetDevice = lambda: _current[0]

plans = {}
cufftmp.available = lambda: True


def _create():
    plans[len(plans) + 1] = {"calls": ["create"]}
    return len(plans)


def _before_plan(plan, call, **what):
    # cuFFTMp's rule: the communicator, stream and layout are given between cufftCreate and cufftMakePlan*
    p = plans[plan]
    assert "shape" not in p, f"{call} after cufftMakePlan*"
    p["calls"].append(call)
    p.update(what)


cufftmp.create = _create
cufftmp.attach_comm_none = lambda plan: _before_plan(plan, "attach", comm="none")
cufftmp.set_subformat_default = lambda plan, f, i: _before_plan(plan, "subformat", subformat=(int(f), int(i)))
cufftmp.set_distribution = lambda plan, *boxes: _before_plan(plan, "distribution", boxes=boxes)
cufftmp.set_stream = lambda plan, stream: plans[plan]["calls"].append("stream")
cufftmp.destroy = lambda plan: (plans[plan].update(destroyed=True), events.append(("destroy", plan)))


def _make_plan(plan, shape, fft_type):
    p = plans[plan]
    if "attach" in p["calls"]:  # cuFFTMp's plan
        assert p["calls"][:2] == ["create", "attach"], p["calls"]
    else:  # a single-GPU plan of libcufftMp: no communicator, so no subformats and no distribution either
        assert p["calls"] == ["create", "stream"], p["calls"]
        p["single"] = True
    p["calls"].append("make")
    p.update(shape=tuple(shape), type=fft_type)
    return 0


T = cufftmp.cufftType


def _execute(plan, fft_type, ptr, direction):
    p = plans[plan]
    assert (p.get("comm") == "none" or p.get("single")) and not p.get("destroyed") and p["type"] == fft_type
    # cufftExec* has no descriptor: without a subformat or a distribution cuFFTMp returns CUFFT_INVALID_PLAN
    assert p.get("single") or "subformat" in p or "boxes" in p, f"plan without subformats or boxes: {p['calls']}"
    p["runs"] = p.get("runs", 0) + 1
    assert p["calls"].index("stream") < p["calls"].index("make"), f"stream set after planning: {p['calls']}"
    if "subformat" in p:  # one rank: both slabs are the whole array, and the pair is X/Y either way round
        assert sorted(p["subformat"]) == [2, 3], p["subformat"]
    shape = p["shape"]
    if fft_type in (T.CUFFT_C2C, T.CUFFT_Z2Z):
        a = _over(ptr, shape, np.complex64 if fft_type == T.CUFFT_C2C else np.complex128)
        res = np.fft.fftn(a) if direction == -1 else np.fft.ifftn(a) * a.size
        a[...] = res
    elif fft_type in (T.CUFFT_R2C, T.CUFFT_D2Z):
        m = shape[-1] // 2 + 1
        real = _over(ptr, shape[:-1] + (2 * m,), np.float32 if fft_type == T.CUFFT_R2C else np.float64)
        res = np.fft.rfftn(real[..., :shape[-1]])
        _over(ptr, shape[:-1] + (m,), np.complex64 if fft_type == T.CUFFT_R2C else np.complex128)[...] = res
    else:  # C2R / Z2D: shape is the real result's
        m = shape[-1] // 2 + 1
        c = _over(ptr, shape[:-1] + (m,), np.complex64 if fft_type == T.CUFFT_C2R else np.complex128)
        res = np.fft.irfftn(c, s=shape, axes=tuple(range(len(shape)))) * int(np.prod(shape))
        _over(ptr, shape[:-1] + (2 * m,), np.float32 if fft_type == T.CUFFT_C2R else np.float64)[
            ..., :shape[-1]] = res


cufftmp.make_plan = _make_plan
cufftmp.execute = _execute

import cumath.distributed as dist  # noqa: E402
from mpi4py import MPI  # noqa: E402

from cumath.distributed import fft as dfft  # noqa: E402
from cumath.distributed.distribution import Box, Slab  # noqa: E402

dist.initialize(0, MPI.COMM_WORLD, backends=("nvshmem",))
assert events[:2] == [("device", 0), ("init", 128, 0, 1)], events
failures = 0


def check(name, got, ref, tol):
    global failures
    got, ref = np.asarray(got), np.asarray(ref)
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300)) if got.shape == ref.shape else np.inf
    if err < tol:
        print(f"OK {name}", flush=True)
    else:
        print(f"FAIL {name}: shapes {got.shape} {ref.shape}, error {err:.3g}", flush=True)
        failures += 1


rng = np.random.default_rng(0)
for shape in [(6, 5, 4), (7, 9)]:
    for dtype in (np.complex64, np.complex128):
        h = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        x = asarray(h.copy())
        for distribution in (Slab.X, Slab.Y, [Box((0,) * len(shape), shape)] * 2):
            with dfft.FFT(x, distribution=distribution) as f:
                f.plan()
                y = f.execute()
                assert type(y) is ndarray and y.dtype == dtype and not np.shares_memory(y, x)
                check(f"C2C {shape} {np.dtype(dtype).name} {distribution!r}", y, np.fft.fftn(h), 1e-5)
                z = f.execute(direction="inverse")
                check(f"C2C inverse {shape}", z, np.fft.ifftn(h) * h.size, 1e-5)
            assert np.array_equal(x, h), "the operand was written"
        yn = dfft.fft(h, distribution=Slab.X)  # NumPy in: staged, NumPy out
        assert type(yn) is np.ndarray
        check(f"C2C NumPy operand {shape}", yn, np.fft.fftn(h), 1e-5)

# a symmetric operand is transformed where it lies; its plan's inverse takes the same slab
h = (rng.standard_normal((8, 6, 5)) + 1j).astype(np.complex64)
a = dist.allocate_symmetric_memory((8, 6, 5), cupy, dtype=np.complex64)
a[...] = h
n_heap = len(heap)
with dfft.FFT(a, distribution=Slab.X) as f:
    f.plan()
    assert len(heap) == n_heap, "no work buffer for a symmetric operand"
    y = f.execute()
    assert y.data.ptr == a.data.ptr
    check("symmetric in place", a, np.fft.fftn(h), 1e-5)
    f.execute(direction="inverse")
    check("symmetric in place, inverse back", a / h.size, h, 1e-5)
    f.reset_operand(asarray(h.copy()))  # a non-symmetric operand: the staging buffer comes now
    assert len(heap) == n_heap + 1
    check("after reset_operand", f.execute(), np.fft.fftn(h), 1e-5)
dist.free_symmetric_memory(a)
assert len(heap) == 0, heap

# R2C / C2R (padded rows), odd and even last axes
for shape in [(4, 6, 9), (5, 8)]:
    for dtype in (np.float32, np.float64):
        h = rng.standard_normal(shape).astype(dtype)
        y = dfft.rfft(asarray(h.copy()), distribution=Slab.X)
        check(f"R2C {shape} {np.dtype(dtype).name}", y, np.fft.rfftn(h), 1e-5)
        parity = "odd" if shape[-1] % 2 else "even"
        z = dfft.irfft(y, distribution=Slab.X, options={"last_axis_parity": parity})
        assert z.shape == shape and z.dtype == dtype
        check(f"C2R {shape} {np.dtype(dtype).name}", np.asarray(z) / h.size, h, 1e-5)

# one rank: every plan the FFTs ran is a single-GPU plan of libcufftMp (none attached a communicator); with
# CUMATH_CUFFTMP_SINGLE_GPU=0 they are cuFFTMp's (communicator, subformats) and give the same results
ran = [p for p in plans.values() if p.get("runs")]
assert ran and all(p.get("single") for p in ran), [p["calls"] for p in ran if not p.get("single")]
print(f"OK one rank: {len(ran)} single-GPU plans, none attached a communicator", flush=True)
import os  # noqa: E402

os.environ["CUMATH_CUFFTMP_SINGLE_GPU"] = "0"
first = len(plans)
for shape, dtype in (((6, 5, 4), np.complex64), ((4, 6, 9), np.float64)):
    h = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        h = (h + 1j * rng.standard_normal(shape)).astype(dtype)
        with dfft.FFT(asarray(h.copy()), distribution=Slab.Y) as f:
            f.plan()
            check(f"cuFFTMp's plan on one rank {shape}", f.execute(), np.fft.fftn(h), 1e-5)
            check(f"cuFFTMp's plan on one rank {shape} inverse", f.execute(direction="inverse"),
                  np.fft.ifftn(h) * h.size, 1e-5)
    else:
        y = dfft.rfft(asarray(h.copy()), distribution=Slab.X)
        check(f"cuFFTMp's R2C plan on one rank {shape}", y, np.fft.rfftn(h), 1e-5)
        z = dfft.irfft(y, distribution=Slab.X, options={"last_axis_parity": "odd"})
        check(f"cuFFTMp's C2R plan on one rank {shape}", np.asarray(z) / h.size, h, 1e-5)
new_plans = [p for k, p in plans.items() if k > first and p.get("runs")]
assert len(new_plans) == 4 and not any(p.get("single") for p in new_plans), [p["calls"] for p in new_plans]
del os.environ["CUMATH_CUFFTMP_SINGLE_GPU"]

alloc = dfft.allocate_operand((4, 6, 9), cupy, input_dtype=np.float64, memory_space="cuda", fft_type="R2C")
assert type(alloc) is ndarray and alloc.shape == (4, 6, 9)
dist.free_symmetric_memory(alloc)
held = [k for k, p in plans.items() if p.get("shape") == (2, 2)]
assert len(held) == 1 and not plans[held[0]].get("destroyed"), "one small plan held for NVSHMEM's lifetime"
assert all(p.get("destroyed") for k, p in plans.items() if k not in held), "every plan destroyed by free()"

leak = dist.allocate_symmetric_memory((3, 3), cupy, dtype=np.complex64)
kept = dfft.FFT(asarray(np.ones((4, 4), np.complex64)), distribution=Slab.X)
kept.plan()
kept.execute()
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    dist.finalize()
assert any("never freed" in str(w.message) for w in seen), [str(w.message) for w in seen]
assert events[-1] == ("finalize",) and not heap and all(p.get("destroyed") for p in plans.values())
assert events[-2] == ("destroy", held[0]), "the held plan goes last, right before NVSHMEM's finalize"
print("OK finalize: plans destroyed, leak reported and freed, NVSHMEM finalized", flush=True)
sys.exit(1 if failures else 0)
