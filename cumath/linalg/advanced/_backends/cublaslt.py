"""The GPU engine: one cuBLASLt matmul problem (descriptors built once), its heuristics, and the execution call.

Only integer pointers and the pure layouts of ``_traits`` come in; arrays stay with the planner. A planned
variant keeps the argument list of ``cublasLtMatmul`` (``matmul_args``) and writes its slots by the names
below, so the hot path is one list write and one ctypes call.
"""

from __future__ import annotations

import ctypes
import logging
import struct
import threading
import weakref

from ...._bindings import cublaslt as lt
from ...._core._fast import call_words
from ...._core.cuda import set_device
from ....errors import CUBLASLtError
from .._options import CUDA_DATA_TYPES
from .._traits import ORDER_ROW

__all__ = ["LtProblem", "get_handle", "device_info", "scalar_buffer", "matmul_args", "raw_matmul", "check_status",
           "ENGINE", "HANDLE", "DESC", "ALPHA", "A_PTR", "A_DESC", "B_PTR", "B_DESC", "BETA", "C_PTR", "C_DESC",
           "D_PTR", "D_DESC", "ALGO", "WORKSPACE", "WORKSPACE_SIZE", "STREAM"]

logger = logging.getLogger(__name__)

_HANDLES: dict = {}
_LOCK = threading.Lock()
_INFO: dict = {}

A = lt.cublasLtMatmulDescAttributes_t
L = lt.cublasLtMatrixLayoutAttribute_t
P = lt.cublasLtMatmulPreferenceAttributes_t

# The slots of cublasLtMatmul's argument list, in the C function's order:
# cublasLtMatmul(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
#                workspaceSizeInBytes, stream)
(HANDLE, DESC, ALPHA, A_PTR, A_DESC, B_PTR, B_DESC, BETA, C_PTR, C_DESC, D_PTR, D_DESC, ALGO, WORKSPACE,
 WORKSPACE_SIZE, STREAM) = range(16)
N_ARGS = 16

_SCALE_ATTRS = {"a": A.CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, "b": A.CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                "c": A.CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, "d": A.CUBLASLT_MATMUL_DESC_D_SCALE_POINTER}


def get_handle(device_id: int) -> int:
    """The process's cuBLASLt handle of a device (created once; handles are expensive to create)."""
    h = _HANDLES.get(device_id)
    if h is None:
        with _LOCK:
            h = _HANDLES.get(device_id)
            if h is None:
                set_device(device_id)
                h = _HANDLES[device_id] = lt.cublasLtCreate()
    return h


def device_info(device_id: int) -> dict:
    """Compute capability, SM count, total memory and cuBLASLt version of a device (cached)."""
    info = _INFO.get(device_id)
    if info is None:
        from ...._bindings import cudart

        attr = cudart.cudaDeviceAttr
        set_device(device_id)
        major = cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMajor, device_id)
        minor = cudart.cudaDeviceGetAttribute(attr.cudaDevAttrComputeCapabilityMinor, device_id)
        sms = cudart.cudaDeviceGetAttribute(attr.cudaDevAttrMultiProcessorCount, device_id)
        _free, total = cudart.cudaMemGetInfo()
        info = _INFO[device_id] = {"sm": major * 10 + minor, "sm_count": sms, "total_memory": total,
                                   "cublaslt_version": lt.cublasLtGetVersion()}
    return info


def scalar_buffer(dtype: str):
    """A host buffer holding one alpha/beta value of the scale type, and a setter."""
    if dtype == "float16":
        buf = ctypes.c_uint16()

        def put(v):
            buf.value = struct.unpack("<H", struct.pack("<e", float(complex(v).real)))[0]
    elif dtype in ("float32", "float64"):
        buf = ctypes.c_float() if dtype == "float32" else ctypes.c_double()

        def put(v):
            v = complex(v)
            if v.imag:
                raise TypeError(f"alpha/beta {v!r} is complex but the scale type is {dtype}")
            buf.value = v.real
    else:
        buf = (ctypes.c_float * 2)() if dtype == "complex64" else (ctypes.c_double * 2)()

        def put(v):
            v = complex(v)
            buf[0], buf[1] = v.real, v.imag
    return buf, put


