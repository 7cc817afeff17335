"""wrap_operand: NumPy, PyTorch CPU and foreign arrays; strides in elements; readonly; unsupported inputs."""

from __future__ import annotations

import numpy as np
import pytest

import cumath.fft as F
from cumath._core import operand as O
from cumath._core.dtypes import dtype_name
from cumath._core.frameworks import numpy as npa
from cumath.errors import UnsupportedLayoutError
from helpers.matrix import DTYPES, have_module, random_array
from helpers.reference import assert_close, fft_ref

with_torch = pytest.mark.skipif(not have_module("torch"), reason="torch is not installed")


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy(dtype):
    x = random_array((3, 5), dtype)
    op = O.wrap_operand(x)
    assert op.obj is x and op.ptr == x.ctypes.data
    assert op.shape == (3, 5) and op.strides == (5, 1) and op.dtype == dtype
    assert op.device_id is None and not op.on_gpu and op.package == "numpy" and not op.readonly
    assert op.itemsize == x.itemsize and op.ndim == 2 and op.size == 15 and op.nbytes == x.nbytes
    assert op.signature == ("numpy", None, (3, 5), (5, 1), dtype)
    assert "numpy" in repr(op) and "host" in repr(op)


@pytest.mark.parametrize("view,strides", [
    (lambda x: x[::-1], (-6, 1)),
    (lambda x: x[:, ::-2], (6, -2)),
    (lambda x: x[::-1, ::-1], (-6, -1)),
    (lambda x: x.T, (1, 6)),
    (lambda x: x[1::2, 1::3], (12, 3)),
    (lambda x: np.asfortranarray(x), (1, 4)),
], ids=["rev0", "rev1-step", "rev-both", "T", "step", "F"])
def test_numpy_strides_in_elements(view, strides):
    x = view(random_array((4, 6), "complex128"))
    op = O.wrap_operand(x)
    assert op.strides == strides and op.ptr == x.__array_interface__["data"][0]


def test_numpy_readonly():
    x = random_array((4,), "float64")
    x.setflags(write=False)
    assert O.wrap_operand(x).readonly
    assert O.wrap_operand(np.broadcast_to(random_array((4,), "float64"), (3, 4))).readonly


def test_numpy_strides_not_multiple_of_itemsize():
    rec = np.empty(6, dtype=[("a", "f4"), ("b", "u1")])
    rec["a"] = random_array((6,), "float32")
    with pytest.raises(UnsupportedLayoutError, match="not multiples of its item size 4"):
        O.wrap_operand(rec["a"])


@pytest.mark.parametrize("dtype", ["datetime64[s]", "U3", "uint16", "object", ">f8", ">c16", "longdouble"])
def test_numpy_unsupported_dtypes(dtype):
    with pytest.raises(TypeError, match="is not supported"):
        O.wrap_operand(np.empty(3, dtype=dtype))


@with_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_cpu(dtype):
    import torch

    x = torch.from_numpy(random_array((3, 4, 5), dtype))
    op = O.wrap_operand(x)
    assert op.package == "torch" and op.device_id is None and op.dtype == dtype and not op.readonly
    assert op.ptr == x.data_ptr() and op.shape == (3, 4, 5) and op.strides == (20, 5, 1)
    t = x.permute(2, 0, 1)[:, ::2]
    assert O.wrap_operand(t).strides == tuple(t.stride())


@with_torch
def test_torch_lazy_conjugate_is_resolved():
    import torch

    values = random_array((4, 6), "complex128")
    x = torch.from_numpy(values).conj()
    assert x.is_conj()
    op = O.wrap_operand(x)
    assert not op.obj.is_conj()
    np.testing.assert_array_equal(op.obj.numpy(), values.conj())
    assert_close(F.fft(x), fft_ref(values.conj()), "complex128")


@with_torch
def test_torch_unsupported_dtype():
    import torch

    with pytest.raises(TypeError, match="PyTorch dtype torch.uint16 is not supported"):
        O.wrap_operand(torch.ones(3, dtype=torch.uint16))


class ArrayInterfaceOnly:
    """A foreign host array known only through __array_interface__."""

    def __init__(self, base):
        self._base = base
        self.__array_interface__ = base.__array_interface__


