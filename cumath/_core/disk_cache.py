"""Persistent caches on disk: the cache folder, a content-addressed store of compiled artefacts, a keyed JSON store.

- :func:`cache_dir`: the user cache folder of cumath (``CUMATH_CACHE_DIR``, else ``$XDG_CACHE_HOME/cumath`` or
  ``~/.cache/cumath``); ``cumath.config.cache_dir`` is this function.
- :class:`ContentStore` keeps blobs (LTO-IR, CUBIN, ...) under ``cache_dir(folder)``, one file per key, each with
  a small JSON header (the caller's metadata, the blob's size and SHA-256), and in memory. Keys are hex digests
  of everything the artefact depends on (see :func:`digest`), so an entry never needs invalidating: a change of
  input makes another key. :meth:`ContentStore.get_or_make` makes a missing artefact once per process, however
  many threads ask for it.
- :class:`JsonStore` keeps JSON documents (autotuning results) under ``cache_dir(folder, ...)``, with an
  inter-process lock for read-compare-write updates.

Files are written atomically (a temporary file with an unpredictable name, created exclusively in the same
folder, then ``os.replace``), so concurrent processes see a whole file or none; cache files and lock files are
opened without following symbolic links. A damaged or foreign file reads as a miss. A read-only or full disk
costs a recompile later, never an error.
"""

from __future__ import annotations

import contextlib  # (hashlib, json and tempfile are imported where used: ~25 ms of `import cumath`)
import logging
import os
import stat
import struct
import threading
from typing import Callable, NamedTuple

__all__ = ["cache_dir", "ContentStore", "Entry", "digest", "atomic_write", "read_file", "JsonStore", "warn_once"]

logger = logging.getLogger(__name__)

_MAGIC = b"CUMATHCS2\n"  # 2: the checksum covers the metadata too
_LEN = struct.Struct("<Q")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def cache_dir(*parts: str, create: bool = True) -> str:
    """The user cache folder of cumath (created on demand, unless ``create=False``), or a sub-folder of it.
    Creating it may raise OSError (an unwritable HOME): callers treat that as a cache that is not there."""
    base = os.environ.get("CUMATH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "cumath"
    )
    path = os.path.join(base, *parts)
    if create:
        os.makedirs(path, exist_ok=True)
    return path


_warned: set = set()
_warned_lock = threading.Lock()


def warn_once(what: str, path, exc) -> None:
    """One warning per (what, path) and process: a cache that cannot be used is skipped, never fatal."""
    with _warned_lock:
        if (what, path) in _warned:
            return
        _warned.add((what, path))
    logger.warning("%s %s: %s (the cache is skipped; results are not affected)", what, path, exc)


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
    import hashlib
    out: list = []
    _encode(parts, out)
    return hashlib.sha256(b"".join(out)).hexdigest()


_MAX_HEADER = 1 << 20
#: the largest file a cache reads (a link to /dev/zero, or a huge planted file, is not read forever)
MAX_FILE_BYTES = 1 << 30


def _checksum(meta: dict, data: bytes) -> str:
    """SHA-256 over the metadata (canonical JSON) and the blob: a change to either reads as damage."""
    import hashlib
    import json
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    h.update(b"\0")
    h.update(data)
    return h.hexdigest()


