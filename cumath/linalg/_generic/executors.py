"""How a generic matmul runs, chosen once per plan: where the operands live versus where the engine runs.

- HostExecutor: host operands, CPU BLAS, on the caller's arrays (copies only where the plan asks for them).
- DeviceExecutor: GPU operands, cuBLAS, on the caller's arrays.
- HostToDeviceExecutor: host operands, cuBLAS: staged through device buffers owned by the plan.
- DeviceToHostExecutor: GPU operands, CPU BLAS: staged through host arrays owned by the plan.

Every executor takes ``ops`` (a dict 'a', 'b', 'c' -> Operand or None) and returns the result array: a new
array of the operands' package, or c itself in place.
"""

from __future__ import annotations

import logging
import math
import platform
import sys

import numpy as np

from ..._core import cuda
from ..._core.frameworks.numpy import view as host_view
from ..._core.layout import inverse_perm, natural_perm
from ..._core.logging import format_bytes
from ..._core.operand import adapter
from ...memory import allocate

__all__ = ["make_executor", "staging_perm"]

logger = logging.getLogger(__name__)

_REFCOUNTS = platform.python_implementation() == "CPython"
_getrefcount = sys.getrefcount


def staging_perm(shape, strides) -> tuple:
    """The memory order in which an operand crosses between host and GPU: its own (when that keeps its
    matrices in the two innermost axes), else C order."""
    perm = natural_perm(strides)
    inner = [a for a in perm if shape[a] != 1][-2:]
    nd = len(shape)
    if nd >= 2 and not set(inner) <= {nd - 1, nd - 2}:
        return tuple(range(nd))
    return tuple(perm)


def _host_array(shape, dtype, perm):
    return np.empty([shape[p] for p in perm], dtype=dtype).transpose(inverse_perm(perm))


def _ptr(x) -> int:
    return x.__array_interface__["data"][0]


def _log_notes(layout, log):
    for note in layout.notes:
        log.info("copy: %s", note)


def _diag_name(geom):
    return None if geom.kind != "dgmm" else "AB"[geom.structured]


class HostExecutor:
    """Host operands, CPU BLAS on the caller's arrays."""

    def __init__(self, geom, layout, ops, engine, log=logger):
        self.geom, self.layout, self.engine = geom, layout, engine
        self.runs = engine.compile(layout.steps)
        package = ops["a"].package
        self.adapter = adapter(package)
        self.bufs = {}
        self.nbytes = 0
        for name in "ab":
            prep = layout.preps[name]
            if prep.mode in ("dense", "dense_conj"):
                self.bufs[name] = _host_array(ops[name].shape, geom.dtype, prep.perm)
                self.nbytes += self.bufs[name].nbytes
        self.w = np.empty(layout.workspace, dtype=geom.dtype) if layout.workspace else None
        self._diag = _diag_name(geom)
        self._new_d = None
        if not layout.d_is_c:
            self._new_d = self.adapter.empty_factory(geom.result_shape, geom.dtype, None, layout.d_perm)
        self._pointer = self.adapter.pointer
        # the last NumPy result, reused once nothing refers to it (as cumath.fft does): no allocation and no
        # fresh pages to fault in for large results
        self._recycle = package == "numpy" and _REFCOUNTS and not layout.d_is_c and not layout.copy_back
        self._last = None
        if self._recycle:
            self.nbytes += math.prod(geom.result_shape) * np.dtype(geom.dtype).itemsize
        self.simple = (not self.bufs and self.w is None and not layout.c_into_d and self._diag is None
                       and not layout.copy_back and all(p.mode == "direct" for p in layout.preps.values()))
        self._threads = getattr(engine, "num_threads", None) is not None
        _log_notes(layout, log)

    def execute(self, ops, stream=None):
        layout = self.layout
        if self.simple:  # the hot paths: the engine reads the operands and writes c or a new array
            if layout.d_is_c:
                c = ops["c"]
                ptrs = {"A": ops["a"].ptr, "B": ops["b"].ptr, "D": c.ptr}
                result = c.obj
            else:
                result = self._last
                if result is None or _getrefcount(result) != 3:  # self._last, result, the call's argument
                    result = self._new_d()
                    if self._recycle:
                        self._last = result
                ptrs = {"A": ops["a"].ptr, "B": ops["b"].ptr, "D": self._pointer(result)}
            if self._threads:
                self._run(ptrs)
            else:
                for run in self.runs:
                    run(ptrs)
            return result
        ptrs = {}
        for name in "ab":
            op = ops[name]
            mode = layout.preps[name].mode
            if mode == "direct":
                ptrs[name.upper()] = op.ptr
            elif mode == "skip":
                ptrs[name.upper()] = 0
            else:
                buf = self.bufs[name]
                if mode == "dense":
                    np.copyto(buf, host_view(op))
                else:
                    np.conjugate(host_view(op), out=buf)
                ptrs[name.upper()] = _ptr(buf)
        c = ops.get("c")
        if layout.d_is_c:
            d = result = c.obj
            ptrs["D"] = c.ptr
        else:
            d = self._last
            if d is None or _getrefcount(d) != 3:  # self._last, d, and the call's argument
                d = self._new_d()
                if self._recycle:
                    self._last = d
            if layout.c_into_d:
                self.adapter.copy_into(d, c.obj)
            ptrs["D"] = self._pointer(d)
            result = d
        if self.w is not None:
            ptrs["W"] = _ptr(self.w)
        if self._diag is not None:
            ptrs["X"] = ptrs[self._diag]
        self._run(ptrs)
        if layout.copy_back:
            self.adapter.copy_into(c.obj, d)
            return c.obj
        return result

    def _run(self, ptrs):
        token = self.engine.enter()
        try:
            for run in self.runs:
                run(ptrs)
        finally:
            self.engine.exit(token)

    def free(self):
        self._last = None
        self.engine.free()


