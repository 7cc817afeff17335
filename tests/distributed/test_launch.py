"""Driven from plain pytest: the multi-rank runs (mpiexec -n 2 and -n 3) of this folder, and the out-of-order
collective calls that must fail fast. Skipped under mpirun (no nested launches) and where no mpiexec exists."""

import importlib.util
import os
import subprocess
import sys
import time

import pytest

from mpi_helpers import clean_env, mpiexec, under_launcher

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
pytestmark = pytest.mark.skipif(under_launcher() or os.environ.get("CUMATH_UNDER_MPI_TESTS") == "1" or
                                mpiexec() is None or importlib.util.find_spec("mpi4py") is None,
                                reason="needs mpiexec, mpi4py and a plain (not MPI-launched) pytest")


def _env():
    e = clean_env(CUMATH_DISTRIBUTED_TIMEOUT="30", OMP_NUM_THREADS="1", CUMATH_UNDER_MPI_TESTS="1")
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    return e


@pytest.mark.parametrize("mode, words", [("skip", "waited 3 s for the other ranks"),
                                         ("other", "ranks disagree on collective call")])
def test_out_of_order_fails_fast(mode, words):
    start = time.monotonic()
    out = subprocess.run([mpiexec(), "-n", "2", sys.executable, os.path.join(HERE, "scripts", "out_of_order.py"),
                          mode], capture_output=True, text=True, timeout=120, env=_env(), cwd=ROOT)
    elapsed = time.monotonic() - start
    assert out.returncode != 0, out.stdout + out.stderr
    assert "rank 0 CollectiveError" in out.stdout and words in out.stdout, out.stdout + out.stderr
    assert elapsed < 60


@pytest.mark.parametrize("nranks", [2, 3])
def test_tests_under_mpiexec(nranks):
    sys.path.insert(0, HERE)
    from launch import command

    out = subprocess.run(command(nranks, ["-x", "-k", "not property"]), capture_output=True, text=True,
                         timeout=600, env=_env(), cwd=ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
