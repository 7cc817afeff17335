"""Checked by mypy --strict (tests/packaging/test_types.py, .ci/run), never run: the lazily loaded domains are
visible to type checkers and the public calls of every domain type-check as a user writes them."""

from __future__ import annotations

import logging

import numpy as np

import cumath
import cumath.distributed
import cumath.distributed.fft
import cumath.distributed.linalg
import cumath.distributed.linalg.advanced
import cumath.linalg.advanced
import cumath.sparse.advanced
import cumath.sparse.ust

x = np.ones(8, dtype=np.complex128)
a = np.ones((4, 4))

# fft: stateless functions, the stateful object, options as dataclass or dict, execution spaces
y = cumath.fft.fft(x, axes=[0], options={"result_layout": "natural"})
y = cumath.fft.ifft(x, execution="cpu")
r = cumath.fft.rfft(a, execution=cumath.ExecutionCPU(num_threads=2))
r = cumath.fft.irfft(r, options=cumath.fft.FFTOptions(last_axis_parity="odd"))
with cumath.fft.FFT(x, options=cumath.fft.FFTOptions(inplace=False)) as f:
    f.plan()
    z = f.execute(direction=cumath.fft.FFTDirection.INVERSE)
    f.reset_operand(x)
    z = f.execute(direction="forward")
workspace: int = cumath.fft.estimate_workspace_size(cumath.fft.FFT.create_key(x))

# linalg: generic matmul, qualifiers, the direct solver, the cuBLASLt matmul with epilogs and autotuning
m = cumath.linalg.matmul(a, a, alpha=2.0, beta=None, execution={"name": "cpu"})
with cumath.linalg.Matmul(a, a, a, beta=1.0) as mm:
    mm.plan()
    m = mm.execute()
    mm.reset_operands(a=a)
s = cumath.linalg.direct_solver(a, a[:, :1], options=cumath.linalg.DirectSolverOptions())
with cumath.linalg.DirectSolver(a, a[:, :1]) as ds:
    ds.plan()
    ds.factorize()
    s = ds.solve()
compute: cumath.linalg.advanced.MatmulComputeType = cumath.linalg.ComputeType.COMPUTE_32F
adv = cumath.linalg.advanced.matmul(a, a, epilog=cumath.linalg.advanced.MatmulEpilog.RELU,
                                    preferences={"limit": 4}, stream=None)
with cumath.linalg.advanced.Matmul(a, a, options=cumath.linalg.advanced.MatmulOptions()) as lt:
    algorithms = lt.plan(epilog=cumath.linalg.advanced.MatmulEpilog.BIAS, epilog_inputs={"bias": a[:, :1]})
    lt.autotune(iterations=5)
    adv = lt.execute(release_workspace=True)

# sparse: sparse x dense, the sparse direct solver, the universal sparse tensor
sp = cumath.sparse.matmul(a, a, alpha=1.5)
with cumath.sparse.Matmul(a, a) as smm:
    smm.plan()
    sp = smm.execute()
sol = cumath.sparse.advanced.direct_solver(a, a[:, 0], options=cumath.sparse.advanced.DirectSolverOptions())
with cumath.sparse.advanced.DirectSolver(a, a[:, 0], execution="cpu") as sds:
    plan_info: cumath.sparse.advanced.DirectSolverPlanInfo = sds.plan()
    fact_info: cumath.sparse.advanced.DirectSolverFactorizationInfo = sds.factorize()
    sol = sds.solve()
    factor_nnz: int | None = sds.factorization_info.lu_nnz
    sparse_options: cumath.sparse.advanced.DirectSolverOptions = sds.options
    sds.plan_config.host_nthreads = 2
t = cumath.sparse.ust.Tensor.from_package(a)
t = t.convert(tensor_format=cumath.sparse.ust.NamedFormats.CSR)
extents: tuple[int, ...] = t.extents
levels: int = t.tensor_format.num_levels + t.num_dimensions
on_gpu: bool = t.device == "cuda"

# tensor contractions
c = cumath.tensor.binary_contraction("ij,jk->ik", a, a, alpha=2.0)
with cumath.tensor.TernaryContraction("ij,jk,kl->il", a, a, a) as tc:
    tc.plan()
    c = tc.execute()

# device APIs (host side objects)
dmm = cumath.device.Matmul(size=(16, 16, 16), precision=np.float32, data_type="real", sm=(9, 0))
dfft = cumath.device.FFT(size=64, precision=np.float32, fft_type="c2c", direction="forward", sm=(9, 0),
                         execution="Block")
reason: str | None = cumath.device.unavailable_reason("numba")
tiles: int = dmm.a_size + dmm.b_size + dmm.c_size  # properties are typed: arithmetic on them type-checks
a_rows, a_cols = dmm.a_dim
threads: int = dmm.block_dim.x * dmm.block_dim.y * dmm.block_dim.z
thread_data: int = dfft.storage_size * dfft.implicit_type_batching
fft_shared: int = dfft.shared_memory_size
dsv = cumath.device.Solver("potrf", (8,), np.float32, "Block", sm=(9, 0), fill_mode="lower")
solver_a: tuple[int, ...] = dsv.a_shape
solver_lda: int | None = dsv.lda
chol = cumath.device.CholeskySolver((8, 8, 1), np.float32, "Block", "lower", sm=(9, 0))
chol_a: tuple[int, ...] = chol.a_shape
gmem_a: cumath.device.Layout = dmm.get_layout_gmem_a()
gmem_ld: int | None = gmem_a.leading_dimension
cumath.device.clear_cache(disk=False)

# distributed (types only: running it needs MPI)
ctx: cumath.distributed.DistributedContext = cumath.distributed.initialize(timeout=10.0)
slab = cumath.distributed.fft.Slab.X
dist_y = cumath.distributed.fft.fft(x, slab, options={"reshape": False})
dist_m = cumath.distributed.linalg.advanced.matmul(a, a, distributions=[slab, slab, slab])
cumath.distributed.finalize()

# memory and configuration
logger: logging.Logger = logging.getLogger("cumath")
version: str = cumath.__version__
