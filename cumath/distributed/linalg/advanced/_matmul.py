"""Distributed matrix product ``epilog(alpha op(A) op(B) + beta C)`` on block-cyclic operands.

CPU engine (``initialize(None, ...)``): ScaLAPACK's PBLAS ``p?gemm`` (SUMMA-style panel broadcasts along the
grid's rows and columns) on a BLACS grid made from the distributions' ProcessGrid, or, on a grid of one process
row, A gathered on every rank and one local product each (``_gathered``); the epilog runs on this rank's block of
the result. GPU engine (``initialize(device_id, ..., backends=("nccl", ...))``): cuBLASMp's
``cublasMpMatmul`` over NCCL with the epilog fused (``_gpu_matmul``); NumPy / PyTorch CPU operands are staged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dataclasses
import enum
import logging
import math

import numpy as np

from ...._bindings import cublasmp  # enums only: no library is loaded
from ...._core.lifecycle import Stateful, requires
from ..._context import require_context
from ..._operands import wrap_result
from .._blocks import MatrixOperand
from ._gathered import gathered_plan

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any
    from ...._core.typing import AnyTensor, StreamLike
    from ....linalg.advanced._options import MatmulPlanPreferences

__all__ = ["Matmul", "matmul", "MatmulOptions", "MatmulAlgoType", "MatmulEpilog", "matrix_qualifiers_dtype"]

logger = logging.getLogger(__name__)

#: per operand (a, b[, c]): transpose and conjugate flags, as nvmath-python's distributed matmul takes them
matrix_qualifiers_dtype = np.dtype([("is_transpose", np.bool_), ("is_conjugate", np.bool_)])


def _renamed(name: str, library_enum, doc: str):
    """The library's enum under the name nvmath-python's distributed API gives it (same members, same values)."""
    e = enum.IntEnum(name, [(m.name, m.value) for m in library_enum], module=__name__)
    e.__doc__ = doc
    return e


MatmulAlgoType = _renamed("MatmulAlgoType", cublasmp.MatmulAlgoType, """cuBLASMp's matmul algorithms
    (cublasMpMatmulAlgoType_t, a hint); the CPU engine has one (SUMMA in p?gemm).""")

MatmulEpilog = _renamed("MatmulEpilog", cublasmp.MatmulEpilogue, """What is applied to ``alpha op(A) op(B) + beta
    C`` before it is stored (cublasMpMatmulEpilogue_t, as nvmath-python's distributed ``MatmulEpilog``): DEFAULT
    is 0 and ALLREDUCE (sum the ranks' products) is 1, the others have cuBLASLt's values. A member of
    cumath.linalg.advanced.MatmulEpilog is taken by its name.""")


def _epilog(epilog) -> MatmulEpilog:
    if epilog is None:
        return MatmulEpilog.DEFAULT
    if isinstance(epilog, MatmulEpilog):
        return epilog
    if isinstance(epilog, enum.Enum):  # e.g. cumath.linalg.advanced.MatmulEpilog (cuBLASLt's values)
        try:
            return MatmulEpilog[epilog.name]
        except KeyError:
            raise ValueError(f"epilog {epilog!r} has no distributed counterpart; the epilogs are "
                             f"{[e.name for e in MatmulEpilog]}") from None
    try:
        return MatmulEpilog(epilog)
    except ValueError:
        raise ValueError(f"epilog={epilog!r} is not a MatmulEpilog; the epilogs are "
                         f"{[e.name for e in MatmulEpilog]}") from None


@dataclasses.dataclass(frozen=True, kw_only=True)
class MatmulOptions:
    """Options of the distributed matmul: ``result_type`` (NumPy dtype; default the inputs' common type),
    ``algo_type`` (:class:`MatmulAlgoType`, GPU engine only), ``compute_type`` (cublasComputeType_t, GPU
    engine only; default the dtype's precision, no TF32), ``blocking`` (True: return when the result is ready;
    'auto': GPU operands return at once, stream-ordered), ``logger`` (not part of equality)."""

    compute_type: object = None
    scale_type: object = None
    result_type: object = None
    algo_type: MatmulAlgoType = MatmulAlgoType.DEFAULT
    blocking: object = True
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)


def _options(options) -> MatmulOptions:
    if options is None:
        return MatmulOptions()
    if isinstance(options, dict):
        try:
            return MatmulOptions(**options)
        except TypeError as exc:
            names = [f.name for f in dataclasses.fields(MatmulOptions)]
            raise TypeError(f"invalid MatmulOptions: {exc}; the fields are {names}") from None
    if not isinstance(options, MatmulOptions):
        raise TypeError(f"options must be a MatmulOptions, a dict or None, not {type(options).__name__}")
    return options


_CPU_EPILOGS = (MatmulEpilog.DEFAULT, MatmulEpilog.RELU, MatmulEpilog.GELU, MatmulEpilog.BIAS,
                MatmulEpilog.RELU_BIAS, MatmulEpilog.GELU_BIAS)


def _flags(qualifiers, n: int):
    if qualifiers is None:
        return [(False, False)] * n
    q = np.asarray(qualifiers)
    if q.dtype.names is None or "is_transpose" not in q.dtype.names or q.shape[0] not in (2, 3):
        raise TypeError("qualifiers must be a NumPy array of cumath.distributed.linalg.advanced."
                        "matrix_qualifiers_dtype with one entry per operand (a, b[, c])")
    flags = [(bool(e["is_transpose"]), bool(e["is_conjugate"])) for e in q]
    if len(flags) == 3 and any(flags[2]):
        raise ValueError("c cannot be transposed or conjugated; give it as it is to be added")
    return flags[:2] + [(False, False)] * (n - 2)


class Matmul(Stateful):
    """A distributed matrix product on block-cyclic (or block non-cyclic) operands.

    ``distributions=[dA, dB, dC]`` are BlockCyclic/BlockNonCyclic on one 2-D ProcessGrid; every rank passes its
    local blocks (ScaLAPACK's local storage; any memory order, Fortran order avoids a copy): NumPy arrays or
    PyTorch CPU tensors on CPU-only runs; on GPU runs CuPy arrays or PyTorch CUDA tensors on this rank's device
    (NumPy / CPU tensors are staged to the device and the result copied back). ``qualifiers``
    (``matrix_qualifiers_dtype``) transposes or conjugates A and B. ``execute()`` returns this rank's block of
    the result (column-major, distributed as ``dC``); ``c`` is never written (its values are read).

    Example (``mpirun -n 2``, a 1 x 2 grid)::

        grid = ProcessGrid(shape=(1, 2)); d = BlockCyclic(grid, (64, 64))
        with Matmul(a_local, b_local, distributions=[d, d, d]) as mm:
            mm.plan(); c_local = mm.execute()
    """

    _STATES = {"planned": ("_planned", "needs a plan: call plan() first")}

    def __init__(self, a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, distributions: Any,
                 alpha: complex | None = None, beta: complex | None = None, qualifiers: Any = None,
                 options: MatmulOptions | Mapping[str, Any] | None = None, stream: StreamLike = None) -> None:
        self._ctx = ctx = require_context()
        self.options = _options(options)
        self._stream = stream
        self._engine = None
        self._gpu = ctx.device_id is not None
        if self._gpu:
            from .._device import DeviceMatrix as Operand
        else:
            Operand = MatrixOperand
        if not isinstance(distributions, (list, tuple)) or len(distributions) != 3:
            raise ValueError("distributions must be [dA, dB, dC]: one BlockCyclic/BlockNonCyclic per operand")
        grids = {d.process_grid for d in distributions if hasattr(d, "process_grid")}
        if len(grids) > 1:
            raise ValueError("the distributions of A, B and C must share one ProcessGrid (ScaLAPACK multiplies "
                             "on one BLACS grid); redistribute the operands first")
        self._flags = _flags(qualifiers, 3)
        if c is None and beta not in (None, 0):
            raise ValueError("beta was given without c; pass c or drop beta")
        ctx.process_group.agree("Matmul", dtypes=[getattr(x, "dtype", None).__str__() for x in (a, b, c)],
                                flags=self._flags, has_c=c is not None,
                                ndims=[getattr(x, "ndim", None) for x in (a, b, c)])
        self._a = Operand(ctx, a, distributions[0], "a")
        self._b = Operand(ctx, b, distributions[1], "b")
        (ta, _), (tb, _) = self._flags[:2]
        m, ka = self._a.global_shape[::-1] if ta else self._a.global_shape
        kb, n = self._b.global_shape[::-1] if tb else self._b.global_shape
        if ka != kb:
            raise ValueError(f"the global shapes of op(a) {(m, ka)} and op(b) {(kb, n)} do not multiply")
        self.mnk = (m, n, ka)
        self._dist_c = distributions[2]
        self._dists = tuple(distributions)
        self._gathered = None
        dtype = np.result_type(np.dtype(self._a.dtype), np.dtype(self._b.dtype))
        if self.options.result_type is not None:
            dtype = np.result_type(dtype, np.dtype(self.options.result_type))
        if c is not None:
            self._c = Operand(ctx, c, self._dist_c, "c", (m, n))
            dtype = np.result_type(dtype, np.dtype(self._c.dtype))
        else:
            self._c = None
        self.dtype = np.dtype(dtype)
        self.alpha = 1.0 if alpha is None else alpha
        self.beta = (0.0 if c is None else 1.0) if beta is None else beta
        self._epilog = MatmulEpilog.DEFAULT

    def plan(self, *, preferences: MatmulPlanPreferences | Mapping[str, Any] | None = None,
             epilog: MatmulEpilog | None = None, epilog_inputs: Mapping[str, AnyTensor] | None = None,
             algorithms: Sequence[Any] | None = None) -> None:
        """Choose the engine and check the epilog (``epilog_inputs={'bias': this rank's rows of the bias}``)."""
        from ...._bindings import scalapack

        epilog = _epilog(epilog)
        self._ctx.process_group.agree("Matmul.plan", epilog=int(epilog))
        if self._gpu:
            return self._plan_gpu(epilog, epilog_inputs)
        if epilog not in _CPU_EPILOGS:
            raise NotImplementedError(f"epilog {epilog.name} is not supported by the CPU engine (ScaLAPACK); the "
                                      f"supported epilogs are {[e.name for e in _CPU_EPILOGS]}")
        self._epilog = epilog
        bias = self._bias_input(epilog, epilog_inputs)
        self._bias = None if bias is None else np.asarray(bias).reshape(-1)
        self._prefix = scalapack.PREFIX[self.dtype]
        self._out_desc = self._c.desc if self._c is not None else None
        self._gathered = gathered_plan(self, self._ctx.process_group, self._dists, logger)
        self._planned = True
        logger.info("distributed matmul %s x %s x %s (%s) planned on %s, epilog %s", *self.mnk, self.dtype,
                    f"ScaLAPACK p{self._prefix}gemm" if self._gathered is None else self._gathered.describe(),
                    epilog.name)

    def _bias_input(self, epilog, epilog_inputs):
        if epilog.name not in ("BIAS", "RELU_BIAS", "GELU_BIAS"):
            return None
        bias = (epilog_inputs or {}).get("bias")
        if bias is None:
            raise ValueError(f"epilog {epilog.name} needs epilog_inputs={{'bias': ...}} (this rank's rows of "
                             "the bias vector, as C's rows are distributed)")
        return bias

    def _plan_gpu(self, epilog, epilog_inputs):
        from ._gpu_matmul import CuBLASMpMatmul

        if self._engine is not None:
            self._engine.free()
            self._engine = None
        self._engine = CuBLASMpMatmul(self, epilog, self._bias_input(epilog, epilog_inputs))
        self._epilog = epilog
        self._planned = True

    @requires("planned")
    def reset_operands(self, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None, *,
                       alpha: complex | None = None, beta: complex | None = None) -> None:
        """New local blocks of the same shapes and dtypes (and new alpha, beta)."""
        for name, x in (("a", a), ("b", b), ("c", c)):
            if x is None:
                continue
            op = getattr(self, f"_{name}")
            if op is None:
                raise ValueError(f"reset_operands: {name} was not given when the Matmul was made")
            if self._gpu:
                op.reset(x)
                continue
            arr = np.asarray(x) if type(x).__module__.split(".")[0] == "numpy" else x.detach().numpy()
            if arr.shape != op.array.shape or arr.dtype != op.array.dtype:
                raise ValueError(f"reset_operands: {name} has shape {arr.shape} and dtype {arr.dtype}, the planned "
                                 f"one {op.array.shape} and {op.array.dtype}")
            op.array = arr
        if alpha is not None:
            self.alpha = alpha
        if beta is not None:
            self.beta = beta

    @requires("planned")
    def execute(self) -> AnyTensor:
        """Run the product; returns this rank's block of the result (a new array, column-major)."""
        from ...._bindings import scalapack

        group = self._ctx.process_group
        group.agree("Matmul.execute")
        if self._engine is not None:
            return self._engine.execute(self._stream, self.options.blocking)
        m, n, k = self.mnk
        a = self._a.fortran(self.dtype, copy=False)
        b = self._b.fortran(self.dtype, copy=False)
        if self._gathered is not None:
            c = None if self._c is None else self._c.fortran(self.dtype, copy=False)
            out = self._gathered.product(a, b, c, self.alpha, self.beta)
            self._apply_epilog(out)
            return wrap_result(out, self._a.package)
        if self._c is not None:
            out = self._c.fortran(self.dtype, copy=True)
            desc = self._c.desc
        else:
            out, desc = self._result_block(m, n)
        trans = [("C" if cj and self.dtype.kind == "c" else "T") if t else "N" for t, cj in self._flags[:2]]
        if self.dtype.kind == "c":  # conjugate without transpose: conjugate a copy
            if self._flags[0] == (False, True):
                a = np.conj(a, order="F")
            if self._flags[1] == (False, True):
                b = np.conj(b, order="F")
        scalapack.gemm(self._prefix, trans[0], trans[1], m, n, k, self.alpha, a.ctypes.data, self._a.desc,
                       b.ctypes.data, self._b.desc, self.beta, out.ctypes.data, desc)
        self._apply_epilog(out)
        return wrap_result(out, self._a.package)

    def _result_block(self, m, n):
        from ...._bindings import scalapack
        from .._blocks import blacs_context

        key = ("result", m, n)
        cached = getattr(self, "_result_desc", None)
        if cached is None or cached[0] != key:
            group = self._ctx.process_group
            dist = self._dist_c
            shape = dist.local_shape((m, n), group.rank, group.nranks)
            blocks = dist.block_sizes_for((m, n))
            desc = scalapack.descinit(m, n, blocks[0], blocks[1], dist.first_process[0], dist.first_process[1],
                                      blacs_context(self._ctx, dist.process_grid), max(1, shape[0]))
            self._result_desc = cached = (key, shape, desc)
        return np.zeros(cached[1], dtype=self.dtype, order="F"), cached[2]

    def _apply_epilog(self, out: np.ndarray) -> None:
        e = self._epilog
        if e == MatmulEpilog.DEFAULT:
            return
        if self._bias is not None:
            if self._bias.shape[0] != out.shape[0]:
                raise ValueError(f"the bias holds {self._bias.shape[0]} rows on this rank; its block of the result "
                                 f"has {out.shape[0]}")
            out += self._bias[:, None].astype(out.dtype, copy=False)
        if e in (MatmulEpilog.RELU, MatmulEpilog.RELU_BIAS):
            np.maximum(out, 0, out=out)
        elif e in (MatmulEpilog.GELU, MatmulEpilog.GELU_BIAS):  # cuBLASLt's tanh approximation
            out *= 0.5 * (1 + np.tanh(math.sqrt(2 / math.pi) * (out + 0.044715 * out ** 3)))

    def _release(self) -> None:
        if self._engine is not None:
            self._engine.free()
            self._engine = None
        self._a = self._b = self._c = self._gathered = None


def matmul(a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, distributions: Any, alpha: complex | None = None,
           beta: complex | None = None, epilog: MatmulEpilog | None = None,
           epilog_inputs: Mapping[str, AnyTensor] | None = None, qualifiers: Any = None,
           options: MatmulOptions | Mapping[str, Any] | None = None,
           preferences: MatmulPlanPreferences | Mapping[str, Any] | None = None,
           stream: StreamLike = None) -> AnyTensor:
    """``epilog(alpha op(a) @ op(b) + beta c)`` of distributed matrices; this rank's block of the result."""
    with Matmul(a, b, c, distributions=distributions, alpha=alpha, beta=beta, qualifiers=qualifiers,
                options=options, stream=stream) as mm:
        mm.plan(preferences=preferences, epilog=epilog, epilog_inputs=epilog_inputs)
        return mm.execute()
