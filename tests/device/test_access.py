"""cumath.device.load / store: one vector access per element (PTX checked on the CPU; values on the GPU)."""

import re

import numpy as np
import pytest

from cumath.device import load, store


def _ptx(cuda, fn, argtypes):
    return cuda.compile(fn, tuple(argtypes), cc=(9, 0), output="ptx", abi="numba")[0]


def _accesses(ptx):
    """The kernel's memory accesses, less numba's own status word (a generic st.u64)."""
    return [op for op in re.findall(r"\t((?:ld|st)\.(?!param)[\w.]+)", ptx) if op != "st.u64"]


def test_host_calls_are_refused():
    with pytest.raises(TypeError, match=r"load\(\) is called inside numba-cuda kernels"):
        load(np.zeros(3), 0)
    with pytest.raises(TypeError, match=r"store\(\) is called inside numba-cuda kernels"):
        store(np.zeros(3), 0, 1.0)
    assert repr(load) == "cumath.device.load" and "vector access" in store.__doc__


@pytest.mark.parametrize("dtype, load_op, store_op", [
    ("complex64", "ld.global.v2.f32", "st.global.v2.f32"),
    ("complex128", "ld.global.v2.f64", "st.global.v2.f64"),
    ("float32", "ld.global.f32", "st.global.f32"),
    ("float64", "ld.global.f64", "st.global.f64"),
    ("int32", "ld.global.b32", "st.global.b32"),
    ("uint64", "ld.global.b64", "st.global.b64"),
])
def test_one_vector_access_per_element(numba_cuda, dtype, load_op, store_op):
    from numba import types

    cuda = numba_cuda
    ty = getattr(types, dtype)

    def kernel(x, y):
        i = cuda.grid(1)
        store(y, (i, 3), load(x, (i, 1)))

    ops = _accesses(_ptx(cuda, kernel, (ty[:, :], ty[:, ::1])))
    assert ops == [load_op, store_op]


def test_numba_indexing_splits_complex64(numba_cuda):
    """What load/store are for: numba's own x[i] = y[i] on complex64 is two 4-byte generic stores."""
    from numba import types

    cuda = numba_cuda

    def kernel(x, y):
        i = cuda.grid(1)
        y[i] = x[i]

    ops = _accesses(_ptx(cuda, kernel, (types.complex64[:], types.complex64[:])))
    assert "st.global.v2.f32" not in ops and ops.count("st.f32") == 2


def test_scalar_index_and_value_conversion(numba_cuda):
    from numba import types

    cuda = numba_cuda

    def kernel(x, y):
        i = cuda.grid(1)
        store(y, i, load(x, i) + 1)  # complex128 value stored into complex64: converted

    ops = _accesses(_ptx(cuda, kernel, (types.complex128[:], types.complex64[:])))
    assert ops == ["ld.global.v2.f64", "st.global.v2.f32"]


@pytest.mark.parametrize("body, message", [
    ("load(x, (i, 1))", r"load\(\): the index must be 1 integer\(s\) for a 1-D array"),
    ("load(x, 1.5)", r"load\(\): the index must be 1 integer\(s\)"),
    ("load(b, i)", r"load\(\): arrays of bool are not supported; use complex64"),
    ("load(i, i)", r"load\(\): the first argument must be an array in global memory, not int64"),
    ("load(x)", r"load\(\) takes 2 arguments \(array, index\), 1 given"),
    ("store(x, i)", r"store\(\) takes 3 arguments \(array, index, value\), 2 given"),
    ("store(x, i, x)", r"store\(\): the value must be a number, not array"),
])
def test_wrong_calls_are_typing_errors(numba_cuda, body, message):
    from numba import types

    cuda = numba_cuda
    namespace = {"cuda": cuda, "load": load, "store": store}
    exec(f"def kernel(x, b):\n    i = cuda.grid(1)\n    {body}\n", namespace)
    with pytest.raises(Exception, match=message) as info:
        _ptx(cuda, namespace["kernel"], (types.float32[:], types.boolean[:]))
    assert type(info.value).__name__ == "TypingError", info.value


@pytest.mark.gpu
def test_values_through_strided_views(numba_cuda, cuda_device):
    """A strided, reversed view read and written element by element; complex64 and float64."""
    cuda = numba_cuda

    @cuda.jit
    def copy2d(x, y):
        i, j = cuda.grid(2)
        if i < x.shape[0] and j < x.shape[1]:
            store(y, (i, j), load(x, (i, j)) * 2)

    rng = np.random.default_rng(5)
    for dtype in (np.complex64, np.float64):
        base = rng.standard_normal((37, 29)) + (1j * rng.standard_normal((37, 29)) if dtype == np.complex64 else 0)
        base = base.astype(dtype)
        x = cuda.to_device(base)[::-2, 1::3]
        y = cuda.device_array((x.shape[0], x.shape[1]), dtype=dtype)
        copy2d[(3, 2), (8, 8)](x, y)
        np.testing.assert_array_equal(y.copy_to_host(), base[::-2, 1::3] * 2)
