"""The sparse matmul on a GPU with a generated kernel (``_codegen.py``): for UST operands with
``MatmulOptions(codegen=True)``, formats cuSPARSE does not have (DIA, custom UST formats), and products with
prologs, an epilog or a semiring. The kernel is compiled and linked once per format, dtype, index type and
operators (content-addressed on disk: a second process loads it); the RANGE tables of the format are computed
at plan() and uploaded.

Why not cuSPARSE's ``cusparseSpMMOp`` for cuSPARSE's own formats: its plan takes LTO-IR for the semiring's
add and mul and for an epilogue only, so the prologs of a and b (what ``plan(prologs=...)`` is about) cannot be
given to it; it multiplies CSR only; and ``cusparse.h`` (12.9, CUDA 13) marks cusparseSpMMOp_createPlan,
cusparseSpMMOp and the plan type CUSPARSE_DEPRECATED ("will be removed in the next major release"). Every
product with operators therefore runs here, for every format, with the same operator symbols."""

from __future__ import annotations

import logging
import time

import numpy as np

from ..._core import jit
from ..._core.operand import adapter
from ._codegen import EPILOG_KERNEL, KERNEL, SCALE_KERNEL, arg_types, decoded_crd, fuses_beta, kernel_kinds, \
    launch_shape, range_tables, schedule, spmm_source, vector_width, vectors_per_thread
from . import _dia
from ._device import _Package, _order, _strides

__all__ = ["GeneratedExecutor", "wants_generated"]

_CUSPARSE_NAMES = ("CSR", "CSC", "COO")


def wants_generated(a, options, prologs) -> bool:
    """Whether a GPU product of the sparse operand ``a`` (a ``SparseMatrix``) runs on a generated kernel: a UST
    read as it is (``ust:<format>``), or any operand with prologs, an epilog or a semiring."""
    return prologs is not None or a.format.startswith("ust:")


def tensor_of(a, cached=None):
    """The Universal Sparse Tensor a generated kernel reads for the sparse operand ``a``: the tensor itself, or a
    zero-copy UST view of a cupyx / PyTorch sparse matrix (``cached``: the last ``(object, tensor)``, reused while
    the object is the same)."""
    if a.format.startswith("ust:"):
        return a.obj
    if cached is not None and cached[0] is a.obj:
        return cached[1]
    from ..ust import Tensor

    if a.batch_shape:
        raise NotImplementedError("prologs, epilogs and semirings run in generated kernels, which multiply one "
                                  "sparse matrix: pass the matrices of the batch one at a time")
    return Tensor.from_package(a.obj)


def _symbol(ir, what):
    sym = getattr(ir, "symbol", None)
    if sym is None:
        raise TypeError(f"the {what} must be LTO-IR from cumath.sparse.compile_matmul_{what.split()[0]} (it carries "
                        f"the device function's name); got {type(ir).__name__}")
    return sym


def _resident_blocks(kernel, block: int, device: int):
    """Blocks of ``block`` threads of ``kernel`` the GPU holds at once (occupancy per SM times the SMs), or None
    where the driver cannot say (the launch then covers every tile with a block of its own)."""
    try:
        from ..._bindings import cuda as drv

        return max(1, int(kernel.max_active_blocks_per_sm(block)) * int(drv.cuDeviceGetAttribute(16, device)))
    except Exception:  # an optional refinement of the launch: any failure keeps the plain grid
        return None


