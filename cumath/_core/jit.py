"""cumath's one NVRTC + nvJitLink driver: CUDA C++ to PTX, CUBIN or LTO-IR, and LTO-IR linked into a CUBIN, with
every artefact content-addressed in memory and on disk.

- :func:`compile_source` compiles CUDA C++ for a compute capability: ``output="cubin"`` (falling back to PTX for
  the newest architecture NVRTC knows when the GPU is newer than NVRTC; the driver JIT-compiles that PTX),
  ``"ptx"``, or ``"ltoir"`` (``-dlto``, for a later link). ``names`` are C++ name expressions whose lowered
  (mangled) names come back with the artefact; ``include_dirs`` become ``-I`` options.
- :func:`link` links LTO-IR (and PTX, CUBIN, fatbin) pieces with nvJitLink into a CUBIN for a compute capability.

Both return an :class:`Artifact` (bytes, kind, key, lowered names) from a
:class:`~cumath._core.disk_cache.ContentStore` (by default :data:`STORE`, ``cache_dir("jit")``): a second call,
in this process or another sharing the cache folder, compiles nothing, and threads asking for the same artefact
wait for the one making it. Keys digest everything that changes the output: the source, the options (the target
architecture among them), the name expressions, NVRTC's version (for links: the SHA-256 of every piece, the
options, nvJitLink's version). Include folders say where headers are, not what they hold, so they are not part of
the key: pass what the output depends on in them (a digest of the headers) as ``depends``.

:func:`include_roots` and :func:`find_include` locate the CUDA headers of the ``nvidia/*`` wheels or a toolkit.

NVRTC and nvJitLink are called through :mod:`cumath._bindings.nvrtc` / :mod:`~cumath._bindings.nvjitlink` (over
cuda-bindings) rather than cuda.core's ``Program``/``Linker``: the content-addressed caches need the exact options
and the lowered names, and the errors stay cumath's typed ``NVRTCError``/``NVJitLinkError`` with the status and the
log, which cuda.core folds into messages of its own.
Errors: ``NVRTCError`` with NVRTC's log, ``NVJitLinkError`` with nvJitLink's, ``LibraryNotFoundError`` naming
the extra that brings a missing library.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import sys
import time
from typing import NamedTuple

from .compute_capability import parse_compute_capability
from .disk_cache import ContentStore, digest

__all__ = ["Artifact", "STORE", "OUTPUTS", "DEFAULT_OPTIONS", "LINK_OPTIONS", "compile_source", "compile_key", "link",
           "link_key", "target", "nvrtc_version", "nvjitlink_version", "include_roots", "find_include",
           "clear_memory_cache"]

logger = logging.getLogger(__name__)

OUTPUTS = ("cubin", "ptx", "ltoir")
DEFAULT_OPTIONS = ("-std=c++17",)
LINK_OPTIONS = ("-O3",)
_KEY_VERSION = 1
_PIECE_KINDS = ("ltoir", "ptx", "cubin", "fatbin", "object", "library")

STORE = ContentStore("jit", suffix=".bin")  # key -> artefact, meta {"kind", "lowered", "what"}


class Artifact(NamedTuple):
    """A compiled or linked artefact: its bytes, ``kind`` ('cubin', 'ptx' or 'ltoir'), ``key`` (its content
    address) and ``lowered`` ({C++ name expression: lowered name})."""

    data: bytes
    kind: str
    key: str
    lowered: dict


# ------------------------------------------------------------------------------------------ toolchain

def nvrtc_version() -> tuple[int, int]:
    from .._bindings import nvrtc

    return tuple(nvrtc.nvrtcVersion())


def nvjitlink_version() -> tuple[int, int]:
    from .._bindings import nvjitlink

    return tuple(nvjitlink.nvJitLinkVersion())


def _cc_int(cc) -> int:
    major, minor = parse_compute_capability(cc, what="cc")
    return 10 * major + minor


def target(cc, output: str, supported) -> tuple[str, str]:
    """(``-arch`` option, kind of the result) for compute capability ``cc`` given NVRTC's ``supported``
    architectures (ints such as 90): a CUBIN for ``sm_<cc>``; PTX and LTO-IR for ``compute_<cc>``. For a GPU newer
    than NVRTC, the newest older architecture it knows (a CUBIN request then gives PTX)."""
    if output not in OUTPUTS:
        raise ValueError(f"output={output!r} is not supported; the allowed values are {list(OUTPUTS)}")
    arch = _cc_int(cc)
    if arch in supported:
        return (f"-arch=sm_{arch}", "cubin") if output == "cubin" else (f"-arch=compute_{arch}", output)
    older = [a for a in supported if a <= arch]
    if not older:
        raise ValueError(f"NVRTC compiles for {sorted(supported)}, none of which runs on compute capability {arch}")
    return f"-arch=compute_{max(older)}", "ptx" if output == "cubin" else output


# ------------------------------------------------------------------------------------------ compiling

def compile_key(source: str, options, nvrtc: tuple, *, output: str = "cubin", names=(), depends=()) -> str:
    """The content address of an NVRTC compile: SHA-256 of everything that changes its output."""
    return digest("cumath.jit compile", _KEY_VERSION, output, source, tuple(options), tuple(names), tuple(depends),
                  tuple(nvrtc))


def compile_source(source: str, *, cc, output: str = "cubin", options=(), include_dirs=(), names=(), depends=(),
                   name: str = "cumath.cu", what: str = "a kernel", store: ContentStore | None = None,
                   log: logging.Logger = logger) -> Artifact:
    """``source`` compiled by NVRTC for compute capability ``cc`` (90, '9.0', (9, 0)...), through the caches.

    ``options`` follow :data:`DEFAULT_OPTIONS` (``-std=c++17``) and precede the target's ``-arch`` (and ``-dlto``
    for LTO-IR); ``depends``: plain values the output also depends on (e.g. digests of included headers);
    ``name``: the program's file name in NVRTC's messages; ``what``: what it is, for the INFO log."""
    store = STORE if store is None else store
    from .._bindings import nvrtc

    arch, kind = target(cc, output, nvrtc.nvrtcGetSupportedArchs())
    opts = (DEFAULT_OPTIONS + tuple(options) + tuple(f"-I{d}" for d in include_dirs) + (arch,)
            + (("-dlto",) if kind == "ltoir" else ()))
    keyed = DEFAULT_OPTIONS + tuple(options) + (arch,) + (("-dlto",) if kind == "ltoir" else ())
    key = compile_key(source, keyed, nvrtc_version(), output=kind, names=names, depends=depends)

    def make():
        t0 = time.perf_counter()
        data, lowered = _nvrtc_compile(source, name, opts, kind, tuple(names))
        log.info("compiled %s with NVRTC (%s) to %d bytes of %s in %.0f ms", what, " ".join(keyed), len(data),
                 _KIND_NAMES[kind], 1e3 * (time.perf_counter() - t0))
        return data, {"kind": kind, "lowered": lowered, "what": what}

    entry = store.get_or_make(key, make)
    return Artifact(entry.data, entry.meta.get("kind", kind), key, dict(entry.meta.get("lowered") or {}))


_KIND_NAMES = {"cubin": "CUBIN", "ptx": "PTX", "ltoir": "LTO-IR"}


def _nvrtc_compile(source: str, name: str, options: tuple, kind: str, names: tuple) -> tuple[bytes, dict]:
    """One NVRTC program: create, compile, read the output and the lowered names, destroy."""
    from .._bindings import nvrtc

    prog = nvrtc.nvrtcCreateProgram(source, name)
    try:
        for n in names:
            nvrtc.nvrtcAddNameExpression(prog, n)
        nvrtc.nvrtcCompileProgram(prog, options)
        get = {"cubin": nvrtc.nvrtcGetCUBIN, "ptx": nvrtc.nvrtcGetPTX, "ltoir": nvrtc.nvrtcGetLTOIR}[kind]
        return get(prog), {n: nvrtc.nvrtcGetLoweredName(prog, n) for n in names}
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


# -------------------------------------------------------------------------------------------- linking

def _pieces(pieces) -> list[tuple[str, bytes, str]]:
    """(kind, bytes, name) of each piece: plain bytes (LTO-IR), an Artifact, or (kind, bytes[, name])."""
    out = []
    for i, p in enumerate(pieces):
        if isinstance(p, Artifact):
            kind, data, name = p.kind, p.data, f"piece{i}"
        elif isinstance(p, (bytes, bytearray, memoryview)):
            kind, data, name = "ltoir", bytes(p), f"piece{i}"
        else:
            kind, data, *rest = p
            name = rest[0] if rest else f"piece{i}"
        if kind not in _PIECE_KINDS:
            raise ValueError(f"a link piece of kind {kind!r}: the allowed kinds are {list(_PIECE_KINDS)}")
        out.append((kind, bytes(data), name))
    if not out:
        raise ValueError("link() needs at least one piece")
    return out


def link_key(pieces, options, nvjitlink: tuple) -> str:
    """The content address of a link: the SHA-256 of every piece (with its kind), the options, nvJitLink's version."""
    return digest("cumath.jit link", _KEY_VERSION, [(k, hashlib.sha256(d).hexdigest()) for k, d, _ in _pieces(pieces)],
                  tuple(options), tuple(nvjitlink))


