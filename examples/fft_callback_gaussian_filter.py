"""Gaussian filter of an image with an FFT callback: an R2C FFT whose epilog (a Python function compiled by
numba-cuda) multiplies each frequency by exp(-2 pi^2 sigma^2 (fx^2 + fy^2)) / (h*w) as the result is stored,
then a C2R FFT. The plan links the callback into cuFFT's kernels, or runs it as its own pass right after
cuFFT's plain kernels where that measured faster (2-D R2C: cuFFT's callback kernels are ~2.5-3x slower than
its plain ones); ``FFTOptions(callback_fusion="fused" | "separate")`` forces either. Needs a GPU, CuPy and
numba-cuda (``pip install "cumath[dx]"``); exits cleanly without them. benchmarks/fft.py --case callbacks times it on
8192 x 8192."""
import math
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

h, w, sigma = 512, 768, 3.0

# constants of the epilog, typed so the arithmetic stays in unsigned ints and float32
WC = np.uint64(w // 2 + 1)  # columns of the R2C result
HALF = np.uint64((h + 1) // 2)  # rows from here on are negative frequencies (numpy.fft.fftfreq)
INV_H, INV_W, ONE = np.float32(1 / h), np.float32(1 / w), np.float32(1)
COEF = np.float32(-2 * math.pi**2 * sigma**2)
SCALE = np.float32(1 / (h * w))  # undoes the unnormalized R2C -> C2R pair


def gaussian(data_out: Any, offset: Any, value: Any, user_info: Any, unused: Any) -> None:
    row = offset // WC  # the R2C result is (h, w//2+1) in C order: get_output_layout() says so
    col = offset - row * WC
    fy = np.float32(row) * INV_H
    if row >= HALF:
        fy -= ONE
    fx = np.float32(col) * INV_W
    data_out[offset] = value * (SCALE * math.exp(COEF * (fx * fx + fy * fy)))


rng = np.random.default_rng(3)
img = rng.standard_normal((h, w)).astype(np.float32)
img_d = cp.asarray(img)

epilog = cumath.fft.compile_epilog(gaussian, "complex64", None)  # cached on disk: instant next time
with cumath.fft.FFT(img_d) as r2c:  # stateful: the plan (with its callback) is made once
    assert r2c.get_output_layout() == ((h, w // 2 + 1), (w // 2 + 1, 1))
    r2c.plan(epilog=epilog)
    spectrum = r2c.execute()
out = cumath.fft.irfft(spectrum, options={"overwrite_input": True})  # C2R may reuse the spectrum's memory

fy = np.fft.fftfreq(h)[:, None]
fx = np.fft.rfftfreq(w)[None, :]
gauss = np.exp(-2 * np.pi**2 * sigma**2 * (fx**2 + fy**2))
ref = np.fft.irfft2(np.fft.rfft2(img.astype(np.float64)) * gauss, s=(h, w))
err = np.linalg.norm(cp.asnumpy(out) - ref) / np.linalg.norm(ref)
print(f"Gaussian filter as an FFT epilog ({len(epilog)} bytes of LTO-IR): relative error {err:.1e}")
assert err < 1e-5

# the same, stateless: plans (callback included) come from the plan cache on repeated calls
out2 = cumath.fft.irfft(cumath.fft.rfft(img_d, epilog=epilog), options={"overwrite_input": True})
assert float(cp.abs(out2 - out).max()) <= 1e-6 * float(cp.abs(out).max())
