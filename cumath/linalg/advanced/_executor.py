"""One planned matmul for one operand layout (a *variant*): the cuBLASLt problem, its algorithms, the
precomputed argument list of ``cublasLtMatmul``, and the execution (copies, auxiliary outputs, staging).

The planner keeps one variant per operand layout it has seen, so a reset to operands of another layout (a
result fed back as an input) switches variants instead of computing with stale leading dimensions.
"""

from __future__ import annotations

import ctypes
import logging
import math
import platform
import sys

from ..._core.dtypes import ITEMSIZE
from ..._core.logging import format_bytes
from ...memory import allocate
from ._backends.cublaslt import LtProblem, raw_matmul
from ._epilogs import aux_outputs, lt_epilog

__all__ = ["Variant", "alignment", "recycling_rule"]

logger = logging.getLogger(__name__)

_DESC = None  # cublasLtMatmulDescAttributes_t, bound on first use

# Results recycled by Matmul.execute's hot path (see Variant.take): on/off, and the largest result recycled
# (a large result's allocation is cheap next to its matmul, and holding two of them would cost memory).
RECYCLE_RESULTS = True
RECYCLE_MAX_BYTES = 4 << 20
_RC = sys.getrefcount


# Each package's rule: snapshot(entry) -> what must be unchanged for the result to be reused (counts of the
# references to it and to its memory, and its metadata, which the caller may have changed in place before
# dropping it: t_(), resize_(), set_(), a shape assignment), and free(entry) -> whether it is unchanged.
# Both read the result through the same local references, so their counts agree.
def _numpy_snapshot(e):  # NumPy views and buffer exports hold a reference to the array
    x = e[0]
    return _RC(x), x.shape, x.strides, x.dtype


def _cupy_snapshot(e):  # CuPy views share the array's Memory object (and hold the array as their base)
    x = e[0]
    return _RC(x), _RC(x.data), _RC(x.data.mem), x.shape, x.strides, x.dtype


def _same(snapshot):
    return lambda e: snapshot(e) == e[3]


def _torch_rule():
    import torch

    if getattr(torch.Tensor, "_use_count", None) is None or getattr(torch._C, "_storage_Use_Count", None) is None:
        return None  # no way to see references held in C++: no recycling
    storage_count = torch._C._storage_Use_Count

    def snapshot(e):
        # Python references; references to the TensorImpl (views' bases, autograd, DLPack capsules); to the
        # storage (views, set_(), NumPy arrays over CPU storage) and to its Python object; the metadata
        x = e[0]
        s = x.untyped_storage()
        return (_RC(x), x._use_count(), storage_count(s._cdata), _RC(s), x.data_ptr(), x.stride(), x.shape,
                x.dtype, x.requires_grad)

    def free(e):  # snapshot(e) == e[3], stopping at the first difference
        x = e[0]
        b = e[3]
        if _RC(x) != b[0] or x._use_count() != b[1]:
            return False
        s = x.untyped_storage()
        return (storage_count(s._cdata) == b[2] and _RC(s) == b[3] and x.data_ptr() == b[4] and x.stride() == b[5]
                and x.shape == b[6] and x.dtype == b[7] and x.requires_grad == b[8])

    return snapshot, free


_RULES: dict = {}


def recycling_rule(package: str):
    """``(snapshot, free)`` of a recycling entry ``[result, pointer, stream, snapshot]`` for ``package``, or
    None where the package gives no reliable reference counts (its results are then never recycled)."""
    if package not in _RULES:
        rule = None
        if platform.python_implementation() == "CPython":
            if package == "torch":
                rule = _torch_rule()
            elif package in ("numpy", "cupy"):
                snap = _numpy_snapshot if package == "numpy" else _cupy_snapshot
                rule = (snap, _same(snap))
        _RULES[package] = rule
    return _RULES[package]


def _attrs():
    global _DESC
    if _DESC is None:
        from ..._bindings import cublaslt

        _DESC = cublaslt.cublasLtMatmulDescAttributes_t
    return _DESC


def alignment(ptr: int) -> int:
    """The largest power of two (up to 256) dividing ``ptr``."""
    if ptr == 0:
        return 256
    return min(256, ptr & -ptr)