class GeneratedExecutor:
    kind = "device"

    def __init__(self, geom, a, ops, options, log, place, prologs=None):
        from ..._core.kernels import device_arch, load_kernel

        ust = tensor_of(a)
        self._cached = (a.obj, ust)
        self.geom, self.log, self.ust = geom, log, ust
        self.engine = type("generated", (), {"name": "generated", "description": "a generated kernel"})
        self.pkg = _Package(ust._package, place.device)
        self.nbytes = 0
        fmt, extents = ust.tensor_format, ust.extents
        pro, epi, semi, cc = prologs if prologs is not None else (None, None, None, None)
        pro, semi = dict(pro or {}), dict(semi or {})
        unknown = sorted(set(pro) - {"a", "b"}) + sorted(set(semi) - {"add", "mul", "atomic_add"})
        if unknown:
            raise ValueError(f"unknown prolog or semiring keys {unknown}; prologs take 'a' and 'b', the semiring "
                             f"'add', 'mul' and 'atomic_add'")
        if geom.conjugate_a and "a" in pro:
            raise ValueError("a conjugated a and a prolog of a exclude each other: conjugate in the prolog")
        syms = {"prolog_a": pro.get("a"), "prolog_b": pro.get("b"), "epilog": epi, "add": semi.get("add"),
                "mul": semi.get("mul"), "atomic_add": semi.get("atomic_add")}
        names = {k: (None if v is None else _symbol(v, k.replace("_", " "))) for k, v in syms.items()}
        cc = cc or device_arch(place.device)
        host = lambda a: None if a is None else np.asarray(self._host(a))  # noqa: E731
        host_pos, host_crd = [host(p) for p in ust._pos], [host(c) for c in ust._crd]
        tables = range_tables(fmt, extents, host_pos, host_crd)
        t0 = time.perf_counter()
        self.schedule = schedule(fmt, geom.transpose_a, add=names["add"], atomic_add=names["atomic_add"])
        self._width = vector_width(geom.dtype)
        self._per_thread = vectors_per_thread(fmt, geom.transpose_a, add=names["add"], atomic_add=names["atomic_add"])
        self.fused_beta = fuses_beta(fmt, geom.transpose_a, add=names["add"], atomic_add=names["atomic_add"])
        # a gather over few diagonals: the kernel is specialised on their number (the plan's pattern) and unrolled
        self.ndiag = self.variant = self.offsets = None
        self._exact, self._rows_per_thread = False, 1
        if self.schedule == "gather":  # (the specialised kernel reads b's row 0 and value 0 for rows it skips)
            nd = int(host_pos[0][1] - host_pos[0][0])
            lo, hi, _ = tables[1]
            if _dia.specialised(nd) and geom.k > 0 and (geom.n is None or geom.n > 0) and int((hi - lo).sum()) > 0:
                self.ndiag, self.variant = nd, _dia.dia_variant()
                self._per_thread = self.variant.vectors
                c0s = np.asarray(host_crd[0])[int(host_pos[0][0]):int(host_pos[0][1])]
                self.offsets = _dia.diagonal_offsets(fmt, c0s, geom.transpose_a) if (
                    self.variant.window or self.variant.stage) else None
                self._exact = _dia.staged(self.variant, self.offsets, np.dtype(geom.dtype).itemsize)
                self._rows_per_thread = _dia.rows_per_thread(self.variant, self.offsets)
        src = spmm_source(fmt, extents, geom.dtype, ust.index_type, transpose=geom.transpose_a,
                          conjugate=geom.conjugate_a, ndiag=self.ndiag, variant=self.variant, offsets=self.offsets,
                          **names)
        # compiled and linked once per source and operators; a later process loads the CUBIN from the disk cache
        # without loading NVRTC or nvJitLink
        cubin = jit.compile_and_link(src, cc=cc, options=("-rdc=true",), pieces=[v for v in syms.values()
                                                                                 if v is not None],
                                     log=log, what=f"the generated SpMM of {fmt.name}")
        main_t, scale_t, epi_t = arg_types(fmt, geom.dtype)
        self.kernel = load_kernel(cubin.data, cubin.key, KERNEL, main_t, device_id=place.device)
        self.scale = load_kernel(cubin.data, cubin.key, SCALE_KERNEL, scale_t, device_id=place.device)
        self.epilog = load_kernel(cubin.data, cubin.key, EPILOG_KERNEL, epi_t, device_id=place.device) \
            if epi and self.schedule != "gather" else None
        self._grid_cap = _resident_blocks(self.kernel, self.variant.block, place.device) if (
            self.variant is not None and self.variant.persistent) else None
        self.ready_ms = 1e3 * (time.perf_counter() - t0)  # source, compile and link (or the caches), load
        if log.isEnabledFor(logging.INFO):
            log.info("generated SpMM for %s (%s, %s indices%s) ready in %.1f ms (compiled or loaded from the cache)",
                     fmt.name, geom.dtype, ust.index_type, "" if self.ndiag is None else
                     f", {self.ndiag} diagonals unrolled, layout {_dia.DIA_VARIANT}", self.ready_ms)
        self._tables = {lvl: tuple(self.pkg.upload(t) for t in tabs) for lvl, tabs in tables.items()}
        from ..ust._dsl import LevelFormat as F

        # DELTA levels are read as COMPRESSED from coordinates decoded here (the pattern is the plan's)
        self._decoded = {lvl: self.pkg.upload(c) for lvl, (kind, c) in enumerate(zip(
            fmt.level_formats, decoded_crd(fmt, host_pos, host_crd))) if kind == F.DELTA}
        self.nbytes = sum(int(t.nbytes) for tabs in self._tables.values() for t in tabs) + sum(
            int(c.nbytes) for c in self._decoded.values())
        kinds = kernel_kinds(fmt)
        first = kinds[0]
        sizes = fmt.dim2lvl(list(extents), as_size=True)
        self._outer = sizes[0] if first in (F.DENSE, F.BATCH) else None
        self._first_pos = host(ust._pos[0]) if first == F.COMPRESSED else None

    @staticmethod
    def _host(a):
        from ..._core.operand import wrap_operand
        from .._operand import host_arrays

        return host_arrays(wrap_operand(a, "tensor component"))

    def _level_args(self, u):
        from ..ust._dsl import LevelFormat as F

        ptr = self.pkg.pointer
        out = []
        for level, kind in enumerate(u.tensor_format.level_formats):
            if kind == F.COMPRESSED:
                out += [ptr(u._pos[level]), ptr(u._crd[level])]
            elif kind == F.DELTA:
                out += [ptr(u._pos[level]), ptr(self._decoded[level])]
            elif kind in (F.SINGLETON, F.STRUCTURED):
                out.append(ptr(u._crd[level]))
            elif kind == F.RANGE:
                out += [ptr(t) for t in self._tables[level]]
        return out

    def new_result(self, ops):
        arr = self.pkg.empty(self.geom.result_shape, self.geom.dtype)
        return arr, self.pkg.adapter.wrap(arr)

    def execute(self, ops, alpha, beta, result, stream):
        g = self.geom
        n = 1 if g.n is None else g.n
        block = min(256, max(32, -(-n // 32) * 32))
        outer = self._outer if self._outer is not None else int(self._first_pos[1] - self._first_pos[0])
        grid = max(1, min(outer, 1 << 20))
        a_re, a_im = complex(alpha).real, complex(alpha).imag
        b_re, b_im = complex(beta).real, complex(beta).imag
        a = ops["a"]
        if a.obj is not self._cached[0]:  # new operands of the planned pattern (reset, or a cached plan's call)
            self._cached = (a.obj, tensor_of(a, self._cached))
        u = self._cached[1]
        levels = self._level_args(u)
        ptr = self.pkg.pointer
        val = ptr(u._val)
        b_all, d_all = ops["b"].obj, result.obj
        for i in range(g.count):
            b = b_all if b_all.ndim <= (1 if g.n is None else 2) else \
                b_all.reshape((-1,) + tuple(b_all.shape[-2:]))[g.b_batches[i]]
            d = d_all if not g.batch_shape else d_all.reshape((-1,) + tuple(d_all.shape[len(g.batch_shape):]))[i]
            b2, d2 = self._rowmajor(b, "b"), self._rowmajor(d, "result")
            ldb = 1 if g.n is None else _strides(b2)[0]
            ldd = 1 if g.n is None else _strides(d2)[0]
            zero = int(beta == 0)
            vec = int(self._vec_ok(n, ldb, ldd, b2, d2))
            if self.schedule in ("gather", "owned"):  # a thread per row (or row block) and V vectors of columns
                rows = g.m if self.schedule == "gather" else outer
                v = self.variant
                grid_, block_ = launch_shape(rows, n, self._width if vec else 1, self._per_thread) if v is None else \
                    launch_shape(rows, n, self._width if vec else 1, v.vectors, column_threads=v.column_threads,
                                 threads=v.block, rows_per_thread=self._rows_per_thread, exact=self._exact)
                if self._grid_cap is not None:  # persistent blocks stride over the row tiles
                    grid_ = (min(grid_[0], self._grid_cap),) + tuple(grid_[1:])
            if self.schedule == "gather":  # beta and the epilog in the same pass
                self.kernel.launch(grid_, block_, 0, stream, *levels, val, ptr(b2), ptr(d2), g.m, g.k, n, ldb, ldd,
                                   a_re, a_im, b_re, b_im, zero, vec)
                if d2 is not d:
                    self.pkg.copy(d, d2)
                continue
            if self.fused_beta:  # the kernel writes every row once, beta * c included
                kb = (b_re, b_im, zero)
            else:  # a first pass writes beta * c (or zeros), the kernel adds to it
                self.scale.launch((min(g.m, 1 << 20) or 1, 1, 1), (block, 1, 1), 0, stream, ptr(d2), ptr(d2), g.m,
                                  n, ldd, ldd, b_re, b_im, zero)
                kb = (1.0, 0.0, 0)
            if self.schedule == "owned":
                self.kernel.launch(grid_, block_, 0, stream, *levels, val, ptr(b2), ptr(d2), g.m, g.k, n, ldb, ldd,
                                   a_re, a_im, *kb, vec)
            else:
                self.kernel.launch((grid, 1, 1), (block, 1, 1), 0, stream, *levels, val, ptr(b2), ptr(d2),
                                   g.m, g.k, n, ldb, ldd, a_re, a_im, *kb, 0)
            if self.epilog is not None:
                self.epilog.launch((min(g.m, 1 << 20) or 1, 1, 1), (block, 1, 1), 0, stream, ptr(d2), g.m, n, ldd)
            if d2 is not d:
                self.pkg.copy(d, d2)
        return result.obj

    def _vec_ok(self, n, ldb, ldd, b, d) -> bool:
        """Whether b and d can be moved as 16-byte vectors: whole vectors per row, rows and bases aligned."""
        w = self._width
        return (w > 1 and self.geom.n is not None and n % w == 0 and ldb % w == 0 and ldd % w == 0
                and self.pkg.pointer(b) % 16 == 0 and self.pkg.pointer(d) % 16 == 0)

    def _rowmajor(self, x, what):
        shape = tuple(x.shape)
        if len(shape) == 1:
            if _strides(x)[0] == 1 or shape[0] <= 1:
                return x
        elif (_order(x, shape) or (0,))[0] == 2:
            return x
        y = self.pkg.empty(shape, self.geom.dtype)
        self.pkg.copy(y, x)
        return y

    def free(self) -> None:
        self._tables, self._decoded = {}, {}