class DeviceExecutor:
    """GPU operands, cuBLAS on the caller's arrays (package copies where the plan asks for dense ones)."""

    def __init__(self, geom, layout, ops, engine, log, allocator, stream):
        self.geom, self.layout, self.engine = geom, layout, engine
        self.runs = engine.compile(layout.steps)
        self.adapter = adapter(ops["a"].package)
        self.device_id = engine.device_id
        self.itemsize = np.dtype(geom.dtype).itemsize
        self._buffers = []
        self.cbufs = {}
        self.w = None
        self.nbytes = 0
        try:
            for name in "ab":
                if layout.preps[name].mode == "dense_conj":
                    self.cbufs[name] = self._allocate(allocator, math.prod(ops[name].shape), stream)
            if layout.workspace:
                self.w = self._allocate(allocator, layout.workspace, stream)
        except BaseException:
            self.free()
            raise
        self._diag = _diag_name(geom)
        if not layout.d_is_c:
            self._new_d = self.adapter.empty_factory(geom.result_shape, geom.dtype, self.device_id, layout.d_perm)
        # the common case: the engine reads a and b where they are and writes a new result
        self._simple = (not layout.d_is_c and not layout.c_into_d and not layout.copy_back and self.w is None
                        and self._diag is None and all(layout.preps[n].mode == "direct" for n in "ab"))
        self._pointer = self.adapter.pointer
        _log_notes(layout, log)

    def _allocate(self, allocator, count, stream):
        buf = allocate(allocator, max(1, count) * self.itemsize, stream)
        self._buffers.append(buf)
        self.nbytes += buf.size
        return buf

    def execute(self, ops, stream):
        self.engine.set_stream(stream)
        ptrs, state = self.prepare(ops, stream)
        for run in self.runs:
            run(ptrs)
        return self.finish(ops, state)

    def prepare(self, ops, stream):
        """Everything before the engine runs (on the engine's stream, set by the caller): copies the plan
        asks for, the result (or c), the pointers. Returns (pointers by name, state for ``finish``)."""
        if self._simple:
            d = self._new_d()
            return {"A": ops["a"].ptr, "B": ops["b"].ptr, "D": self._pointer(d)}, (d, None)
        layout, A, engine = self.layout, self.adapter, self.engine
        ptrs, keep = {}, []
        for name in "ab":
            op = ops[name]
            prep = layout.preps[name]
            if prep.mode == "direct":
                ptrs[name.upper()] = op.ptr
                continue
            if prep.mode == "skip":
                ptrs[name.upper()] = 0
                continue
            src = op
            if not op.is_dense_in(prep.perm):
                tmp = A.empty(op.shape, self.geom.dtype, self.device_id, prep.perm)
                A.copy_into(tmp, op.obj)
                keep.append(tmp)
                src_ptr = A.pointer(tmp)
            else:
                src_ptr = src.ptr
            if prep.mode == "dense_conj":
                dst = self.cbufs[name].device_ptr
                engine.conj_copy(src_ptr, dst, math.prod(op.shape))
                src_ptr = dst
            ptrs[name.upper()] = src_ptr
        c = ops.get("c")
        if layout.d_is_c:
            d = c.obj
            ptrs["D"] = c.ptr
        else:
            d = self._new_d()
            if layout.c_into_d:
                A.copy_into(d, c.obj)
            ptrs["D"] = A.pointer(d)
        if self.w is not None:
            ptrs["W"] = self.w.device_ptr
        if self._diag is not None:
            ptrs["X"] = ptrs[self._diag]
        return ptrs, (d, keep)

    def finish(self, ops, state):
        """After the engine ran: the result (c, after copying into it, for an in-place c that BLAS could not
        describe)."""
        d = state[0]
        if self.layout.copy_back:
            c = ops["c"]
            self.adapter.copy_into(c.obj, d)
            return c.obj
        return d

    def free(self):
        for buf in self._buffers:
            buf.free()
        self._buffers = []
        self.engine.free()


