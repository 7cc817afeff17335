"""FFTW keeps working after oneMKL's BLAS was used in the same process: libmkl_rt puts MKL's own fftw_* entry
points in the global symbol scope, and FFTW (loaded with RTLD_DEEPBIND) must not bind its internal calls to
them. Seen before the fix: FFTW's wisdom import returned failure once cumath.linalg had run on MKL."""

import subprocess
import sys
import textwrap

import pytest

from cumath._bindings._loader import find_library

pytestmark = pytest.mark.skipif(find_library("mkl_rt") is None or find_library("fftw3") is None,
                                reason="needs both MKL and pyFFTW's FFTW")

_CHILD = textwrap.dedent(
    """
    import os, tempfile
    import numpy as np
    import cumath
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((37, 11)), rng.standard_normal((11, 13))
    d = cumath.linalg.matmul(a, b, options={"cpu_blas": "mkl"})
    assert np.allclose(d, a @ b)
    from cumath._bindings import fftw as F
    lib = F.get_fftw("double", "fftw")
    x = np.ones(64, complex)
    y = cumath.fft.fft(x, options={"cpu_engine": "fftw"})
    assert np.allclose(y, np.fft.fft(x))
    with F.planner_lock:
        text = lib.export_wisdom_to_string()
        path = os.path.join(tempfile.mkdtemp(), "wisdom.txt")
        with open(path, "wb") as f:
            f.write(text)
        print(lib.import_wisdom_from_string(text), lib.import_wisdom_from_filename(path))
    """
)


def test_fftw_wisdom_after_mkl_blas(tmp_path):
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "CUMATH_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr
