"""ctypes bindings of cuBLASLt (libcublasLt), 1:1 with the C functions of ``cublasLt.h``.

Enum values, struct layouts and signatures were read from ``cublasLt.h`` and ``cublas_api.h`` of the
``nvidia-cublas`` 13.1.2.11 wheel (CUBLAS_VERSION 130102); ``cudaDataType`` and ``libraryPropertyType`` come from
``library_types.h`` and live in ``cudart``.

How to use (conventions)
------------------------
- Nothing is loaded at import time; the functions of ``TABLE`` are bound on the first call of any wrapper.
- Handles and descriptors (``cublasLtHandle_t``, ``cublasLtMatmulDesc_t``, ``cublasLtMatrixLayout_t``,
  ``cublasLtMatmulPreference_t``, ...) are Python ints; device/host pointers and streams are ints (0 = NULL).
- Every wrapper returns its outputs instead of taking out-pointers and raises ``CUBLASLtError`` (attributes
  ``status`` and ``name``, e.g. ``"CUBLAS_STATUS_NOT_SUPPORTED"``) on a failure status.
- **Attributes are typed by data.** ``*_ATTRIBUTE_TYPES`` tables map every attribute enum member to its C type
  (``c_int32``, ``c_uint32``, ``c_int64``, ``c_uint64``, ``c_uint16``, ``c_int8``, ``c_float``, ``c_void_p``
  for pointers and handles, or ``ArrayOf(c_uint32)`` for the array-valued algo capabilities). So::

      cublasLtMatmulDescSetAttribute(desc, cublasLtMatmulDescAttributes_t.CUBLASLT_MATMUL_DESC_EPILOGUE,
                                     cublasLtEpilogue_t.CUBLASLT_EPILOGUE_RELU_BIAS)
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr)   # int address
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_ROW)
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 32 << 20)
      value = cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA)            # -> int

  The setter packs an int/float (or IntEnum) into the attribute's C type and passes its size; an int that does
  not fit the type raises ``OverflowError`` (write all-ones masks as ``0xFFFFFFFFFFFFFFFF``, not -1). A
  ctypes instance (e.g. ``c_int64(5)``) or ``bytes`` is passed as is, with its own size (escape hatch for an
  attribute newer than this table). Getters return an int / float (``None`` for a NULL pointer), a list of
  ints for ``ArrayOf`` attributes; ``ctype=`` overrides the table. All enum members are also module
  constants (``CUBLASLT_MATMUL_DESC_EPILOGUE``, ``CUBLAS_OP_T``, ...).
- ``cublasLtMatmulAlgo_t`` (64 bytes) and ``cublasLtMatmulHeuristicResult_t`` (96 bytes) are ctypes
  Structures. ``cublasLtMatmulAlgoGetHeuristic(...)`` returns a list of result structs (only the
  ``returnAlgoCount`` written ones; check ``r.state == 0``), ``cublasLtMatmulAlgoCheck(...)`` one result,
  ``cublasLtMatmulAlgoInit(...)`` a new algo struct. ``bytes(algo)`` / ``cublasLtMatmulAlgo_t.from_bytes(b)``
  serialise an algo; ``cublasLtMatmulAlgoConfigSetAttribute(algo, attr, value)`` changes the struct in place.
- ``cublasLtMatmul(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
  workspaceSize, stream)``: ``alpha``/``beta`` are int addresses (host memory in the default pointer mode,
  e.g. ``ctypes.addressof(c_float(1.5))``, kept alive by the caller), ``algo`` a ``cublasLtMatmulAlgo_t`` or
  None (NULL: the library runs its own heuristic).
"""

from __future__ import annotations

import ctypes
from ctypes import (
    POINTER,
    byref,
    c_char_p,
    c_float,
    c_int,
    c_int8,
    c_int32,
    c_int64,
    c_size_t,
    c_uint,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
    sizeof,
)

from ..errors import CUBLASLtError
from ._loader import LazyFunctions
from .cudart import cudaDataType, cudaDataType_t, libraryPropertyType

