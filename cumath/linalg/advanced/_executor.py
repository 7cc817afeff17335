"""How a planned matmul reaches its operands, chosen once when it is planned (the kinds of ``_core/executors``):

    device          GPU operands: the variants read the caller's arrays; results are the package's arrays,
                    recycled on the hot path once dropped (``_core/recycle``); a variant per operand layout
    host_to_device  host operands (NumPy, PyTorch CPU): the plan's device mirrors (``DeviceMirror``) of a, b,
                    c, the epilog inputs, the result and the auxiliary outputs, uploaded and downloaded per call
                    (each copy logged); one variant, planned for the mirrors' layouts

Both run a variant's general path through one template (``run``: operands in, result and outputs out, the
library or kernel call); the hot path (``Matmul.execute``) bypasses them for device variants that allow it.
"""

from __future__ import annotations

import logging
import math

from ..._core import cuda
from ..._core.dtypes import ITEMSIZE
from ..._core.executors import DeviceMirror
from ..._core.layout import dense_strides, natural_perm
from ..._core.logging import format_bytes
from ..._core.operand import Operand, wrap_operand
from ..._core.recycle import Recycler
from ..._core.streams import ordered
from ...errors import OperandMismatchError
from ._epilogs import input_dtype
from ._traits import matmul_geometry
from ._variant import plan_variant, variant_key

__all__ = ["DeviceExecutor", "StagingExecutor", "EXECUTORS"]

_FLOATING = dict.fromkeys(("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"), True)


def _input_mismatch(k, op, old) -> str:
    return (f"the new epilog input {k!r} has shape {list(op.shape)}, strides {list(op.strides)} and dtype "
            f"{op.dtype}; the plan is for {list(old.shape)}, {list(old.strides)} and {old.dtype}")


