"""`python -m cumath info | demo` run in a fresh process and say what they should."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               CUMATH_CACHE_DIR=str(tmp_path))
    return subprocess.run([sys.executable, "-m", "cumath", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_info_lists_libraries_gpus_and_the_cpu_engine(tmp_path):
    res = _run("info", tmp_path=tmp_path)
    assert res.returncode == 0, res.stderr
    for fragment in ("native libraries:", "cufft", "fftw3", "GPUs:", "FFT engine:"):
        assert fragment in res.stdout


def test_demo_on_the_cpu_checks_every_example(tmp_path):
    res = _run("demo", "--execution", "cpu", tmp_path=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all results match NumPy" in res.stdout
    assert "batched 1-D C2C" in res.stdout and "3-D C2C" in res.stdout


def test_unknown_command_is_refused(tmp_path):
    res = _run("frobnicate", tmp_path=tmp_path)
    assert res.returncode != 0 and "invalid choice" in res.stderr
