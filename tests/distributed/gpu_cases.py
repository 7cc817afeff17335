"""What the GPU-engine tests (on the GPU and on the emulation) share: inputs, the qualifier cases and the NumPy
reference of the epilogs."""

import contextlib

import numpy as np

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
EPILOGS = ["RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_BIAS", "ALLREDUCE"]
QUALIFIERS = [((True, False), (False, False)), ((False, False), (True, True)), ((True, True), (False, True)),
              ((False, True), (True, False))]


def rand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return x.astype(dtype)


def qualified(qa, qb):
    """(A, B, stored A, stored B, qualifiers): A and B stored transposed and/or conjugated as ``qa``, ``qb`` say."""
    from cumath.distributed.linalg.advanced import matrix_qualifiers_dtype

    A, B = rand((9, 6), np.complex128, 4), rand((6, 8), np.complex128, 5)
    q = np.zeros(2, dtype=matrix_qualifiers_dtype)
    q[0], q[1] = qa, qb

    def stored(X, t, c):
        X = np.conj(X) if c else X
        return np.ascontiguousarray(X.T) if t else X

    return A, B, stored(A, *qa), stored(B, *qb), q


def allreduce_form(A, epilog):
    """(stored A, qualifiers) for ``epilog``: ALLREDUCE is cuBLASMp's GEMM+AllReduce, which takes the TN form only,
    so A is given as its transpose with the transpose qualifier; other epilogs take A as is (no qualifiers)."""
    if epilog != "ALLREDUCE":
        return A, None
    from cumath.distributed.linalg.advanced import matrix_qualifiers_dtype

    q = np.zeros(2, dtype=matrix_qualifiers_dtype)
    q[0] = (True, False)
    return np.ascontiguousarray(A.T), q


def epilog_reference(product, epilog, bias):
    """cuBLASLt's epilogs (GELU: the tanh approximation) applied to ``product`` in float64."""
    ref = product
    if "BIAS" in epilog:
        ref = ref + bias[:, None]
    if "RELU" in epilog:
        ref = np.maximum(ref, 0)
    if "GELU" in epilog:
        ref = 0.5 * ref * (1 + np.tanh(np.sqrt(2 / np.pi) * (ref + 0.044715 * ref ** 3)))
    return ref


@contextlib.contextmanager
def one_rank_gpu_context(install=None):
    """The distributed context on GPU 0 with NCCL for one rank (``install()`` runs first, after the CPU context
    of the other tests is finalized); that context is brought back afterwards."""
    import pytest

    pytest.importorskip("mpi4py")
    from mpi4py import MPI

    import cumath.distributed as dist

    if MPI.COMM_WORLD.Get_size() != 1:
        pytest.skip("the GPU engine tests run with one rank")
    previous = dist.get_context()
    if previous is not None:
        dist.finalize()
    installed = install() if install is not None else None
    ctx = dist.initialize(0, MPI.COMM_WORLD, backends=("nccl",))
    try:
        yield installed if install is not None else ctx
    finally:
        dist.finalize()
        if previous is not None:
            dist.initialize(None, MPI.COMM_WORLD)