class _Executor:
    """The variants of one plan, the epilog inputs as the GPU reads them, and the general path's template."""

    #: results come back through the executor's staging (the call waits for the GPU; no hot path)
    staged = False

    def __init__(self, ctx, settings, stream, scales):
        self.ctx, self.settings, self.stream, self.scales = ctx, settings, stream, scales
        self.variants: dict = {}
        self.current = None
        self.inputs: dict = {}  # epilog input name -> device Operand (what the variants point at)

    # ---------------------------------------------------------------------------------------- planning
    def _not_planned(self, k):
        spec = self.settings.spec
        return ValueError(f"epilog input {k!r} was not planned; the epilog {spec.epilog.name} takes "
                          f"{list(spec.inputs)}")

    def _as_read(self, k, op: Operand) -> Operand:
        """Epilog input ``k`` in the dtype cuBLASLt reads for this product: ``op`` itself, or, for another real
        floating-point dtype, one logged copy of it where it is (same shape, dense in its own memory order, made
        on the plan's stream). Other dtypes (integers, complex) stay as they are: the epilog checks refuse them."""
        want = input_dtype(k, self.settings.bias_dtype, self.ctx.dt.d)
        if op.dtype == want or not (_FLOATING.get(op.dtype) and _FLOATING.get(want)):
            return op
        pkg = self.ctx.pkg

        def convert():
            copy = pkg.empty(op.shape, want, op.device_id, natural_perm(op.strides))
            pkg.copy_into(copy, op.obj)
            return copy

        copy = ordered(op.package, op.device_id, self.stream, True, False, convert)
        view = pkg.wrap(copy)
        self.ctx.log.info("epilog input %r of dtype %s is converted to %s (what cuBLASLt reads for this product): "
                          "one copy of %s; pass %s to avoid it", k, op.dtype, want, format_bytes(view.nbytes), want)
        return Operand(copy, view.ptr, view.shape, view.strides, want, op.device_id, op.package)

    def epilog_pointers(self) -> tuple:
        """(bias, auxiliary input) device addresses (0 where the epilog takes none)."""
        spec = self.settings.spec
        bias = self.inputs.get("bias")
        aux = self.inputs.get(f"{spec.aux_in}_aux") if spec.aux_in else None
        return (bias.ptr if bias is not None else 0), (aux.ptr if aux is not None else 0)

    def _file(self, v, a, b, c, complete):
        """``complete()`` a new variant (freed if that fails), keep it under its layout and make it current."""
        try:
            complete()
        except BaseException:
            v.free()
            raise
        self.variants[variant_key(a, b, c, min(v.alignments))] = v
        self.current = v
        return v

    def bind_scales(self, scales) -> None:
        for v in self.variants.values():
            scales.bind(v.problem)

    def set_stream(self, stream) -> None:
        self.stream = stream
        for v in self.variants.values():
            v.set_stream(stream)

    # ---------------------------------------------------------------------------------------- one call
    def run(self, v, ops, stream, algorithm, alpha, beta):
        """The general path: operands in, the call, result and auxiliary outputs out; ``(result, aux)``."""
        keep = []  # temporaries alive until the call is queued (stream-ordered allocators)
        args = v.call_args(stream, algorithm)
        self.prepare(v, ops, args, stream, keep)
        d, d_ptr = self.new_result(v, ops)
        if v.copies_c(algorithm):
            self.copy_c(v, ops, d, d_ptr, stream, keep)
        outputs = self.new_outputs(v, stream) if v.has_outputs else {}
        v.set_outputs(args, d_ptr, {k: p for k, (_obj, p) in outputs.items()} if outputs else None)
        v.launch(args, algorithm, self.c_pointer(ops["c"]), alpha, beta)
        del keep
        return self.finish(v, ops, d, outputs, stream)

    def scratch_args(self, v, ops, scratch: int, stream, keep) -> list:
        """The argument list of autotuning runs: operands in, c copied into the scratch result ``scratch``."""
        args = v.call_args(stream)
        self.prepare(v, ops, args, stream, keep)
        if v.form.c_in_d:
            self.copy_c_to(v, ops, scratch, stream, keep)
        v.set_outputs(args, scratch, {})
        return args

    def c_pointer(self, c) -> int:
        return c.ptr if c is not None else 0

    # ------------------------------------------------------------------------------------------ lifetime
    @property
    def nbytes(self) -> int:
        return sum(v.ws_size for v in self.variants.values())

    def free(self) -> None:
        for v in self.variants.values():
            v.free()
        self.variants = {}
        self.current = None


