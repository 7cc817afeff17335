"""A NumPy emulation of cuSPARSE's generic API (the functions of ``cumath._bindings.cusparse`` the GPU executor
calls), for running the sparse matmul's device executor on the CPU: "device" arrays are NumPy arrays presented
as operands on GPU 0, descriptors are dicts read back through their pointers.

It checks what the real library refuses: descriptors used after destruction, index types that do not match the
arrays, operand shapes that do not fit op(A), leading dimensions too small for the order, a workspace smaller
than the size asked for, the stream set before each call.
"""

from __future__ import annotations

import itertools

import numpy as np

from cumath._bindings import cusparse as CS
from cumath._core.frameworks.numpy import from_pointer
from cumath._core.operand import Operand
from cumath.errors import CUSPARSEError

_VT = {2: "float16", 0: "float32", 1: "float64", 4: "complex64", 5: "complex128"}
_IT = {2: "int32", 3: "int64"}


class FakeCusparse:
    def __init__(self):
        self.ids = itertools.count(0x2000, 16)
        self.objects = {}
        self.destroyed = []
        self.calls = []
        self.buffer_size = 512
        self.extra_buffer = {}  # alg -> bytes more than buffer_size
        self.refused = set()  # algorithms that fail with CUSPARSE_STATUS_NOT_SUPPORTED
        self.streams = {}

    def _new(self, kind, **kw):
        key = next(self.ids)
        self.objects[key] = dict(kind=kind, **kw)
        return key

    def _live(self, key, kind):
        obj = self.objects.get(key)
        assert obj is not None and obj["kind"] == kind, f"{kind} {key:#x} is not alive"
        return obj

    def _destroy(self, key, kind):
        self._live(key, kind)
        del self.objects[key]
        self.destroyed.append(key)

    def cusparseCreate(self):
        return self._new("handle")

    def cusparseDestroy(self, h):
        self._destroy(h, "handle")

    def cusparseSetStream(self, h, stream):
        self._live(h, "handle")
        self.streams[h] = stream

    def cusparseCreateCsr(self, rows, cols, nnz, offsets, ind, values, ot, it, base, vt):
        assert base == 0 and ot in _IT and it in _IT and vt in _VT
        return self._new("sp", rows=rows, cols=cols, nnz=nnz, offsets=offsets, ind=ind, values=values, ot=ot, it=it,
                         vt=vt)

    def cusparseCreateBsr(self, brows, bcols, bnnz, rb, cb, offsets, ind, values, ot, it, base, vt, order):
        assert base == 0 and ot in _IT and it in _IT and vt in _VT and order in (1, 2) and rb > 0 and cb > 0
        return self._new("sp", rows=brows, cols=bcols, nnz=bnnz, offsets=offsets, ind=ind, values=values, ot=ot,
                         it=it, vt=vt, blocks=(rb, cb), order=order)

    def cusparseDestroySpMat(self, d):
        self._destroy(d, "sp")

    def cusparseSpMatSetValues(self, d, values):
        self._live(d, "sp")["values"] = values

    def cusparseCreateDnMat(self, rows, cols, ld, values, vt, order):
        assert ld >= (cols if order == 2 else rows) or rows * cols == 0, "leading dimension too small"
        return self._new("dn", rows=rows, cols=cols, ld=ld, values=values, vt=vt, order=order)

    def cusparseDestroyDnMat(self, d):
        self._destroy(d, "dn")

    def cusparseCreateDnVec(self, size, values, vt):
        return self._new("vec", size=size, values=values, vt=vt)

    def cusparseDestroyDnVec(self, d):
        self._destroy(d, "vec")

    # ------------------------------------------------------------------------------------------ products
    def _sparse(self, d):
        import scipy.sparse as sp

        o = self._live(d, "sp")
        r, c, nnz = o["rows"], o["cols"], o["nnz"]
        ip = from_pointer(o["offsets"], (r + 1,), (1,), _IT[o["ot"]])
        ix = from_pointer(o["ind"], (nnz,), (1,), _IT[o["it"]])
        assert ip[-1] == nnz, "row offsets do not end at nnz (wrong index type or array?)"
        if "blocks" in o:  # BSR: brows x bcols blocks, each rb x cb in the descriptor's order
            rb, cb = o["blocks"]
            strides = (rb * cb, cb, 1) if o["order"] == 2 else (rb * cb, 1, rb)
            v = from_pointer(o["values"], (nnz, rb, cb), strides, _VT[o["vt"]])
            return sp.bsr_array((v.copy(), ix.copy(), ip.copy()), shape=(r * rb, c * cb)).tocsr(), _VT[o["vt"]]
        v = from_pointer(o["values"], (nnz,), (1,), _VT[o["vt"]])
        return sp.csr_array((v.copy(), ix.copy(), ip.copy()), shape=(r, c)), _VT[o["vt"]]

    def _dense(self, d, kind):
        o = self._live(d, kind)
        if kind == "vec":
            return from_pointer(o["values"], (o["size"],), (1,), _VT[o["vt"]])
        r, c, ld = o["rows"], o["cols"], o["ld"]
        strides = (ld, 1) if o["order"] == 2 else (1, ld)
        return from_pointer(o["values"], (r, c), strides, _VT[o["vt"]])

    @staticmethod
    def _op(a, op):
        return a if op == 0 else (a.T if op == 1 else a.T.conj())

    @staticmethod
    def _scalar(ptr, ct):
        return from_pointer(ptr, (), (), _VT[ct])[()]

    def cusparseSpMM_bufferSize(self, h, op_a, op_b, alpha, a, b, beta, c, ct, alg):
        self._check_mm(h, op_a, op_b, a, b, c)
        return self.buffer_size + self.extra_buffer.get(alg, 0)

    def _check_mm(self, h, op_a, op_b, a, b, c):
        self._live(h, "handle")
        A, _ = self._sparse(a)
        B, C = self._dense(b, "dn"), self._dense(c, "dn")
        assert op_b == 0
        assert self.objects[b]["order"] == self.objects[c]["order"], "b and c in different orders"
        opA = self._op(A, op_a)
        assert opA.shape[1] == B.shape[0] and opA.shape[0] == C.shape[0] and B.shape[1] == C.shape[1], \
            f"shapes do not fit: op(A) {opA.shape}, B {B.shape}, C {C.shape}"
        return opA, B, C

    def cusparseSpMM_preprocess(self, h, op_a, op_b, alpha, a, b, beta, c, ct, alg, buffer):
        assert buffer, "no workspace"
        assert h in self.streams, "no stream set"
        self._check_mm(h, op_a, op_b, a, b, c)
        self._refuse(alg)
        self.calls.append(("SpMM_preprocess", op_a, alg))

    def _refuse(self, alg):
        if alg in self.refused:
            raise CUSPARSEError(10, "CUSPARSE_STATUS_NOT_SUPPORTED")

    def cusparseSpMM(self, h, op_a, op_b, alpha, a, b, beta, c, ct, alg, buffer):
        assert buffer, "no workspace"
        self._refuse(alg)
        assert h in self.streams, "no stream set"
        opA, B, C = self._check_mm(h, op_a, op_b, a, b, c)
        al, be = self._scalar(alpha, ct), self._scalar(beta, ct)
        C[...] = al * (opA @ B) + (be * C if be != 0 else 0)
        self.calls.append(("SpMM", op_a, alg))

    def cusparseSpMV_bufferSize(self, h, op_a, alpha, a, x, beta, y, ct, alg):
        self._live(h, "handle")
        return self.buffer_size + self.extra_buffer.get(alg, 0)

    def cusparseSpMV(self, h, op_a, alpha, a, x, beta, y, ct, alg, buffer):
        assert buffer, "no workspace"
        self._refuse(alg)
        A, _ = self._sparse(a)
        X, Y = self._dense(x, "vec"), self._dense(y, "vec")
        opA = self._op(A, op_a)
        assert opA.shape == (Y.size, X.size)
        al, be = self._scalar(alpha, ct), self._scalar(beta, ct)
        Y[...] = al * (opA @ X) + (be * Y if be != 0 else 0)
        self.calls.append(("SpMV", op_a, alg))


