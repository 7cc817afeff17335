"""Batched 1-D FFT of NumPy data on the CPU, checked against numpy.fft."""
import numpy as np

import cumath

rng = np.random.default_rng(1)
x = rng.standard_normal((64, 4096)) + 1j * rng.standard_normal((64, 4096))
y = cumath.fft.fft(x, axes=[-1])
err = np.linalg.norm(y - np.fft.fft(x, axis=-1)) / np.linalg.norm(y)
print(f"batched 1-D FFT on the CPU: relative error {err:.1e}")
assert err < 1e-12
