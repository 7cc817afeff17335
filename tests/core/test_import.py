"""`import cumath; import cumath.fft` imports no optional framework and loads no native library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORBIDDEN_MODULES = ["cupy", "torch", "numba", "mpi4py", "jax", "scipy", "pyfftw", "cuda"]
FORBIDDEN_LIBS = ["libcufft", "libcudart", "libfftw3", "libmkl", "libcuda.so", "libnvrtc"]

SCRIPT = textwrap.dedent("""
    import json, sys

    def state():
        maps = open("/proc/self/maps").read()
        return {
            "modules": sorted({m.partition(".")[0] for m in sys.modules} & set(FORBIDDEN_MODULES)),
            "libs": sorted(lib for lib in FORBIDDEN_LIBS if lib in maps),
        }

    import cumath
    import cumath.fft
    after_import = state()

    import numpy as np
    x = np.exp(2j * np.pi * np.arange(16) / 16) + np.linspace(1, 2, 16)
    y = cumath.fft.fft(x)
    ok = bool(np.allclose(y, np.fft.fft(x), rtol=1e-12, atol=1e-12))
    print(json.dumps({"after_import": after_import, "ok": ok, "after_fft": state(),
                      "type": type(y).__module__}))
""")


def _run(env_extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(env_extra or {})
    prelude = f"FORBIDDEN_MODULES = {FORBIDDEN_MODULES!r}\nFORBIDDEN_LIBS = {FORBIDDEN_LIBS!r}\n"
    out = subprocess.run([sys.executable, "-c", prelude + SCRIPT], env=env, capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_nothing_optional(tmp_path):
    res = _run({"CUMATH_CACHE_DIR": str(tmp_path)})
    assert res["after_import"] == {"modules": [], "libs": []}
    assert res["ok"] and res["type"] == "numpy"
    # a NumPy FFT on the CPU needs no GPU framework either
    assert not set(res["after_fft"]["modules"]) & {"cupy", "torch", "numba", "mpi4py", "jax", "cuda"}
    assert not [lib for lib in res["after_fft"]["libs"] if "cu" in lib or "nvrtc" in lib]


def test_import_with_scipy_engine(tmp_path):
    res = _run({"CUMATH_CACHE_DIR": str(tmp_path), "CUMATH_FFT_CPU_ENGINE": "scipy"})
    assert res["after_import"] == {"modules": [], "libs": []}
    assert res["ok"]
    assert not [lib for lib in res["after_fft"]["libs"] if "fftw" in lib or "mkl" in lib]
