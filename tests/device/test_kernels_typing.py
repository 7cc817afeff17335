"""Every GPU test kernel (device_kernels.py over the objects of device_cases.py, with the argument types the GPU
tests pass) typed, compiled and linked (LTO, nvJitLink) to an sm_90 cubin here, without a GPU: what the GPU
session launches has already compiled, and its device code is in this machine's cache."""

import numpy as np
import pytest

import device_cases as C

ELF = b"\x7fELF"
CC = 90


@pytest.fixture(scope="module")
def kernels(numba_cuda, mathdx):
    import device_kernels

    return device_kernels


@pytest.fixture(scope="module")
def link(link_cubin):
    def run(kernel, sig):
        assert link_cubin(kernel.py_func, sig)[:4] == ELF

    return run


def _t(name):
    from numba import types

    return getattr(types, name)


def _arr(dtype, ndim):
    from numba import types

    return types.Array(_t(dtype), ndim, "C")


def _cplx(prec):
    return "complex64" if prec is np.float32 else "complex128"


def _real(prec):
    return np.dtype(prec).name


# ------------------------------------------------------------------------------------------------------ FFT

@pytest.mark.parametrize("size, prec, direction", C.C2C_CASES)
def test_fft_c2c_kernels(kernels, link, size, prec, direction):
    f = C.fft_c2c(size, prec, direction, CC)
    link(kernels.fft_block_kernel(f), (_arr(_cplx(prec), 2),) * 2)


@pytest.mark.parametrize("size, prec", C.REAL_CASES)
def test_fft_real_kernels(kernels, link, size, prec):
    r2c, c2r = C.fft_real(size, prec, CC)
    link(kernels.fft_block_kernel(r2c), (_arr(_real(prec), 2), _arr(_cplx(prec), 2)))
    link(kernels.fft_block_kernel(c2r), (_arr(_cplx(prec), 2), _arr(_real(prec), 2)))


def test_fft_thread_and_convolution_kernels(kernels, link):
    for n in C.THREAD_SIZES:
        link(kernels.fft_thread_kernel(C.fft_thread(n, CC)), (_arr("complex128", 2),) * 2)
    fwd, inv = C.fft_convolution(CC)
    link(kernels.fft_convolution_kernel(fwd, inv), (_arr("complex64", 2), _arr("complex64", 1), _arr("complex64", 2)))


@pytest.mark.parametrize("size, prec, direction", C.SMEM_CASES)
def test_fft_shared_memory_kernels(kernels, link, size, prec, direction):
    link(kernels.fft_smem_kernel(C.fft_smem(size, prec, direction, CC)), (_arr(_cplx(prec), 2),) * 2)


def test_fft_half_kernels(kernels, link):
    cplx, real = _arr("float16", 3), _arr("float16", 2)
    for case in C.HALF_C2C_CASES:
        link(kernels.fft_half_kernel(C.fft_half_c2c(*case, CC)), (cplx, cplx))
    r2c, c2r = C.fft_half_real(CC)
    link(kernels.fft_half_kernel(r2c), (real, cplx))
    link(kernels.fft_half_kernel(c2r), (cplx, real))
    link(kernels.fft_half_thread_kernel(C.fft_thread(C.HALF_THREAD_SIZE, CC, np.float16)), (cplx, cplx))


# ----------------------------------------------------------------------------------------------------- GEMM

@pytest.mark.parametrize("shape, prec, dtype", C.GEMM_CASES)
def test_gemm_kernels(kernels, link, shape, prec, dtype):
    mm = C.gemm(shape, prec, dtype, CC)
    vt = mm.c_value_type.name
    link(kernels.gemm_kernel(mm), (_arr(vt, 3),) * 3 + (_t("float64"), _t("float64")))


def test_gemm_tensor_kernels(kernels, link):
    mm = C.gemm_tensor_mixed(CC)
    k, _ = kernels.gemm_tensor_kernel(mm)
    h, f = _arr("float16", 2), _arr("float32", 2)
    link(k, (_t("float64"), h, h, _t("float64"), f, f, _arr("float32", 3)))
    mm = C.gemm_tensor_f64(CC)
    k, _ = kernels.gemm_accumulator_kernel(mm)
    d = _arr("float64", 2)
    link(k, (_t("float64"), d, d, _t("float64"), d, d))
    mm = C.gemm_tensor_c128(CC)
    k, _ = kernels.gemm_smem_c_kernel(mm)
    z = _arr("complex128", 2)
    link(k, (_t("complex128"), z, z, _t("complex128"), z))