__all__ = [
    "CUBLAS_VERSION", "TABLE", "ENUMS", "ArrayOf", "check", "pack_attribute", "cudaDataType", "cudaDataType_t",
    "libraryPropertyType", "cublasLtMatmulAlgo_t", "cublasLtMatmulHeuristicResult_t", "cublasLtLoggerCallback_t",
    "MATRIX_LAYOUT_ATTRIBUTE_TYPES", "MATMUL_DESC_ATTRIBUTE_TYPES", "MATRIX_TRANSFORM_DESC_ATTRIBUTE_TYPES",
    "EMULATION_DESC_ATTRIBUTE_TYPES", "MATMUL_PREFERENCE_ATTRIBUTE_TYPES", "MATMUL_ALGO_CAP_ATTRIBUTE_TYPES",
    "MATMUL_ALGO_CONFIG_ATTRIBUTE_TYPES",
]

# the enums (their members as module constants too), attribute type tables and structs
from .cublaslt_types import *  # noqa: E402,F401,F403
from .cublaslt_types import _CTYPES, ArrayOf, CUBLAS_VERSION, ENUMS, cublasLtMatmulAlgo_t, \
    cublasLtMatmulHeuristicResult_t  # noqa: E402,F401

# -------------------------------------------------------------------------------------------- table

_p_ptr = POINTER(c_void_p)
_p_int = POINTER(c_int)
_p_size = POINTER(c_size_t)
_p_algo = POINTER(cublasLtMatmulAlgo_t)
_p_result = POINTER(cublasLtMatmulHeuristicResult_t)
_vp = c_void_p
_set = [_vp, c_int, _vp, c_size_t]  # (descriptor, attribute, const void *buf, size_t sizeInBytes)
_get = [_vp, c_int, _vp, c_size_t, _p_size]  # (..., void *buf, size_t sizeInBytes, size_t *sizeWritten)

TABLE = {
    "cublasLtCreate": (c_int, [_p_ptr]),
    "cublasLtDestroy": (c_int, [_vp]),
    "cublasLtGetStatusName": (c_char_p, [c_int]),
    "cublasLtGetStatusString": (c_char_p, [c_int]),
    "cublasLtGetVersion": (c_size_t, []),
    "cublasLtGetCudartVersion": (c_size_t, []),
    "cublasLtGetProperty": (c_int, [c_int, _p_int]),
    "cublasLtHeuristicsCacheGetCapacity": (c_int, [_p_size]),
    "cublasLtHeuristicsCacheSetCapacity": (c_int, [c_size_t]),
    "cublasLtDisableCpuInstructionsSetMask": (c_uint, [c_uint]),
    "cublasLtMatmul": (
        c_int,
        [_vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _p_algo, _vp, c_size_t, _vp],
    ),
    "cublasLtMatrixTransform": (c_int, [_vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp]),
    "cublasLtMatrixLayoutCreate": (c_int, [_p_ptr, c_int, c_uint64, c_uint64, c_int64]),
    "cublasLtMatrixLayoutDestroy": (c_int, [_vp]),
    "cublasLtMatrixLayoutSetAttribute": (c_int, _set),
    "cublasLtMatrixLayoutGetAttribute": (c_int, _get),
    "cublasLtMatmulDescCreate": (c_int, [_p_ptr, c_int, c_int]),
    "cublasLtMatmulDescDestroy": (c_int, [_vp]),
    "cublasLtMatmulDescSetAttribute": (c_int, _set),
    "cublasLtMatmulDescGetAttribute": (c_int, _get),
    "cublasLtMatrixTransformDescCreate": (c_int, [_p_ptr, c_int]),
    "cublasLtMatrixTransformDescDestroy": (c_int, [_vp]),
    "cublasLtMatrixTransformDescSetAttribute": (c_int, _set),
    "cublasLtMatrixTransformDescGetAttribute": (c_int, _get),
    "cublasLtEmulationDescCreate": (c_int, [_p_ptr]),
    "cublasLtEmulationDescDestroy": (c_int, [_vp]),
    "cublasLtEmulationDescSetAttribute": (c_int, _set),
    "cublasLtEmulationDescGetAttribute": (c_int, _get),
    "cublasLtMatmulPreferenceCreate": (c_int, [_p_ptr]),
    "cublasLtMatmulPreferenceDestroy": (c_int, [_vp]),
    "cublasLtMatmulPreferenceSetAttribute": (c_int, _set),
    "cublasLtMatmulPreferenceGetAttribute": (c_int, _get),
    "cublasLtMatmulAlgoGetHeuristic": (c_int, [_vp, _vp, _vp, _vp, _vp, _vp, _vp, c_int, _p_result, _p_int]),
    "cublasLtMatmulAlgoGetIds": (c_int, [_vp, c_int, c_int, c_int, c_int, c_int, c_int, c_int, _p_int, _p_int]),
    "cublasLtMatmulAlgoInit": (c_int, [_vp, c_int, c_int, c_int, c_int, c_int, c_int, c_int, _p_algo]),
    "cublasLtMatmulAlgoCheck": (c_int, [_vp, _vp, _vp, _vp, _vp, _vp, _p_algo, _p_result]),
    "cublasLtMatmulAlgoCapGetAttribute": (c_int, [_p_algo, c_int, _vp, c_size_t, _p_size]),
    "cublasLtMatmulAlgoConfigSetAttribute": (c_int, [_p_algo, c_int, _vp, c_size_t]),
    "cublasLtMatmulAlgoConfigGetAttribute": (c_int, [_p_algo, c_int, _vp, c_size_t, _p_size]),
    "cublasLtLoggerSetCallback": (c_int, [cublasLtLoggerCallback_t]),
    "cublasLtLoggerSetFile": (c_int, [_vp]),
    "cublasLtLoggerOpenFile": (c_int, [c_char_p]),
    "cublasLtLoggerSetLevel": (c_int, [c_int]),
    "cublasLtLoggerSetMask": (c_int, [c_int]),
    "cublasLtLoggerForceDisable": (c_int, []),
}