def _destroy(descs):
    for fn, h in descs:
        try:
            fn(h)
        except Exception:  # interpreter shutdown, context gone
            pass


class LtProblem:
    """Descriptors of one problem in one formulation: matmul descriptor, A/B/C/D layouts, preference."""

    def __init__(self, form, dt, lt_epilog: int, device_id: int, handle: int, *, batch: int, sm_count_target=0,
                 fast_accumulation=False, bias_dtype=None, bias_batch_stride=None, aux=None, aux_dtype=None,
                 block_scaling=False):
        self.form, self.dt, self.device_id, self.handle = form, dt, device_id, handle
        self.batch = batch
        descs = self._descs = []
        self._finalizer = weakref.finalize(self, _destroy, descs)
        set_device(device_id)
        scale = CUDA_DATA_TYPES[dt.scale]
        self.desc = d = lt.cublasLtMatmulDescCreate(dt.compute, scale)
        descs.append((lt.cublasLtMatmulDescDestroy, d))
        lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_TRANSA, form.a.op)
        lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_TRANSB, form.b.op)
        if lt_epilog != 1:
            lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilog)
        if sm_count_target:
            lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, sm_count_target)
        if fast_accumulation:
            lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1)
        if bias_dtype is not None:
            lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_DATA_TYPES[bias_dtype])
            if bias_batch_stride:
                lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_batch_stride)
        if aux is not None:  # (ld, batch stride) of the auxiliary matrix
            lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux[0])
            if batch > 1:
                lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, aux[1])
            if aux_dtype is not None:
                lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE,
                                                  CUDA_DATA_TYPES[aux_dtype])
        if block_scaling:
            vec32 = lt.cublasLtMatmulMatrixScale_t.CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0
            lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_A_SCALE_MODE, vec32)
            lt.cublasLtMatmulDescSetAttribute(d, A.CUBLASLT_MATMUL_DESC_B_SCALE_MODE, vec32)
        a_t, b_t = (dt.b, dt.a) if form.transposed else (dt.a, dt.b)
        self.adesc = self._layout(form.a, a_t)
        self.bdesc = self._layout(form.b, b_t)
        self.cdesc = self._layout(form.c, dt.c)
        self.ddesc = self.cdesc if (form.d == form.c and dt.c == dt.d) else self._layout(form.d, dt.d)

    def _layout(self, slot, dtype):
        h = lt.cublasLtMatrixLayoutCreate(CUDA_DATA_TYPES[dtype], slot.rows, slot.cols, slot.ld)
        self._descs.append((lt.cublasLtMatrixLayoutDestroy, h))
        if slot.order == ORDER_ROW:
            lt.cublasLtMatrixLayoutSetAttribute(h, L.CUBLASLT_MATRIX_LAYOUT_ORDER, ORDER_ROW)
        if self.batch > 1:
            lt.cublasLtMatrixLayoutSetAttribute(h, L.CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, self.batch)
            lt.cublasLtMatrixLayoutSetAttribute(h, L.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, slot.batch_stride)
        return h

    def set_pointer(self, attr: int, ptr: int) -> None:
        lt.cublasLtMatmulDescSetAttribute(self.desc, attr, ptr)

    def set_bias(self, ptr: int) -> None:
        """The bias input, or the bias-gradient output of BGRAD epilogs (cuBLASLt reads both from one pointer)."""
        lt.cublasLtMatmulDescSetAttribute(self.desc, A.CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr)

    def set_aux(self, ptr: int) -> None:
        """The epilog's auxiliary matrix (ReLU bit-mask or GELU input): output of forward, input of backward."""
        lt.cublasLtMatmulDescSetAttribute(self.desc, A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, ptr)

    def set_amax(self, ptr: int) -> None:
        """Where the result's maximum absolute value goes (FP8 products)."""
        lt.cublasLtMatmulDescSetAttribute(self.desc, A.CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, ptr)

    def set_scale(self, name: str, ptr: int) -> None:
        """The device address of operand ``name``'s quantization scale ('a', 'b', 'c' or 'd')."""
        lt.cublasLtMatmulDescSetAttribute(self.desc, _SCALE_ATTRS[name], ptr)

    def heuristics(self, count: int, *, workspace: int, alignments=(256, 256, 256, 256), reduction_mask=7,
                   max_waves=0.0, impl_mask=0xFFFFFFFFFFFFFFFF):
        """Up to ``count`` algorithms (best estimate first): a list of heuristic result structs."""
        pref = lt.cublasLtMatmulPreferenceCreate()
        try:
            lt.cublasLtMatmulPreferenceSetAttribute(pref, P.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace)
            for attr, value in zip((P.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                    P.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                    P.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                    P.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES), alignments):
                lt.cublasLtMatmulPreferenceSetAttribute(pref, attr, value)
            if reduction_mask != 7:
                lt.cublasLtMatmulPreferenceSetAttribute(pref, P.CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                        int(reduction_mask))
            if max_waves:
                lt.cublasLtMatmulPreferenceSetAttribute(pref, P.CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, float(max_waves))
            if impl_mask != 0xFFFFFFFFFFFFFFFF:
                lt.cublasLtMatmulPreferenceSetAttribute(pref, P.CUBLASLT_MATMUL_PREF_IMPL_MASK, int(impl_mask))
            try:
                results = lt.cublasLtMatmulAlgoGetHeuristic(self.handle, self.desc, self.adesc, self.bdesc,
                                                            self.cdesc, self.ddesc, pref, count)
            except CUBLASLtError as exc:
                if getattr(exc, "name", "") in ("CUBLAS_STATUS_NOT_SUPPORTED", "CUBLAS_STATUS_INVALID_VALUE"):
                    return [], exc
                raise
        finally:
            lt.cublasLtMatmulPreferenceDestroy(pref)
        return [r for r in results if r.state == 0], None

    def check(self, algo):
        """cublasLtMatmulAlgoCheck: the result struct (workspace size) or raises CUBLASLtError."""
        return lt.cublasLtMatmulAlgoCheck(self.handle, self.desc, self.adesc, self.bdesc, self.cdesc, self.ddesc,
                                          algo)

    def free(self) -> None:
        self._finalizer()