# -------------------------------------------------------------------------------------------------- solvers

def test_solver_kernels(kernels, link):
    for kind in ("cholesky", "lu_pivot"):
        for case in C.SOLVE_CASES:
            s = C.solver(kind, *case, CC)
            vt = s.value_type.name
            link(kernels.solve_kernel(s, kind == "lu_pivot"), (_arr(vt, 3), _arr(vt, 3), _arr("int32", 1)))
    d3 = _arr("float64", 3)
    link(kernels.least_squares_kernel(C.least_squares(CC)), (d3, d3))
    link(kernels.triangular_solve_kernel(C.triangular(CC)), (d3, d3))


def _flat_sig(s):
    dtypes = {p: {"v": s.value_type.name, "w": s.value_type.name, "r": s._precision, "i": "int32"}[kind]
              for p, kind in s._params(s._function_names[0])}
    return tuple(_arr(dtypes[p], 2) for p in s.execute_parameters if p != "workspace")


@pytest.mark.parametrize("group", ["qr", "lq"] + list(C.EIG_SVD))
def test_flat_solver_kernels(kernels, link, group):
    objs = C.qr_pair(CC) if group == "qr" else C.lq_pair(CC) if group == "lq" else (C.eig_svd(group, CC),)
    for s in objs:
        link(kernels.flat_solver_kernel(s), _flat_sig(s))


# --------------------------------------------------------------------------------------------------- random

def test_random_kernels(kernels, curand_headers):
    from numba import types
    from numba.cuda.np.numpy_support import from_dtype

    from cumath.device import random
    from cumath.device.random._states import state_dtype

    def ptx(kernel, sig):
        from numba import cuda

        return cuda.compile(kernel.py_func, sig, cc=(9, 0), output="ptx", abi="numba")[0]

    def states(gen):
        return types.Array(from_dtype(state_dtype(gen)), 1, "C")

    link = random.Compile(cc=90).files
    for gen in ("philox", "xorwow", "mrg"):
        assert "cumath_curand_init_" + gen in ptx(kernels.init_pseudo_kernel(link),
                                                  (states(gen), types.int64, types.int64))
    for gen, scrambled, vt in (("sobol32", False, types.uint32), ("scrambled_sobol64", True, types.uint64)):
        sig = (states(gen), types.Array(vt, 2, "C"), types.Array(vt, 1, "C"), types.int64)
        assert "cumath_curand_init_" + gen in ptx(kernels.init_sobol_kernel(link, scrambled), sig)
    for fn, width, params, out in ((random.uniform, 1, (), types.float32), (random.normal4, 4, (), types.float32),
                                   (random.normal2_double, 2, (), types.float64),
                                   (random.log_normal, 1, (0.5, 0.25), types.float32),
                                   (random.poisson, 1, (3.5,), types.uint32), (random.rand, 1, (), types.uint32)):
        text = ptx(kernels.sample_kernel(link, fn, width, params), (states("philox"), out[::1], types.int64))
        assert "cumath_curand_" + fn.__name__ + "_philox" in text
    for skip in (random.skipahead, random.skipahead_sequence):
        assert skip.__name__ in ptx(kernels.skipahead_kernel(link, skip),
                                    (states("xorwow"), types.int64, types.uint32[::1]))
    assert "normal4" in ptx(kernels.gbm_kernel(link), (states("philox"), types.float32[:, :], types.int64,
                                                       types.float32, types.float32, types.float32))


def test_kernel_factories_are_memoised(kernels):
    f = C.fft_c2c(128, np.float32, "forward", CC)
    g = C.fft_c2c(128, np.float32, "forward", CC)  # another object with the same descriptor
    assert f is not g and kernels.fft_block_kernel(f) is kernels.fft_block_kernel(g)
    assert kernels.fft_block_kernel(f) is not kernels.fft_block_kernel(C.fft_c2c(128, np.float32, "inverse", CC))
