"""The GPU engines (NCCL bring-up, cuBLASMp matmul, cuSOLVERMp LU) on a NumPy emulation of the libraries
(``mp_emulation``), with NumPy and PyTorch CPU operands staged to emulated device memory: no GPU needed.
Checks the staging, the argument order of every call, results against NumPy, and that finalize() releases
every descriptor, grid, handle, communicator and buffer in the right order."""

import gc
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cumath.distributed.distribution import BlockCyclic, BlockNonCyclic, ProcessGrid
from mp_emulation import emulate
from gpu_cases import (DTYPES, EPILOGS, QUALIFIERS, allreduce_form, epilog_reference, one_rank_gpu_context,
                       qualified, rand)
from mpi_helpers import TOL, rel_err

GRID = ProcessGrid(shape=(1, 1))




@pytest.fixture
def emu(monkeypatch):
    pytest.importorskip("scipy")
    monkeypatch.setenv("CUMATH_DIST_SOLVE", "scalapack")  # the solver's cuSOLVERMp engine, not the one-rank one
    with one_rank_gpu_context(lambda: emulate(monkeypatch)) as e:
        yield e
        import cumath.distributed as dist

        dist.finalize()
        gc.collect()  # buffers still referenced by collected plans go back now, while the emulation is installed
        leftover = {k for k, _ in e.objects.values()}
        assert not leftover, f"not released at finalize: {leftover}"
        assert not e.memory, f"{len(e.memory)} device buffer(s) never freed"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk, nb", [((13, 11, 7), 4), ((17, 5, 19), 8), ((1, 3, 2), 1)])
def test_matmul(emu, dtype, mnk, nb, caplog):
    from cumath.distributed.linalg.advanced import Matmul

    m, n, k = mnk
    d = BlockCyclic(GRID, (nb, nb))
    A, B, C = rand((m, k), dtype, 1), rand((k, n), dtype, 2), rand((m, n), dtype, 3)
    c_before = C.copy()
    with caplog.at_level("INFO", logger="cumath.distributed.linalg._device"):
        with Matmul(A, B, C, distributions=[d] * 3, alpha=1.5, beta=-0.5) as mm:
            mm.plan()
            out = mm.execute()
            assert isinstance(out, np.ndarray) and out.dtype == dtype and out.flags.f_contiguous
            ref = 1.5 * A.astype(np.complex128) @ B - 0.5 * C
            assert rel_err(out, ref) < 50 * TOL[np.dtype(dtype)]
            np.testing.assert_array_equal(C, c_before)
            mm.reset_operands(a=2 * A, alpha=1.0, beta=0.0)
            assert rel_err(mm.execute(), 2 * A.astype(np.complex128) @ B) < 50 * TOL[np.dtype(dtype)]
    assert "staging a" in caplog.text  # NumPy operands are staged, and it is logged
    assert [c for c in emu.calls if c[0] == "cublasMpMatmul"][0][1] == (m, n, k, 0, 0, 0)
    assert not emu.live("cublasmp-desc") and not emu.live("cublasmp-matmul")  # free() released the plan's


@pytest.mark.parametrize("qa, qb", QUALIFIERS)
def test_matmul_qualifiers(emu, qa, qb):
    from cumath.distributed.linalg.advanced import matmul

    d = BlockCyclic(GRID, (2, 2))
    A, B, sa, sb, q = qualified(qa, qb)
    out = matmul(sa, sb, distributions=[d] * 3, qualifiers=q)
    assert rel_err(out, A @ B) < 1e-12
    ops = [c for c in emu.calls if c[0] == "cublasMpMatmul"][0][1][3:5]
    assert ops == tuple((2 if cj else 1) if t else 0 for t, cj in (qa, qb))  # conj alone: a conjugated copy


@pytest.mark.parametrize("epilog", EPILOGS)
def test_matmul_epilogs(emu, epilog):
    import torch

    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul

    d = BlockNonCyclic(GRID)
    A, B = rand((10, 7), np.float64, 6), rand((7, 9), np.float64, 7)
    bias = rand((10,), np.float64, 8)
    ref = epilog_reference(A @ B, epilog, bias)
    a, q = allreduce_form(A, epilog)
    out = matmul(torch.from_numpy(a), torch.from_numpy(B), distributions=[d] * 3, epilog=MatmulEpilog[epilog],
                 epilog_inputs={"bias": bias} if "BIAS" in epilog else None, qualifiers=q)
    assert isinstance(out, torch.Tensor)
    assert rel_err(out.numpy(), ref) < 1e-12
    from cumath.distributed import get_context

    # one rank: ALLREDUCE's all-reduce is the identity, and the product runs as DEFAULT (cuBLASMp refuses
    # GEMM+AllReduce on a 1 x 1 grid)
    ran = "DEFAULT" if epilog == "ALLREDUCE" and get_context().process_group.nranks == 1 else epilog
    assert [c for c in emu.calls if c[0] == "cublasMpMatmul"][0][1][5] == MatmulEpilog[ran].value


