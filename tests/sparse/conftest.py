"""Fixtures of the sparse tests: the cuDSS emulation (fresh plan cache around it)."""

import pytest


@pytest.fixture
def emulated(monkeypatch):
    """cuDSS, the CUDA copies and the device checks replaced by ``fake_cudss.FakeCudss``; the plan cache is emptied
    before the fake goes away (its plans hold fake handles)."""
    import gc

    from fake_cudss import FakeCudss, install

    from cumath.config import plan_cache
    from cumath.sparse.advanced._backends.cudss import release_shared_handles

    plan_cache.clear()
    release_shared_handles()
    gc.collect()
    fake = FakeCudss()
    install(monkeypatch, fake)
    yield fake
    plan_cache.clear()
    release_shared_handles()
    gc.collect()  # the shared handles go while the fake is still there
