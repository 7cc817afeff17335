"""The GPU engines of the distributed matmul (cuBLASMp) and direct solver (cuSOLVERMp) over NCCL, with one rank
on one GPU: against NumPy in float64 and against single-GPU cumath. CuPy arrays, PyTorch CUDA tensors, and NumPy
arrays / PyTorch CPU tensors (staged). Run: ``python -m pytest tests/distributed/test_gpu_linalg.py -m gpu``."""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath.distributed.distribution import BlockCyclic, BlockNonCyclic, ProcessGrid
from gpu_cases import (DTYPES, EPILOGS, QUALIFIERS, allreduce_form, epilog_reference, one_rank_gpu_context,
                       qualified, rand)
from mpi_helpers import TOL, rel_err

pytestmark = pytest.mark.gpu

GRID = ProcessGrid(shape=(1, 1))




def host(x):
    if type(x).__module__.startswith("cupy"):
        return x.get()
    if type(x).__module__.startswith("torch"):
        return x.cpu().numpy()
    return np.asarray(x)


def to(package, x):
    if package == "cupy":
        import cupy as cp

        return cp.asarray(x)
    if package in ("torch", "torch-cpu"):
        import torch

        t = torch.from_numpy(np.ascontiguousarray(x))
        return t.cuda() if package == "torch" else t
    return x


@pytest.fixture(scope="module")
def gpu():
    pytest.importorskip("cupy")
    with one_rank_gpu_context() as ctx:
        yield ctx


def _packages():
    out = ["cupy", "numpy"]
    try:
        import torch

        if torch.cuda.is_available():
            out += ["torch", "torch-cpu"]
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk, nb", [((13, 11, 7), 4), ((17, 5, 19), 8), ((129, 67, 33), 32), ((1, 3, 2), 1)])
def test_matmul_against_numpy_and_single_gpu(gpu, dtype, mnk, nb):
    import cupy as cp

    import cumath
    from cumath.distributed.linalg.advanced import Matmul

    m, n, k = mnk
    d = BlockCyclic(GRID, (nb, nb))
    A, B, C = rand((m, k), dtype, 1), rand((k, n), dtype, 2), rand((m, n), dtype, 3)
    a, b, c = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    c_before = c.copy()
    with Matmul(a, b, c, distributions=[d] * 3, alpha=1.5, beta=-0.5) as mm:
        mm.plan()
        out = mm.execute()
        assert isinstance(out, cp.ndarray) and out.dtype == dtype and out.shape == (m, n)
        ref = 1.5 * A.astype(np.complex128) @ B - 0.5 * C
        tol = 50 * TOL[np.dtype(dtype)] * max(1, np.sqrt(k) / 4)
        assert rel_err(host(out), ref) < tol
        cp.testing.assert_array_equal(c, c_before)  # c is read, never written
        single = cumath.linalg.advanced.matmul(a, b, c, alpha=1.5, beta=-0.5)
        assert rel_err(host(out), host(single)) < tol
        mm.reset_operands(a=cp.asarray(2 * A), alpha=1.0, beta=0.0)
        assert rel_err(host(mm.execute()), 2 * A.astype(np.complex128) @ B) < tol


@pytest.mark.parametrize("package", _packages())
def test_matmul_packages(gpu, package):
    from cumath.distributed.linalg.advanced import matmul

    d = BlockNonCyclic(GRID)
    A, B = rand((23, 29), np.float64, 4), rand((29, 31), np.float64, 5)
    out = matmul(to(package, A), to(package, B), distributions=[d] * 3)
    want = {"cupy": "cupy", "numpy": "numpy", "torch": "torch", "torch-cpu": "torch"}[package]
    assert type(out).__module__.split(".")[0] == want
    if package == "torch":
        assert out.is_cuda
    assert rel_err(host(out), A @ B) < 1e-12


