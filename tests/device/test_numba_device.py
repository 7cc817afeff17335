"""Kernels calling the device objects, compiled by numba-cuda and linked (LTO, nvJitLink) to sm_90 cubins on a
machine without a GPU: typing of traits and calls, the error messages of wrong calls, and the link itself."""

import numpy as np
import pytest

import cumath.device as dev

ELF = b"\x7fELF"


@pytest.fixture(scope="module")
def fft_block(mathdx):
    return dev.fft(fft_type="c2c", size=64, precision=np.float32, direction="forward", ffts_per_block=2,
                   elements_per_thread=8, execution="Block", compiler="numba", code_type=("lto", (9, 0)))


def test_block_fft_kernel_links(fft_block, link_cubin):
    from numba import cuda, types

    f = fft_block

    def kernel(data):
        thread_data = cuda.local.array(shape=(f.storage_size,), dtype=f.value_type)
        shared_mem = cuda.shared.array(shape=(0,), dtype=f.value_type)
        fft_id = cuda.threadIdx.y
        index = cuda.threadIdx.x
        for i in range(f.elements_per_thread):
            thread_data[i] = data[fft_id, index]
            index += f.stride
        f(thread_data, shared_mem)
        f.execute(thread_data, shared_mem)
        index = cuda.threadIdx.x
        for i in range(f.elements_per_thread):
            data[fft_id, index] = thread_data[i]
            index += f.stride

    assert link_cubin(kernel, (types.complex64[:, ::1],))[:4] == ELF


def test_forward_and_inverse_in_one_kernel(mathdx, link_cubin):
    from numba import cuda, types

    kw = dict(fft_type="c2c", size=32, precision=np.float64, ffts_per_block=1, elements_per_thread=4,
              execution="Block", code_type=("lto", 90))
    fwd = dev.fft(direction="forward", **kw)
    inv = dev.fft(direction="inverse", **kw)

    def kernel(data, filt):
        td = cuda.local.array(fwd.storage_size, dtype=fwd.value_type)
        smem = cuda.shared.array(0, dtype=fwd.value_type)
        i0 = cuda.threadIdx.x
        for i in range(fwd.elements_per_thread):
            td[i] = data[i0 + i * fwd.stride]
        fwd(td, smem)
        for i in range(fwd.elements_per_thread):
            td[i] = td[i] * filt[i0 + i * fwd.stride]
        inv(td, smem)
        for i in range(fwd.elements_per_thread):
            data[i0 + i * fwd.stride] = td[i] / fwd.size

    assert link_cubin(kernel, (types.complex128[::1], types.complex128[::1]))[:4] == ELF


def test_thread_fft_kernel_links(mathdx, link_cubin):
    from numba import cuda, types

    f = dev.FFT(size=8, precision=np.float32, fft_type="c2c", execution="Thread", direction="inverse", sm=90)

    def kernel(data):
        td = cuda.local.array(f.storage_size, dtype=f.value_type)
        row = cuda.grid(1)
        for i in range(f.size):
            td[i] = data[row, i]
        f.execute(td)
        for i in range(f.size):
            data[row, i] = td[i]

    assert link_cubin(kernel, (types.complex64[:, ::1],))[:4] == ELF


def test_matmul_kernel_links(mathdx, link_cubin):
    from numba import cuda, types

    MM = dev.matmul(size=(16, 8, 32), precision=np.float32, data_type="real", block_size=64,
                    transpose_mode=("non_transposed", "transposed"), code_type=("lto", 90))
    a_size, b_size, c_size = MM.a_size, MM.b_size, MM.c_size

    def kernel(a, b, c, alpha, beta):
        sa = cuda.shared.array(a_size, dtype=np.float32)
        sb = cuda.shared.array(b_size, dtype=np.float32)
        sc = cuda.shared.array(c_size, dtype=np.float32)
        t = cuda.threadIdx.x
        for i in range(t, a_size, MM.block_size):
            sa[i] = a[i]
        for i in range(t, b_size, MM.block_size):
            sb[i] = b[i]
        for i in range(t, c_size, MM.block_size):
            sc[i] = c[i]
        cuda.syncthreads()
        MM(alpha, sa, sb, beta, sc)
        cuda.syncthreads()
        for i in range(t, c_size, MM.block_size):
            c[i] = sc[i]

    sig = (types.float32[::1], types.float32[::1], types.float32[::1], types.float64, types.float64)
    assert link_cubin(kernel, sig)[:4] == ELF