class DeviceExecutor(_Executor):
    """GPU operands: a variant per operand layout (and pointer alignment), bound to the caller's arrays."""

    def __init__(self, ctx, settings, stream, scales, ops, inputs):
        super().__init__(ctx, settings, stream, scales)
        self.recyclers: dict = {}  # result memory order -> Recycler, shared by the variants that make such results
        self.inputs = {k: self._as_read(k, op) for k, op in inputs.items()}

    def plan(self, ops):
        return self._add(ops["a"], ops["b"], ops["c"])

    def _add(self, a, b, c):
        v = plan_variant(self.ctx, self.settings, a, b, c, inputs=self.inputs, scales=self.scales)
        return self._file(v, a, b, c, lambda: v.build_args(self.stream, a, b, c, self._recycler(v)))

    def _recycler(self, v):
        """The results of variants whose results have ``v``'s memory order: shared, so that a loop whose results
        change the operands' alignment (another variant) still reuses the same two results."""
        r = self.recyclers.get(v.d_perm)
        if r is None:
            ctx = self.ctx
            shape, dtype = v.geom.result_shape, ctx.dt.d
            r = self.recyclers[v.d_perm] = Recycler(
                ctx.package, ctx.pkg.empty_factory(shape, dtype, ctx.device, v.d_perm), ctx.pkg.pointer,
                math.prod(shape) * ITEMSIZE[dtype], device=True, keep=2)
        return r

    def attach(self, v, a, b, c):
        """The variant for operands ``a``, ``b``, ``c`` (device Operands), bound to them: ``v`` when it fits their
        layout and alignment (one tuple comparison), else another planned one, else a new one."""
        key = (a.strides, b.strides, c.strides if c is not None else None)
        ptrs = a.ptr | b.ptr | (c.ptr if c is not None else 0)
        if v is not None and key == v.layout and not ptrs & v.align_mask:
            v.bind(a, b, c)
            return v
        spec = self.settings.spec
        for (ka, kb, kc, align), w in self.variants.items():
            if (ka, kb, kc) == key and not ptrs & (align - 1):
                if spec.aux_in or spec.bias:
                    w.bind_epilog(*self.epilog_pointers())
                w.bind(a, b, c)
                self.current = w
                return w
        self.ctx.log.info("the operands' layout changed (a %s, b %s): planning for it", list(a.strides),
                          list(b.strides))
        return self._add(a, b, c)

    def reset_inputs(self, given: dict, checked: bool) -> None:
        """New epilog inputs; the current variant is pointed at them when they moved (another variant is when
        it is switched to)."""
        old, ctx = self.inputs, self.ctx
        ops = dict(old)
        moved = False
        for k, x in given.items():
            if k not in old:
                raise self._not_planned(k)
            op = x if type(x) is Operand else wrap_operand(x, f"epilog input {k!r}")
            if checked:
                if op.package != ctx.package or op.device_id != ctx.device:
                    raise OperandMismatchError(f"epilog input {k!r} must be a {ctx.package} array on the operands' "
                                               f"device")
            op = self._as_read(k, op)
            if checked:
                o = old[k]
                if (tuple(op.shape), op.strides, op.dtype) != (tuple(o.shape), o.strides, o.dtype):
                    raise ValueError(_input_mismatch(k, op, o))
            ops[k] = op
            moved = moved or op.ptr != old[k].ptr
        self.inputs = ops
        if moved and self.current is not None:
            self.current.bind_epilog(*self.epilog_pointers())

    # ---------------------------------------------------------------------------------------- one call
    def prepare(self, v, ops, args, stream, keep):
        """Operands cuBLASLt cannot read as they are: a dense row-major copy of their full (broadcast) batch."""
        for name in v.copies:
            tmp = self._dense_copy(v, ops[name], name)
            keep.append(tmp)
            args[v.a_slot if name == "a" else v.b_slot] = self.ctx.pkg.pointer(tmp)

    def _dense_copy(self, v, op, name):
        pkg, geom = self.ctx.pkg, v.geom
        matrix = getattr(geom, name)
        shape = geom.batch_shape + (matrix.rows, matrix.cols)
        tmp = pkg.empty(shape, op.dtype, self.ctx.device, None)
        pkg.copy_into(tmp, op.obj.reshape(_promoted(op.shape, name)))
        if self.ctx.log.isEnabledFor(logging.INFO):
            self.ctx.log.info("operand %s (strides %s) is copied to a dense layout for cuBLASLt", name,
                              list(op.strides))
        return tmp

    def new_result(self, v, ops):
        if self.ctx.options.inplace:
            c = ops["c"]
            return c.obj, c.ptr
        d = v.results.new()
        return d, self.ctx.pkg.pointer(d)

    def copy_c(self, v, ops, d, d_ptr, stream, keep):
        """c, broadcast to the result's shape, into the result (which cuBLASLt then updates in place)."""
        self.ctx.pkg.copy_into(d, ops["c"].obj)

    def copy_c_to(self, v, ops, ptr, stream, keep):
        """c, broadcast to the result's shape, into device memory at ``ptr`` (autotuning's scratch result)."""
        ctx = self.ctx
        shape = v.geom.result_shape
        tmp = ctx.pkg.empty(shape, ctx.dt.d, ctx.device, v.d_perm)
        ctx.pkg.copy_into(tmp, ops["c"].obj)
        keep.append(tmp)
        cuda.copy(ptr, ctx.pkg.pointer(tmp), math.prod(shape) * ITEMSIZE[ctx.dt.d], cuda.D2D, stream)

    def new_outputs(self, v, stream) -> dict:
        ctx = self.ctx
        pkg, out = ctx.pkg, {}
        for name, (shape, strides, dtype, _ld, _bs) in v.aux.items():
            obj = pkg.empty(shape, dtype, ctx.device, natural_perm(strides))
            ptr = pkg.pointer(obj)
            if name.endswith("_aux"):  # cuBLASLt leaves the padding rows of its ld alone: zero them
                cuda.memset(ptr, 0, math.prod(shape) * ITEMSIZE[dtype], stream)
            out[name] = (obj, ptr)
        if ctx.options.result_amax:
            obj = pkg.empty((1,), "float32", ctx.device, (0,))
            out["result_amax"] = (obj, pkg.pointer(obj))
        return out

    def finish(self, v, ops, d, outputs, stream):
        return d, {k: obj for k, (obj, _p) in outputs.items()}

    @property
    def nbytes(self) -> int:
        return super().nbytes + sum(r.held_bytes for r in self.recyclers.values())

    def free(self) -> None:
        for r in self.recyclers.values():
            r.clear()
        self.recyclers = {}
        super().free()


