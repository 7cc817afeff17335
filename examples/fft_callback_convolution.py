"""Circular convolution of a batch of signals with one kernel, with the pointwise product fused into cuFFT:
R2C of the signals, then a C2R whose prolog (a Python function compiled by numba-cuda) multiplies each
element by the kernel's spectrum (user data on the GPU) as cuFFT loads it. Needs a GPU, CuPy and numba-cuda
(``pip install "cumath[dx]"``); exits cleanly without them."""
import sys

from typing import Any

import numpy as np

import cumath
from cumath._core.cuda import device_count
from cumath._core.numba_compat import numba_cuda_version

try:
    import cupy as cp
except ImportError:
    cp = None
if not device_count() or cp is None or numba_cuda_version() is None:
    print("skipped: this example needs a CUDA GPU, CuPy and numba-cuda (pip install \"cumath[dx]\")")
    sys.exit(0)

batch, n = 64, 1000
m = n // 2 + 1
M = np.uint64(m)

rng = np.random.default_rng(5)
signals = rng.standard_normal((batch, n)).astype(np.float32)
kernel = np.exp(-0.5 * ((np.arange(n) - n / 2) / 8.0) ** 2).astype(np.float32)
kernel /= kernel.sum()


def times_kernel(data_in: Any, offset: Any, user_info: Any, unused: Any) -> Any:
    # offset indexes the C2R input, (batch, m) in C order (see get_input_layout below): the same kernel
    # spectrum for every row
    return data_in[offset] * user_info[offset % M]


prolog = cumath.fft.compile_prolog(times_kernel, "complex64", "complex64")
k_spec = cp.asarray((np.fft.rfft(kernel) / n).astype(np.complex64))  # 1/n: the C2R is unnormalized

x = cp.asarray(signals)
spectra = cumath.fft.rfft(x, axes=[-1])
with cumath.fft.FFT(spectra, axes=[-1], options={"fft_type": "C2R"}) as c2r:
    shape, strides = c2r.get_input_layout()
    assert shape == (batch, m) and strides == (m, 1), (shape, strides)  # what the prolog assumes
    c2r.plan(prolog=cumath.fft.DeviceCallable(prolog, data=k_spec))
    out = c2r.execute()

ref = np.fft.irfft(np.fft.rfft(signals.astype(np.float64)) * np.fft.rfft(kernel.astype(np.float64)), n=n)
err = np.linalg.norm(cp.asnumpy(out) - ref) / np.linalg.norm(ref)
print(f"convolution of {batch} signals of {n} samples with the product fused into cuFFT: relative error {err:.1e}")
assert err < 1e-5

# stateless, with the user data as a dict: the plan is cached (same LTO-IR, same data pointer)
again = cumath.fft.irfft(spectra, axes=[-1], prolog={"ltoir": prolog, "data": k_spec.data.ptr})
assert float(cp.abs(again - out).max()) <= 1e-6 * float(cp.abs(out).max())