RAW_MATMUL = None


def raw_matmul():
    """The caller of cublasLtMatmul on the hot path (one native call; returns a status): the compiled one of
    ``_core/_fast``, or a ctypes function taking the same ints. Every argument is an int (None: NULL), the
    algorithm as the address of its ``cublasLtMatmulAlgo_t`` (whose owner the variant keeps)."""
    global RAW_MATMUL
    if RAW_MATMUL is None:
        RAW_MATMUL = call_words(lt._L.cublasLtMatmul)
    return RAW_MATMUL


def check_status(status: int) -> None:
    """Raise the CUBLASLtError of a nonzero status returned by ``raw_matmul()``."""
    lt.check(status)


def matmul_args(handle: int, problem: LtProblem, alpha_addr: int, beta_addr: int, stream: int) -> list:
    """The argument list of ``cublasLtMatmul`` for ``problem``: operand, algorithm and workspace slots empty."""
    args = [0] * N_ARGS
    args[HANDLE], args[DESC] = handle, problem.desc
    args[ALPHA], args[BETA] = alpha_addr, beta_addr
    args[A_DESC], args[B_DESC], args[C_DESC], args[D_DESC] = problem.adesc, problem.bdesc, problem.cdesc, problem.ddesc
    args[ALGO] = None
    args[STREAM] = stream
    return args


class _Engine:
    """cuBLASLt as an engine of the registry (``_backends/__init__.py``): it plans every variant and runs each one
    that no kernel engine takes, through the variant's own argument list, so it offers no kernel of its own."""

    name = "cublaslt"

    @staticmethod
    def select(product, log):
        return None


ENGINE = _Engine()
