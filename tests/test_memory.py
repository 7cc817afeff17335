"""cumath.memory: the allocator protocol, the default allocators, and user allocators in FFT workspaces."""
import numpy as np
import pytest

import cumath
from cumath.memory import MemoryPointer, allocate, default_allocator


def test_memory_pointer_free_is_idempotent():
    calls = []
    p = MemoryPointer(1234, 16, lambda: calls.append(1))
    p.free()
    p.free()
    assert calls == [1] and p.device_ptr == 1234 and p.size == 16


def test_an_object_without_memalloc_is_refused():
    with pytest.raises(TypeError, match=r"memalloc\(size\).*memalloc_async\(size, stream\)"):
        allocate(object(), 64, 0)


@pytest.mark.parametrize("package,name", [("cupy", "CupyMemoryManager"), ("torch", "TorchMemoryManager"),
                                          ("numpy", "CudaRuntimeMemoryManager")])
def test_default_allocator_follows_the_package(package, name):
    if package != "numpy":
        pytest.importorskip(package)  # the package's own pool comes with its adapter
    assert type(default_allocator(package, 0)).__name__ == name


class CountingAllocator:
    """A user allocator (the nvmath-python shape: memalloc(size) -> MemoryPointer) over CuPy's pool."""

    def __init__(self):
        self.sizes, self.freed = [], 0

    def memalloc(self, size):
        import cupy

        mem = cupy.cuda.alloc(size)
        self.sizes.append(size)

        def release(mem=mem):
            self.freed += 1

        return MemoryPointer(mem.ptr, size, release)


@pytest.mark.gpu
def test_a_user_allocator_provides_the_workspace():
    cp = pytest.importorskip("cupy")
    # a prime length (Bluestein's algorithm) needs a cuFFT workspace (31 MiB for 64 x 10007 on an H200)
    x = (cp.random.standard_normal((64, 10007), dtype=cp.float32)
         + 1j * cp.random.standard_normal((64, 10007), dtype=cp.float32)).astype(cp.complex64)
    alloc = CountingAllocator()
    with cumath.fft.FFT(x, axes=[-1], options={"allocator": alloc}) as f:
        f.plan()
        ws = f.nbytes
        y = f.execute(release_workspace=True)
        ref = cp.fft.fft(x.astype(cp.complex128), axis=-1)
        assert float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref)) < 1e-5
        del ref
        if ws:
            assert alloc.sizes == [ws] and alloc.freed == 1  # released after the call, as asked
            f.execute()
            assert alloc.sizes == [ws, ws] and alloc.freed == 1
    if ws:
        assert alloc.freed == 2  # free() gave the workspace back
    else:
        pytest.skip("cuFFT needed no workspace for this plan")


@pytest.mark.gpu
def test_numpy_on_the_gpu_uses_the_runtime_pool():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 1000)) + 1j * rng.standard_normal((64, 1000))
    with cumath.fft.FFT(x, execution="cuda") as f:
        f.plan()
        assert f.nbytes >= 2 * x.nbytes  # the staging buffers in and out (and any workspace)
        y = f.execute(release_workspace=True)
        y2 = f.execute()
    ref = np.fft.fft2(x)
    assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 1e-12
    assert np.linalg.norm(y2 - ref) / np.linalg.norm(ref) < 1e-12
