"""Import hygiene and lifetimes of the sparse matmul and the UST: importing loads no framework or library; a
failure inside plan() frees what was made; plans free their engine handles."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_imports_load_nothing():
    script = """
import json, sys
import cumath.sparse
names = [cumath.sparse.Matmul, cumath.sparse.MatmulOptions, cumath.sparse.matmul_matrix_qualifiers_dtype]
import cumath.sparse.ust
from cumath.sparse.ust import NamedFormats
maps = open("/proc/self/maps").read()
print(json.dumps({"modules": sorted({m.partition(".")[0] for m in sys.modules} &
                                    {"torch", "cupy", "cupyx", "scipy", "numba", "jax"}),
                  "libs": sorted(l for l in ("libmkl", "libcusparse", "libcudart", "libnvrtc") if l in maps)}))
"""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"modules": [], "libs": []}


def _have_mkl() -> bool:
    try:
        from cumath._bindings.mkl_sparse import available

        return bool(available())
    except Exception:  # noqa: BLE001
        return False


needs_mkl = pytest.mark.skipif(not _have_mkl(), reason="oneMKL is not installed (pip install \".[mkl]\")")


@needs_mkl
def test_failure_inside_plan_leaves_no_plan(monkeypatch):
    from cumath.sparse import Matmul

    a = sp.random_array((8, 8), density=0.5, random_state=0, format="csr")
    mm = Matmul(a, np.ones((8, 2)), options={"cpu_engine": "mkl"})
    from cumath.sparse._matmul import _executors

    def boom(*args, **kwargs):
        raise RuntimeError("injected at plan")

    monkeypatch.setattr(_executors.HostExecutor, "_choose_layout", boom)
    with pytest.raises(RuntimeError, match="injected at plan"):
        mm.plan()
    assert mm.engine is None
    monkeypatch.undo()
    mm.plan()
    assert mm.engine == "mkl"
    mm.free()
    mm.free()


@needs_mkl
def test_free_releases_mkl_handles():
    from cumath.sparse import Matmul

    a = sp.random_array((30, 20), density=0.2, random_state=1, format="csr")
    mm = Matmul(a, np.ones((20, 3)))
    mm.plan()
    mm.execute()
    products = list(mm._executor.products)
    assert all(p.handle is not None for p in products)
    mm.free()
    assert all(p.handle is None for p in products)
