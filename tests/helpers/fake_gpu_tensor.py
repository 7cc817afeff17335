"""A stand-in of a CUDA ``torch.Tensor`` for the compiled hit paths' tests on the CPU: PyTorch's accessors over a
NumPy array that the emulated GPU libraries (cuFFT, cuBLASLt in NumPy) treat as GPU 0's memory."""

from __future__ import annotations

import contextlib

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
