"""The stateful matmul: construct -> plan -> (autotune) -> execute (repeatedly, with reset_operands) -> free."""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers

from ..._core.cuda import D2H, H2D, copy as cuda_copy, require_device, set_device, synchronize
from ..._core.dtypes import ITEMSIZE
from ..._core.layout import dense_strides, natural_perm
from ..._core.lifecycle import Stateful, requires_alive
from ..._core.logging import format_bytes
from ..._core.operand import Operand, adapter, check_same_place, wrap_operand
from ..._core.options import check_options
from ..._core.streams import default_stream, stream_handle
from ...errors import InvalidStateError
from ...memory import allocate, default_allocator
from . import _scales
from ._epilogs import check_epilog_inputs, epilog_spec, no_formulation
from ._executor import Variant, alignment, describe
from ._options import MatmulOptions, MatmulPlanPreferences, conjugations, data_type_name, parse_memory_limit
from ._traits import Matrix, dtype_plan, formulations, matmul_geometry, target_order

__all__ = ["Matmul"]

logger = logging.getLogger("cumath.linalg.advanced")

_WORKSPACE_CAP = 32 << 20  # cuBLASLt's recommended workspace on Hopper
# Whether a bias epilog may compute a row-major result through cuBLASLt's ORDER_ROW layouts (formulation 'R');
# when the library has no kernel for a problem there, the column-major formulation is used instead.
ROW_ORDER_EPILOGS = True
_UNSUPPORTED: set = set()  # (formulation kind, epilog, dtypes, compute type, SM) the library had no kernel for
_RELEASED = "the operands were released; call reset_operands(a=..., b=...) with all of them before {}()"


