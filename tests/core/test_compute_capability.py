"""Compute capability spellings shared by FFT callbacks and the device APIs."""

import pytest

from cumath._core.compute_capability import parse_compute_capability


@pytest.mark.parametrize("cc", ["90", "9.0", "sm_90", "compute_90", "SM90", 90, 900, (9, 0), [9, 0]])
def test_spellings(cc):
    assert parse_compute_capability(cc) == (9, 0)


def test_object_with_major_minor():
    class CC:
        major, minor = 12, 0

    assert parse_compute_capability(CC()) == (12, 0)
    assert parse_compute_capability(1200) == (12, 0)
    assert parse_compute_capability(120) == (12, 0)


@pytest.mark.parametrize("cc", ["sm_xx", "", 3.5, True, None, (9,)])
def test_not_a_compute_capability(cc):
    with pytest.raises(ValueError, match=r"sm=.* is not a compute capability; pass e\.g\. 90"):
        parse_compute_capability(cc, what="sm")


def test_too_old():
    with pytest.raises(ValueError, match=r"compute_capability='6\.1' is out of range: compute capability 7\.0 and newer"):
        parse_compute_capability("6.1", min_major=7)
