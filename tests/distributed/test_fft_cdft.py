"""The MKL Cluster DFT engine of the distributed FFT (``FFTOptions(engine='mkl')``) against NumPy's float64
reference: moves around it, awkward operands, its choice by engine='auto' and its error paths. The slab cases
of both CPU engines are test_fft.py's test_c2c_slab."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath.distributed.distribution import Box, Slab, SlabPartition
from mpi_helpers import piece, rel_err

pytestmark = pytest.mark.usefixtures("world")


@pytest.fixture(scope="module", autouse=True)
def _needs_cdft(world):
    from cumath.distributed.fft import _cdft

    ok = all(world.allgather(_cdft.available()))
    if not ok:
        pytest.skip("MKL's Cluster DFT (libmkl_cdft_core from the mkl wheel) cannot be loaded here")


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def test_mkl_uneven_pieces_and_boxes(world):
    """Pieces other than the library's rows move in and out around the transform."""
    from cumath.distributed import fft as dfft

    r, p = world.rank, world.nranks
    shape = (9, 8, 5)
    G = _data(shape, np.complex128, 1)
    ref = np.fft.fftn(G)
    sizes = [1] * (p - 1) + [9 - (p - 1)]  # the last rank holds most rows
    part = SlabPartition(0, tuple(sizes))
    x = piece(G, part, r, p)
    y = dfft.fft(x, distribution=Slab.X, options={"engine": "mkl"})
    assert rel_err(y, piece(ref, part, r, p)) < 1e-12  # the result in the caller's own pieces
    in_box = Slab.Z.to(Box, shape, r, p)
    out_box = Slab.Y.to(Box, shape, r, p)
    y = dfft.fft(piece(G, Slab.Z, r, p), distribution=[in_box, out_box], options={"engine": "mkl"})
    assert rel_err(y, piece(ref, Slab.Y, r, p)) < 1e-12


def test_mkl_non_contiguous_negative_stride(world):
    from cumath.distributed import fft as dfft

    r, p = world.rank, world.nranks
    G = _data((8, 10, 12), np.complex128, 3)
    x = piece(G, Slab.X, r, p)[:, ::-1, ::2]
    y = dfft.fft(x, distribution=Slab.X, options={"engine": "mkl"})
    assert rel_err(y, piece(np.fft.fftn(G[:, ::-1, ::2]), Slab.X, r, p)) < 1e-12
    raw = np.empty(x.size * 16 + 1, dtype=np.uint8)[1:1 + x.nbytes]  # an unaligned operand
    u = raw.view(np.complex128).reshape(x.shape)
    u[...] = x
    assert u.ctypes.data % 16
    y2 = dfft.fft(u, distribution=Slab.X, options={"engine": "mkl"})
    assert rel_err(y2, y) < 1e-13


def test_engine_choice_and_errors(world):
    from cumath.distributed import fft as dfft
    from cumath.distributed.fft import _cdft

    r, p = world.rank, world.nranks
    x = piece(_data((8, 8, 4), np.complex128), Slab.X, r, p)
    with dfft.FFT(x, distribution=Slab.X) as f:
        f.plan()
        expected = "mkl" if (_cdft.AUTO and p > 1) else "transposes"
        assert f.engine == expected
    with dfft.FFT(x, distribution=Slab.X, options={"engine": "transposes"}) as f:
        f.plan()
        assert f.engine == "transposes"
    with pytest.raises(ValueError, match=r"engine='cubes'; the allowed values are \['auto', 'mkl', 'transposes'\]"):
        dfft.fft(x, distribution=Slab.X, options={"engine": "cubes"})
    real = piece(np.random.default_rng(0).standard_normal((8, 8, 4)), Slab.X, r, p)
    with pytest.raises(ValueError, match="engine='mkl': the MKL Cluster DFT cannot run this FFT: it runs C2C "
                                         "transforms here, not R2C; use engine='transposes'"):
        dfft.rfft(real, distribution=Slab.X, options={"engine": "mkl"})
    if p > 1:
        thin = piece(_data((8, 1, 4), np.complex128), Slab.X, r, p)
        with pytest.raises(ValueError, match=f"{p} ranks are more than the rows of the first two axes"):
            dfft.fft(thin, distribution=Slab.X, options={"engine": "mkl"})


def test_unsupported_reason_without_mpi_communicator():
    from cumath.distributed.fft._cdft import unsupported_reason

    class Group:  # a torch.distributed group has no MPI communicator
        nranks = 2

    assert "MPI communicator" in unsupported_reason(Group(), (4, 4), np.complex128, "C2C")
    Group.communicator = object()
    assert "complex64 or complex128" in unsupported_reason(Group(), (4, 4), np.complex256, "C2C")
    assert unsupported_reason(Group(), (4, 4), np.complex64, "C2C") is None


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.lists(st.integers(4, 12), min_size=2, max_size=3), st.sampled_from(["X", "Y"]), st.booleans(),
       st.sampled_from(["forward", "inverse"]))
def test_mkl_property(world, shape, slab, redistribute, direction):
    from cumath.distributed import fft as dfft

    r, p = world.rank, world.nranks
    shape = tuple(shape)
    G = _data(shape, np.complex128, 4)
    slab = Slab[slab]
    y = dfft.fft(piece(G, slab, r, p), distribution=slab, direction=direction,
                 options={"redistribute": redistribute, "engine": "mkl"})
    ref = np.fft.fftn(G) if direction == "forward" else np.fft.ifftn(G) * G.size
    out = slab if redistribute else Slab(1 - slab.axis)
    assert rel_err(y, piece(ref, out, r, p)) < 1e-11
