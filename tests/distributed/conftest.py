"""The distributed tests run on every rank of ``mpirun -n N python -m pytest tests/distributed`` (and with one
rank under plain pytest). Every rank draws the same global arrays (fixed seeds) and checks its own piece, and
the results gathered on rank 0 against NumPy."""

import pytest

@pytest.fixture(scope="session")
def world():
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install cumath[distributed])")
    from mpi4py import MPI

    import cumath.distributed as dist

    if dist.get_context() is None:
        dist.initialize(None, MPI.COMM_WORLD)
    yield dist.get_context().process_group
    dist.finalize()
