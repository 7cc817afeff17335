"""How a generic matmul runs, chosen once per plan: where the operands live versus where the engine runs
(the kinds of ``_core/executors.py``; ``FACTORIES`` maps each kind to its class here).

- HostExecutor: host operands, CPU BLAS, on the caller's arrays (copies only where the plan asks for them).
- DeviceExecutor: GPU operands, cuBLAS, on the caller's arrays.
- HostToDeviceExecutor: host operands, cuBLAS: staged through device mirrors owned by the plan.
- DeviceToHostExecutor: GPU operands, CPU BLAS: staged through host mirrors owned by the plan.

Every executor takes ``ops`` (a dict 'a', 'b', 'c' -> Operand or None) and returns the result array: a new
array of the operands' package, or c itself in place. Plans of one general product on the operands themselves
call the library function directly from ``execute`` (the engine's ``gemm_call``): the hot path of a cached
stateless call has no Python frame between the executor and the library. The GPU executors also run in
phases (``prepare`` / the engine's ``runs`` / ``finish``, host staging adds ``download``) for explicit batches.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from ..._core import cuda
from ..._core.executors import DeviceMirror, HostMirror, host_array
from ..._core.frameworks.numpy import from_pointer, strided_empty, view as host_view, wrap as host_wrap
from ..._core.layout import natural_perm
from ..._core.logging import format_bytes
from ..._core.operand import Operand, adapter
from ..._core.overlap import extents_overlap
from ..._core.recycle import Recycler
from ...memory import allocate

__all__ = ["FACTORIES", "HostExecutor", "DeviceExecutor", "HostToDeviceExecutor", "DeviceToHostExecutor",
           "staging_perm"]

logger = logging.getLogger(__name__)


def staging_perm(shape, strides) -> tuple:
    """The memory order in which an operand crosses between host and GPU: its own (when that keeps its
    matrices in the two innermost axes), else C order."""
    perm = natural_perm(strides)
    inner = [a for a in perm if shape[a] != 1][-2:]
    nd = len(shape)
    if nd >= 2 and not set(inner) <= {nd - 1, nd - 2}:
        return tuple(range(nd))
    return tuple(perm)


def _log_notes(layout, log):
    for note in layout.notes:
        log.info("copy: %s", note)


def _diag_name(geom):
    return None if geom.kind != "dgmm" else "AB"[geom.structured]


def _gemm_call(layout, engine):
    """The engine's direct call when the plan is one general product on the operands themselves (or c in
    place), with nothing to prepare; else None."""
    if (len(layout.steps) != 1 or layout.c_into_d or layout.copy_back or layout.workspace
            or any(layout.preps[n].mode != "direct" for n in "ab") or engine.threaded):
        return None
    return engine.gemm_call(layout.steps[0])


def _apart_from_c(ops):
    """``ops`` with a and b replaced by copies of the same layout where their memory meets c's (which the
    product writes), as numpy.matmul(out=) computes; the copies are logged."""
    c = ops["c"]
    a, b = ops["a"], ops["b"]
    if not (extents_overlap(a, c) or extents_overlap(b, c)):
        return ops
    ops = dict(ops)
    for name in "ab":
        op = ops[name]
        if extents_overlap(op, c):
            copy, ptr = strided_empty(op.shape, op.strides, op.dtype)
            np.copyto(copy, host_view(op))
            logger.info("matmul: %s overlaps c, which receives the result in place: %s read from a copy (%s)",
                        name, name, format_bytes(op.nbytes))
            ops[name] = Operand(copy, ptr, op.shape, op.strides, op.dtype, None, "numpy")
    return ops


class HostExecutor:
    """Host operands, CPU BLAS on the caller's arrays. ``result``: a host mirror the result is always written
    into (the device-to-host executor's staging), else results are new arrays of the operands' package,
    recycled once dropped."""

    def __init__(self, geom, layout, ops, engine, log=logger, allocator=None, stream=None, staged=None, *,
                 result: HostMirror | None = None):
        self.geom, self.layout, self.engine = geom, layout, engine
        self.runs = engine.compile(layout.steps)
        package = ops["a"].package
        self.adapter = adapter(package)
        self.bufs = {}
        for name in "ab":
            prep = layout.preps[name]
            if prep.mode in ("dense", "dense_conj"):
                self.bufs[name] = host_array(ops[name].shape, geom.dtype, prep.perm)
        self.w = np.empty(layout.workspace, dtype=geom.dtype) if layout.workspace else None
        self._diag = _diag_name(geom)
        self.d_is_c = layout.d_is_c
        self.recycler = None
        if result is not None:
            self._take = lambda: (result.array, result.operand.ptr)
        elif not layout.d_is_c:
            new = self.adapter.empty_factory(geom.result_shape, geom.dtype, None, layout.d_perm)
            nbytes = math.prod(geom.result_shape) * np.dtype(geom.dtype).itemsize
            self.recycler = Recycler(package, new, self.adapter.pointer, nbytes, device=False)
            self._take = self.recycler.take
        self.args = engine.scalars.args
        self.call = _gemm_call(layout, engine)
        _log_notes(layout, log)

    @property
    def nbytes(self) -> int:
        kept = 0 if self.recycler is None else self.recycler.nbytes
        return sum(b.nbytes for b in self.bufs.values()) + (0 if self.w is None else self.w.nbytes) + kept

    def execute(self, ops, stream=None):
        call = self.call
        if self.d_is_c:  # c receives the result: an a or b whose memory meets c's is read from a copy
            ops = _apart_from_c(ops)
        if call is not None:  # the hot path: one BLAS call on the operands, into c or a (recycled) result
            if self.d_is_c:
                c = ops["c"]
                result, d = c.obj, c.ptr
            else:
                result, d = self._take()
            fn, head, alpha, first, ldf, second, lds, beta, ldd, _ = call
            args = self.args
            fn(*head, args[alpha], ops[first].ptr, ldf, ops[second].ptr, lds, args[beta], d, ldd)
            return result
        layout = self.layout
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
                ptrs[name.upper()] = buf.ctypes.data
        c = ops.get("c")
        if self.d_is_c:
            d = result = c.obj
            ptrs["D"] = c.ptr
        else:
            d, ptrs["D"] = self._take()
            if layout.c_into_d:
                self.adapter.copy_into(d, c.obj)
            result = d
        if self.w is not None:
            ptrs["W"] = self.w.ctypes.data
        if self._diag is not None:
            ptrs["X"] = ptrs[self._diag]
        engine = self.engine
        token = engine.enter()
        try:
            for run in self.runs:
                run(ptrs)
        finally:
            engine.exit(token)
        if layout.copy_back:
            self.adapter.copy_into(c.obj, d)
            return c.obj
        return result

    def free(self):
        if self.recycler is not None:
            self.recycler.clear()
        self.engine.free()


class _DeviceBuffers:
    """What the executors that hold device buffers share: the buffers' release, the engine's, and the copy of a
    result into an in-place c that the library could not describe."""

    def _copied_back(self, ops, result):
        if self.layout.copy_back:
            c = ops["c"]
            self.adapter.copy_into(c.obj, result)
            return c.obj
        return result

    def _free_buffers(self):
        for buf in self._buffers:
            buf.free()
        self._buffers = []

    def free(self):
        self._free_buffers()
        self.engine.free()


class DeviceExecutor(_DeviceBuffers):
    """GPU operands, cuBLAS on the caller's arrays (package copies where the plan asks for dense ones)."""

    def __init__(self, geom, layout, ops, engine, log, allocator, stream, staged=None):
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
            self._free_buffers()
            raise
        self._diag = _diag_name(geom)
        self.d_is_c = layout.d_is_c
        if not layout.d_is_c:
            self._new_d = self.adapter.empty_factory(geom.result_shape, geom.dtype, self.device_id, layout.d_perm)
        # the engine reads a and b where they are and writes a new result
        self._simple = (not layout.d_is_c and not layout.c_into_d and not layout.copy_back and self.w is None
                        and self._diag is None and all(layout.preps[n].mode == "direct" for n in "ab"))
        self._pointer = self.adapter.pointer
        self.args = engine.scalars.args
        self.call = _gemm_call(layout, engine)
        self._what = f"gemm on GPU {self.device_id}"
        _log_notes(layout, log)

    def _allocate(self, allocator, count, stream):
        buf = allocate(allocator, max(1, count) * self.itemsize, stream)
        self._buffers.append(buf)
        self.nbytes += buf.size
        return buf

    def execute(self, ops, stream):
        self.engine.set_stream(stream)
        call = self.call
        if self.d_is_c and (extents_overlap(ops["a"], ops["c"]) or extents_overlap(ops["b"], ops["c"])):
            raise ValueError("c receives the result in place (inplace=True), but its memory overlaps a's or b's on "
                             "the GPU; pass a copy of that operand (or of c), or use inplace=False")
        if call is not None:  # the hot path: one cuBLAS call on the operands, into c or a new result
            if self.d_is_c:
                c = ops["c"]
                d, ptr = c.obj, c.ptr
            else:
                d = self._new_d()
                ptr = self._pointer(d)
            fn, head, alpha, first, ldf, second, lds, beta, ldd, check = call
            args = self.args
            status = fn(*head, args[alpha], ops[first].ptr, ldf, ops[second].ptr, lds, args[beta], ptr, ldd)
            if status:
                check(status, self._what)
            return d
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
            if not op.is_dense_in(prep.perm):
                tmp = A.empty(op.shape, self.geom.dtype, self.device_id, prep.perm)
                A.copy_into(tmp, op.obj)
                keep.append(tmp)
                src_ptr = A.pointer(tmp)
            else:
                src_ptr = op.ptr
            if prep.mode == "dense_conj":
                dst = self.cbufs[name].device_ptr
                engine.conj_copy(src_ptr, dst, math.prod(op.shape))
                src_ptr = dst
            ptrs[name.upper()] = src_ptr
        c = ops.get("c")
        if self.d_is_c:
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
        return self._copied_back(ops, state[0])



def _host_target(op: Operand, mirror: DeviceMirror):
    """A NumPy view of the host operand ``op`` with the mirror's strides (a download straight into it), or
    None when ``op`` is not dense in the mirror's order."""
    if not op.is_dense_in(mirror.perm):
        return None
    if op.strides == mirror.strides:
        return host_view(op)
    return from_pointer(op.ptr, op.shape, mirror.strides, op.dtype)


class HostToDeviceExecutor(_DeviceBuffers):
    """Host operands, cuBLAS: each operand crosses the bus once, through a device mirror in the layout the plan
    reads, the result once back. Conjugated copies are made on the host (into plan-owned arrays) while
    staging."""

    def __init__(self, geom, layout, ops, engine, log, allocator, stream, staged):
        self.geom, self.layout, self.engine = geom, layout, engine
        self.adapter = adapter(ops["a"].package)
        self.itemsize = np.dtype(geom.dtype).itemsize
        self.runs = engine.compile(layout.steps)
        self.mirrors = {}  # 'a', 'b' -> DeviceMirror
        self.conj = {}  # 'a', 'b' -> (host array, its Operand): the conjugated copy that is uploaded
        self._buffers = []
        self.w = None
        try:
            for name in "ab":
                prep = layout.preps[name]
                if prep.mode == "skip":
                    continue
                perm = staged[name] if prep.mode == "direct" else prep.perm
                self.mirrors[name] = self._mirror(ops[name].shape, perm, allocator, stream, f"matmul operand {name}")
                if prep.mode == "dense_conj":
                    arr = host_array(ops[name].shape, geom.dtype, perm)
                    self.conj[name] = (arr, host_wrap(arr))
            what = "matmul c and result" if layout.d_is_c or layout.c_into_d else "matmul result"
            d_perm = staged["c"] if layout.d_is_c else layout.d_perm
            self.d = self._mirror(geom.result_shape, d_perm, allocator, stream, what)
            if layout.workspace:
                self.w = allocate(allocator, layout.workspace * self.itemsize, stream)
                self._buffers.append(self.w)
        except BaseException:
            self._free_buffers()
            raise
        c = ops.get("c")
        # an in-place c whose layout is not the mirror's receives the result through a host array of the plan
        self.c_staging = None
        if layout.d_is_c and not c.is_dense_in(self.d.perm):
            self.c_staging = host_array(c.shape, geom.dtype, self.d.perm)
        self.nbytes = sum(m.nbytes for m in self.mirrors.values()) + self.d.nbytes + (0 if self.w is None else
                                                                                       self.w.size)
        self._diag = _diag_name(geom)
        log.info("host operands on GPU %d: staging buffers of %s", engine.device_id, format_bytes(self.nbytes))
        _log_notes(layout, log)

    def _mirror(self, shape, perm, allocator, stream, what) -> DeviceMirror:
        m = DeviceMirror(shape, self.geom.dtype, perm, allocator, stream, what)
        self._buffers.append(m)
        return m

    def execute(self, ops, stream):
        self.engine.set_stream(stream)
        ptrs, state = self.prepare(ops, stream)
        for run in self.runs:
            run(ptrs)
        self.download(state, stream)
        cuda.synchronize(stream)
        return self.finish(ops, state)

    def prepare(self, ops, stream):
        """Stage the operands (and c) into the plan's device mirrors (on the engine's stream, set by the
        caller); returns (pointers, state)."""
        layout, A = self.layout, self.adapter
        ptrs = {"A": 0, "B": 0}
        for name, mirror in self.mirrors.items():
            op = ops[name]
            conj = self.conj.get(name)
            if conj is not None:
                np.conjugate(host_view(op), out=conj[0])
                op = conj[1]
            mirror.upload(op, stream)
            ptrs[name.upper()] = mirror.ptr
        c = ops.get("c")
        d = self.d
        ptrs["D"] = d.ptr
        if layout.d_is_c:
            d.upload(c, stream)
            target = c.obj
            into = self.c_staging if self.c_staging is not None else _host_target(c, d)
        else:
            target = A.empty(self.geom.result_shape, self.geom.dtype, None, layout.d_perm)
            result = A.wrap(target)
            if layout.c_into_d:
                A.copy_into(target, c.obj)
                d.upload(result, stream)
            into = _host_target(result, d)
        if self.w is not None:
            ptrs["W"] = self.w.device_ptr
        if self._diag is not None:
            ptrs["X"] = ptrs[self._diag]
        return ptrs, (target, into)

    def download(self, state, stream) -> None:
        """Queue the copy of the result to the host (the caller then synchronises the stream)."""
        self.d.download(state[1], stream, wait=False)

    def finish(self, ops, state):
        """After the stream was synchronised: host-side copies into c; returns the result."""
        target = state[0]
        if self.c_staging is not None:
            np.copyto(host_view(ops["c"]), self.c_staging)
            return target
        return self._copied_back(ops, target)  # (a staged c is always describable; kept for safety)



class DeviceToHostExecutor:
    """GPU operands, CPU BLAS: operands are fetched into host mirrors owned by the plan, the CPU plan runs on
    them (writing into a host mirror of the result, or of c in place), and the result is stored back into a
    new array of the operands' package (or into c)."""

    def __init__(self, geom, layout, ops, engine, log, allocator, stream, staged):
        self.geom, self.layout = geom, layout
        self.adapter = adapter(ops["a"].package)
        self.device_id = ops["a"].device_id
        self.mirrors = {name: HostMirror(op.shape, geom.dtype, staged[name], f"matmul operand {name}")
                        for name, op in ops.items() if op is not None}
        self.host_ops = {name: (None if name not in self.mirrors else self.mirrors[name].operand)
                         for name in ops}
        in_place = layout.d_is_c or layout.copy_back
        self.out = self.mirrors["c"] if in_place else HostMirror(geom.result_shape, geom.dtype, layout.d_perm,
                                                                 "matmul result")
        self.host = HostExecutor(geom, layout, self.host_ops, engine, log, result=None if in_place else self.out)
        self.in_place = in_place
        self.nbytes = self.host.nbytes + sum(m.nbytes for m in self.mirrors.values()) + (
            0 if in_place else self.out.nbytes)

    @property
    def engine(self):
        return self.host.engine

    def execute(self, ops, stream):
        A = self.adapter
        for name, mirror in self.mirrors.items():
            mirror.fetch(ops[name], A, stream, wait=False)
        cuda.synchronize(stream)
        self.host.execute(self.host_ops)
        out = self.out
        if self.in_place:
            target = ops["c"].obj
        else:
            target = A.empty(self.geom.result_shape, self.geom.dtype, self.device_id, out.perm)
        out.store(target, A, self.device_id, stream, wait=False)
        return target

    def free(self):
        self.host.free()


FACTORIES = {"host": HostExecutor, "device": DeviceExecutor, "host_to_device": HostToDeviceExecutor,
             "device_to_host": DeviceToHostExecutor}