@pytest.mark.parametrize("qa, qb", [((False, False), (False, False)), ((True, False), (True, False)),
                                    ((False, False), (True, False)), ((True, True), (False, False))])
def test_matmul_allreduce_refuses_other_forms_before_the_library(emu, qa, qb):
    """GEMM+AllReduce is TN only in cuBLASMp: NN (what cuBLASMp 0.10 answered NOT_SUPPORTED to), TT, NT and a
    conjugated A are refused with a ValueError that names the TN form, and no descriptor is made."""
    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul, matrix_qualifiers_dtype

    dtype = np.complex128 if qa[1] else np.float64
    A, B = rand((10, 7), dtype, 6), rand((7, 9), dtype, 7)
    q = np.zeros(2, dtype=matrix_qualifiers_dtype)
    q[0], q[1] = qa, qb
    sa = np.ascontiguousarray(A.T) if qa[0] else A
    sb = np.ascontiguousarray(B.T) if qb[0] else B
    with pytest.raises(ValueError, match=r"ALLREDUCE \(GEMM\+AllReduce\) in the TN form only.*this product is"):
        matmul(sa, sb, distributions=[BlockNonCyclic(GRID)] * 3, epilog=MatmulEpilog.ALLREDUCE, qualifiers=q)
    assert not [c for c in emu.calls if c[0].startswith("cublasMpMatmul")]
    assert not emu.live("cublasmp-desc") and not emu.live("cublasmp-matmul")


def test_matmul_allreduce_refused_by_the_library_says_what_it_takes(emu, monkeypatch):
    """A TN ALLREDUCE product the library still refuses (NOT_SUPPORTED at the workspace query) is a ValueError
    naming the form, the shape and the grid, chained from the library's error."""
    from cumath._bindings import cublasmp
    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul
    from cumath.errors import CUBLASMpError

    monkeypatch.setattr(type(cublasmp._L), "cublasMpMatmul_bufferSize", lambda self, *args: 7)
    A, B = rand((10, 7), np.float64, 6), rand((7, 9), np.float64, 7)
    from cumath.distributed import get_context

    a, q = allreduce_form(A, "ALLREDUCE")
    if get_context().process_group.nranks == 1:  # nothing to reduce: the product runs as DEFAULT (cuBLASMp's GEMM
        out = matmul(a, B, distributions=[BlockNonCyclic(GRID)] * 3, epilog=MatmulEpilog.ALLREDUCE, qualifiers=q)
        assert rel_err(np.asarray(out), A @ B) < 1e-12  # path, once cublasMpMatmul refuses the DEFAULT product)
        return
    with pytest.raises(ValueError, match=r"refused this TN 10x9x7 float64 product on a \d+x\d+ grid") as info:
        matmul(a, B, distributions=[BlockNonCyclic(GRID)] * 3, epilog=MatmulEpilog.ALLREDUCE, qualifiers=q)
    assert isinstance(info.value.__cause__, CUBLASMpError)


def test_matmul_overlapping_algorithm_registers_its_workspace(emu):
    from cumath.distributed.linalg.advanced import Matmul, MatmulAlgoType

    d = BlockCyclic(GRID, (4, 4))
    A, B = rand((12, 8), np.float64, 1), rand((8, 10), np.float64, 2)
    with Matmul(A, B, distributions=[d] * 3, options={"algo_type": MatmulAlgoType.SPLIT_P2P}) as mm:
        mm.plan()
        assert rel_err(mm.execute(), A @ B) < 1e-12
        assert len(emu.live("cublasmp-registered")) == 1
        mm.execute()  # the same size: no new registration
        assert len(emu.live("cublasmp-registered")) == 1
    assert not emu.live("cublasmp-registered")  # free() deregistered and freed it


