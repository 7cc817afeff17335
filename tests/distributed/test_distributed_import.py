"""``import cumath.distributed`` loads nothing: no MPI, no framework, no native library."""

import subprocess
import sys

import pytest

from mpi_helpers import clean_env


def test_import_loads_nothing():
    code = ("import sys, cumath.distributed, cumath.distributed.distribution as d; "
            "d.Slab.X; d.ProcessGrid(shape=(2, 2)); "
            "bad = [m for m in ('mpi4py', 'torch', 'cupy', 'cumath._bindings.blacs', 'cumath._bindings.scalapack') "
            "if m in sys.modules]; "
            "import cumath._bindings._loader as L; print(bad, L.loaded_libraries())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=clean_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] {}", out.stdout


def test_initialize_twice_and_uninitialized_errors():
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install cumath[distributed])")
    code = """
import cumath.distributed as d
from cumath.errors import InvalidStateError
try:
    d.redistribute(None, None, None)
except InvalidStateError as e:
    assert "initialize" in str(e)
else:
    raise SystemExit("no error before initialize")
for bad, exc, words in (((None, None, ("nccl",)), ValueError, "need a GPU"), ((None, None, ("mpi",)), ValueError,
                        "unknown distributed backends"), ((-1, None), ValueError, "device_id")):
    try:
        d.initialize(*bad)
    except exc as e:
        assert words in str(e), str(e)
    else:
        raise SystemExit(f"no error for {bad}")
d.initialize(None)
try:
    d.initialize(None)
except InvalidStateError as e:
    assert "already initialized" in str(e)
ctx = d.get_context(); assert ctx.device_id is None and ctx.backends == () and ctx.process_group.nranks == 1
d.finalize(); d.finalize(); assert d.get_context() is None
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=clean_env())
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr


def test_redistribute_importable_from_distribution():
    code = ("import sys; from cumath.distributed.distribution import Redistribute, redistribute, Slab; "
            "import cumath.distributed as d; assert Redistribute is d.Redistribute and redistribute is d.redistribute; "
            "import cumath.distributed.distribution as m; "
            "assert 'Redistribute' in m.__all__; "
            "print('mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=clean_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", out.stdout
    bad = subprocess.run([sys.executable, "-c", "import cumath.distributed.distribution as m; m.Nope"],
                         capture_output=True, text=True, timeout=120, env=clean_env())
    assert bad.returncode != 0 and "has no attribute 'Nope'" in bad.stderr
