"""Gaussian filter of an image through R2C -> multiply -> C2R, on the GPU when there is one."""
import numpy as np

import cumath
from cumath._core.cuda import device_count

rng = np.random.default_rng(3)
h, w, sigma = 512, 768, 3.0
img = rng.standard_normal((h, w))
fy = np.fft.fftfreq(h)[:, None]
fx = np.fft.rfftfreq(w)[None, :]
gauss = np.exp(-2 * np.pi**2 * sigma**2 * (fx**2 + fy**2)) / (h * w)  # the 1/(h*w) undoes the unnormalized pair
execution = "cuda" if device_count() else "cpu"
out = cumath.fft.irfft(cumath.fft.rfft(img, execution=execution) * gauss, execution=execution,
                       options={"last_axis_parity": "even"})
ref = np.fft.irfft2(np.fft.rfft2(img) * gauss * (h * w), s=(h, w))
err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
print(f"Gaussian filter on the {execution.upper()}: relative error {err:.1e}")
assert err < 1e-12
