"""The stateful FFT: plan once (measured, wisdom kept on disk), execute many times on new operands."""
import numpy as np

import cumath

rng = np.random.default_rng(2)
x = rng.standard_normal((32, 1024)) + 1j * rng.standard_normal((32, 1024))
with cumath.fft.FFT(x, axes=[-1], options={"planning_effort": "measure"}) as f:
    f.plan()
    for step in range(3):
        new = rng.standard_normal((32, 1024)) + 1j * rng.standard_normal((32, 1024))
        f.reset_operand(new)
        y = f.execute()
        err = np.linalg.norm(y - np.fft.fft(new, axis=-1)) / np.linalg.norm(y)
        print(f"step {step}: relative error {err:.1e}")
        assert err < 1e-12