NAMES = [n for n in dir(FakeCusparse) if n.startswith("cusparse")]


def install(monkeypatch, fake: FakeCusparse) -> None:
    from cumath._core import cuda

    import ctypes

    for name in NAMES:
        monkeypatch.setattr(CS, name, getattr(fake, name))
    monkeypatch.setattr(cuda, "copy", lambda dst, src, n, kind, stream, what="": ctypes.memmove(dst, src, n))
    monkeypatch.setattr(cuda, "synchronize", lambda stream: None)
    monkeypatch.setattr(cuda, "require_device", lambda device_id: None)
    monkeypatch.setattr(cuda, "set_device", lambda device_id: None)


def device(x) -> Operand:
    """A NumPy array presented as an operand in GPU 0's memory."""
    item = x.dtype.itemsize
    return Operand(x, x.__array_interface__["data"][0], x.shape, tuple(s // item for s in x.strides), x.dtype.name,
                   0, "numpy")


def device_sparse(a):
    """A SciPy sparse matrix presented as a SparseMatrix on GPU 0."""
    from cumath.sparse._formats import SparseMatrix

    fmt = a.format
    if fmt in ("csr", "csc", "bsr"):
        index = {"indptr": device(a.indptr), "indices": device(a.indices)}
    elif fmt == "coo":
        index = {"row": device(a.coords[0]), "col": device(a.coords[1])}
    else:
        index = {"offsets": device(a.offsets)}
    return SparseMatrix(a, fmt, index, device(a.data), a.shape, getattr(a, "blocksize", None) if fmt == "bsr" else None)
