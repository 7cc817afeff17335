"""The library loader: companions come from their owner's folder; missing libraries name their extra."""
import os

import pytest

from cumath._bindings import _loader
from cumath.errors import LibraryNotFoundError


def test_fftw_threading_layer_comes_from_the_folder_of_its_fftw():
    try:
        _loader.load_library("fftw3")
    except LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    _loader.load_library("fftw3_omp")
    paths = _loader.loaded_libraries()
    owner, companion = paths["fftw3"], paths["fftw3_omp"]
    if os.path.isabs(owner) and os.path.basename(os.path.dirname(owner)) == "pyfftw.libs":
        assert os.path.dirname(companion) == os.path.dirname(owner)


def test_a_missing_library_names_its_extra(monkeypatch):
    monkeypatch.setitem(_loader.LIBRARIES, "nosuchlib", _loader.LibrarySpec(("libnosuchlib.so.7",), "cu13"))
    with pytest.raises(LibraryNotFoundError, match=r"pip install \"cumath\[cu13\]\""):
        _loader.load_library("nosuchlib")


def test_a_companion_of_a_missing_owner_reports_the_owner(monkeypatch):
    monkeypatch.setitem(_loader.LIBRARIES, "nosuchowner", _loader.LibrarySpec(("libnosuchowner.so.1",), "cpu"))
    monkeypatch.setitem(_loader.LIBRARIES, "nosuchcompanion",
                        _loader.LibrarySpec(("libnosuchcompanion.so.1",), "cpu", companion_of="nosuchowner"))
    with pytest.raises(LibraryNotFoundError, match="nosuchowner"):
        _loader.load_library("nosuchcompanion")


def test_install_hints():
    from cumath._bindings._loader import install_hint

    assert install_hint("cufft").startswith('install it with `pip install "cumath[cu13]"`')
    assert 'pip install ".[cu13]"' in install_hint("cufft")
    assert install_hint("cuda") == "it comes with the NVIDIA driver, not with a pip package"


def test_once_makes_a_value_once_across_threads():
    """_loader.once: the value is made by one thread only, every thread gets it, a hit takes no lock."""
    import threading
    import time

    from cumath._bindings._loader import once

    table, lock, made = {}, threading.Lock(), []

    def make():
        made.append(1)
        time.sleep(0.01)
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(once(table, "k", lock, make))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 8 and all(g is table["k"] for g in got)
    with lock:  # held: a hit does not wait for it
        assert once(table, "k", lock, make) is table["k"]