def link(pieces, *, cc, options=LINK_OPTIONS, what: str = "a program", store: ContentStore | None = None,
         log: logging.Logger = logger) -> Artifact:
    """``pieces`` linked by nvJitLink into a CUBIN for ``sm_<cc>``, through the caches (``-lto`` when a piece is
    LTO-IR). A piece is LTO-IR bytes, an :class:`Artifact`, or ``(kind, bytes[, name])`` with kind 'ltoir', 'ptx',
    'cubin', 'fatbin', 'object' or 'library'; the name appears in nvJitLink's messages."""
    store = STORE if store is None else store
    items = _pieces(pieces)
    opts = (f"-arch=sm_{_cc_int(cc)}",) + (("-lto",) if any(k == "ltoir" for k, _, _ in items) else ()) + tuple(options)
    key = link_key(items, opts, nvjitlink_version())

    def make():
        t0 = time.perf_counter()
        data = _nvjitlink_link(items, opts)
        log.info("linked %s with nvJitLink (%s, %d pieces) to %d bytes of CUBIN in %.0f ms", what, " ".join(opts),
                 len(items), len(data), 1e3 * (time.perf_counter() - t0))
        return data, {"kind": "cubin", "what": what}

    entry = store.get_or_make(key, make)
    return Artifact(entry.data, "cubin", key, {})