def test_matmul_layouts(gpu):
    """Row-major, negative-stride and offset views: copied to column-major on the device."""
    import cupy as cp

    from cumath.distributed.linalg.advanced import matmul

    d = BlockCyclic(GRID, (5, 5))
    A, B = rand((19, 24), np.float32, 6), rand((12, 7), np.float32, 7)
    a = cp.asarray(A)[:, ::-2]  # negative stride, 19 x 12
    b = cp.asarray(np.asfortranarray(np.pad(B, ((1, 0), (0, 0)))))[1:]  # offset start, column-major
    out = matmul(a, b, distributions=[d] * 3)
    assert rel_err(host(out), A[:, ::-2].astype(np.float64) @ B) < 1e-4


@pytest.mark.parametrize("qa, qb", QUALIFIERS)
def test_matmul_qualifiers(gpu, qa, qb):
    import cupy as cp

    from cumath.distributed.linalg.advanced import matmul

    d = BlockCyclic(GRID, (4, 4))
    A, B, sa, sb, q = qualified(qa, qb)
    out = matmul(cp.asarray(sa), cp.asarray(sb), distributions=[d] * 3, qualifiers=q)
    assert rel_err(host(out), A @ B) < 1e-12


@pytest.mark.parametrize("epilog", EPILOGS)
def test_matmul_epilogs(gpu, epilog):
    import cupy as cp

    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul

    d = BlockCyclic(GRID, (3, 3))
    A, B = rand((10, 7), np.float32, 6), rand((7, 9), np.float32, 7)
    bias = rand((10,), np.float32, 8)
    ref = epilog_reference(A.astype(np.float64) @ B, epilog, bias)
    a, q = allreduce_form(A, epilog)  # ALLREDUCE: the TN form, the only one cuBLASMp's GEMM+AllReduce takes
    out = matmul(cp.asarray(a), cp.asarray(B), distributions=[d] * 3, epilog=MatmulEpilog[epilog],
                 epilog_inputs={"bias": cp.asarray(bias)} if "BIAS" in epilog else None, qualifiers=q)
    assert rel_err(host(out), ref) < (1e-3 if "GELU" in epilog else 1e-4)


def test_matmul_allreduce_nn_is_refused_before_the_library(gpu):
    """The NN 10x9x7 ALLREDUCE product cuBLASMp 0.10 answered NOT_SUPPORTED to: a ValueError naming TN."""
    import cupy as cp

    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul

    d = BlockCyclic(GRID, (3, 3))
    A, B = rand((10, 7), np.float32, 6), rand((7, 9), np.float32, 7)
    with pytest.raises(ValueError, match="TN form only"):
        matmul(cp.asarray(A), cp.asarray(B), distributions=[d] * 3, epilog=MatmulEpilog.ALLREDUCE)


def test_matmul_errors(gpu):
    import cupy as cp

    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul

    A, B = cp.asarray(rand((8, 6), np.float64, 1)), cp.asarray(rand((6, 8), np.float64, 2))
    with pytest.raises(ValueError, match="cuBLASMp needs matching block sizes"):
        matmul(A, B, distributions=[BlockCyclic(GRID, (3, 2))] * 3)
    d = BlockCyclic(GRID, (2, 2))
    with pytest.raises(NotImplementedError, match="not supported by the GPU engine"):
        matmul(A, B, distributions=[d] * 3, epilog=MatmulEpilog.DRELU)
    with pytest.raises(ValueError, match="needs epilog_inputs"):
        matmul(A, B, distributions=[d] * 3, epilog=MatmulEpilog.BIAS)
    with pytest.raises(ValueError, match="the bias holds 3 rows"):
        matmul(A, B, distributions=[d] * 3, epilog=MatmulEpilog.BIAS, epilog_inputs={"bias": cp.ones(3)})
    with pytest.raises(TypeError, match="is complex but the product is float64"):
        matmul(A, B, distributions=[d] * 3, alpha=1j)
    with pytest.raises(TypeError, match="supported dtypes"):
        matmul(A.astype(cp.int32), B, distributions=[d] * 3)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40), nb=st.integers(1, 9),
       dtype=st.sampled_from(DTYPES))
def test_matmul_property(gpu, m, n, k, nb, dtype):
    import cupy as cp

    from cumath.distributed.linalg.advanced import matmul

    d = BlockCyclic(GRID, (nb, nb))
    A, B = rand((m, k), dtype, m), rand((k, n), dtype, n)
    out = matmul(cp.asarray(A), cp.asarray(B), distributions=[d] * 3)
    assert rel_err(host(out), A.astype(np.complex128) @ B) < 100 * TOL[np.dtype(dtype)]