def test_matmul_layouts_and_errors(emu):
    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul

    d = BlockCyclic(GRID, (5, 5))
    A, B = rand((19, 24), np.float32, 6), rand((12, 7), np.float32, 7)
    out = matmul(A[:, ::-2], B, distributions=[d] * 3)  # negative stride: a column-major staged copy
    assert rel_err(out, A[:, ::-2].astype(np.float64) @ B) < 1e-5
    with pytest.raises(ValueError, match="cuBLASMp needs matching block sizes"):
        matmul(A[:, :12], B, distributions=[BlockCyclic(GRID, (3, 2))] * 3)
    with pytest.raises(NotImplementedError, match="not supported by the GPU engine"):
        matmul(A[:, :12], B, distributions=[d] * 3, epilog=MatmulEpilog.BGRADA)
    with pytest.raises(TypeError, match="is complex but the product is float32"):
        matmul(A[:, :12], B, distributions=[d] * 3, alpha=2j)
    with pytest.raises(ValueError, match="reset_operands: a has shape"):
        from cumath.distributed.linalg.advanced import Matmul

        with Matmul(A[:, :12], B, distributions=[d] * 3) as mm:
            mm.plan()
            mm.reset_operands(a=A)


# the emulation is installed once for all the examples (they share nothing but the context)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(1, 30), n=st.integers(1, 30), k=st.integers(1, 30), nb=st.integers(1, 9),
       dtype=st.sampled_from(DTYPES))
