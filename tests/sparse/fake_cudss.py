"""A NumPy emulation of cuDSS (the functions of ``cumath._bindings.cudss`` the GPU engine calls), for running the
GPU executors on the CPU: "device" memory is host memory (NumPy buffers of :class:`HostAllocator`, NumPy arrays
presented as operands on GPU 0), CUDA copies are memmoves.

It checks what the real library would refuse: objects used after being destroyed, the byte sizes of config and
data parameters (cuDSS wants them exact), pointer arrays of batch matrices outside "device" memory, phases out of
order, and the lifetime rules of ``_cudss_lifetime``: a handle destroyed while data objects made from it (or any
matrix or config, once no handle is left) live, a data object or handle destroyed with another device current
than its handle's, while work queued on its stream has not been waited for, or while its handle points at a
stream the caller has destroyed (``dead_streams``), and any destroy once the interpreter is exiting
(``exiting``, set by the subprocess tests' last atexit hook), and a phase on another stream than the data
object's analysis stream (where cuDSS keeps freeing and allocating its buffers) that is not joined with it both
ways (``queue``/``read`` stand for the caller's own work on a stream). ``violations`` collects them (tests assert it is
empty; an assertion raised in a finalizer would only be printed). It emulates cuDSS's default pivoting by perturbing zero diagonal entries of general matrices (and counting
them in NPIVOTS) unless the BTF_COLAMD or COLAMD reordering (global pivoting) is configured, so the solver's
fallback and checks can be tested; ``empty_rows = "nan"`` makes an empty row of a general matrix with matching on
come out as NaN pivots nobody counts instead, and the GPU scan of the pivots for NaN and inf runs in NumPy
(``scans`` records each).
"""

from __future__ import annotations

import ctypes
import itertools

import numpy as np

from cumath._bindings import cudss as C
from cumath._core.frameworks.numpy import from_pointer
from cumath._core.operand import Operand
from cumath.memory import MemoryPointer

_VT = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128"}
_DEFAULTS = {C.ConfigParam.REORDERING_ALG: 0, C.ConfigParam.FACTORIZATION_ALG: 0, C.ConfigParam.SOLVE_ALG: 0,
             C.ConfigParam.MATCHING_ALG: 6, C.ConfigParam.SOLVE_MODE: 0, C.ConfigParam.IR_N_STEPS: 0,
             C.ConfigParam.IR_TOL: 0.0, C.ConfigParam.PIVOT_TYPE: 0, C.ConfigParam.PIVOT_THRESHOLD: 1.0,
             C.ConfigParam.PIVOT_EPSILON: -1.0, C.ConfigParam.MAX_LU_NNZ: -1, C.ConfigParam.HYBRID_MEMORY_MODE: 0,
             C.ConfigParam.HYBRID_DEVICE_MEMORY_LIMIT: -1, C.ConfigParam.USE_CUDA_REGISTER_MEMORY: 1,
             C.ConfigParam.HOST_NTHREADS: -1, C.ConfigParam.HYBRID_EXECUTE_MODE: 0,
             C.ConfigParam.PIVOT_EPSILON_ALG: 0, C.ConfigParam.ND_NLEVELS: 10, C.ConfigParam.USE_SUPERPANELS: 1}