_L = LazyFunctions("cublasLt", TABLE)
_STATUS_NAMES = {int(m): m.name for m in cublasStatus_t}


def check(status: int, detail: str | None = None) -> None:
    """Raise ``CUBLASLtError(status, NAME, detail)`` for a non-zero status.

    The name comes from ``cublasLtGetStatusName`` (and the detail, when none is given, from
    ``cublasLtGetStatusString``) where the library can be asked; else from ``cublasStatus_t``.
    """
    if status == 0:
        return
    name = _STATUS_NAMES.get(int(status))
    try:
        raw = _L.cublasLtGetStatusName(status)
        if raw:
            name = raw.decode(errors="replace")
        if detail is None:
            raw = _L.cublasLtGetStatusString(status)
            if raw:
                detail = raw.decode(errors="replace")
    except Exception:  # library not loadable or too old: the enum name is enough
        pass
    raise CUBLASLtError(status, name, detail)


# ----------------------------------------------------------------------------- attribute value packing

_INT_RANGES = {
    c_int8: (-(1 << 7), 1 << 7), c_uint16: (0, 1 << 16), c_int32: (-(1 << 31), 1 << 31), c_uint32: (0, 1 << 32),
    c_int64: (-(1 << 63), 1 << 63), c_uint64: (0, 1 << 64),
}


def _attr_type(types: dict, attr: int, what: str, ctype=None):
    if ctype is not None:
        return ctype
    try:
        return types[attr]
    except KeyError:
        raise ValueError(
            f"unknown {what} attribute {attr!r}; known: {', '.join(m.name for m in types)} "
            f"(pass a ctypes instance as the value, or ctype=, for an attribute newer than this binding)"
        ) from None