ENGINES = {"auto": "OneRankLU", "scalapack": "CuSOLVERMpLU"}  # CUMATH_DIST_SOLVE -> the one-rank engine


@pytest.fixture(params=list(ENGINES))
def engine(request, monkeypatch):
    """Both GPU engines of a one-rank solve: the single-GPU solver (the default) and cuSOLVERMp."""
    monkeypatch.setenv("CUMATH_DIST_SOLVE", request.param)
    return ENGINES[request.param]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, nrhs, nb", [(17, 3, 4), (31, 1, 5), (8, 8, 8), (129, 2, 16)])
def test_direct_solver(gpu, engine, dtype, n, nrhs, nb):
    import cupy as cp

    import cumath
    from cumath.distributed.linalg import DirectSolver

    d = BlockCyclic(GRID, (nb, nb))
    M = rand((n, n), dtype, 9) + n * np.eye(n, dtype=dtype)
    R = rand((n, nrhs), dtype, 10)
    a = cp.asarray(M)
    a_before = a.copy()
    with DirectSolver(a, cp.asarray(R), distributions=[d, d]) as s:
        s.plan()
        assert type(s._engine).__name__ == engine
        s.factorize()
        x = s.solve()
        assert isinstance(x, cp.ndarray) and x.dtype == dtype
        ref = np.linalg.solve(M.astype(np.complex128), R)
        tol = 100 * TOL[np.dtype(dtype)]
        assert rel_err(host(x), ref) < tol
        single = cumath.linalg.direct_solver(cp.asarray(M), cp.asarray(R))
        assert rel_err(host(x), host(single)) < tol
        s.reset_operands(b=cp.asarray(2 * R))
        assert rel_err(host(s.solve()), 2 * ref) < tol
    cp.testing.assert_array_equal(a, a_before)  # the caller's A is never written


@pytest.mark.parametrize("package", _packages())
def test_direct_solver_packages_and_vector(gpu, engine, package):
    from cumath.distributed.linalg import direct_solver

    d = BlockCyclic(GRID, (6, 6))
    M = rand((23, 23), np.float64, 11) + 23 * np.eye(23)
    r = rand((23,), np.float64, 12)
    x = direct_solver(to(package, M), to(package, r), distributions=[d, d])
    assert host(x).shape == (23,)
    assert rel_err(host(x), np.linalg.solve(M, r)) < 1e-12


def test_direct_solver_errors(gpu, engine):
    import cupy as cp

    from cumath.distributed.linalg import DirectSolver
    from cumath.errors import InvalidStateError, SingularMatrixError

    d = BlockCyclic(GRID, (4, 4))
    M = rand((9, 9), np.float64, 13)
    M[:, 4] = 0
    with DirectSolver(cp.asarray(M), cp.asarray(rand((9, 2), np.float64, 14)), distributions=[d, d]) as s:
        with pytest.raises(InvalidStateError, match="call plan"):
            s.factorize()
        s.plan()
        with pytest.raises(InvalidStateError, match="call factorize"):
            s.solve()
        with pytest.raises(SingularMatrixError, match="singular"):
            s.factorize()
    with pytest.raises(ValueError, match="cuSOLVERMp needs square blocks"):
        DirectSolver(cp.asarray(M), cp.asarray(M), distributions=[BlockCyclic(GRID, (4, 2))] * 2)
    with pytest.raises(ValueError, match="reset_operands: a has shape"):
        with DirectSolver(cp.asarray(M), cp.asarray(M), distributions=[d, d]) as s:
            s.plan()
            s.reset_operands(a=cp.ones((3, 3)))


