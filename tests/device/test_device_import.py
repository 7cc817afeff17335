"""`import cumath.device` loads nothing optional, and a missing ``dx`` extra (numba-cuda, libmathdx) is reported
with the extra's name."""

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_IMPORTS = textwrap.dedent("""
    import json, sys
    import numpy as np
    import cumath, cumath.device, cumath.device.random
    from cumath.device import FFT, Matmul, CholeskySolver, random
    f = FFT(size=64, precision=np.float32, fft_type="c2c", execution="Block", direction="forward", sm=90)
    m = Matmul(size=(8, 8, 8), precision=np.float64, data_type="real", sm=90)
    s = CholeskySolver((8, 8), np.float64, "Block", "lower", sm=90)
    from cumath.device import float16x4, make_tensor, copy, copy_wait, Partitioner, Layout
    lay, part = m.get_layout_gmem_a(), m.suggest_partitioner()
    h = FFT(size=64, precision=np.float16, fft_type="c2c", execution="Thread", direction="forward", sm=90)
    e = cumath.device.Solver("gesvd", (8, 6), np.float32, "Block", job="some_vectors", sm=90).execute_parameters
    maps = open("/proc/self/maps").read()
    print(json.dumps({
        "modules": sorted({k.partition(".")[0] for k in sys.modules} & {"numba", "numba_cuda", "cupy", "torch",
                                                                           "llvmlite", "cuda"}),
        "libs": sorted(x for x in ("libmathdx", "libnvrtc", "libcurand", "libcuda.so", "libcudart")
                       if x in maps),
        "normal4": repr(random.normal4),
    }))
""")


def _run(code, tmp_path, *args):
    env = dict(os.environ, CUMATH_CACHE_DIR=str(tmp_path),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300)


def test_import_and_construction_load_nothing(tmp_path):
    res = _run(_IMPORTS, tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out == {"modules": [], "libs": [], "normal4": "<cumath.device.random.normal4>"}


_NO_NUMBA = textwrap.dedent("""
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("numba", "numba_cuda"):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, Block())
    import cumath._core.numba_compat as compat
    compat._versions.clear()
    import numpy as np
    import cumath.device as dev
    f = dev.FFT(size=64, precision=np.float32, fft_type="c2c", execution="Block", direction="forward", sm=90)
    for what, fn in (("numba type", lambda: f._numba_type_), ("states", lambda: dev.random.StatesXORWOW(4)),
                     ("random typing", lambda: dev.random.normal._numba_type_),
                     ("half vector", lambda: dev.float16x4._numba_type_),
                     ("tensor helper", lambda: dev.copy._numba_type_)):
        try:
            fn()
        except Exception as exc:
            print(what, type(exc).__name__, exc)
""")


def test_numba_cuda_absent(tmp_path):
    res = _run(_NO_NUMBA, tmp_path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 5, res.stdout
    for line in lines:
        assert "numba-cuda, which is not installed" in line and 'pip install "cumath[dx]"' in line, line


_NO_MATHDX = textwrap.dedent("""
    import numpy as np
    from cumath._bindings import _loader
    _loader.LIBRARIES["mathdx"] = _loader.LibrarySpec(("libmathdx_absent.so.0",), "dx")
    import cumath.device as dev
    from cumath.errors import LibraryNotFoundError
    f = dev.FFT(size=64, precision=np.float32, fft_type="c2c", execution="Block", direction="forward", sm=90)
    for what, fn in (("traits", lambda: f.storage_size), ("files", lambda: f.files)):
        try:
            fn()
        except LibraryNotFoundError as exc:
            print(what, exc)
""")


def test_libmathdx_absent(tmp_path):
    res = _run(_NO_MATHDX, tmp_path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 2, res.stdout
    for line in lines:
        # without NVRTC the loader names the cu13 extra first; with it, libmathdx and the dx extra
        assert ("could not load the mathdx library" in line and "cumath[dx]" in line) or \
               ("could not load the nvrtc library" in line and "cumath[cu13]" in line), line
