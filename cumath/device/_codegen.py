"""Device code generation through libmathdx, behind a content-addressed cache in memory and on disk.

A :class:`Descriptor` is plain data: the library (``cufftdx``, ``cublasdx``, ``cusolverdx``), its operators as
``(operator enum name, value or tuple of values)`` pairs (values may be enum member names), and the symbol
the device function gets. A :class:`Generator` holds the descriptors of one device-API object (one for an FFT
or a GEMM, two for a Cholesky solver's factorize + solve) and the target compute capability, and answers:

- ``traits(i)``: the traits of descriptor ``i`` (libmathdx asked once, no code generated);
- ``blobs()`` / ``kinds()`` / ``files()``: the generated LTO-IR (and the universal fatbin the TRSM-based
  functions need), as bytes and as files for ``cuda.jit(link=...)``.

Cache keys are SHA-256 digests of everything the result depends on: the descriptors, the compute capability,
libmathdx's version and commit, and NVRTC's version (libmathdx compiles with the NVRTC it finds). Traits and
code live in ``cache_dir("device")`` (:data:`STORE`, a :class:`~cumath._core.disk_cache.ContentStore`, which also
holds the cuRAND shim's NVRTC output); the link files are written next to them (``device/link/<key>-<i>.ltoir``,
:meth:`~cumath._core.disk_cache.ContentStore.export`), so a second process reuses both without generating
anything. The libmathdx call sequences are logged at DEBUG, generation times at INFO.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from .._core import jit
from .._core.disk_cache import ContentStore, digest

__all__ = ["Descriptor", "Generator", "TRAITS", "toolchain", "clear_memory_cache", "STORE"]

logger = logging.getLogger(__name__)

_KEY_VERSION = 1
STORE = ContentStore("device", suffix=".dx")
_lock = threading.RLock()

# Traits asked of each library: (trait enum name, shape): "int", "ints" (3 values), "str", "vtype", "vtypes" (3).
TRAITS = {
    "cufftdx": (
        ("CUFFTDX_TRAIT_VALUE_TYPE", "vtype"), ("CUFFTDX_TRAIT_INPUT_TYPE", "vtype"),
        ("CUFFTDX_TRAIT_OUTPUT_TYPE", "vtype"), ("CUFFTDX_TRAIT_IMPLICIT_TYPE_BATCHING", "int"),
        ("CUFFTDX_TRAIT_ELEMENTS_PER_THREAD", "int"), ("CUFFTDX_TRAIT_STORAGE_SIZE", "int"),
        ("CUFFTDX_TRAIT_STRIDE", "int"), ("CUFFTDX_TRAIT_BLOCK_DIM", "ints"),
        ("CUFFTDX_TRAIT_SHARED_MEMORY_SIZE", "int"), ("CUFFTDX_TRAIT_FFTS_PER_BLOCK", "int"),
        ("CUFFTDX_TRAIT_SYMBOL_NAME", "str"), ("CUFFTDX_TRAIT_INPUT_LENGTH", "int"),
        ("CUFFTDX_TRAIT_OUTPUT_LENGTH", "int"), ("CUFFTDX_TRAIT_INPUT_ELEMENTS_PER_THREAD", "int"),
        ("CUFFTDX_TRAIT_OUTPUT_ELEMENTS_PER_THREAD", "int"), ("CUFFTDX_TRAIT_SUGGESTED_FFTS_PER_BLOCK", "int"),
    ),
    "cublasdx": (
        ("CUBLASDX_TRAIT_VALUE_TYPE", "vtypes"), ("CUBLASDX_TRAIT_SIZE", "ints"),
        ("CUBLASDX_TRAIT_BLOCK_DIM", "ints"),
        ("CUBLASDX_TRAIT_LEADING_DIMENSION", "ints"), ("CUBLASDX_TRAIT_SYMBOL_NAME", "str"),
        ("CUBLASDX_TRAIT_ARRANGEMENT", "ints"), ("CUBLASDX_TRAIT_ALIGNMENT", "ints"),
        ("CUBLASDX_TRAIT_SUGGESTED_LEADING_DIMENSION", "ints"), ("CUBLASDX_TRAIT_SUGGESTED_BLOCK_DIM", "ints"),
        ("CUBLASDX_TRAIT_MAX_THREADS_PER_BLOCK", "int"),
    ),
    "cusolverdx": (
        ("CUSOLVERDX_TRAIT_SYMBOL_NAME", "str"), ("CUSOLVERDX_TRAIT_BLOCK_DIM", "ints"),
        ("CUSOLVERDX_TRAIT_SUGGESTED_BLOCK_DIM", "ints"), ("CUSOLVERDX_TRAIT_SUGGESTED_BATCHES_PER_BLOCK", "int"),
        ("CUSOLVERDX_TRAIT_WORKSPACE_SIZE", "int"),
    ),
}
_FATBIN_LIBRARIES = ("cusolverdx",)  # links its universal fatbin too (cuBLASDx needs one for TRSM only)


@dataclass(frozen=True)
class Descriptor:
    library: str
    operators: tuple  # ((operator enum name, int | enum name | tuple of those), ...)
    symbol: str

    def key_parts(self) -> tuple:
        return (self.library, self.operators, self.symbol)


_toolchain = None


def toolchain() -> tuple:
    """(libmathdx version, libmathdx commit, NVRTC version): what generated code depends on besides its
    descriptors. Loads libmathdx (raises LibraryNotFoundError naming the extra when it is missing)."""
    global _toolchain
    if _toolchain is None:
        from .._bindings import mathdx

        mathdx.load()
        _toolchain = (mathdx.mathdxGetVersionEx(), mathdx.mathdxGetCommit(), jit.nvrtc_version())
    return _toolchain


_MEMOS: list[dict] = []


def memory_cache() -> dict:
    """A module's dict of generated code (or of paths to it) that ``clear_memory_cache()`` empties too."""
    memo: dict = {}
    _MEMOS.append(memo)
    return memo


