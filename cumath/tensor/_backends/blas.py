"""The CPU engine of the contractions: each pairwise step is a (batched) GEMM of CBLAS (NumPy's OpenBLAS by
default) on the operands' own memory wherever their strides nest into matrices, else on one dense copy.

Per step (see ``_traits.gemm_geometry``): modes of one input only are summed out first; inputs whose strides
do not form a matrix, that carry a unary operator, or whose dtype BLAS lacks (half and bfloat16 compute in
float32) are copied once into the dense order [batch, m, k] / [batch, k, n]; the product is written into the
result directly when its strides allow, else into a dense scratch that is then added into place. Batches of
small products are split over threads (one BLAS thread each; stacks from 2^24 multiply-adds, from 2^20 when
the caller named a thread count); large products use BLAS's own threads.
"""

from __future__ import annotations

import ctypes
import logging

import numpy as np

from ..._bindings import blas
from ..._core.frameworks.numpy import from_pointer
from ..._core.layout import dense_strides
from ..._core.logging import format_bytes
from ..._core.threads import worker_pool
from .._options import Operator
from .._traits import batch_offsets, gemm_geometry

__all__ = ["ContractionCPU", "host_view", "to_compute", "from_compute"]

logger = logging.getLogger(__name__)

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_COMPUTE = {"float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float64",
            "complex64": "complex64", "complex128": "complex128"}
_TRANS = {("N", False): 111, ("T", False): 112, ("T", True): 113, ("N", True): 114}
_ROW = int(blas.CBLAS_ORDER.CblasRowMajor)
_SMALL = 96 ** 3  # multiply-adds of one product below which a batch is split over threads

_UNARY = {
    Operator.OP_SQRT: np.sqrt, Operator.OP_RELU: lambda x: np.maximum(x, 0), Operator.OP_CONJ: np.conj,
    Operator.OP_RCP: np.reciprocal, Operator.OP_SIGMOID: lambda x: 1 / (1 + np.exp(-x)), Operator.OP_TANH: np.tanh,
    Operator.OP_EXP: np.exp, Operator.OP_LOG: np.log, Operator.OP_ABS: np.abs, Operator.OP_NEG: np.negative,
    Operator.OP_SIN: np.sin, Operator.OP_COS: np.cos, Operator.OP_TAN: np.tan, Operator.OP_SINH: np.sinh,
    Operator.OP_COSH: np.cosh, Operator.OP_ASIN: np.arcsin, Operator.OP_ACOS: np.arccos,
    Operator.OP_ATAN: np.arctan, Operator.OP_ASINH: np.arcsinh, Operator.OP_ACOSH: np.arccosh,
    Operator.OP_ATANH: np.arctanh, Operator.OP_CEIL: np.ceil, Operator.OP_FLOOR: np.floor,
    Operator.OP_MISH: lambda x: x * np.tanh(np.logaddexp(0, x)),
    Operator.OP_SWISH: lambda x: x / (1 + np.exp(-x)), Operator.OP_SOFT_PLUS: lambda x: np.logaddexp(0, x),
    Operator.OP_SOFT_SIGN: lambda x: x / (np.abs(x) + 1),
}

def _pool(n: int):
    return worker_pool("tensor", n)


def host_view(ptr: int, shape, strides, dtype: str) -> np.ndarray:
    """A NumPy view of host memory in the compute dtype's storage (bfloat16 as uint16 bits)."""
    return from_pointer(ptr, tuple(shape), tuple(strides), "uint16" if dtype == "bfloat16" else dtype)


def to_compute(x: np.ndarray, dtype: str, cdt: str) -> np.ndarray:
    """``x`` (storage of ``dtype``) as values of the compute dtype (a copy when they differ)."""
    if dtype == "bfloat16":
        return (x.astype(np.uint32) << 16).view(np.float32)
    return x if dtype == cdt else x.astype(cdt)


def from_compute(x: np.ndarray, dtype: str) -> np.ndarray:
    """Compute-dtype values as the storage of ``dtype`` (bfloat16: rounded to nearest even)."""
    if dtype == "bfloat16":
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
        rounded = bits + (np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1)))
        out = (rounded >> 16).astype(np.uint16)
        nan = np.isnan(x)
        if nan.any():
            out[nan] = 0x7FC0
        return out
    return x.astype(dtype, copy=False)


