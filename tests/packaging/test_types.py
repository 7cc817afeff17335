"""Type checking: the lazily loaded domains are visible to mypy, the public surface keeps its signatures, and the
examples and a usage file type-check under ``mypy --strict`` (the configuration is pyproject's [tool.mypy])."""

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
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--no-incremental",
           "--cache-dir", os.devnull, *extra, *paths]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env=dict(os.environ, MYPYPATH=str(ROOT)))


REVEALED = {  # expression -> a fragment its revealed type must contain
    "cumath.fft.fft": "operand: Any, axes: typing.Sequence[int] | None",
    "cumath.fft.FFT.execute": "direction: cumath.fft._options.FFTDirection | str | None",
    "cumath.linalg.Matmul": "cumath.linalg._generic.planner.Matmul",
    "cumath.linalg.ComputeType": "MatmulComputeType",
    "cumath.linalg.advanced.matmul": "epilog: cumath.linalg.advanced._options.MatmulEpilog | None",
    "cumath.sparse.matmul": "options: cumath.sparse._matmul._options.MatmulOptions",
    "cumath.sparse.advanced.DirectSolver.plan": "DirectSolverPlanInfo",
    "cumath.tensor.binary_contraction": "expr: str",
    "cumath.device.Matmul": "data_type: str",
    "cumath.device.random.normal4": "DeviceStub",
    "cumath.distributed.fft.fft": "options: cumath.distributed.fft._options.FFTOptions",
    "cumath.distributed.initialize": "cumath.distributed._context.DistributedContext",
}


def test_domains_are_not_any(tmp_path):
    snippet = tmp_path / "reveal.py"
    lines = ["import cumath", "import cumath.sparse.advanced", "import cumath.distributed.fft",
             *(f"reveal_type({expr})" for expr in REVEALED),
             "with cumath.fft.FFT(1) as f:", "    reveal_type(f)"]
    snippet.write_text("\n".join(lines) + "\n")
    res = _mypy(str(snippet))
    assert res.returncode == 0, res.stdout + res.stderr
    revealed = [ln for ln in res.stdout.splitlines() if "Revealed type" in ln]
    assert len(revealed) == len(REVEALED) + 1, res.stdout
    for (expr, fragment), line in zip(REVEALED.items(), revealed):
        assert '"Any"' not in line and fragment in line, f"{expr}: {line}"
    assert "_fft_type" not in revealed[0]  # private parameters stay out of signatures
    assert 'Revealed type is "cumath.fft._planner.FFT"' in revealed[-1]  # `with` keeps the type


def test_public_surface_and_examples_type_check_strictly():
    res = _mypy(str(ROOT / "tests" / "packaging" / "typing_public.py"), *EXAMPLES)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success" in res.stdout


def test_strict_mypy_catches_a_wrong_call(tmp_path):
    """The strict check is not vacuous: a misspelled keyword and a wrong option type are errors."""
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\nimport cumath\n"
                   "cumath.fft.fft(np.ones(4), axis=[0])\n"
                   "cumath.linalg.matmul(np.ones((2, 2)), np.ones((2, 2)), options=3)\n"
                   "def untyped(x):\n    return cumath.fft.fft(x)\n")
    res = _mypy(str(bad))
    assert res.returncode == 1
    assert 'Unexpected keyword argument "axis"' in res.stdout, res.stdout
    assert 'Argument "options" to "matmul" has incompatible type "int"' in res.stdout, res.stdout
    assert "Function is missing a type annotation" in res.stdout, res.stdout
