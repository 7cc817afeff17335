"""Fixtures of the sparse tests: the cuDSS emulation (fresh plan cache around it)."""

import pytest


@pytest.fixture
def emulated(monkeypatch):
    """cuDSS, the CUDA copies and the device checks replaced by ``fake_cudss.FakeCudss``; the plan cache is emptied
    before the fake goes away (its plans hold fake handles)."""
    import gc

    from fake_cudss import FakeCudss, install

    from cumath.config import plan_cache
    from cumath.sparse.advanced._backends import _cudss_lifetime as lifetime

    plan_cache.clear()
    gc.collect()
    lifetime._graveyard.clear()
    lifetime._handles.clear()  # handles of an earlier emulation (or none)
    fake = FakeCudss()
    install(monkeypatch, fake)
    yield fake
    plan_cache.clear()
    gc.collect()
    lifetime.release_shared_handles()  # the shared handles go while the fake is still there
    assert not fake.violations, fake.violations
    lifetime._handles.clear()
