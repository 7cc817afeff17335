"""Distributions (pure), the exchange planner (simulated over all ranks in one process), redistribution (MPI)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumath.distributed._redistribute import check_cover, plan_exchange
from cumath.distributed.distribution import (BlockCyclic, BlockNonCyclic, Box, ProcessGrid, Slab, balanced_range)
from mpi_helpers import gather0, piece


def simulate(src_dist, dst_dist, G, nranks):
    """Run every rank's planned exchange in one process; returns the destination pieces."""
    src = [src_dist.indices(G.shape, r, nranks) for r in range(nranks)]
    dst = [dst_dist.indices(G.shape, r, nranks) for r in range(nranks)]
    plans = [plan_exchange(src, dst, r) for r in range(nranks)]
    locals_ = [piece(G, src_dist, r, nranks) for r in range(nranks)]
    outs = [np.empty(p.out_shape, G.dtype) for p in plans]
    for s, p in enumerate(plans):
        for d, sel in enumerate(p.send):
            if sel is not None:
                data = locals_[s][sel].reshape(-1)
                idx, shape = plans[d].recv[s]
                outs[d][idx] = data.reshape(shape)
    return outs


def test_process_grid():
    g = ProcessGrid(shape=(2, 3))
    assert [g.coords(r) for r in range(6)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    gf = ProcessGrid(shape=(2, 3), layout="F")
    assert gf.coords(1) == (1, 0) and gf.rank_at((1, 0)) == 1
    ga = ProcessGrid(process_array=[[3, 2], [1, 0]])
    assert ga.shape == (2, 2) and ga.coords(3) == (0, 0) and ga.rank_at((1, 1)) == 0


@pytest.mark.parametrize("kwargs, exc, words", [
    ({}, ValueError, "needs shape"), ({"shape": (0, 2)}, ValueError, "positive"),
    ({"shape": (2,), "layout": "X"}, ValueError, "layout must be 'C'"),
    ({"process_array": [[0, 0], [1, 2]]}, ValueError, "exactly once"),
    ({"process_array": [[0.5]]}, TypeError, "integer array"),
])
def test_process_grid_errors(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        ProcessGrid(**kwargs)


def test_grid_size_mismatch():
    with pytest.raises(ValueError, match="has 4 positions but the process group has 3"):
        BlockCyclic(ProcessGrid(shape=(2, 2)), (2, 2)).indices((5, 5), 0, 3)


@pytest.mark.parametrize("args, exc, words", [
    (("grid", (2, 2)), TypeError, "must be a ProcessGrid"),
    ((ProcessGrid(shape=(2, 2)), (0, 2)), ValueError, "must be positive"),
    ((ProcessGrid(shape=(2, 2)), (2, 2), (2, 0)), ValueError, "not a position"),
])
def test_block_cyclic_errors(args, exc, words):
    with pytest.raises(exc, match=words):
        BlockCyclic(*args)


def test_box_errors():
    with pytest.raises(ValueError, match="different lengths"):
        Box((0, 0), (1,))
    with pytest.raises(ValueError, match="lower <= upper"):
        Box((2, 0), (1, 1))
    with pytest.raises(ValueError, match="outside the global shape"):
        Box((0, 0), (5, 5)).indices((4, 5))
    with pytest.raises(ValueError, match="splits axis 2"):
        Slab.Z.indices((4, 5), 0, 1)


def test_slab_uneven_and_to_box():
    assert [len(balanced_range(7, r, 3)) for r in range(3)] == [3, 2, 2]
    assert Slab.Y.to(Box, (4, 7, 2), 1, 3) == Box((0, 3, 0), (4, 5, 2))
    with pytest.raises(ValueError, match="cannot be written as a Box"):
        BlockCyclic(ProcessGrid(shape=(2, 1)), (1, 1)).to(Box, (4, 4), 0, 2)
    with pytest.raises(ValueError, match="cannot convert"):
        Slab.X.to(BlockCyclic, (4, 4), 0, 2)


def test_cover_check():
    G = (4, 4)
    good = [Box((0, 0), (2, 4)).indices(G), Box((2, 0), (4, 4)).indices(G)]
    check_cover(good, G, "input")
    with pytest.raises(ValueError, match="does not cover the global array"):
        check_cover([Box((0, 0), (3, 4)).indices(G), Box((2, 0), (4, 4)).indices(G)], G, "input")
    with pytest.raises(ValueError, match="does not cover"):
        check_cover([Box((0, 0), (1, 4)).indices(G), Box((2, 0), (4, 4)).indices(G)], G, "output")


dists = st.sampled_from(["X", "Y", "bc", "bnc"])


def _dist(kind, nranks, seed):
    if kind in ("X", "Y"):
        return Slab[kind]
    grid = ProcessGrid(shape=(nranks, 1) if seed % 2 else (1, nranks))
    if kind == "bc":
        return BlockCyclic(grid, (1 + seed % 3, 1 + seed % 2))
    return BlockNonCyclic(grid)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 5), st.integers(1, 9), st.integers(1, 9), dists, dists, st.integers(0, 5))
