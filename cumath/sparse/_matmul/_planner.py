"""The stateful sparse matmul: construct -> plan() -> execute() (repeatedly, with reset_operands) -> free()."""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging

import numpy as np

from ..._core.lifecycle import requires_alive
from ..._core.operand import Operand, wrap_operand
from ..._core.operation import Operation
from ..._core.options import check_options
from .._common import check_dense_beside, check_given_after_release
from .._formats import SparseMatrix, wrap_sparse_matrix
from ._executors import HostExecutor, new_result
from ._options import MatmulOptions
from ._qualifiers import check_qualifiers
from ._traits import geometry

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from ..._core.typing import AnyTensor, ComputeCapabilityLike, ExecutionLike, StreamLike

__all__ = ["Matmul", "wrap_a", "wrap_dense"]

logger = logging.getLogger("cumath.sparse")


_CUSPARSE_UST = ("CSR", "CSC", "COO")


def wrap_a(a, options=None, generated: bool | None = None) -> SparseMatrix:
    """a as the product reads it: a GPU Universal Sparse Tensor that a generated kernel multiplies
    (``options.codegen``, or a format cuSPARSE lacks; ``generated`` forces the choice) as the tensor itself,
    every other operand as the package's sparse matrix (a UST of another format converted to CSR)."""
    if hasattr(a, "_as_sparse_matrix") and a.device == "cuda":
        if generated is None:
            generated = bool(options is not None and options.codegen) or a.tensor_format.name not in _CUSPARSE_UST
        if generated:
            return a._as_sparse_matrix("a", convert=False)  # read by a generated kernel as it is
    return wrap_sparse_matrix(a, "a")


def wrap_dense(x, name: str) -> Operand:
    if type(x) is Operand:
        return x
    module = type(x).__module__
    if module.startswith(("scipy.sparse", "cupyx.scipy.sparse")) or (
            module.startswith("torch") and str(getattr(x, "layout", "")).startswith("torch.sparse")):
        raise TypeError(f"{name} must be a dense array (a is the sparse operand); got a sparse "
                        f"{type(x).__name__}: convert it with .toarray() / .to_dense()")
    return wrap_operand(x, name)