def test_matmul_property(emu, m, n, k, nb, dtype):
    from cumath.distributed.linalg.advanced import matmul

    d = BlockCyclic(GRID, (nb, nb))
    A, B = rand((m, k), dtype, m), rand((k, n), dtype, n)
    assert rel_err(matmul(A, B, distributions=[d] * 3), A.astype(np.complex128) @ B) < 100 * TOL[np.dtype(dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, nrhs, nb, trans", [(17, 3, 4, "N"), (31, 1, 5, "T"), (8, 8, 8, "C")])
def test_direct_solver(emu, dtype, n, nrhs, nb, trans):
    from cumath.distributed.linalg import DirectSolver

    d = BlockCyclic(GRID, (nb, nb))
    M = rand((n, n), dtype, 9) + n * np.eye(n, dtype=dtype)
    R = rand((n, nrhs), dtype, 10)
    a_before = M.copy()
    op = {"N": M, "T": M.T, "C": M.conj().T}[trans]
    with DirectSolver(M, R, distributions=[d, d], options={"transpose": trans}) as s:
        s.plan()
        s.factorize()
        x = s.solve()
        ref = np.linalg.solve(op.astype(np.complex128), R)
        assert x.dtype == dtype and rel_err(x, ref) < 100 * TOL[np.dtype(dtype)]
        s.reset_operands(b=2 * R)
        assert rel_err(s.solve(), 2 * ref) < 100 * TOL[np.dtype(dtype)]
        s.reset_operands(a=2 * M)
        s.factorize()
        assert rel_err(s.solve(), ref) < 100 * TOL[np.dtype(dtype)]
    np.testing.assert_array_equal(M, a_before)
    assert not emu.live("cusolvermp-desc")


def test_direct_solver_vector_torch_and_singular(emu):
    import torch

    from cumath.distributed.linalg import direct_solver
    from cumath.errors import SingularMatrixError

    d = BlockCyclic(GRID, (6, 6))
    M = rand((23, 23), np.float64, 11) + 23 * np.eye(23)
    r = rand((23,), np.float64, 12)
    x = direct_solver(torch.from_numpy(M), torch.from_numpy(r), distributions=[d, d])
    assert isinstance(x, torch.Tensor) and x.shape == (23,)
    assert rel_err(x.numpy(), np.linalg.solve(M, r)) < 1e-12
    M[:, 5] = 0
    with pytest.raises(SingularMatrixError, match="singular"):
        direct_solver(M, r, distributions=[d, d])


@pytest.mark.parametrize("zero_column, nb", [(4, 4), (0, 3), (8, 4), (6, 5)])
def test_singular_found_when_getrf_leaves_info_zero(emu, zero_column, nb):
    """cuSOLVERMp 0.9's getrf leaves info at 0 for a 9x9 matrix with a zero column: the engine reads the diagonal
    of U back (one strided copy on a 1x1 grid) and reports the first exactly zero pivot, 1-based as LAPACK."""
    import scipy.linalg

    from cumath.distributed.linalg import DirectSolver
    from cumath.errors import SingularMatrixError

    emu.getrf_reports_singular = False
    d = BlockCyclic(GRID, (nb, nb))
    M = rand((9, 9), np.float64, 13)
    M[:, zero_column] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.flatnonzero(np.diag(scipy.linalg.lu_factor(M, check_finite=False)[0]) == 0)
    with DirectSolver(M, rand((9, 2), np.float64, 14), distributions=[d, d]) as s:
        s.plan()
        with pytest.raises(SingularMatrixError, match=rf"singular: U\({expected[0] + 1}, {expected[0] + 1}\)"):
            s.factorize()
    copies = [args for name, args in emu.calls if name == "cudaMemcpy2DAsync"]
    assert copies == [(8, 10 * 8, 8, 9)], "one strided copy of the 9 diagonal entries (pitch lld + 1)"
    M = rand((9, 9), np.float64, 15) + 9 * np.eye(9)
    b = rand((9, 2), np.float64, 16)
    with DirectSolver(M, b, distributions=[d, d]) as s:  # not singular: the scan finds nothing
        s.plan()
        s.factorize()
        assert rel_err(s.solve(), np.linalg.solve(M, b)) < 1e-12


@pytest.mark.parametrize("grid, first", [((1, 1), (0, 0)), ((2, 2), (0, 0)), ((2, 2), (1, 0)), ((2, 3), (0, 0)),
                                         ((3, 2), (1, 1)), ((1, 4), (0, 2))])
@pytest.mark.parametrize("n, nb", [(9, 4), (23, 3), (1, 1), (16, 16)])
def test_diagonal_runs_cover_the_diagonal_once(grid, first, n, nb):
    """Every diagonal entry belongs to exactly one rank's runs, at the local position block-cyclic storage puts
    it, and each run stays on one local diagonal."""
    from cumath.distributed.linalg._gpu_solver import diagonal_runs

    seen = {}
    for prow in range(grid[0]):
        for pcol in range(grid[1]):
            runs, index = diagonal_runs(n, nb, grid, (prow, pcol), first)
            places = [(lr + i, lc + i) for lr, lc, count in runs for i in range(count)]
            assert len(places) == index.size
            for (r, c), j in zip(places, index.tolist()):
                k = j // nb
                assert ((k + first[0]) % grid[0], (k + first[1]) % grid[1]) == (prow, pcol)
                assert (r, c) == ((k // grid[0]) * nb + j % nb, (k // grid[1]) * nb + j % nb)
                assert j not in seen
                seen[j] = (prow, pcol)
    assert sorted(seen) == list(range(n))
    if grid[0] == grid[1]:  # square grids: one strided copy per rank
        assert all(len(diagonal_runs(n, nb, grid, (p, p), first)[0]) <= 1 for p in range(grid[0]))


@settings(max_examples=60, deadline=None)
@given(nprow=st.integers(1, 4), npcol=st.integers(1, 4), n=st.integers(1, 40), nb=st.integers(1, 9),
       data=st.data())
def test_diagonal_runs_property(nprow, npcol, n, nb, data):
    """Any grid, first process, size and block: the ranks' runs hold every diagonal entry once, each run on one
    local diagonal inside the rank's local matrix."""
    from cumath.distributed.linalg._gpu_solver import diagonal_runs

    first = (data.draw(st.integers(0, nprow - 1)), data.draw(st.integers(0, npcol - 1)))
    nblocks = -(-n // nb)
    seen = []
    for prow in range(nprow):
        for pcol in range(npcol):
            runs, index = diagonal_runs(n, nb, (nprow, npcol), (prow, pcol), first)
            rows = sum(min(nb, n - k * nb) for k in range(nblocks) if (k + first[0]) % nprow == prow)
            cols = sum(min(nb, n - k * nb) for k in range(nblocks) if (k + first[1]) % npcol == pcol)
            assert sum(c for _, _, c in runs) == index.size
            for lr, lc, count in runs:
                assert 0 <= lr and lr + count <= rows and 0 <= lc and lc + count <= cols
            seen += index.tolist()
    assert sorted(seen) == list(range(n))


def test_finalize_releases_in_order_and_refuses_stale_plans(emu):
    """finalize() with a plan still alive: descriptors, then grids, then handles, then the communicator
    (the emulation asserts the order); the stale plan raises instead of using released handles."""
    import cumath.distributed as dist
    from cumath.distributed.linalg import DirectSolver
    from cumath.distributed.linalg.advanced import Matmul
    from cumath.errors import InvalidStateError
    from mpi4py import MPI

    d = BlockCyclic(GRID, (4, 4))
    A = rand((8, 8), np.float64, 1) + 8 * np.eye(8)
    mm = Matmul(A, A, distributions=[d] * 3)
    mm.plan()
    s = DirectSolver(A, A, distributions=[d, d])
    s.plan()
    s.factorize()
    dist.finalize()
    assert not emu.objects
    with pytest.raises(InvalidStateError, match="finalize\\(\\) has ended"):
        mm.execute()
    with pytest.raises(InvalidStateError, match="finalize\\(\\) has ended"):
        s.solve()
    mm.free()
    s.free()
    dist.initialize(0, MPI.COMM_WORLD, backends=("nccl",))  # the fixture finalizes this one


def test_failed_plan_leaves_nothing(emu, monkeypatch):
    from cumath._bindings import cublasmp
    from cumath.distributed.linalg.advanced import Matmul
    from cumath.errors import CUBLASMpError

    d = BlockCyclic(GRID, (4, 4))
    A = rand((8, 8), np.float64, 1)

    def refuse(*args):
        raise CUBLASMpError(7, "CUBLASMP_STATUS_NOT_SUPPORTED")

    monkeypatch.setattr(cublasmp, "cublasMpMatmulDescriptorSetAttribute", refuse)
    with Matmul(A, A, distributions=[d] * 3) as mm:
        with pytest.raises(CUBLASMpError, match="NOT_SUPPORTED"):
            mm.plan()
    assert not emu.live("cublasmp-desc") and not emu.live("cublasmp-matmul")


@pytest.mark.parametrize("with_c", [False, True])
def test_matmul_falls_back_to_gemm(emu, monkeypatch, with_c):
    """A cublasMpMatmul that refuses a dtype (NOT_SUPPORTED): the product runs on cublasMpGemm, c unchanged."""
    from cumath._bindings import cublasmp
    from cumath.distributed.linalg.advanced import MatmulEpilog, matmul
    from cumath.errors import CUBLASMpError

    monkeypatch.setattr(type(cublasmp._L), "refuse_matmul", (5,))  # CUDA_C_64F
    d = BlockCyclic(GRID, (4, 4))
    A, B, C = rand((9, 6), np.complex128, 1), rand((6, 7), np.complex128, 2), rand((9, 7), np.complex128, 3)
    c_before = C.copy()
    out = matmul(A, B, C if with_c else None, distributions=[d] * 3, alpha=2.0, beta=0.5 if with_c else None)
    assert rel_err(out, 2 * A @ B + (0.5 * C if with_c else 0)) < 1e-12
    np.testing.assert_array_equal(C, c_before)
    assert emu.calls[-1][0] == "cublasMpGemm"
    with pytest.raises(CUBLASMpError, match="NOT_SUPPORTED"):
        matmul(A, B, distributions=[d] * 3, epilog=MatmulEpilog.RELU)  # an epilog needs cublasMpMatmul


@pytest.mark.parametrize("mode, engine", [("auto", "OneRankLU"), ("gather", "OneRankLU"),
                                          ("scalapack", "CuSOLVERMpLU")])
def test_one_rank_gpu_solve_goes_to_the_single_gpu_solver(emu, monkeypatch, caplog, mode, engine):
    """On one rank the plan takes the single-GPU solver unless CUMATH_DIST_SOLVE=scalapack keeps cuSOLVERMp;
    operands of two dtypes keep cuSOLVERMp (it solves in their common dtype)."""
    from cumath.distributed.linalg import DirectSolver

    monkeypatch.setenv("CUMATH_DIST_SOLVE", mode)
    d = BlockCyclic(GRID, (4, 4))
    M, R = rand((9, 9), np.float64, 1), rand((9, 2), np.float64, 2)
    with caplog.at_level("INFO", logger="cumath.distributed.linalg"):
        with DirectSolver(M, R, distributions=[d, d]) as s:
            s.plan()
            assert type(s._engine).__name__ == engine
    if engine == "OneRankLU":
        assert "planned on one rank: the single-GPU solver" in caplog.text
        assert not emu.live("cusolvermp-handle")
    with DirectSolver(M, R.astype(np.float32), distributions=[d, d]) as s:
        s.plan()
        assert type(s._engine).__name__ == "CuSOLVERMpLU"
