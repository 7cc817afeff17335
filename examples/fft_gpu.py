"""FFTs of CuPy arrays and PyTorch CUDA tensors, and NumPy data computed on the GPU (skips without a GPU)."""
import sys

import numpy as np

import cumath
from cumath._core.cuda import device_count

if not device_count():
    print("no GPU: nothing to do")
    sys.exit(0)
rng = np.random.default_rng(4)
x = rng.standard_normal((256, 256)) + 1j * rng.standard_normal((256, 256))
ref = np.fft.fft2(x)
try:
    import cupy as cp

    y = cumath.fft.fft(cp.asarray(x))  # a CuPy array comes back, on the same GPU
    print("CuPy:", float(np.linalg.norm(y.get() - ref) / np.linalg.norm(ref)))
except ImportError:
    pass
try:
    import torch

    t = cumath.fft.fft(torch.from_numpy(x).cuda())  # a CUDA tensor comes back
    print("PyTorch:", float(np.linalg.norm(t.cpu().numpy() - ref) / np.linalg.norm(ref)))
except ImportError:
    pass
y = cumath.fft.fft(x, execution="cuda")  # NumPy in, GPU compute, NumPy out
err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
print(f"NumPy on the GPU: relative error {err:.1e}")
assert err < 1e-12
