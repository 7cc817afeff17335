"""The device objects the GPU tests (and the benchmark and examples) use, in one table, so that

- the GPU tests build them from here (``build(name, cc)``),
- the CPU tests compile and link every GPU test kernel for sm_90 with the same objects (test_kernels_typing.py),
- ``pregenerate.py`` generates all their device code in parallel worker processes before a GPU session's tests
  run (libmathdx/NVRTC take seconds per object; one process would spend minutes on it).

Importing this module imports neither numba nor any native library.
"""

import numpy as np

import cumath.device as dev

F32, F64, F16 = np.float32, np.float64, np.float16

# ------------------------------------------------------------------------------------------------------ FFT
C2C_CASES = [(size, F32, d) for size in (8, 128, 127, 1024) for d in ("forward", "inverse")] + \
    [(128, F64, "forward"), (243, F64, "inverse"), (1024, F64, "forward")]
REAL_CASES = [(128, F32), (30, F32), (128, F64), (16, F64)]
THREAD_SIZES = [8, 32]
SMEM_CASES = [(128, F32, "forward"), (243, F64, "inverse")]
HALF_C2C_CASES = [(64, "forward", 4), (128, "inverse", 2)]
HALF_REAL_SIZE = 64
HALF_THREAD_SIZE = 16


def fft_c2c(size, prec, direction, cc):
    return dev.FFT(size=size, precision=prec, fft_type="c2c", execution="Block", direction=direction, sm=cc,
                   ffts_per_block="suggested")


def fft_real(size, prec, cc):
    kw = dict(size=size, precision=prec, execution="Block", sm=cc, ffts_per_block=2)
    return dev.FFT(fft_type="r2c", **kw), dev.FFT(fft_type="c2r", **kw)


def fft_thread(size, cc, prec=F64):
    return dev.FFT(size=size, precision=prec, fft_type="c2c", execution="Thread", direction="forward", sm=cc)


def fft_convolution(cc):
    kw = dict(size=128, precision=F32, fft_type="c2c", execution="Block", sm=cc, ffts_per_block=4)
    return dev.FFT(direction="forward", **kw), dev.FFT(direction="inverse", **kw)


def fft_smem(size, prec, direction, cc):
    return dev.FFT(size=size, precision=prec, fft_type="c2c", execution="Block", direction=direction, sm=cc,
                   ffts_per_block=2, execute_api="shared_memory")


def fft_half_c2c(size, direction, fpb, cc):
    return dev.FFT(size=size, precision=F16, fft_type="c2c", execution="Block", direction=direction, sm=cc,
                   ffts_per_block=fpb)


def fft_half_real(cc):
    kw = dict(size=HALF_REAL_SIZE, precision=F16, execution="Block", sm=cc, ffts_per_block=2)
    return dev.FFT(fft_type="r2c", **kw), dev.FFT(fft_type="c2r", **kw)


# ----------------------------------------------------------------------------------------------------- GEMM
GEMM_CASES = [((32, 32, 32), F32, "real"), ((7, 5, 3), F64, "real"), ((12, 20, 8), F64, "complex")]


def gemm(shape, prec, dtype, cc):
    return dev.Matmul(size=shape, precision=prec, data_type=dtype, sm=cc, block_size=64)


def gemm_tensor_mixed(cc):
    """fp16 x fp16 -> fp32 with the suggested (swizzled) shared layouts and the suggested register fragment."""
    return dev.matmul(size=(64, 32, 48), precision=(F16, F16, F32), data_type="real", sm=cc, block_size=128,
                      arrangement=("col_major", "row_major", "row_major"), execute_api="tensors",
                      tensor_types=("suggested_smem_a", "suggested_smem_b", "suggested_rmem_c"))


def gemm_tensor_f64(cc):
    """float64, odd sizes, plain layouts: the accumulator API and C in shared memory."""
    return dev.Matmul(size=(24, 17, 9), precision=F64, data_type="real", sm=cc, block_size=64)


def gemm_tensor_c128(cc):
    return dev.Matmul(size=(16, 12, 8), precision=F64, data_type="complex", sm=cc, block_size=64,
                      arrangement=("row_major", "col_major", "col_major"))


# -------------------------------------------------------------------------------------------------- solvers
SOLVE_CASES = [(16, 1, F64), (32, 3, F32), (9, 2, F64)]


def solver(kind, n, nrhs, prec, cc):
    if kind == "cholesky":
        return dev.CholeskySolver((n, n, nrhs), prec, "Block", "lower", sm=cc)
    return dev.LUPivotSolver((n, n, nrhs), prec, "Block", sm=cc)


def least_squares(cc):
    return dev.LeastSquaresSolver((12, 5, 2), F64, "Block", sm=cc)


def triangular(cc):
    return dev.TriangularSolver((8, 3), F64, "Block", sm=cc, fill_mode="lower")