def test_dynamic_leading_dimension_matmul_links(mathdx, link_cubin):
    from numba import cuda, types

    MM = dev.Matmul(size=(8, 8, 8), precision=np.float64, data_type="complex", sm=90, block_size=32,
                    execute_api="dynamic_leading_dimensions")

    def kernel(c, ld):
        sa = cuda.shared.array(100, dtype=np.complex128)
        sb = cuda.shared.array(100, dtype=np.complex128)
        sc = cuda.shared.array(100, dtype=np.complex128)
        MM.execute(1.0 + 0j, sa, ld, sb, ld, 0j, sc, ld)
        c[0] = sc[0]

    assert link_cubin(kernel, (types.complex128[::1], types.uint32))[:4] == ELF


def test_cholesky_kernel_links(mathdx, link_cubin):
    from numba import cuda, types

    s = dev.CholeskySolver((16, 16, 2), np.float64, "Block", "lower", sm=90)
    n_a, n_b = s.a_size(), s.b_size()

    def kernel(a, b, info):
        sa = cuda.shared.array(n_a, dtype=s.value_type)
        sb = cuda.shared.array(n_b, dtype=s.value_type)
        for i in range(cuda.threadIdx.x, n_a, s.block_dim[0]):
            sa[i] = a[cuda.blockIdx.x, i]
        for i in range(cuda.threadIdx.x, n_b, s.block_dim[0]):
            sb[i] = b[cuda.blockIdx.x, i]
        cuda.syncthreads()
        s.factorize(sa, info[cuda.blockIdx.x:])
        s.solve(sa, sb)
        cuda.syncthreads()
        for i in range(cuda.threadIdx.x, n_b, s.block_dim[0]):
            b[cuda.blockIdx.x, i] = sb[i]

    sig = (types.float64[:, ::1], types.float64[:, ::1], types.int32[::1])
    assert link_cubin(kernel, sig)[:4] == ELF


# --------------------------------------------------------------------------------------------- typing errors

def _typing_error(kernel, sig):
    from numba import cuda

    with pytest.raises(Exception) as info:  # numba.core's or numba.cuda.core's TypingError, by version
        cuda.compile(kernel, sig, cc=(9, 0), output="ptx", abi="numba")
    assert type(info.value).__name__ == "TypingError", info.value
    return str(info.value)


def test_wrong_calls_are_typing_errors(fft_block, numba_cuda):
    from numba import cuda, types

    f = fft_block

    def too_few(data):
        td = cuda.local.array(f.storage_size, dtype=f.value_type)
        f(td)

    def wrong_dtype(data):
        td = cuda.local.array(f.storage_size, dtype=np.float64)
        sm = cuda.shared.array(0, dtype=f.value_type)
        f.execute(td, sm)

    def scalar_arg(data):
        sm = cuda.shared.array(0, dtype=f.value_type)
        f.execute(1.0, sm)

    def no_such_method(data):
        f.factorize(data)

    def kw_call(data):
        td = cuda.local.array(f.storage_size, dtype=f.value_type)
        f.execute(thread_data=td, shared_memory=td)

    sig = (types.complex64[::1],)
    assert "FFT.call() takes 2 arguments (thread_data, shared_memory), 1 given" in _typing_error(too_few, sig)
    assert "argument 'thread_data' must be an array of complex64, not of float64" in _typing_error(wrong_dtype, sig)
    assert "argument 'thread_data' must be an array or a pointer" in _typing_error(scalar_arg, sig)
    assert "factorize" in _typing_error(no_such_method, sig)
    assert "positional arguments only" in _typing_error(kw_call, sig)


def test_traits_are_compile_time_constants(fft_block, numba_cuda):
    from numba import cuda, types

    f = fft_block

    def kernel(out):
        out[0] = f.storage_size
        out[1] = f.stride
        out[2] = f.block_dim[1]
        out[3] = f.shared_memory_size

    ptx, _ = cuda.compile(kernel, (types.int64[::1],), cc=(9, 0), output="ptx", abi="numba")
    for value in (f.storage_size, f.stride, f.block_dim[1], f.shared_memory_size):
        assert str(value) in ptx
