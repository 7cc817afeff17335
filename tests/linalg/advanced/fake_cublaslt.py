"""A CPU stand-in for cuBLASLt (descriptors, heuristics and cublasLtMatmul computed with NumPy on host memory),
so the planner's layouts, transposes, leading dimensions, batch strides, pointer plumbing and staging can be
checked end to end without a GPU. It follows cublasLt.h's definitions; it is no model of cuBLASLt's kernels.

``install(monkeypatch)`` patches the binding and the CUDA helpers the planner uses; operands are NumPy arrays
presented as GPU operands (``device_operand(x)``) or plain NumPy arrays (the host path, staged through fake
device buffers that are host memory).
"""

from __future__ import annotations

import ctypes
import itertools
import math

import numpy as np
import pytest

from cumath._bindings import cublaslt as lt
from cumath._core.frameworks.numpy import from_pointer
from cumath._core.operand import Operand, wrap_operand
from cumath.memory import MemoryPointer

_TYPES = {0: "float32", 1: "float64", 2: "float16", 4: "complex64", 5: "complex128", 8: "uint8", 14: "bfloat16"}
_SQ = math.sqrt(2 / math.pi)
_ids = itertools.count(1000)
DESCS: dict = {}
LAYOUTS: dict = {}
CALLS: list = []
_keep: list = []


class FakeAllocator:
    def memalloc(self, size):
        buf = np.zeros(max(size, 1) + 256, np.uint8)
        ptr = buf.ctypes.data
        ptr += (-ptr) % 256
        _keep.append(buf)
        return MemoryPointer(ptr, size, None)


def device_operand(x) -> Operand:
    """A NumPy array presented as an operand on GPU 0."""
    op = wrap_operand(x)
    return Operand(x, op.ptr, op.shape, op.strides, op.dtype, 0, "numpy", op.readonly)


class _Result:
    def __init__(self):
        self.algo = lt.cublasLtMatmulAlgo_t()
        self.workspaceSize = 0
        self.state = 0
        self.wavesCount = 1.0


class FakeAlgorithm:
    def __init__(self, result):
        self.algo = lt.cublasLtMatmulAlgo_t()
        self.workspace_size = 0
        self.measured_time = None
        self.algorithm_id = 0


def _create_desc(compute, scale):
    h = next(_ids)
    DESCS[h] = {"compute": compute, "scale": scale, lt.CUBLASLT_MATMUL_DESC_TRANSA: 0,
                lt.CUBLASLT_MATMUL_DESC_TRANSB: 0, lt.CUBLASLT_MATMUL_DESC_EPILOGUE: 1}
    return h


def _set_desc(h, attr, value):
    DESCS[h][attr] = int(value)


def _create_layout(dtype, rows, cols, ld):
    h = next(_ids)
    LAYOUTS[h] = {"type": dtype, "rows": rows, "cols": cols, "ld": ld, "order": 0, "batch": 1, "bstride": 0}
    if ld < (rows if True else cols):
        pass
    return h


_LAYOUT_ATTR = {lt.CUBLASLT_MATRIX_LAYOUT_ORDER: "order", lt.CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: "batch",
                lt.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: "bstride"}


def _set_layout(h, attr, value):
    LAYOUTS[h][_LAYOUT_ATTR[attr]] = int(value)


def _heuristics(handle, desc, a, b, c, d, pref, count):
    for h in (a, b, c, d):
        L = LAYOUTS[h]
        lead = L["rows"] if L["order"] == 0 else L["cols"]
        assert L["ld"] >= max(1, lead), f"ld {L['ld']} < {lead} in {L}"
    return [_Result()]


def _view(ptr, L):
    dtype = _TYPES[L["type"]]
    if L["order"] == 0:
        strides = (L["bstride"], 1, L["ld"])
    else:
        strides = (L["bstride"], L["ld"], 1)
    if dtype == "bfloat16":
        raise NotImplementedError
    return from_pointer(ptr, (L["batch"], L["rows"], L["cols"]), strides, dtype)


