"""Type checking: the lazily loaded domains are visible to mypy; the examples type-check."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the device examples call numba-cuda, whose stubs mypy reads from numba's simulator: checked at run time only
EXAMPLES = sorted(str(p) for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("device_"))


def _mypy(*paths, extra=()):
    pytest.importorskip("mypy")
    cmd = [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", "--ignore-missing-imports",
           "--cache-dir", os.devnull, *extra, *paths]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env=dict(os.environ, MYPYPATH=str(ROOT)))


def test_domains_are_not_any(tmp_path):
    snippet = tmp_path / "reveal.py"
    snippet.write_text("import cumath\nreveal_type(cumath.fft.fft)\nreveal_type(cumath.linalg.Matmul)\n")
    res = _mypy(str(snippet))
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [ln for ln in res.stdout.splitlines() if "Revealed type" in ln]
    assert len(lines) == 2 and all('"Any"' not in ln for ln in lines), res.stdout
    assert "operand" in lines[0] and "_fft_type" not in lines[0]  # private parameters stay out of signatures


def test_public_surface_and_examples_type_check():
    res = _mypy(str(ROOT / "tests" / "packaging" / "typing_public.py"), *EXAMPLES)
    assert res.returncode == 0, res.stdout + res.stderr
