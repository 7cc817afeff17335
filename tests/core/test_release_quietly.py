"""cumath._core.lifecycle.release_quietly: a finalizer's native release that may fail at shutdown."""

from __future__ import annotations

import weakref

from cumath._core.lifecycle import release_quietly


class Owner:
    pass


def test_runs_the_release_once_and_swallows_its_failure():
    seen = []
    owner = Owner()
    fin = weakref.finalize(owner, release_quietly, seen.append, 7)
    fin()
    fin()
    assert seen == [7]

    def gone(handle):
        raise RuntimeError("context destroyed")

    assert release_quietly(gone, 1) is None
