"""Distributed FFTs against NumPy's (float64 reference) on every rank's piece and gathered on rank 0."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath.distributed.distribution import Box, Slab
from cumath.distributed.fft._traits import Local, Move, candidate_layouts, pencil_grid, plan_steps
from mpi_helpers import TOL, gather0, piece, rel_err

SHAPES = [(7, 5, 6), (11, 13), (6, 9, 7), (2, 3, 17), (16, 8)]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return x.astype(dtype)


def test_plan_steps_slab_and_pencil():
    slabs = candidate_layouts(3, 4, "slab")
    steps = plan_steps(3, "C2C", {1, 2}, slabs)
    assert steps == [Local((1, 2), "C2C"), Move(slabs[1]), Local((0,), "C2C")]
    pencils = candidate_layouts(3, 4, "pencil")
    steps = plan_steps(3, "R2C", {2}, pencils)
    assert steps[0] == Local((2,), "R2C") and sum(isinstance(s, Move) for s in steps) == 2
    steps = plan_steps(3, "C2R", {1, 2}, slabs)  # C2R: the last axis last
    assert steps[-1].kind == "C2R" and 2 in steps[-1].axes
    assert pencil_grid(12) == (4, 3) and pencil_grid(7) == (7, 1)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.sampled_from([2, 3]), st.sampled_from(["C2C", "R2C", "C2R"]), st.integers(1, 12),
       st.sampled_from(["slab", "pencil"]))
def test_plan_steps_transform_every_axis_once(ndim, fft_type, nranks, decomposition):
    layouts = candidate_layouts(ndim, nranks, decomposition)
    steps = plan_steps(ndim, fft_type, set(range(ndim)) - set(layouts[0].axes), layouts)
    done = [a for s in steps if isinstance(s, Local) for a in s.axes]
    assert sorted(done) == list(range(ndim))
    locals_ = [s for s in steps if isinstance(s, Local)]
    if fft_type == "R2C":
        assert locals_[0].kind == "R2C" and ndim - 1 in locals_[0].axes
    if fft_type == "C2R":
        assert locals_[-1].kind == "C2R" and ndim - 1 in locals_[-1].axes


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("slab", [Slab.X, Slab.Y])
@pytest.mark.parametrize("redistribute", [True, False])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("engine", ["auto", "mkl"])
def test_c2c_slab(world, shape, slab, redistribute, dtype, engine):
    from cumath.distributed import fft as dfft
    from cumath.distributed.fft import _cdft

    r, p = world.rank, world.nranks
    if engine == "mkl" and (p > min(shape[:2]) or not all(world.allgather(_cdft.available()))):
        pytest.skip(f"MKL's Cluster DFT needs {p} rows on the first two axes of {shape} (and libmkl_cdft_core)")
    G = _data(shape, dtype)
    x = piece(G, slab, r, p)
    before = x.copy()
    ref = np.fft.fftn(G.astype(np.complex128))
    with dfft.FFT(x, distribution=slab, options={"redistribute": redistribute, "engine": engine}) as f:
        f.plan()
        assert engine == "auto" or f.engine == "mkl"
        y = f.execute()
        out = f.result_distribution
        assert out == (slab if redistribute else Slab(1 - slab.axis))
        assert y.dtype == dtype and rel_err(y, piece(ref, out, r, p)) < 10 * TOL[np.dtype(dtype)]
        assert not np.shares_memory(y, x) and np.array_equal(x, before)  # the operand is only read
        f.reset_operand(x * 2)
        z = f.execute(direction="inverse")
        assert rel_err(z, piece(np.fft.ifftn(2 * G.astype(np.complex128)) * G.size, out, r, p)) < 10 * TOL[
            np.dtype(dtype)]
    full = gather0(world, y, out, shape)
    if r == 0:
        assert rel_err(full, ref) < 10 * TOL[np.dtype(dtype)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("slab", [Slab.X, Slab.Y])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_r2c_c2r_slab(world, shape, slab, dtype):
    from cumath.distributed import fft as dfft

    r, p = world.rank, world.nranks
    G = _data(shape, dtype, 1)
    y = dfft.rfft(piece(G, slab, r, p), distribution=slab)
    ref = np.fft.rfftn(G.astype(np.float64))
    assert rel_err(y, piece(ref, slab, r, p)) < 10 * TOL[np.dtype(dtype)]
    parity = "odd" if shape[-1] % 2 else "even"
    z = dfft.irfft(y, distribution=slab, options={"last_axis_parity": parity})
    assert z.shape == piece(G, slab, r, p).shape and z.dtype == dtype
    assert rel_err(z / G.size, piece(G, slab, r, p)) < 10 * TOL[np.dtype(dtype)]


@pytest.mark.parametrize("shape", [(8, 6, 5), (7, 9, 4)])
@pytest.mark.parametrize("decomposition", ["pencil", "slab"])
@pytest.mark.parametrize("fft_type", ["C2C", "R2C"])
def test_box_pencil(world, shape, decomposition, fft_type):
    from cumath.distributed import fft as dfft

    r, p = world.rank, world.nranks
    G = _data(shape, np.complex128 if fft_type == "C2C" else np.float64, 2)
    in_box = Slab.Z.to(Box, shape, r, p)  # pencils along nothing: z split
    ref = np.fft.fftn(G) if fft_type == "C2C" else np.fft.rfftn(G)
    out_box = Slab.Y.to(Box, ref.shape, r, p)
    x = piece(G, Slab.Z, r, p)
    y = dfft.fft(x, distribution=[in_box, out_box], options={"decomposition": decomposition, "fft_type": fft_type})
    assert rel_err(y, piece(ref, Slab.Y, r, p)) < 1e-12


def test_non_contiguous_operand(world):
    from cumath.distributed import fft as dfft

    r, p = world.rank, world.nranks
    G = _data((9, 10, 8), np.complex128, 3)
    x = piece(G, Slab.X, r, p)[:, ::-1, ::2]
    y = dfft.fft(x, distribution=Slab.X)
    assert rel_err(y, piece(np.fft.fftn(G[:, ::-1, ::2]), Slab.X, r, p)) < 1e-12
    assert not np.shares_memory(y, x)


def test_allocate_operand_padding(world):
    from cumath.distributed import fft as dfft

    a = dfft.allocate_operand((4, 6, 9), "numpy", input_dtype=np.float64, distribution=Slab.X, fft_type="R2C")
    assert a.shape == (4, 6, 9) and a.dtype == np.float64
    assert a.base.size >= 4 * 6 * 2 * 5  # room for the complex side, 9 // 2 + 1 = 5
    c = dfft.allocate_operand((4, 6, 5), "numpy", input_dtype=np.complex128, fft_type="C2C")
    assert c.shape == (4, 6, 5)
    with pytest.raises(ValueError, match="package must be numpy or torch"):
        dfft.allocate_operand((2, 2), "jax")
    with pytest.raises(ValueError, match="memory_space"):
        dfft.allocate_operand((2, 2), "numpy", memory_space="cuda")


def test_fft_errors(world):
    from cumath.distributed import fft as dfft
    from cumath.errors import InvalidStateError

    r, p = world.rank, world.nranks
    with pytest.raises(ValueError, match="2-D or 3-D"):
        dfft.fft(np.ones(4, complex), distribution=Slab.X)
    with pytest.raises(TypeError, match="distribution must be a Slab"):
        dfft.fft(np.ones((2, 2), complex), distribution="X")
    with pytest.raises(TypeError, match="C2C FFTs need a complex operand"):
        dfft.fft(np.ones((2, 2)), distribution=Slab.X, options={"fft_type": "C2C"})
    with pytest.raises(ValueError, match="decomposition"):
        dfft.fft(np.ones((2, 2), complex), distribution=Slab.X, options={"decomposition": "cubes"})
    with pytest.raises(TypeError, match="the fields are"):
        dfft.fft(np.ones((2, 2), complex), distribution=Slab.X, options={"bogus": 1})
    f = dfft.FFT(np.ones((2, 3), complex), distribution=Slab.X)
    with pytest.raises(InvalidStateError, match="plan"):
        f.execute()
    f.plan()
    with pytest.raises(ValueError, match="direction"):
        f.execute(direction="sideways")
    f.release_operand()
    with pytest.raises(InvalidStateError, match="reset_operand"):
        f.execute()
    with pytest.raises(ValueError, match="reset_operand"):
        f.reset_operand(np.ones((5, 5), complex))
    f.free()
    f.free()
    with pytest.raises(InvalidStateError, match="after free"):
        f.execute()
    rf = dfft.FFT(np.ones((2, 4)), distribution=Slab.X)
    rf.plan()
    with pytest.raises(ValueError, match="forward only"):
        rf.execute(direction="inverse")
    rf.free()
    if p > 1:  # global shapes that do not match across ranks
        with pytest.raises(ValueError, match="differ across ranks"):
            dfft.fft(np.ones((2, 3 + (r == 0)), complex), distribution=Slab.X)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=3), st.sampled_from(["X", "Y"]),
       st.sampled_from(["C2C", "R2C"]), st.booleans())
def test_fft_property(world, shape, slab, fft_type, redistribute):
    from cumath.distributed import fft as dfft

    r, p = world.rank, world.nranks
    shape = tuple(shape)
    G = _data(shape, np.complex128 if fft_type == "C2C" else np.float64, 4)
    slab = Slab[slab]
    y = dfft.fft(piece(G, slab, r, p), distribution=slab,
                 options={"redistribute": redistribute, "fft_type": fft_type})
    ref = np.fft.fftn(G) if fft_type == "C2C" else np.fft.rfftn(G)
    out = slab if redistribute else Slab(1 - slab.axis)
    assert rel_err(y, piece(ref, out, r, p)) < 1e-11
