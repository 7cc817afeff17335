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


# --------------------------------------------------------------------------------- half-precision vectors

def test_half_vector_constructor_and_dtype(numba_cuda):
    from numba import cuda, types

    from cumath.device import float16x2, float16x4

    def kernel(out, x):
        buf = cuda.local.array(4, dtype=float16x4)
        buf[0] = float16x4(x[0], x[1], 2.5, 3)  # float16, float32 and int arguments, all cast to float16
        h = float16x2(buf[0].z, buf[0].w)
        out[0] = buf[0].x + buf[0].y
        out[1] = h.x * h.y

    ptx, _ = cuda.compile(kernel, (types.float16[::1], types.float32[::1]), cc=(9, 0), output="ptx", abi="numba")
    assert "cvt.rn.f16.f32" in ptx

    def wrong_arity(out, x):
        out[0] = float16x4(x[0], x[1]).x

    assert "float16x4" in _typing_error(wrong_arity, (types.float16[::1], types.float32[::1]))


# ------------------------------------------------------------------------------------------- tensor API

@pytest.fixture(scope="module")
def tensor_mm(mathdx):
    import device_cases

    return device_cases.gemm_tensor_f64(90)


def test_tensor_api_typing_errors(tensor_mm, numba_cuda):
    from numba import cuda, types

    from cumath.device import axpby, clear, copy, copy_fragment, make_tensor

    mm = tensor_mm
    al, bl = mm.get_layout_smem_a(), mm.get_layout_smem_b()

    def wrong_matrix(a, b):
        smem = cuda.shared.array(0, dtype=np.float64)
        copy(make_tensor(a, mm.get_layout_gmem_a()), make_tensor(smem, bl))

    def wrong_dtype(a, b):
        smem = cuda.shared.array(0, dtype=np.float32)
        make_tensor(smem, al)

    def not_a_tensor(a, b):
        copy(a, b)

    def fragment_from_shared(a, b):
        smem = cuda.shared.array(0, dtype=np.float64)
        copy_fragment(make_tensor(a, mm.get_layout_gmem_a()), make_tensor(smem, al))

    def clear_shared(a, b):
        smem = cuda.shared.array(0, dtype=np.float64)
        clear(make_tensor(smem, al))

    def execute_global(a, b):
        frag = mm.get_partitioner().make_accumulator_fragment()
        mm.execute(make_tensor(a, mm.get_layout_gmem_a()), make_tensor(b, mm.get_layout_gmem_b()), frag)

    def execute_smem_c_without_scalars(a, b):
        smem = cuda.shared.array(0, dtype=np.float64)
        mm.execute(make_tensor(smem, al), make_tensor(smem, bl), make_tensor(smem, mm.get_layout_smem_c()))

    def axpby_shared(a, b):
        smem = cuda.shared.array(0, dtype=np.float64)
        axpby(1.0, make_tensor(smem, mm.get_layout_smem_c()), 2.0, make_tensor(smem, mm.get_layout_smem_c()))

    def results_of_partitioner(a, b):
        p = mm.suggest_partitioner()
        p.get_results()

    def runtime_leading_dimension(a, b):
        make_tensor(a, mm.get_layout_gmem_a(a.shape[0]))

    sig = (types.float64[::1], types.float64[::1])
    assert "cannot copy a tensor of A to one of B" in _typing_error(wrong_matrix, sig)
    assert "a smem_a tensor holds float64, the array holds float32" in _typing_error(wrong_dtype, sig)
    assert "must be a tensor made by make_tensor()" in _typing_error(not_a_tensor, sig)
    assert "copy_fragment() copies to or from a register fragment" in _typing_error(fragment_from_shared, sig)
    assert "clear(fragment) takes one register fragment" in _typing_error(clear_shared, sig)
    assert "A and B must be shared-memory tensors" in _typing_error(execute_global, sig)
    assert "accumulates into a register fragment" in _typing_error(execute_smem_c_without_scalars, sig)
    assert "axpby() works on register fragments" in _typing_error(axpby_shared, sig)
    assert "needs an accumulator created inside the kernel" in _typing_error(results_of_partitioner, sig)
    assert "takes integer constants" in _typing_error(runtime_leading_dimension, sig)


def test_tensor_layout_traits_in_kernels(tensor_mm, numba_cuda):
    from numba import cuda, types

    mm = tensor_mm

    def kernel(out):
        out[0] = mm.suggest_layout_smem_a().cosize
        out[1] = mm.get_layout_rmem_c().size
        out[2] = mm.get_layout_gmem_c(30).leading_dimension

    ptx, _ = cuda.compile(kernel, (types.int64[::1],), cc=(9, 0), output="ptx", abi="numba")
    for v in (mm.suggest_layout_smem_a().cosize, mm.get_layout_rmem_c().size, 30):
        assert str(v) in ptx


def test_solver_wrong_operand_dtype(mathdx, numba_cuda):
    from numba import cuda, types

    s = dev.Solver("heev", (8,), np.float64, "Block", sm=90, fill_mode="lower")

    def kernel(info):
        a = cuda.shared.array(64, dtype=np.float64)
        lam = cuda.shared.array(8, dtype=np.float32)
        ws = cuda.shared.array(16, dtype=np.float64)
        s.execute(a, lam, ws, info)

    assert "argument 'lambda' must be an array of float64, not of float32" in _typing_error(kernel,
                                                                                             (types.int32[::1],))
