"""Fixtures of the advanced matmul's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def nvrtc_present():
    """NVRTC's version, or the test skipped (kernel sources compile to sm_90 without a GPU)."""
    from cumath._core import jit
    from cumath.errors import LibraryNotFoundError

    try:
        return jit.nvrtc_version()
    except (LibraryNotFoundError, OSError) as exc:
        pytest.skip(f"NVRTC is not available: {exc}")
