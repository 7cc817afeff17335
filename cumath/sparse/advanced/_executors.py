"""How a sparse direct solve runs, chosen once when it is planned (``_core.executors.choose``): where the operands
live versus where the engine runs.

- CpuExecutor, kind "host": host operands, a CPU engine (PARDISO or SuperLU) on views of the caller's arrays.
- CpuExecutor, kind "device_to_host": GPU operands, a CPU engine on host copies (the pattern fetched once per
  plan, the values per factorization, the right-hand sides per solve; every copy logged).
- CudssExecutor, kind "device": GPU operands, cuDSS on the caller's arrays.
- CudssExecutor, kind "host_to_device": host operands, cuDSS on plan-owned device mirrors.
- CudssExecutor in hybrid mode (ExecutionHybrid): host operands read where they are by cuDSS's hybrid execution.

An executor has ``analyse(ops, stream)`` (plan), ``factorize(ops, stream)``, ``solve(ops, stream)`` (returns the
solution in the operands' package: an array of ``b``'s shape, each matrix column-major, or a list for a list
``b``), ``info(name)``, ``nbytes`` and ``free()``. Copies are made only where an engine cannot read the operand
as it is (a right-hand side that is not column-major, int64 indices for cuDSS, a pattern PARDISO cannot take),
and logged. A solve whose factorization perturbed pivots is checked (``_traits.relative_residual``) and raises
SingularMatrixError when the residual shows the solution is not one. A structurally singular ``a`` (an empty row
or column) raises before cuDSS's analysis reads it (and before PARDISO's, for general matrices).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..._core import cuda
from ..._core.dtypes import ITEMSIZE
from ..._core.executors import DeviceMirror, choose, host_array
from ..._core.frameworks.numpy import from_pointer
from ..._core.layout import dense_strides
from ..._core.logging import format_bytes
from ..._core.operand import Operand, adapter
from ...errors import SingularMatrixError, UnsupportedLayoutError
from ...memory import default_allocator
from ._backends import cpu_backend, default_threads
from ._backends.cudss import SETTINGS, CudssSolver
from ._config import ALL_FIELDS
from ._timing import Steps
from ._traits import (batch_offsets, column_major, gaps_message, relative_residual, residual_tolerance,
                      result_perm, structurally_singular)

__all__ = ["Setup", "make_executor", "CpuExecutor", "CudssExecutor"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Setup:
    """What an executor is built from besides the problem and the operands."""

    problem: object  # _traits.Problem
    options: object  # DirectSolverOptions
    settings: dict  # the solver's settings (name -> value or None), shared and live
    placement: object  # _core.placement.Placement
    sparse_execution: object  # _execution.SparseExecution
    log: logging.Logger

    @property
    def threads(self) -> int:
        if self.placement.user_threads:
            return self.placement.execution.num_threads
        return default_threads()

    def allocator(self):
        p = self.placement
        return self.options.allocator or default_allocator(p.package, p.device)


# ------------------------------------------------------------------------------------------------ operands

def _offsets(shape, strides) -> list:
    """Element offsets of the rows of a component array (one per system; [0] for a 1-D one)."""
    if len(shape) <= 1:
        return [0]
    return batch_offsets(tuple(shape), tuple(strides), len(shape) - 1)


def systems(a, count: int) -> list:
    """Per system: ``((indptr address, n + 1), (indices address, nnz), (values address, nnz))``."""
    out = []
    for csr in (a if isinstance(a, tuple) else (a,)):
        parts = []
        for op, what in ((csr.indptr, "row offsets"), (csr.indices, "column indices"), (csr.values, "values")):
            if op.strides[-1] != 1 and op.shape[-1] > 1:
                raise UnsupportedLayoutError(f"a's {what} are not contiguous (stride {op.strides[-1]}); pass a copy")
            parts.append([(op.ptr + o * op.itemsize, op.shape[-1]) for o in _offsets(op.shape, op.strides)])
        out.extend(zip(*parts))
    return out[:count]


def _rhs_operands(b) -> tuple:
    return b if isinstance(b, tuple) else (b,)


def _sample(r, op: Operand, i: int, p) -> tuple:
    """(address, Rhs) of system ``i``'s right-hand side (or solution) inside ``op``, an array of the caller's ``b``
    shape that may have other strides than ``b`` (a copy, a result)."""
    if op.ndim == 1:
        return op.ptr, type(r)(r.rows, 1, 0, op.strides[0], r.rows, True)
    off = batch_offsets(op.shape, op.strides, op.ndim - 2)[i] if p.rhs_form == "implicit" else 0
    return op.ptr + off * op.itemsize, type(r)(r.rows, r.cols, 0, op.strides[-2], op.strides[-1], False)


def _host_view(ptr: int, r, dtype: str):
    """The NumPy view of one right-hand side at host address ``ptr`` (1-D for a vector)."""
    if r.vector:
        return from_pointer(ptr, (r.rows,), (r.row_stride,), dtype)
    return from_pointer(ptr, (r.rows, r.cols), (r.row_stride, r.col_stride), dtype)


def _empty_results(b, device_id) -> list:
    """New solution arrays for ``b`` (its package, on ``device_id``): per operand, each matrix column-major."""
    return [adapter(op.package).empty(op.shape, op.dtype, device_id, result_perm(op.ndim)) for op in _rhs_operands(b)]


def _wrap(results, b):
    return list(results) if isinstance(b, tuple) else results[0]


def _numpy_operand(x) -> Operand:
    """A host array (NumPy, or a CPU tensor through its memory) as a NumPy Operand."""
    if isinstance(x, np.ndarray):
        return adapter("numpy").wrap(x)
    from ..._core.frameworks.numpy import view
    from ..._core.operand import wrap_operand

    return adapter("numpy").wrap(view(wrap_operand(x)))


def _fetch(ptr: int, shape, dtype: str, stream, what: str) -> np.ndarray:
    """A host copy of the dense (C-ordered) array at device address ``ptr``."""
    out = np.empty(shape, dtype=dtype)
    if out.nbytes:
        cuda.copy(out.ctypes.data, ptr, out.nbytes, cuda.D2H, stream, what)
        cuda.synchronize(stream)
    return out


def _own_perm(op: Operand) -> tuple:
    return tuple(sorted(range(op.ndim), key=lambda ax: -abs(op.strides[ax])))


def _fetch_operand(op: Operand, stream, what: str) -> Operand:
    """A host copy of a GPU array (one copy when it is dense in its own memory order), as a NumPy Operand."""
    perm = _own_perm(op)
    if not op.is_dense_in(perm):
        pkg = adapter(op.package)
        dense = pkg.empty(op.shape, op.dtype, op.device_id, None)
        pkg.copy_into(dense, op.obj)
        return adapter("numpy").wrap(_fetch(pkg.pointer(dense), op.shape, op.dtype, stream, what))
    out = host_array(op.shape, op.dtype, perm)
    if out.nbytes:
        cuda.copy(out.__array_interface__["data"][0], op.ptr, out.nbytes, cuda.D2H, stream, what)
        cuda.synchronize(stream)
    return adapter("numpy").wrap(out)


def _check_solution(p, options, arrays, x, b, i: int, perturbed: int, log, raise_: bool = True,
                    res: float | None = None) -> bool:
    """Whether a solution computed with ``perturbed`` (or tiny) pivots is one (``arrays``: the host CSR arrays of
    system ``i``; ``res``: its relative residual where the caller has it); with ``raise_``, SingularMatrixError
    when its residual shows the matrix is singular or too ill-conditioned."""
    if res is None:
        res = relative_residual(*arrays, x, b, options.sparse_system_type, options.sparse_system_view)
    tol = residual_tolerance(p.dtype)
    which = "" if p.count == 1 else f" (system {i})"
    log.info("solution check%s: %d perturbed pivots, relative residual %.3g (tolerance %.3g)", which, perturbed, res,
             tol)
    if res <= tol:
        return True
    if raise_:
        raise SingularMatrixError(
            f"a{which} is singular or numerically singular: the factorization had {perturbed} perturbed or tiny "
            f"pivot(s) and the solution's relative residual ||b - a x|| / ||b|| is {res:.3g} (more than {tol:.3g}); "
            f"check a for empty or dependent rows and columns, or solve in higher precision")
    return False


def _combine(values, name: str):
    """One system's value, or the batch's (totals of counts; the first non-zero info)."""
    if len(values) == 1:
        return values[0]
    if name in ("lu_nnz", "npivots"):
        return int(sum(values))
    if name == "info":
        return next((v for v in values if v), 0)
    if name == "inertia":
        return np.sum(values, axis=0).astype(np.int32)
    raise RuntimeError(f"{name} is not available for batched systems")


# ------------------------------------------------------------------------------------------------ CPU engines

class CpuExecutor:
    """A CPU engine's plans, one per system, on host operands or on host copies of GPU ones (``staged``)."""

    def __init__(self, setup: Setup, ops: dict, staged: bool):
        self.setup, self.staged, self.problem = setup, staged, setup.problem
        opts, p = setup.options, setup.problem
        self.engine = cpu_backend(opts.cpu_engine, setup.log)
        self.plans = [self.engine.plan(n, p.dtype, p.index_dtype, opts.sparse_system_type, opts.sparse_system_view,
                                       setup.settings, setup.threads, setup.log) for n in p.sizes]
        self.patterns = [None] * p.count  # staged: host copies of each system's (indptr, indices)
        self.values = [None] * p.count  # staged: host copies of the values (of the last factorization)
        self.b_copies = [None] * p.count  # column-major copies of right-hand sides an engine cannot read in place
        self.copy_logged = False
        self.timings = {}  # phase -> {step: ms} of its last run (_timing.Steps)

    @property
    def nbytes(self) -> int:
        held = sum(x.nbytes for pair in self.patterns if pair for x in pair)
        held += sum(v.nbytes for v in self.values if v is not None)
        return held + sum(pl.nbytes for pl in self.plans)

    def _arrays(self, a, stream) -> list:
        """Per system: the host (indptr, indices, values) arrays the engine reads (staged: fetched now)."""
        first = a[0] if isinstance(a, tuple) else a
        dtypes = (first.indptr.dtype, first.index_dtype, first.dtype)
        out = []
        for i, parts in enumerate(systems(a, self.problem.count)):
            if not self.staged:
                out.append(tuple(from_pointer(ptr, (n,), (1,), dt) for (ptr, n), dt in zip(parts, dtypes)))
                continue
            if self.patterns[i] is None:
                self.patterns[i] = tuple(_fetch(ptr, (n,), dt, stream, "sparsity pattern")
                                         for (ptr, n), dt in zip(parts[:2], dtypes[:2]))
            ptr, n = parts[2]
            if self.values[i] is None:
                self.values[i] = np.empty(n, dtype=dtypes[2])
            if n:
                cuda.copy(self.values[i].ctypes.data, ptr, self.values[i].nbytes, cuda.D2H, stream, "a's values")
            out.append(self.patterns[i] + (self.values[i],))
        if self.staged:
            cuda.synchronize(stream)
        return out

    def analyse(self, ops: dict, stream) -> None:
        steps = Steps(self.timings, "plan", self.setup.log)
        self.patterns = [None] * self.problem.count  # the pattern may be another one since the last analysis
        a = ops["a"]
        csrs = a if isinstance(a, tuple) else (a,) * self.problem.count
        arrays = self._arrays(a, stream)
        steps.step("arrays" + (" (copied from the GPU)" if self.staged else ""))
        for plan, arr, csr in zip(self.plans, arrays, csrs):
            plan.analyse(*arr, canonical=csr.canonical)
        steps.step(f"{self.engine.name} analysis")
        steps.done()

    def factorize(self, ops: dict, stream) -> None:
        steps = Steps(self.timings, "factorize", self.setup.log)
        arrays = self._arrays(ops["a"], stream)
        steps.step("arrays" + (" (values copied from the GPU)" if self.staged else ""))
        for plan, arr in zip(self.plans, arrays):
            plan.factorize(*arr)
        steps.step(f"{self.engine.name} factorization")
        steps.done()

    def solve(self, ops: dict, stream):
        a, b, p = ops["a"], ops["b"], self.problem
        if self.staged:  # the values of the last factorization
            arrays = [pat + (v,) for pat, v in zip(self.patterns, self.values)]
            sources = [_fetch_operand(op, stream, "b") for op in _rhs_operands(b)]
            results = [host_array(op.shape, op.dtype, result_perm(op.ndim)) for op in _rhs_operands(b)]
        else:
            arrays = self._arrays(a, stream)
            sources = list(_rhs_operands(b))
            results = _empty_results(b, None)
        outs = [_numpy_operand(x) for x in results]
        for i, (plan, r) in enumerate(zip(self.plans, p.rhs)):
            k = p.rhs_operand[i]
            ptr, rr = _sample(r, sources[k], i, p)
            bi = _host_view(ptr, rr, p.dtype)
            if column_major(rr, exact=True) is None:
                bi = self._dense_copy(i, bi)
            ptr, xr = _sample(r, outs[k], i, p)
            xi = _host_view(ptr, xr, p.dtype)
            plan.solve(arrays[i][2], bi, xi)
            if plan.perturbed:
                self._checked(plan, p, arrays[i], xi, bi, i)
        if self.staged:
            return _wrap([self._store(x, op, stream) for x, op in zip(results, _rhs_operands(b))], b)
        return _wrap(results, b)

    def _checked(self, plan, p, arrays, xi, bi, i: int) -> None:
        """The check of a solution computed with perturbed pivots. An engine that can factorize again another way
        (``plan.recover``) does so while the relative residual is above sqrt(eps) (1.5e-8 in double: a perturbed
        solution that refinement left only that accurate; a stable one of a matrix with condition number up to
        about eps ** -(1/2) stays under it); the last solution is accepted up to ``residual_tolerance``, above it
        the matrix is singular (SingularMatrixError)."""
        opts = self.setup.options
        recover = getattr(plan, "recover", None)
        fine = float(np.finfo(np.dtype(p.dtype)).eps) ** 0.5
        while True:  # one residual per solution
            res = relative_residual(*arrays, xi, bi, opts.sparse_system_type, opts.sparse_system_view)
            if recover is None or res <= fine or not recover(*arrays):
                break
            plan.solve(arrays[2], bi, xi)
            if not plan.perturbed:
                return
        _check_solution(p, opts, arrays, xi, bi, i, plan.perturbed, self.setup.log, res=res)

    def _dense_copy(self, i: int, bi: np.ndarray) -> np.ndarray:
        buf = self.b_copies[i]
        if buf is None or buf.shape != bi.shape:
            buf = self.b_copies[i] = np.empty(bi.shape, dtype=bi.dtype, order="F")
            if not self.copy_logged:
                self.copy_logged = True
                self.setup.log.info("b is not column-major: the CPU engine reads a column-major copy (%s per solve)",
                                    format_bytes(bi.nbytes))
        np.copyto(buf, bi)
        return buf

    def _store(self, host: np.ndarray, op: Operand, stream):
        pkg = adapter(op.package)
        dst = pkg.empty(op.shape, op.dtype, op.device_id, result_perm(op.ndim))
        if host.nbytes:
            cuda.copy(pkg.pointer(dst), host.__array_interface__["data"][0], host.nbytes, cuda.H2D, stream,
                      "solution")
            cuda.synchronize(stream)
        return dst

    def info(self, name: str, ops: dict):
        name = name[5:] if name.startswith("plan_") else name
        if name == "diag":
            again = [getattr(plan, "enable_diagonal", lambda: False)() for plan in self.plans]
            if any(again):
                self.setup.log.info("analysing and factorizing again to read the factors' diagonal (PARDISO keeps it "
                                    "only when told before the analysis)")
                for plan, arrays, redo in zip(self.plans, self._arrays(ops["a"], self.setup.placement.stream),
                                              again):
                    if redo:
                        plan.analyse(*arrays)
                        plan.factorize(*arrays)
        return _combine([plan.info(name) for plan in self.plans], name)

    def setting(self, name: str):
        return None  # the engine's default

    def apply_setting(self, name: str, value) -> None:
        pass  # the plans read the live settings at each phase

    def free(self) -> None:
        for plan in self.plans:
            plan.free()
        self.plans = []


