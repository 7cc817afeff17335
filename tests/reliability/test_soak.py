"""Soak: resident memory and open file descriptors stay flat over thousands of stateless calls across many
shapes and across many short-lived threads (plans of ended threads are freed); GPU memory stays flat on a GPU.
Short by default (CI); ``CUMATH_SOAK_CALLS=20000`` runs the long version. Each soak runs in a fresh process."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALLS = int(os.environ.get("CUMATH_SOAK_CALLS", "2000"))

pytestmark = pytest.mark.soak

COMMON = """
import gc, os, threading, numpy as np, cumath
CALLS = int(os.environ["SOAK_CALLS"])
def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
def fds():
    return len(os.listdir("/proc/self/fd"))
rng = np.random.default_rng(0)
SHAPES = [(n,) for n in (7, 16, 31, 64, 127, 256)] + [(3, n) for n in (5, 17, 32)] + [(4, 4, 9)]
DATA = {s: rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in SHAPES}
MATS = {n: rng.standard_normal((n, n)) for n in (3, 17, 64)}
def work(i):
    s = SHAPES[i % len(SHAPES)]
    x = DATA[s]
    cumath.fft.fft(x); cumath.fft.ifft(x, axes=[-1]); cumath.fft.rfft(x.real)
    a = MATS[(3, 17, 64)[i % 3]]
    cumath.linalg.matmul(a, a)
def measure(run, rounds):
    run(CALLS // 4)  # warm: plans, pools, wisdom
    gc.collect()
    r0, f0 = rss_mib(), fds()
    for _ in range(rounds):
        run(CALLS // rounds)
    gc.collect()
    return rss_mib() - r0, fds() - f0
"""

CASES = {
    "stateless calls over many shapes": """
        def run(n):
            for i in range(n):
                work(i)
        grew, fd = measure(run, 4)
    """,
    "short-lived threads": """
        def run(n):
            for i in range(max(n // 20, 10)):
                t = threading.Thread(target=work, args=(i,))
                t.start(); t.join()
        grew, fd = measure(run, 4)
    """,
}


@pytest.mark.parametrize("case", list(CASES))
def test_memory_and_descriptors_stay_flat(case):
    code = textwrap.dedent(COMMON) + textwrap.dedent(CASES[case]) + "\nprint(f'{grew:.2f} {fd}')"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": ROOT, "SOAK_CALLS": str(CALLS)})
    assert r.returncode == 0, r.stderr[-3000:]
    grew, fd = r.stdout.split()[-2:]
    assert float(grew) < 8.0, f"RSS grew by {grew} MiB over {CALLS} calls ({case})"
    assert int(fd) <= 0, f"{fd} file descriptors more after {CALLS} calls ({case})"


@pytest.mark.gpu
def test_gpu_memory_stays_flat(cufft_device):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(1)
    xs = [cp.asarray(rng.standard_normal(n) + 1j * rng.standard_normal(n)) for n in (16, 255, 1024, 4097)]
    mats = [(cp.asarray(rng.standard_normal((m, k)), dtype=cp.float32),
             cp.asarray(rng.standard_normal((k, n)), dtype=cp.float32)) for m, k, n in ((17, 33, 9), (64, 64, 64))]
    import cumath

    def run(n):
        for i in range(n):
            x = xs[i % len(xs)]
            cumath.fft.fft(x)
            cumath.fft.ifft(x)
            if i % 4 == 0:
                cumath.linalg.advanced.matmul(*mats[(i // 4) % len(mats)])
        cp.cuda.Device().synchronize()

    run(200)
    pool = cp.get_default_memory_pool()
    free0, _ = cp.cuda.runtime.memGetInfo()
    used0 = pool.used_bytes()
    run(CALLS)
    free1, _ = cp.cuda.runtime.memGetInfo()
    print(f"GPU soak: {2 * CALLS + (CALLS + 3) // 4} stateless calls (FFT over {len(xs)} shapes, matmul over "
          f"{len(mats)}); CuPy pool grew by "
          f"{(pool.used_bytes() - used0) / 2**20:+.3f} MiB, device free memory by {(free1 - free0) / 2**20:+.1f} MiB")
    assert pool.used_bytes() - used0 < 1 << 20
    assert free0 - free1 < 64 << 20

