"""The stateful matmul: construct -> plan -> (autotune) -> execute (repeatedly, with reset_operands) -> free."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ctypes
import logging
import math
import numbers

from ..._core import cuda
from ..._core.disk_cache import warn_once
from ..._core.dtypes import ITEMSIZE
from ..._core.execution import ExecutionCUDA
from ..._core.executors import choose
from ..._core.lifecycle import requires, requires_alive
from ..._core import nvtx
from ..._core.operand import Operand, adapter, check_same_place, immutable_hint, wrap_operand
from ..._core.operation import Operation
from ..._core.overlap import extents_overlap
from ..._core.options import check_options
from ..._core.streams import default_stream
from ...errors import InvalidStateError, OperandMismatchError
from ...memory import allocate, default_allocator
from . import _algorithms, _autotune_cache
from ._backends.cublaslt import C_PTR, D_PTR, check_status, device_info, get_handle, scalar_buffer
from ._epilogs import epilog_spec
from ._executor import EXECUTORS
from ._options import MatmulComputeType, MatmulOptions, MatmulPlanPreferences, conjugations, data_type_name, \
    parse_memory_limit
from ._scales import Scales, check as check_scales
from ._traits import dtype_plan, matmul_geometry
from ._variant import Context, Settings

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any
    from ..._core.typing import AnyTensor, StreamLike
    from ._algorithms import Algorithm
    from ._options import MatmulEpilog, MatmulQuantizationScales

__all__ = ["Matmul"]

logger = logging.getLogger("cumath.linalg.advanced")

_WORKSPACE_CAP = 32 << 20  # cuBLASLt's recommended workspace on Hopper
_RELEASED = "the operands were released; call reset_operands(a=..., b=...) with all of them before {what}()"


def _check_apart(ops) -> None:
    """In place, c receives the result while the library reads a and b: their memory must not meet c's."""
    c = ops.get("c")
    for name in ("a", "b"):
        if c is not None and extents_overlap(ops.get(name), c):
            raise ValueError(f"c receives the result in place (inplace=True), but its memory overlaps {name}'s; "
                             f"pass a copy of {name} (or of c), or use inplace=False")


