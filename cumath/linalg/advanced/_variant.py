"""One planned matmul for one operand layout (a *variant*): the cuBLASLt problem, its algorithms, the engine that
runs it, and the precomputed argument list of ``cublasLtMatmul`` (written slot by slot, by name).

A variant knows nothing of the Matmul that planned it: what it needs comes in as a :class:`Context` (fixed when
the Matmul is made: handle, device, dtypes, options, allocator, the package's adapter, the addresses of alpha
and beta) and the :class:`Settings` of the plan (epilog, preferences, workspace limit, the caller's
algorithms); pointers come in as ints. It only sees device memory: how host operands reach it is the
executor's business (``_executor.py``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import math
from dataclasses import dataclass

from ..._core.dtypes import ITEMSIZE
from ..._core.logging import format_bytes
from ...memory import allocate
from . import _algorithms, _autotune_cache
from ._backends import Product, kernel_for
from ._backends.cublaslt import (A_PTR, ALGO, B_PTR, C_PTR, D_PTR, STREAM, WORKSPACE, WORKSPACE_SIZE, LtProblem,
                                 check_status, matmul_args, raw_matmul)
from ._epilogs import aux_outputs, check_epilog_inputs, lt_epilog, no_formulation
from ._options import MatmulComputeType
from ._traits import Matrix, aux_layout, formulations, matmul_geometry, target_order

__all__ = ["Context", "Settings", "Variant", "plan_variant", "alignment", "describe", "variant_key"]


def _driver_check():
    """The CUDA driver's status check (a kernel launcher's statuses are CUresult values)."""
    from ..._bindings import cuda as drv

    return drv.check

# Whether a bias epilog may compute a row-major result through cuBLASLt's ORDER_ROW layouts (formulation 'R');
# when the library has no kernel for a problem there, the column-major formulation is used instead.
ROW_ORDER_EPILOGS = True
_UNSUPPORTED: set = set()  # (formulation kind, epilog, dtypes, compute type, SM) the library had no kernel for
_PLACEHOLDER = 1 << 20  # a 256-byte aligned address for pointers the heuristic reads but never dereferences


@dataclass(frozen=True, slots=True)
class Context:
    """What every variant of one Matmul shares, fixed when the Matmul is made."""

    handle: int  # the cuBLASLt handle
    device: int  # the GPU the work runs on
    package: str  # the operands' package
    pkg: object  # its adapter (``_core/frameworks/<package>.py``)
    dt: object  # the DtypePlan (``_traits.dtype_plan``)
    conj: tuple  # (conjugate a, conjugate b)
    options: object  # the MatmulOptions
    allocator: object  # device memory for workspaces and staging buffers
    alpha_addr: int  # host addresses of the scale-type alpha and beta cuBLASLt reads
    beta_addr: int
    sm: int  # compute capability x 10
    log: logging.Logger


@dataclass(frozen=True, slots=True)
class Settings:
    """What one plan() decided for all its variants."""

    spec: object  # the EpilogSpec
    prefs: object  # the MatmulPlanPreferences
    bias_dtype: str | None
    aux_dtype: str | None
    workspace_limit: int
    algorithms: tuple | None  # the caller's Algorithm objects (None: the heuristic's)


def alignment(ptr: int) -> int:
    """The largest power of two (up to 256) dividing ``ptr``."""
    if ptr == 0:
        return 256
    return min(256, ptr & -ptr)


def variant_key(a, b, c, align: int) -> tuple:
    """How a plan files its variants: the operands' strides and the alignment the variant was planned for."""
    return (a.strides, b.strides, c.strides if c is not None else None, align)


