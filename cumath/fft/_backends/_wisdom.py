"""FFTW wisdom on disk: read only when it is known to be safe, written atomically, never fatal.

FFTW checks wisdom with assertions: a file whose flags field was damaged makes ``fftw_import_wisdom`` abort the
process (``assertion failed: flags.l == l``), and a process that dies there cannot repair the file. So a wisdom
file is imported into this process only once a child process has imported the same bytes and exited cleanly
(once per file version: the SHA-256 of the bytes checked is kept beside the file, and wisdom this process
exported itself is known good). A file that fails the check is renamed aside (``.bad-<time>``) with a warning.

Files are read without following links, only when regular and at most :data:`MAX_WISDOM_BYTES`, and written
through :func:`~cumath._core.disk_cache.atomic_write` (an unpredictable temporary name, created exclusively).
Reading never creates the cache folder; a folder or file that cannot be used logs one warning and the FFT runs.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time

from ..._bindings import fftw as _fftw
from ..._core.disk_cache import atomic_write, cache_dir, read_file, warn_once

__all__ = ["wisdom_path", "read_wisdom", "write_wisdom", "MAX_WISDOM_BYTES"]

logger = logging.getLogger(__name__)

MAX_WISDOM_BYTES = 64 << 20
#: seconds the child process that checks a wisdom file may take
CHECK_TIMEOUT = 120

_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from cumath._bindings import fftw
lib = fftw.get_fftw(sys.argv[2], sys.argv[3])
with fftw.planner_lock:
    ok = lib.import_wisdom_from_string(sys.stdin.buffer.read())
print("ok" if ok else "unreadable")
"""


def wisdom_path(lib, *, create: bool = False) -> str:
    return os.path.join(cache_dir("fftw", create=create), f"wisdom-{lib.provider}-{lib.precision}.txt")


def _stamp_path(path: str) -> str:
    return path + ".checked"


def _known_good(path: str, digest: str) -> bool:
    try:
        return read_file(_stamp_path(path), 1024).decode("ascii", "replace").strip() == digest
    except OSError:
        return False


def _stamp(path: str, digest: str) -> None:
    try:
        atomic_write(_stamp_path(path), digest.encode("ascii"), suffix=".checked")
    except OSError as exc:
        warn_once("could not record the check of the FFTW wisdom file", path, exc)


def _check_in_child(lib, wisdom: bytes) -> tuple[bool, str]:
    """Import ``wisdom`` in a child process: (whether it exited cleanly having read it, what it said)."""
    import subprocess  # here: only a new wisdom file needs it, and the import costs a first plan milliseconds

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD, root, lib.precision, lib.provider], input=wisdom,
                           capture_output=True, timeout=CHECK_TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"the check could not run ({exc})"
    out = r.stdout.decode("ascii", "replace").strip()
    if r.returncode == 0 and out.endswith("ok"):
        return True, "ok"
    tail = (r.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1]
    return False, (f"FFTW could not read it" if r.returncode == 0 else
                   f"importing it ended the checking process with status {r.returncode} ({tail})")


def _quarantine(path: str, why: str) -> None:
    bad = f"{path}.bad-{int(time.time())}"
    try:
        os.replace(path, bad)
        logger.warning("the FFTW wisdom file %s is damaged (%s): moved to %s; plans are made without it", path,
                       why, bad)
    except OSError as exc:
        warn_once(f"the FFTW wisdom file is damaged ({why}) and could not be moved aside", path, exc)


def read_wisdom(lib, path: str | None = None) -> bytes | None:
    """The wisdom of ``lib``'s file, if there is a file and it is safe to import; None otherwise."""
    path = path or wisdom_path(lib)
    try:
        wisdom = read_file(path, MAX_WISDOM_BYTES)
    except (FileNotFoundError, NotADirectoryError):  # no file (or no cache folder): nothing learnt yet
        return None
    except OSError as exc:
        warn_once("could not read the FFTW wisdom file", path, exc)
        return None
    digest = hashlib.sha256(wisdom).hexdigest()
    if _known_good(path, digest):
        return wisdom
    ok, why = _check_in_child(lib, wisdom)
    if not ok:
        if why.startswith("the check could not run"):
            warn_once("could not check the FFTW wisdom file, so it is not used", path, why)
        else:
            _quarantine(path, why)
        return None
    _stamp(path, digest)
    return wisdom


def write_wisdom(lib, wisdom: bytes) -> bool:
    """Write ``wisdom`` (exported by this process, so known good) as ``lib``'s file; False when it cannot."""
    path = None
    try:
        path = wisdom_path(lib, create=True)
        atomic_write(path, wisdom, suffix=".txt")
    except OSError as exc:
        warn_once("could not write the FFTW wisdom file", path or "(cache folder)", exc)
        return False
    _stamp(path, hashlib.sha256(wisdom).hexdigest())
    return True


def import_wisdom(lib, wisdom: bytes) -> bool:
    with _fftw.planner_lock:
        return lib.import_wisdom_from_string(wisdom)
