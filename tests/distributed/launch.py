"""Run the distributed tests under MPI with several rank counts: ``python tests/distributed/launch.py 1 2 4``.

Oversubscribes where there are fewer cores than ranks (Open MPI needs ``--oversubscribe``; MPICH's Hydra does it
by itself). Each run has a time limit, and every rank's collective calls time out well before it.
"""

import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def command(nranks: int, args=()):
    exe = shutil.which("mpiexec") or shutil.which("mpirun")
    if exe is None:
        raise SystemExit("no mpiexec/mpirun on PATH: pip install cumath[distributed]")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    flags = [] if "HYDRA" in version.upper() else ["--oversubscribe", "--allow-run-as-root"]
    return [exe, "-n", str(nranks), *flags, sys.executable, "-m", "pytest", "tests/distributed", "-q",
            "-p", "no:cacheprovider", *args]


def env():
    from mpi_helpers import clean_env  # noqa: E402 (next to this file)

    e = clean_env(CUMATH_DISTRIBUTED_TIMEOUT=os.environ.get("CUMATH_DISTRIBUTED_TIMEOUT", "30"),
                  OMP_NUM_THREADS="1", CUMATH_UNDER_MPI_TESTS="1")
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    return e


def main(counts) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    for n in counts:
        start = time.monotonic()
        cmd = command(int(n))
        print("+", " ".join(cmd), flush=True)
        rc = subprocess.run(cmd, cwd=ROOT, env=env(), timeout=900).returncode
        print(f"{n} rank(s): exit {rc} in {time.monotonic() - start:.0f} s", flush=True)
        if rc != 0:
            return rc
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or ["1", "2", "4"]))