class Variant:
    """Everything planned for one operand layout; ``run`` executes on the operands currently bound."""

    def __init__(self, mm, geom, form, spec, bias_stride, aux_dtype, alignments):
        self.mm, self.geom, self.form, self.spec = mm, geom, form, spec
        self.alignments = alignments
        self.align_mask = min(alignments) - 1
        dt = mm._dt
        self.transposed = form.transposed
        self.lt_epilog = lt_epilog(spec, form.transposed)
        self.aux = aux_outputs(spec, form.kind, geom, dt.d, aux_dtype)
        aux_ldb = None
        for name, (_s, _st, _dt, ld, bstride) in self.aux.items():
            if name.endswith("_aux"):
                aux_ldb = (ld, bstride)
        if spec.aux_in:  # the auxiliary input has the same layout as the forward output
            from ._traits import aux_layout

            _s, _st, ld, bstride = aux_layout(form.kind, geom, spec.aux_in, dt.d)
            aux_ldb = (ld, bstride)
        grad_stride = None
        for name, (shape, _st, _dt, _ld, bstride) in self.aux.items():
            if not name.endswith("_aux"):
                grad_stride = bstride
        bias_dtype = mm._bias_dtype if (spec.bias or spec.grad) else None
        opts = mm._options
        self.problem = LtProblem(form, dt, self.lt_epilog, mm._device, mm._handle, batch=geom.batch,
                                 sm_count_target=opts.sm_count_target or 0,
                                 fast_accumulation=bool(opts.fast_accumulation) and dt.narrow,
                                 bias_dtype=bias_dtype, bias_batch_stride=bias_stride if spec.bias else grad_stride,
                                 aux=aux_ldb, aux_dtype=aux_dtype if spec.aux_out else None,
                                 block_scaling=opts.block_scaling)
        self.algorithms = []
        self.algorithm = None
        self.kernel = None
        self.workspace = None
        self.ws_size = 0
        self._algo_ref = None
        perm = form.d_perm
        self.d_perm = perm
        self.args = None
        self.fast = self.hot = False
        self.rule = None  # recycling_rule of the results' package (None: no recycling)
        self.slots = ()  # up to two recent results: [result, pointer, stream, snapshot when made]
        self.slot_bytes = 0

    # ------------------------------------------------------------------------------------ planning
    def heuristics(self, prefs, workspace_limit):
        """Bind dummy aligned addresses for the pointers the heuristic reads, then ask for algorithms."""
        A = _attrs()
        placeholder = 1 << 20  # 256-byte aligned, never dereferenced by the heuristic
        mm = self.mm
        if self.spec.bias:
            self.problem.set_pointer(A.CUBLASLT_MATMUL_DESC_BIAS_POINTER, mm._bias_ptr() or placeholder)
        if self.spec.grad:
            self.problem.set_pointer(A.CUBLASLT_MATMUL_DESC_BIAS_POINTER, placeholder)
        if self.spec.aux_in or self.spec.aux_out:
            self.problem.set_pointer(A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                     mm._aux_in_ptr() if self.spec.aux_in else placeholder)
        mm._bind_scales(self.problem)
        return self.problem.heuristics(prefs.limit, workspace=workspace_limit, alignments=self.alignments,
                                       reduction_mask=int(prefs.reduction_scheme_mask),
                                       max_waves=float(prefs.max_waves_count),
                                       impl_mask=int(prefs.numerical_impl_mask))

    def choose(self, algorithm):
        """Run ``algorithm`` (an Algorithm) from now on; rebuilds the argument list."""
        self.algorithm = algorithm
        self._algo_ref = ctypes.byref(algorithm.algo)
        if self.args is not None:
            self.args[12] = self._algo_ref
            if algorithm.workspace_size > self.ws_size:
                self.ensure_workspace(algorithm.workspace_size, self.stream)
            self._update_hot()

    def build_args(self, stream, a, b, c):
        mm = self.mm
        g = self.geom
        self.layout = (a.strides, b.strides, c.strides if c is not None else None)
        if not mm._host:
            self.new_d = mm._pkg.empty_factory(g.result_shape, mm._dt.d, mm._device, self.form.d_perm)
        self.args = [mm._handle, self.problem.desc, mm._alpha_addr, 0, self.problem.adesc, 0, self.problem.bdesc,
                     mm._beta_addr, 0, self.problem.cdesc, 0, self.problem.ddesc, self._algo_ref, 0, 0, stream]
        self.stream = stream
        self.copies = [x for x in ("a", "b") if getattr(g, x).copy]
        self.c_direct = c is not None and not self.form.c_in_d
        # without c, cuBLASLt's C is the result itself (beta = 0), or NULL where their types differ (FP8)
        self.c_is_d = not self.c_direct and mm._dt.c == mm._dt.d
        self.fast = (not self.copies and not self.aux and (not self.form.c_in_d or self.kernel is not None)
                     and not mm._host and not mm._options.result_amax and not mm._options.inplace)
        self.raw = raw_matmul()
        self.ptr = mm._pkg.pointer
        self.slots = ()
        nbytes = math.prod(g.result_shape) * ITEMSIZE[mm._dt.d]
        self.rule = recycling_rule(mm._package) if RECYCLE_RESULTS and self.fast and nbytes <= RECYCLE_MAX_BYTES \
            else None
        self.slot_bytes = nbytes if self.rule is not None else 0
        self.bind(a, b, c)
        if self.kernel is None and self.algorithm.workspace_size:
            self.ensure_workspace(self.algorithm.workspace_size, stream)
        self._update_hot()

    def _update_hot(self):
        """Whether ``Matmul.execute`` may take its inline path (one allocation, one library call)."""
        self.hot = (self.fast and self.kernel is None and self.args is not None
                    and self.ws_size >= self.algorithm.workspace_size)

    def bind(self, a, b, c):
        """Point the argument list at the operands (device operands, or the staging mirrors)."""
        args = self.args
        if self.transposed:
            args[3], args[5] = b.ptr, a.ptr
        else:
            args[3], args[5] = a.ptr, b.ptr
        args[8] = c.ptr if (c is not None and self.c_direct) else 0

    def take(self):
        """A result for the hot path and its pointer: one of the two most recent results of this stream that
        nobody but this plan refers to any more (no view, no storage or DLPack reference), else a new one.

        Two, so that ``d = mm.execute()`` in a loop (which keeps the previous result alive during the call)
        recycles too. A result reused on the stream that produced it is ordered after every use of it on that
        stream, as the framework's own caching allocator would order it; a result whose last use was queued
        on another stream with ``record_stream`` is not tracked (``RECYCLE_RESULTS = False`` turns this off).
        """
        stream = self.stream
        if self.slots:
            free = self.rule[1]
            for e in self.slots:
                if e[2] == stream and free(e):
                    return e[0], e[1]
        d = self.new_d()
        p = self.ptr(d)
        if self.rule is None:
            return d, p
        e = [d, p, stream, None]
        del d
        e[3] = self.rule[0](e)
        self.slots = (self.slots[-1], e) if self.slots else (e,)
        return e[0], p

    @property
    def recycled_bytes(self) -> int:
        return self.slot_bytes * len(self.slots)

    def release_workspace(self):
        if self.workspace is not None:
            self.workspace.free()
            self.workspace = None
            self.ws_size = 0
            if self.args is not None:
                self.args[13] = self.args[14] = 0
            self.hot = False

    def ensure_workspace(self, size, stream):
        if size > self.ws_size:
            self.release_workspace()
            self.workspace = allocate(self.mm._allocator, size, stream)
            self.ws_size = size
            self.args[13], self.args[14] = self.workspace.device_ptr, size
            if self.mm._log.isEnabledFor(logging.DEBUG):
                self.mm._log.debug("matmul workspace: %s", format_bytes(size))
            if self.algorithm is not None:
                self._update_hot()

    def free(self):
        self.slots = ()
        self.release_workspace()
        if self.kernel is not None:
            try:
                self.kernel.free()
            except Exception:  # pragma: no cover - best effort
                pass
            self.kernel = None
        self.problem.free()

    # ------------------------------------------------------------------------------------ execution
    def run_kernel(self, alpha, beta, stream):
        """The memory-bound kernel on the bound operands (helper C's interface)."""
        d = self.new_d()
        args = self.args
        a_ptr, b_ptr = (args[5], args[3]) if self.transposed else (args[3], args[5])
        c = self.mm._c
        self.kernel.launch(a_ptr, b_ptr, c.ptr if c is not None else 0, self.mm._pkg.pointer(d), alpha, beta, stream)
        return d

    def run(self, stream, algorithm=None):
        """The general path: operand copies, c copied into the result, auxiliary outputs, host staging."""
        mm, g, form = self.mm, self.geom, self.form
        A = _attrs()
        args = self.args if stream == self.stream else self.args[:15] + [stream]
        if algorithm is not None:
            args[12] = ctypes.byref(algorithm.algo)
        algo = algorithm or self.algorithm
        if algo.workspace_size > self.ws_size:
            self.ensure_workspace(algo.workspace_size, stream)
            args[13], args[14] = self.args[13], self.args[14]
        keep = []  # temporaries alive until the call is queued (stream-ordered allocators)
        if mm._host:
            mm._upload(stream)
        elif self.copies:
            for name in self.copies:
                op = getattr(mm, f"_{name}")
                tmp = mm._dense_copy(op, getattr(g, name), name)
                keep.append(tmp)
                p = mm._pkg.pointer(tmp)
                slot = (5 if name == "a" else 3) if self.transposed else (3 if name == "a" else 5)
                args[slot] = p
        d, d_ptr = mm._new_result(self)
        args[10] = d_ptr
        if form.c_in_d and (self.kernel is None or algorithm is not None):
            mm._copy_c_into(d, d_ptr, stream)
            args[8] = d_ptr
        elif not self.c_direct:
            args[8] = d_ptr if self.c_is_d else 0
        outputs = {}
        for name, (shape, strides, dtype, _ld, _bs) in self.aux.items():
            obj, p = mm._new_aux(name, shape, strides, dtype)
            outputs[name] = (obj, p)
            attr = A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER if name.endswith("_aux") else \
                A.CUBLASLT_MATMUL_DESC_BIAS_POINTER
            self.problem.set_pointer(attr, p)
        if mm._options.result_amax:
            obj, p = mm._new_aux("result_amax", (1,), (1,), "float32")
            outputs["result_amax"] = (obj, p)
            self.problem.set_pointer(A.CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, p)
        if self.kernel is not None and algorithm is None:
            a_ptr, b_ptr = (args[5], args[3]) if self.transposed else (args[3], args[5])
            self.kernel.launch(a_ptr, b_ptr, mm._c.ptr if mm._c is not None else 0, d_ptr, mm._alpha, mm._beta,
                               stream)
        else:
            status = raw_matmul()(*args)
            if status:
                from ..._bindings.cublaslt import check

                check(status)
        del keep
        if mm._host:
            return mm._download(d, outputs, self, stream)
        return d, {k: v[0] for k, v in outputs.items()}

    def run_scratch(self, algorithm, stream, scratch):
        """One cublasLtMatmul with ``algorithm`` into the scratch result (autotuning)."""
        args = self.args[:15] + [stream]
        args[12] = ctypes.byref(algorithm.algo)
        args[10] = scratch
        if not self.c_direct:
            args[8] = scratch if self.c_is_d else 0
        status = raw_matmul()(*args)
        if status:
            from ..._bindings.cublaslt import check

            check(status)

    # -------------------------------------------------------------------------------------- keys
    def problem_key(self, prefs, workspace_limit):
        """Everything the kernel choice depends on (plain values, for the persistent autotune cache)."""
        mm, g, f, dt = self.mm, self.geom, self.form, self.mm._dt
        slots = [(s.rows, s.cols, s.ld, s.order, s.op, s.batch_stride) for s in (f.a, f.b, f.c, f.d)]
        return ["cublasLtMatmul", 1, [dt.a, dt.b, dt.c, dt.d, int(dt.compute), dt.scale], [g.m, g.n, g.k, g.batch],
                f.kind, slots, self.lt_epilog, mm._bias_dtype, list(self.alignments),
                [mm._options.sm_count_target or 0, bool(mm._options.fast_accumulation), mm._options.block_scaling],
                [int(prefs.reduction_scheme_mask), float(prefs.max_waves_count), int(prefs.numerical_impl_mask)],
                workspace_limit]


def describe(form, geom, dt, spec) -> str:
    ops = "NTC"
    return (f"{dt.a} x {dt.b} -> {dt.d} (c {dt.c}), M={geom.m} N={geom.n} K={geom.k} batch={geom.batch}, "
            f"formulation {form.kind} (result {form.d_order}-major), cuBLASLt ops {ops[form.a.op]}{ops[form.b.op]}, "
            f"epilog {spec.epilog.name}")