def pack_attribute(types: dict, attr: int, value, what: str = "cuBLASLt"):
    """``(buffer, size)`` holding ``value`` as the C type of ``attr`` in ``types`` (one of the tables here)."""
    if isinstance(value, ctypes._SimpleCData) or isinstance(value, (ctypes.Structure, ctypes.Array)):
        return value, sizeof(value)
    if isinstance(value, (bytes, bytearray)):
        buf = ctypes.create_string_buffer(bytes(value), len(value))
        return buf, len(value)
    t = _attr_type(types, attr, what)
    if isinstance(t, ArrayOf):
        values = list(value)
        buf = (t.ctype * len(values))(*values)
        return buf, sizeof(buf)
    if t is c_void_p:
        if value is None:
            value = 0
        elif not isinstance(value, int) or value < 0:
            raise TypeError(f"{_name_of(attr)} takes a pointer as a non-negative int, got {value!r}")
        return c_void_p(value), sizeof(c_void_p)
    if t is c_float:
        return c_float(value), 4
    value = int(value)  # IntEnum, bool, numpy integers
    lo, hi = _INT_RANGES[t]
    if not lo <= value < hi:
        raise OverflowError(f"{_name_of(attr)} = {value} does not fit its C type {t.__name__} [{lo}, {hi})")
    return t(value), sizeof(t)


def _name_of(attr) -> str:
    return getattr(attr, "name", None) or f"attribute {int(attr)}"


