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
    "cumath.device.CholeskySolver": "type[cumath.device._solver._Adapter]",  # adapters: Solvers, typed
    "cumath.device.CholeskySolver((8, 8, 1), 'float32', 'Block', 'lower').a_shape": "int, ...]",
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


# classes whose properties a type checker must see typed (every public property, found at run time)
PROPERTY_CLASSES = ["cumath.device.FFT", "cumath.device.Matmul", "cumath.device.Solver", "cumath.device.Layout",
                    "cumath.sparse.ust.Tensor", "cumath.sparse.ust.TensorFormat", "cumath.sparse.Matmul",
                    "cumath.sparse.advanced.DirectSolver", "cumath.sparse.advanced.DirectSolverPlanInfo",
                    "cumath.sparse.advanced.DirectSolverFactorizationInfo", "cumath.linalg._generic.traits.Geometry"]
# Any by design: the package object a tensor views, and its values array (of the tensor's package)
ANY_BY_DESIGN = {"cumath.sparse.ust.Tensor.base", "cumath.sparse.ust.Tensor.val"}
PROPERTY_TYPES = {  # property -> its revealed type exactly ("builtins." dropped: mypy versions differ there)
    "cumath.device.FFT.size": "int",
    "cumath.device.FFT.storage_size": "int",
    "cumath.device.FFT.ffts_per_block": "int | None",
    "cumath.device.FFT.real_fft_options": "dict[str, str] | None",
    "cumath.device.Matmul.size": "tuple[int, int, int]",
    "cumath.device.Matmul.precision": "str | tuple[str, str, str]",
    "cumath.device.Matmul.a_dim": "tuple[int, int]",
    "cumath.device.Matmul.tensor_types": "tuple[str, str, str] | None",
    "cumath.device.Solver.a_shape": "tuple[int, ...]",
    "cumath.device.Solver.info_shape": "tuple[int]",
    "cumath.device.Solver.lda": "int | None",
    "cumath.device.Solver.job": "str | tuple[str, ...] | None",
    "cumath.device.Layout.leading_dimension": "int | None",
    "cumath.sparse.ust.Tensor.extents": "tuple[int, ...]",
    "cumath.sparse.ust.Tensor.tensor_format": "cumath.sparse.ust._dsl.TensorFormat",
    "cumath.sparse.ust.Tensor.device_id": "int | Literal['cpu']",
    "cumath.sparse.ust.TensorFormat.dimensions": "tuple[cumath.sparse.ust._dsl.Dimension, ...]",
    "cumath.sparse.Matmul.options": "cumath.sparse._matmul._options.MatmulOptions",
    "cumath.sparse.advanced.DirectSolver.plan_config": "cumath.sparse.advanced._config.DirectSolverPlanConfig",
    "cumath.sparse.advanced.DirectSolverFactorizationInfo.lu_nnz": "int | None",
    "cumath.linalg._generic.traits.Geometry.M": "int",
    "cumath.linalg._generic.traits.Geometry.c_shape": "tuple[int, ...] | None",
}


def _properties(path):
    import importlib

    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    return sorted({attr for klass in cls.__mro__ for attr, value in vars(klass).items()
                   if isinstance(value, property) and not attr.startswith("_")})


def test_properties_are_typed(tmp_path):
    """Every public property of these classes reveals its own type, not Any, to mypy; some exactly."""
    lines = ["import cumath", "import cumath.linalg._generic.traits", "import cumath.sparse.advanced",
             "import cumath.sparse.ust"]
    order = []
    for i, path in enumerate(PROPERTY_CLASSES):
        lines.append(f"def check{i}(x: {path}) -> None:")
        for attr in _properties(path):
            lines.append(f"    reveal_type(x.{attr})")
            order.append(f"{path}.{attr}")
    assert len(order) > 150 and set(PROPERTY_TYPES) <= set(order), sorted(set(PROPERTY_TYPES) - set(order))
    snippet = tmp_path / "properties.py"
    snippet.write_text("\n".join(lines) + "\n")
    res = _mypy(str(snippet))
    assert res.returncode == 0, res.stdout + res.stderr
    revealed = [ln.split("Revealed type is ", 1)[1].strip('"').replace("builtins.", "")
                for ln in res.stdout.splitlines() if "Revealed type" in ln]
    assert len(revealed) == len(order), res.stdout
    types = dict(zip(order, revealed))
    untyped = [f"{w}: {t}" for w, t in types.items() if t in ("Any", "Any | None") and w not in ANY_BY_DESIGN]
    assert not untyped, "properties a type checker sees as Any:\n" + "\n".join(untyped)
    wrong = [f"{w}: {types[w]} (expected {t})" for w, t in PROPERTY_TYPES.items() if types[w] != t]
    assert not wrong, "\n".join(wrong)


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
                   "def untyped(x):\n    return cumath.fft.fft(x)\n"
                   "def rows(mm: cumath.device.Matmul) -> str:\n    return mm.m\n")
    res = _mypy(str(bad))
    assert res.returncode == 1
    assert 'Unexpected keyword argument "axis"' in res.stdout, res.stdout
    assert 'Argument "options" to "matmul" has incompatible type "int"' in res.stdout, res.stdout
    assert "Function is missing a type annotation" in res.stdout, res.stdout
    # a typed property: returning the int Matmul.m where a str is promised is an error
    assert 'Incompatible return value type (got "int", expected "str")' in res.stdout, res.stdout