class HostToDeviceExecutor:
    """Host operands, cuBLAS: each operand crosses the bus once (in the layout the plan reads), the result
    once back. Conjugated copies are made on the host while staging."""

    def __init__(self, geom, layout, ops, engine, log, allocator, stream, staged):
        self.geom, self.layout, self.engine = geom, layout, engine
        self.adapter = adapter(ops["a"].package)
        self.itemsize = np.dtype(geom.dtype).itemsize
        self.runs = engine.compile(layout.steps)
        self.stage = {}  # name -> (perm, conj, nbytes)
        for name in "ab":
            prep = layout.preps[name]
            if prep.mode == "skip":
                continue
            perm = staged[name] if prep.mode == "direct" else prep.perm
            self.stage[name] = (perm, prep.mode == "dense_conj", math.prod(ops[name].shape) * self.itemsize)
        self.d_bytes = math.prod(geom.result_shape) * self.itemsize
        self.c_perm = staged.get("c")
        self._buffers = {}
        self.nbytes = 0
        try:
            for name, (_, _, nbytes) in self.stage.items():
                self._buffers[name] = allocate(allocator, max(1, nbytes), stream)
            self._buffers["d"] = allocate(allocator, max(1, self.d_bytes), stream)
            if layout.workspace:
                self._buffers["w"] = allocate(allocator, layout.workspace * self.itemsize, stream)
        except BaseException:
            self.free()
            raise
        self.nbytes = sum(b.size for b in self._buffers.values())
        self._diag = _diag_name(geom)
        log.info("host operands on GPU %d: staging buffers of %s", engine.device_id, format_bytes(self.nbytes))
        _log_notes(layout, log)

    def execute(self, ops, stream):
        self.engine.set_stream(stream)
        ptrs, state = self.prepare(ops, stream)
        for run in self.runs:
            run(ptrs)
        self.download(state, stream)
        cuda.synchronize(stream)
        return self.finish(ops, state)

    def prepare(self, ops, stream):
        """Stage the operands (and c) into the plan's device buffers (on the engine's stream, set by the
        caller); returns (pointers, state)."""
        layout, A = self.layout, self.adapter
        ptrs, keep = {}, []
        for name, (perm, conj, nbytes) in self.stage.items():
            op = ops[name]
            if conj or not op.is_dense_in(perm):
                tmp = _host_array(op.shape, self.geom.dtype, perm)
                if conj:
                    np.conjugate(host_view(op), out=tmp)
                else:
                    np.copyto(tmp, host_view(op))
                keep.append(tmp)
                src = _ptr(tmp)
            else:
                src = op.ptr
            dev = self._buffers[name].device_ptr
            cuda.copy(dev, src, nbytes, cuda.H2D, stream, f"matmul operand {name}")
            ptrs[name.upper()] = dev
        for name in "ab":
            ptrs.setdefault(name.upper(), 0)
        c = ops.get("c")
        d_dev = self._buffers["d"].device_ptr
        ptrs["D"] = d_dev
        staging = None
        if layout.d_is_c:
            target = c.obj
            if c.is_dense_in(self.c_perm):
                host_d = c.ptr
            else:
                staging = _host_array(c.shape, self.geom.dtype, self.c_perm)
                np.copyto(staging, host_view(c))
                keep.append(staging)
                host_d = _ptr(staging)
            cuda.copy(d_dev, host_d, self.d_bytes, cuda.H2D, stream, "matmul operand c")
        else:
            target = A.empty(self.geom.result_shape, self.geom.dtype, None, layout.d_perm)
            if layout.c_into_d:
                A.copy_into(target, c.obj)
                cuda.copy(d_dev, A.pointer(target), self.d_bytes, cuda.H2D, stream, "matmul operand c")
            host_d = A.pointer(target)
        if "w" in self._buffers:
            ptrs["W"] = self._buffers["w"].device_ptr
        if self._diag is not None:
            ptrs["X"] = ptrs[self._diag]
        return ptrs, (target, host_d, staging, keep)

    def download(self, state, stream) -> None:
        """Queue the copy of the result to the host (the caller then synchronises the stream)."""
        cuda.copy(state[1], self._buffers["d"].device_ptr, self.d_bytes, cuda.D2H, stream, "matmul result")

    def finish(self, ops, state):
        """After the stream was synchronised: host-side copies into c; returns the result."""
        target, _, staging, _ = state
        c = ops.get("c")
        if staging is not None:
            np.copyto(host_view(c), staging)
        elif self.layout.copy_back:  # (a staged c is always describable; kept for safety)
            self.adapter.copy_into(c.obj, target)
            return c.obj
        return target

    def free(self):
        for buf in self._buffers.values():
            buf.free()
        self._buffers = {}
        self.engine.free()