@pytest.mark.parametrize("trans", ["N", "T", "C"])
@pytest.mark.parametrize("package", _packages())
def test_one_rank_solver_transposes_resets_and_layouts(gpu, trans, package):
    """The one-rank engine: op(A) X = B for each transpose against NumPy, new right-hand sides of another
    layout, a new A refactorized, a singular A refused; the caller's A and B are never written."""
    from cumath.distributed.linalg import DirectSolver
    from cumath.errors import SingularMatrixError

    d = BlockCyclic(GRID, (5, 5))
    n = 19
    M = rand((n, n), np.complex128, 21) + n * np.eye(n)
    R = rand((n, 3), np.complex128, 22)
    op = {"N": M, "T": M.T, "C": M.conj().T}[trans]
    a, b = to(package, M), to(package, R)
    with DirectSolver(a, b, distributions=[d, d], options={"transpose": trans}) as s:
        s.plan()
        assert type(s._engine).__name__ == "OneRankLU"
        s.factorize()
        assert rel_err(host(s.solve()), np.linalg.solve(op, R)) < 1e-12
        R2 = np.asfortranarray(rand((n, 3), np.complex128, 23))
        b2 = to(package, R2)
        if package == "cupy":
            import cupy as cp

            b2 = cp.asfortranarray(b2)  # another layout than the planned b's
        s.reset_operands(b=b2)
        assert rel_err(host(s.solve()), np.linalg.solve(op, R2)) < 1e-12
        M2 = M + 2 * np.eye(n)
        s.reset_operands(a=to(package, M2))
        s.factorize()
        op2 = {"N": M2, "T": M2.T, "C": M2.conj().T}[trans]
        assert rel_err(host(s.solve()), np.linalg.solve(op2, R2)) < 1e-12
        Z = M.copy()
        Z[:, 7] = 0
        s.reset_operands(a=to(package, Z))
        with pytest.raises(SingularMatrixError, match="singular"):
            s.factorize()
    np.testing.assert_array_equal(host(a), M)
    np.testing.assert_array_equal(host(b), R)


def test_operation_after_finalize_is_refused():
    """A plan made in a finalized context must raise, not touch released handles (in a subprocess)."""
    code = """
import cupy as cp
from mpi4py import MPI
import cumath.distributed as dist
from cumath.distributed.distribution import BlockCyclic, ProcessGrid
from cumath.distributed.linalg.advanced import Matmul
dist.initialize(0, MPI.COMM_WORLD, backends=("nccl",))
d = BlockCyclic(ProcessGrid(shape=(1, 1)), (4, 4))
mm = Matmul(cp.ones((8, 8)), cp.ones((8, 8)), distributions=[d] * 3)
mm.plan()
assert float(mm.execute()[0, 0]) == 8.0
dist.finalize()
try:
    mm.execute()
except Exception as e:
    print(type(e).__name__, e)
mm.free()
dist.initialize(0, MPI.COMM_WORLD, backends=("nccl",))
mm = Matmul(cp.ones((8, 8)), cp.ones((8, 8)), distributions=[d] * 3)
mm.plan()
print("again", float(mm.execute()[0, 0]))
mm.free()
dist.finalize()
print("clean")
"""
    pytest.importorskip("cupy")
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "InvalidStateError" in out.stdout and "finalize() has ended" in out.stdout
    assert "again 8.0" in out.stdout and "clean" in out.stdout


def test_torch_process_group_bring_up(tmp_path):
    """NCCL bring-up through a torch.distributed group (gloo, one process), in a subprocess."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    code = f"""
import numpy as np, torch, torch.distributed as td
td.init_process_group("gloo", init_method="file://{tmp_path}/store", rank=0, world_size=1)
import cumath.distributed as dist
from cumath.distributed.distribution import BlockCyclic, ProcessGrid
from cumath.distributed.linalg.advanced import matmul
ctx = dist.initialize(0, dist.TorchProcessGroup(), backends=("nccl",))
d = BlockCyclic(ProcessGrid(shape=(1, 1)), (8, 8))
a = torch.randn(33, 17, device="cuda", dtype=torch.float64)
b = torch.randn(17, 12, device="cuda", dtype=torch.float64)
out = matmul(a, b, distributions=[d] * 3)
print("err", float((out - a @ b).abs().max()))
dist.finalize()
td.destroy_process_group()
"""
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert float(out.stdout.split("err")[1]) < 1e-10
