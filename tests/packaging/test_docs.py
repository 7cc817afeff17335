"""The documentation builds with warnings as errors (API reference from the docstrings, README as the guide)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    res = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html",
                          str(ROOT / "docs"), str(tmp_path / "html")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    html = (tmp_path / "html" / "api" / "fft.html").read_text()
    assert "cumath.fft.fft" in html and "FFTOptions" in html
    assert (tmp_path / "html" / "guide.html").exists() and (tmp_path / "html" / "install.html").exists()
