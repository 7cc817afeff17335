"""Crash-class cases, each in a subprocess that must exit cleanly (status 0) having printed its verdict: the
operand and cache faults that once ended in a segfault, an abort, a hang or garbage."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRE = """
import numpy as np, cumath
rng = np.random.default_rng(0)
def rel(a, b):
    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300))
"""

CASES = {
    "unaligned complex128 at offset 1": """
        v = rng.standard_normal(8) + 1j * rng.standard_normal(8)
        x = np.frombuffer(bytearray(16 * 9 + 1), np.complex128, 8, offset=1); x[...] = v
        assert rel(cumath.fft.fft(x), np.fft.fft(v)) < 1e-13
    """,
    "unaligned rfft float32/float64 at small offsets": """
        for dt in (np.float32, np.float64):
            for off in range(1, 8):
                v = rng.standard_normal(32).astype(dt)
                x = np.frombuffer(bytearray(v.nbytes + 8), dt, 32, offset=off); x[...] = v
                assert rel(cumath.fft.rfft(x), np.fft.rfft(v)) < 1e-4, (dt, off)
    """,
    "in-place FFT with reversed axes": """
        z = (rng.standard_normal((4, 2, 6)) + 0j)[::-1, ::-1]
        ref = np.fft.fft(z, axis=1)
        assert cumath.fft.fft(z, axes=[1], options={"inplace": True}) is z and rel(z, ref) < 1e-13
    """,
    "in-place FFT of a sliding window": """
        z = rng.standard_normal(64) + 0j
        w = np.lib.stride_tricks.sliding_window_view(z, 8, writeable=True)
        try:
            cumath.fft.fft(w, axes=[-1], options={"inplace": True})
            raise SystemExit("accepted")
        except ValueError as e:
            assert "share memory" in str(e)
    """,
    "DeviceCallable from an integer address": """
        for args in (dict(ltoir=12345, size=100, data=42), dict(ltoir=2**47, size=10)):
            try:
                cumath.fft.DeviceCallable(**args)
                raise SystemExit("accepted")
            except ValueError as e:
                assert "readable host memory" in str(e)
    """,
    "unchecked reset with a smaller operand": """
        f = cumath.fft.FFT(rng.standard_normal((64, 64)) + 0j); f.plan()
        try:
            f.reset_operand_unchecked(np.ones(4, complex)); f.execute()
            raise SystemExit("accepted")
        except ValueError:
            pass
        assert f.execute().shape == (64, 64)
    """,
    "in-place reset onto a read-only memmap": """
        import tempfile, os
        p = os.path.join(tempfile.mkdtemp(), "m.bin")
        np.memmap(p, dtype=complex, mode="w+", shape=(8, 8)).flush()
        ro = np.memmap(p, dtype=complex, mode="r", shape=(8, 8))
        f = cumath.fft.FFT(np.ones((8, 8), complex), options={"inplace": True}); f.plan()
        for reset in (f.reset_operand, f.reset_operand_unchecked):
            try:
                reset(ro); f.execute()
                raise SystemExit("accepted")
            except ValueError as e:
                assert "read-only" in str(e)
    """,
}

# cache faults: (setup of the cache folder in shell-free Python, the FFT call); the FFT must give the right answer
CACHE_SETUP = {
    "corrupted wisdom flags": """
        import subprocess, sys
        env = dict(os.environ)
        subprocess.run([sys.executable, "-c", "import numpy as np, cumath; cumath.fft.fft(np.ones(64, complex), "
                        "options={'planning_effort': 'measure'})"], check=True, env=env)
        p = os.path.join(cache, "fftw", "wisdom-fftw-double.txt")
        text = open(p).read()
        import re
        first = re.search(r"\\(fftw_\\w+ \\d+ (#x[0-9a-f]+)", text)
        assert first, text
        open(p, "w").write(text.replace(first.group(1), "#xfffffff", 1))
    """,
    "truncated wisdom": """
        os.makedirs(os.path.join(cache, "fftw"))
        open(os.path.join(cache, "fftw", "wisdom-fftw-double.txt"), "w").write("(fftw-3.3.5 fftw_wisdom #x3c2")
    """,
    "wisdom linked to /dev/zero": """
        os.makedirs(os.path.join(cache, "fftw"))
        os.symlink("/dev/zero", os.path.join(cache, "fftw", "wisdom-fftw-double.txt"))
    """,
    "wisdom path is a folder": """
        os.makedirs(os.path.join(cache, "fftw", "wisdom-fftw-double.txt"))
    """,
    "cache folder is a file": """
        os.rmdir(cache); open(cache, "w").close()
    """,
    "cache folder read-only": """
        os.makedirs(os.path.join(cache, "fftw")); os.chmod(os.path.join(cache, "fftw"), 0o500); os.chmod(cache, 0o500)
    """,
    "hostile wisdom text": """
        os.makedirs(os.path.join(cache, "fftw"))
        open(os.path.join(cache, "fftw", "wisdom-fftw-double.txt"), "w").write("(" * 100000 + "\\x00\\xff")
    """,
}


def run(code: str, env=None, timeout=180):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(PRE) + textwrap.dedent(code) + "\nprint('clean')"],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT, **(env or {})})


def _fftw():
    from helpers.matrix import engine_available

    if not engine_available("fftw"):
        pytest.skip("FFTW (pyFFTW's) is not installed")


@pytest.mark.parametrize("case", list(CASES))
def test_operand_fault_exits_cleanly(case):
    r = run(CASES[case])
    assert r.returncode == 0 and r.stdout.strip().endswith("clean"), (r.returncode, r.stdout[-2000:],
                                                                       r.stderr[-2000:])


@pytest.mark.parametrize("case", list(CACHE_SETUP))
def test_cache_fault_exits_cleanly_and_computes(case, tmp_path):
    _fftw()
    cache = tmp_path / "cache"
    cache.mkdir()
    setup = run(f"import os\ncache = {str(cache)!r}\n" + textwrap.dedent(CACHE_SETUP[case]),
                env={"CUMATH_CACHE_DIR": str(cache)})
    assert setup.returncode == 0, setup.stderr[-2000:]
    call = """
        import logging; logging.basicConfig(level=logging.WARNING)
        x = rng.standard_normal(64) + 1j * rng.standard_normal(64)
        for effort in (None, "measure"):
            assert rel(cumath.fft.fft(x, options={"planning_effort": effort}), np.fft.fft(x)) < 1e-13
    """
    try:
        for _ in range(2):  # the second process sees what the first one left
            r = run(call, env={"CUMATH_CACHE_DIR": str(cache), "CUMATH_FFT_CPU_ENGINE": "fftw"}, timeout=120)
            assert r.returncode == 0 and r.stdout.strip().endswith("clean"), (r.returncode, r.stderr[-3000:])
            assert r.stderr.count("Traceback") == 0
    finally:
        for folder, dirs, _ in os.walk(tmp_path):
            for d in dirs:
                os.chmod(os.path.join(folder, d), 0o700)
        if cache.exists():
            os.chmod(cache, 0o700)


def test_a_damaged_wisdom_file_is_moved_aside_with_one_warning(tmp_path):
    _fftw()
    cache = tmp_path / "cache"
    cache.mkdir()
    run(f"import os\ncache = {str(cache)!r}\n" + textwrap.dedent(CACHE_SETUP["corrupted wisdom flags"]),
        env={"CUMATH_CACHE_DIR": str(cache)})
    r = run("""
        import logging; logging.basicConfig(level=logging.WARNING)
        cumath.fft.fft(np.ones(64, complex))
    """, env={"CUMATH_CACHE_DIR": str(cache), "CUMATH_FFT_CPU_ENGINE": "fftw"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stderr.count("is damaged") == 1 and "moved to" in r.stderr
    assert any(name.startswith("wisdom-fftw-double.txt.bad-") for name in os.listdir(cache / "fftw"))


def test_a_default_fft_creates_no_cache_folder(tmp_path):
    cache = tmp_path / "never"
    r = run("""
        x = rng.standard_normal(64) + 0j
        cumath.fft.fft(x); cumath.fft.rfft(x.real); cumath.fft.irfft(cumath.fft.rfft(x.real))
    """, env={"CUMATH_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert not cache.exists()


def test_unwritable_home(tmp_path):
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    env = {"HOME": str(home), "XDG_CACHE_HOME": "", "CUMATH_CACHE_DIR": ""}
    r = run("""
        x = rng.standard_normal(64) + 0j
        for effort in (None, "measure"):
            assert rel(cumath.fft.fft(x, options={"planning_effort": effort}), np.fft.fft(x)) < 1e-13
    """, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
