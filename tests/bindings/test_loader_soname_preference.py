"""A library with several sonames (cuDSS 1.0's libcudss.so.1 before 0.x's .so.0): cuda-pathfinder may find only
the older one, and a wheel folder's copy of the preferred one must come first (two versions installed side by
side, as when nvmath-python's pin brings cuDSS 0.8 beside cuDSS 1.0)."""

from cumath._bindings import _loader


def _order(monkeypatch, pathfinder, wheels):
    monkeypatch.setattr(_loader, "_try_pathfinder", lambda spec: pathfinder)
    monkeypatch.setattr(_loader, "_nvidia_wheel_candidates", lambda spec: list(wheels))
    monkeypatch.setattr(_loader, "_bundled_candidates", lambda spec: [])
    return [p for p, _ in _loader._candidates("cudss", _loader.LIBRARIES["cudss"])]


def test_preferred_soname_before_an_older_one_found_by_pathfinder(monkeypatch):
    old, new = "/site/nvidia/cu13/lib/libcudss.so.0", "/site/nvidia/cu13/lib/libcudss.so.1"
    order = _order(monkeypatch, old, [new, old])
    assert order.index(new) < order.index(old)


def test_pathfinder_first_when_it_found_the_preferred_soname(monkeypatch):
    new = "/env/lib/libcudss.so.1"
    order = _order(monkeypatch, new, ["/site/nvidia/cu13/lib/libcudss.so.1"])
    assert order[0] == new


def test_the_error_lists_every_failed_candidate(monkeypatch):
    import pytest

    from cumath.errors import LibraryNotFoundError

    monkeypatch.setattr(_loader, "_candidates", lambda name, spec: iter([("/nowhere/a/libcudss.so.1", "x"),
                                                                         ("/nowhere/b/libcudss.so.0", "y")]))
    monkeypatch.delitem(_loader._loaded, "cudss", raising=False)
    with pytest.raises(LibraryNotFoundError, match=r"/nowhere/a/libcudss.so.1.*; /nowhere/b/libcudss.so.0"):
        _loader._load("cudss")
