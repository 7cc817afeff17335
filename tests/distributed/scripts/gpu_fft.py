"""One rank on one GPU: the cuFFTMp engine of cumath.distributed.fft against single-GPU cumath and NumPy.

Run as its own process (no mpirun: an MPI singleton), by tests/distributed/test_dist_fft_gpu.py. Prints ``SKIP <why>``
and exits 0 where the GPU pieces are missing, ``OK <case>`` per passing case, and exits 1 at the first mismatch.
"""

import sys
import warnings

import numpy as np


def skip(why):
    print(f"SKIP {why}", flush=True)
    sys.exit(0)


try:
    import cupy
except ImportError:
    skip("CuPy is not installed")
from mpi4py import MPI  # noqa: E402

import cumath  # noqa: E402
import cumath.distributed as dist  # noqa: E402
from cumath.distributed.distribution import Box, Slab  # noqa: E402

from cumath._bindings import nvshmem  # noqa: E402

if not nvshmem.available():
    skip("NVSHMEM's host library (libnvshmem_host.so.3, wheel nvidia-nvshmem-cu13) cannot be loaded")
dist.initialize(0, MPI.COMM_WORLD, backends=("nvshmem",))
from cumath._bindings import cufftmp  # noqa: E402

if not cufftmp.available():
    dist.finalize()
    skip("cuFFTMp (libcufftMp.so.12, wheel nvidia-cufftmp-cu13) cannot be loaded")
from cumath.distributed import fft as dfft  # noqa: E402

failures = 0


def check(name, got, ref, tol):
    global failures
    got = cupy.asnumpy(got) if not isinstance(got, np.ndarray) else got
    ref = cupy.asnumpy(ref) if not isinstance(ref, np.ndarray) else ref
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300)) if got.shape == ref.shape else np.inf
    if not err < tol:
        print(f"FAIL {name}: shapes {got.shape} {ref.shape}, relative error {err:.3g} (tolerance {tol:g})",
              flush=True)
        failures += 1
    else:
        print(f"OK {name} ({err:.2g})", flush=True)


rng = np.random.default_rng(0)
TOL = {np.complex64: 2e-5, np.complex128: 1e-12, np.float32: 2e-5, np.float64: 1e-12}

# C2C from X and Y slabs and whole-array boxes, both directions, against single-GPU cumath and NumPy
for shape in [(32, 48, 40), (17, 11, 13), (24, 30), (7, 5, 3)]:
    for dtype in (np.complex64, np.complex128):
        h = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        x = cupy.asarray(h)
        ref = np.fft.fftn(h.astype(np.complex128))
        single = cumath.fft.fft(x)
        for distribution in (Slab.X, Slab.Y, [Box((0,) * len(shape), shape)] * 2):
            for redistribute in (True, False):
                name = f"C2C {shape} {np.dtype(dtype).name} {distribution!r} redistribute={redistribute}"
                with dfft.FFT(x, distribution=distribution, options={"redistribute": redistribute}) as f:
                    f.plan()
                    y = f.execute()
                    assert isinstance(y, cupy.ndarray) and y.dtype == dtype and f.engine == "cufftmp", name
                    assert f._gpu_plan.single_gpu, "one rank: a single-GPU plan of libcufftMp: " + name
                    check(name + " vs NumPy", y, ref, 10 * TOL[dtype])
                    check(name + " vs single-GPU cumath", y, single, 10 * TOL[dtype])
                    z = f.execute(direction="inverse")
                    check(name + " inverse", z, np.fft.ifftn(h.astype(np.complex128)) * h.size, 10 * TOL[dtype])
                assert cupy.array_equal(x, cupy.asarray(h)), "the operand was written: " + name

# a symmetric operand is transformed where it lies (the result is a view of its buffer)
for dtype in (np.complex64, np.complex128):
    shape = (20, 18, 22)
    h = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    a = dist.allocate_symmetric_memory(shape, cupy, dtype=dtype)
    a[...] = cupy.asarray(h)
    with dfft.FFT(a, distribution=Slab.X) as f:
        f.plan()
        y = f.execute()
        assert y.data.ptr == a.data.ptr, "a symmetric operand must be transformed in place"
        check(f"symmetric in place {np.dtype(dtype).name}", y, np.fft.fftn(h.astype(np.complex128)), 10 * TOL[dtype])
    dist.free_symmetric_memory(a)

# R2C / C2R (odd and even last axes), NumPy and torch operands staged to the symmetric heap
for shape in [(16, 12, 10), (9, 7, 11), (20, 15)]:
    for dtype in (np.float32, np.float64):
        h = rng.standard_normal(shape).astype(dtype)
        ref = np.fft.rfftn(h.astype(np.float64))
        y = dfft.rfft(cupy.asarray(h), distribution=Slab.X)
        check(f"R2C {shape} {np.dtype(dtype).name}", y, ref, 10 * TOL[dtype])
        check(f"R2C {shape} vs single-GPU cumath", y, cumath.fft.rfft(cupy.asarray(h)), 10 * TOL[dtype])
        parity = "odd" if shape[-1] % 2 else "even"
        z = dfft.irfft(y, distribution=Slab.X, options={"last_axis_parity": parity})
        check(f"C2R {shape} {np.dtype(dtype).name}", z / h.size, h, 10 * TOL[dtype])
        check(f"C2R {shape} vs single-GPU cumath", z,
              cumath.fft.irfft(cupy.asarray(y), options={"last_axis_parity": parity}), 10 * TOL[dtype])
        for distribution in (Slab.Y, [Box((0,) * len(shape), shape), Box((0,) * len(shape), ref.shape)]):
            yb = dfft.rfft(cupy.asarray(h), distribution=distribution)
            check(f"R2C {shape} {distribution!r} vs single-GPU cumath", yb, cumath.fft.rfft(cupy.asarray(h)),
                  10 * TOL[dtype])
            back = distribution if isinstance(distribution, Slab) else distribution[::-1]
            zb = dfft.irfft(yb, distribution=back, options={"last_axis_parity": parity})
            check(f"C2R {shape} {distribution!r}", zb / h.size, h, 10 * TOL[dtype])

        yn = dfft.rfft(h, distribution=Slab.X)  # NumPy in, NumPy out
        assert isinstance(yn, np.ndarray)
        check(f"R2C NumPy operand {shape}", yn, ref, 10 * TOL[dtype])