def test_exchange_simulated(nranks, m, n, a, b, seed):
    G = np.arange(m * n, dtype=np.float64).reshape(m, n)
    src, dst = _dist(a, nranks, seed), _dist(b, nranks, seed + 1)
    outs = simulate(src, dst, G, nranks)
    for r in range(nranks):
        np.testing.assert_array_equal(outs[r], piece(G, dst, r, nranks))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int16])
@pytest.mark.parametrize("shape", [(7, 5, 3), (13, 2), (1, 11)])
def test_redistribute_slabs_mpi(world, shape, dtype):
    from cumath.distributed import Redistribute, redistribute

    r, p = world.rank, world.nranks
    G = (np.random.default_rng(7).standard_normal(shape) * 100).astype(dtype)
    x = piece(G, Slab.X, r, p)
    y = redistribute(x, Slab.X, Slab.Y)
    np.testing.assert_array_equal(y, piece(G, Slab.Y, r, p))
    back = gather0(world, y, Slab.Y, shape)
    if r == 0:
        np.testing.assert_array_equal(back, G)
    with Redistribute(x, Slab.X, Slab.Y) as op:
        op.plan()
        op.reset_operand(x + 1)
        np.testing.assert_array_equal(op.execute(), piece(G + 1, Slab.Y, r, p))
        with pytest.raises(ValueError, match="reset_operand"):
            op.reset_operand(np.zeros(x.shape + (1,), x.dtype))


def test_redistribute_block_cyclic_and_box_mpi(world):
    from cumath.distributed import redistribute

    r, p = world.rank, world.nranks
    G = np.random.default_rng(8).standard_normal((11, 9))
    grid = ProcessGrid(shape=(2, 2) if p == 4 else (1, p))
    for src in (BlockCyclic(grid, (2, 3)), BlockNonCyclic(grid), BlockCyclic(grid, (3, 1), (0, p % 2 if p > 1 else 0))):
        out = gather0(world, piece(G, src, r, p), src, G.shape)
        if r == 0:
            np.testing.assert_array_equal(out, G)
        boxes = Slab.Y.to(Box, G.shape, r, p)
        y = redistribute(piece(G, src, r, p), src, boxes, global_shape=G.shape)
        np.testing.assert_array_equal(y, piece(G, Slab.Y, r, p))


def test_redistribute_strided_and_torch(world):
    from cumath.distributed import redistribute

    r, p = world.rank, world.nranks
    G = np.random.default_rng(9).standard_normal((9, 8, 4))
    x = piece(G, Slab.X, r, p)[:, ::-1, ::2]  # negative and non-unit strides
    ref = piece(G[:, ::-1, ::2], Slab.Y, r, p)
    np.testing.assert_array_equal(redistribute(x, Slab.X, Slab.Y), ref)
    torch = pytest.importorskip("torch")
    out = redistribute(torch.from_numpy(np.ascontiguousarray(x)), Slab.X, Slab.Y)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), ref)


def test_redistribute_errors(world):
    from cumath.distributed import redistribute

    r, p = world.rank, world.nranks
    with pytest.raises(TypeError, match="NumPy array or a PyTorch CPU tensor"):
        redistribute([1, 2], Slab.X, Slab.Y)
    # mismatched global shapes: the non-slab extents differ across ranks (one rank: a Box beyond the shape)
    if p > 1:
        x = np.zeros((2, 3 + (r == p - 1)))
        with pytest.raises(ValueError, match="differ across ranks"):
            redistribute(x, Slab.X, Slab.Y)
    # a Box distribution that covers an element twice
    box = Box((0, 0), (2, 2))
    with pytest.raises(ValueError, match="does not cover the global array"):
        redistribute(np.zeros((2, 2)), box, Slab.X) if p > 1 else redistribute(
            np.zeros((2, 2)), Slab.X, Box((0, 0), (1, 2)), global_shape=(2, 2))
    with pytest.raises(ValueError, match="has shape"):
        redistribute(np.zeros((3, 2)), Box((0, 0), (2, 2)), Slab.X)