class Variant:
    """Everything planned for one operand layout; the executor runs it on the operands it binds."""

    def __init__(self, ctx: Context, settings: Settings, geom, form, bias_stride, alignments):
        spec, dt = settings.spec, ctx.dt
        self.ctx, self.settings, self.geom, self.form, self.spec = ctx, settings, geom, form, spec
        self.alignments = alignments
        self.align_mask = min(alignments) - 1
        self.transposed = form.transposed
        # our a and b go to cuBLASLt's B and A when it computes D^T = B^T A^T
        self.a_slot, self.b_slot = (B_PTR, A_PTR) if form.transposed else (A_PTR, B_PTR)
        self.lt_epilog = lt_epilog(spec, form.transposed)
        self.aux = aux_outputs(spec, form.kind, geom, dt.d, settings.aux_dtype)
        self.has_outputs = bool(self.aux) or ctx.options.result_amax  # arrays returned besides the result
        aux_ldb = None
        for name, (_s, _st, _dt, ld, bstride) in self.aux.items():
            if name.endswith("_aux"):
                aux_ldb = (ld, bstride)
        if spec.aux_in:  # the auxiliary input has the same layout as the forward output
            _s, _st, ld, bstride = aux_layout(form.kind, geom, spec.aux_in, dt.d)
            aux_ldb = (ld, bstride)
        grad_stride = None
        for name, (_shape, _st, _dt, _ld, bstride) in self.aux.items():
            if not name.endswith("_aux"):
                grad_stride = bstride
        opts = ctx.options
        self.problem = LtProblem(form, dt, self.lt_epilog, ctx.device, ctx.handle, batch=geom.batch,
                                 sm_count_target=opts.sm_count_target or 0,
                                 fast_accumulation=bool(opts.fast_accumulation) and dt.narrow,
                                 bias_dtype=settings.bias_dtype if (spec.bias or spec.grad) else None,
                                 bias_batch_stride=bias_stride if spec.bias else grad_stride,
                                 aux=aux_ldb, aux_dtype=settings.aux_dtype if spec.aux_out else None,
                                 block_scaling=opts.block_scaling)
        self.algorithms = []
        self.algorithm = None
        self.kernel = None  # a kernel engine's kernel that runs the default execution (None: cuBLASLt)
        self.engine = "cublaslt"
        self.workspace = None
        self.ws_size = 0
        self.d_perm = form.d_perm
        self.args = None
        self.layout = None
        self.stream = None
        self.fast = self.hot = False
        self.results = None  # the Recycler of the hot path's results (set by build_args)
        self.raw = raw_matmul()
        # what the hot paths call: the cuBLASLt argument list and caller, or a kernel engine's launcher over a
        # list of the same shape (the same slots for a, b, c, d and the stream)
        self.hot_args = None
        self.hot_raw = self.raw

    # ------------------------------------------------------------------------------------ planning
    def heuristics(self, scales, bias_ptr: int, aux_in_ptr: int):
        """Bind the epilog pointers (aligned placeholders where nothing is bound yet) and the scales, then ask
        cuBLASLt for algorithms: ``(results, error)``."""
        spec, p, prefs = self.spec, self.problem, self.settings.prefs
        if spec.bias:
            p.set_bias(bias_ptr or _PLACEHOLDER)
        if spec.grad:
            p.set_bias(_PLACEHOLDER)
        if spec.aux_in or spec.aux_out:
            p.set_aux(aux_in_ptr if spec.aux_in else _PLACEHOLDER)
        scales.bind(p)
        return p.heuristics(prefs.limit, workspace=self.settings.workspace_limit, alignments=self.alignments,
                            reduction_mask=int(prefs.reduction_scheme_mask), max_waves=float(prefs.max_waves_count),
                            impl_mask=int(prefs.numerical_impl_mask))

    def choose(self, algorithm):
        """Run ``algorithm`` (an Algorithm) from now on."""
        self.algorithm = algorithm
        if self.args is not None:
            self.args[ALGO] = ctypes.addressof(algorithm.algo)
            if algorithm.workspace_size > self.ws_size:
                self.ensure_workspace(algorithm.workspace_size, self.stream)
            self._update_hot()

    def build_args(self, stream, a, b, c, results):
        """The argument list for operands of this layout (device pointers), on ``stream``. ``results``: a
        Recycler of the package's arrays for the hot path, or None where results are not the package's own
        arrays made here (host operands: results come back through the executor's staging)."""
        ctx, g = self.ctx, self.geom
        dt = ctx.dt
        self.layout = (a.strides, b.strides, c.strides if c is not None else None)
        self.args = matmul_args(ctx.handle, self.problem, ctx.alpha_addr, ctx.beta_addr, stream)
        self.args[ALGO] = ctypes.addressof(self.algorithm.algo)
        self.stream = stream
        self.copies = [x for x in ("a", "b") if getattr(g, x).copy]
        self.c_direct = c is not None and not self.form.c_in_d
        # without c, cuBLASLt's C is the result itself (beta = 0), or NULL where their types differ (FP8)
        self.c_is_d = not self.c_direct and dt.c == dt.d
        self.fast = (results is not None and not self.copies and not self.aux
                     and (not self.form.c_in_d or self.kernel is not None)
                     and not ctx.options.result_amax and not ctx.options.inplace)
        self.results = results
        self.hot_args, self.hot_raw = self.args, self.raw
        if self.fast and hasattr(self.kernel, "launcher"):
            self.hot_args = list(self.args)
            self.hot_raw = self.kernel.launcher(ctx.alpha_addr, ctx.beta_addr, {
                "a": self.a_slot, "b": self.b_slot, "c": C_PTR, "d": D_PTR, "stream": STREAM}, len(self.args),
                _driver_check())
            if c is not None:  # the kernel reads c where it is, whatever cuBLASLt's formulation would do with it
                self.c_is_d = False
        self.bind(a, b, c)
        if self.kernel is None and self.algorithm.workspace_size:
            self.ensure_workspace(self.algorithm.workspace_size, stream)
        self._update_hot()

    def _update_hot(self):
        """Whether ``Matmul.execute`` may take its inline path (one allocation, one library call)."""
        if self.args is not None and self.hot_args is not None and self.hot_args is not self.args:
            self.hot = self.fast  # the kernel's launcher
            return
        self.hot = (self.fast and self.kernel is None and self.args is not None
                    and self.ws_size >= self.algorithm.workspace_size)

    def bind(self, a, b, c):
        """Point the argument list at the operands (device operands, or the executor's staging buffers)."""
        args, c_ptr = self.args, c.ptr if (c is not None and self.c_direct) else 0
        args[self.a_slot] = a.ptr
        args[self.b_slot] = b.ptr
        args[C_PTR] = c_ptr
        hot = self.hot_args
        if hot is not None and hot is not args:
            hot[self.a_slot], hot[self.b_slot], hot[C_PTR] = a.ptr, b.ptr, c.ptr if c is not None else 0

    def bind_epilog(self, bias_ptr: int, aux_in_ptr: int):
        """Point the problem at the epilog inputs (bias, auxiliary input)."""
        if self.spec.bias:
            self.problem.set_bias(bias_ptr)
        if self.spec.aux_in:
            self.problem.set_aux(aux_in_ptr)

    def set_stream(self, stream):
        self.stream = stream
        if self.args is not None:
            self.args[STREAM] = stream
        if self.hot_args is not None:
            self.hot_args[STREAM] = stream

    @property
    def recycled_bytes(self) -> int:
        return self.results.held_bytes if self.results is not None else 0

    def release_workspace(self):
        if self.workspace is not None:
            self.workspace.free()
            self.workspace = None
            self.ws_size = 0
            if self.args is not None:
                self.args[WORKSPACE] = self.args[WORKSPACE_SIZE] = 0
            self.hot = False
            if self.hot_args is not None and self.hot_args is not self.args:
                self._update_hot()  # a kernel's launcher needs no workspace

    def ensure_workspace(self, size, stream):
        if size > self.ws_size:
            self.release_workspace()
            self.workspace = allocate(self.ctx.allocator, size, stream)
            self.ws_size = size
            self.args[WORKSPACE], self.args[WORKSPACE_SIZE] = self.workspace.device_ptr, size
            if self.ctx.log.isEnabledFor(logging.DEBUG):
                self.ctx.log.debug("matmul workspace: %s", format_bytes(size))
            if self.algorithm is not None:
                self._update_hot()

    def free(self):
        self.results = None
        self.hot = self.fast = False
        self.hot_args, self.hot_raw = None, self.raw
        self.release_workspace()
        if self.kernel is not None:
            try:
                self.kernel.free()
            except Exception:  # pragma: no cover - best effort
                pass
            self.kernel = None
        self.problem.free()

    # ------------------------------------------------------------------------------------ execution
    def call_args(self, stream, algorithm=None) -> list:
        """A copy of the argument list for one general-path call on ``stream`` (with ``algorithm`` instead of
        the chosen one), its workspace large enough."""
        algo = algorithm or self.algorithm
        if algo.workspace_size > self.ws_size:
            self.ensure_workspace(algo.workspace_size, stream)
        args = list(self.args)
        args[STREAM] = stream
        if algorithm is not None:
            args[ALGO] = ctypes.addressof(algorithm.algo)
        return args

    def set_outputs(self, args, d_ptr: int, outputs: dict | None):
        """The result's address in ``args`` (and C's, where cuBLASLt reads c from the result or from nothing);
        the auxiliary outputs' addresses (name -> pointer) in the problem."""
        args[D_PTR] = d_ptr
        if self.form.c_in_d:
            args[C_PTR] = d_ptr
        elif not self.c_direct:
            args[C_PTR] = d_ptr if self.c_is_d else 0
        if not outputs:
            return
        p = self.problem
        for name, ptr in outputs.items():
            if name == "result_amax":
                p.set_amax(ptr)
            elif name.endswith("_aux"):
                p.set_aux(ptr)
            else:  # a bias gradient
                p.set_bias(ptr)

    def launch(self, args, algorithm, c_ptr: int, alpha, beta):
        """The product on ``args``: the engine's kernel for the default execution, else cuBLASLt."""
        if self.kernel is not None and algorithm is None:
            a_ptr, b_ptr = args[self.a_slot], args[self.b_slot]
            self.kernel.launch(a_ptr, b_ptr, c_ptr, args[D_PTR], alpha, beta, args[STREAM])
            return
        status = self.raw(*args)
        if status:
            check_status(status)

    def copies_c(self, algorithm=None) -> bool:
        """Whether c is copied into the result before the call (cuBLASLt then updates it in place); a kernel
        engine's kernel reads a broadcast c where it is."""
        return self.form.c_in_d and (self.kernel is None or algorithm is not None)

    def run_scratch(self, args, algorithm):
        """One cublasLtMatmul with ``algorithm`` on ``args`` (autotuning: into a scratch result)."""
        args[ALGO] = ctypes.addressof(algorithm.algo)
        status = self.raw(*args)
        if status:
            check_status(status)

    def scratch_outputs(self, stream) -> list:
        """Device buffers for the auxiliary outputs of autotuning runs, bound to the problem."""
        bufs, ptrs = [], {}
        for name, (shape, _strides, dtype, _ld, _bs) in self.aux.items():
            buf = allocate(self.ctx.allocator, max(1, math.prod(shape) * ITEMSIZE[dtype]), stream)
            bufs.append(buf)
            ptrs[name] = buf.device_ptr
        p = self.problem
        for name, ptr in ptrs.items():
            (p.set_aux if name.endswith("_aux") else p.set_bias)(ptr)
        return bufs

    # -------------------------------------------------------------------------------------- keys
    def problem_key(self):
        """Everything the kernel choice depends on (plain values, for the persistent autotune cache)."""
        ctx, g, f, dt, s = self.ctx, self.geom, self.form, self.ctx.dt, self.settings
        opts, prefs = ctx.options, s.prefs
        slots = [(x.rows, x.cols, x.ld, x.order, x.op, x.batch_stride) for x in (f.a, f.b, f.c, f.d)]
        return ["cublasLtMatmul", 1, [dt.a, dt.b, dt.c, dt.d, int(dt.compute), dt.scale], [g.m, g.n, g.k, g.batch],
                f.kind, slots, self.lt_epilog, s.bias_dtype, list(self.alignments),
                [opts.sm_count_target or 0, bool(opts.fast_accumulation), opts.block_scaling],
                [int(prefs.reduction_scheme_mask), float(prefs.max_waves_count), int(prefs.numerical_impl_mask)],
                s.workspace_limit]


