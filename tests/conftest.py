"""Shared test fixtures: GPU detection (GPU tests skip cleanly without one) and a private cache folder."""

import os

import pytest


def _gpu_available() -> bool:
    try:
        from cumath._core.cuda import device_count

        return device_count() > 0
    except Exception:
        return False


GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    if GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # the marker, not a parameter id such as "gpu"
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Keep FFTW wisdom and other artefacts of the test run out of the user's cache folder."""
    if "CUMATH_CACHE_DIR" not in os.environ:
        os.environ["CUMATH_CACHE_DIR"] = str(tmp_path_factory.mktemp("cumath-cache"))
    yield


@pytest.fixture(scope="session")
def cuda_device():
    """The id of a usable GPU (the CUDA runtime loaded and a device seen), else skip."""
    if not GPU:
        pytest.skip("no CUDA GPU on this machine")
    from cumath._bindings import cudart

    return cudart.cudaGetDevice()


@pytest.fixture(scope="session")
def cufft_device(cuda_device):
    """Like cuda_device, and cuFFT loads too."""
    from cumath.errors import LibraryNotFoundError

    try:
        from cumath._bindings import cufft

        cufft.cufftGetVersion()
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    return cuda_device


@pytest.fixture
def recycling_on(monkeypatch):
    """Result recycling opted into (``CUMATH_RECYCLE_RESULTS=1``) for the plans a test makes."""
    from cumath._core import recycle

    monkeypatch.setattr(recycle, "RECYCLE", True)
    yield


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Skips summarised by reason, one line each with its count (the reasons pytest's -rs would repeat per test)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped or config.getoption("reportchars", "").find("s") >= 0:
        return
    counts: dict = {}
    for rep in skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason.removeprefix("Skipped: ")
        counts[reason] = counts.get(reason, 0) + 1
    terminalreporter.write_sep("-", f"{len(skipped)} skipped, by reason")
    for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{n:5d}  {reason}")