# cuFFTMp's distributed plan on one rank (CUMATH_CUFFTMP_SINGLE_GPU=0) gives the same results as the single-GPU one
import os  # noqa: E402

os.environ["CUMATH_CUFFTMP_SINGLE_GPU"] = "0"
for shape, dtype in [((32, 48, 40), np.complex64), ((24, 30), np.complex128)]:
    h = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    with dfft.FFT(cupy.asarray(h), distribution=Slab.X) as f:
        f.plan()
        assert not f._gpu_plan.single_gpu
        check(f"cuFFTMp's plan on one rank {shape} vs single-GPU cumath", f.execute(), cumath.fft.fft(cupy.asarray(h)),
              10 * TOL[dtype])
del os.environ["CUMATH_CUFFTMP_SINGLE_GPU"]

try:
    import torch

    if torch.cuda.is_available():
        t = torch.randn(12, 10, 8, dtype=torch.complex64, device="cuda")
        y = dfft.fft(t, distribution=Slab.X)
        assert isinstance(y, torch.Tensor) and y.is_cuda
        check("torch CUDA operand", y.cpu().numpy(), np.fft.fftn(t.cpu().numpy().astype(np.complex128)), 2e-4)
        tc = t.cpu()
        yc = dfft.fft(tc, distribution=Slab.X)
        assert isinstance(yc, torch.Tensor) and not yc.is_cuda
        check("torch CPU operand", yc.numpy(), np.fft.fftn(tc.numpy().astype(np.complex128)), 2e-4)
        s = dist.allocate_symmetric_memory((4, 6), torch, dtype=torch.complex64)
        assert s.is_cuda and tuple(s.shape) == (4, 6)
        dist.free_symmetric_memory(s)
except ImportError:
    pass

# box plans (cufftXtSetDistribution + the DISTRIBUTED_INPUT / DISTRIBUTED_OUTPUT subformats), which many ranks use,
# forced on one rank with the whole array as both boxes: each case reports OK or FAIL (with the library's error)
from cumath.distributed.fft import _cufftmp as _engine  # noqa: E402

_native = _engine.native_slabs
_engine.native_slabs = lambda *args: False
try:
    for shape, dtype in [((7, 5, 3), np.complex64), ((24, 30), np.complex128), ((16, 12, 10), np.float32),
                         ((20, 15), np.float64)]:
        name = f"box plan on one rank {shape} {np.dtype(dtype).name}"
        try:
            h = rng.standard_normal(shape).astype(dtype)
            if np.dtype(dtype).kind == "c":
                h = (h + 1j * rng.standard_normal(shape)).astype(dtype)
                with dfft.FFT(cupy.asarray(h), distribution=[Box((0,) * len(shape), shape)] * 2) as f:
                    f.plan()
                    assert not f._gpu_plan.native, name
                    check(name + " forward", f.execute(), np.fft.fftn(h.astype(np.complex128)), 10 * TOL[dtype])
                    check(name + " inverse", f.execute(direction="inverse"),
                          np.fft.ifftn(h.astype(np.complex128)) * h.size, 10 * TOL[dtype])
            else:
                y = dfft.rfft(cupy.asarray(h), distribution=Slab.X)
                check(name + " R2C", y, np.fft.rfftn(h.astype(np.float64)), 10 * TOL[dtype])
                z = dfft.irfft(y, distribution=Slab.X,
                               options={"last_axis_parity": "odd" if shape[-1] % 2 else "even"})
                check(name + " C2R", z / h.size, h, 10 * TOL[dtype])
        except Exception as exc:  # noqa: BLE001 - reported, counted, and the run goes on
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
            failures += 1
finally:
    _engine.native_slabs = _native

# error paths on a GPU run
for bad, words in (((lambda: dist.allocate_symmetric_memory((4,), "numpy")), "cupy or torch on GPU runs"),
                   ((lambda: dist.free_symmetric_memory(cupy.zeros(3))), "not allocated by")):
    try:
        bad()
    except ValueError as exc:
        assert words in str(exc), str(exc)
        print(f"OK error: {words}", flush=True)
    else:
        print(f"FAIL no error ({words})", flush=True)
        failures += 1

# a buffer never freed is reported at finalize
leak = dist.allocate_symmetric_memory((8, 8), cupy, dtype=np.complex64)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    dist.finalize()
assert any("never freed" in str(w.message) for w in seen), [str(w.message) for w in seen]
print("OK leak reported at finalize", flush=True)
sys.exit(1 if failures else 0)