def _nvjitlink_link(items, options: tuple) -> bytes:
    """One nvJitLink handle: create, add every piece, complete, read the CUBIN, destroy."""
    from .._bindings import nvjitlink as nvj

    handle = nvj.nvJitLinkCreate(options)
    try:
        for kind, data, name in items:  # the piece kinds are the enum's names: ltoir -> NVJITLINK_INPUT_LTOIR...
            nvj.nvJitLinkAddData(handle, nvj.nvJitLinkInputType["NVJITLINK_INPUT_" + kind.upper()], data, name)
        nvj.nvJitLinkComplete(handle)
        return nvj.nvJitLinkGetLinkedCubin(handle)
    finally:
        nvj.nvJitLinkDestroy(handle)


# -------------------------------------------------------------------------------------------- headers

def include_roots() -> list[str]:
    """Folders that may hold CUDA headers, in search order: the ``nvidia/cu13/include`` and ``nvidia/*/include``
    folders of ``sys.path`` (the CUDA wheels), ``$CUDA_HOME``/``$CUDA_PATH``, ``/usr/local/cuda``."""
    roots = []
    for base in sys.path:
        if base and os.path.isdir(base):
            roots += sorted(glob.glob(os.path.join(base, "nvidia", "cu13", "include")))
            roots += sorted(glob.glob(os.path.join(base, "nvidia", "*", "include")))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.path.join(os.environ[var], "include"))
    roots.append("/usr/local/cuda/include")
    return [r for r in dict.fromkeys(roots) if os.path.isdir(r)]


def find_include(relative: str, roots=None) -> str | None:
    """The first folder (a root, or its ``cccl/`` sub-folder, where CUDA 13 keeps libcu++) holding the header
    ``relative`` (e.g. 'curand_kernel.h', 'cuda/std/type_traits'), or None."""
    for root in include_roots() if roots is None else roots:
        for folder in (root, os.path.join(root, "cccl")):
            if os.path.isfile(os.path.join(folder, relative)):
                return folder
    return None


def clear_memory_cache() -> None:
    """Forget the artefacts :data:`STORE` holds in memory (the files stay)."""
    STORE.clear_memory()


# ------------------------------------------------------------------------------ compile and link, cached whole

def toolchain_files() -> tuple | None:
    """(file name, size, mtime) of the NVRTC and nvJitLink libraries of the ``nvidia/*/lib`` wheel folders on
    ``sys.path``, found without loading them (loading NVRTC alone takes ~70 ms); None where either is not found
    that way (a toolkit elsewhere, found by the loader at load time)."""
    from .._bindings import _loader

    out = []
    for name in ("nvrtc", "nvJitLink"):
        spec = _loader.LIBRARIES[name]
        found = [p for p in _loader._nvidia_wheel_candidates(spec) if os.path.isfile(p)]
        if not found:
            return None
        st = os.stat(found[0])
        out.append((os.path.basename(found[0]), st.st_size, st.st_mtime_ns))
    return tuple(out)


def compile_and_link(source: str, *, cc, options=(), pieces=(), link_options=LINK_OPTIONS,
                     what: str = "a kernel", store: ContentStore | None = None,
                     log: logging.Logger = logger) -> Artifact:
    """``source`` compiled to LTO-IR by NVRTC and linked with ``pieces`` (LTO-IR of device functions) by nvJitLink
    into a CUBIN for ``cc``, with the CUBIN also kept under a key of the whole (source, options, pieces' SHA-256,
    link options, the toolchain's library files): a later process finds it without loading NVRTC or nvJitLink.
    Where the toolchain's files are not found without loading it, this is :func:`compile_source` then
    :func:`link` (their own caches)."""
    store = STORE if store is None else store
    files = toolchain_files()
    key = None if files is None else digest(
        "cumath.jit compile and link", _KEY_VERSION, source, tuple(options), _cc_int(cc),
        [hashlib.sha256(bytes(p)).hexdigest() for p in pieces], tuple(link_options), files)
    if key is not None:
        hit = store.get(key)
        if hit is not None and hit.meta.get("kind") == "cubin":
            return Artifact(hit.data, "cubin", key, {})
    art = compile_source(source, cc=cc, output="ltoir", options=tuple(options), what=what, store=store, log=log)
    cubin = link([art] + list(pieces), cc=cc, options=link_options, what=what, store=store, log=log)
    if key is None:
        return cubin
    store.put(key, cubin.data, {"kind": "cubin", "what": what})
    return Artifact(cubin.data, "cubin", key, {})