def qr_pair(cc):
    """geqrf of a 12 x 5 matrix, then Q^T (and Q) applied from the left to 12 x 5 and 12 x 3 matrices."""
    fac = dev.QRFactorize((12, 5), F64, "Block", sm=cc)
    mult_t = dev.QRMultiply((12, 5, 5), F64, "Block", sm=cc, side="left", transpose_mode="transposed")
    mult_n = dev.QRMultiply((12, 3, 5), F64, "Block", sm=cc, side="left", transpose_mode="non_transposed")
    return fac, mult_t, mult_n


def lq_pair(cc):
    """gelqf of a 4 x 11 float32 matrix, then A Q^T from the right."""
    fac = dev.LQFactorize((4, 11), F32, "Block", sm=cc)
    mult = dev.LQMultiply((4, 11, 4), F32, "Block", sm=cc, side="right", transpose_mode="transposed")
    return fac, mult


def eig_svd(name, cc):
    """The eigenvalue/SVD/tridiagonal objects of the GPU tests."""
    if name == "heev":
        return dev.Solver("heev", (8,), F64, "Block", sm=cc, fill_mode="lower", job="overwrite_vectors")
    if name == "heev_c":
        return dev.Solver("heev", (6,), F64, "Block", sm=cc, fill_mode="upper", data_type="complex")
    if name == "htev":
        return dev.Solver("htev", (10,), F64, "Block", sm=cc, job="all_vectors", batches_per_block=2)
    if name == "gesvd":
        return dev.Solver("gesvd", (12, 7), F64, "Block", sm=cc, job="some_vectors")
    if name == "bdsvd":
        return dev.Solver("bdsvd", (9,), F64, "Block", sm=cc, job="all_vectors")
    if name == "hegv":
        return dev.Solver("hegv", (8,), F64, "Block", sm=cc, fill_mode="lower", job="overwrite_vectors", eig_type=1)
    if name == "gtsv":
        return dev.Solver("gtsv_no_pivot", (16, 16, 2), F64, "Block", sm=cc)
    raise KeyError(name)


EIG_SVD = ("heev", "heev_c", "htev", "gesvd", "bdsvd", "hegv", "gtsv")


# ------------------------------------------------------------------------------------ benchmark, examples
def bench_objects(cc):
    """The objects of benchmarks/device.py and examples/device_*.py (kept in step with them by hand)."""
    kw = dict(size=128, precision=F32, fft_type="c2c", execution="Block", ffts_per_block=4,
              elements_per_thread=16, sm=cc)
    ex = dict(fft_type="c2c", size=256, precision=F32, ffts_per_block="suggested", elements_per_thread=8,
              execution="Block", sm=cc)
    return [dev.FFT(direction="forward", **kw), dev.FFT(direction="inverse", **kw),
            dev.Matmul(size=(32, 32, 32), precision=F32, data_type="real", block_size=128, sm=cc,
                       arrangement=("row_major", "row_major", "row_major")),
            dev.FFT(direction="forward", **ex), dev.FFT(direction="inverse", **ex),
            dev.CholeskySolver((24, 24, 2), F64, "Block", "lower", sm=cc)]


# ---------------------------------------------------------------------------------------------------- all
TENSOR_GEMMS = (gemm_tensor_mixed, gemm_tensor_f64, gemm_tensor_c128)


def all_objects(cc):
    """Every object above, for code generation: (label, object, uses the tensor API)."""
    out = []
    for c in C2C_CASES:
        out.append((f"c2c{c}", fft_c2c(*c, cc), False))
    for c in REAL_CASES:
        out += [(f"real{c}", f, False) for f in fft_real(*c, cc)]
    out += [(f"thread{n}", fft_thread(n, cc), False) for n in THREAD_SIZES]
    out += [("thread-half", fft_thread(HALF_THREAD_SIZE, cc, F16), False)]
    out += [("conv", f, False) for f in fft_convolution(cc)]
    out += [(f"smem{c}", fft_smem(*c, cc), False) for c in SMEM_CASES]
    out += [(f"half{c}", fft_half_c2c(*c, cc), False) for c in HALF_C2C_CASES]
    out += [("half-real", f, False) for f in fft_half_real(cc)]
    out += [(f"gemm{c}", gemm(*c, cc), False) for c in GEMM_CASES]
    out += [(f.__name__, f(cc), True) for f in TENSOR_GEMMS]
    out += [(f"{k}{c}", solver(k, *c, cc), False) for k in ("cholesky", "lu_pivot") for c in SOLVE_CASES]
    out += [("gels", least_squares(cc), False), ("trsm", triangular(cc), False)]
    out += [("qr", s, False) for s in qr_pair(cc)] + [("lq", s, False) for s in lq_pair(cc)]
    out += [(name, eig_svd(name, cc), False) for name in EIG_SVD]
    out += [("bench/example", o, False) for o in bench_objects(cc)]
    return out
