"""The GPU tests' kernels (device_kernels.py) typed and compiled for sm_90 here, without a GPU: what the GPU
session launches has already compiled."""

import numpy as np
import pytest

import cumath.device as dev


@pytest.fixture(scope="module")
def kernels(numba_cuda):
    import device_kernels

    return device_kernels


def _ptx(kernel, sig):
    from numba import cuda

    ptx, _ = cuda.compile(kernel.py_func, sig, cc=(9, 0), output="ptx", abi="numba")
    return ptx


@pytest.mark.parametrize("fft_type, prec", [("c2c", np.float32), ("r2c", np.float64), ("c2r", np.float32)])
def test_fft_kernels(kernels, mathdx, fft_type, prec):
    from numba import types

    f = dev.FFT(size=64, precision=prec, fft_type=fft_type, execution="Block", sm=90, ffts_per_block=2,
                direction="forward" if fft_type == "c2c" else None, elements_per_thread=8)
    cplx = types.complex64 if prec is np.float32 else types.complex128
    real = types.float32 if prec is np.float32 else types.float64
    x = cplx if fft_type in ("c2c", "c2r") else real
    y = cplx if fft_type in ("c2c", "r2c") else real
    if fft_type == "r2c":  # the kernel reads .real of its input; a real array has one too
        x = real
    assert f.symbol in _ptx(kernels.fft_block_kernel(f), (x[:, ::1], y[:, ::1]))
    t = dev.FFT(size=16, precision=prec, fft_type="c2c", execution="Thread", direction="inverse", sm=90)
    assert t.symbol in _ptx(kernels.fft_thread_kernel(t), (cplx[:, ::1], cplx[:, ::1]))


def test_convolution_kernel(kernels, mathdx):
    from numba import types

    kw = dict(size=128, precision=np.float32, fft_type="c2c", execution="Block", sm=90, ffts_per_block=4,
              elements_per_thread=8)
    fwd, inv = dev.FFT(direction="forward", **kw), dev.FFT(direction="inverse", **kw)
    ptx = _ptx(kernels.fft_convolution_kernel(fwd, inv),
               (types.complex64[:, ::1], types.complex64[::1], types.complex64[:, ::1]))
    assert fwd.symbol in ptx and inv.symbol in ptx


def test_gemm_and_solver_kernels(kernels, mathdx):
    from numba import types

    mm = dev.Matmul(size=(32, 32, 32), precision=np.float32, data_type="real", sm=90, block_size=128)
    arr = types.float32[:, :, ::1]
    assert mm.symbol in _ptx(kernels.gemm_kernel(mm), (arr, arr, arr, types.float64, types.float64))
    chol = dev.CholeskySolver((16, 16, 2), np.float64, "Block", "lower", sm=90)
    lu = dev.LUPivotSolver((16, 16, 2), np.float64, "Block", sm=90)
    arr = types.float64[:, :, ::1]
    for s, pivot in ((chol, False), (lu, True)):
        ptx = _ptx(kernels.solve_kernel(s, pivot), (arr, arr, types.int32[::1]))
        assert all(sym in ptx for sym in s._generator.symbols())
    gels = dev.LeastSquaresSolver((12, 5, 2), np.float64, "Block", sm=90)
    assert gels.symbol in _ptx(kernels.least_squares_kernel(gels), (arr, arr))
    trsm = dev.TriangularSolver((8, 3), np.float64, "Block", sm=90, fill_mode="lower")
    assert trsm.symbol in _ptx(kernels.triangular_solve_kernel(trsm), (arr, arr))


def test_random_kernels(kernels, curand_headers):
    from numba import types
    from numba.cuda.np.numpy_support import from_dtype

    from cumath.device import random
    from cumath.device.random._states import state_dtype

    def states(gen):
        return types.Array(from_dtype(state_dtype(gen)), 1, "C")

    link = random.Compile(cc=90).files
    for gen in ("philox", "xorwow", "mrg"):
        assert "cumath_curand_init_" + gen in _ptx(kernels.init_pseudo_kernel(link),
                                                   (states(gen), types.int64, types.int64))
    for gen, scrambled, vt in (("sobol32", False, types.uint32), ("scrambled_sobol64", True, types.uint64)):
        sig = (states(gen), types.Array(vt, 2, "C"), types.Array(vt, 1, "C"), types.int64)
        assert "cumath_curand_init_" + gen in _ptx(kernels.init_sobol_kernel(link, scrambled), sig)
    for fn, width, params, out in ((random.uniform, 1, (), types.float32), (random.normal4, 4, (), types.float32),
                                   (random.normal2_double, 2, (), types.float64),
                                   (random.log_normal, 1, (0.5, 0.25), types.float32),
                                   (random.poisson, 1, (3.5,), types.uint32), (random.rand, 1, (), types.uint32)):
        ptx = _ptx(kernels.sample_kernel(link, fn, width, params), (states("philox"), out[::1], types.int64))
        assert "cumath_curand_" + fn.__name__ + "_philox" in ptx
    for skip in (random.skipahead, random.skipahead_sequence):
        assert skip.__name__ in _ptx(kernels.skipahead_kernel(link, skip),
                                     (states("xorwow"), types.int64, types.uint32[::1]))
    assert "normal4" in _ptx(kernels.gbm_kernel(link), (states("philox"), types.float32[:, :], types.int64,
                                                        types.float32, types.float32, types.float32))