def _getter(fn, handle, types, attr, ctype, what):
    t = _attr_type(types, attr, what, ctype)
    written = c_size_t()
    if isinstance(t, ArrayOf):
        s = fn(handle, attr, None, 0, byref(written))  # sizeInBytes = 0: the size needed
        if s:
            check(s, f"{_name_of(attr)} (size query)")
        n = written.value // sizeof(t.ctype)
        buf = (t.ctype * max(n, 1))()
        s = fn(handle, attr, buf, sizeof(t.ctype) * n, byref(written))
        if s:
            check(s, _name_of(attr))
        return [int(v) for v in buf[: written.value // sizeof(t.ctype)]]
    v = t()
    s = fn(handle, attr, byref(v), sizeof(v), byref(written))
    if s:
        check(s, _name_of(attr))
    return v.value


# ------------------------------------------------------------------------------------------ context


def cublasLtCreate() -> int:
    h = c_void_p()
    s = _L.cublasLtCreate(byref(h))
    if s:
        check(s)
    return h.value or 0


def cublasLtDestroy(lightHandle: int) -> None:
    s = _L.cublasLtDestroy(lightHandle)
    if s:
        check(s)


def cublasLtGetStatusName(status: int) -> str:
    return _L.cublasLtGetStatusName(status).decode(errors="replace")


def cublasLtGetStatusString(status: int) -> str:
    return _L.cublasLtGetStatusString(status).decode(errors="replace")


def cublasLtGetVersion() -> int:
    """CUBLAS_VERSION of the loaded library (major * 10000 + minor * 100 + patch, e.g. 130102)."""
    return _L.cublasLtGetVersion()


def cublasLtGetCudartVersion() -> int:
    """CUDART_VERSION the loaded library was built with (e.g. 13000)."""
    return _L.cublasLtGetCudartVersion()


def cublasLtGetProperty(type: int) -> int:
    """A libraryPropertyType value (MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL) of the loaded library."""
    v = c_int()
    s = _L.cublasLtGetProperty(type, byref(v))
    if s:
        check(s)
    return v.value


def cublasLtHeuristicsCacheGetCapacity() -> int:
    v = c_size_t()
    s = _L.cublasLtHeuristicsCacheGetCapacity(byref(v))
    if s:
        check(s)
    return v.value


def cublasLtHeuristicsCacheSetCapacity(capacity: int) -> None:
    s = _L.cublasLtHeuristicsCacheSetCapacity(capacity)
    if s:
        check(s)


def cublasLtDisableCpuInstructionsSetMask(mask: int) -> int:
    """Restrict the CPU ISA the library uses (0x1: no AVX512); returns the previous mask."""
    return _L.cublasLtDisableCpuInstructionsSetMask(mask)


# ---------------------------------------------------------------------------------------- execution


def cublasLtMatmul(lightHandle: int, computeDesc: int, alpha: int, A: int, Adesc: int, B: int, Bdesc: int,
                   beta: int, C: int, Cdesc: int, D: int, Ddesc: int, algo, workspace: int,
                   workspaceSizeInBytes: int, stream: int) -> None:
    """D = epilogue(alpha * op(A) @ op(B) + beta * C). ``alpha``/``beta``: int addresses; ``algo``: struct or None."""
    s = _L.cublasLtMatmul(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                          workspace, workspaceSizeInBytes, stream)
    if s:
        check(s)


def cublasLtMatrixTransform(lightHandle: int, transformDesc: int, alpha: int, A: int, Adesc: int, beta: int,
                            B: int, Bdesc: int, C: int, Cdesc: int, stream: int) -> None:
    """C = alpha * op(A) + beta * op(B) (layout conversion); ``alpha``/``beta``: int addresses."""
    s = _L.cublasLtMatrixTransform(lightHandle, transformDesc, alpha, A, Adesc, beta, B, Bdesc, C, Cdesc, stream)
    if s:
        check(s)


# ------------------------------------------------------------------------------------- descriptors


def cublasLtMatrixLayoutCreate(type: int, rows: int, cols: int, ld: int) -> int:
    """A layout descriptor for a ``rows x cols`` matrix of cudaDataType ``type`` (column-major by default)."""
    h = c_void_p()
    s = _L.cublasLtMatrixLayoutCreate(byref(h), type, rows, cols, ld)
    if s:
        check(s)
    return h.value or 0


def cublasLtMatrixLayoutDestroy(matLayout: int) -> None:
    s = _L.cublasLtMatrixLayoutDestroy(matLayout)
    if s:
        check(s)


def cublasLtMatrixLayoutSetAttribute(matLayout: int, attr: int, value) -> None:
    buf, size = pack_attribute(MATRIX_LAYOUT_ATTRIBUTE_TYPES, attr, value, "matrix layout")
    s = _L.cublasLtMatrixLayoutSetAttribute(matLayout, attr, byref(buf), size)
    if s:
        check(s, _name_of(attr))


def cublasLtMatrixLayoutGetAttribute(matLayout: int, attr: int, ctype=None):
    return _getter(_L.cublasLtMatrixLayoutGetAttribute, matLayout, MATRIX_LAYOUT_ATTRIBUTE_TYPES, attr, ctype,
                   "matrix layout")


def cublasLtMatmulDescCreate(computeType: int, scaleType: int) -> int:
    """A matmul descriptor for a cublasComputeType_t and the cudaDataType of alpha and beta."""
    h = c_void_p()
    s = _L.cublasLtMatmulDescCreate(byref(h), computeType, scaleType)
    if s:
        check(s)
    return h.value or 0


def cublasLtMatmulDescDestroy(matmulDesc: int) -> None:
    s = _L.cublasLtMatmulDescDestroy(matmulDesc)
    if s:
        check(s)


def cublasLtMatmulDescSetAttribute(matmulDesc: int, attr: int, value) -> None:
    buf, size = pack_attribute(MATMUL_DESC_ATTRIBUTE_TYPES, attr, value, "matmul descriptor")
    s = _L.cublasLtMatmulDescSetAttribute(matmulDesc, attr, byref(buf), size)
    if s:
        check(s, _name_of(attr))


def cublasLtMatmulDescGetAttribute(matmulDesc: int, attr: int, ctype=None):
    return _getter(_L.cublasLtMatmulDescGetAttribute, matmulDesc, MATMUL_DESC_ATTRIBUTE_TYPES, attr, ctype,
                   "matmul descriptor")


def cublasLtMatrixTransformDescCreate(scaleType: int) -> int:
    h = c_void_p()
    s = _L.cublasLtMatrixTransformDescCreate(byref(h), scaleType)
    if s:
        check(s)
    return h.value or 0


def cublasLtMatrixTransformDescDestroy(transformDesc: int) -> None:
    s = _L.cublasLtMatrixTransformDescDestroy(transformDesc)
    if s:
        check(s)


def cublasLtMatrixTransformDescSetAttribute(transformDesc: int, attr: int, value) -> None:
    buf, size = pack_attribute(MATRIX_TRANSFORM_DESC_ATTRIBUTE_TYPES, attr, value, "matrix transform descriptor")
    s = _L.cublasLtMatrixTransformDescSetAttribute(transformDesc, attr, byref(buf), size)
    if s:
        check(s, _name_of(attr))


def cublasLtMatrixTransformDescGetAttribute(transformDesc: int, attr: int, ctype=None):
    return _getter(_L.cublasLtMatrixTransformDescGetAttribute, transformDesc, MATRIX_TRANSFORM_DESC_ATTRIBUTE_TYPES,
                   attr, ctype, "matrix transform descriptor")


def cublasLtEmulationDescCreate() -> int:
    h = c_void_p()
    s = _L.cublasLtEmulationDescCreate(byref(h))
    if s:
        check(s)
    return h.value or 0


def cublasLtEmulationDescDestroy(emulationDesc: int) -> None:
    s = _L.cublasLtEmulationDescDestroy(emulationDesc)
    if s:
        check(s)


def cublasLtEmulationDescSetAttribute(emulationDesc: int, attr: int, value) -> None:
    buf, size = pack_attribute(EMULATION_DESC_ATTRIBUTE_TYPES, attr, value, "emulation descriptor")
    s = _L.cublasLtEmulationDescSetAttribute(emulationDesc, attr, byref(buf), size)
    if s:
        check(s, _name_of(attr))


def cublasLtEmulationDescGetAttribute(emulationDesc: int, attr: int, ctype=None):
    return _getter(_L.cublasLtEmulationDescGetAttribute, emulationDesc, EMULATION_DESC_ATTRIBUTE_TYPES, attr, ctype,
                   "emulation descriptor")


def cublasLtMatmulPreferenceCreate() -> int:
    h = c_void_p()
    s = _L.cublasLtMatmulPreferenceCreate(byref(h))
    if s:
        check(s)
    return h.value or 0


def cublasLtMatmulPreferenceDestroy(pref: int) -> None:
    s = _L.cublasLtMatmulPreferenceDestroy(pref)
    if s:
        check(s)


def cublasLtMatmulPreferenceSetAttribute(pref: int, attr: int, value) -> None:
    buf, size = pack_attribute(MATMUL_PREFERENCE_ATTRIBUTE_TYPES, attr, value, "matmul preference")
    s = _L.cublasLtMatmulPreferenceSetAttribute(pref, attr, byref(buf), size)
    if s:
        check(s, _name_of(attr))


def cublasLtMatmulPreferenceGetAttribute(pref: int, attr: int, ctype=None):
    return _getter(_L.cublasLtMatmulPreferenceGetAttribute, pref, MATMUL_PREFERENCE_ATTRIBUTE_TYPES, attr, ctype,
                   "matmul preference")


# -------------------------------------------------------------------------------------- algorithms


def cublasLtMatmulAlgoGetHeuristic(lightHandle: int, operationDesc: int, Adesc: int, Bdesc: int, Cdesc: int,
                                   Ddesc: int, preference: int, requestedAlgoCount: int
                                   ) -> list[cublasLtMatmulHeuristicResult_t]:
    """Up to ``requestedAlgoCount`` results, best (lowest estimated time) first; check each ``.state``."""
    if requestedAlgoCount <= 0:
        raise ValueError(f"requestedAlgoCount must be positive, got {requestedAlgoCount}")
    results = (cublasLtMatmulHeuristicResult_t * requestedAlgoCount)()
    n = c_int()
    s = _L.cublasLtMatmulAlgoGetHeuristic(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference,
                                          requestedAlgoCount, results, byref(n))
    if s:
        check(s)
    return list(results[: n.value])


def cublasLtMatmulAlgoGetIds(lightHandle: int, computeType: int, scaleType: int, Atype: int, Btype: int,
                             Ctype: int, Dtype: int, requestedAlgoCount: int = 256) -> list[int]:
    """The algorithm ids that may run for these types (at most ``requestedAlgoCount``)."""
    if requestedAlgoCount <= 0:
        raise ValueError(f"requestedAlgoCount must be positive, got {requestedAlgoCount}")
    ids = (c_int * requestedAlgoCount)()
    n = c_int()
    s = _L.cublasLtMatmulAlgoGetIds(lightHandle, computeType, scaleType, Atype, Btype, Ctype, Dtype,
                                    requestedAlgoCount, ids, byref(n))
    if s:
        check(s)
    return list(ids[: n.value])


def cublasLtMatmulAlgoInit(lightHandle: int, computeType: int, scaleType: int, Atype: int, Btype: int,
                           Ctype: int, Dtype: int, algoId: int) -> cublasLtMatmulAlgo_t:
    """A new algo struct for ``algoId``, its config attributes at their defaults."""
    algo = cublasLtMatmulAlgo_t()
    s = _L.cublasLtMatmulAlgoInit(lightHandle, computeType, scaleType, Atype, Btype, Ctype, Dtype, algoId,
                                  byref(algo))
    if s:
        check(s)
    return algo


def cublasLtMatmulAlgoCheck(lightHandle: int, operationDesc: int, Adesc: int, Bdesc: int, Cdesc: int, Ddesc: int,
                            algo: cublasLtMatmulAlgo_t) -> cublasLtMatmulHeuristicResult_t:
    """Check ``algo`` against the problem; the result carries workspaceSize and wavesCount (its algo is unset)."""
    result = cublasLtMatmulHeuristicResult_t()
    s = _L.cublasLtMatmulAlgoCheck(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, byref(algo),
                                   byref(result))
    if s:
        check(s)
    return result


def cublasLtMatmulAlgoCapGetAttribute(algo: cublasLtMatmulAlgo_t, attr: int, ctype=None):
    """A capability of an initialised algo: an int, or a list of ints for TILE_IDS / STAGES_IDS."""
    return _getter(_L.cublasLtMatmulAlgoCapGetAttribute, byref(algo), MATMUL_ALGO_CAP_ATTRIBUTE_TYPES, attr, ctype,
                   "algo capability")


def cublasLtMatmulAlgoConfigSetAttribute(algo: cublasLtMatmulAlgo_t, attr: int, value) -> None:
    """Set a config attribute of ``algo`` in place (the struct is changed)."""
    buf, size = pack_attribute(MATMUL_ALGO_CONFIG_ATTRIBUTE_TYPES, attr, value, "algo config")
    s = _L.cublasLtMatmulAlgoConfigSetAttribute(byref(algo), attr, byref(buf), size)
    if s:
        check(s, _name_of(attr))


def cublasLtMatmulAlgoConfigGetAttribute(algo: cublasLtMatmulAlgo_t, attr: int, ctype=None):
    return _getter(_L.cublasLtMatmulAlgoConfigGetAttribute, byref(algo), MATMUL_ALGO_CONFIG_ATTRIBUTE_TYPES, attr,
                   ctype, "algo config")


# ------------------------------------------------------------------------------------------ logging


def cublasLtLoggerSetCallback(callback) -> None:
    """``callback`` is a ``cublasLtLoggerCallback_t`` (or None); the caller keeps it alive while it is set."""
    s = _L.cublasLtLoggerSetCallback(callback)
    if s:
        check(s)


def cublasLtLoggerSetFile(file: int) -> None:
    """``file`` is a C ``FILE *`` as an int."""
    s = _L.cublasLtLoggerSetFile(file)
    if s:
        check(s)


def cublasLtLoggerOpenFile(logFile: str | bytes) -> None:
    if isinstance(logFile, str):
        logFile = logFile.encode()
    s = _L.cublasLtLoggerOpenFile(logFile)
    if s:
        check(s)


def cublasLtLoggerSetLevel(level: int) -> None:
    s = _L.cublasLtLoggerSetLevel(level)
    if s:
        check(s)


def cublasLtLoggerSetMask(mask: int) -> None:
    s = _L.cublasLtLoggerSetMask(mask)
    if s:
        check(s)


def cublasLtLoggerForceDisable() -> None:
    s = _L.cublasLtLoggerForceDisable()
    if s:
        check(s)


__all__ += [e.__name__ for e in ENUMS] + [name for name in TABLE if name in globals()]