class Matmul(Operation):
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

    Small problems (every extent at most 128, the default epilog, the dtype's plain compute type: never TF32)
    run their default ``execute()`` on a kernel of cumath's own, launched with one driver call, where cuBLASLt's
    host cost would dominate; results agree with cuBLASLt's within rounding (each output accumulates its K
    products in order with fused multiply-adds). ``execute(algorithm=...)``, ``autotune()`` and ``algorithms``
    are cuBLASLt's as in nvmath-python; ``CUMATH_SMALL_MATMUL=0`` in the environment (read at ``plan()``) keeps
    every problem on cuBLASLt.

    The result has numpy.matmul's shape and, where cuBLASLt allows, the layout of the inputs (row-major inputs
    give a row-major result), so ``mm.reset_operands_unchecked(a=d)`` feeds a result back at no cost; a result
    of another layout (e.g. a bias epilog that has no row-major kernel) is caught by the reset and planned for.
    """

    _NAMES = ("a", "b", "c")
    _RESET_HINT = "reset_operands(a=..., b=...) with all of them"
    _STATES = {"planned": ("_planned", "needs a plan: call plan() first"),
               "operands": ("_has_operands", _RELEASED)}

    _v = None  # the variant in use (the executor's current one), read by execute's hot path
    _scales = None
    _spec = None

    def __init__(self, a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, alpha: complex | None = None,
                 beta: complex | None = None, qualifiers: Any = None,
                 quantization_scales: MatmulQuantizationScales | Mapping[str, Any] | None = None,
                 options: MatmulOptions | Mapping[str, Any] | None = None, stream: StreamLike = None) -> None:
        opts = check_options(options, MatmulOptions, "matmul options")
        self._options = opts
        self._log = log = opts.logger or logger
        ops = {"a": _wrap(a, "a"), "b": _wrap(b, "b"), "c": None if c is None else _wrap(c, "c")}
        check_same_place(ops)
        A, B, C = ops["a"], ops["b"], ops["c"]
        # shapes first (no GPU needed to reject a mismatch)
        self._k = matmul_geometry(A.shape, A.strides, B.shape, B.strides, C.shape if C is not None else None,
                                  C.strides if C is not None else None, inplace=opts.inplace).k
        self._inplace = bool(opts.inplace) and C is not None
        if self._inplace:
            _check_apart(ops)
        if opts.inplace and C is not None and C.readonly:
            raise ValueError("options.inplace=True writes the result into c, but c is read-only" + immutable_hint(C))
        if A.device_id is not None and opts.device_id is not None and opts.device_id != A.device_id:
            raise ValueError(f"the operands are on GPU {A.device_id} but options.device_id is {opts.device_id}")
        dt = dtype_plan(A.dtype, B.dtype, C.dtype if C is not None else None,
                        result_type=data_type_name(opts.result_type, "result_type"), compute_type=opts.compute_type,
                        scale_type=data_type_name(opts.scale_type, "scale_type"))
        conj = conjugations(qualifiers, dt.a)
        self._alpha = 1.0 if alpha is None else alpha
        if C is None and beta is not None and beta != 0:
            log.warning("beta=%r is ignored: there is no c", beta)
        self._beta = (1.0 if beta is None else beta) if C is not None else 0.0
        _check_scalar("alpha", self._alpha)
        _check_scalar("beta", self._beta)
        check_scales(dt, quantization_scales)
        # the work runs on a GPU: the operands' one, or options.device_id (GPU 0) for host operands
        self._init_placement(A, ExecutionCUDA(device_id=opts.device_id if A.device_id is None else None), stream,
                             opts.blocking)
        device = self._device
        self._package = A.package
        allocator = opts.allocator or default_allocator(A.package, device)
        cuda.set_device(device)
        self._info = info = device_info(device)
        if opts.block_scaling and info["sm"] < 100:
            raise ValueError(f"block_scaling=True (MXFP8/NVFP4) needs a GPU of compute capability 10.0 or newer; "
                             f"GPU {device} is {info['sm'] // 10}.{info['sm'] % 10}")
        if opts.result_amax and not dt.narrow:
            raise ValueError("result_amax is available for narrow-precision (FP8) products only")
        self._alpha_buf, self._put_alpha = scalar_buffer(dt.scale)
        self._beta_buf, self._put_beta = scalar_buffer(dt.scale)
        self._put_alpha(self._alpha)
        self._put_beta(self._beta)
        self._ctx = Context(opts.handle or get_handle(device), device, A.package, adapter(A.package), dt, conj,
                            opts, allocator, ctypes.addressof(self._alpha_buf), ctypes.addressof(self._beta_buf),
                            info["sm"], log)
        self._scales = Scales(self._ctx, quantization_scales, self._stream)
        self._init_operands(ops)
        self._wait = self._blocking
        if log.isEnabledFor(logging.INFO):
            where = f"GPU {device}" + (" (host operands are copied there and back)" if A.device_id is None else "")
            log.info("matmul of %s %s%s x %s%s%s on %s: compute %s, scale %s", A.package, dt.a, list(A.shape), dt.b,
                     list(B.shape), f" + {dt.c}{list(C.shape)}" if C is not None else "", where,
                     MatmulComputeType(dt.compute).name, dt.scale)

    # --------------------------------------------------------------------------------------- planning
    @requires("operands")
    def plan(self, *, preferences: MatmulPlanPreferences | Mapping[str, Any] | None = None,
             algorithms: Sequence[Algorithm] | None = None, epilog: MatmulEpilog | None = None,
             epilog_inputs: Mapping[str, AnyTensor] | None = None, stream: StreamLike = None) -> Any:
        """Choose the formulation and the algorithms; returns the algorithms (best first).

        ``epilog``: a :class:`MatmulEpilog`; ``epilog_inputs``: ``{"bias": ..., "relu_aux": ..., "gelu_aux": ...}``
        as the epilog needs (one of another real floating-point dtype than cuBLASLt reads is converted with one
        copy, logged at INFO; integer and complex ones are refused). ``algorithms``: Algorithm objects to use
        instead of the heuristic's (checked against this problem). With the persistent autotune cache on, a
        stored best algorithm is used first.
        """
        self._drop_plan()
        self._plan(stream, preferences, algorithms, epilog, epilog_inputs)
        return list(self._v.algorithms)

    def _make_executor(self, preferences, algorithms, epilog, epilog_inputs):
        """Check the plan's settings and the epilog inputs, and build the executor of the operands' kind."""
        spec = epilog_spec(epilog)
        prefs = check_options(preferences, MatmulPlanPreferences, "plan preferences")
        ctx = self._ctx
        dt = ctx.dt
        if dt.a.startswith("complex") and spec.epilog != 1:
            raise ValueError(f"epilog {spec.epilog.name} is not supported for complex operands ({dt.a}); "
                             f"only MatmulEpilog.DEFAULT is")
        aux_pref = prefs.epilog.aux_type if prefs.epilog is not None else None
        aux_dtype = data_type_name(aux_pref, "aux_type") if aux_pref is not None else None
        if aux_dtype is not None and not dt.narrow:
            raise ValueError("preferences.epilog.aux_type is available for narrow-precision (FP8) products only")
        inputs = self._epilog_operands(epilog_inputs)
        if spec.aux_in and self._k == 1:
            raise ValueError(f"epilog {spec.epilog.name} is not supported for K = 1 (cuBLASLt has no kernel for it); "
                             f"compute the product with MatmulEpilog.DEFAULT and apply the derivative separately")
        if algorithms is not None:
            algorithms = tuple(algorithms)
            if not algorithms:
                raise ValueError("algorithms= is an empty sequence; pass Algorithm objects or None")
        limit = self._options.memory_limit
        workspace = min(_WORKSPACE_CAP, parse_memory_limit(limit, self._info["total_memory"])
                        if limit is not None else _WORKSPACE_CAP)
        self._spec = spec
        settings = Settings(spec, prefs, _bias_dtype(dt) if (spec.bias or spec.grad) else None, aux_dtype, workspace,
                            algorithms)
        return choose(EXECUTORS, self._place.operand_device is not None, True, ctx, settings, self._stream,
                      self._scales, self._ops, inputs)

    def _planned_with(self, executor) -> None:
        """Plan the first variant, for the operands given (the executor is freed if this fails)."""
        self._v = executor.plan(self._ops)
        self._wait = self._blocking and not executor.staged  # staged calls wait for the GPU themselves

    def _epilog_operands(self, epilog_inputs) -> dict:
        if epilog_inputs is not None and not isinstance(epilog_inputs, dict):
            raise TypeError(f"epilog_inputs must be a dict, not {type(epilog_inputs).__name__}")
        place, out = self._place, {}
        for k, x in (epilog_inputs or {}).items():
            op = _wrap(x, f"epilog input {k!r}")
            if op.package != place.package or op.device_id != place.operand_device:
                raise OperandMismatchError(f"epilog input {k!r} must be a {place.package} array on the operands' "
                                           f"device")
            out[k] = op
        return out

    def _drop_plan(self) -> None:
        self._v = None
        super()._drop_plan()

    # -------------------------------------------------------------------------------------- autotune
    @requires("planned", "operands")
    def autotune(self, *, iterations: int = 3, prune: Any = None, release_workspace: bool = False,
                 stream: StreamLike = None) -> Any:
        """Time the planned algorithms (CUDA events) and use the fastest; returns them fastest first. ``prune``:
        keep only the ``prune`` fastest as the plan's algorithms (``mm.algorithms``). With the persistent autotune
        cache on, the winner is stored for later processes."""
        v = self._v
        s, explicit = self._stream_arg(stream)
        size = max((a.workspace_size for a in v.algorithms), default=0)
        if size:
            v.ensure_workspace(size, s)
        timed = self._ordered(s, explicit, self._time, v, s, iterations, prune)
        if not timed:
            raise ValueError("autotuning found no algorithm that runs this matmul")
        if v.kernel is not None:
            self._log.info("autotune timed the cuBLASLt algorithms; the %s kernel keeps running the problem",
                           v.engine.replace("_", "-"))
        # prune=N keeps the N fastest (nvmath-python's mm.algorithms after autotune(prune=N)); else all, timed first
        v.algorithms = list(timed) if prune is not None else timed + [a for a in v.algorithms if a not in timed]
        v.choose(timed[0])
        if _autotune_cache.enabled() and v.settings.algorithms is None:
            try:
                _autotune_cache.store(v.problem_key(), timed[0], timed[0].measured_time)
            except OSError as exc:  # a cache that cannot be written is skipped (the tuned plan is kept)
                warn_once("could not store the autotuning result in", "the matmul autotune cache", exc)
        if release_workspace:
            v.release_workspace()
        return list(timed)

    def _time(self, v, s, iterations, prune):
        """The algorithms timed on the current operands into a scratch result (the caller's result untouched)."""
        dt, geom = self._ctx.dt, v.geom
        scratch = allocate(self._ctx.allocator, max(1, math.prod(geom.result_shape) * ITEMSIZE[dt.d]), s)
        keep, outs = [], []
        try:
            args = self._executor.scratch_args(v, self._ops, scratch.device_ptr, s, keep)
            outs = v.scratch_outputs(s)
            with nvtx.operation_range(self, "autotune"):
                return _algorithms.autotune(lambda alg: v.run_scratch(args, alg), v.algorithms,
                                            iterations=iterations, prune=prune, stream=s)
        finally:
            cuda.synchronize(s)
            scratch.free()
            for o in outs:
                o.free()
            del keep

    # -------------------------------------------------------------------------------------- execution
    def execute(self, *, algorithm: Algorithm | None = None, release_workspace: bool = False,
                stream: StreamLike = None) -> AnyTensor:
        """Run the matmul on the current operands; returns the result (the operands' package and device), or
        ``(result, aux)`` for epilogs with auxiliary outputs (``aux`` a dict of arrays). A small result (up to
        4 MiB) of one of the two previous calls on the same stream that nobody refers to any more (no name,
        view, storage, DLPack or autograd reference) is reused instead of allocating a new one."""
        v = self._v
        if v is not None and v.hot and algorithm is None and stream is None and not release_workspace and \
                not self._released and (not self._explicit_stream or self._stream == default_stream(
                    self._package, self._device)):  # the hot path: one (recycled) result, one library call
            d, p = v.results.take(v.stream)  # a new result comes from the package's current stream: the plan's
            args = v.hot_args
            args[D_PTR] = p
            if v.c_is_d:
                args[C_PTR] = p
            status = v.hot_raw(*args)
            if status:
                check_status(status)
            if self._wait:
                cuda.synchronize(self._stream)
            return d
        if v is None or self._released:
            self._not_ready("execute", ("planned", "operands"))
        return self._execute(v, algorithm, release_workspace, stream)

    def _hot_spec(self):
        """What the compiled hit path of the stateless ``matmul`` needs to serve this plan's default-argument calls
        as :meth:`execute`'s hot path serves them after ``_bind``, or None: non-blocking, on the operands' current
        stream, new results (no reuse), not in place. The C path checks per call that the plan still uses this
        variant, the variant is hot and alpha/beta are the defaults. False: not servable now, ask again later."""
        v = self._v
        if self._inplace or self._wait or self._explicit_stream:
            return None
        if v is None or not v.hot:
            return False  # not now (no workspace yet, say): asked again after the next call
        r = v.results
        if r is None or r.snapshot is not None or type(v.hot_args) is not list or v.c_direct:
            return None
        from ..._core._fast import native_pointer

        package = self._place.package
        return ("matmul", package, self, v, v.hot_args, v.a_slot, v.b_slot, D_PTR, C_PTR, bool(v.c_is_d),
                v.align_mask, r.new, native_pointer(package, r.pointer), v.hot_raw, check_status)

    def _execute(self, v, algorithm, release_workspace, stream):
        s, explicit = self._stream_arg(stream)
        if algorithm is not None:
            if not isinstance(algorithm, _algorithms.Algorithm):
                raise TypeError(f"algorithm must be an Algorithm, got {type(algorithm).__name__}")
            if algorithm not in v.algorithms:
                p = v.problem
                _algorithms.check_algorithm(p.handle, p.desc, p.adesc, p.bdesc, p.cdesc, p.ddesc, algorithm)
        d, aux = self._ordered(s, explicit, self._executor.run, v, self._ops, s, algorithm, self._alpha, self._beta)
        if release_workspace:
            v.release_workspace()
        return (d, aux) if (v.aux or aux) else d

    # ------------------------------------------------------------------------------------------ resets
    @requires_alive
    def reset_operands(self, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None, *,
                       alpha: complex | None = None, beta: complex | None = None,
                       epilog_inputs: Mapping[str, AnyTensor] | None = None,
                       quantization_scales: MatmulQuantizationScales | Mapping[str, Any] | None = None,
                       stream: StreamLike = None) -> None:
        """Point the plan at new operands of the same package, device, shapes and dtypes (checked). Operands of
        another layout are fine: the plan is completed for that layout (once) and reused."""
        new = {name: self._checked(name, x) for name, x in (("a", a), ("b", b), ("c", c)) if x is not None}
        self._reset(new, alpha, beta, epilog_inputs, quantization_scales, stream, checked=True)

    @requires_alive
    def reset_operands_unchecked(self, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None, *,
                                 alpha: complex | None = None, beta: complex | None = None,
                                 epilog_inputs: Mapping[str, AnyTensor] | None = None,
                                 quantization_scales: MatmulQuantizationScales | Mapping[str, Any] | None = None,
                                 stream: StreamLike = None) -> None:
        """Like reset_operands() without the shape, dtype and package checks (for hot loops). A change of
        layout or alignment is still caught (one tuple comparison) and planned for, so feeding a result back
        (``d = mm.execute(); mm.reset_operands_unchecked(a=d)``) is always right."""
        new = {name: self._unchecked(name, x) for name, x in (("a", a), ("b", b), ("c", c)) if x is not None}
        self._reset(new, alpha, beta, epilog_inputs, quantization_scales, stream, checked=False)

    def _checked(self, name, value, *, writes=False):
        """``value`` wrapped and checked against the planned operand: package, device, shape and dtype (its
        layout may differ: the plan is completed for it)."""
        planned = self._signatures.get(name)
        if planned is None:
            raise ValueError(f"{name} was not given when the Matmul was created; it cannot be reset")
        op = _wrap(value, name)
        package, device, shape, _strides, dtype = planned
        if op.package != package or op.device_id != device:
            raise OperandMismatchError(f"the new {name} is a {op.package} array on "
                             f"{'the host' if op.device_id is None else f'GPU {op.device_id}'}; the plan is for "
                             f"{package} arrays on {'the host' if device is None else f'GPU {device}'}")
        if tuple(op.shape) != tuple(shape) or op.dtype != dtype:
            raise ValueError(f"the new {name} has shape {list(op.shape)} and dtype {op.dtype}; the plan is for "
                             f"shape {list(shape)} and dtype {dtype}: create a new Matmul")
        self._check_writeable(name, op)
        return op

    def _check_writeable(self, name, op):
        if name == "c" and op.readonly and self._options.inplace:
            raise ValueError("c receives the result in place (inplace=True), but the new c is read-only; pass a "
                             "writeable array")

    def _unchecked(self, name, value):
        """``value`` wrapped, with the cheap checks that keep memory safe (shape, dtype, a writeable c in
        place); its layout and alignment are compared with the variant's when it is bound."""
        op = value if type(value) is Operand else wrap_operand(value)
        planned = self._signatures.get(name)
        if planned is None:
            raise ValueError(f"{name} was not given when the Matmul was created; it cannot be reset")
        if op.shape != planned[2] or op.dtype != planned[4]:
            if tuple(op.shape) != tuple(planned[2]) or op.dtype != planned[4]:
                raise ValueError(f"the new {name} has shape {list(op.shape)} and dtype {op.dtype}; the plan is for "
                                 f"shape {list(planned[2])} and dtype {planned[4]}: create a new Matmul")
        self._check_writeable(name, op)
        return op

    def _reset(self, new, alpha, beta, epilog_inputs, scales, stream, checked):
        if self._released and (missing := [k for k in self._NAMES
                                           if self._signatures.get(k) is not None and k not in new]):
            raise ValueError(f"after release_operands(), reset_operands() needs all operands; missing "
                             f"{', '.join(missing)}")
        if beta is not None and self._signatures.get("c") is None:
            raise ValueError("beta applies to c, which this Matmul does not have")
        if new or self._released:
            if self._inplace:
                _check_apart({**self._ops, **new})
            self._reset_operands(new, checked=False)  # checked above; this replaces them in the operand set
            ex = self._executor
            if ex is not None:
                ops = self._ops
                self._v = ex.attach(self._v, ops["a"], ops["b"], ops["c"])
        if alpha is not None:
            self._alpha = alpha
            self._put_alpha(alpha)
        if beta is not None:
            self._beta = beta
            self._put_beta(beta)
        if epilog_inputs is not None:
            if self._spec is None or self._executor is None:
                raise InvalidStateError("epilog inputs are reset after plan(): call plan() first")
            self._executor.reset_inputs(epilog_inputs, checked)
        if scales is not None:
            self._scales.reset(scales, self._stream)
            if self._executor is not None:
                self._executor.bind_scales(self._scales)
        if stream is not None:
            self._use_stream(stream)
            if self._executor is not None:
                self._executor.set_stream(self._stream)

    def release_operands(self) -> None:
        """Drop the references to the operands (so their memory can be freed); reset_operands() with all of
        them (a, b, and c if the Matmul has one) before the next execute(). The epilog inputs stay bound."""
        super().release_operands()

    # ------------------------------------------------------------------------------ plan-cache protocol
    def _bind(self, ops, alpha=None, beta=None, epilog_inputs=None, scales=None):
        """One stateless call's operands (matching the plan: the cache key says so), alpha, beta, epilog inputs
        (wrapped; the current variant is pointed at them when they moved) and quantization scales."""
        super()._bind(ops)
        try:
            if self._inplace:
                _check_apart(ops)
            self._v = self._executor.attach(self._v, ops["a"], ops["b"], ops["c"])
            alpha = 1.0 if alpha is None else alpha
            beta = (1.0 if beta is None else beta) if ops["c"] is not None else 0.0
            if alpha != self._alpha:
                _check_scalar("alpha", alpha)
                self._put_alpha(alpha)
                self._alpha = alpha
            if beta != self._beta:
                _check_scalar("beta", beta)
                self._put_beta(beta)
                self._beta = beta
            if epilog_inputs:
                self._executor.reset_inputs(epilog_inputs, checked=False)
            if scales is not None and self._scales.reset(scales, self._stream):
                self._executor.bind_scales(self._scales)
        except BaseException:
            self._unbind()
            raise

    # ------------------------------------------------------------------------------------------ lifetime
    def _release(self):
        super()._release()
        if self._scales is not None:
            self._scales.free()

    @property
    def algorithms(self) -> list:
        """The planned algorithms, the one in use first."""
        return list(self._v.algorithms) if self._v is not None else []

    @property
    def nbytes(self) -> int:
        """Device bytes the plan holds (workspaces, staging buffers, recycled results)."""
        return super().nbytes


def _wrap(x, name):
    return x if type(x) is Operand else wrap_operand(x, name)


def _check_scalar(name, value):
    if not isinstance(value, numbers.Number) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")


def _bias_dtype(dt) -> str:
    """The bias (and bias gradient) dtype: the result's, except FP8 products (c's, or bfloat16 for float32)."""
    if not dt.narrow:
        return dt.d
    return dt.c if dt.c in ("bfloat16", "float16") else "bfloat16"
