"""A host result is reused as the next one only when nothing refers to it any more (NumPy arrays and CPU
tensors: ``_core/recycle.Recycler`` with the package's rule)."""
import gc

import numpy as np
import pytest

import cumath
from helpers.matrix import package_params, to_numpy, to_package


pytestmark = pytest.mark.usefixtures("recycling_on")  # recycling is opt-in

@pytest.fixture(params=package_params())
def planned(request):
    rng = np.random.default_rng(11)
    x = to_package(rng.standard_normal((3, 257)) + 1j * rng.standard_normal((3, 257)), request.param)
    f = cumath.fft.FFT(x, axes=[-1])
    f.plan()
    yield f, x
    f.free()


def test_kept_results_are_never_overwritten(planned):
    f, x = planned
    results = [f.execute() for _ in range(4)]
    snapshots = [to_numpy(r).copy() for r in results]
    f.execute()
    for r, s in zip(results, snapshots):
        np.testing.assert_array_equal(to_numpy(r), s)
    assert len({id(r) for r in results}) == 4


def test_a_kept_view_protects_its_base(planned):
    f, x = planned
    y = f.execute()
    view = y[1, ::2]
    snapshot = to_numpy(view).copy()
    del y
    gc.collect()
    z = f.execute(direction="inverse")
    assert not np.shares_memory(to_numpy(z), to_numpy(view))
    np.testing.assert_array_equal(to_numpy(view), snapshot)


def test_a_dropped_result_is_reused_and_correct(planned):
    f, x = planned
    ref = np.fft.fft(to_numpy(x), axis=-1)
    first_id = id(f.execute())
    y = f.execute()
    assert id(y) == first_id  # the dropped result came back
    np.testing.assert_allclose(to_numpy(y), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_release_workspace_lets_the_last_result_go(planned):
    f, _ = planned
    f.execute()
    assert f._executor.held_bytes > 0
    f._executor.release_workspace()
    assert f._executor.held_bytes == 0
    f.execute(release_workspace=True)  # the same through execute()
    assert f._executor.held_bytes == 0
    f.execute()
    assert f._executor.held_bytes > 0


def test_results_under_the_threshold_are_not_kept(monkeypatch):
    from cumath._core import recycle

    monkeypatch.setattr(recycle, "MIN_HOST_BYTES", 1 << 20)
    small = np.ones(64, complex)
    with cumath.fft.FFT(small) as f:
        f.plan()
        ptr = f.execute().ctypes.data
        assert f.nbytes == 0 and f._executor.held_bytes == 0
        f.execute()
    big = np.ones(1 << 17, complex)  # 2 MiB
    with cumath.fft.FFT(big) as f:
        f.plan()
        ptr = f.execute().ctypes.data
        assert f.execute().ctypes.data == ptr
        kept = 2 if f._executor._runner is not None else 1  # the compiled runner may keep two (a loop holding one)
        assert f.nbytes == kept * big.nbytes