class DLPackOnly:
    """A foreign CPU array known only through DLPack."""

    def __init__(self, base):
        self._base = base

    def __dlpack__(self, **kwargs):
        return self._base.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._base.__dlpack_device__()


@pytest.mark.parametrize("kind", [ArrayInterfaceOnly, DLPackOnly])
def test_foreign_producers(kind):
    base = random_array((5, 8), "complex128")
    x = kind(base)
    op = O.wrap_operand(x)
    assert op.package == "numpy" and op.ptr == base.ctypes.data  # zero-copy
    assert op.shape == (5, 8) and op.strides == (8, 1) and op.dtype == "complex128"
    y = F.fft(x)
    assert isinstance(y, np.ndarray)
    assert_close(y, fft_ref(base), "complex128")


def test_foreign_strided_producer():
    base = random_array((6, 8), "complex64")[::-2, 1::3]
    op = O.wrap_operand(ArrayInterfaceOnly(base))
    assert op.strides == (-16, 3)
    assert_close(F.fft(ArrayInterfaceOnly(base)), fft_ref(base), "complex64")


@pytest.mark.parametrize("bad", [[1, 2, 3], (1.0, 2.0), "text", 3, None, object()],
                         ids=["list", "tuple", "str", "int", "None", "object"])
def test_unsupported_inputs_name_the_accepted_kinds(bad):
    with pytest.raises(TypeError) as info:
        O.wrap_operand(bad, "operand")
    msg = str(info.value)
    for kind in ("numpy.ndarray", "cupy.ndarray", "torch.Tensor", "__array_interface__", "__dlpack__"):
        assert kind in msg
    assert type(bad).__name__ in msg


def test_is_dense_in():
    x = random_array((3, 4, 5), "float64")
    op = O.wrap_operand(x)
    assert op.is_dense_in((0, 1, 2)) and not op.is_dense_in((2, 1, 0))
    assert O.wrap_operand(np.asfortranarray(x)).is_dense_in((2, 1, 0))
    assert not O.wrap_operand(x[:, ::2]).is_dense_in((0, 1, 2))
    assert O.wrap_operand(x[:, :1]).is_dense_in((0, 1, 2)) is False  # gap along axis 0
    assert O.wrap_operand(x[:1]).is_dense_in((0, 1, 2))  # size-1 axes do not count


def test_check_same_place():
    a = O.wrap_operand(random_array((3,), "float64"))
    O.check_same_place({"a": a, "b": O.wrap_operand(random_array((4,), "float64")), "c": None})
    gpu = O.Operand(None, 1, (3,), (1,), "float64", 0, "numpy")
    with pytest.raises(ValueError, match="b is in GPU 0 while a is in host memory; move them to one device"):
        O.check_same_place({"a": a, "b": gpu})


def test_numpy_adapter_helpers():
    x = random_array((3, 4, 5), "complex64")
    e = npa.empty((3, 4, 5), "complex64", None, (2, 0, 1))
    assert e.shape == (3, 4, 5) and e.strides == (e.itemsize * 4, e.itemsize, e.itemsize * 12)
    for view in (x, x[::-1, :, ::-2], x.transpose(2, 0, 1)):
        op = O.wrap_operand(view)
        back = npa.from_pointer(op.ptr, op.shape, op.strides, op.dtype)
        np.testing.assert_array_equal(back, view)
    with pytest.raises(TypeError, match="NumPy has no complex32"):
        npa.empty((2,), "complex32")
    assert npa.pointer(x[1:]) == x.ctypes.data + x.strides[0]


@pytest.mark.parametrize("given,name", [("float32", "float32"), (np.dtype("complex64"), "complex64"),
                                        ("torch.cfloat", "complex64"), ("torch.chalf", "complex32"),
                                        ("torch.float16", "float16"), ("half", "float16")])
def test_dtype_name(given, name):
    assert dtype_name(given) == name


@with_torch
def test_dtype_name_of_torch_dtypes():
    import torch

    assert dtype_name(torch.complex32) == "complex32" and dtype_name(torch.float64) == "float64"