def clear_memory_cache() -> None:
    """Forget generated code and traits held in memory (the disk cache stays)."""
    STORE.clear_memory()
    for memo in _MEMOS:
        memo.clear()


# ----------------------------------------------------------------------------------------- libmathdx calls

def _value(v):
    from .._bindings import mathdx

    if isinstance(v, str):
        return int(getattr(mathdx, v))
    return int(v)


def _create(desc: Descriptor, cc) -> int:
    """A libmathdx descriptor with the symbol name and every operator set (the caller destroys it)."""
    from .._bindings import mathdx

    lib = desc.library
    handle = getattr(mathdx, lib + "CreateDescriptor")()
    try:
        getattr(mathdx, lib + "SetOptionStr")(handle, mathdx.COMMONDX_OPTION_SYMBOL_NAME, desc.symbol)
        for op_name, value in desc.operators:
            op = getattr(mathdx, op_name)
            if isinstance(value, tuple):
                getattr(mathdx, lib + "SetOperatorInt64s")(handle, op, [_value(v) for v in value])
            else:
                getattr(mathdx, lib + "SetOperatorInt64")(handle, op, _value(value))
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s descriptor %s for sm_%s: %s", lib, desc.symbol, cc, desc.operators)
    except BaseException:
        getattr(mathdx, lib + "DestroyDescriptor")(handle)
        raise
    return handle


def _query(desc: Descriptor, handle: int) -> dict:
    from .._bindings import mathdx

    lib = desc.library
    out = {}
    for name, shape in TRAITS[lib]:
        trait = getattr(mathdx, name)
        try:
            if shape == "int":
                value = getattr(mathdx, lib + "GetTraitInt64")(handle, trait)
            elif shape == "ints":
                value = getattr(mathdx, lib + "GetTraitInt64s")(handle, trait, 3)
            elif shape == "str":
                value = getattr(mathdx, lib + "GetTraitStr")(handle, trait)
            elif shape == "vtype":
                value = mathdx.commondxValueType(mathdx.cufftdxGetTraitCommondxDataType(handle, trait)).name
            else:  # vtypes
                value = [mathdx.commondxValueType(v).name
                         for v in mathdx.cublasdxGetTraitCommondxDataTypes(handle, trait, 3)]
        except Exception as exc:  # a trait that does not apply to this descriptor (thread FFTs have no block)
            logger.debug("%s: trait %s unavailable: %s", desc.symbol, name, exc)
            value = None
        out[name.split("_TRAIT_", 1)[1].lower()] = value
    return out


