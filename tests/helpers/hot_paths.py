"""For the compiled hit paths' tests: a stand-in of a CUDA ``torch.Tensor`` on the CPU (PyTorch's accessors over
a NumPy array that the emulated GPU libraries, cuFFT and cuBLASLt in NumPy, treat as GPU 0's memory), and the
runner of the GPU checks, which run in a subprocess (crash-class) with the package's helpers defined first."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import pytest

from cumath._core import _fast
from cumath._core import operand
from cumath._core.operand import Operand


class FakeCudaTensor:
    is_cuda = True

    def __init__(self, arr, neg=False):
        self.arr, self.dtype, self.shape, self.neg = arr, arr.dtype, arr.shape, neg

    def is_conj(self):
        return False

    def is_neg(self):
        return self.neg

    def get_device(self):
        return 0

    def data_ptr(self):
        return self.arr.ctypes.data

    def stride(self):
        return tuple(s // self.arr.itemsize for s in self.arr.strides)


def _wrap(x):
    return Operand(x.arr, x.data_ptr(), x.shape, x.stride(), x.dtype.name, 0, "numpy")


@contextlib.contextmanager
def fake_gpu_tensors(monkeypatch):
    """FakeCudaTensor operands wrapped as GPU 0 operands of package 'numpy' (the emulation's) and read by the
    compiled path as torch tensors are, with 0 as the current stream."""
    monkeypatch.setitem(operand._WRAPPERS, FakeCudaTensor, _wrap)
    monkeypatch.setitem(_fast._READERS, FakeCudaTensor, (1, lambda device: 0))
    _fast._native.hot_setup_gpu(_fast._READERS)
    try:
        yield
    finally:
        _fast._READERS.pop(FakeCudaTensor, None)
        _fast._native.hot_setup_gpu(_fast._READERS)


def spy_cached_call(monkeypatch, module) -> list:
    """The keys of the calls of ``module``'s stateless functions that took the Python path (``cached_call``)."""
    seen = []
    real = module.cached_call

    def spy(key, *args, **kwargs):
        seen.append(key)
        return real(key, *args, **kwargs)

    monkeypatch.setattr(module, "cached_call", spy)
    return seen


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: what a GPU check script starts with: ``pkg`` (sys.argv[1]), ``rng``, and per package ``dev`` (host array to the
#: GPU), ``host`` (back), ``ptr`` (an array's address), ``on_other()`` (another current stream), ``sync()``
GPU_PRELUDE = """
import json, sys
import numpy as np
from cumath.config import plan_cache
pkg = sys.argv[1]
rng = np.random.default_rng(3)
if pkg == "torch":
    import torch
    dev = lambda a: torch.as_tensor(a, device="cuda")
    host = lambda y: y.cpu().numpy()
    ptr = lambda y: y.data_ptr()
    other = torch.cuda.Stream()
    on_other = lambda: torch.cuda.stream(other)
    sync = torch.cuda.synchronize
else:
    import cupy as cp
    dev = cp.asarray
    host = cp.asnumpy
    ptr = lambda y: y.data.ptr
    other = cp.cuda.Stream(non_blocking=True)
    on_other = lambda: other
    sync = cp.cuda.Device().synchronize
plan_cache.clear()
"""

#: what it ends with: the calling thread's compiled-path hits and plan cache stats, as JSON on the last line
GPU_EPILOGUE = """
mine = plan_cache._local.cache
print(json.dumps({"hits": mine.fast.hits, "stats": plan_cache.stats()}))
plan_cache.clear()
"""


def run_gpu_check(body: str, package: str) -> dict:
    """``body`` (after GPU_PRELUDE) in a subprocess for CUDA arrays of ``package``; skips without the package or a
    GPU; returns the epilogue's JSON (the compiled path must have served calls)."""
    mod = pytest.importorskip(package)
    try:
        ok = mod.cuda.is_available() if package == "torch" else mod.cuda.runtime.getDeviceCount() > 0
    except Exception:
        ok = False
    if not ok:
        pytest.skip("no CUDA GPU on this machine")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", GPU_PRELUDE + body + GPU_EPILOGUE, package], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["hits"] > 0 and got["stats"]["hits"] >= got["hits"], got
    return got