class DeviceToHostExecutor:
    """GPU operands, CPU BLAS: operands are copied to host arrays owned by the plan, the CPU plan runs on
    them, and the result is copied back to a new array of the operands' package."""

    def __init__(self, geom, layout, ops, engine, log, staged, host_ops):
        self.geom = geom
        self.adapter = adapter(ops["a"].package)
        self.device_id = ops["a"].device_id
        self.staged = staged
        self.host_ops = host_ops
        self.host = HostExecutor(geom, layout, host_ops, engine, log)
        self.nbytes = self.host.nbytes + sum(o.nbytes for o in host_ops.values() if o is not None)
        self.layout = layout

    def execute(self, ops, stream):
        A = self.adapter
        for name, hop in self.host_ops.items():
            op = ops.get(name)
            if hop is None or op is None:
                continue
            src = op
            if not op.is_dense_in(self.staged[name]):
                tmp = A.empty(op.shape, self.geom.dtype, self.device_id, self.staged[name])
                A.copy_into(tmp, op.obj)
                src_ptr = A.pointer(tmp)
            else:
                src_ptr = src.ptr
            cuda.copy(hop.ptr, src_ptr, hop.nbytes, cuda.D2H, stream, f"matmul operand {name}")
        cuda.synchronize(stream)
        res = self.host.execute(self.host_ops)
        perm = natural_perm([s // res.itemsize for s in res.strides])
        if self.layout.d_is_c or self.layout.copy_back:
            c = ops["c"]
            if c.is_dense_in(perm):
                cuda.copy(c.ptr, _ptr(res), res.nbytes, cuda.H2D, stream, "matmul result")
            else:
                tmp = A.empty(c.shape, self.geom.dtype, self.device_id, perm)
                cuda.copy(A.pointer(tmp), _ptr(res), res.nbytes, cuda.H2D, stream, "matmul result")
                A.copy_into(c.obj, tmp)
            return c.obj
        out = A.empty(self.geom.result_shape, self.geom.dtype, self.device_id, perm)
        cuda.copy(A.pointer(out), _ptr(res), res.nbytes, cuda.H2D, stream, "matmul result")
        return out

    def free(self):
        self.host.free()


def make_executor(geom, layout, ops, engine, log, *, allocator=None, stream=None, staged=None, host_ops=None):
    """Pick the executor for (where the operands live, where the engine runs)."""
    on_gpu = engine.space == "cuda"
    if on_gpu:
        if ops["a"].device_id is None:
            return HostToDeviceExecutor(geom, layout, ops, engine, log, allocator, stream, staged)
        return DeviceExecutor(geom, layout, ops, engine, log, allocator, stream)
    if ops["a"].device_id is None:
        return HostExecutor(geom, layout, ops, engine, log)
    return DeviceToHostExecutor(geom, layout, ops, engine, log, staged, host_ops)
