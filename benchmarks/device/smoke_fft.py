"""Quick GPU smoke check of the FFT paths (used before the full GPU test run)."""
import logging
import sys
import time

import numpy as np

sys.path.insert(0, ".")
import cumath  # noqa: E402

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
rng = np.random.default_rng(0)


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


def check(name, got, ref, tol):
    err = rel(got, ref)
    print(f"{'OK ' if err < tol else 'BAD'} {name}: rel err {err:.2e}", flush=True)


import cupy as cp  # noqa: E402
import torch  # noqa: E402

x = rng.standard_normal((8, 2048)) + 1j * rng.standard_normal((8, 2048))
check("cupy c128 fft", cumath.fft.fft(cp.asarray(x)).get(), np.fft.fft(x), 1e-12)
check("torch c64 fft", cumath.fft.fft(torch.from_numpy(x.astype(np.complex64)).cuda()).cpu().numpy(), np.fft.fft(x), 1e-5)
check("numpy->gpu c128", cumath.fft.fft(x, execution="cuda"), np.fft.fft(x), 1e-12)
r = rng.standard_normal((6, 10, 12))
check("cupy rfft 2-D", cumath.fft.rfft(cp.asarray(r), axes=(1, 2)).get(), np.fft.rfftn(r, axes=(1, 2)), 1e-12)
c = np.fft.rfftn(r, axes=(1, 2))
check("cupy irfft 2-D", cumath.fft.irfft(cp.asarray(c), axes=(1, 2)).get(), np.fft.irfftn(c, s=(10, 12), axes=(1, 2)) * 120, 1e-12)
check("cupy strided axis0", cumath.fft.fft(cp.asarray(x)[:, ::-3], axes=(0,)).get(), np.fft.fft(x[:, ::-3], axis=0), 1e-12)
check("numpy irfft odd on gpu", cumath.fft.irfft(c, axes=(1, 2), execution="cuda", options={"last_axis_parity": "odd"}),
      np.fft.irfftn(c, s=(10, 13), axes=(1, 2)) * 130, 1e-12)
check("cupy on cpu", cumath.fft.fft(cp.asarray(x), execution="cpu").get(), np.fft.fft(x), 1e-12)
h = torch.randn(4, 64, device="cuda", dtype=torch.float16)
check("torch f16 rfft", cumath.fft.rfft(h).float().cpu().numpy() if False else cumath.fft.rfft(h).to(torch.complex64).cpu().numpy(),
      np.fft.rfft(h.float().cpu().numpy()), 2e-3)
s = cp.cuda.Stream(non_blocking=True)
check("cupy explicit stream", cumath.fft.fft(cp.asarray(x), stream=s).get(), np.fft.fft(x), 1e-12)
xi = cp.asarray(x)
f = cumath.fft.FFT(xi, options={"inplace": True})
f.plan()
f.execute()
check("cupy inplace", xi.get(), np.fft.fft(x), 1e-12)
f.free()
xt = torch.from_numpy(x[0]).cuda()
for i in range(3):
    t0 = time.perf_counter()
    for _ in range(2000):
        cumath.fft.fft(xt)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    for _ in range(2000):
        torch.fft.fft(xt)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    print(f"per call: cumath {(t1 - t0) / 2e3 * 1e6:.1f} us, torch {(t2 - t1) / 2e3 * 1e6:.1f} us")
print(cumath.config.plan_cache.stats())
