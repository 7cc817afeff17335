"""Where the per-call time of a stateless GPU FFT goes (cProfile and per-step timings)."""
import cProfile
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, ".")
import cumath  # noqa: E402
import cupy as cp  # noqa: E402
import torch  # noqa: E402

from cumath._core.operand import wrap_operand  # noqa: E402
from cumath._core.streams import default_stream  # noqa: E402

x = np.random.default_rng(0).standard_normal(2048) + 0j
xt = torch.from_numpy(x).cuda()
xc = cp.asarray(x)
for label, a, sync in (("torch", xt, torch.cuda.synchronize), ("cupy", xc, cp.cuda.Device().synchronize)):
    f = cumath.fft.FFT(a)
    f.plan()
    for name, fn in (("stateless", lambda: cumath.fft.fft(a)), ("execute", f.execute),
                     ("wrap", lambda: wrap_operand(a)), ("default_stream", lambda: default_stream(label, 0)),
                     ("torch.fft.fft", lambda: torch.fft.fft(xt)), ("torch.empty", lambda: torch.empty(2048, dtype=torch.complex128, device="cuda")),
                     ("cupy.empty", lambda: cp.empty(2048, dtype=cp.complex128))):
        best = []
        for _ in range(5):
            sync()
            t0 = time.perf_counter()
            for _ in range(5000):
                fn()
            sync()
            best.append((time.perf_counter() - t0) / 5000 * 1e6)
        print(f"{label:6s} {name:16s} median {sorted(best)[2]:6.2f} us  min {min(best):6.2f} us", flush=True)
    f.free()
pr = cProfile.Profile()
pr.enable()
for _ in range(5000):
    cumath.fft.fft(xt)
torch.cuda.synchronize()
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(18)
