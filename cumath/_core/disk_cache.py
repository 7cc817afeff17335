"""A content-addressed store of compiled artefacts (LTO-IR, CUBIN, ...): in memory and on disk.

``ContentStore(folder)`` keeps blobs under ``cumath.config.cache_dir(folder)``, one file per key, each with a
small JSON header (the caller's metadata, the blob's size and SHA-256). Keys are hex digests of everything
the artefact depends on (see :func:`digest`), so an entry never needs invalidating: a change of input makes
another key. Files are written atomically (a temporary file in the same folder, then ``os.replace``), so
concurrent processes see a whole file or none. A damaged or foreign file reads as a miss. A read-only or
full disk costs a recompile later, never an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
from typing import NamedTuple

__all__ = ["ContentStore", "Entry", "digest", "atomic_write"]

logger = logging.getLogger(__name__)

_MAGIC = b"CUMATHCS1\n"
_LEN = struct.Struct("<Q")


class Entry(NamedTuple):
    data: bytes
    meta: dict


def _encode(obj, out: list) -> None:
    """A canonical, type-tagged byte encoding of nested plain values (for hashing)."""
    t = type(obj)
    if obj is None or t is bool:
        out.append(b"N" if obj is None else (b"T" if obj else b"F"))
    elif t is int:
        out.append(b"i%d;" % obj)
    elif t is float:
        out.append(b"f" + float.hex(obj).encode() + b";")
    elif t is complex:
        out.append(b"c" + float.hex(obj.real).encode() + b"," + float.hex(obj.imag).encode() + b";")
    elif t is str:
        b = obj.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(b) + b)
    elif t in (bytes, bytearray, memoryview) or isinstance(obj, bytes):
        b = bytes(obj)
        out.append(b"b%d:" % len(b) + b)
    elif t in (tuple, list):
        out.append(b"(" if t is tuple else b"[")
        for x in obj:
            _encode(x, out)
        out.append(b")")
    elif t is dict:
        out.append(b"{")
        for k in sorted(obj, key=repr):
            _encode(k, out)
            _encode(obj[k], out)
        out.append(b"}")
    elif t in (set, frozenset):
        out.append(b"<")
        for x in sorted(obj, key=repr):
            _encode(x, out)
        out.append(b">")
    else:
        raise TypeError(f"digest() takes plain values (None, bool, int, float, complex, str, bytes, tuples, "
                        f"lists, dicts, sets), not {t.__name__}")


def digest(*parts) -> str:
    """SHA-256 hex digest of ``parts`` (nested plain values), type-tagged so ``1``, ``1.0`` and ``"1"`` differ."""
    out: list = []
    _encode(parts, out)
    return hashlib.sha256(b"".join(out)).hexdigest()


class ContentStore:
    """Blobs by key, in memory (per process) and in ``cache_dir(folder)`` (shared by processes)."""

    def __init__(self, folder: str, *, suffix: str = ".bin", max_memory_entries: int = 512):
        self.folder = folder
        self.suffix = suffix
        self.max_memory_entries = max_memory_entries
        self._memory: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def directory(self) -> str:
        from ..config import cache_dir

        return cache_dir(self.folder)

    def path(self, key: str) -> str:
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"cache keys are lowercase hex digests, not {key!r}")
        return os.path.join(self.directory(), key + self.suffix)

    # ------------------------------------------------------------------------------------------ reading
    def get(self, key: str, *, disk: bool = True) -> Entry | None:
        """The entry of ``key`` (memory first, then disk), or None."""
        entry = self._memory.get(key)
        if entry is not None or not disk:
            return entry
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("could not read the cache file %s: %s", path, exc)
            return None
        entry = self._parse(raw)
        if entry is None:
            logger.warning("ignoring the damaged cache file %s", path)
            return None
        self._remember(key, entry)
        return entry

    @staticmethod
    def _parse(raw: bytes) -> Entry | None:
        n0 = len(_MAGIC)
        if raw[:n0] != _MAGIC or len(raw) < n0 + _LEN.size:
            return None
        (hlen,) = _LEN.unpack_from(raw, n0)
        start = n0 + _LEN.size
        try:
            header = json.loads(raw[start:start + hlen].decode())
        except (UnicodeDecodeError, ValueError):
            return None
        data = raw[start + hlen:]
        if not isinstance(header, dict) or header.get("size") != len(data):
            return None
        if header.get("sha256") != hashlib.sha256(data).hexdigest():
            return None
        return Entry(data, header.get("meta") or {})

    # ------------------------------------------------------------------------------------------ writing
    def put(self, key: str, data: bytes, meta: dict | None = None, *, disk: bool = True) -> Entry:
        """Remember ``data`` (with JSON-serialisable ``meta``) under ``key``; written to disk atomically."""
        if not isinstance(data, bytes):
            data = bytes(data)
        entry = Entry(data, dict(meta or {}))  # a bytes subclass (with attributes) is kept as given
        self._remember(key, entry)
        if disk:
            self._write(key, entry)
        return entry

    def _write(self, key: str, entry: Entry) -> None:
        header = json.dumps({"size": len(entry.data), "sha256": hashlib.sha256(entry.data).hexdigest(),
                             "meta": entry.meta}, sort_keys=True).encode()
        blob = b"".join((_MAGIC, _LEN.pack(len(header)), header, entry.data))
        path = None
        try:
            path = self.path(key)
            atomic_write(path, blob, suffix=self.suffix)
        except OSError as exc:  # a read-only or full cache folder costs a recompile next time, nothing more
            logger.warning("could not write the cache file %s: %s", path or self.folder, exc)

    def _remember(self, key: str, entry: Entry) -> None:
        with self._lock:
            if len(self._memory) >= self.max_memory_entries:
                self._memory.pop(next(iter(self._memory)))
            self._memory[key] = entry

    # ------------------------------------------------------------------------------------------ upkeep
    def discard(self, key: str) -> None:
        """Forget ``key`` in memory and on disk."""
        with self._lock:
            self._memory.pop(key, None)
        try:
            os.unlink(self.path(key))
        except OSError:
            pass

    def clear_memory(self) -> None:
        """Forget what this process holds in memory (the files stay)."""
        with self._lock:
            self._memory.clear()


def atomic_write(path: str, data: bytes, *, suffix: str = "") -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and an atomic rename, so a
    reader (another process included) sees the old file or the whole new one, never a torn one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