class _Input:
    """How one step reads an input: straight from memory (a view) or from a dense copy made first."""

    def __init__(self, source, modes, strides, order, sum_modes, extents, op, dtype, cdt, direct):
        self.source, self.modes, self.strides = source, tuple(modes), tuple(strides)
        self.order, self.sum_modes, self.extents = tuple(order), tuple(sum_modes), extents
        self.op, self.dtype, self.cdt, self.direct = op, dtype, cdt, direct
        self.buffer = None if direct else np.empty([extents[m] for m in order], dtype=cdt)

    def prepare(self, ptr: int) -> int:
        """The address the GEMM reads (the operand itself, or the dense copy filled now)."""
        if self.direct:
            return ptr
        x = host_view(ptr, [self.extents[m] for m in self.modes], self.strides, self.dtype)
        axes = [self.modes.index(m) for m in self.order + self.sum_modes]
        x = to_compute(x.transpose(axes), self.dtype, self.cdt)
        fn = _UNARY.get(self.op)
        if fn is not None:
            x = fn(x)
        if self.sum_modes:
            np.sum(x, axis=tuple(range(len(self.order), len(axes))), out=self.buffer)
        else:
            np.copyto(self.buffer, x, casting="unsafe")
        return self.buffer.ctypes.data


class _Step:
    """One pairwise step compiled for CBLAS."""

    def __init__(self, lib, geo, x: _Input, y: _Input, x_off, y_off, z_off, z_ld, final: bool, num_threads: int,
                 split_min: int = 0):
        self.lib, self.geo, self.x, self.y, self.final = lib, geo, x, y, final
        self.x_off, self.y_off, self.z_off = x_off, y_off, z_off
        cdt = x.cdt
        self.cdt = cdt
        self.itemsize = np.dtype(cdt).itemsize
        self.gemm = getattr(lib, f"cblas_{_PREFIX[cdt]}gemm")
        self.complex = cdt.startswith("complex")
        g = geo
        xv, yv = g.x, g.y
        cx = x.op == Operator.OP_CONJ and x.direct and self.complex
        cy = y.op == Operator.OP_CONJ and y.direct and self.complex
        if g.swap:  # Z^T = Y^T X^T
            flip = {"N": "T", "T": "N"}
            self.head = (_ROW, _TRANS[flip[yv.trans], cy], _TRANS[flip[xv.trans], cx], g.N, g.M, g.K)
            self.lds = (yv.ld, xv.ld, z_ld)
            self.first_is_x = False
        else:
            self.head = (_ROW, _TRANS[xv.trans, cx], _TRANS[yv.trans, cy], g.M, g.N, g.K)
            self.lds = (xv.ld, yv.ld, z_ld)
            self.first_is_x = True
        flops = g.M * g.N * max(1, g.K)
        self.split = num_threads > 1 and g.B >= 2 and flops <= _SMALL
        self.threads = num_threads
        self.split_min = split_min or _SPLIT_MIN  # multiply-adds of a stack worth splitting over the threads
        self.lib_threads = lib.get_num_threads()  # a thread count the library already has is not set per call
        self.stacked = None  # _StackView of X, Y, Z as stacks of matrices, for small batched products

    def _scalars(self, alpha, beta):
        if not self.complex:
            return float(alpha.real if isinstance(alpha, complex) else alpha), float(beta.real if isinstance(
                beta, complex) else beta), None
        keep = np.array([alpha, beta], dtype=self.cdt)
        return keep.ctypes.data, keep.ctypes.data + self.itemsize, keep

    def run(self, px: int, py: int, pz: int, alpha, beta) -> None:
        px = self.x.prepare(px)
        py = self.y.prepare(py)
        if self.stacked is not None:
            return self._run_stacked(px, py, pz, alpha, beta)
        a, b, keep = self._scalars(alpha, beta)
        isz = self.itemsize
        head, (l1, l2, lz) = self.head, self.lds
        gemm = self.gemm
        xo, yo, zo = self.x_off, self.y_off, self.z_off
        if not self.first_is_x:
            px, py, xo, yo = py, px, yo, xo

        def chunk(lo, hi, threads=None):
            token = (self.lib.set_num_threads_local(threads) if threads is not None and threads != self.lib_threads
                     else None)
            try:
                for i in range(lo, hi):
                    gemm(*head, a, px + xo[i] * isz, l1, py + yo[i] * isz, l2, b, pz + zo[i] * isz, lz)
            finally:
                if token is not None:
                    self.lib.set_num_threads_local(token)

        n = len(zo)
        if self.split:
            parts = min(self.threads, n)
            bounds = [n * i // parts for i in range(parts + 1)]
            futures = [_pool(self.threads).submit(chunk, bounds[i], bounds[i + 1], 1) for i in range(1, parts)]
            chunk(bounds[0], bounds[1], 1)
            for f in futures:
                f.result()
        else:
            chunk(0, n, self.threads)
        del keep

    def _run_stacked(self, px, py, pz, alpha, beta) -> None:
        """Many small products: numpy.matmul's C loop over the same OpenBLAS gemm (one ctypes call per product
        costs more than the product itself)."""
        vx, vy, vz = self.stacked
        x, y, z = vx.at(px), vy.at(py), vz.at(pz)
        if self.x.op == Operator.OP_CONJ and self.x.direct and self.complex:
            x = x.conj()
        if self.y.op == Operator.OP_CONJ and self.y.direct and self.complex:
            y = y.conj()
        n = x.shape[0]
        if self.split and n >= 2 and self.geo.B * self.geo.M * self.geo.N * max(1, self.geo.K) >= self.split_min:
            parts = min(self.threads, n)  # numpy.matmul releases the GIL: the batch is split over threads
            bounds = [n * i // parts for i in range(parts + 1)]
            pieces = [(x[lo:hi], y[lo:hi], z[lo:hi]) for lo, hi in zip(bounds, bounds[1:])]
            futures = [_pool(self.threads).submit(_stacked_product, *p, alpha, beta) for p in pieces[1:]]
            _stacked_product(*pieces[0], alpha, beta)
            for f in futures:
                f.result()
        else:
            _stacked_product(x, y, z, alpha, beta)


class ContractionCPU:
    """The compiled contraction: ``run(inputs, addend, out, alpha, beta)`` with host addresses.

    ``problem``/``steps`` come from the traits; ``ops`` are the inputs' unary operators; ``out_strides`` the
    result's strides (in the output modes' order); ``addend_strides`` those of c (binary) or d (ternary), or
    None; ``same_addend``: the addend is the result itself (beta applied in place).
    """

    space = "cpu"
    simple = False  # (run_binary: the GPU engine's one-call path)

    def __init__(self, problem, steps, ops, dtype: str, out_strides, addend_strides, same_addend: bool,
                 compute: str | None, num_threads: int, requested_blas: str = "auto", log=logger,
                 threads_named: bool = False):
        self.lib = blas.find_blas(requested_blas)
        self.dtype = dtype
        cdt = _COMPUTE[dtype]
        if compute == "64F" and not cdt.endswith("64") and not cdt.endswith("128"):
            cdt = "complex128" if cdt.startswith("complex") else "float64"
        self.cdt = cdt
        self.num_threads = num_threads
        self.problem = problem
        ext = problem.extents
        self.out_modes = problem.output
        self.out_shape = tuple(ext[m] for m in problem.output)
        self.out_strides = tuple(out_strides)
        self.addend_strides = None if addend_strides is None else tuple(addend_strides)
        self.same_addend = same_addend
        self.steps = []
        self.nbytes = 0
        self.empty = any(n == 0 for n in ext.values())
        if self.empty:  # nothing to multiply: the result is beta * addend (or zeros)
            self.direct = True
            return
        t_modes = t_strides = None
        for s in steps:
            xm, xs, xop, xdt = self._source(s.x, problem, ops, t_modes, t_strides)
            ym, ys, yop, ydt = self._source(s.y, problem, ops, t_modes, t_strides)
            direct_out = s.final and cdt == dtype
            zs = self.out_strides if direct_out else None
            g = gemm_geometry(xm, xs, ym, ys, s.z_modes, zs, ext)
            if direct_out and g.z is None:
                g = gemm_geometry(xm, xs, ym, ys, s.z_modes, None, ext)
                direct_out = False
            x = self._input(s.x, xm, xs, g.batch + g.m + g.k, g.x_sum, xop, xdt, g.x)
            y = self._input(s.y, ym, ys, g.batch + g.k + g.n, g.y_sum, yop, ydt, g.y)
            if g.x is None or x.op not in (Operator.OP_IDENTITY, Operator.OP_CONJ) or not x.direct:
                g = _with(g, x=_dense_view(g.M, g.K))
            if g.y is None or not y.direct:
                g = _with(g, y=_dense_view(g.K, g.N))
            x_off = batch_offsets(g.batch, dict(zip(xm, xs)), ext) if x.direct else _dense_offsets(g.B, g.M * g.K)
            y_off = batch_offsets(g.batch, dict(zip(ym, ys)), ext) if y.direct else _dense_offsets(g.B, g.K * g.N)
            z_order = g.batch + g.m + g.n
            if direct_out:
                zmap = dict(zip(s.z_modes, zs))
                z_off = batch_offsets(g.batch, zmap, ext)
                scratch = None
                z_ld = g.z.ld
            else:
                scratch = np.empty([ext[m] for m in z_order], dtype=cdt)
                self.nbytes += scratch.nbytes
                z_off = _dense_offsets(g.B, g.M * g.N)
                z_ld = max(1, g.N)
                g = _with(g, z=_dense_view(g.M, g.N), swap=False)
            step = _Step(self.lib, g, x, y, x_off, y_off, z_off, z_ld, s.final, num_threads,
                         _SPLIT_MIN_NAMED if threads_named else _SPLIT_MIN)
            if g.B > 1 and g.M * g.N * max(1, g.K) <= _SMALL:
                step.stacked = tuple(_StackView(*st, cdt) for st in (
                    _stack(g, g.x, xm, xs if x.direct else None, g.M, g.K, ext),
                    _stack(g, g.y, ym, ys if y.direct else None, g.K, g.N, ext),
                    _stack(g, g.z, s.z_modes, zs if direct_out else None, g.M, g.N, ext)))
            step.scratch, step.z_order, step.direct_out = scratch, z_order, direct_out
            self.nbytes += sum(i.buffer.nbytes for i in (x, y) if i.buffer is not None)
            self.steps.append(step)
            if not s.final:
                t_modes = z_order
                t_strides = _dense(tuple(ext[m] for m in z_order))
        last = self.steps[-1]
        self.direct = last.direct_out
        if log.isEnabledFor(logging.INFO):
            copies = sum(1 for st in self.steps for i in (st.x, st.y) if not i.direct)
            log.info("CPU contraction: %d GEMM step(s) on %s, %d input cop%s, result %s, compute %s, %d thread(s)"
                     ", workspace %s", len(self.steps), self.lib.provider.description, copies,
                     "y" if copies == 1 else "ies", "written in place" if self.direct else "through a scratch",
                     cdt, num_threads, format_bytes(self.nbytes))

    @staticmethod
    def _source(which, problem, ops, t_modes, t_strides):
        if which == "T":
            return t_modes, t_strides, Operator.OP_IDENTITY, None
        return problem.inputs[which], problem.strides[which], ops[which], None

    def _input(self, which, modes, strides, order, sum_modes, op, _dt, view):
        dtype = self.cdt if which == "T" else self.dtype
        bad_op = op not in (Operator.OP_IDENTITY, Operator.OP_CONJ) or (
            op == Operator.OP_CONJ and self.cdt.startswith("complex") and not self.lib.conj_no_trans)
        direct = view is not None and not sum_modes and dtype == self.cdt and not bad_op
        inp = _Input(which, modes, strides, order, sum_modes, self.problem.extents, op, dtype, self.cdt, direct)
        if which == "T":
            inp.source = "T"
        return inp

    def run(self, inputs, addend: int | None, out: int, alpha, beta) -> None:
        if self.empty:
            dst = host_view(out, self.out_shape, self.out_strides, self.dtype)
            if dst.size:
                if addend is not None and beta:
                    c = to_compute(host_view(addend, self.out_shape, self.addend_strides, self.dtype), self.dtype,
                                   self.cdt)
                    np.copyto(dst, from_compute(beta * c, self.dtype), casting="unsafe")
                else:
                    dst[...] = 0
            return
        t_ptr = 0
        for st in self.steps:
            px = t_ptr if st.x.source == "T" else inputs[st.x.source]
            py = t_ptr if st.y.source == "T" else inputs[st.y.source]
            if not st.final:
                st.run(px, py, st.scratch.ctypes.data, 1.0, 0.0)
                t_ptr = st.scratch.ctypes.data
                continue
            if st.direct_out:
                b = 0.0
                if addend is not None and beta:
                    if not (self.same_addend or (addend == out and self.addend_strides == self.out_strides)):
                        self._copy_addend(addend, out)
                    b = beta
                st.run(px, py, out, alpha, b)
            else:
                st.run(px, py, st.scratch.ctypes.data, alpha, 0.0)
                self._finish(st, addend, out, beta)

    def _copy_addend(self, addend: int, out: int) -> None:
        src = host_view(addend, self.out_shape, self.addend_strides, self.dtype)
        dst = host_view(out, self.out_shape, self.out_strides, self.dtype)
        np.copyto(dst, src)

    def _finish(self, st, addend, out, beta) -> None:
        """The scratch (alpha already applied), plus beta times the addend, into the result."""
        axes = [st.z_order.index(m) for m in self.out_modes]
        value = st.scratch.transpose(axes)
        if addend is not None and beta:
            c = to_compute(host_view(addend, self.out_shape, self.addend_strides, self.dtype), self.dtype, self.cdt)
            value = value + beta * c
        dst = host_view(out, self.out_shape, self.out_strides, self.dtype)
        np.copyto(dst, from_compute(value, self.dtype), casting="unsafe")

    def free(self) -> None:
        self.steps = []


_CHAR = ctypes.c_char
#: where the caller named a thread count (execution=ExecutionCPU(num_threads=...)): the threads were asked for,
#: so a stack is split from 2^20 multiply-adds (~12 us of one core's work, several thread hand-offs)
_SPLIT_MIN_NAMED = 1 << 20
_SPLIT_MIN = 1 << 24  # multiply-adds of a stack of small products worth splitting over threads (256 x 32^3,
# 2^23, ran no faster split on two loaded cores)


def _stacked_product(x, y, z, alpha, beta) -> None:
    """z = alpha * x @ y + beta * z over stacks of matrices."""
    if beta == 0:
        np.matmul(x, y, out=z)
        if alpha != 1:
            z *= alpha
    else:
        prod = np.matmul(x, y)
        z *= beta
        z += alpha * prod if alpha != 1 else prod


class _StackView:
    """NumPy views of one operand of a stacked product at any address: shape, byte strides, extent and the
    ctypes buffer type worked out at planning, so a call costs one buffer and one ndarray."""

    __slots__ = ("shape", "dtype", "strides", "lo", "buffer")

    def __init__(self, shape, strides, dtype: str):
        dt = np.dtype(dtype)
        isz = dt.itemsize
        strides = [s if n > 1 else 0 for n, s in zip(shape, strides)]  # (a size-1 axis's stride is arbitrary)
        lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
        self.shape, self.dtype = tuple(shape), dt
        self.strides = tuple(s * isz for s in strides)
        self.lo = lo * isz
        self.buffer = _CHAR * ((hi - lo + 1) * isz)

    def at(self, ptr: int) -> np.ndarray:
        return np.ndarray(self.shape, self.dtype, self.buffer.from_address(ptr + self.lo), -self.lo, self.strides)


def _stack(g, view, modes, strides, rows: int, cols: int, ext):
    """(shape, strides) of an operand of a step as a stack of rows x cols matrices over the batch modes:
    its own strides (``strides`` given) or the dense [batch, rows, cols] order of a copy or scratch."""
    bshape = [ext[m] for m in g.batch]
    if strides is None:
        bstr = list(_dense(bshape + [rows * cols]))[:-1] if bshape else []
        mat = (cols, 1)
    else:
        sd = dict(zip(modes, strides))
        bstr = [sd[m] for m in g.batch]
        mat = (view.ld, 1) if view.trans == "N" else (1, view.ld)
    return tuple(bshape) + (rows, cols), tuple(bstr) + mat


def _dense(shape) -> tuple:
    """C-order strides of ``shape``."""
    return dense_strides(shape, range(len(shape)))


def _dense_offsets(count: int, size: int) -> list:
    return [i * size for i in range(count)]


def _dense_view(rows: int, cols: int):
    from .._traits import MatrixView

    return MatrixView(rows, cols, "N", max(1, cols))


def _with(geo, **changes):
    import dataclasses

    return dataclasses.replace(geo, **changes)