class StagingExecutor(_Executor):
    """Host operands on the GPU: a, b (and c, unless it is broadcast: then it is copied into the result) and
    the epilog inputs live in device mirrors owned by the plan, which one variant reads; the result and the
    auxiliary outputs are computed into mirrors and downloaded into new host arrays of the operands' package."""

    staged = True

    def __init__(self, ctx, settings, stream, scales, ops, inputs):
        super().__init__(ctx, settings, stream, scales)
        self.mirrors: dict = {}  # name -> (DeviceMirror, promoted shape when it holds the full batch, else None)
        self.views: dict = {}  # name -> the mirror as a device Operand
        self.input_mirrors: dict = {}  # epilog input name -> DeviceMirror
        self.input_ops: dict = {}  # epilog input name -> the host Operand uploaded per call
        self.dense: tuple = ()  # operands whose mirror holds their full batch, dense and row-major
        self.d = None
        self.outputs: dict = {}  # auxiliary output name -> DeviceMirror
        try:
            self._mirror_operands(ops)
            for k, op in inputs.items():
                op = self._as_read(k, op)
                m = self._mirror(k, op.shape, op.dtype, natural_perm(op.strides), "host epilog input")
                self.input_mirrors[k], self.input_ops[k] = m, op
                self.inputs[k] = self._view(m, op.shape, m.strides, op)
        except BaseException:
            self.free()
            raise

    def _mirror(self, what, shape, dtype, perm, role="host operand") -> DeviceMirror:
        ctx = self.ctx
        m = DeviceMirror(shape, dtype, perm, ctx.allocator, self.stream, f"matmul {what}")
        ctx.log.info("%s %s: a device buffer of %s", role, what, format_bytes(max(1, m.nbytes)))
        return m

    def _view(self, m, shape, strides, op) -> Operand:
        return Operand(None, m.ptr, tuple(shape), strides, op.dtype, self.ctx.device, op.package)

    def _mirror_operands(self, ops):
        a, b, c = ops["a"], ops["b"], ops["c"]
        opts = self.ctx.options
        g = matmul_geometry(a.shape, a.strides, b.shape, b.strides, c.shape if c is not None else None,
                            c.strides if c is not None else None, inplace=opts.inplace)
        self.c_mirrored = c is not None and (opts.inplace or not matmul_geometry(
            a.shape, _dense(a.shape), b.shape, _dense(b.shape), c.shape, c.strides).c_copy)
        dense = []
        for name, op in (("a", a), ("b", b), ("c", c)):
            if op is None or (name == "c" and not self.c_mirrored):
                continue
            m = getattr(g, name)
            if m.copy:  # a broadcast or strided batch: materialised on the host per call
                mirror = self._mirror(name, g.batch_shape + (m.rows, m.cols), op.dtype, None)
                self.mirrors[name] = (mirror, _promoted(op.shape, name))
                self.views[name] = self._view(mirror, op.shape, _dense(op.shape), op)
                dense.append(name)
            else:
                mirror = self._mirror(name, op.shape, op.dtype, natural_perm(op.strides))
                self.mirrors[name] = (mirror, None)
                self.views[name] = self._view(mirror, op.shape, mirror.strides, op)
        self.dense = tuple(dense)

    def plan(self, ops):
        views, ctx = self.views, self.ctx
        a, b = views["a"], views["b"]
        c = views.get("c", ops["c"])  # a c copied into the result is planned as the host array it is
        v = plan_variant(ctx, self.settings, a, b, c, inputs=self.inputs, scales=self.scales, dense=self.dense,
                         kernels=False)

        def complete():  # the argument list, and mirrors for what the variant computes
            v.build_args(self.stream, a, b, c, None)
            if not ctx.options.inplace:
                self.d = self._mirror("result", v.geom.result_shape, ctx.dt.d, v.d_perm, "the host")
            for name, (shape, strides, dtype, _ld, _bs) in v.aux.items():
                m = self.outputs[name] = self._mirror(name, shape, dtype, natural_perm(strides), "host output")
                if name.endswith("_aux"):  # padding cuBLASLt never writes reads as zeros (once: the mirror stays)
                    cuda.memset(m.ptr, 0, m.nbytes, self.stream)
            if ctx.options.result_amax:
                self.outputs["result_amax"] = self._mirror("result_amax", (1,), "float32", (0,), "host output")

        return self._file(v, a, b, c, complete)

    def attach(self, v, a, b, c):
        """The variant reads the mirrors, whatever the layout of the host operands (uploads reorder them)."""
        return self.current

    def reset_inputs(self, given: dict, checked: bool) -> None:
        ops = dict(self.input_ops)
        for k, x in given.items():
            if k not in ops:
                raise self._not_planned(k)
            op = x if type(x) is Operand else wrap_operand(x, f"epilog input {k!r}")
            o = ops[k]
            if op.device_id is not None or op.package != o.package:
                raise OperandMismatchError(f"epilog input {k!r} must be a {o.package} array on the operands' device")
            op = self._as_read(k, op)
            if tuple(op.shape) != tuple(o.shape) or op.dtype != o.dtype:  # any layout: uploads reorder
                raise ValueError(_input_mismatch(k, op, o))
            ops[k] = op
        self.input_ops = ops

    # ---------------------------------------------------------------------------------------- one call
    def prepare(self, v, ops, args, stream, keep):
        """Upload a, b (c) and the epilog inputs into their mirrors."""
        pkg = self.ctx.pkg
        for name, (mirror, promoted) in self.mirrors.items():
            op = ops[name]
            if promoted is not None:  # the full batch, materialised on the host
                full = pkg.empty(mirror.shape, mirror.dtype, None, None)
                pkg.copy_into(full, op.obj.reshape(promoted))
                keep.append(full)
                op = pkg.wrap(full)
            self._upload(mirror, op, stream, keep)
        for k, mirror in self.input_mirrors.items():
            self._upload(mirror, self.input_ops[k], stream, keep)

    def _upload(self, mirror, op, stream, keep):
        """``op`` into ``mirror``; an operand of another layout is reordered on the host by its own package first
        (which knows every dtype it has, bfloat16 and FP8 included)."""
        if op.strides != mirror.strides and mirror.nbytes:
            pkg = self.ctx.pkg
            tmp = pkg.empty(mirror.shape, mirror.dtype, None, mirror.perm)
            pkg.copy_into(tmp, op.obj)
            keep.append(tmp)
            if self.ctx.log.isEnabledFor(logging.INFO):
                self.ctx.log.info("host copy of the %s into the staging layout (%s)", mirror.what,
                                  format_bytes(mirror.nbytes))
            op = pkg.wrap(tmp)
        mirror.upload(op, stream)

    def new_result(self, v, ops):
        if self.ctx.options.inplace:
            return None, self.mirrors["c"][0].ptr
        return None, self.d.ptr

    def _host_c(self, v, ops, keep):
        """c broadcast to the result's shape, in the result's memory order, on the host."""
        pkg = self.ctx.pkg
        tmp = pkg.empty(v.geom.result_shape, self.ctx.dt.d, None, v.d_perm)
        pkg.copy_into(tmp, ops["c"].obj)
        keep.append(tmp)
        return tmp

    def copy_c(self, v, ops, d, d_ptr, stream, keep):
        """c, broadcast to the result's shape on the host, into the result's mirror."""
        self.d.upload(self.ctx.pkg.wrap(self._host_c(v, ops, keep)), stream)

    def copy_c_to(self, v, ops, ptr, stream, keep):
        tmp = self._host_c(v, ops, keep)
        nbytes = math.prod(v.geom.result_shape) * ITEMSIZE[self.ctx.dt.d]
        cuda.copy(ptr, self.ctx.pkg.pointer(tmp), nbytes, cuda.H2D, stream, "matmul c")

    def c_pointer(self, c) -> int:
        return self.views["c"].ptr if "c" in self.views else 0

    def new_outputs(self, v, stream) -> dict:
        return {k: (m, m.ptr) for k, m in self.outputs.items()}

    def finish(self, v, ops, d, outputs, stream):
        """Download the result (into c, in place) and the auxiliary outputs into new host arrays of the operands'
        package, made in their mirrors' memory order."""
        pkg = self.ctx.pkg
        if self.ctx.options.inplace:
            c, m = ops["c"], self.mirrors["c"][0]
            res = c.obj
            if c.strides == m.strides:
                m.download_into(c.ptr, stream, wait=False)
            else:  # through a host array of the mirror's layout, copied into c by its package
                tmp = pkg.empty(m.shape, m.dtype, None, m.perm)
                m.download_into(pkg.pointer(tmp), stream)
                pkg.copy_into(res, tmp)
        else:
            m = self.d
            res = pkg.empty(m.shape, m.dtype, None, m.perm)
            m.download_into(pkg.pointer(res), stream, wait=False)
        aux = {}
        for name, m in self.outputs.items():
            host = aux[name] = pkg.empty(m.shape, m.dtype, None, m.perm)
            m.download_into(pkg.pointer(host), stream, wait=False)
        cuda.synchronize(stream)
        return res, aux

    # ------------------------------------------------------------------------------------------ lifetime
    def _all_mirrors(self):
        yield from (m for m, _p in self.mirrors.values())
        yield from self.input_mirrors.values()
        yield from self.outputs.values()
        if self.d is not None:
            yield self.d

    @property
    def nbytes(self) -> int:
        return super().nbytes + sum(m.nbytes for m in self._all_mirrors())

    def free(self) -> None:
        super().free()
        for m in list(self._all_mirrors()):
            m.free()
        self.mirrors, self.input_mirrors, self.outputs, self.d = {}, {}, {}, None


def _dense(shape):
    return dense_strides(shape, range(len(shape)))


def _promoted(shape, name) -> tuple:
    """An operand's shape with numpy.matmul's promotion of a 1-D a to (1, K) and of a 1-D b to (K, 1)."""
    shape = tuple(shape)
    if len(shape) > 1:
        return shape
    return (1,) + shape if name == "a" else shape + (1,)


#: the executor of each kind (``_core.executors.kind_of``): the engine is always on the GPU
EXECUTORS = {"device": DeviceExecutor, "host_to_device": StagingExecutor}
