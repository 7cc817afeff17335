"""The stateful contractions: :class:`BinaryContraction` (alpha * a.b + beta * c) and :class:`TernaryContraction`
(alpha * a.b.c + beta * d), on the operation skeleton.

Planning parses the expression, checks extents and qualifiers, chooses the pairing of a ternary contraction by
cost (``_traits.pairwise_steps``), and builds the engine of the execution space: CBLAS GEMMs on the CPU
(``_backends/blas.py``), cuTENSOR on the GPU (``_backends/cutensor.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import time

from .._core import cuda
from .._core.layout import dense_strides
from .._core.lifecycle import requires, requires_alive
from .._core.operand import Operand, adapter, check_same_place, wrap_operand
from .._core.operation import Operation
from .._core.options import check_enum, check_options
from ..errors import CUTENSORError
from ._options import (ContractionAlgo, ContractionAutotuneMode, ContractionCacheMode, ContractionJitMode,
                       ContractionOptions, operators_of)
from ._traits import gemm_geometry, make_problem, pairwise_steps, parse_expression

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from .._core.typing import AnyTensor, ExecutionLike, StreamLike

__all__ = ["BinaryContraction", "TernaryContraction", "ContractionPlanPreference", "BETA_WITHOUT_ADDEND",
           "JIT_DTYPES", "JIT_MIN_MULTIPLY_ADDS"]

logger = logging.getLogger("cumath.tensor")

DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
#: where autotune() also tries a JIT-compiled cuTENSOR kernel: these dtypes, at least this many multiply-adds
#: (2^30: ~50 us of an H200's FP32 work, so a plan reused as autotune() implies repays a compile of seconds)
JIT_DTYPES = ("float16", "bfloat16", "float32")
JIT_MIN_MULTIPLY_ADDS = 1 << 30
BETA_WITHOUT_ADDEND = "beta must be given together with {name} (the term beta * {name}); pass beta=..."


class ContractionPlanPreference:
    """What plan() may choose (cuTENSOR's plan preference): ``algo`` (:class:`ContractionAlgo`),
    ``kernel_rank`` (0: the best kernel of the algorithm by cuTENSOR's model, 1: the second, ...),
    ``autotune_mode`` (:class:`ContractionAutotuneMode`), ``incremental_count``, ``cache_mode``
    (:class:`ContractionCacheMode`) and ``jit`` (:class:`ContractionJitMode`). Changing one takes effect at the
    next plan(). The CPU engine has a single algorithm and ignores them.

    ``jit`` starts as NONE (planning never compiles unasked: a JIT kernel takes seconds to build); autotune() may
    choose DEFAULT where it measures faster (see :meth:`BinaryContraction.autotune`), unless ``jit`` was set here,
    which it then keeps."""

    _FIELDS = {"algo": ContractionAlgo, "autotune_mode": ContractionAutotuneMode, "cache_mode": ContractionCacheMode,
               "jit": ContractionJitMode}

    def __init__(self, contraction: Any = None) -> None:
        d = self.__dict__
        d["algo"] = ContractionAlgo.DEFAULT
        d["kernel_rank"] = 0
        d["autotune_mode"] = ContractionAutotuneMode.NONE
        d["incremental_count"] = 4
        d["cache_mode"] = ContractionCacheMode.PEDANTIC
        d["jit"] = ContractionJitMode.NONE
        self._jit_set = False  # the caller chose jit (autotune keeps it)

    def __setattr__(self, name, value):
        if name == "_jit_set":
            object.__setattr__(self, name, value)
            return
        if name in self._FIELDS:
            cls = self._FIELDS[name]
            if name == "algo" and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self.__dict__[name] = int(value)  # a GEMM-like algorithm picked by number
                return
            self.__dict__[name] = check_enum(name, value, cls)
            if name == "jit":
                self._jit_set = True
        elif name in ("kernel_rank", "incremental_count"):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, not {value!r}")
            self.__dict__[name] = value
        else:
            raise AttributeError(f"ContractionPlanPreference has no attribute {name!r}; the attributes are "
                                 f"{sorted(k for k in self.__dict__ if not k.startswith('_'))}")

    def key(self) -> tuple:
        d = self.__dict__
        return (int(d["algo"]), d["kernel_rank"], int(d["autotune_mode"]), d["incremental_count"],
                int(d["cache_mode"]), int(d["jit"]))

    def __repr__(self):
        return "ContractionPlanPreference(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()
                                                        if not k.startswith("_")) + ")"


def _wrap(x, name):
    if type(x) is Operand:
        return x
    if type(x).__module__ == "numpy" and type(x).__name__ != "ndarray" or isinstance(x, (int, float, complex)):
        x = _as_array(x)
    return wrap_operand(x, name)


def _as_array(x):
    """A NumPy scalar (np.float64(2.0), whose struct is no array's) or a Python number as a 0-d array."""
    import numpy as np

    if isinstance(x, (np.generic, int, float, complex)):
        return np.asarray(x)
    return x


def _span(op: Operand):
    lo = sum((n - 1) * s for n, s in zip(op.shape, op.strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(op.shape, op.strides) if s > 0)
    return op.ptr + lo * op.itemsize, op.ptr + (hi + 1) * op.itemsize


def _overlaps(x: Operand, y: Operand) -> bool:
    if x.size == 0 or y.size == 0:
        return False
    a0, a1 = _span(x)
    b0, b1 = _span(y)
    return a0 < b1 and b0 < a1


def _memory_orders(shape, strides) -> set:
    """{'C', 'F'}, the orders an operand's memory is in: its axes of extent > 1 with strictly decreasing |stride|
    (C), increasing (F); both for at most one such axis."""
    s = [abs(st) for n, st in zip(shape, strides) if n > 1]
    kinds = set()
    if all(x > y for x, y in zip(s, s[1:])):
        kinds.add("C")
    if all(x < y for x, y in zip(s, s[1:])):
        kinds.add("F")
    return kinds


def _scalar_ok(value, dtype: str, name: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
        try:
            value = complex(value) if dtype.startswith("complex") else float(value)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number, not {type(value).__name__}") from None
    if isinstance(value, complex) and not dtype.startswith("complex"):
        if value.imag:
            raise ValueError(f"{name}={value!r} is complex, but the operands are {dtype}; give a real {name}")
        value = value.real
    return value


class _Contraction(Operation):
    """What binary and ternary contractions share (see the subclasses)."""

    _INPUTS: tuple = ()
    _ADDEND = ""

    def __init__(self, expr: str, operands: dict, addend: Any, out: AnyTensor, qualifiers: Any,
                 options: ContractionOptions | Mapping[str, Any], execution: ExecutionLike, stream: StreamLike) -> None:
        opts = check_options(options, ContractionOptions, "contraction options")
        self._options = opts
        self._log = log = opts.logger or logger
        ops = {n: _wrap(x, n) for n, x in operands.items()}
        add_name = self._ADDEND
        ops[add_name] = None if addend is None else _wrap(addend, add_name)
        ops["out"] = None if out is None else _wrap(out, "out")
        check_same_place(ops)
        first = ops[self._INPUTS[0]]
        dtype = first.dtype
        if dtype not in DTYPES:
            raise TypeError(f"{self._INPUTS[0]} has dtype {dtype}; contractions take {', '.join(DTYPES)}")
        for name, op in ops.items():
            if op is not None and op.dtype != dtype:
                raise TypeError(f"{name} has dtype {op.dtype} while {self._INPUTS[0]} has {dtype}; give operands of "
                                f"one dtype")
        self._dtype = dtype
        inputs = [ops[n] for n in self._INPUTS]
        self._expression = e = parse_expression(expr, [o.ndim for o in inputs])
        self._problem = pb = make_problem(e, [o.shape for o in inputs], [o.strides for o in inputs])
        self._out_shape = tuple(pb.extents[m] for m in e.output)
        for name in (add_name, "out"):
            op = ops[name]
            if op is not None and tuple(op.shape) != self._out_shape:
                raise ValueError(f"{name} has shape {list(op.shape)}, but the result of {e.text!r} has shape "
                                 f"{list(self._out_shape)}")
        O = ops["out"]
        if O is not None:
            if O.readonly:
                raise ValueError("out is read-only; the result is written into it")
            if any(s == 0 and n > 1 for n, s in zip(O.shape, O.strides)):
                raise ValueError("out has a zero stride (a broadcast view); give a result array whose elements do "
                                 "not overlap")
            for n in self._INPUTS:
                if _overlaps(O, ops[n]):
                    raise ValueError(f"out overlaps {n} in memory; give a result array that does not share memory "
                                     f"with the inputs")
        self._ops_list = operators_of(qualifiers, tuple(self._INPUTS) + ((add_name,) if addend is not None else ()),
                                      dtype)
        if addend is not None and self._ops_list[-1] != 1:
            raise ValueError(f"the qualifier of {add_name} must be OP_IDENTITY (the library applies no operator to "
                             f"the addend)")
        self.plan_preference = ContractionPlanPreference(self)
        self._init_placement(first, execution, stream, opts.blocking)
        self._init_operands(ops)
        self._order = None
        self._pref_key = None
        if log.isEnabledFor(logging.INFO):
            log.info("%s %r of %s %s: %s -> %s%s, on %s", type(self).__name__, e.text, first.package, dtype,
                     " ".join(str(list(o.shape)) for o in inputs), list(self._out_shape),
                     f" + beta * {add_name}" if addend is not None else "",
                     "CPU" if not self._on_gpu else f"GPU {self._device}")

    # -------------------------------------------------------------------------------------------- planning
    @requires_alive
    def plan(self, *, stream: StreamLike = None) -> None:
        """Choose the pairing, the GEMM geometry (CPU) or cuTENSOR's kernel (GPU) and allocate the workspace.
        Planning again after the plan preference changed replans."""
        key = self.plan_preference.key()
        if self._planned and key == self._pref_key:
            return
        if self._planned:
            self._drop_plan()
        self._plan(stream)
        self._pref_key = key

    def _result_strides(self, steps):
        """The strides the result gets (out's own, or a new array's from result_layout)."""
        pb = self._problem
        out = self._ops["out"]
        if out is not None:
            return out.strides, None
        layout = self._options.result_layout
        n = len(pb.output)
        if layout == "auto":
            layout = self._auto_layout(steps)
        if layout == "C" or n == 0:
            perm = tuple(range(n))
        elif layout == "F":
            perm = tuple(reversed(range(n)))
        else:
            perm = self._written_order(steps, None)
        return dense_strides(self._out_shape, perm), perm

    def _written_order(self, steps, z_strides):
        """The output axes in the order the final product writes them ([batch, m, n] of its geometry), or None
        when ``z_strides`` (the result's strides) cannot be written by the CPU's GEMM directly."""
        pb = self._problem
        last = steps[-1]
        xs = pb.strides[last.x] if last.x != "T" else dense_strides(
            [pb.extents[m] for m in last.x_modes], range(len(last.x_modes)))
        g = gemm_geometry(last.x_modes, xs, last.y_modes, pb.strides[last.y], pb.output, z_strides, pb.extents)
        if z_strides is not None:
            return None if g.z is None else ()
        order = g.batch + g.m + g.n
        order = order + tuple(m for m in pb.output if m not in order)
        return tuple(pb.output.index(m) for m in order)

    def _auto_layout(self, steps) -> str:
        """result_layout='auto': 'C' when every input is in C order (its modes' strides decreasing), 'F' when
        every one is in F order, provided the engine writes that layout directly (cuTENSOR always does; the
        CPU's GEMM when the strides nest into its matrices); else 'optimized'. Inputs that are in both orders at
        once (1-D operands, unit extents) say nothing about the order the caller wants: 'optimized' too."""
        pb = self._problem
        kinds = {"C", "F"}
        for modes, strides in zip(pb.inputs, pb.strides):
            kinds &= _memory_orders([pb.extents[m] for m in modes], strides)
        n = len(pb.output)
        if len(kinds) == 2 and n > 1:
            return "optimized"
        for kind in ("C", "F"):
            if kind in kinds:
                perm = tuple(range(n)) if kind == "C" else tuple(reversed(range(n)))
                if self._place.on_gpu or self._written_order(steps, dense_strides(self._out_shape, perm)) is not None:
                    return kind
        return "optimized"

    def _make_executor(self):
        steps = pairwise_steps(self._problem, self._order)
        self._steps = steps
        strides, perm = self._result_strides(steps)
        self._result_perm = perm
        add = self._ops[self._ADDEND]
        p = self._place
        on_gpu = self._ops[self._INPUTS[0]].device_id is not None
        if on_gpu and not p.on_gpu:
            raise ValueError("the operands are in GPU memory but execution asks for the CPU; move the operands to "
                             "the host (numpy.asarray(x.get()), x.cpu()) or run on the GPU")
        if p.on_gpu:
            from ._backends.cutensor import ContractionCUTENSOR

            if any(n == 0 for n in self._problem.extents.values()):
                raise ValueError("a mode has extent 0; cuTENSOR needs extents of at least 1 (contract such "
                                 "operands on the CPU, or leave the empty contraction out)")

            def make(problem, out_strides, pointers):
                return ContractionCUTENSOR(problem, steps, self._ops_list, self._dtype, out_strides,
                                           None if add is None else out_strides if not on_gpu else add.strides,
                                           self._options, self._device, self._stream, p.package if on_gpu else
                                           "numpy", self.plan_preference, pointers, self._log)

            if on_gpu:
                return make(self._problem, strides, [self._ops[n].ptr for n in self._INPUTS]
                            + [0 if self._ops["out"] is None else self._ops["out"].ptr])
            from ._staging import StagedContraction, mirror_perm

            out = self._ops["out"]
            perm = mirror_perm(out) if out is not None else (perm or tuple(range(len(self._out_shape))))
            e = self._expression
            ins = [self._ops[n] for n in self._INPUTS]

            def make_staged(in_strides, out_strides, pointers):
                problem = make_problem(e, [o.shape for o in ins], in_strides)
                return make(problem, out_strides, pointers)

            return StagedContraction(make_staged, ins, self._INPUTS, self._out_shape, self._dtype, perm,
                                     self._options, self._device, self._stream)
        from ._backends.blas import ContractionCPU

        ct = self._options.compute_type
        return ContractionCPU(self._problem, steps, self._ops_list, self._dtype, strides,
                              None if add is None else add.strides, False,
                              None if ct is None else ct.library_name, p.execution.num_threads, log=self._log,
                              threads_named=p.user_threads)

    # ------------------------------------------------------------------------------------------- execution
    def _planned_with(self, executor) -> None:
        op = self._ops[self._INPUTS[0]]
        # the result's allocator: the package's cheapest call for the planned shape and layout
        self._new_result = adapter(op.package).empty_factory(self._out_shape, self._dtype, op.device_id,
                                                             self._result_perm)
        self._pointer = adapter(self._place.package).pointer

    def _run(self, alpha, beta, stream, release_workspace: bool):
        ops = self._ops
        out = ops["out"]
        if out is None:
            result = self._new_result()
            out_ptr = self._pointer(result)
        else:
            result, out_ptr = out.obj, out.ptr
        add = ops[self._ADDEND]
        ex = self._executor
        if add is None:
            if ex.simple:  # one library call on the operands (binary, GPU)
                ex.run_binary(ops["a"].ptr, ops["b"].ptr, out_ptr, alpha, stream)
                if release_workspace:
                    ex.release_workspace()
                return result
        elif beta is None:
            raise ValueError(BETA_WITHOUT_ADDEND.format(name=self._ADDEND))
        inputs = [ops[n].ptr for n in self._INPUTS]
        if ex.space == "cpu":
            ex.run(inputs, None if add is None else add.ptr, out_ptr, alpha, beta if add is not None else 0.0)
        elif ex.space == "host_to_device":
            result_op = out if out is not None else wrap_operand(result, "result")
            ex.run([ops[n] for n in self._INPUTS], add, result, result_op, out is None, alpha,
                   beta if add is not None else 0.0, stream, release_workspace)
        else:
            ex.run(inputs, add, out_ptr, result, alpha, beta if add is not None else 0.0, stream, release_workspace)
        return result

    def execute(self, *, alpha: complex = 1.0, beta: complex | None = None, release_workspace: bool = False,
                stream: StreamLike = None) -> AnyTensor:
        """Compute ``alpha * contraction + beta * addend`` with the current operands and return the result (out
        when it was given, else a new array of the operands' package on their device)."""
        if self._executor is None or self._released:
            self._not_ready("execute")
        if alpha.__class__ is not float:  # (a float is taken as it is)
            alpha = _scalar_ok(alpha, self._dtype, "alpha")
        if beta is not None:
            beta = _scalar_ok(beta, self._dtype, "beta")
        if self._host_only:
            return self._run(alpha, beta, None, release_workspace)
        stream, explicit = self._stream_arg(stream)
        if explicit:  # inside the package's stream context when the stream is not its current one
            return self._ordered(stream, True, self._run, alpha, beta, stream, release_workspace)
        result = self._run(alpha, beta, stream, release_workspace)  # (_ordered's other case, two frames less)
        if self._blocking and self._place.operand_device is not None:
            cuda.synchronize(stream)
        return result

    @requires("planned", "operands")
    def autotune(self, *, iterations: int = 3, alpha: complex = 1.0, beta: complex | None = None,
                 release_workspace: bool = False, stream: StreamLike = None) -> None:
        """Measure and keep the fastest choice (the contraction is executed several times: an ``out`` given
        together with itself as the addend accumulates; give it again afterwards).

        On the GPU: cuTENSOR's incremental autotuning over ``iterations`` kernels (kept in its plan cache, which
        cumath saves to disk); then, for float16, bfloat16 and float32 contractions of at least 2^30
        multiply-adds (``JIT_MIN_MULTIPLY_ADDS``) whose ``plan_preference.jit`` the caller left unset, also a
        JIT-compiled kernel (``ContractionJitMode.DEFAULT``: compiled once, seconds, then kept in cuTENSOR's
        kernel cache on disk): both are timed over ``iterations`` executions and the faster one is kept
        (``plan_preference.jit`` says which). On the CPU, for ternary contractions, the three pairings timed
        ``iterations`` times each."""
        if not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"iterations must be a positive int, not {iterations!r}")
        if self._on_gpu:
            self._autotune_gpu(iterations, alpha, beta, stream)
            return
        if len(self._INPUTS) != 3:
            return
        best = None
        for order in ((0, 1), (0, 2), (1, 2)):
            self._order = order
            self._drop_plan()
            self._plan(None)
            times = []
            for _ in range(iterations):
                t0 = time.perf_counter()
                self.execute(alpha=alpha, beta=beta)
                times.append(time.perf_counter() - t0)
            t = min(times)
            if best is None or t < best[0]:
                best = (t, order)
        self._order = best[1]
        self._drop_plan()
        self._plan(None)
        self._log.info("autotuned the pairing: operands %s first (%.3g ms)", best[1], best[0] * 1e3)

    def _jit_may_win(self) -> bool:
        """Whether autotune() also tries a JIT kernel: a low-precision real contraction large enough for a
        specialised kernel to matter, with the caller's jit choice left open."""
        if self.plan_preference._jit_set or self._dtype not in JIT_DTYPES:
            return False
        return sum(s.flops for s in self._steps) >= JIT_MIN_MULTIPLY_ADDS

    def _autotune_gpu(self, iterations, alpha, beta, stream) -> None:
        pref = self.plan_preference
        saved = (pref.autotune_mode, pref.incremental_count)
        pref.autotune_mode, pref.incremental_count = ContractionAutotuneMode.INCREMENTAL, iterations
        try:
            for _ in range(iterations + 1):
                self.plan(stream=stream)
                self.execute(alpha=alpha, beta=beta, stream=stream)
                self._drop_plan()
        finally:
            pref.autotune_mode, pref.incremental_count = saved
        self.plan(stream=stream)
        if not self._jit_may_win():
            return
        plain = self._time_executes(iterations, alpha, beta, stream)
        chosen = pref.jit
        pref.__dict__["jit"] = ContractionJitMode.DEFAULT  # (not the caller's choice: _jit_set stays False)
        try:
            self.plan(stream=stream)
            jit = self._time_executes(iterations, alpha, beta, stream)
        except CUTENSORError as exc:  # JIT unavailable for this GPU or problem: the plain kernel stays
            self._log.info("autotune: no JIT kernel for this contraction (%s)", exc)
            jit = None
        if jit is not None and jit < plain:
            chosen = ContractionJitMode.DEFAULT
        pref.__dict__["jit"] = chosen
        self.plan(stream=stream)
        self._log.info("autotune: %s kernel kept (%.3g ms; JIT %s)", "the JIT" if chosen else "the precompiled",
                       plain * 1e3 if not chosen else jit * 1e3,
                       "failed" if jit is None else f"{jit * 1e3:.3g} ms")

    def _time_executes(self, n: int, alpha, beta, stream) -> float:
        """Seconds per execute() over ``n`` executions after one more, waited for on the stream."""
        handle, _ = self._stream_arg(stream)
        self.execute(alpha=alpha, beta=beta, stream=stream)
        cuda.synchronize(handle)
        t0 = time.perf_counter()
        for _ in range(n):
            self.execute(alpha=alpha, beta=beta, stream=stream)
        cuda.synchronize(handle)
        return (time.perf_counter() - t0) / n

    # -------------------------------------------------------------------------------------------- operands
    def _reset_named(self, given: dict, checked: bool, stream):
        new = self._reset_operands(given, checked=checked, writes=("out",))
        O = self._ops["out"]
        if O is not None and "out" in new or any(n in new for n in self._INPUTS):
            if O is not None:
                for n in self._INPUTS:
                    if _overlaps(O, self._ops[n]):
                        raise ValueError(f"out overlaps {n} in memory; give a result array that does not share "
                                         f"memory with the inputs")
        if stream is not None:
            self._use_stream(stream)

    def release_workspace(self) -> None:
        ex = self._executor
        if ex is not None and hasattr(ex, "release_workspace"):
            ex.release_workspace()

    @property
    def steps(self) -> Any:
        """The pairwise steps of the plan (None before plan())."""
        return getattr(self, "_steps", None)


class BinaryContraction(_Contraction):
    """``alpha * einsum(expr, a, b) + beta * c``, planned once and executed many times.

    ``expr``: an einsum expression with two inputs, explicit (``'ij,jk->ik'``) or implicit (``'ij,jk'``), with
    ellipses; a mode repeated within an input takes its diagonal. ``a``, ``b`` (and ``c``, ``out``): NumPy, CuPy
    or PyTorch arrays (CPU or CUDA) of one dtype (float16, bfloat16, float32, float64, complex64, complex128) and
    any strides. ``c`` has the result's shape; ``out`` receives the result (it may be ``c`` itself). ``qualifiers``:
    an array of ``tensor_qualifiers_dtype`` (or a sequence) with an :class:`Operator` per operand, applied as the
    operand is read (on the GPU, an operator other than OP_IDENTITY/OP_CONJ is applied by a cuTENSOR permutation
    into a buffer the plan keeps, of the operand's size). ``options``: :class:`ContractionOptions` or a dict.
    ``execution``: where the operands are.

    Lifecycle::

        with BinaryContraction("ij,jk->ik", a, b) as ctr:
            ctr.plan()
            r = ctr.execute()                 # alpha=1
            ctr.reset_operands(a=a2)
            r2 = ctr.execute(alpha=2.0)

    Differences from nvmath-python: the CPU execution space exists (CBLAS GEMMs, not numpy.einsum); the loggers
    are ``cumath.tensor``'s (not the root logger); qualifiers may also be a plain sequence of Operators.

    >>> import numpy as np, cumath
    >>> a, b = np.ones((2, 3)), np.ones((3, 4))
    >>> cumath.tensor.BinaryContraction("ij,jk->ik", a, b).__class__.__name__
    'BinaryContraction'
    """

    _NAMES = ("a", "b", "c", "out")
    _INPUTS = ("a", "b")
    _ADDEND = "c"
    _RESET_HINT = "reset_operands(a=..., b=..., ...)"

    def __init__(self, expr: str, a: AnyTensor, b: AnyTensor, *, c: AnyTensor = None, out: AnyTensor = None,
                 qualifiers: Any = None, stream: StreamLike = None,
                 options: ContractionOptions | Mapping[str, Any] | None = None,
                 execution: ExecutionLike | None = None) -> None:
        super().__init__(expr, {"a": a, "b": b}, c, out, qualifiers, options, execution, stream)

    @requires_alive
    def reset_operands(self, *, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None, out: AnyTensor = None,
                       stream: StreamLike = None) -> None:
        """New operands of the same package, device, shapes, strides and dtype (those not given are kept)."""
        self._reset_named({"a": a, "b": b, "c": c, "out": out}, True, stream)

    @requires_alive
    def reset_operands_unchecked(self, *, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None,
                                 out: AnyTensor = None, stream: StreamLike = None) -> None:
        """Like reset_operands(), comparing only shape, strides and dtype (for hot loops)."""
        self._reset_named({"a": a, "b": b, "c": c, "out": out}, False, stream)


class TernaryContraction(_Contraction):
    """``alpha * einsum(expr, a, b, c) + beta * d``, planned once and executed many times.

    The pairing is chosen by cost (multiply-adds of both steps, then the size of the intermediate, which lives in
    a workspace the plan keeps); :meth:`autotune` can time the pairings instead. Arguments as for
    :class:`BinaryContraction`, with ``d`` the addend.
    """

    _NAMES = ("a", "b", "c", "d", "out")
    _INPUTS = ("a", "b", "c")
    _ADDEND = "d"
    _RESET_HINT = "reset_operands(a=..., b=..., c=..., ...)"

    def __init__(self, expr: str, a: AnyTensor, b: AnyTensor, c: AnyTensor, *, d: AnyTensor = None,
                 out: AnyTensor = None, qualifiers: Any = None, stream: StreamLike = None,
                 options: ContractionOptions | Mapping[str, Any] | None = None,
                 execution: ExecutionLike | None = None) -> None:
        super().__init__(expr, {"a": a, "b": b, "c": c}, d, out, qualifiers, options, execution, stream)

    @requires_alive
    def reset_operands(self, *, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None, d: AnyTensor = None,
                       out: AnyTensor = None, stream: StreamLike = None) -> None:
        """New operands of the same package, device, shapes, strides and dtype (those not given are kept)."""
        self._reset_named({"a": a, "b": b, "c": c, "d": d, "out": out}, True, stream)

    @requires_alive
    def reset_operands_unchecked(self, *, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None,
                                 d: AnyTensor = None, out: AnyTensor = None, stream: StreamLike = None) -> None:
        """Like reset_operands(), comparing only shape, strides and dtype (for hot loops)."""
        self._reset_named({"a": a, "b": b, "c": c, "d": d, "out": out}, False, stream)