class FakeCudss:
    def __init__(self):
        self.ids = itertools.count(0x1000, 16)
        self.handles, self.configs, self.datas, self.matrices = {}, {}, {}, {}
        self.destroyed = []
        self.calls = []  # (phase name, config snapshot) of every cudssExecute
        self.device = []  # (lo, hi, buffer) of "device" allocations
        self.copies = []
        self.threading = {}  # handle -> threading layer path
        self.jit_dirs = {}
        self.streams = {}
        self.fail_threading = False
        self.current_device = 0
        self.dead_streams = set()
        self.pending = set()  # streams with queued work nobody waited for
        self.events = {}  # event -> (stream, work count of that stream) when last recorded
        self.work = {}  # stream -> how many cudssExecute were queued on it
        self.waits = {}  # (stream, other) -> work count of ``other`` that ``stream`` waits for (cudaStreamWaitEvent)
        self.last_work = {}  # handle -> (stream, work count) of the last cudssExecute through it
        self.done = {}  # stream -> work count known to be complete (synchronized)
        self.exiting = False
        self.violations = []
        # how a general matrix's empty row comes out of the factorization with matching on: "perturbed" (counted
        # in NPIVOTS, as above), or "nan" (a NaN pivot nobody counts: what a row scaling of 1/0 gives)
        self.empty_rows = "perturbed"
        self.scans = []  # (pointer, words, bits) of each NaN/inf scan of a factorization's pivots
        self.dominance_checks = []  # the order of each matrix checked for diagonal dominance
        self.pattern_checks = []  # the order of each pattern checked for empty rows and columns on the "GPU"

    def _violation(self, what: str) -> None:
        self.violations.append(what)

    def _destroying(self, what: str, handle) -> None:
        if self.exiting:
            self._violation(f"{what} destroyed while the interpreter exits")
        h = self.handles.get(handle)
        if h is None:
            return
        if h["device"] != self.current_device:
            self._violation(f"{what} destroyed with GPU {self.current_device} current, its handle is on "
                            f"GPU {h['device']}")
        if self.streams.get(handle) in self.dead_streams:
            self._violation(f"{what} destroyed while its handle points at a destroyed stream")

    # ------------------------------------------------------------------------------------------- CUDA
    def set_device(self, device_id):
        self.current_device = device_id

    def get_device(self):
        return self.current_device

    def event_create(self, flags=0):
        key = next(self.ids)
        self.events[key] = None
        return key

    def event_record(self, event, stream):
        assert event in self.events, "recording a destroyed event"
        self.events[event] = (stream, self.work.get(stream, 0))

    def stream_wait_event(self, stream, event):
        assert event in self.events, "waiting for a destroyed event"
        assert stream not in self.dead_streams, "a destroyed stream made to wait"
        recorded = self.events[event]
        if recorded is not None:
            other, n = recorded
            key = (stream, other)
            self.waits[key] = max(self.waits.get(key, 0), n)

    def event_synchronize(self, event):
        assert event in self.events, "waiting for a destroyed event"
        recorded = self.events[event]
        if recorded is not None:
            stream, n = recorded
            self.done[stream] = max(self.done.get(stream, 0), n)
            if n >= self.work.get(stream, 0):
                self.pending.discard(stream)

    def event_destroy(self, event):
        assert event in self.events, "destroying a destroyed event"
        del self.events[event]

    def synchronize(self, stream):
        self.pending.discard(stream)
        self.done[stream] = self.work.get(stream, 0)

    def queue(self, stream) -> None:
        """The caller queues work of its own on ``stream`` (a kernel writing an operand, say)."""
        self.work[stream] = self.work.get(stream, 0) + 1

    def read(self, stream) -> None:
        """The caller reads, on ``stream``, what cuDSS wrote: flagged if cuDSS's work on a data object's analysis
        stream for a phase queued on ``stream`` is not ordered before it."""
        for d in self.datas.values():
            home = d.get("home")
            if d.get("stream") == stream and home not in (None, stream) and \
                    self.waits.get((stream, home), 0) < d.get("home_work", 0):
                self._violation(f"stream {stream:#x} reads what cuDSS wrote before its work on the analysis stream "
                                f"{home:#x} is done")

    def running(self, stream, n) -> bool:
        """Whether the ``n``-th work queued on ``stream`` may still run (nobody waited for it)."""
        return self.done.get(stream, 0) < n

    # ------------------------------------------------------------------------------------------- objects
    def _new(self, table, value) -> int:
        key = next(self.ids)
        table[key] = value
        return key

    def _live(self, table, key, what):
        assert key in table, f"{what} {key:#x} is not alive"
        return table[key]

    def cudssCreate(self):
        return self._new(self.handles, {"device": self.current_device})

    def cudssDestroy(self, handle):
        self._live(self.handles, handle, "handle")
        self._destroying("a handle", handle)
        made = [d for d, v in self.datas.items() if v["handle"] == handle]
        if made:
            self._violation(f"handle {handle:#x} destroyed before {len(made)} data object(s) made from it")
        if len(self.handles) == 1 and (self.matrices or self.configs):
            self._violation("the last handle destroyed before the matrix and config objects")
        if handle in self.last_work and self.running(*self.last_work[handle]):
            self._violation("a handle destroyed while work queued through it was not waited for")
        del self.handles[handle]
        self.destroyed.append(("handle", handle))

    def cudssSetStream(self, handle, stream):
        self._live(self.handles, handle, "handle")
        assert stream not in self.dead_streams, "a destroyed stream set on a handle"
        self.streams[handle] = stream

    def cudssSetThreadingLayer(self, handle, path):
        self._live(self.handles, handle, "handle")
        if self.fail_threading:
            raise C.CUDSSError(C.Status.INVALID_VALUE, "INVALID_VALUE")
        self.threading[handle] = path

    def cudssSetJitCacheDir(self, handle, path):
        self.jit_dirs[handle] = path

    def cudssConfigCreate(self):
        return self._new(self.configs, dict(_DEFAULTS))

    def cudssConfigDestroy(self, config):
        self._live(self.configs, config, "config")
        if self.exiting:
            self._violation("a config destroyed while the interpreter exits")
        del self.configs[config]
        self.destroyed.append(("config", config))

    def cudssConfigSet(self, config, param, value):
        cfg = self._live(self.configs, config, "config")
        ctype = C.CONFIG_TYPES[param]
        assert isinstance(value, float if ctype is ctypes.c_double else int), (param, value)
        cfg[C.ConfigParam(param)] = value

    def cudssConfigGet(self, config, param):
        return self._live(self.configs, config, "config").get(C.ConfigParam(param), 0)

    def cudssDataCreate(self, handle):
        self._live(self.handles, handle, "handle")
        return self._new(self.datas, {"phase": None, "handle": handle})

    def cudssDataDestroy(self, handle, data):
        d = self._live(self.datas, data, "data")
        self._live(self.handles, handle, "handle of a data object")
        if d["handle"] != handle:
            self._violation("a data object destroyed through another handle than its own")
        self._destroying("a data object", handle)
        if "work" in d and self.running(d["stream"], d["work"]):
            self._violation("a data object destroyed while work on its stream was not waited for")
        del self.datas[data]
        self.destroyed.append(("data", data))

    def cudssMatrixCreateCsr(self, nrows, ncols, nnz, row_start, row_end, cols, values, otype, itype, vtype, mtype,
                             mview, base):
        assert otype == itype == 10 and row_end == 0 and base == 0
        return self._new(self.matrices, {"kind": "csr", "n": nrows, "nnz": nnz, "ptrs": [(row_start, cols, values)],
                                         "dtype": _VT[vtype], "mtype": mtype, "mview": mview})

    def cudssMatrixCreateBatchCsr(self, count, nrows, ncols, nnz, rows, row_end, cols, values, otype, itype, vtype,
                                  mtype, mview, base):
        assert otype == itype == 10 and row_end == 0 and base == 0
        n = from_pointer(nrows, (count,), (1,), "int32").copy()
        z = from_pointer(nnz, (count,), (1,), "int32").copy()
        m = {"kind": "csr", "n": list(n), "nnz": list(z), "count": count, "dtype": _VT[vtype], "mtype": mtype,
             "mview": mview}
        m["ptrs"] = self._batch_ptrs(count, rows, cols, values)
        return self._new(self.matrices, m)

    def _pointers(self, ptr, count):
        assert self.is_device(ptr, 8 * count), "a batch pointer array must be in device memory"
        return [int(p) for p in from_pointer(ptr, (count,), (1,), "uint64")]

    def _batch_ptrs(self, count, rows, cols, values):
        return list(zip(self._pointers(rows, count), self._pointers(cols, count), self._pointers(values, count)))

    def cudssMatrixCreateDn(self, rows, cols, ld, ptr, vtype, layout):
        assert layout == C.Layout.COL_MAJOR and ld >= rows
        return self._new(self.matrices, {"kind": "dense", "shape": [(rows, cols, ld)], "ptrs": [ptr],
                                         "dtype": _VT[vtype]})

    def cudssMatrixCreateBatchDn(self, count, nrows, ncols, ld, ptrs, itype, vtype, layout):
        assert layout == C.Layout.COL_MAJOR and itype == 10
        shape = list(zip(*(from_pointer(p, (count,), (1,), "int32").tolist() for p in (nrows, ncols, ld))))
        return self._new(self.matrices, {"kind": "dense", "shape": shape, "ptrs": self._pointers(ptrs, count),
                                         "dtype": _VT[vtype], "count": count})

    def cudssMatrixDestroy(self, matrix):
        self._live(self.matrices, matrix, "matrix")
        if self.exiting:
            self._violation("a matrix destroyed while the interpreter exits")
        del self.matrices[matrix]
        self.destroyed.append(("matrix", matrix))

    def cudssMatrixSetValues(self, matrix, ptr):
        self._live(self.matrices, matrix, "matrix")["ptrs"] = [ptr]

    def cudssMatrixSetCsrPointers(self, matrix, rows, row_end, cols, values):
        self._live(self.matrices, matrix, "matrix")["ptrs"] = [(rows, cols, values)]

    def cudssMatrixSetBatchValues(self, matrix, ptrs):
        m = self._live(self.matrices, matrix, "matrix")
        m["ptrs"] = self._pointers(ptrs, m["count"])

    def cudssMatrixSetBatchCsrPointers(self, matrix, rows, row_end, cols, values):
        m = self._live(self.matrices, matrix, "matrix")
        m["ptrs"] = self._batch_ptrs(m["count"], rows, cols, values)

    # -------------------------------------------------------------------------------------------- math
    def is_device(self, ptr, nbytes=1) -> bool:
        return any(lo <= ptr and ptr + nbytes <= hi for lo, hi, _ in self.device)

    def _systems(self, m):
        """The full dense matrices of a CSR matrix object."""
        count = m.get("count", 1)
        sizes = m["n"] if isinstance(m["n"], list) else [m["n"]]
        nnzs = m["nnz"] if isinstance(m["nnz"], list) else [m["nnz"]]
        out = []
        for (rp, cp, vp), n, nnz in zip(m["ptrs"], sizes, nnzs):
            n, nnz = int(n), int(nnz)
            indptr = from_pointer(rp, (n + 1,), (1,), "int32")
            indices = from_pointer(cp, (nnz,), (1,), "int32")
            values = from_pointer(vp, (nnz,), (1,), m["dtype"])
            assert indptr[-1] == nnz
            dense = np.zeros((n, n), dtype=m["dtype"])
            rows = np.repeat(np.arange(n), np.diff(indptr))
            np.add.at(dense, (rows, indices), values)
            out.append(_as_cudss_reads(dense, m["mtype"], m["mview"]))
        assert len(out) == count
        return out

    def _dense(self, m):
        out = []
        for (rows, cols, ld), ptr in zip(m["shape"], m["ptrs"]):
            out.append(from_pointer(ptr, (cols, rows), (ld, 1), m["dtype"]).T)
        return out

    def cudssExecute(self, handle, phase, config, data, a, x, b):
        self._live(self.handles, handle, "handle")
        cfg = dict(self._live(self.configs, config, "config"))
        d = self._live(self.datas, data, "data")
        assert d["handle"] == handle, "a data object used with another handle than its own"
        stream = self.streams.get(handle, 0)
        assert stream not in self.dead_streams, "work queued on a destroyed stream"
        assert self.handles[handle]["device"] == self.current_device, "cuDSS called with another GPU current"
        last = self.last_work.get(handle)
        if last is not None and last[0] != stream and self.running(*last) and \
                self.waits.get((stream, last[0]), 0) < last[1]:
            self._violation(f"work queued through handle {handle:#x} on stream {stream:#x} while its work on stream "
                            f"{last[0]:#x} may still run (one handle's data objects share its workspace)")
        if phase & C.Phase.REORDERING:
            d["home"] = stream
        home = d.get("home", stream)
        if home != stream and self.waits.get((home, stream), 0) < self.work.get(stream, 0):
            self._violation(f"cuDSS's work on the data object's analysis stream {home:#x} may run before the work "
                            f"queued on stream {stream:#x} (the operands written there)")
        self.work[stream] = n = self.work.get(stream, 0) + 1
        self.last_work[handle] = (stream, n)
        d["stream"], d["work"] = stream, n
        if home != stream:  # cuDSS frees and allocates the data object's buffers on its analysis stream
            self.work[home] = d["home_work"] = self.work.get(home, 0) + 1
        self.pending.add(stream)
        A = self._live(self.matrices, a, "matrix")
        self.calls.append((C.Phase(phase).name, cfg))
        mats = self._systems(A)
        if phase == C.Phase.SYMBOLIC_FACTORIZATION:
            assert d["phase"] == "reordered", "symbolic factorization before reordering"
        if phase in (C.Phase.ANALYSIS, C.Phase.REORDERING, C.Phase.SYMBOLIC_FACTORIZATION):
            d.update(phase="reordered" if phase == C.Phase.REORDERING else "analysed", n=[m.shape[0] for m in mats],
                     mtype=A["mtype"], factors=None)
            return
        if phase in (C.Phase.FACTORIZATION, C.Phase.REFACTORIZATION):
            assert d["phase"] in ("analysed", "factorized"), "factorization before analysis"
            global_pivots = cfg[C.ConfigParam.REORDERING_ALG] in (C.ReorderingAlg.BTF_COLAMD, C.ReorderingAlg.COLAMD)
            factors, npiv, info = [], 0, 0
            for m in mats:
                f = m.copy()
                scale = max(np.abs(m).max(), 1.0) * 1e-15
                empty = np.flatnonzero(~np.any(m != 0, axis=1))
                if (self.empty_rows == "nan" and empty.size and A["mtype"] == C.MatrixType.GENERAL and
                        cfg[C.ConfigParam.MATCHING_ALG] != C.MatchingAlg.NONE):
                    factors.append(_NanFactor(m))  # scaled by 1/0: no pivot is small, none is counted
                    continue
                if A["mtype"] == C.MatrixType.GENERAL and not global_pivots:
                    zero = np.flatnonzero(np.diag(m) == 0)
                    npiv += zero.size
                    f[zero, zero] = scale  # a static perturbation, as pivoting restricted to supernodes does
                deficit = m.shape[0] - np.linalg.matrix_rank(f.astype(np.complex128)) if m.size else 0
                if deficit:  # singular even so: pivots perturbed by any pivoting
                    npiv += deficit
                    f = f + scale * np.eye(m.shape[0])
                # an LL^T of complex SPD (symmetric) values has no Hermitian check to fail: it solves A = A^T
                if A["mtype"] == C.MatrixType.HPD or (A["mtype"] == C.MatrixType.SPD and not np.iscomplexobj(m)):
                    try:
                        np.linalg.cholesky(m.astype(np.complex128))
                        if np.abs(m - m.conj().T).max() > 1e-6 * np.abs(m).max():
                            info = info or 1
                    except np.linalg.LinAlgError:
                        info = info or 1
                factors.append(f if global_pivots or A["mtype"] != C.MatrixType.GENERAL else _no_pivot_lu(f))
            d.update(phase="factorized", factors=factors, npivots=npiv, info=info,
                     lu_nnz=int(sum(np.count_nonzero(m) for m in mats)))
            return
        assert phase == C.Phase.SOLVE and d["phase"] == "factorized", "solve before factorization"
        X, B = self._live(self.matrices, x, "matrix"), self._live(self.matrices, b, "matrix")
        assert x != b, "the solution's matrix object must be its own"
        for f, xs, bs in zip(d["factors"], self._dense(X), self._dense(B)):
            if isinstance(f, (_no_pivot_lu, _NanFactor)):
                sol = f.solve(bs)
            else:
                sol = np.linalg.solve(f.astype(np.complex128), bs.astype(np.complex128))
            xs[...] = sol if np.iscomplexobj(xs) else sol.real

    def cudssDataGet(self, handle, data, param, ptr, nbytes):
        d = self._live(self.datas, data, "data")
        param = C.DataParam(param)
        n = d.get("n", [0])[0]
        f = (d.get("factors") or [None])[0]
        values = {
            C.DataParam.INFO: np.array([d.get("info", 0)], np.int32),
            C.DataParam.NPIVOTS: np.array([d.get("npivots", 0)], np.int32),
            C.DataParam.LU_NNZ: np.array([d.get("lu_nnz", 0)], np.int64),
            C.DataParam.INERTIA: np.array([0, 0], np.int32),
            C.DataParam.NSUPERPANELS: np.array([3], np.int32),
            C.DataParam.MEMORY_ESTIMATES: np.arange(16, dtype=np.int64) * 1024,
            C.DataParam.PERM_REORDER_ROW: np.arange(n, dtype=np.int32)[::-1].copy(),
            C.DataParam.PERM_REORDER_COL: np.arange(n, dtype=np.int32)[::-1].copy(),
            C.DataParam.PERM_ROW: np.arange(n, dtype=np.int32),
            C.DataParam.PERM_COL: np.arange(n, dtype=np.int32),
            C.DataParam.PERM_MATCHING: np.arange(n, dtype=np.int32),
        }
        diag = f.diag if isinstance(f, (_no_pivot_lu, _NanFactor)) else (None if f is None else np.diag(f))
        if param == C.DataParam.DIAG:
            value = diag.copy()
        elif param in (C.DataParam.SCALE_ROW, C.DataParam.SCALE_COL):
            value = np.ones(n, dtype=np.real(diag).dtype)
        else:
            value = values[param]
        assert nbytes == value.nbytes, f"{param.name}: {nbytes} bytes asked, cuDSS has {value.nbytes}"
        ctypes.memmove(ptr, value.ctypes.data, value.nbytes)
        return value.nbytes