def _scalar(addr, scale):
    t = _TYPES[scale]
    if t == "float32":
        return ctypes.c_float.from_address(addr).value
    if t == "float64":
        return ctypes.c_double.from_address(addr).value
    if t == "float16":
        return float(np.frombuffer(ctypes.string_at(addr, 2), np.float16)[0])
    if t == "complex64":
        return complex(*(ctypes.c_float * 2).from_address(addr))
    return complex(*(ctypes.c_double * 2).from_address(addr))


def _op(x, op):
    x = np.swapaxes(x, -1, -2) if op else x
    return x.conj() if op == 2 else x


def _matmul(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, ws, ws_size, stream):
    Dd = DESCS[desc]
    CALLS.append(dict(Dd))
    La, Lb, Lc, Ld = LAYOUTS[Adesc], LAYOUTS[Bdesc], LAYOUTS[Cdesc], LAYOUTS[Ddesc]
    al, be = _scalar(alpha, Dd["scale"]), _scalar(beta, Dd["scale"])
    a = _op(_view(A, La).astype(np.complex128), Dd[lt.CUBLASLT_MATMUL_DESC_TRANSA])
    b = _op(_view(B, Lb).astype(np.complex128), Dd[lt.CUBLASLT_MATMUL_DESC_TRANSB])
    x = al * (a @ b)
    if be != 0:
        x = x + be * _view(C, Lc)
    ep = Dd[lt.CUBLASLT_MATMUL_DESC_EPILOGUE]
    m, n, batch = x.shape[1], x.shape[2], x.shape[0]
    dt = _TYPES[Ld["type"]]
    bias_ptr = Dd.get(lt.CUBLASLT_MATMUL_DESC_BIAS_POINTER, 0)
    bstride = Dd.get(lt.CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 0)
    aux_ptr = Dd.get(lt.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 0)
    aux_ld = Dd.get(lt.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 0)
    aux_bs = Dd.get(lt.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 0)
    row_order = Ld["order"] == 1
    if ep & 4:  # bias over the rows of D
        bias = from_pointer(bias_ptr, (batch, m), (bstride, 1), dt)
        x = x + bias[:, :, None]
    if ep in (130, 134, 160, 164):  # aux outputs (column-major over D's rows)
        assert not row_order
        if ep in (130, 134):
            bits = np.zeros((batch, n, aux_ld // 8), np.uint8)
            mask = np.zeros((batch, n, aux_ld), bool)
            mask[:, :, :m] = np.swapaxes(x.real > 0, 1, 2)
            bits[:] = np.packbits(mask, axis=-1, bitorder="little")
            out = from_pointer(aux_ptr, (batch, n, aux_ld // 8), (aux_bs // 8, aux_ld // 8, 1), "uint8")
            out[...] = bits
        else:
            out = from_pointer(aux_ptr, (batch, m, n), (aux_bs, 1, aux_ld), dt)
            out[...] = x.real
    if ep in (2, 6, 130, 134):
        x = np.maximum(x.real, 0)
    elif ep in (32, 36, 160, 164):
        x = 0.5 * x.real * (1 + np.tanh(_SQ * (x.real + 0.044715 * x.real ** 3)))
    elif ep in (136, 152):
        raw = from_pointer(aux_ptr, (batch, n, aux_ld // 8), (aux_bs // 8, aux_ld // 8, 1), "uint8")
        mask = np.unpackbits(raw, axis=-1, bitorder="little")[:, :, :m]
        x = x * np.swapaxes(mask, 1, 2)
    elif ep in (192, 208):
        g = from_pointer(aux_ptr, (batch, m, n), (aux_bs, 1, aux_ld), dt).astype(np.float64)
        u = _SQ * (g + 0.044715 * g ** 3)
        t = np.tanh(u)
        x = x * (0.5 * (1 + t) + 0.5 * g * (1 - t * t) * _SQ * (1 + 3 * 0.044715 * g * g))
    if ep in (152, 208):
        grad = from_pointer(bias_ptr, (batch, m), (bstride, 1), dt)
        grad[...] = x.real.sum(axis=2)
    if ep == 256:
        grad = from_pointer(bias_ptr, (batch, m), (bstride, 1), dt)
        grad[...] = a.real.sum(axis=2)
    if ep == 512:
        grad = from_pointer(bias_ptr, (batch, n), (bstride, 1), dt)
        grad[...] = b.real.sum(axis=1)
    out = _view(D, Ld)
    out[...] = x if np.iscomplexobj(out) else x.real
    return 0


def install(monkeypatch):
    """Patch the binding and the CUDA helpers the planner calls."""
    import cumath._core.cuda as cuda
    import cumath.linalg.advanced._algorithms as algorithms
    import cumath.linalg.advanced._backends.cublaslt as backend
    import cumath.linalg.advanced._planner as planner
    import cumath.linalg.advanced._scales as scales

    monkeypatch.setattr(lt, "cublasLtCreate", lambda: 1)
    monkeypatch.setattr(lt, "cublasLtGetVersion", lambda: 130102)
    monkeypatch.setattr(lt, "cublasLtMatmulDescCreate", _create_desc)
    monkeypatch.setattr(lt, "cublasLtMatmulDescSetAttribute", _set_desc)
    monkeypatch.setattr(lt, "cublasLtMatmulDescDestroy", lambda h: DESCS.pop(h, None))
    monkeypatch.setattr(lt, "cublasLtMatrixLayoutCreate", _create_layout)
    monkeypatch.setattr(lt, "cublasLtMatrixLayoutSetAttribute", _set_layout)
    monkeypatch.setattr(lt, "cublasLtMatrixLayoutDestroy", lambda h: LAYOUTS.pop(h, None))
    monkeypatch.setattr(lt, "cublasLtMatmulPreferenceCreate", lambda: 1)
    monkeypatch.setattr(lt, "cublasLtMatmulPreferenceSetAttribute", lambda *a: None)
    monkeypatch.setattr(lt, "cublasLtMatmulPreferenceDestroy", lambda h: None)
    monkeypatch.setattr(lt, "cublasLtMatmulAlgoGetHeuristic", _heuristics)
    monkeypatch.setattr(backend, "RAW_MATMUL", _matmul)
    monkeypatch.setattr(backend, "set_device", lambda d: None)
    monkeypatch.setattr(backend, "_INFO", {0: {"sm": 90, "sm_count": 132, "total_memory": 1 << 37,
                                               "cublaslt_version": 130102}})
    monkeypatch.setattr(backend, "_HANDLES", {0: 1})
    monkeypatch.setattr(algorithms, "Algorithm", FakeAlgorithm)
    # the CUDA runtime helpers (looked up on the module per call): host memory stands for device memory
    monkeypatch.setattr(cuda, "set_device", lambda d: None)
    monkeypatch.setattr(cuda, "require_device", lambda d: None)
    monkeypatch.setattr(cuda, "synchronize", lambda s: None)
    monkeypatch.setattr(cuda, "copy", lambda dst, src, n, kind, stream, what="": ctypes.memmove(dst, src, n))
    monkeypatch.setattr(cuda, "memset", lambda ptr, value, n, stream: ctypes.memset(ptr, value, n) if n else None)
    monkeypatch.setattr(planner, "default_allocator", lambda pkg, dev: FakeAllocator())
    monkeypatch.setattr(scales, "allocate", lambda alloc, n, s: FakeAllocator().memalloc(n))
    CALLS.clear()


@pytest.fixture(autouse=True)
def fake_library(monkeypatch):
    """install() for every test of a module that imports this fixture, with the plan cache emptied (and its
    counts reset) before the test and emptied after it."""
    from cumath.config import plan_cache

    install(monkeypatch)
    plan_cache.clear()
    plan_cache.reset_stats()
    yield
    plan_cache.clear()
