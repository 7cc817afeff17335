"""The sparse matmul on a GPU with cuSPARSE's generic API (SpMM, SpMV for a vector b).

CSR and CSC operands are read in place (CSC as the CSR of a^T with the transposed op), and so is BSR for an SpMM
of a itself (cuSPARSE's BSR SpMM; where this cuSPARSE refuses it, through the CSR gather); every other format runs
as CSR through a planned gather of its values on the GPU (the pattern is read once, at plan()). ``b`` is read
in place when it is row- or column-major, else copied by its package; the result is written by cuSPARSE into
``c`` (or a new array of the package), through a row-major buffer when ``c`` has another layout. Descriptors
of the dense operands are made per execution (host calls only); the workspace is sized at plan() and kept.
"""

from __future__ import annotations

import importlib
import logging

import numpy as np

from ..._core.allocators import allocate, default_allocator
from ..._core.logging import format_bytes
from ..._core.operand import adapter
from .._formats import csr_gather

__all__ = ["DeviceExecutor", "algorithm_candidates"]

#: cuSPARSE's algorithms for the matrices this executor makes (CSR, or BSR read in place): the COO and
#: Blocked-ELL algorithms take descriptors of those formats, which a CSR-backed plan never has
_SPMM_ALGS = {"csr": ("DEFAULT", "CSR_ALG1", "CSR_ALG2", "CSR_ALG3"), "bsr": ("DEFAULT", "BSR_ALG1")}
_SPMV_ALGS = ("DEFAULT", "CSR_ALG1", "CSR_ALG2")
_PREPROCESSED = ("CSR_ALG1", "CSR_ALG3")  # cusparseSpMM_preprocess speeds up later calls of these


def algorithm_candidates(stored_format: str, spmv: bool) -> tuple:
    """The cuSPARSE algorithm names a plan of ``stored_format`` ('csr' or 'bsr') can use, DEFAULT first."""
    return _SPMV_ALGS if spmv else _SPMM_ALGS[stored_format]


def _event_timer(run, stream: int, iterations: int) -> float:
    """Milliseconds per ``run()`` on ``stream``: one warm-up, then ``iterations`` runs between two CUDA events."""
    from ..._bindings import cudart

    run()
    start, end = cudart.cudaEventCreateWithFlags(), cudart.cudaEventCreateWithFlags()
    try:
        cudart.cudaEventRecord(start, stream)
        for _ in range(iterations):
            run()
        cudart.cudaEventRecord(end, stream)
        cudart.cudaEventSynchronize(end)
        return cudart.cudaEventElapsedTime(start, end) / iterations
    finally:
        cudart.cudaEventDestroy(start)
        cudart.cudaEventDestroy(end)

_CUDA_TYPE = {"float16": 2, "float32": 0, "float64": 1, "complex64": 4, "complex128": 5}
_COMPUTE = {"float16": 0, "float32": 0, "float64": 1, "complex64": 4, "complex128": 5}
_OPS = {"N": 0, "T": 1, "H": 2}


class _Package:
    """The few array operations of the GPU package the executor needs (gather, conjugate, upload, copy)."""

    def __init__(self, package: str, device_id: int):
        self.name, self.device_id = package, device_id
        self.mod = importlib.import_module(package)
        self.adapter = adapter(package)

    def upload(self, host):
        if self.name == "torch":
            return self.mod.from_numpy(np.ascontiguousarray(host)).to(f"cuda:{self.device_id}")
        if self.name == "cupy":
            with self.mod.cuda.Device(self.device_id):
                return self.mod.asarray(host)
        return np.ascontiguousarray(host)  # a host package presented as device memory (the emulation in tests)

    def empty(self, shape, dtype, order="C"):
        perm = None if order == "C" else tuple(range(len(shape)))[::-1]
        return self.adapter.empty(tuple(shape), dtype, self.device_id, perm)

    def take(self, values, index, out):
        flat = values.reshape(-1)
        if self.name == "torch":
            self.mod.index_select(flat, 0, index, out=out)
        else:
            self.mod.take(flat, index, out=out)  # cupy.take and numpy.take

    def conj(self, x, out):
        if self.name == "torch":
            self.mod.conj_physical(x, out=out)
        else:
            self.mod.conj(x, out=out)

    def copy(self, dst, src):
        self.adapter.copy_into(dst, src)

    def pointer(self, x) -> int:
        return self.adapter.pointer(x)


