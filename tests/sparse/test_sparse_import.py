"""`import cumath.sparse` (and `cumath.sparse.advanced`) imports no framework and loads no native library; the
engines load when a problem is planned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORBIDDEN_MODULES = ["cupy", "cupyx", "torch", "numba", "mpi4py", "jax", "scipy", "pyfftw", "cuda"]
FORBIDDEN_LIBS = ["libcudss", "libmkl", "libcudart", "libcublas", "libcuda.so", "libnvrtc", "libgomp", "libiomp"]

SCRIPT = textwrap.dedent("""
    import json, sys

    def state():
        maps = open("/proc/self/maps").read()
        return {"modules": sorted({m.partition(".")[0] for m in sys.modules} & set(FORBIDDEN_MODULES)),
                "libs": sorted(lib for lib in FORBIDDEN_LIBS if lib in maps),
                "numpy": "numpy" in sys.modules}

    import cumath.sparse
    out = {"sparse": state()}
    import cumath.sparse.advanced
    out["advanced"] = state()
    print(json.dumps(out))
""")


def test_import_cumath_sparse_loads_nothing():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    prelude = f"FORBIDDEN_MODULES = {FORBIDDEN_MODULES!r}\nFORBIDDEN_LIBS = {FORBIDDEN_LIBS!r}\n"
    out = subprocess.run([sys.executable, "-c", prelude + SCRIPT], env=env, capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["sparse"] == {"modules": [], "libs": [], "numpy": False}
    assert res["advanced"]["modules"] == [] and res["advanced"]["libs"] == []


def test_the_package_attribute_is_lazy():
    import cumath.sparse as sparse

    assert "advanced" in sparse.__all__
    assert sparse.advanced.direct_solver is not None
    import pytest

    with pytest.raises(AttributeError, match="module 'cumath.sparse' has no attribute 'dense'"):
        sparse.dense