class Matmul(Stateful):
    """A planned ``D = epilog(alpha * a @ b + beta * c)`` through cuBLASLt, for operands of fixed shapes.

    Example (PyTorch on the GPU)::

        import torch, cumath
        from cumath.linalg.advanced import Matmul, MatmulEpilog
        a = torch.randn(1024, 512, device="cuda"); b = torch.randn(512, 256, device="cuda")
        bias = torch.randn(1024, device="cuda")
        with Matmul(a, b) as mm:
            mm.plan(epilog=MatmulEpilog.RELU_BIAS, epilog_inputs={"bias": bias})
            mm.autotune(iterations=5)
            d = mm.execute()
            mm.reset_operands(a=torch.randn(1024, 512, device="cuda"))
            d2 = mm.execute()

    Example (NumPy: copied to GPU 0 and back)::

        import numpy as np
        a = np.random.rand(64, 32); b = np.random.rand(32, 16)
        with Matmul(a, b) as mm:
            mm.plan()
            d = mm.execute()          # a NumPy array equal to a @ b

    The result has numpy.matmul's shape and, where cuBLASLt allows, the layout of the inputs (row-major inputs
    give a row-major result), so ``mm.reset_operands_unchecked(a=d)`` feeds a result back at no cost; a result
    of another layout (e.g. a bias epilog that has no row-major kernel) is caught by the reset and planned for.
    """

    def __init__(self, a, b, /, c=None, *, alpha=None, beta=None, qualifiers=None, quantization_scales=None,
                 options=None, stream=None):
        opts = check_options(options, MatmulOptions, "matmul options")
        self._options = opts
        self._log = log = opts.logger or logger
        ops = {"a": _wrap(a, "a"), "b": _wrap(b, "b")}
        if c is not None:
            ops["c"] = _wrap(c, "c")
        check_same_place(ops)
        # shapes first (no GPU needed to reject a mismatch)
        g_orig = matmul_geometry(ops["a"].shape, ops["a"].strides, ops["b"].shape, ops["b"].strides,
                        ops["c"].shape if c is not None else None, ops["c"].strides if c is not None else None,
                        inplace=opts.inplace)
        first = ops["a"]
        self._package, self._pkg = first.package, adapter(first.package)
        self._host = first.device_id is None
        if not self._host and opts.device_id is not None and opts.device_id != first.device_id:
            raise ValueError(f"the operands are on GPU {first.device_id} but options.device_id is {opts.device_id}")
        result_type = data_type_name(opts.result_type, "result_type")
        scale_type = data_type_name(opts.scale_type, "scale_type")
        self._dt = dt = dtype_plan(ops["a"].dtype, ops["b"].dtype, ops["c"].dtype if c is not None else None,
                                   result_type=result_type, compute_type=opts.compute_type, scale_type=scale_type)
        self._conj = conjugations(qualifiers, dt.a)
        self._alpha = 1.0 if alpha is None else alpha
        if c is None and beta is not None and beta != 0:
            log.warning("beta=%r is ignored: there is no c", beta)
        self._beta = (1.0 if beta is None else beta) if c is not None else 0.0
        for name, v in (("alpha", self._alpha), ("beta", self._beta)):
            if not isinstance(v, numbers.Number) or isinstance(v, bool):
                raise TypeError(f"{name} must be a number, not {type(v).__name__}")
        _scales.check(dt, quantization_scales)
        self._device = device = first.device_id if not self._host else (opts.device_id or 0)
        if self._host:
            require_device(device)
        self._stream = stream_handle(stream) if stream is not None else default_stream(first.package, device)
        self._explicit_stream = stream is not None
        self._blocking = opts.blocking is True or self._host
        self._allocator = opts.allocator or default_allocator(first.package, device)
        from ._backends.cublaslt import device_info, get_handle, scalar_buffer

        set_device(device)
        self._info = device_info(device)
        if opts.block_scaling and self._info["sm"] < 100:
            raise ValueError(f"block_scaling=True (MXFP8/NVFP4) needs a GPU of compute capability 10.0 or newer; "
                             f"GPU {device} is {self._info['sm'] // 10}.{self._info['sm'] % 10}")
        if opts.result_amax and not dt.narrow:
            raise ValueError("result_amax is available for narrow-precision (FP8) products only")
        self._handle = opts.handle or get_handle(device)
        self._alpha_buf, self._put_alpha = scalar_buffer(dt.scale)
        self._beta_buf, self._put_beta = scalar_buffer(dt.scale)
        self._put_alpha(self._alpha)
        self._put_beta(self._beta)
        import ctypes

        self._alpha_addr = ctypes.addressof(self._alpha_buf)
        self._beta_addr = ctypes.addressof(self._beta_buf)
        self._mirrors = {}  # host operands: name -> (device buffer, perm or ("full", shape, promoted), operand)
        self._host_full = set()
        self._host_ops = {}
        self._scales = _scales.Scales(self, quantization_scales)
        if self._host:
            for name, op in ops.items():
                if name == "c" and not self._c_mirrored(ops):
                    continue
                m = getattr(g_orig, name, None)
                full = None
                if m is not None and m.copy:  # broadcast or strided batch: materialised on the host per execute
                    promoted = op.shape if len(op.shape) > 1 else (
                        (1,) + tuple(op.shape) if name == "a" else tuple(op.shape) + (1,))
                    full = (g_orig.batch_shape + (m.rows, m.cols), promoted)
                    self._host_full.add(name)
                ops[name] = self._mirror(name, op, full)
        self._a, self._b, self._c = ops["a"], ops["b"], ops.get("c")
        self._shapes = {k: (v.shape, v.dtype) for k, v in ops.items()}  # the planned operands (c or not)
        self._released = False
        self._variants = {}
        self._v = None
        self._epilog_inputs = {}
        self._spec = None
        self._d_buf = None
        self._bias_dtype = None
        if log.isEnabledFor(logging.INFO):
            where = f"GPU {device}" + (" (host operands are copied there and back)" if self._host else "")
            log.info("matmul of %s %s%s x %s%s%s on %s: compute %s, scale %s", first.package, dt.a,
                     list(ops["a"].shape), dt.b, list(ops["b"].shape),
                     f" + {dt.c}{list(ops['c'].shape)}" if c is not None else "", where,
                     _compute_name(dt.compute), dt.scale)

    # --------------------------------------------------------------------------------------- planning
    @requires_alive
    def plan(self, *, preferences=None, algorithms=None, epilog=None, epilog_inputs=None, stream=None):
        """Choose the formulation and the algorithms; returns the algorithms (best first).

        ``epilog``: a :class:`MatmulEpilog`; ``epilog_inputs``: ``{"bias": ..., "relu_aux": ..., "gelu_aux": ...}``
        as the epilog needs. ``algorithms``: Algorithm objects to use instead of the heuristic's (checked against
        this problem). With the persistent autotune cache on, a stored best algorithm is used first.
        """
        if self._released:
            raise InvalidStateError(_RELEASED.format("plan"))
        if stream is not None:
            self._stream = stream_handle(stream)
            self._explicit_stream = True
        self._release_variants()
        spec = epilog_spec(epilog)
        prefs = check_options(preferences, MatmulPlanPreferences, "plan preferences")
        dt = self._dt
        if dt.a.startswith("complex") and spec.epilog != 1:
            raise ValueError(f"epilog {spec.epilog.name} is not supported for complex operands ({dt.a}); "
                             f"only MatmulEpilog.DEFAULT is")
        self._spec, self._prefs = spec, prefs
        self._bias_dtype = _bias_dtype(dt) if (spec.bias or spec.grad) else None
        aux_pref = prefs.epilog.aux_type if prefs.epilog is not None else None
        self._aux_dtype = data_type_name(aux_pref, "aux_type") if aux_pref is not None else None
        if self._aux_dtype is not None and not dt.narrow:
            raise ValueError("preferences.epilog.aux_type is available for narrow-precision (FP8) products only")
        self._set_epilog_inputs(spec, epilog_inputs, check=True)
        if algorithms is not None:
            algorithms = list(algorithms)
            if not algorithms:
                raise ValueError("algorithms= is an empty sequence; pass Algorithm objects or None")
        self._user_algorithms = algorithms
        limit = self._options.memory_limit
        self._workspace_limit = min(_WORKSPACE_CAP, parse_memory_limit(limit, self._info["total_memory"])
                                    if limit is not None else _WORKSPACE_CAP)
        v = self._make_variant(self._a, self._b, self._c)
        self._v = v
        self._planned = True
        return list(v.algorithms)

    def _make_variant(self, a, b, c):
        """Plan the current epilog for operands of these layouts (geometry, formulation, algorithms)."""
        spec, dt, log = self._spec, self._dt, self._log
        geom = matmul_geometry(a.shape, a.strides, b.shape, b.strides, c.shape if c is not None else None,
                               c.strides if c is not None else None, inplace=self._options.inplace)
        for name in self._host_full:  # the mirror holds the whole batch, dense and row-major
            x = getattr(geom, name)
            geom = dataclasses.replace(geom, **{name: Matrix(x.rows, x.cols, x.cols, 1, x.rows * x.cols)})
        bias_stride, aux_kind = check_epilog_inputs(spec, self._epilog_inputs, geom, dt.d, self._bias_dtype)
        target = target_order(geom, a.strides)
        narrow_tn = dt.narrow and self._info["sm"] < 100
        row_order = ROW_ORDER_EPILOGS and not (spec.aux_out or spec.aux_in)  # aux layouts are column-based
        candidates = formulations(geom, target=target, epilog_rows_bound=spec.rows_bound, aux_kind=aux_kind,
                                  row_order_epilog=row_order,
                                  conj=self._conj, narrow_tn=narrow_tn, inplace=self._options.inplace)
        if not candidates:
            raise ValueError(no_formulation(spec, aux_kind, self._conj, narrow_tn, geom))
        aligns = [alignment(a.ptr), alignment(b.ptr), alignment(c.ptr) if c is not None else 256, 256]
        if candidates[0].transposed:
            aligns[0], aligns[1] = aligns[1], aligns[0]
        if self._options.inplace:
            aligns[3] = aligns[2]
        last = None
        sig = (spec.epilog, dt.a, dt.b, dt.d, dt.compute, self._info["sm"])
        unsupported = [f for f in candidates if (f.kind,) + sig in _UNSUPPORTED]
        if len(unsupported) < len(candidates):  # skip what the library refused before (one failed query each)
            candidates = [f for f in candidates if f not in unsupported]
        for form in candidates:
            v = Variant(self, geom, form, spec, bias_stride, self._aux_dtype,
                        (aligns[1], aligns[0], aligns[2], aligns[3]) if form.transposed != candidates[0].transposed
                        else tuple(aligns))
            try:
                results, err = v.heuristics(self._prefs, self._workspace_limit)
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
            sm = self._info["sm"]
            raise ValueError(
                f"cuBLASLt has no algorithm for epilog {spec.epilog.name} with {dt.a} x {dt.b} -> {dt.d} (compute "
                f"{_compute_name(dt.compute)}) on GPU {self._device} (compute capability {sm // 10}.{sm % 10})"
                + (f": {last.name}" if last is not None else "") + "; choose another epilog, dtype or compute type")
        try:
            self._choose_algorithms(v, results, geom)
        except BaseException:
            v.free()
            raise
        v.build_args(self._stream, a, b, c)
        self._variants[(a.strides, b.strides, c.strides if c is not None else None, min(aligns))] = v
        if form.d_order != target and log.isEnabledFor(logging.INFO):
            log.info("the result is %s-major although the inputs are %s-major: cuBLASLt has no %s-major kernel for "
                     "epilog %s", form.d_order, target, target, spec.epilog.name)
        if self._host and self._d_buf is None:
            nbytes = math.prod(geom.result_shape) * ITEMSIZE[dt.d]
            self._d_buf = allocate(self._allocator, nbytes, self._stream)
        return v

    def _choose_algorithms(self, v, results, geom):
        from ._algorithms import Algorithm, check_algorithm

        log = self._log
        if self._user_algorithms is not None:
            algs = []
            for alg in self._user_algorithms:
                if not isinstance(alg, Algorithm):
                    raise TypeError(f"algorithms must be Algorithm objects, got {type(alg).__name__}")
                p = v.problem
                check_algorithm(p.handle, p.desc, p.adesc, p.bdesc, p.cdesc, p.ddesc, alg)
                algs.append(alg)
        else:
            algs = [Algorithm(r) for r in results]
            from . import _autotune_cache as cache

            if cache.enabled():
                key = v.problem_key(self._prefs, self._workspace_limit)
                hit = cache.lookup(key)
                if hit is not None:
                    try:
                        p = v.problem
                        check_algorithm(p.handle, p.desc, p.adesc, p.bdesc, p.cdesc, p.ddesc, hit)
                        algs.insert(0, hit)
                    except ValueError as exc:
                        log.info("the cached algorithm does not fit: %s", exc)
            if self._spec.epilog == 1 and not self._dt.narrow and not any(self._conj):
                v.kernel = self._memory_bound(v, geom)
        v.algorithms = algs
        v.choose(algs[0])
        if log.isEnabledFor(logging.INFO):
            log.info("planned %s: algorithm %d of %d (workspace %s)%s", describe(v.form, geom, self._dt, self._spec),
                     algs[0].algorithm_id, len(algs), format_bytes(algs[0].workspace_size),
                     "; the memory-bound kernel runs it" if v.kernel is not None else "")

    def _memory_bound(self, v, geom):
        """Helper C's kernel for tall-skinny shapes, when it wants this problem (None otherwise)."""
        dt = self._dt
        if not (dt.a == dt.b == dt.c == dt.d) or geom.a.copy or geom.b.copy or self._options.inplace or self._host:
            return None
        c = geom.c
        if c is not None and geom.c_copy and not (c.cs == 0 and (geom.batch == 1 or c.batch_stride)):
            return None  # only a column broadcast is read in place by the kernel
        try:
            from ._memory_bound import GemmProblem, select
        except ImportError:
            return None
        f = v.form
        d_strides = (geom.n, 1) if f.d_order == "row" else (1, geom.m)
        problem = GemmProblem(geom.m, geom.n, geom.k, dt.a, (geom.a.rs, geom.a.cs), (geom.b.rs, geom.b.cs),
                              (c.rs, c.cs) if c is not None else None, d_strides, geom.batch, geom.a.batch_stride,
                              geom.b.batch_stride, c.batch_stride if c is not None else 0, geom.m * geom.n,
                              self._device)
        try:
            kernel = select(problem)
        except Exception as exc:  # the kernel is an optimisation: cuBLASLt remains
            self._log.info("the memory-bound kernel is not available (%s); cuBLASLt runs the matmul", exc)
            return None
        if kernel is not None:
            self._log.info("the memory-bound GEMM kernel runs this problem (M=%d, N=%d, K=%d)", geom.m, geom.n,
                           geom.k)
        return kernel

    # -------------------------------------------------------------------------------------- autotune
    @requires_alive
    def autotune(self, *, iterations=3, prune=None, release_workspace=False, stream=None):
        """Time the planned algorithms (CUDA events) and use the fastest; returns them fastest first. With the
        persistent autotune cache on, the winner is stored for later processes."""
        v = self._v
        if v is None or self._released:
            self._not_ready("autotune")
        from ._algorithms import autotune as core

        s = stream_handle(stream) if stream is not None else self._stream
        size = max((a.workspace_size for a in v.algorithms), default=0)
        if size:
            v.ensure_workspace(size, s)
        if self._host:
            self._upload(s)
        dt, geom = self._dt, v.geom
        scratch = allocate(self._allocator, max(1, math.prod(geom.result_shape) * ITEMSIZE[dt.d]), s)
        outs = []
        try:
            if v.form.c_in_d:
                self._copy_c_into(None, scratch.device_ptr, s)
            outs = self._scratch_outputs(v, s)
            timed = core(lambda alg: v.run_scratch(alg, s, scratch.device_ptr), v.algorithms,
                         iterations=iterations, prune=prune, stream=s)
        finally:
            synchronize(s)
            scratch.free()
            for o in outs:
                o.free()
        if not timed:
            raise ValueError("autotuning found no algorithm that runs this matmul")
        if v.kernel is not None:
            self._log.info("autotune timed the cuBLASLt algorithms; the memory-bound kernel keeps running the problem")
        v.algorithms = timed + [a for a in v.algorithms if a not in timed]
        v.choose(timed[0])
        from . import _autotune_cache as cache

        if cache.enabled() and self._user_algorithms is None:
            cache.store(v.problem_key(self._prefs, self._workspace_limit), timed[0], timed[0].measured_time)
        if release_workspace:
            v.release_workspace()
        return list(timed)

    def _scratch_outputs(self, v, stream):
        from ._executor import _attrs

        A = _attrs()
        bufs = []
        for name, (shape, _strides, dtype, _ld, _bs) in v.aux.items():
            buf = allocate(self._allocator, max(1, math.prod(shape) * ITEMSIZE[dtype]), stream)
            bufs.append(buf)
            attr = A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER if name.endswith("_aux") else \
                A.CUBLASLT_MATMUL_DESC_BIAS_POINTER
            v.problem.set_pointer(attr, buf.device_ptr)
        return bufs

    # -------------------------------------------------------------------------------------- execution
    def execute(self, *, algorithm=None, release_workspace=False, stream=None):
        """Run the matmul on the current operands; returns the result (the operands' package and device), or
        ``(result, aux)`` for epilogs with auxiliary outputs (``aux`` a dict of arrays). A small result (up to
        4 MiB) of one of the two previous calls on the same stream that nobody refers to any more (no name,
        view, storage, DLPack or autograd reference) is reused instead of allocating a new one."""
        v = self._v
        if v is not None and v.hot and algorithm is None and stream is None and not release_workspace and \
                not self._released and (not self._explicit_stream or self._stream == default_stream(
                    self._package, self._device)):  # the hot path: one (recycled) result, one library call
            d, p = v.take()  # a new result comes from the package's current stream: the plan's, checked above
            args = v.args
            args[10] = p
            if v.c_is_d:
                args[8] = p
            status = v.raw(*args)
            if status:
                from ..._bindings.cublaslt import check

                check(status)
            if self._blocking:
                synchronize(self._stream)
            return d
        if v is None or self._released:
            self._not_ready("execute")
        if v.fast and v.kernel is not None and algorithm is None and stream is None and not release_workspace:
            d = v.run_kernel(self._alpha, self._beta, self._stream)
            if self._blocking:
                synchronize(self._stream)
            return d
        return self._execute(v, algorithm, release_workspace, stream)

    def _execute(self, v, algorithm, release_workspace, stream):
        s = self._stream if stream is None else stream_handle(stream)
        if algorithm is not None:
            from ._algorithms import Algorithm, check_algorithm

            if not isinstance(algorithm, Algorithm):
                raise TypeError(f"algorithm must be an Algorithm, got {type(algorithm).__name__}")
            if algorithm not in v.algorithms:
                p = v.problem
                check_algorithm(p.handle, p.desc, p.adesc, p.bdesc, p.cdesc, p.ddesc, algorithm)
        explicit = stream is not None or self._explicit_stream
        if explicit and not self._host and s != default_stream(self._package, self._device):
            with self._pkg.stream_context(self._device, s):
                d, aux = v.run(s, algorithm)
        else:
            d, aux = v.run(s, algorithm)
        if release_workspace:
            synchronize(s) if self._host else None
            v.release_workspace()
        if self._blocking and not self._host:
            synchronize(s)
        return (d, aux) if (v.aux or aux) else d

    # ---------------------------------------------------------------------------- results and staging
    def _new_result(self, v):
        if self._options.inplace:
            c = self._c
            return (c.obj if not self._host else None), c.ptr
        if self._host:
            return None, self._d_buf.device_ptr
        d = v.new_d()
        return d, self._pkg.pointer(d)

    def _new_aux(self, name, shape, strides, dtype):
        if self._host:
            buf = allocate(self._allocator, max(1, math.prod(shape) * ITEMSIZE[dtype]), self._stream)
            return (buf, shape, strides, dtype), buf.device_ptr
        obj = self._pkg.empty(shape, dtype, self._device, natural_perm(strides))
        return obj, self._pkg.pointer(obj)

    def _dense_copy(self, op, matrix, name):
        """A dense row-major copy of the full (broadcast) batch of an operand cuBLASLt cannot read as it is."""
        geom = self._v.geom
        shape = geom.batch_shape + (matrix.rows, matrix.cols)
        promoted = op.shape if len(op.shape) > 1 else ((1,) + tuple(op.shape) if name == "a" else tuple(op.shape) + (1,))
        tmp = self._pkg.empty(shape, op.dtype, self._device, None)
        self._pkg.copy_into(tmp, op.obj.reshape(promoted))
        if self._log.isEnabledFor(logging.INFO):
            self._log.info("operand %s (strides %s) is copied to a dense layout for cuBLASLt", name, list(op.strides))
        return tmp

    def _copy_c_into(self, d, d_ptr, stream):
        """c, broadcast to the result's shape, into the result (which cuBLASLt then updates in place)."""
        v, dt = self._v, self._dt
        if not self._host and d is not None:
            self._pkg.copy_into(d, self._c.obj)
            return
        shape = v.geom.result_shape
        host_c = self._host_ops.get("c", self._c)
        if self._host:
            tmp = self._pkg.empty(shape, dt.d, None, v.d_perm)
            self._pkg.copy_into(tmp, host_c.obj)
            cuda_copy(d_ptr, self._pkg.pointer(tmp), math.prod(shape) * ITEMSIZE[dt.d], H2D, stream, "matmul c")
            synchronize(stream)
        else:  # autotuning scratch of a GPU problem
            tmp = self._pkg.empty(shape, dt.d, self._device, v.d_perm)
            self._pkg.copy_into(tmp, self._c.obj)
            from ..._core.cuda import D2D

            cuda_copy(d_ptr, self._pkg.pointer(tmp), math.prod(shape) * ITEMSIZE[dt.d], D2D, stream)
            synchronize(stream)

    def _c_mirrored(self, ops):
        g = matmul_geometry(ops["a"].shape, _dense(ops["a"].shape), ops["b"].shape, _dense(ops["b"].shape),
                            ops["c"].shape, ops["c"].strides)
        return not g.c_copy or self._options.inplace

    def _mirror(self, name, op, full=None):
        """A device buffer for a host operand (dense, in the operand's own memory order, or its full broadcast
        batch when ``full``); uploaded per execute."""
        perm = natural_perm(op.strides)
        nbytes = max(1, op.nbytes)
        if full is not None:
            perm = ("full",) + full
            nbytes = max(1, math.prod(full[0]) * ITEMSIZE[op.dtype])
        buf = allocate(self._allocator, nbytes, self._stream)
        self._mirrors[name] = (buf, perm, op)
        self._host_ops[name] = op
        self._log.info("host operand %s: a device buffer of %s", name, format_bytes(nbytes))
        strides = dense_strides(op.shape, perm if full is None else range(len(op.shape)))
        return Operand(None, buf.device_ptr, tuple(op.shape), strides, op.dtype, self._device, op.package)

    def _upload(self, stream):
        for name, (buf, perm, op) in self._mirrors.items():
            if op is None:
                continue
            if perm[0] == "full":
                keep = self._pkg.empty(perm[1], op.dtype, None, None)
                self._pkg.copy_into(keep, op.obj.reshape(perm[2]))
                cuda_copy(buf.device_ptr, self._pkg.pointer(keep), keep.nbytes if hasattr(keep, "nbytes") else
                          math.prod(perm[1]) * ITEMSIZE[op.dtype], H2D, stream, f"matmul {name}")
                synchronize(stream)
                continue
            if op.is_dense_in(perm) and all(s >= 0 for s in op.strides):
                src, keep = op.ptr, None
            else:
                keep = self._pkg.empty(op.shape, op.dtype, None, perm)
                self._pkg.copy_into(keep, op.obj)
                src = self._pkg.pointer(keep)
            cuda_copy(buf.device_ptr, src, op.nbytes, H2D, stream, f"matmul {name}")
            if keep is not None:
                synchronize(stream)

    def _download(self, d, outputs, v, stream):
        dt, geom = self._dt, v.geom
        pkg = self._pkg
        if self._options.inplace:
            c = self._host_ops["c"]
            res = c.obj
            buf = self._mirrors["c"][0]
            tmp = pkg.empty(c.shape, c.dtype, None, self._mirrors["c"][1])
            cuda_copy(pkg.pointer(tmp), buf.device_ptr, c.nbytes, D2H, stream, "matmul result")
            synchronize(stream)
            pkg.copy_into(res, tmp)
        else:
            res = pkg.empty(geom.result_shape, dt.d, None, v.d_perm)
            cuda_copy(pkg.pointer(res), self._d_buf.device_ptr, math.prod(geom.result_shape) * ITEMSIZE[dt.d], D2H,
                      stream, "matmul result")
        aux = {}
        for name, ((buf, shape, strides, dtype), _p) in outputs.items():
            host = pkg.empty(shape, dtype, None, natural_perm(strides))
            cuda_copy(pkg.pointer(host), buf.device_ptr, math.prod(shape) * ITEMSIZE[dtype], D2H, stream, name)
            aux[name] = host
        synchronize(stream)
        for (buf, *_), _p in outputs.values():
            buf.free()
        return res, aux

    # ------------------------------------------------------------------------------ epilog inputs, scales
    def _set_epilog_inputs(self, spec, epilog_inputs, check):
        if epilog_inputs is not None and not isinstance(epilog_inputs, dict):
            raise TypeError(f"epilog_inputs must be a dict, not {type(epilog_inputs).__name__}")
        ops = {}
        for k, x in (epilog_inputs or {}).items():
            op = _wrap(x, f"epilog input {k!r}")
            if op.package != self._package or op.device_id != (None if self._host else self._device):
                raise ValueError(f"epilog input {k!r} must be a {self._package} array on the operands' device")
            if self._host:
                op = self._mirror(f"epilog:{k}", op)
            ops[k] = op
        self._epilog_inputs = ops

    def _bias_ptr(self):
        op = self._epilog_inputs.get("bias")
        return op.ptr if op is not None else 0

    def _aux_in_ptr(self):
        for k in ("relu_aux", "gelu_aux"):
            if k in self._epilog_inputs:
                return self._epilog_inputs[k].ptr
        return 0

    def _bind_scales(self, problem):
        self._scales.bind(problem)

    # ------------------------------------------------------------------------------------------ resets
    @requires_alive
    def reset_operands(self, a=None, b=None, c=None, *, alpha=None, beta=None, epilog_inputs=None,
                       quantization_scales=None, stream=None):
        """Point the plan at new operands of the same package, device, shapes and dtypes (checked). Operands of
        another layout are fine: the plan is completed for that layout (once) and reused."""
        new = {}
        for name, x in (("a", a), ("b", b), ("c", c)):
            if x is None:
                continue
            if name == "c" and "c" not in self._shapes:
                raise ValueError("c was not given when the Matmul was created; it cannot be reset")
            op = _wrap(x, name)
            want_shape, want_dtype = self._shapes[name]
            planned_pkg = self._package
            if op.package != planned_pkg or (op.device_id is None) != self._host or (
                    not self._host and op.device_id != self._device):
                raise ValueError(f"the new {name} is a {op.package} array on "
                                 f"{'the host' if op.device_id is None else f'GPU {op.device_id}'}; the plan is for "
                                 f"{planned_pkg} arrays on {'the host' if self._host else f'GPU {self._device}'}")
            if tuple(op.shape) != tuple(want_shape) or op.dtype != want_dtype:
                raise ValueError(f"the new {name} has shape {list(op.shape)} and dtype {op.dtype}; the plan is for "
                                 f"shape {list(want_shape)} and dtype {want_dtype}: create a new Matmul")
            new[name] = op
        self._reset(new, alpha, beta, epilog_inputs, quantization_scales, stream, checked=True)

    @requires_alive
    def reset_operands_unchecked(self, a=None, b=None, c=None, *, alpha=None, beta=None, epilog_inputs=None,
                                 quantization_scales=None, stream=None):
        """Like reset_operands() without the shape, dtype and package checks (for hot loops). A change of
        layout or alignment is still caught (one tuple comparison) and planned for, so feeding a result back
        (``d = mm.execute(); mm.reset_operands_unchecked(a=d)``) is always right."""
        new = {}
        if a is not None:
            new["a"] = a if type(a) is Operand else wrap_operand(a)
        if b is not None:
            new["b"] = b if type(b) is Operand else wrap_operand(b)
        if c is not None:
            new["c"] = c if type(c) is Operand else wrap_operand(c)
        self._reset(new, alpha, beta, epilog_inputs, quantization_scales, stream, checked=False)

    def _reset(self, new, alpha, beta, epilog_inputs, scales, stream, checked):
        if self._released and (missing := [k for k in self._shapes if k not in new]):  # a, b (, c)
            raise ValueError(f"after release_operands(), reset_operands() needs all operands; missing "
                             f"{', '.join(missing)}")
        if beta is not None and "c" not in self._shapes:
            raise ValueError("beta applies to c, which this Matmul does not have")
        if self._host:  # a and b (and c, unless broadcast) are staged through the plan's device mirrors
            for name, op in new.items():
                if name in self._mirrors:
                    buf, perm, _ = self._mirrors[name]
                    self._mirrors[name] = (buf, perm, op)
                elif name == "c":  # not mirrored: copied into the result from the host array per execute
                    self._c = op
                self._host_ops[name] = op
        else:
            a = new.get("a", self._a)
            b = new.get("b", self._b)
            c = new.get("c", self._c)
            self._a, self._b, self._c = a, b, c
            v = self._v
            if v is not None:
                key = (a.strides, b.strides, c.strides if c is not None else None)
                mask = v.align_mask
                if key != v.layout or (a.ptr | b.ptr | (c.ptr if c is not None else 0)) & mask:
                    self._switch_variant(a, b, c, key)
                else:
                    v.bind(a, b, c)
        self._released = False
        if alpha is not None:
            self._alpha = alpha
            self._put_alpha(alpha)
        if beta is not None:
            self._beta = beta
            self._put_beta(beta)
        if epilog_inputs is not None:
            self._reset_epilog_inputs(epilog_inputs, checked)
        if scales is not None:
            self._scales.reset(scales)
        if stream is not None:
            self._stream = stream_handle(stream)
            self._explicit_stream = True
            for v in self._variants.values():
                v.args[15] = v.stream = self._stream

    def _rebind(self, a, b, c, alpha, beta, epilog_inputs):
        """The stateless call's reset: operands (layout checked), alpha/beta, epilog inputs."""
        v = self._v
        self._a, self._b, self._c = a, b, c
        self._released = False
        if (a.strides, b.strides, c.strides if c is not None else None) != v.layout or (
                a.ptr | b.ptr | (c.ptr if c is not None else 0)) & v.align_mask:
            self._switch_variant(a, b, c, (a.strides, b.strides, c.strides if c is not None else None))
        else:
            v.bind(a, b, c)
        alpha = 1.0 if alpha is None else alpha
        beta = (1.0 if beta is None else beta) if c is not None else 0.0
        if alpha != self._alpha:
            self._alpha = alpha
            self._put_alpha(alpha)
        if beta != self._beta:
            self._beta = beta
            self._put_beta(beta)
        if epilog_inputs:
            self._reset_epilog_inputs(epilog_inputs, checked=False)

    def _switch_variant(self, a, b, c, key):
        for (ka, kb, kc, align), v in self._variants.items():
            if (ka, kb, kc) == key and not (a.ptr | b.ptr | (c.ptr if c is not None else 0)) & (align - 1):
                if self._spec.aux_in or self._spec.bias:
                    self._rebind_epilog_pointers(v)
                self._v = v
                v.bind(a, b, c)
                return
        self._log.info("the operands' layout changed (a %s, b %s): planning for it", list(a.strides),
                       list(b.strides))
        self._v = self._make_variant(a, b, c)

    def _reset_epilog_inputs(self, epilog_inputs, checked):
        spec = self._spec
        if spec is None:
            raise InvalidStateError("epilog inputs are reset after plan(): call plan() first")
        old = self._epilog_inputs
        if self._host:
            for k, x in epilog_inputs.items():
                key = f"epilog:{k}"
                if key not in self._mirrors:
                    raise ValueError(f"epilog input {k!r} was not planned; the epilog {spec.epilog.name} takes "
                                     f"{list(spec.inputs)}")
                buf, perm, _ = self._mirrors[key]
                self._mirrors[key] = (buf, perm, _wrap(x, f"epilog input {k!r}"))
            return
        ops = dict(old)
        moved = False
        for k, x in epilog_inputs.items():
            if k not in old:
                raise ValueError(f"epilog input {k!r} was not planned; the epilog {spec.epilog.name} takes "
                                 f"{list(spec.inputs)}")
            op = _wrap(x, f"epilog input {k!r}")
            if checked and (tuple(op.shape), op.strides, op.dtype) != (tuple(old[k].shape), old[k].strides,
                                                                        old[k].dtype):
                raise ValueError(f"the new epilog input {k!r} has shape {list(op.shape)}, strides {list(op.strides)} "
                                 f"and dtype {op.dtype}; the plan is for {list(old[k].shape)}, "
                                 f"{list(old[k].strides)} and {old[k].dtype}")
            ops[k] = op
            moved = moved or op.ptr != old[k].ptr
        self._epilog_inputs = ops
        # the current variant holds the old inputs' pointers; another one gets the new ones when switched to
        if moved and self._v is not None:
            self._rebind_epilog_pointers(self._v)

    def _rebind_epilog_pointers(self, v):
        from ._executor import _attrs

        A, spec = _attrs(), self._spec
        if spec.bias:
            v.problem.set_pointer(A.CUBLASLT_MATMUL_DESC_BIAS_POINTER, self._bias_ptr())
        if spec.aux_in:
            v.problem.set_pointer(A.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, self._aux_in_ptr())

    @requires_alive
    def release_operands(self):
        """Drop the references to the operands (so their memory can be freed); reset_operands() with all of
        them (a, b, and c if the Matmul has one) before the next execute(). The epilog inputs stay bound."""
        self._released = True
        if self._host:  # the device mirrors are the plan's; the host arrays are dropped
            for k in ("a", "b", "c"):
                self._host_ops.pop(k, None)
                if k in self._mirrors:
                    buf, perm, _ = self._mirrors[k]
                    self._mirrors[k] = (buf, perm, None)
            if "c" in self._shapes and "c" not in self._mirrors:
                self._c = None
        else:
            self._a = self._b = self._c = None

    def _forget_operands(self):
        """The plan cache's release between calls (the next call rebinds all operands)."""
        self._a = self._b = self._c = None
        self._released = True

    def _not_ready(self, what):
        if self._freed:
            raise InvalidStateError(f"Matmul.{what}() was called after free(); create a new object")
        if self._v is None:
            raise InvalidStateError(f"Matmul.{what}() needs a plan: call plan() first")
        raise InvalidStateError(_RELEASED.format(what))

    # ------------------------------------------------------------------------------------------ lifetime
    def _release_variants(self):
        for v in self._variants.values():
            v.free()
        self._variants = {}
        self._v = None

    def _release(self):
        self._release_variants()
        for buf, _perm, _op in self._mirrors.values():
            buf.free()
        self._mirrors = {}
        if self._d_buf is not None:
            self._d_buf.free()
            self._d_buf = None
        if hasattr(self, "_scales"):
            self._scales.free()
        self._a = self._b = self._c = None

    @property
    def algorithms(self) -> list:
        """The planned algorithms, the one in use first."""
        return list(self._v.algorithms) if self._v is not None else []

    @property
    def nbytes(self) -> int:
        """Device bytes the plan holds: workspaces, staging buffers, recycled results."""
        return sum(v.ws_size + v.recycled_bytes for v in self._variants.values()) + sum(
            b.size for b, _p, _o in self._mirrors.values())


def _wrap(x, name):
    return x if type(x) is Operand else wrap_operand(x, name)


def _dense(shape):
    return dense_strides(shape, range(len(shape)))


def _bias_dtype(dt) -> str:
    """The bias (and bias gradient) dtype: the result's, except FP8 products (c's, or bfloat16 for float32)."""
    if not dt.narrow:
        return dt.d
    return dt.c if dt.c in ("bfloat16", "float16") else "bfloat16"


def _compute_name(compute) -> str:
    from ._options import MatmulComputeType

    return MatmulComputeType(compute).name