def _as_cudss_reads(dense, mt, mv):
    """The matrix cuDSS factorizes from the CSR ``dense`` of type ``mt`` and view ``mv``. cuDSS reads CSR as
    CSR (no transposition: a Hermitian matrix is not conjugated). SYMMETRIC and SPD mean A = A^T for complex
    values too (the triangle is mirrored without conjugation; a Hermitian matrix needs HERMITIAN or HPD), and a
    FULL view of those two types is read through its upper triangle: the H200 run of a complex Hermitian
    positive definite system given as SPD gave conjugate solutions for the FULL and the LOWER views."""
    if mt == C.MatrixType.GENERAL:
        return dense
    herm = mt in (C.MatrixType.HERMITIAN, C.MatrixType.HPD)
    if mv == C.MatrixViewType.FULL:
        if herm:
            return dense
        mv = C.MatrixViewType.UPPER
    tri = np.triu(dense) if mv == C.MatrixViewType.UPPER else np.tril(dense)
    strict = tri - np.diag(np.diag(tri))
    return tri + (strict.conj().T if herm else strict.T)


class _no_pivot_lu:
    """LU without pivoting, as elimination within supernodes does: tiny (perturbed) pivots make it grow."""

    def __init__(self, m):
        u = m.astype(np.complex128).copy()
        n = u.shape[0]
        lo = np.eye(n, dtype=np.complex128)
        for k in range(n - 1):
            lo[k + 1:, k] = u[k + 1:, k] / u[k, k]
            u[k + 1:, :] -= np.outer(lo[k + 1:, k], u[k, :])
        self.l, self.u = lo, np.triu(u)
        self.diag = np.diag(m).copy()

    def solve(self, b):
        import scipy.linalg as la

        y = la.solve_triangular(self.l, b.astype(np.complex128), lower=True, unit_diagonal=True)
        return la.solve_triangular(self.u, y)

    def __array__(self, dtype=None, copy=None):
        return np.diag(self.diag) if dtype is None else np.diag(self.diag).astype(dtype)