# ------------------------------------------------------------------------------------------------ cuDSS

class CudssExecutor:
    """cuDSS on GPU operands ("device"), on device mirrors of host ones ("upload"), or on host operands read by
    cuDSS's hybrid execution ("hybrid")."""

    def __init__(self, setup: Setup, ops: dict, mode: str):
        p, opts, place = setup.problem, setup.options, setup.placement
        self.setup, self.problem, self.mode = setup, p, mode
        if mode == "hybrid" and (p.count > 1 or p.nrhs > 1):
            raise ValueError("hybrid execution solves one system with one right-hand side; use ExecutionCUDA for "
                             "batches and several right-hand sides")
        if max(p.sizes) >= 2 ** 31 or max(p.nnz) >= 2 ** 31:
            raise ValueError("cuDSS reads 32-bit indices: a has too many rows or stored entries for it")
        self.device = place.device
        self.timings = {}  # phase -> {step: ms} of its last run (_timing.Steps)
        self._plan_steps = Steps(self.timings, "plan", setup.log, self._sync(place.stream))
        self.allocator = setup.allocator()
        self.solver = CudssSolver(count=p.count, sizes=p.sizes, nnz=p.nnz, dtype=p.dtype,
                                  mtype=opts.sparse_system_type, view=opts.sparse_system_view, device_id=self.device,
                                  handle=opts.handle, threading_lib=opts.multithreading_lib,
                                  execution=setup.sparse_execution, threads=setup.threads, allocator=self.allocator,
                                  settings=setup.settings, log=setup.log, steps=self._plan_steps,
                                  cudss_config=opts.cudss_config)
        self.index32 = None  # per system (indptr, indices) addresses of plan-owned int32 copies of the pattern
        self.keep = []  # what backs index32
        self.mirrors = {}  # upload mode: name -> DeviceMirror
        self.b_copies = {}
        self.logged = set()
        self.known_patterns = None  # host (indptr, indices) per system the caller already read, for one analysis

    @property
    def nbytes(self) -> int:
        return self.solver.nbytes + sum(m.nbytes for m in self.mirrors.values())

    @staticmethod
    def _sync(stream):
        """The wait of a timed step (made only when the log shows the steps: _timing)."""
        return lambda: cuda.synchronize(stream)

    def _mirror(self, key: str, shape, dtype: str, stream, perm=None) -> DeviceMirror:
        m = self.mirrors.get(key)
        if m is None:
            m = self.mirrors[key] = DeviceMirror(shape, dtype, perm, self.allocator, stream, key)
        return m

    # ------------------------------------------------------------------------------------------ the matrix
    def _pattern(self, a, stream) -> list:
        """Per system: the (indptr, indices) addresses cuDSS reads (int32 copies, made once per plan, for int64
        patterns and for host operands staged to the GPU; the caller's arrays otherwise)."""
        if self.index32 is not None:
            return self.index32
        csrs = a if isinstance(a, tuple) else (a,)
        wide = any(c.index_dtype != "int32" or c.indptr.dtype != "int32" for c in csrs)
        if not wide and self.mode != "upload":
            return [(parts[0][0], parts[1][0]) for parts in systems(a, self.problem.count)]
        if wide:
            nbytes = sum(4 * (c.indptr.size + c.indices.size) for c in csrs)
            self.setup.log.info("cuDSS reads int32 indices: a's int64 pattern is converted once per plan (%s)",
                                format_bytes(nbytes))
        out, self.keep = [], []  # copies of an earlier pattern go (work queued on the stream still reads them)
        for j, c in enumerate(csrs):
            per = [[ptr + 4 * o for o in _offsets(shape, dense_strides(shape, range(len(shape))))]
                   for ptr, shape in (self._int32(op, f"{what}{j}", stream) for op, what in
                                      ((c.indptr, "indptr"), (c.indices, "indices")))]
            out.extend(zip(*per))
        self.index32 = out[:self.problem.count]
        return self.index32

    def _int32(self, op: Operand, key: str, stream):
        """(address, shape) of a dense int32 copy of index array ``op`` where cuDSS reads it."""
        if self.mode == "device":
            pkg = adapter(op.package)
            dst = pkg.empty(op.shape, "int32", op.device_id, None)
            pkg.copy_into(dst, op.obj)
            self.keep.append(dst)
            return pkg.pointer(dst), op.shape
        host = np.ascontiguousarray(from_pointer(op.ptr, op.shape, op.strides, op.dtype), dtype=np.int32)
        self.keep.append(host)
        if self.mode == "hybrid":
            return host.ctypes.data, op.shape
        m = self._mirror(key, op.shape, "int32", stream)
        m.upload(adapter("numpy").wrap(host), stream)
        return m.ptr, op.shape

    def _values(self, a, stream) -> list:
        if self.mode != "upload":
            return [s[2][0] for s in systems(a, self.problem.count)]
        ptrs = []
        for j, c in enumerate(a if isinstance(a, tuple) else (a,)):
            m = self._mirror(f"values{j}", c.values.shape, c.dtype, stream)
            m.upload(c.values, stream)
            ptrs.extend(m.ptr + o * ITEMSIZE[c.dtype] for o in _offsets(c.values.shape, m.strides))
        return ptrs[:self.problem.count]

    def _bind_a(self, a, stream) -> None:
        values = self._values(a, stream)
        self.solver.set_a([(pa, pi, v) for (pa, pi), v in zip(self._pattern(a, stream), values)], stream)

    # ---------------------------------------------------------------------------------------- dense operands
    def _bind_b(self, b, stream) -> None:
        """Point cuDSS at the right-hand sides, column-major (copies where they are not, logged)."""
        p = self.problem
        used = []
        for k, op in enumerate(_rhs_operands(b)):
            direct = all(column_major(r, exact=False) is not None
                         for i, r in enumerate(p.rhs) if p.rhs_operand[i] == k)
            if self.mode == "upload":
                m = self._mirror(f"b{k}", op.shape, op.dtype, stream, _own_perm(op) if direct else
                                 result_perm(op.ndim))
                m.upload(op, stream)
                used.append(Operand(None, m.ptr, op.shape, m.strides, op.dtype, self.device, op.package))
            elif direct:
                used.append(op)
            else:
                if "b" not in self.logged:
                    self.logged.add("b")
                    self.setup.log.info("b is not column-major: cuDSS reads a column-major copy (%s per solve)",
                                        format_bytes(op.nbytes))
                used.append(self._column_major_copy(k, op))
        items = []
        for i, r in enumerate(p.rhs):
            ptr, rr = _sample(r, used[p.rhs_operand[i]], i, p)
            items.append((ptr, rr.rows, rr.cols, column_major(rr, exact=False)))
        self.solver.set_b(items, stream)

    def _column_major_copy(self, k: int, op: Operand) -> Operand:
        perm = result_perm(op.ndim) or tuple(range(op.ndim))  # a (strided) vector: a contiguous one
        if self.mode == "hybrid":
            dst = host_array(op.shape, op.dtype, perm)
            np.copyto(dst, from_pointer(op.ptr, op.shape, op.strides, op.dtype))
            self.b_copies[k] = dst
            return adapter("numpy").wrap(dst)
        pkg = adapter(op.package)
        dst = pkg.empty(op.shape, op.dtype, op.device_id, perm)
        pkg.copy_into(dst, op.obj)
        self.b_copies[k] = dst  # kept until the next solve replaces it
        return Operand(dst, pkg.pointer(dst), op.shape, dense_strides(op.shape, perm), op.dtype, op.device_id,
                       op.package)

    # ------------------------------------------------------------------------------------------ phases
    def analyse(self, ops: dict, stream) -> None:
        """cuDSS's analysis (reordering and symbolic factorization, on the host), each host-side step before and
        after it timed (``timings['plan']``, one DEBUG line each): for a new plan its first steps are the
        solver's creation (handle, config and data objects, threading layer and settings)."""
        steps, self._plan_steps = self._plan_steps, None
        if steps is None:  # planning again
            steps = Steps(self.timings, "plan", self.setup.log, self._sync(stream))
        self.index32 = None  # the pattern may be another one since the last analysis
        a = ops["a"]
        self._check_structure(a, stream)
        steps.step("structure check (empty rows and columns)")
        pattern = self._pattern(a, stream)
        steps.step("pattern (int32 copies where a's indices are not)")
        values = self._values(a, stream)
        self.solver.set_a([(pa, pi, v) for (pa, pi), v in zip(pattern, values)], stream)
        steps.step("a's matrix object")
        self._bind_b(ops["b"], stream)
        steps.step("b's matrix object")
        self.solver.analyse(stream, steps)
        steps.done()

    def _check_structure(self, a, stream) -> None:
        """A structurally singular ``a`` (an empty row or column) raises SingularMatrixError before cuDSS sees it:
        cuDSS's status does not say so, and whether its pivots do depends on its matching and pivoting settings
        (a pivot that is NaN, or exactly zero with perturbation off, is not counted as perturbed), so the solve
        could return garbage unchecked. GPU patterns are checked on the GPU (two kernels and one wait); host
        patterns, and GPU ones where those kernels cannot be built, on the host (GPU ones copied there)."""
        p = self.problem
        first = a[0] if isinstance(a, tuple) else a
        dtypes = (first.indptr.dtype, first.index_dtype)
        gpu = first.device_id is not None
        known, self.known_patterns = self.known_patterns, None
        view = self.setup.options.sparse_system_view
        whys = None
        if gpu and self.mode == "device":
            gaps = self.solver.pattern_gaps([(parts[0][0], parts[1][0]) for parts in systems(a, p.count)], dtypes,
                                            stream)
            if gaps is not None:
                whys = [gaps_message(rows, lines, view) for rows, lines in gaps]
        if whys is None:
            whys = [structurally_singular(indptr, indices, p.sizes[i], view)
                    for i, (indptr, indices) in enumerate(self._host_patterns(a, known, dtypes, gpu, stream))]
        for i, why in enumerate(whys):
            if why is not None:
                which = "" if p.count == 1 else f" (system {i})"
                raise SingularMatrixError(f"a{which} is singular or numerically singular: it is structurally singular "
                                          f"({why}), so no factorization solves it; check a for empty rows and "
                                          f"columns")

    def _host_patterns(self, a, known, dtypes, gpu: bool, stream) -> list:
        """Per system the host (indptr, indices) arrays: the stateless call's copies where it made them, views
        of host arrays, copies of GPU ones (one wait)."""
        p = self.problem
        if known is not None and len(known) == p.count and all(x.ndim == 1 for pair in known for x in pair):
            return known
        found = []
        for parts in systems(a, p.count):
            arrays = []
            for (ptr, n), dt in zip(parts[:2], dtypes):
                if not gpu:
                    arrays.append(from_pointer(ptr, (n,), (1,), dt))
                    continue
                host = np.empty(n, dtype=dt)
                if host.nbytes:
                    cuda.copy(host.ctypes.data, ptr, host.nbytes, cuda.D2H, stream, "a's pattern (structure check)")
                arrays.append(host)
            found.append(arrays)
        if gpu:
            cuda.synchronize(stream)
        return found

    def factorize(self, ops: dict, stream) -> None:
        steps = Steps(self.timings, "factorize", self.setup.log, self._sync(stream))
        self._bind_a(ops["a"], stream)
        steps.step("a's values")
        self.solver.factorize(stream, steps)
        steps.done()

    def solve(self, ops: dict, stream):
        """Solve with the factors of the last factorize() (whose matrix cuDSS also reads to refine)."""
        steps = Steps(self.timings, "solve", self.setup.log, self._sync(stream))
        a, b, p = ops["a"], ops["b"], self.problem
        self._bind_b(b, stream)
        rhs_ops = _rhs_operands(b)
        if self.mode == "upload":
            mirrors = [self._mirror(f"x{k}", op.shape, op.dtype, stream, result_perm(op.ndim))
                       for k, op in enumerate(rhs_ops)]
            outs = [Operand(None, m.ptr, op.shape, m.strides, op.dtype, self.device, op.package)
                    for m, op in zip(mirrors, rhs_ops)]
        else:
            results = _empty_results(b, self.device if self.mode == "device" else None)
            outs = [adapter(op.package).wrap(x) for x, op in zip(results, rhs_ops)]
        items = []
        for i, r in enumerate(p.rhs):
            ptr, xr = _sample(r, outs[p.rhs_operand[i]], i, p)
            items.append((ptr, xr.rows, xr.cols, column_major(xr, exact=False)))
        self.solver.set_x(items, stream)
        steps.step("b's and x's matrix objects (and the result's allocation)")
        for attempt in range(2):
            self.solver.solve(stream, steps)
            if self.mode == "upload":
                results = _empty_results(b, None)
                for m, x in zip(mirrors, results):
                    m.download(_numpy_operand(x).obj, stream)
            if not self.solver.perturbed or self._check(a, b, results, stream, raise_=attempt > 0):
                break
            if not self.solver.pivot_globally(stream):
                self._check(a, b, results, stream, raise_=True)
            steps.step("solution check and global pivoting")
        steps.done()
        return _wrap(results, b)

    def _check(self, a, b, results, stream, raise_: bool) -> bool:
        """The residual check of a factorization with perturbed pivots (on host copies of GPU arrays)."""
        p = self.problem
        first = a[0] if isinstance(a, tuple) else a
        dtypes = (first.indptr.dtype, first.index_dtype, first.dtype)
        gpu = first.device_id is not None
        host = (lambda op, what: _fetch_operand(op, stream, what)) if gpu else (lambda op, what: op)
        bs = [host(op, "b (solution check)") for op in _rhs_operands(b)]
        xs = [host(adapter(op.package).wrap(x), "x (solution check)") for x, op in zip(results, _rhs_operands(b))]
        for i, parts in enumerate(systems(a, p.count)):
            arrays = tuple(_fetch(ptr, (n,), dt, stream, "a (solution check)") if gpu else
                           from_pointer(ptr, (n,), (1,), dt) for (ptr, n), dt in zip(parts, dtypes))
            r, k = p.rhs[i], p.rhs_operand[i]
            bi = _host_view(*_sample(r, bs[k], i, p), p.dtype)
            xi = _host_view(*_sample(r, xs[k], i, p), p.dtype)
            if not _check_solution(p, self.setup.options, arrays, xi, bi, i, self.solver.perturbed, self.setup.log,
                                   raise_):
                return False
        return True

    def info(self, name: str, ops: dict):
        return self.solver.info(name)

    def setting(self, name: str):
        kind = ALL_FIELDS[name][0]
        value = self.solver.config_get(SETTINGS[name])
        if kind is bool:
            return bool(value)
        return kind(value)

    def apply_setting(self, name: str, value) -> None:
        if value is not None:
            self.solver.config_set(SETTINGS[name], value)

    def free(self) -> None:
        self.solver.free()
        for m in self.mirrors.values():
            m.free()
        self.mirrors.clear()
        self.keep.clear()
        self.b_copies.clear()


# ------------------------------------------------------------------------------------------------ choice

_FACTORIES = {
    "host": lambda setup, ops: CpuExecutor(setup, ops, staged=False),
    "device_to_host": lambda setup, ops: CpuExecutor(setup, ops, staged=True),
    "device": lambda setup, ops: CudssExecutor(setup, ops, "device"),
    "host_to_device": lambda setup, ops: CudssExecutor(setup, ops, "upload"),
}


def make_executor(setup: Setup, ops: dict):
    """The executor of the solver's placement (hybrid execution: cuDSS on the operands where they are)."""
    place = setup.placement
    if setup.sparse_execution is not None and setup.sparse_execution.kind == "hybrid":
        return CudssExecutor(setup, ops, "hybrid" if place.operand_device is None else "device")
    return choose(_FACTORIES, place.operand_device is not None, place.on_gpu, setup, ops)
