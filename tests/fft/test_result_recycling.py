"""A NumPy result is reused as the next one only when nothing refers to it any more."""
import gc

import numpy as np
import pytest

import cumath


@pytest.fixture
def planned():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 257)) + 1j * rng.standard_normal((3, 257))
    f = cumath.fft.FFT(x, axes=[-1])
    f.plan()
    yield f, x
    f.free()


def test_kept_results_are_never_overwritten(planned):
    f, x = planned
    results = [f.execute() for _ in range(4)]
    snapshots = [r.copy() for r in results]
    f.execute()
    for r, s in zip(results, snapshots):
        np.testing.assert_array_equal(r, s)
    assert len({id(r) for r in results}) == 4


def test_a_kept_view_protects_its_base(planned):
    f, x = planned
    y = f.execute()
    view = y[1, ::2]
    snapshot = view.copy()
    del y
    gc.collect()
    z = f.execute(direction="inverse")
    assert not np.shares_memory(z, view)
    np.testing.assert_array_equal(view, snapshot)


def test_a_dropped_result_is_reused_and_correct(planned):
    f, x = planned
    ref = np.fft.fft(x, axis=-1)
    first_id = id(f.execute())
    y = f.execute()
    assert id(y) == first_id  # the dropped result came back
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_release_workspace_lets_the_last_result_go(planned):
    f, _ = planned
    f.execute()
    f._executor.release_workspace()
    assert f._executor._last is None
