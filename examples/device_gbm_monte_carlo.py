"""Geometric Brownian motion by Monte Carlo in one numba-cuda kernel: cuRAND's Philox4_32_10 generator, four
normal variates per draw (``random.normal4``), one path per thread. The path statistics are checked against the
exact law: log(S_T / S_0) ~ N((T - 1) mu, (T - 1) sigma^2). Needs a GPU and the dx extra
(``pip install "cumath[dx]"``); exits cleanly without them. benchmarks/device.py times it at 524,288 paths."""
import math
import sys

import numpy as np

import cumath.device as dev

reason = dev.unavailable_reason("gpu", "numba", "curand")
if reason:
    print(f"skipped: {reason}")
    sys.exit(0)

from numba import cuda  # noqa: E402

from cumath.device import random  # noqa: E402

compiled = random.Compile()  # the cuRAND shim for this GPU, generated once and cached on disk
npaths, nsteps, mu, sigma, s0, seed = 65536, 252, 0.0003, 0.012, 100.0, 7777


@cuda.jit(link=compiled.files, extensions=compiled.extension)
def init_states(states, seed):
    i = cuda.grid(1)
    if i < states.shape[0]:
        random.init(seed, i, 0, states[i])  # seed, subsequence (one per path), offset, state


STATE = random.state_dtype(random.StatesPhilox4_32_10)


@cuda.jit(link=compiled.files, extensions=compiled.extension)
def simulate(states, paths, nsteps, mu, sigma, s0):
    i = cuda.grid(1)
    if i >= paths.shape[0]:
        return
    # A private copy of this thread's state, kept in registers: drawing from states[i] directly works too, but
    # then every draw reads and writes the state in global memory (1.3x slower for 252 steps, benchmarks/NOTES.md).
    st = cuda.local.array(1, dtype=STATE)
    st[0] = states[i]
    s = s0
    paths[i, 0] = s
    for t in range(1, nsteps, 4):
        v = random.normal4(st[0])  # a float32x4: four standard normal variates
        z = (v.x, v.y, v.z, v.w)
        for j in range(4):
            if t + j < nsteps:
                s = s * math.exp(mu + sigma * z[j])
                paths[i, t + j] = s
    states[i] = st[0]  # stored back, so a next kernel continues the sequence


states = random.StatesPhilox4_32_10(npaths)
paths = cuda.device_array((npaths, nsteps), dtype=np.float32, order="F")  # coalesced: paths vary fastest
threads = 128
blocks = (npaths + threads - 1) // threads
init_states[blocks, threads](states, seed)
simulate[blocks, threads](states, paths, nsteps, mu, sigma, s0)

log_return = np.log(paths.copy_to_host()[:, -1].astype(np.float64) / s0)
mean, std = (nsteps - 1) * mu, sigma * math.sqrt(nsteps - 1)
print(f"log return at maturity: mean {log_return.mean():+.5f} (exact {mean:+.5f}), "
      f"std {log_return.std():.5f} (exact {std:.5f})")
assert abs(log_return.mean() - mean) < 5 * std / math.sqrt(npaths)
assert abs(log_return.std() / std - 1) < 0.02