def _supported(desc: Descriptor, handle: int) -> None:
    from .._bindings import mathdx

    if desc.library == "cufftdx" and not mathdx.cufftdxIsSupported(handle):
        raise ValueError(f"cuFFTDx has no implementation for this FFT ({_describe(desc)}); try another size, "
                         f"elements_per_thread or ffts_per_block")


def _describe(desc: Descriptor) -> str:
    return ", ".join(f"{op.split('_OPERATOR_', 1)[-1].lower()}={v}" for op, v in desc.operators)


def _generate(descs: tuple, cc) -> list[tuple[str, bytes]]:
    """Finalize every descriptor into one code handle: [(kind, blob)] with kind 'ltoir' or 'fatbin'."""
    from .._bindings import mathdx

    lib = descs[0].library
    handles = []
    code = mathdx.commondxCreateCode()
    try:
        for d in descs:
            handles.append(_create(d, cc))
            _supported(d, handles[-1])
        mathdx.commondxSetCodeOptionInt64(code, mathdx.COMMONDX_OPTION_TARGET_SM, cc.sm)
        getattr(mathdx, lib + "FinalizeCodes")(code, handles)
        parts = [("ltoir", blob) for blob in mathdx.commondxGetCodeLTOIRs(code)]
        if lib in _FATBIN_LIBRARIES:
            size = getattr(mathdx, lib + "GetUniversalFATBINSize")(handles[0])
            if size:
                parts.append(("fatbin", getattr(mathdx, lib + "GetUniversalFATBIN")(handles[0])))
        return parts
    finally:
        for h in handles:
            getattr(mathdx, lib + "DestroyDescriptor")(h)
        mathdx.commondxDestroyCode(code)


# ---------------------------------------------------------------------------------------------- generator

class Generator:
    """Traits and code of a group of descriptors for one compute capability, generated once and cached."""

    def __init__(self, descriptors, cc):
        self.descriptors = tuple(descriptors)
        if not self.descriptors or len({d.library for d in self.descriptors}) != 1:
            raise ValueError("a generator takes one or more descriptors of one library")
        self.cc = cc
        self._traits: dict[int, dict] = {}
        self._code: list | None = None
        self._files: list | None = None

    def _key(self, what: str, parts) -> str:
        return digest("cumath.device", _KEY_VERSION, what, parts, tuple(self.cc), toolchain())

    def traits(self, index: int = 0) -> dict:
        t = self._traits.get(index)
        if t is not None:
            return t
        desc = self.descriptors[index]
        key = self._key("traits", desc.key_parts())

        def make():
            from .._bindings import mathdx

            with _lock:
                handle = _create(desc, self.cc)
                try:
                    _supported(desc, handle)
                    return b"", {"traits": _query(desc, handle)}
                finally:
                    getattr(mathdx, desc.library + "DestroyDescriptor")(handle)

        t = self._traits[index] = STORE.get_or_make(key, make).meta["traits"]
        return t

    def code_key(self) -> str:
        return self._key("code", tuple(d.key_parts() for d in self.descriptors))

    def _load(self) -> list:
        if self._code is not None:
            return self._code
        key = self.code_key()

        def make():
            with _lock:
                t0 = time.perf_counter()
                parts = _generate(self.descriptors, self.cc)
                logger.info("generated %s device code %s for sm_%s in %.2f s (%d bytes)", self.descriptors[0].library,
                            ", ".join(d.symbol for d in self.descriptors), self.cc, time.perf_counter() - t0,
                            sum(len(b) for _, b in parts))
            return b"".join(b for _, b in parts), {"parts": [[k, len(b)] for k, b in parts]}

        entry = STORE.get_or_make(key, make)
        parts, offset = [], 0
        for kind, size in entry.meta["parts"]:
            parts.append((kind, entry.data[offset:offset + size]))
            offset += size
        self._code = parts
        return parts

    def blobs(self) -> list[bytes]:
        return [b for _, b in self._load()]

    def kinds(self) -> list[str]:
        return [k for k, _ in self._load()]

    def symbols(self) -> list[str]:
        return [d.symbol for d in self.descriptors]

    def files(self) -> list[str]:
        if self._files is None:
            key = self.code_key()
            self._files = [STORE.export(f"{key[:40]}-{i}.{kind}", blob) for i, (kind, blob) in enumerate(self._load())]
        return self._files