class ContentStore:
    """Blobs by key, in memory (per process) and in ``cache_dir(folder)`` (shared by processes)."""

    def __init__(self, folder: str, *, suffix: str = ".bin", max_memory_entries: int = 512):
        self.folder = folder
        self.suffix = suffix
        self.max_memory_entries = max_memory_entries
        self._memory: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._making: dict[str, threading.Lock] = {}  # key -> the lock of the thread making it

    def directory(self) -> str:
        return cache_dir(self.folder)

    def path(self, key: str) -> str:
        """Where ``key``'s file is (the folder is not created: reading a missing cache makes nothing)."""
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"cache keys are lowercase hex digests, not {key!r}")
        return os.path.join(cache_dir(self.folder, create=False), key + self.suffix)

    # ------------------------------------------------------------------------------------------ reading
    def get(self, key: str, *, disk: bool = True) -> Entry | None:
        """The entry of ``key`` (memory first, then disk), or None."""
        entry = self._memory.get(key)
        if entry is not None or not disk:
            return entry
        path = self.path(key)
        try:
            raw = read_file(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            warn_once("could not read the cache file", path, exc)
            return None
        entry = self._parse(raw)
        if entry is None:
            logger.warning("ignoring the damaged cache file %s", path)
            return None
        self._remember(key, entry)
        return entry

    @staticmethod
    def _parse(raw: bytes) -> Entry | None:
        import json
        n0 = len(_MAGIC)
        if raw[:n0] != _MAGIC or len(raw) < n0 + _LEN.size:
            return None
        (hlen,) = _LEN.unpack_from(raw, n0)
        start = n0 + _LEN.size
        if hlen > _MAX_HEADER:
            return None
        try:
            header = json.loads(raw[start:start + hlen].decode())
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        data = raw[start + hlen:]
        if not isinstance(header, dict) or header.get("size") != len(data):
            return None
        meta = header.get("meta") or {}
        if not isinstance(meta, dict) or header.get("sha256") != _checksum(meta, data):
            return None
        return Entry(data, meta)

    def get_or_make(self, key: str, make: Callable[[], tuple], *, disk: bool = True) -> Entry:
        """The entry of ``key``; on a miss, ``make()`` returns ``(data, meta)``, which is stored and returned.

        A thread that asks for a key another thread is making waits for that one's result, so an artefact is
        made at most once per process (processes may race; their writes are atomic). An exception of ``make``
        reaches the caller and stores nothing."""
        entry = self.get(key, disk=disk)
        if entry is not None:
            return entry
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        try:
            with making:
                entry = self.get(key, disk=disk)
                if entry is None:
                    data, meta = make()
                    entry = self.put(key, data, meta, disk=disk)
        finally:
            with self._lock:
                if self._making.get(key) is making:
                    del self._making[key]
        return entry

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
        import json
        header = json.dumps({"size": len(entry.data), "sha256": _checksum(entry.meta, entry.data),
                             "meta": entry.meta}, sort_keys=True).encode()
        blob = b"".join((_MAGIC, _LEN.pack(len(header)), header, entry.data))
        path = None
        try:
            path = self.path(key)
            self.directory()
            atomic_write(path, blob, suffix=self.suffix)
        except OSError as exc:  # a read-only or full cache folder costs a recompile next time, nothing more
            warn_once("could not write the cache file", path or self.folder, exc)

    def _remember(self, key: str, entry: Entry) -> None:
        with self._lock:
            if len(self._memory) >= self.max_memory_entries:
                self._memory.pop(next(iter(self._memory)))
            self._memory[key] = entry

    def export(self, name: str, data: bytes) -> str:
        """A plain copy of an artefact's bytes as ``<folder>/link/<name>`` (for tools that take file paths, such
        as numba-cuda's ``link=``), written once: a file of that name and size is reused. Names carry the key."""
        if os.sep in name or (os.altsep and os.altsep in name) or name.startswith("."):
            raise ValueError(f"an exported file's name is a plain file name, not {name!r}")
        path = os.path.join(cache_dir(self.folder, "link"), name)  # (OSError: the caller needs the file)
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_size == len(data) and read_file(path) == data:
                return path  # the same bytes (a file of the right size with other content is replaced)
        except OSError:
            pass
        atomic_write(path, data)
        return path

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


def read_file(path: str, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``; a symbolic link, a folder, a device or a file larger than
    ``max_bytes`` (default :data:`MAX_FILE_BYTES`) raises OSError (a cache reads only its own files)."""
    limit = MAX_FILE_BYTES if max_bytes is None else max_bytes
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        if st.st_size > limit:
            raise OSError(f"{path} has {st.st_size} bytes, more than a cache file may have ({limit})")
        data = f.read(limit + 1)
        if len(data) > limit:
            raise OSError(f"{path} grew past {limit} bytes while being read")
        return data


def atomic_write(path: str, data: bytes, *, suffix: str = "") -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and an atomic rename, so a
    reader (another process included) sees the old file or the whole new one, never a torn one. The temporary
    file has an unpredictable name and is created exclusively without following links (``tempfile.mkstemp``);
    the rename replaces a link at ``path`` rather than writing through it."""
    import tempfile
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


class JsonStore:
    """JSON documents, one file per key: ``cache_dir(folder, *subfolders)/<key>.json``.

    ``read`` gives the document, and raises ``FileNotFoundError`` where there is none and ``ValueError`` or
    ``OSError`` for a file that cannot be read as JSON (the caller decides whether to warn); ``write`` replaces a
    file atomically; ``locked(path)`` holds an exclusive inter-process lock (``flock`` on ``<path>.lock``, opened
    without following links) so that a read-compare-write of one document does not interleave with another
    process's. Where ``fcntl`` is missing (Windows) the lock is a no-op: files stay whole, and the last writer
    wins a race."""

    def __init__(self, folder: str):
        self.folder = folder

    def directory(self, *subfolders: str) -> str:
        """``cache_dir(folder, *subfolders)``, created on demand."""
        return cache_dir(self.folder, *subfolders)

    def path(self, key: str, *subfolders: str) -> str:
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"document keys are lowercase hex digests, not {key!r}")
        return os.path.join(cache_dir(self.folder, *subfolders, create=False), key + ".json")

    @staticmethod
    def read(path: str):
        import json
        try:
            return json.loads(read_file(path, 16 << 20).decode("utf-8"))
        except (RecursionError, UnicodeDecodeError) as exc:  # a hostile file reads as a damaged one
            raise ValueError(f"{path} is not a cumath JSON document ({type(exc).__name__})") from None

    @staticmethod
    def write(path: str, document) -> None:
        import json
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, json.dumps(document, indent=1).encode("utf-8"), suffix=".json")

    @staticmethod
    @contextlib.contextmanager
    def locked(path: str):
        try:
            import fcntl
        except ImportError:
            yield
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def remove_all(self) -> None:
        """Delete every document and lock file of the store (files that cannot be removed stay)."""
        for folder, _dirs, files in os.walk(self.directory()):
            for name in files:
                if name.endswith((".json", ".lock")):
                    try:
                        os.unlink(os.path.join(folder, name))
                    except OSError:
                        pass
