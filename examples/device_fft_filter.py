"""An FFT filter in one kernel: forward block FFT, multiply by the filter's spectrum, inverse block FFT, with the
data in registers between the steps (cuFFTDx through cumath.device.fft). Checked against numpy.fft. Needs a GPU
and the dx extra (``pip install "cumath[dx]"``); exits cleanly without them."""
import sys

import numpy as np

import cumath.device as dev

reason = dev.unavailable_reason("gpu", "numba", "mathdx")
if reason:
    print(f"skipped: {reason}")
    sys.exit(0)

from numba import cuda  # noqa: E402

from cumath.device import load, store  # noqa: E402  (one 8-byte access per complex64 element)

size, batch = 256, 4096
kw = dict(fft_type="c2c", size=size, precision=np.float32, ffts_per_block="suggested", elements_per_thread=8,
          execution="Block", compiler="numba")
fwd = dev.fft(direction="forward", **kw)
inv = dev.fft(direction="inverse", **kw)
FPB, STRIDE, EPT, STORAGE = fwd.ffts_per_block, fwd.stride, fwd.elements_per_thread, fwd.storage_size


@cuda.jit(link=fwd.files + inv.files)
def filter_rows(x, spectrum, y):
    row = cuda.blockIdx.x * FPB + cuda.threadIdx.y
    data = cuda.local.array(STORAGE, dtype=fwd.value_type)
    smem = cuda.shared.array(0, dtype=fwd.value_type)
    if row < x.shape[0]:
        for i in range(EPT):  # element i of this thread's FFT is at threadIdx.x + i * stride
            data[i] = load(x, (row, cuda.threadIdx.x + i * STRIDE))
    fwd(data, smem)
    for i in range(EPT):
        data[i] = data[i] * load(spectrum, cuda.threadIdx.x + i * STRIDE)
    inv(data, smem)
    if row < y.shape[0]:
        for i in range(EPT):
            store(y, (row, cuda.threadIdx.x + i * STRIDE), data[i] / size)


rng = np.random.default_rng(0)
x = (rng.standard_normal((batch, size)) + 1j * rng.standard_normal((batch, size))).astype(np.complex64)
kernel = np.exp(-0.5 * ((np.arange(size) - size // 2) / 4.0) ** 2)  # a Gaussian low-pass
spectrum = np.fft.fft(np.fft.ifftshift(kernel / kernel.sum())).astype(np.complex64)
y = cuda.device_array_like(x)
filter_rows[(batch + FPB - 1) // FPB, fwd.block_dim, 0, fwd.shared_memory_size](
    cuda.to_device(x), cuda.to_device(spectrum), y)

ref = np.fft.ifft(np.fft.fft(x.astype(np.complex128), axis=-1) * spectrum, axis=-1)
err = np.linalg.norm(y.copy_to_host() - ref) / np.linalg.norm(ref)
print(f"{batch} filtered rows of {size}: relative error {err:.2e} (block_dim {tuple(fwd.block_dim)}, "
      f"{fwd.shared_memory_size} B shared memory)")
assert err < 1e-5
