"""How a dense direct solver runs, chosen once per plan: where the operands live versus where the engine runs
(the kinds of ``_core/executors.py``; ``FACTORIES`` maps each kind to its class).

- HostExecutor: host operands, the CPU engine (LAPACK), on the caller's arrays and plan-owned host buffers.
- DeviceExecutor: GPU operands, a GPU engine (cuSOLVER or the batched routines), on GPU memory.
- HostToDeviceExecutor: host operands, a GPU engine: a and b cross the bus once each into device mirrors owned
  by the plan, which are factorized and solved in place; x (and the factors with inplace_a) come back.
- DeviceToHostExecutor: GPU operands, the CPU engine, through host mirrors.

Every executor has ``factorize(ops, stream)``, ``solve(ops, stream)`` and ``execute(ops, stream)`` (both, as
the stateless call runs them: one fused LAPACK call per system where there is one, and one read-back of
``info`` on the GPU). ``ops`` maps 'a' and 'b' to Operands. A factorization reads the library's ``info`` back
(raising SingularMatrixError) and the magnitudes of the pivots where the engine can give them
(IllConditionedWarning). A and b are never written unless inplace_a / inplace_b ask for it.
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np

from ..._core.executors import DeviceMirror, HostMirror, host_array
from ..._core.frameworks.numpy import from_pointer, view as host_view
from ..._core.layout import dense_strides
from ..._core.logging import format_bytes
from ..._core.operand import Operand, adapter
from ..._core.recycle import Recycler
from ._backends import Problems, create_engine, kernel_enabled
from ._traits import (KERNEL_UP_TO, IllConditionedWarning, batch_offsets, check_infos, choose_batch_method,
                      dense_offsets, factor_layout, ill_conditioned, rhs_layout, staging_perm, x_perm)

__all__ = ["FACTORIES", "HostExecutor", "DeviceExecutor", "HostToDeviceExecutor", "DeviceToHostExecutor"]

logger = logging.getLogger(__name__)


def _matrix_perm(nb: int, order: str) -> tuple:
    """The perm of a batch of matrices whose matrices have memory order ``order`` ('C' or 'F')."""
    return tuple(range(nb + 2)) if order == "C" else tuple(range(nb)) + (nb + 1, nb)


class _SameSpace:
    """What the host and the device executors share: the factor storage (the caller's a in place, or a dense
    buffer of the plan), the right-hand side storage (b in place, a new x, or a buffer copied into b), the
    engine and its programs. Subclasses give the copies of their memory space."""

    on_gpu = False

    def __init__(self, geom, ops, options, placement, log, allocator=None, stream=None, *, scratch=False,
                 problem=None, method="cpu"):
        a, b = ops["a"], ops["b"]
        self.geom, self.log, self.problem = geom, log, problem
        self.factor = f = factor_layout(geom, a.strides, options.inplace_a, not self.on_gpu, scratch)
        self.rhs = r = rhs_layout(geom, b.strides, options.inplace_b, scratch)
        self.package, self.device_id = a.package, a.device_id
        self.adapter = adapter(a.package) if not scratch else None
        item = np.dtype(geom.dtype).itemsize
        nb = len(geom.batch_shape)
        self.x_perm = x_perm(geom)
        self.x_strides = dense_strides(geom.x_shape, self.x_perm)
        self._buffers = []
        self.fbuf = self.xbuf = None
        self.recycler = None
        self.engine = None
        self.base = None  # the address of the factors of the last factorization
        self._reads_a = False  # the engine copies a into the factor buffer itself, as it factorizes
        self._reads_b = False  # the engine reads b where it is and writes x, as it solves
        try:
            if f.in_place:
                a_offsets = batch_offsets(geom.batch_shape, a.strides[:nb]) * item
            else:
                self.fbuf = self._buffer(a.shape, _matrix_perm(nb, f.order), allocator, stream)
                a_offsets = dense_offsets(geom, geom.n * geom.n) * item
            if r.in_place:
                b_offsets = batch_offsets(geom.batch_shape, b.strides[:nb]) * item
            else:
                b_offsets = dense_offsets(geom, geom.n * geom.nrhs) * item
                # a batch on the host solves in a buffer of the plan (copied into each new result), so the engine's
                # programs keep their addresses whatever the caller does with the results
                if r.copy_back or (not self.on_gpu and geom.count > 1):
                    self.xbuf = self._buffer(geom.x_shape, self.x_perm, allocator, stream)
                if not r.copy_back:
                    new = self.adapter.empty_factory(geom.x_shape, geom.dtype, a.device_id, self.x_perm)
                    nbytes = math.prod(geom.x_shape) * item
                    self.recycler = Recycler(a.package, new, self.adapter.pointer, nbytes, device=self.on_gpu)
            if not geom.empty:
                hint = a.ptr if f.in_place else self._ptr(self.fbuf)
                # (a Cholesky factor copied back into a for inplace_a must carry a's other triangle too: the
                # buffer is filled from a then, not by an engine that writes the factor's triangle alone)
                own_fill = f.in_place or (f.copy_back and geom.kind != "lu")
                source = None if own_fill else (batch_offsets(geom.batch_shape, a.strides[:nb]) * item,
                                                a.strides[-2], a.strides[-1])
                b_source = None if r.in_place else (batch_offsets(geom.batch_shape, b.strides[:nb]) * item,
                                                    b.strides[-1] if geom.vector else b.strides[-2],
                                                    0 if geom.vector else b.strides[-1])
                problems = Problems(geom, f, r, a_offsets, b_offsets, hint, source, b_source)
                self.engine = create_engine(method, problems, placement, options, log, allocator, stream)
                self._reads_a = getattr(self.engine, "reads_a", False)
                self._reads_b = getattr(self.engine, "reads_b", False)
        except BaseException:
            self.free()
            raise
        for note in (f.note, r.note):
            if note and log.isEnabledFor(logging.INFO):
                log.info("solver copy: %s", note)

    @property
    def nbytes(self) -> int:
        kept = 0 if self.recycler is None else self.recycler.held_bytes
        return sum(self._nbytes(b) for b in self._buffers) + kept + (0 if self.engine is None else self.engine.nbytes)

    # ------------------------------------------------------------------------------------------ phases
    def _a_base(self, a: Operand) -> int:
        """The address of the factor storage, with a copied in when the factorization runs in a buffer."""
        if self.factor.in_place:
            return a.ptr
        if self._reads_a:
            self.engine.source = a.ptr
        else:
            self._fill(self.fbuf, a, self.factor.conj_in)
        return self._ptr(self.fbuf)

    def _x(self, b: Operand):
        """(the object solve returns, the storage the solve runs in, its address), with b copied in."""
        conj = self.factor.conj_rhs
        if self.rhs.in_place:
            if conj:
                self._conj(b.obj)
            return b.obj, b.obj, b.ptr
        if self._reads_b:
            self.engine.b_source = b.ptr
        if self.xbuf is not None:  # the result (b with inplace_b, else a new array) is made by _finish
            if not self._reads_b:
                self._fill(self.xbuf, b, conj)
            return None, self.xbuf, self._ptr(self.xbuf)
        x, ptr = self.recycler.take(self._stream)
        if not self._reads_b:
            self._fill(x, b, conj, ptr)
        return x, x, ptr

    def _after_factor(self, a: Operand, base: int) -> None:
        """Read the factorization's status (raise for a failed system), warn for numerically singular ones, and
        copy the factors into a for inplace_a through the buffer."""
        engine = self.engine
        infos, pivots = engine.read_back(base)
        if infos is not None:  # (None: a GPU engine judged every system fine on the device)
            finite = None if self.factor.in_place else (  # (a in place: overwritten, its factor is all there is)
                lambda: adapter(a.package).finite_per_system(a.obj, self.geom.count))
            check_infos(infos, self.geom, engine.factor_routine, engine.error_class, self.problem, pivots, finite)
        if pivots is not None:
            msg = ill_conditioned(pivots, self.geom, self.problem)
            if msg is not None:
                warnings.warn(msg, IllConditionedWarning, stacklevel=4)
        if self.factor.copy_back:
            self._store(a, self.fbuf, self.factor.conj_in)
        self.base = base

    def _finish(self, b: Operand, result, storage):
        if self.factor.conj_rhs:
            self._conj(storage)
        if self.rhs.copy_back:
            self._store(b, storage, False)
            return b.obj
        if self.xbuf is not None and storage is self.xbuf:  # solved in the plan's buffer: a new result
            result, ptr = self.recycler.take(self._stream)
            self._copy_out(result, ptr, storage)
        return result

    def _nbytes(self, buf) -> int:
        return buf.nbytes

    def free(self) -> None:
        if self.recycler is not None:
            self.recycler.clear()
        if self.engine is not None:
            self.engine.free()
            self.engine = None
        self._buffers = []
        self.fbuf = self.xbuf = None


class HostExecutor(_SameSpace):
    """Host operands, the CPU engine (see the module's docstring)."""

    _stream = None

    def _buffer(self, shape, perm, allocator, stream):
        buf = host_array(shape, self.geom.dtype, perm)
        self._buffers.append(buf)
        return buf

    def _ptr(self, buf) -> int:
        return buf.ctypes.data

    def _fill(self, dst, src: Operand, conj: bool, ptr=None) -> None:
        if type(dst) is not np.ndarray:  # a result of another package (a PyTorch CPU tensor)
            dst = from_pointer(ptr, self.geom.x_shape, self.x_strides, self.geom.dtype)
        if conj:
            np.conjugate(host_view(src), out=dst)
        else:
            np.copyto(dst, host_view(src))

    def _conj(self, x) -> None:
        v = x if type(x) is np.ndarray else host_view(self.adapter.wrap(x))
        np.conjugate(v, out=v)

    def _copy_out(self, x, ptr: int, buf) -> None:
        dst = x if type(x) is np.ndarray else from_pointer(ptr, self.geom.x_shape, self.x_strides, self.geom.dtype)
        np.copyto(dst, buf)

    def _store(self, target: Operand, buf, conj: bool) -> None:
        if conj:
            np.conjugate(buf, out=host_view(target))
        else:
            np.copyto(host_view(target), buf)

    def factorize(self, ops, stream=None) -> None:
        if self.engine is None:
            return
        a = ops["a"]
        base = self._a_base(a)
        self.engine.run(self.engine.factor_program(base))
        self._after_factor(a, base)

    def solve(self, ops, stream=None):
        b = ops["b"]
        result, storage, ptr = self._x(b)
        if self.engine is not None:
            self.engine.run(self.engine.solve_program(self.base, ptr))
        return self._finish(b, result, storage)

    def execute(self, ops, stream=None):
        a, b = ops["a"], ops["b"]
        result, storage, ptr = self._x(b)
        engine = self.engine
        if engine is None:
            return self._finish(b, result, storage)
        base = self._a_base(a)
        prog = engine.fused_program(base, ptr)
        if engine.direct:  # the stateless call's hot path: the library is called from here
            call = getattr(prog, "call", None)
            if call is not None:  # every call as one native call (run_table)
                call()
            else:
                for fn, args in prog:
                    fn(*args)
        else:
            engine.run(prog)
        self._after_factor(a, base)
        return self._finish(b, result, storage)


class DeviceExecutor(_SameSpace):
    """GPU operands, a GPU engine: copies by the operands' package (buffers are package arrays), workspaces,
    pivots and pointer arrays from the plan's allocator (in the engine)."""

    on_gpu = True
    _stream = None

    def __init__(self, geom, ops, options, placement, log, allocator=None, stream=None, *, scratch=False,
                 problem=None, method=None):
        self._stream = stream
        if method is None:
            method = choose_batch_method(geom.kind, geom.n, geom.count, options.batch_method, kernel_enabled())
            if log.isEnabledFor(logging.DEBUG):
                log.debug("solver batch method: %s (asked %r; kernels for LU up to order %d%s)", method,
                          options.batch_method, KERNEL_UP_TO["lu"], "" if kernel_enabled() else ", off by "
                          "CUMATH_SOLVER_KERNEL")
        super().__init__(geom, ops, options, placement, log, allocator, stream, scratch=scratch, problem=problem,
                         method=method)

    def _buffer(self, shape, perm, allocator, stream):
        buf = self.adapter.empty(shape, self.geom.dtype, self.device_id, perm)
        self._buffers.append(buf)
        return buf

    def _ptr(self, buf) -> int:
        return self.adapter.pointer(buf)

    def _nbytes(self, buf) -> int:
        return math.prod(buf.shape) * np.dtype(self.geom.dtype).itemsize

    def _fill(self, dst, src: Operand, conj: bool, ptr=None) -> None:
        self.adapter.copy_into(dst, src.obj)  # (GPU layouts never ask for a conjugation)

    def _a_base(self, a: Operand) -> int:
        """As the base class's, but a dense a of the buffer's order is copied by the engine where it can scan it
        for NaN and inf on the way (``copy_input``: one pass over a, not a copy and then a scan)."""
        copy = getattr(self.engine, "copy_input", None)
        if self.factor.in_place or copy is None:
            return super()._a_base(a)
        base = self._ptr(self.fbuf)
        dense = (a.dtype == self.geom.dtype and a.device_id == self.engine.device_id
                 and a.is_dense_in(_matrix_perm(len(self.geom.batch_shape), self.factor.order)))
        if not copy(base, a.ptr if dense else None):
            self._fill(self.fbuf, a, False)
        return base

    def _conj(self, x) -> None:  # pragma: no cover - factor_layout(can_conj=False) never plans it
        raise AssertionError("a GPU plan conjugated its right-hand sides")

    def _store(self, target: Operand, buf, conj: bool) -> None:
        self.adapter.copy_into(target.obj, buf)

    def _copy_out(self, x, ptr: int, buf) -> None:  # pragma: no cover - GPU plans solve in the result itself
        self.adapter.copy_into(x, buf)

    def _run(self, prog) -> None:
        for fn, args in prog:
            status = fn(*args)
            if status:
                self.engine.failed(status, fn)

    def factorize(self, ops, stream) -> None:
        engine = self.engine
        if engine is None:
            return
        self._stream = stream
        engine.set_stream(stream)
        a = ops["a"]
        base = self._a_base(a)
        self._run(engine.factor_program(base))
        self._after_factor(a, base)

    def solve(self, ops, stream):
        self._stream = stream
        b = ops["b"]
        result, storage, ptr = self._x(b)
        if self.engine is None:
            return result
        self.engine.set_stream(stream)
        self._run(self.engine.solve_program(self.base, ptr))
        return self._finish(b, result, storage)

    def execute(self, ops, stream):
        self._stream = stream
        a, b = ops["a"], ops["b"]
        result, storage, ptr = self._x(b)
        engine = self.engine
        if engine is None:
            return result
        engine.set_stream(stream)
        base = self._a_base(a)
        for fn, args in engine.fused_program(base, ptr):
            status = fn(*args)
            if status:
                engine.failed(status, fn)
        self._after_factor(a, base)
        return self._finish(b, result, storage)


def _mirror_operand(ptr: int, shape, strides, dtype: str, device_id) -> Operand:
    return Operand(None, ptr, tuple(shape), tuple(strides), dtype, device_id, "numpy")


def _as_mirrored(op: Operand, mirror) -> Operand:
    """``op`` with the mirror's strides when it is dense in the mirror's order and differs only on axes of size 1
    (the same memory: the copy needs no reordering)."""
    if op.strides != mirror.strides and op.is_dense_in(mirror.perm):
        return Operand(op.obj, op.ptr, op.shape, mirror.strides, op.dtype, op.device_id, op.package, op.readonly)
    return op


class _Crossing:
    """What both crossing executors share: a's mirror ``am`` and b's (and x's) mirror ``xm``, factorized and
    solved in place by the same-space executor ``inner`` over them; subclasses move the data across the bus
    (``_a_in``, ``_a_out`` for inplace_a, ``_b_in``, ``_x_out``)."""

    am = xm = inner = None

    @property
    def nbytes(self) -> int:
        return self.am.nbytes + self.xm.nbytes + self.inner.nbytes

    @property
    def engine(self):
        return self.inner.engine

    def factorize(self, ops, stream) -> None:
        a = ops["a"]
        self._a_in(a, stream, True)
        self.inner.factorize(self.mops, stream)
        if self.options.inplace_a:
            self._a_out(a, stream)

    def solve(self, ops, stream):
        b = ops["b"]
        self._b_in(b, stream)
        self.inner.solve(self.mops, stream)
        return self._x_out(b, stream)

    def execute(self, ops, stream):
        a, b = ops["a"], ops["b"]
        self._a_in(a, stream, False)
        self._b_in(b, stream)
        self.inner.execute(self.mops, stream)
        if self.options.inplace_a:
            self._a_out(a, stream)
        return self._x_out(b, stream)

    def free(self) -> None:
        for name in ("inner", "xm", "am"):  # (host mirrors hold NumPy arrays: nothing to free)
            free = getattr(self.__dict__.pop(name, None), "free", None)
            if free is not None:
                free()


class HostToDeviceExecutor(_Crossing):
    """Host operands, a GPU engine: a and b are uploaded into device mirrors of the plan (a in its own memory
    order where the plan allows, b column-major), factorized and solved there in place, x downloaded into a new
    host array of the operands' package (or into b), and the factors into a with inplace_a."""

    def __init__(self, geom, ops, options, placement, log, allocator, stream, *, problem=None):
        a = ops["a"]
        self.geom, self.options = geom, options
        self.adapter = adapter(a.package)
        dev = placement.device
        try:
            self.am = DeviceMirror(a.shape, geom.dtype, staging_perm(geom, a.strides, options.inplace_a), allocator,
                                   stream, "solver matrix a")
            self.xm = DeviceMirror(geom.x_shape, geom.dtype, x_perm(geom), allocator, stream, "solver b and x")
            self.mops = {"a": _mirror_operand(self.am.ptr, a.shape, self.am.strides, geom.dtype, dev),
                         "b": _mirror_operand(self.xm.ptr, geom.x_shape, self.xm.strides, geom.dtype, dev)}
            self.inner = DeviceExecutor(geom, self.mops, options, placement, log, allocator, stream, scratch=True,
                                        problem=problem)
        except BaseException:
            self.free()
            raise
        log.info("host operands on GPU %d: staging buffers of %s", dev, format_bytes(self.am.nbytes + self.xm.nbytes))

    def _a_in(self, a: Operand, stream, wait: bool) -> None:
        self.am.upload(_as_mirrored(a, self.am), stream)

    def _a_out(self, a: Operand, stream) -> None:
        self.am.download(host_view(a), stream)

    def _b_in(self, b: Operand, stream) -> None:
        self.xm.upload(_as_mirrored(b, self.xm), stream)

    def _x_out(self, b: Operand, stream):
        if self.options.inplace_b:
            self.xm.download(host_view(b), stream)
            return b.obj
        g = self.geom
        x = self.adapter.empty(g.x_shape, g.dtype, None, x_perm(g))
        self.xm.download(from_pointer(self.adapter.pointer(x), g.x_shape, self.xm.strides, g.dtype), stream)
        return x


class DeviceToHostExecutor(_Crossing):
    """GPU operands, the CPU engine: a and b are fetched into host mirrors of the plan, factorized and solved
    there in place by LAPACK, and x stored into a new GPU array of the operands' package (or into b), the factors
    into a with inplace_a."""

    def __init__(self, geom, ops, options, placement, log, allocator, stream, *, problem=None):
        a = ops["a"]
        self.geom, self.options = geom, options
        self.adapter = adapter(a.package)
        self.device_id = a.device_id
        self.am = HostMirror(a.shape, geom.dtype, staging_perm(geom, a.strides, options.inplace_a), "solver matrix a")
        self.xm = HostMirror(geom.x_shape, geom.dtype, x_perm(geom), "solver b and x")
        self.mops = {"a": self.am.operand, "b": self.xm.operand}
        self.inner = HostExecutor(geom, self.mops, options, placement, log, scratch=True, problem=problem)

    def _a_in(self, a: Operand, stream, wait: bool) -> None:
        self.am.fetch(a, self.adapter, stream, wait=wait)

    def _a_out(self, a: Operand, stream) -> None:
        self.am.store(a.obj, self.adapter, self.device_id, stream)

    def _b_in(self, b: Operand, stream) -> None:
        self.xm.fetch(b, self.adapter, stream)

    def _x_out(self, b: Operand, stream):
        A, g = self.adapter, self.geom
        target = b.obj if self.options.inplace_b else A.empty(g.x_shape, g.dtype, self.device_id, x_perm(g))
        self.xm.store(target, A, self.device_id, stream)
        return target


FACTORIES = {"host": HostExecutor, "device": DeviceExecutor, "host_to_device": HostToDeviceExecutor,
             "device_to_host": DeviceToHostExecutor}