class _NanFactor:
    """The factors of a matrix whose empty row a scaling made NaN: every solution is NaN."""

    def __init__(self, m):
        self.diag = np.full(m.shape[0], np.nan, dtype=m.dtype)

    def solve(self, b):
        return np.full(b.shape, np.nan, dtype=np.complex128)


class HostAllocator:
    """'Device' memory from NumPy buffers, registered with the fake."""

    def __init__(self, fake):
        self.fake = fake

    def memalloc(self, size):
        buf = np.empty(max(1, size), np.uint8)
        self.fake.device.append((buf.ctypes.data, buf.ctypes.data + buf.nbytes, buf))
        return MemoryPointer(buf.ctypes.data, size, lambda: None)


NAMES = [n for n in dir(FakeCudss) if n.startswith("cudss")]


def install(monkeypatch, fake: FakeCudss) -> None:
    """Point the binding, the CUDA copies and the device checks at the fake."""
    from cumath._core import cuda
    from cumath.sparse.advanced._backends import cudss as backend

    for name in NAMES:
        monkeypatch.setattr(C, name, getattr(fake, name))

    def copy(dst, src, n, kind, stream, what=""):
        fake.copies.append((what, kind, n))
        ctypes.memmove(dst, src, n)

    from cumath.sparse.advanced._backends import _cudss_lifetime as lifetime

    monkeypatch.setattr(cuda, "copy", copy)
    monkeypatch.setattr(cuda, "memset", lambda ptr, value, n, stream: ctypes.memset(ptr, value, n))
    monkeypatch.setattr(cuda, "synchronize", fake.synchronize)
    monkeypatch.setattr(cuda, "require_device", lambda device_id: None)
    monkeypatch.setattr(cuda, "set_device", fake.set_device)
    for name, fn in (("cudaGetDevice", fake.get_device), ("cudaEventCreateWithFlags", fake.event_create),
                     ("cudaEventRecord", fake.event_record), ("cudaEventSynchronize", fake.event_synchronize),
                     ("cudaEventDestroy", fake.event_destroy), ("cudaStreamWaitEvent", fake.stream_wait_event)):
        monkeypatch.setattr(lifetime.cudart, name, fn, raising=False)  # the runtime calls of cuDSS's lifetimes
    monkeypatch.setattr(backend, "find_library", lambda name: "/nonexistent/libcudss.so.1")
    from cumath.sparse.advanced._backends import _cudss_checks as checks

    def launch(bits, device_id, ptr, words, epoch, word_ptr, stream):  # the NaN/inf scan of the pivots
        fake.scans.append((ptr, words, bits))
        x = from_pointer(ptr, (words,), (1,), "float32" if bits == 32 else "float64")
        if not np.isfinite(x).all():
            ctypes.c_uint64.from_address(word_ptr).value = epoch
        return True

    monkeypatch.setattr(checks, "launch", launch)

    def launch_dominance(dtype, device_id, indptr, indices, values, n, epoch, flag, stream):  # as the kernel does
        from cumath.sparse.advanced._traits import DiagonalDominance

        p = from_pointer(indptr, (n + 1,), (1,), "int32").copy()
        nnz = int(p[-1])
        j = from_pointer(indices, (nnz,), (1,), "int32").copy()
        v = from_pointer(values, (nnz,), (1,), dtype).copy()
        fake.dominance_checks.append(n)
        if not DiagonalDominance(p, j, n)(v):
            ctypes.c_uint64.from_address(flag).value = epoch
        return True

    monkeypatch.setattr(checks, "launch_dominance", launch_dominance)

    def launch_pattern(indptr_dtype, index_dtype, device_id, indptr, indices, n, lines, seen, words, stream):
        p = from_pointer(indptr, (n + 1,), (1,), indptr_dtype).astype(np.int64)
        j = from_pointer(indices, (max(int(p[-1]), 0),), (1,), index_dtype).astype(np.int64)
        mark = from_pointer(seen, (n,), (1,), "uint8")
        w = from_pointer(words, (4,), (1,), "uint64")
        fake.pattern_checks.append(n)
        empty = np.flatnonzero(np.diff(p) <= 0)
        if lines:
            mark[np.flatnonzero(np.diff(p) > 0)] = 1
        elif empty.size:  # as the kernel does: n - (first empty row), and their count
            w[0], w[1] = max(int(w[0]), n - int(empty[0])), int(w[1]) + empty.size
        j = j[(j >= 0) & (j < n)]
        mark[j] = 1
        gaps = np.flatnonzero(mark == 0)
        if gaps.size:
            w[2], w[3] = max(int(w[2]), n - int(gaps[0])), int(w[3]) + gaps.size
        return True

    monkeypatch.setattr(checks, "launch_pattern", launch_pattern)


def device(x) -> Operand:
    """A NumPy array presented as an operand in GPU 0's memory."""
    item = x.dtype.itemsize
    return Operand(x, x.__array_interface__["data"][0], x.shape, tuple(s // item for s in x.strides), x.dtype.name,
                   0, "numpy")


def device_csr(m, batch=None):
    """A SciPy CSR matrix (or a stack of same-nnz ones, ``batch``) presented as a CSR on GPU 0."""
    from cumath.sparse._operand import CSR

    if batch is None:
        return CSR(m, device(m.indptr), device(m.indices), device(m.data), m.shape, m.nnz)
    indptr = np.stack([x.indptr for x in batch])
    indices = np.stack([x.indices for x in batch])
    data = np.stack([x.data for x in batch])
    keep = (indptr, indices, data)
    csr = CSR(keep, device(indptr), device(indices), device(data), (len(batch),) + batch[0].shape, batch[0].nnz)
    return csr