def _strides(x) -> tuple:
    s = getattr(x, "stride", None)
    return tuple(s()) if callable(s) else tuple(v // x.itemsize for v in x.strides)


def _order(x, shape):
    """(cuSPARSE order, ld) when the 2-D GPU array ``x`` is read in place, else None."""
    r, c = shape
    s0, s1 = _strides(x)
    if (s1 == 1 or c == 1) and s0 >= max(c, 1) and s0 > 0:
        return 2, max(s0, 1)
    if (s0 == 1 or r == 1) and s1 >= max(r, 1) and s1 > 0:
        return 1, max(s1, 1)
    return None


class _StoredGPU:
    """One matrix of a's batch as cuSPARSE reads it (see the module's docstring)."""

    def __init__(self, sm, index: int, geom, pkg: _Package, stream, bsr_ok: bool = True):
        fmt = sm.format
        ma, ka = sm.shape[-2:]
        self.transposed = fmt == "csc"
        self.gather = None
        self.blocks = None  # (rows, cols) of a BSR matrix that cuSPARSE reads in place
        if fmt == "bsr" and bsr_ok and geom.n is not None and not sm.batch_shape and not geom.transpose_a and \
                not geom.conjugate_a:  # SpMM of BSR, op(a) = a (cusparseCreateBsr, CUDA 12.1+)
            self.indptr, self.indices = sm.index["indptr"].obj, sm.index["indices"].obj
            self.index_dtype, self.nnz = sm.index_dtype, int(sm.index["indices"].size)
            self.blocks = sm.blocksize
        elif fmt in ("csr", "csc"):
            ip, ix = (sm.index["indptr"].obj, sm.index["indices"].obj)
            if sm.batch_shape:
                ip, ix = ip.reshape(-1, ip.shape[-1])[index], ix.reshape(-1, ix.shape[-1])[index]
            self.indptr, self.indices = ip, ix
            self.index_dtype = sm.index_dtype
            self.nnz = sm.nnz
        else:
            ip, ix, gather = csr_gather(sm, stream)
            self.indptr, self.indices, self.gather = pkg.upload(ip), pkg.upload(ix), pkg.upload(gather)
            self.index_dtype, self.nnz = "int64", int(ix.size)
        self.shape = (ka, ma) if self.transposed else (ma, ka)
        t = geom.transpose_a != self.transposed
        self.op = ("H" if geom.conjugate_a else "T") if t else "N"
        self.conj_values = geom.conjugate_a and not t
        self.buffer = pkg.empty((self.nnz,), sm.dtype) if (self.gather is not None or self.conj_values) else None

    def values(self, values_obj, index: int, batched: bool, pkg: _Package):
        v = values_obj.reshape(-1, values_obj.shape[-1])[index] if batched else values_obj
        if self.gather is not None:
            pkg.take(v, self.gather, self.buffer)
            v = self.buffer
        if self.conj_values:
            pkg.conj(v.reshape(-1), self.buffer)
            v = self.buffer
        return v


class DeviceExecutor:
    kind = "device"

    def __init__(self, geom, ops, options, log, place, prologs=None):
        from ..._bindings import cusparse as cs

        self.cs, self.geom, self.log = cs, geom, log
        sm = ops["a"]
        self.pkg = _Package(sm.package, place.device)
        self.stream = place.stream
        self.allocator = options.allocator or default_allocator(sm.package, place.device)
        self.handle = cs.cusparseCreate()
        self.engine = type("cuSPARSE", (), {"name": "cusparse", "description": "cuSPARSE"})
        self.descrs, self.workspace, self.nbytes = [], None, 0
        self.value_type = _CUDA_TYPE[geom.dtype]
        self.compute = int(options.compute_type) if options.compute_type is not None else _COMPUTE[geom.dtype]
        sdt = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128", 2: "float16"}[self.compute]
        self._scalar_dtype = np.dtype(sdt)
        self.algorithm, self._ws_size, self._preprocessed = "DEFAULT", 0, False
        try:
            size = self._prepare(sm, ops, geom, place, True)
            if size is None:  # this cuSPARSE has no SpMM of BSR for the problem: through the CSR gather
                size = self._prepare(sm, ops, geom, place, False)
            self._workspace(size)
            if options.algorithm not in (None, "autotune"):
                self.use_algorithm(options.algorithm, ops)
        except BaseException:
            self.free()
            raise
        if log.isEnabledFor(logging.INFO):
            log.info("sparse matmul on GPU %s with cuSPARSE %s (%s): op(a)=%s, workspace %s", place.device,
                     "SpMV" if geom.n is None else "SpMM", self.algorithm, self.stored[0].op,
                     format_bytes(self.nbytes))

    # ------------------------------------------------------------------------------------------ algorithms
    @property
    def candidates(self) -> tuple:
        """The algorithm names cuSPARSE has for this plan's stored matrices (DEFAULT first)."""
        return algorithm_candidates("bsr" if self.stored[0].blocks is not None else "csr", self.geom.n is None)

    def _alg(self) -> int:
        return int((self.cs.SpMVAlg if self.geom.n is None else self.cs.SpMMAlg)[self.algorithm])

    def _workspace(self, size: int) -> None:
        """A workspace of at least ``size`` bytes (the one held when it is big enough)."""
        if self.workspace is None or size > self._ws_size:
            old, self.workspace = self.workspace, None
            if old is not None:
                old.free()
            self.workspace = allocate(self.allocator, max(size, 1), self.stream)
            self._ws_size = max(size, 1)
        self.nbytes = self._ws_size + sum(0 if st.gather is None else st.nnz * 16 for st in self.stored)

    def use_algorithm(self, name: str, ops) -> None:
        """Run with the cuSPARSE algorithm ``name`` from now on: its workspace, and its preprocessing
        (cusparseSpMM_preprocess for CSR_ALG1 / CSR_ALG3 of a single matrix) done once here."""
        if name not in self.candidates:
            kind = "SpMV" if self.geom.n is None else ("SpMM of BSR" if self.stored[0].blocks else "SpMM of CSR")
            raise ValueError(f"algorithm={name!r} is not one cuSPARSE has for this product ({kind}); use one of "
                             f"{', '.join(self.candidates)} or 'autotune'")
        self.algorithm, self._preprocessed = name, False
        self._workspace(self._buffer_size(ops))
        if name in _PREPROCESSED and self.geom.n is not None and len(self.stored) == 1:
            self._preprocess(ops)

    def _preprocess(self, ops, stream=None) -> None:
        g, cs = self.geom, self.cs
        b = self._b_view(ops["b"].obj, 0)
        c = ops.get("c")
        d_order = "F" if c is not None and c.ndim == 2 and (_order(c.obj, (g.m, g.n)) or (2,))[0] == 1 else "C"
        d = self.pkg.empty((g.m, g.n), g.dtype, d_order)
        cs.cusparseSetStream(self.handle, self.stream if stream is None else stream)
        try:
            self._call(self.stored[0], self.descrs[0], b, d, 1, 0, self.workspace.device_ptr, preprocess=True)
            self._preprocessed = True
        except cs.CUSPARSEError as exc:  # an optional speed-up: the product runs without it
            self.log.info("cusparseSpMM_preprocess for %s failed (%s); the product runs without it",
                          self.algorithm, exc)

    def autotune(self, ops, alpha, beta, stream: int, iterations: int = 5, timer=None) -> list:
        """Time each algorithm of :attr:`candidates` (``iterations`` executions into a scratch result, never the
        caller's c) and keep the fastest. Returns ``[(name, ms per execution), ...]``, fastest first; algorithms
        cuSPARSE refuses for the problem are left out (logged)."""
        g = self.geom
        from ..._core import cuda

        timer = timer or _event_timer
        cuda.synchronize(stream)  # earlier executions may still use the workspace replaced below
        scratch = self.pkg.empty(g.result_shape, g.dtype)
        if ops.get("c") is not None:
            self.pkg.copy(scratch, ops["c"].obj)
        result = self.pkg.adapter.wrap(scratch)
        times = []
        for name in self.candidates:
            try:
                self.use_algorithm(name, ops)
                ms = timer(lambda: self.execute(ops, alpha, beta, result, stream), stream, iterations)
            except self.cs.CUSPARSEError as exc:
                self.log.info("autotune: cuSPARSE %s does not run this product (%s); left out", name, exc)
                continue
            times.append((name, float(ms)))
        times.sort(key=lambda t: t[1])
        self.use_algorithm(times[0][0] if times else "DEFAULT", ops)
        if self.log.isEnabledFor(logging.INFO):
            self.log.info("autotune: cuSPARSE %s chosen; ms per execution: %s", self.algorithm,
                          ", ".join(f"{n} {t:.4g}" for n, t in times))
        return times

    def _prepare(self, sm, ops, geom, place, bsr_ok: bool):
        """The stored matrices, their descriptors and the workspace size; None when cuSPARSE refuses a BSR
        matrix read in place (everything made here is destroyed again)."""
        na = max(1, int(np.prod(sm.batch_shape, dtype=np.int64)))
        self.stored = [_StoredGPU(sm, i, geom, self.pkg, place.stream, bsr_ok) for i in range(na)]
        bsr = any(st.blocks is not None for st in self.stored)
        try:
            for st in self.stored:
                self.descrs.append(self._sparse_descr(st, st.buffer if st.buffer is not None else
                                                      (sm.values.obj if not sm.batch_shape else
                                                       sm.values.obj.reshape(-1, sm.values.shape[-1])[0])))
            return self._buffer_size(ops)
        except (self.cs.CUSPARSEError, AttributeError) as exc:
            if not bsr:
                raise
            self.log.info("cuSPARSE does not multiply this BSR matrix in place (%s); it runs as CSR", exc)
            for d in self.descrs:
                self.cs.cusparseDestroySpMat(d)
            self.descrs = []
            return None

    def _sparse_descr(self, st, values) -> int:
        cs = self.cs
        it = cs.INDEX_TYPES[str(st.indices.dtype).replace("torch.", "")]
        ipt = cs.INDEX_TYPES[str(st.indptr.dtype).replace("torch.", "")]
        r, c = st.shape
        if st.blocks is not None:  # blocks stored row-major (SciPy, PyTorch): CUSPARSE_ORDER_ROW
            br, bc = st.blocks
            return cs.cusparseCreateBsr(r // br, c // bc, st.nnz, br, bc, self.pkg.pointer(st.indptr),
                                        self.pkg.pointer(st.indices), self.pkg.pointer(values), ipt, it, 0,
                                        self.value_type, 2)
        return cs.cusparseCreateCsr(r, c, st.nnz, self.pkg.pointer(st.indptr), self.pkg.pointer(st.indices),
                                    self.pkg.pointer(values), ipt, it, 0, self.value_type)

    def _scalars(self, alpha, beta):
        a = np.array(alpha, dtype=self._scalar_dtype)
        b = np.array(beta, dtype=self._scalar_dtype)
        return a, b

    def _dense(self, x, shape, what, order=None):
        """(descriptor, array kept alive) of a dense operand for cuSPARSE; ``order`` (1 column-, 2 row-major):
        the order it must have (cuSPARSE's SpMM takes b and c in one order), copied into it when needed."""
        cs = self.cs
        if self.geom.n is None:
            if _strides(x)[0] != 1 and shape[0] > 1:
                y = self.pkg.empty(shape, self.geom.dtype)
                self.pkg.copy(y, x)
                x = y
            return cs.cusparseCreateDnVec(shape[0], self.pkg.pointer(x), self.value_type), x
        o = _order(x, shape)
        if o is None or (order is not None and o[0] != order):
            want = order or 2
            y = self.pkg.empty(shape, self.geom.dtype, "C" if want == 2 else "F")
            self.pkg.copy(y, x)
            x, o = y, (want, max(shape[1] if want == 2 else shape[0], 1))
        return cs.cusparseCreateDnMat(shape[0], shape[1], o[1], self.pkg.pointer(x), self.value_type, o[0]), x

    def _b_view(self, b_obj, idx):
        g = self.geom
        x = b_obj
        if b_obj.ndim > 2:
            x = b_obj.reshape((-1,) + tuple(b_obj.shape[-2:]))[idx]
        if g.transpose_b:
            x = x.transpose(-1, -2) if self.pkg.name == "torch" else x.T
        if g.conjugate_b:
            y = self.pkg.empty(tuple(x.shape), g.dtype)
            self.pkg.conj(x, y)
            x = y
        return x

    def _call(self, st, descr, b, d, alpha, beta, buffer, size_only=False, preprocess=False):
        cs, g = self.cs, self.geom
        shape_b = (g.k,) if g.n is None else (g.k, g.n)
        shape_d = (g.m,) if g.n is None else (g.m, g.n)
        dd, keep_d = self._dense(d, shape_d, "result")
        d_order = None if g.n is None else (_order(keep_d, shape_d) or (2,))[0]
        db, keep_b = self._dense(b, shape_b, "b", d_order)
        a_s, b_s = self._scalars(alpha, beta)
        try:
            alg = self._alg()
            if g.n is None:
                args = (self.handle, _OPS[st.op], a_s.ctypes.data, descr, db, b_s.ctypes.data, dd, self.compute, alg)
                if size_only:
                    return cs.cusparseSpMV_bufferSize(*args)
                cs.cusparseSpMV(*args, buffer)
            else:
                args = (self.handle, _OPS[st.op], 0, a_s.ctypes.data, descr, db, b_s.ctypes.data, dd, self.compute,
                        alg)
                if size_only:
                    return cs.cusparseSpMM_bufferSize(*args)
                (cs.cusparseSpMM_preprocess if preprocess else cs.cusparseSpMM)(*args, buffer)
        finally:
            (cs.cusparseDestroyDnVec if g.n is None else cs.cusparseDestroyDnMat)(db)
            (cs.cusparseDestroyDnVec if g.n is None else cs.cusparseDestroyDnMat)(dd)
        if keep_d is not d:
            self.pkg.copy(d, keep_d)
        return None

    def _buffer_size(self, ops) -> int:
        g = self.geom
        b = self._b_view(ops["b"].obj, 0)
        d = self.pkg.empty((g.m,) if g.n is None else (g.m, g.n), g.dtype)
        self.cs.cusparseSetStream(self.handle, self.stream)
        return max(self._call(st, de, b, d, 1, 0, 0, size_only=True) for st, de in zip(self.stored, self.descrs))

    def new_result(self, ops):
        arr = self.pkg.empty(self.geom.result_shape, self.geom.dtype)
        return arr, self.pkg.adapter.wrap(arr)

    def execute(self, ops, alpha, beta, result, stream):
        g, cs = self.geom, self.cs
        cs.cusparseSetStream(self.handle, stream)
        a = ops["a"]
        batched = bool(a.batch_shape)
        vals = a.values.obj
        d_all = result.obj
        for i in range(g.count):
            ai = g.a_batches[i]
            st, descr = self.stored[ai], self.descrs[ai]
            v = st.values(vals, ai, batched, self.pkg)
            if st.gather is None and not batched:  # CSR/CSC on the caller's index arrays: they may be new ones
                ip, ix = a.index["indptr"].obj, a.index["indices"].obj
                if ip is not st.indptr or ix is not st.indices:
                    st.indptr, st.indices = ip, ix
                    cs.cusparseDestroySpMat(descr)
                    self.descrs[ai] = descr = None
                    self.descrs[ai] = descr = self._sparse_descr(st, v)
                    if self._preprocessed:  # cuSPARSE's preprocessing belongs to the old descriptor
                        self._preprocess(ops, stream)
            cs.cusparseSpMatSetValues(descr, self.pkg.pointer(v))
            b = self._b_view(ops["b"].obj, g.b_batches[i])
            d = d_all if not g.batch_shape else d_all.reshape((-1,) + tuple(d_all.shape[len(g.batch_shape):]))[i]
            self._call(st, descr, b, d, alpha, beta, self.workspace.device_ptr)
        return result.obj

    def free(self) -> None:
        cs = self.cs
        for d in self.descrs:
            if d is not None:
                cs.cusparseDestroySpMat(d)
        self.descrs = []
        ws, self.workspace = self.workspace, None
        if ws is not None:
            ws.free()
        h, self.handle = self.handle, None
        if h is not None:
            cs.cusparseDestroy(h)
