"""cuBLASLt matmul with fused epilogs: a two-layer MLP step (forward RELU_AUX_BIAS, backward DRELU_BGRAD), the
stateful lifecycle with autotuning, and the feed-back loop (skips without a GPU)."""
import sys

from typing import Any

import numpy as np

from cumath._core.cuda import device_count

if not device_count():
    print("no GPU: nothing to do")
    sys.exit(0)

import cumath.linalg.advanced as la  # noqa: E402
from cumath.linalg.advanced import MatmulEpilog as E  # noqa: E402

rng = np.random.default_rng(0)
try:
    import torch

    def dev(x: Any) -> Any:
        return torch.from_numpy(np.ascontiguousarray(x)).cuda()

    def host(x: Any) -> Any:
        return x.cpu().numpy()
except ImportError:  # NumPy operands work too: copied to the GPU and back
    def dev(x: Any) -> Any:
        return np.ascontiguousarray(x)

    def host(x: Any) -> Any:
        return np.asarray(x)

m, k, n = 512, 256, 128
x, w, bias = rng.standard_normal((m, k)), rng.standard_normal((k, n)) / 16, rng.standard_normal(m)

# forward: h = relu(x @ w + bias), with the ReLU bit-mask for the backward pass
h, aux = la.matmul(dev(x), dev(w), epilog=E.RELU_AUX_BIAS, epilog_inputs={"bias": dev(bias)})
pre = x @ w + bias[:, None]
print("forward error:", float(np.linalg.norm(host(h) - np.maximum(pre, 0)) / np.linalg.norm(np.maximum(pre, 0))))
print("relu_aux:", tuple(aux["relu_aux"].shape), "bytes (bit-mask over the rows, column by column)")

# backward: dz = (g @ v) * relu'(pre), and the bias gradient (the sum of dz over the columns)
g, v = rng.standard_normal((m, 64)), rng.standard_normal((64, n))
dz, grads = la.matmul(dev(g), dev(v), epilog=E.DRELU_BGRAD, epilog_inputs={"relu_aux": aux["relu_aux"]})
ref = (g @ v) * (pre > 0)
print("backward error:", float(np.linalg.norm(host(dz) - ref) / np.linalg.norm(ref)))
print("bias gradient error:", float(np.linalg.norm(host(grads["drelu_bgrad"]) - ref.sum(1)) / np.linalg.norm(ref.sum(1))))

# stateful: plan once, autotune, execute many times; feed each result back in (a stays square here)
a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n)) / np.sqrt(n)
with la.Matmul(dev(a), dev(b)) as mm:
    mm.plan(epilog=E.GELU)
    best = mm.autotune(iterations=3)[0]
    print(f"autotuned: algorithm {best.algorithm_id} ({best.measured_time:.4f} ms)")
    y, ref = mm.execute(), a
    for step in range(3):
        ref = 0.5 * (ref @ b) * (1 + np.tanh(np.sqrt(2 / np.pi) * ((ref @ b) + 0.044715 * (ref @ b) ** 3)))
        err = float(np.linalg.norm(host(y) - ref) / np.linalg.norm(ref))
        print(f"step {step}: relative error {err:.1e}")
        assert err < 1e-5
        mm.reset_operands_unchecked(a=y)
        y = mm.execute()