def _scalar(value, default, dtype: str, name: str):
    v = default if value is None else value
    try:
        if not dtype.startswith("complex") and np.iscomplexobj(v):
            if complex(v).imag != 0:
                raise TypeError
            v = complex(v).real
        return np.dtype("float32" if dtype == "float16" else dtype).type(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is not convertible to the operands' dtype {dtype}") from None


class Matmul(Operation):
    """A planned product ``alpha * op(a) @ op(b) + beta * c`` with a sparse ``a`` and dense ``b`` and ``c``.

    ``a``: SciPy (csr, csc, coo, bsr, dia; matrix or array), ``cupyx.scipy.sparse`` (csr, csc, coo), PyTorch
    sparse tensors (COO, CSR, CSC, BSR, BSC; batched CSR), or a ``cumath.sparse.ust.Tensor``; int32 or int64
    indices; float32, float64, complex64, complex128 (float16 on the GPU). ``b``: a vector (SpMV) or a matrix,
    with leading batch axes that broadcast against a's as ``numpy.matmul`` does. ``c`` (optional): the result's
    shape; the result is written into it and ``c`` is returned (as nvmath-python does); without ``c`` a new
    array of the operands' package is returned (cumath; nvmath-python 1.0 requires ``c``). ``alpha`` defaults
    to 1, ``beta`` to 1 when ``c`` is given. ``qualifiers``: an array of ``matmul_matrix_qualifiers_dtype``
    (transpose, conjugate) for a and b.

    Where it runs: the operands' space; on the CPU (which nvmath-python does not offer) oneMKL's sparse BLAS
    (inspector-executor: analysed once at plan(), ``MatmulOptions.expected_calls``) or SciPy. On the GPU cuSPARSE
    runs its default algorithm, the one ``MatmulOptions.algorithm`` names, or the fastest that :meth:`autotune`
    measures (cumath additions, as is the CPU's choice between MKL and SciPy by measurement).

    Example (CPU)::

        import numpy as np, scipy.sparse as sp, cumath
        a = sp.random_array((1000, 800), density=0.01, format="csr")
        b = np.random.rand(800, 16)
        with cumath.sparse.Matmul(a, b) as mm:
            mm.plan()
            d = mm.execute()                     # a @ b
            a.data *= 2                          # new values, same pattern: no new plan
            d2 = mm.execute()

    Example (GPU, CuPy)::

        import cupy as cp, cupyx.scipy.sparse as csp, cumath
        a = csp.random(1000, 800, density=0.01, format="csr")
        b, c = cp.random.rand(800, 16), cp.zeros((1000, 16))
        cumath.sparse.matmul(a, b, c, alpha=2.0, beta=0.0)   # c = 2 a @ b
    """

    _NAMES = ("a", "b", "c")
    _RESET_HINT = "reset_operands(a=..., b=..., c=...) with all of them"

    def __init__(self, a: AnyTensor, b: AnyTensor, /, c: AnyTensor = None, *, alpha: complex | None = None,
                 beta: complex | None = None, qualifiers: Any = None,
                 options: MatmulOptions | Mapping[str, Any] | None = None, execution: ExecutionLike | None = None,
                 stream: StreamLike = None) -> None:
        opts = options if type(options) is MatmulOptions else check_options(options, MatmulOptions,
                                                                             "sparse matmul options")
        self._options = opts
        self._log = log = opts.logger or logger
        A = wrap_a(a, opts)
        B = wrap_dense(b, "b")
        C = None if c is None else wrap_dense(c, "c")
        for name, op in (("b", B), ("c", C)):
            if op is not None:
                check_dense_beside(name, op, A, f"a sparse matrix of {A.package} arrays")
        if C is not None and C.readonly:
            raise ValueError("c receives the result, but c is read-only; pass a writeable c")
        quals = check_qualifiers(qualifiers, C is not None)
        self._geom = g = geometry(A.shape, B.shape, None if C is None else C.shape,
                                  (A.dtype, B.dtype, None if C is None else C.dtype), quals)
        self._alpha = _scalar(alpha, 1, g.dtype, "alpha")
        self._beta = _scalar(beta if C is not None else None, 1 if C is not None else 0, g.dtype, "beta")
        if beta is not None and C is None:
            log.warning("beta=%r is ignored: no c was given", beta)
        self._init_placement(B, execution, stream, opts.blocking)
        if self._on_gpu != (A.device_id is not None):
            raise ValueError(f"a sparse matmul runs where its operands are: these are in "
                             f"{'GPU' if A.device_id is not None else 'host'} memory, but execution asks for the "
                             f"{'GPU' if self._on_gpu else 'CPU'}; move the operands or drop execution")
        self._init_operands({"a": A, "b": B, "c": C})
        self._prologs = None
        if log.isEnabledFor(logging.INFO):
            log.info("sparse matmul of %s %s: a %s %s (nnz %d) @ b %s%s -> %s, on %s", A.package, g.dtype,
                     A.format.upper(), list(A.shape), A.nnz, list(B.shape),
                     "" if C is None else f" + c {list(C.shape)}", list(g.result_shape),
                     "CPU" if not self._on_gpu else f"GPU {self._device}")

    @property
    def options(self) -> MatmulOptions:
        """The :class:`MatmulOptions` of this product."""
        return self._options

    @property
    def engine(self) -> str | None:
        """(cumath) The engine of the plan, 'mkl', 'scipy', 'cusparse' or 'generated' (None before plan())."""
        ex = self._executor
        return None if ex is None else ex.engine.name

    # ------------------------------------------------------------------------------------------ planning
    @requires_alive
    def plan(self, *, prologs: Any = None, epilog: Any = None, semiring: Any = None,
             compute_capability: ComputeCapabilityLike | None = None, stream: StreamLike = None) -> None:
        """Analyse ``a`` and prepare the engine (MKL's inspector, cuSPARSE's buffer and preprocessing).
        ``prologs`` (a dict of LTO-IR from :func:`compile_matmul_prolog` for 'a' and 'b'), ``epilog`` and
        ``semiring`` need a generated kernel (GPU); a cupyx or PyTorch sparse ``a`` is then read through a
        zero-copy Universal Sparse Tensor view of its arrays. Planning again replaces the plan.

        Products with prologs, an epilog or a semiring run on generated kernels for every format, cuSPARSE's
        included: cuSPARSE's cusparseSpMMOp takes no prologs (only add, mul and an epilogue), multiplies CSR only
        and is deprecated in cuSPARSE 12.9 (CUDA 13)."""
        if prologs or epilog is not None or semiring is not None:
            if not self._on_gpu:
                raise NotImplementedError("prologs, epilogs and semirings run in generated GPU kernels; on the "
                                          "CPU compute the transformed operands first")
            self._prologs = (prologs, epilog, semiring, compute_capability)
        alg = self._options.algorithm
        if alg not in (None, "autotune") and not self._on_gpu:
            raise ValueError(f"algorithm={alg!r} names a cuSPARSE algorithm, but this product runs on the CPU; "
                             f"choose the CPU engine with cpu_engine= (or algorithm='autotune' to measure it)")
        if self._planned:
            self._drop_plan()
        self._plan(stream)
        if alg == "autotune":
            try:
                self.autotune(stream=stream)
            except BaseException:
                self._drop_plan()
                raise

    @requires_alive
    def autotune(self, *, iterations: int = 5, stream: StreamLike = None) -> list:
        """(cumath) Choose by measurement what runs the planned product, and keep it: on the GPU, cuSPARSE's
        SpMM/SpMV algorithms for the stored format (CSR: DEFAULT, CSR_ALG1, CSR_ALG2, CSR_ALG3; BSR: DEFAULT,
        BSR_ALG1; SpMV: DEFAULT, CSR_ALG1, CSR_ALG2), each timed over ``iterations`` executions with CUDA events;
        on the CPU, MKL's sparse BLAS against SciPy when ``cpu_engine`` is 'auto'. The executions write a scratch
        result, never ``c``. ``MatmulOptions(algorithm='autotune')`` does this at plan(); a stateless call with
        those options reuses the tuned plan from the plan cache. A generated kernel has nothing to choose.

        Returns ``[(name, milliseconds per execution), ...]``, fastest first (the first one is kept)."""
        if self._executor is None or self._released:
            self._not_ready("autotune")
        if not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"iterations={iterations!r} must be an int >= 1")
        ex = self._executor
        if self._on_gpu:
            if not hasattr(ex, "autotune"):
                self._log.info("autotune: a generated kernel has no algorithms to choose from")
                return []
            s, explicit = self._stream_arg(stream)
            return self._ordered(s, explicit, ex.autotune, self._ops, self._alpha, self._beta, s, iterations)
        from ._autotune import autotune_cpu

        self._executor, times = autotune_cpu(self, ex, iterations)
        return times

    @property
    def algorithm(self) -> str | None:
        """(cumath) What runs the plan, cuSPARSE's algorithm name ('DEFAULT', 'CSR_ALG2', ...) on the GPU,
        'generated' for a generated kernel, the engine ('mkl', 'scipy') on the CPU; None before plan()."""
        ex = self._executor
        if ex is None:
            return None
        return getattr(ex, "algorithm", ex.engine.name)

    def _make_executor(self):
        if self._on_gpu:
            from ._device import DeviceExecutor
            from ._generated import GeneratedExecutor, wants_generated

            a = self._ops["a"]
            if wants_generated(a, self._options, self._prologs):
                if self._options.algorithm not in (None, "autotune"):
                    raise ValueError(f"algorithm={self._options.algorithm!r} names a cuSPARSE algorithm, but this "
                                     f"product runs on a generated kernel (a {a.format} operand, codegen, prologs, "
                                     f"an epilog or a semiring); drop algorithm=")
                return GeneratedExecutor(self._geom, a, self._ops, self._options, self._log, self._place,
                                         self._prologs)
            return DeviceExecutor(self._geom, self._ops, self._options, self._log, self._place, self._prologs)
        from ._backends import cpu_engine

        engine = cpu_engine(self._options.cpu_engine, self._log)
        if self._geom.dtype == "float16" or not getattr(engine, "supports", lambda d: True)(self._geom.dtype):
            engine = cpu_engine("scipy", self._log)
        return HostExecutor(self._geom, self._ops, engine, self._options, self._log, self._stream)

    # ----------------------------------------------------------------------------------------- execution
    def execute(self, *, stream: StreamLike = None) -> AnyTensor:
        """Compute with the current operands: the result (``c`` itself when given, else a new array of the
        operands' package and device)."""
        ex = self._executor
        if ex is None or self._released:
            self._not_ready("execute")
        ops = self._ops
        c = ops["c"]
        if c is None:
            obj, result = new_result(ops, self._geom, self._place.package) if not self._on_gpu else \
                ex.new_result(ops)
        else:
            obj, result = c.obj, c
        if not self._on_gpu:
            ex.execute(ops, self._alpha, self._beta, result)
            return obj
        s, explicit = self._stream_arg(stream)
        self._ordered(s, explicit, ex.execute, ops, self._alpha, self._beta, result, s)
        return obj

    # ------------------------------------------------------------------------------------------ operands
    def _bind(self, ops: dict, alpha=None, beta=None) -> None:
        super()._bind(ops)
        g = self._geom
        self._alpha = _scalar(alpha, 1, g.dtype, "alpha")
        self._beta = _scalar(beta if ops.get("c") is not None else None, 1 if ops.get("c") is not None else 0,
                             g.dtype, "beta")

    def reset_operands(self, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None, *,
                       alpha: complex | None = None, beta: complex | None = None, stream: StreamLike = None) -> None:
        """New operands of the planned kind (a: same package, device, format, shape, stored entries, dtypes and
        sparsity pattern, new values; b and c: same package, device, shape, strides and dtype); ``alpha`` and
        ``beta`` new scalars. Operands not given are kept. Passing nothing at all releases the operands."""
        if self._freed:
            self._not_ready("reset_operands", ())
        if a is None and b is None and c is None and alpha is None and beta is None:
            self.release_operands()
            return
        self._reset(a, b, c, alpha, beta, stream, checked=True)

    def reset_operands_unchecked(self, a: AnyTensor = None, b: AnyTensor = None, c: AnyTensor = None, *,
                                 alpha: complex | None = None, beta: complex | None = None,
                                 stream: StreamLike = None) -> None:
        """Like reset_operands, comparing only shapes, strides and dtypes (cheaper; the caller guarantees the
        rest, the sparsity pattern included)."""
        if self._freed:
            self._not_ready("reset_operands_unchecked", ())
        self._reset(a, b, c, alpha, beta, stream, checked=False)

    def _reset(self, a, b, c, alpha, beta, stream, checked: bool) -> None:
        generated = str(self._signatures["a"][2]).startswith("ust:")  # the planned a's format
        given = {"a": None if a is None else wrap_a(a, self._options, generated), "b": None if b is None else wrap_dense(b, "b"),
                 "c": None if c is None else wrap_dense(c, "c")}
        if c is not None and self._signatures["c"] is None:
            raise ValueError("this Matmul was created without c, so c cannot be reset; create a new Matmul with c")
        check_given_after_release(self._released, given,
                                  [k for k in self._NAMES if self._signatures.get(k) is not None])
        for name, op in given.items():
            if op is None:
                continue
            now = op.signature if checked else (op.shape, op.strides, op.dtype)
            if now != (self._signatures[name] if checked else self._quick[name]):
                raise ValueError(f"the new {name} does not match the planned one (package, device, shape, strides, "
                                 f"dtypes{', format and stored entries' if name == 'a' else ''} must be the same): "
                                 f"got {op!r}; create a new Matmul for it")
            if name == "c" and op.readonly:
                raise ValueError("c receives the result, but the new c is read-only")
        if checked and given["a"] is not None and self._executor is not None:
            self._executor.check_pattern(given["a"]) if hasattr(self._executor, "check_pattern") else None
        self._ops = {**self._ops, **{k: v for k, v in given.items() if v is not None}}
        self._released = False
        g = self._geom
        if alpha is not None:
            self._alpha = _scalar(alpha, 1, g.dtype, "alpha")
        if beta is not None:
            self._beta = _scalar(beta, 1, g.dtype, "beta")
        if stream is not None:
            self._use_stream(stream)