def describe(form, geom, dt, spec) -> str:
    ops = "NTC"
    return (f"{dt.a} x {dt.b} -> {dt.d} (c {dt.c}), M={geom.m} N={geom.n} K={geom.k} batch={geom.batch}, "
            f"formulation {form.kind} (result {form.d_order}-major), cuBLASLt ops {ops[form.a.op]}{ops[form.b.op]}, "
            f"epilog {spec.epilog.name}")


# ------------------------------------------------------------------------------------------ planning
def plan_variant(ctx: Context, settings: Settings, a, b, c, *, inputs: dict, scales, dense=(), kernels=True):
    """Plan the epilog for operands of these layouts (device Operands, or the staging buffers' views): geometry,
    formulation, algorithms, engine. ``inputs``: the epilog inputs as the GPU reads them (device Operands);
    ``dense``: operands held as a dense row-major copy of their full batch (host staging); ``kernels``: whether
    a kernel engine may take the variant over. Returns the Variant without its argument list (build_args)."""
    spec, dt, log, opts = settings.spec, ctx.dt, ctx.log, ctx.options
    geom = matmul_geometry(a.shape, a.strides, b.shape, b.strides, c.shape if c is not None else None,
                           c.strides if c is not None else None, inplace=opts.inplace)
    for name in dense:  # the staging buffer holds the whole batch, dense and row-major
        x = getattr(geom, name)
        geom = dataclasses.replace(geom, **{name: Matrix(x.rows, x.cols, x.cols, 1, x.rows * x.cols)})
    bias_stride, aux_kind, bias_cols = check_epilog_inputs(spec, inputs, geom, dt.d, settings.bias_dtype)
    target = target_order(geom, a.strides)
    narrow_tn = dt.narrow and ctx.sm < 100
    row_order = ROW_ORDER_EPILOGS and not (spec.aux_out or spec.aux_in)  # aux layouts are column-based
    candidates = formulations(geom, target=target, epilog_rows_bound=spec.rows_bound, aux_kind=aux_kind,
                              row_order_epilog=row_order, conj=ctx.conj, narrow_tn=narrow_tn, inplace=opts.inplace,
                              epilog_cols_bound=bias_cols)
    if not candidates:
        raise ValueError(no_formulation(spec, aux_kind, ctx.conj, narrow_tn, geom, bias_cols))
    aligns = [alignment(a.ptr), alignment(b.ptr), alignment(c.ptr) if c is not None else 256, 256]
    if candidates[0].transposed:
        aligns[0], aligns[1] = aligns[1], aligns[0]
    if opts.inplace:
        aligns[3] = aligns[2]
    bias = inputs.get("bias")
    aux_in = inputs.get(f"{spec.aux_in}_aux") if spec.aux_in else None
    bias_ptr, aux_ptr = (bias.ptr if bias is not None else 0), (aux_in.ptr if aux_in is not None else 0)
    last = None
    sig = (spec.epilog, dt.a, dt.b, dt.d, dt.compute, ctx.sm)
    unsupported = [f for f in candidates if (f.kind,) + sig in _UNSUPPORTED]
    if len(unsupported) < len(candidates):  # skip what the library refused before (one failed query each)
        candidates = [f for f in candidates if f not in unsupported]
    for form in candidates:
        v = Variant(ctx, settings, geom, form, bias_stride,
                    (aligns[1], aligns[0], aligns[2], aligns[3]) if form.transposed != candidates[0].transposed
                    else tuple(aligns))
        try:
            results, err = v.heuristics(scales, bias_ptr, aux_ptr)
        except BaseException:
            v.free()
            raise
        if results:
            break
        last = err
        if form.kind in ("R", "Q"):  # ORDER_ROW results: asked once per epilog and dtypes
            _UNSUPPORTED.add((form.kind,) + sig)
        log.info("cuBLASLt has no algorithm for formulation %s (%s); trying the next one", form.kind,
                 getattr(err, "name", "no result"))
        v.free()
    else:
        raise ValueError(
            f"cuBLASLt has no algorithm for epilog {spec.epilog.name} with {dt.a} x {dt.b} -> {dt.d} (compute "
            f"{_compute_name(dt.compute)}) on GPU {ctx.device} (compute capability {ctx.sm // 10}.{ctx.sm % 10})"
            + (f": {last.name}" if last is not None else "") + "; choose another epilog, dtype or compute type")
    try:
        _choose_algorithms(v, results, kernels)
    except BaseException:
        v.free()
        raise
    if form.d_order != target and log.isEnabledFor(logging.INFO):
        log.info("the result is %s-major although the inputs are %s-major: cuBLASLt has no %s-major kernel for "
                 "epilog %s", form.d_order, target, target, spec.epilog.name)
    return v


