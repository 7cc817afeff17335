"""The specialised DIA gather kernel on a GPU (CuPy operands) in every layout of ``DIA_VARIANTS``, against SciPy
in float64; the kernel found in the disk cache by a second process within 50 ms."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

TOL = {"float32": 1e-5, "float64": 1e-12, "complex64": 1e-5, "complex128": 1e-12}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _laplacian(nx, ny, dtype):
    import scipy.sparse as sp

    n = nx * ny
    off1 = np.full(n, -1.0)
    off1[nx - 1::nx] = 0
    return sp.dia_array((np.stack([np.full(n, -1.0), off1, np.full(n, 4.0), np.roll(off1, 1), np.full(n, -1.0)]),
                         [-nx, -1, 0, 1, nx]), shape=(n, n)).astype(dtype).tocsr()


def _ust(h):
    cp = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    from cumath.sparse.ust import NamedFormats as N, Tensor

    return Tensor.from_package(csp.csr_matrix(h)).convert(tensor_format=N.DIAI), cp


def relerr(x, ref):
    return np.abs(np.asarray(x, np.complex128) - ref).max() / max(np.abs(ref).max(), 1e-300)


def _variants():
    from cumath.sparse._matmul import _dia

    return list(_dia.DIA_VARIANTS)


@pytest.mark.parametrize("name", _variants())
def test_every_variant(monkeypatch, name):
    """A 97 x 103 grid (9,991 rows: a partial last tile) times 64 float32 columns, beta != 0, an unaligned b."""
    from cumath.sparse import Matmul
    from cumath.sparse._matmul import _dia

    monkeypatch.setattr(_dia, "DIA_VARIANT", name)
    h = _laplacian(97, 103, "float32")
    a, cp = _ust(h)
    rng = np.random.default_rng(1)
    bh, ch = rng.standard_normal((h.shape[0], 65)).astype(np.float32), rng.standard_normal((h.shape[0], 64))
    for b in (cp.asarray(bh[:, :64]), cp.asarray(bh)[:, 1:]):
        c = cp.asarray(ch.astype(np.float32))
        with Matmul(a, b, c, alpha=2.0, beta=-0.5) as mm:
            mm.plan()
            assert mm._executor.ndiag == 5 and mm._executor.variant == _dia.DIA_VARIANTS[name]
            got = mm.execute()
        ref = 2 * (h.astype(np.float64) @ b.get().astype(np.float64)) - 0.5 * ch.astype(np.float32)
        assert relerr(got.get(), ref) < TOL["float32"], (name, b.strides)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("n", [1, 5, 8, 64, 130])
def test_dtypes_and_shapes(dtype, n):
    """Rectangular, diagonals reaching the corners, every dtype, column counts on and off the vector path."""
    from cumath.sparse import matmul

    rng = np.random.default_rng(2)
    d = np.zeros((301, 277), dtype)
    for off in (-300, -17, 0, 5, 276):
        i = np.arange(max(0, -off), min(301, 277 - off))
        d[i, i + off] = rng.standard_normal(i.size) + (1j * rng.standard_normal(i.size) if "complex" in dtype else 0)
    import scipy.sparse as sp

    a, cp = _ust(sp.csr_array(d))
    b = (rng.standard_normal((277, n)) + (1j * rng.standard_normal((277, n)) if "complex" in dtype else 0)).astype(dtype)
    got = matmul(a, cp.asarray(b))
    assert relerr(got.get(), d.astype(np.complex128) @ b) < TOL[dtype], (dtype, n)
    x = cp.asarray(b[:, 0])
    assert relerr(matmul(a, x).get(), d.astype(np.complex128) @ b[:, 0]) < TOL[dtype]


def test_second_process_loads_within_50_ms(tmp_path):
    """The product bound: the kernel compiled by one process is ready in a second within 50 ms (CUDA context
    made before the timing; the kernel's source, the disk cache and the module load are timed)."""
    pytest.importorskip("cupy")
    script = textwrap.dedent("""
        import json, numpy as np, cupy as cp, cupyx.scipy.sparse as csp, scipy.sparse as sp, cumath
        from cumath.sparse.ust import NamedFormats as N, Tensor
        n = 4096
        h = sp.diags([np.ones(n - 64), np.ones(n - 1), 4 * np.ones(n), np.ones(n - 1), np.ones(n - 64)],
                     [-64, -1, 0, 1, 64], format="csr", dtype=np.float32)
        a = Tensor.from_package(csp.csr_matrix(h)).convert(tensor_format=N.DIAI)
        b = cp.ones((n, 64), cp.float32)
        cp.cuda.Device().synchronize()
        mm = cumath.sparse.Matmul(a, b)
        mm.plan()
        print(json.dumps({"ready_ms": mm._executor.ready_ms}))
    """)
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH",
                                                                                                         ""))
    times = [json.loads(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                       check=True).stdout.strip().splitlines()[-1])["ready_ms"] for _ in range(2)]
    print("generated DIA kernel ready (first, second process) ms:", times)
    assert times[1] < 50, times