def _choose_algorithms(v: Variant, results, kernels: bool):
    ctx, settings = v.ctx, v.settings
    log, p = ctx.log, v.problem
    if settings.algorithms is not None:
        algs = []
        for alg in settings.algorithms:
            if not isinstance(alg, _algorithms.Algorithm):
                raise TypeError(f"algorithms must be Algorithm objects, got {type(alg).__name__}")
            _algorithms.check_algorithm(p.handle, p.desc, p.adesc, p.bdesc, p.cdesc, p.ddesc, alg)
            algs.append(alg)
    else:
        algs = [_algorithms.Algorithm(r) for r in results]
        if _autotune_cache.enabled():
            hit = _autotune_cache.lookup(v.problem_key())
            if hit is not None:
                try:
                    _algorithms.check_algorithm(p.handle, p.desc, p.adesc, p.bdesc, p.cdesc, p.ddesc, hit)
                    algs.insert(0, hit)
                except ValueError as exc:
                    log.info("the cached algorithm does not fit: %s", exc)
        if kernels:
            product = Product(v.geom, v.form, ctx.dt, int(settings.spec.epilog), ctx.conj, ctx.options.inplace,
                              ctx.device)
            v.engine, v.kernel = kernel_for(product, log)
    v.algorithms = algs
    v.choose(algs[0])
    if log.isEnabledFor(logging.DEBUG):
        log.debug("matmul engine: %s (default execution); execute(algorithm=...) and autotune() use cuBLASLt",
                  v.engine)
    if log.isEnabledFor(logging.INFO):
        log.info("planned %s: algorithm %d of %d (workspace %s)%s", describe(v.form, v.geom, ctx.dt, settings.spec),
                 algs[0].algorithm_id, len(algs), format_bytes(algs[0].workspace_size),
                 f"; the {v.engine.replace('_', '-')} kernel runs it" if v.kernel is not None else "")


def _compute_name(compute) -> str:
    return MatmulComputeType(compute).name
