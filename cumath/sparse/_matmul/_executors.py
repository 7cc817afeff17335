"""How a planned sparse matmul runs on the host: per result batch, the CSR values (gathered from the format's
values when it is not CSR, conjugated when op(a) conjugates without transposing), b as the engine reads it,
and the result written by the engine (into ``c`` itself when given)."""

from __future__ import annotations

import logging

import numpy as np

from ..._core.frameworks.numpy import view
from ..._core.logging import format_bytes
from ..._core.operand import adapter
from .._formats import csr_gather

__all__ = ["HostExecutor"]


def _layout(x, rows_cols) -> str | None:
    """'row' or 'col' when the 2-D array ``x`` is one the MKL engine reads in place, else None."""
    if x.ndim == 1:
        return "row" if x.strides[0] == x.itemsize or x.shape[0] <= 1 else None
    r, c = rows_cols
    s0, s1 = x.strides[0] // x.itemsize, x.strides[1] // x.itemsize
    if x.strides[0] % x.itemsize or x.strides[1] % x.itemsize:
        return None
    if (s1 == 1 or c == 1) and s0 >= max(c, 1):
        return "row"
    if (s0 == 1 or r == 1) and s1 >= max(r, 1):
        return "col"
    return None


class _Stored:
    """One matrix of a's batch as the engine sees it: CSR arrays of the stored matrix S (S = a, or a^T for CSC),
    the op applied to S, the gather of its values and whether they are conjugated first."""

    def __init__(self, sm, index: int, geom, stream):
        from .._formats import SparseMatrix

        fmt = sm.format
        if sm.batch_shape:  # a batched PyTorch CSR: the index-th matrix's components
            def pick(o):
                return _slice(o, index)
            one = SparseMatrix(sm.obj, fmt, {k: pick(o) for k, o in sm.index.items()}, pick(sm.values), sm.shape[-2:])
        else:
            one = sm
        self.transposed = fmt == "csc"
        ma, ka = sm.shape[-2:]
        if fmt in ("csr", "csc"):  # the caller's arrays (CSC of a is CSR of a^T)
            ip, ix = view(one.index["indptr"]), view(one.index["indices"])
            self.gather, self.shape = None, ((ka, ma) if self.transposed else (ma, ka))
        else:
            ip, ix, self.gather = csr_gather(one, stream)
            self.shape = (ma, ka)
        dt = np.int64 if (ip.dtype == np.int64 or ix.dtype == np.int64) else np.int32
        self.indptr = np.ascontiguousarray(ip, dtype=dt)
        self.indices = np.ascontiguousarray(ix, dtype=dt)
        self.src_ptrs = (ip.ctypes.data, ix.ctypes.data) if self.gather is None else (None, None)
        self.product_arrays_changed = False
        self.values_op = one.values
        t = geom.transpose_a != self.transposed
        c = geom.conjugate_a
        self.op = ("H" if c else "T") if t else "N"
        self.conj_values = c and not t
        self.buffer = None
        if self.gather is not None or self.conj_values or not _contiguous(view(one.values)):
            self.buffer = np.empty(self.indices.size, dtype=sm.dtype)

    def use_index(self, sm) -> None:
        """Read the CSR/CSC index arrays of ``sm`` (new arrays of the planned pattern after a reset or a cache
        hit): the engine's product follows them (MKL makes a new handle for new addresses)."""
        ip, ix = view(sm.index["indptr"]), view(sm.index["indices"])
        if ip.ctypes.data != self.src_ptrs[0] or ix.ctypes.data != self.src_ptrs[1]:
            self.src_ptrs = (ip.ctypes.data, ix.ctypes.data)
            dt = self.indices.dtype
            self.indptr = np.ascontiguousarray(ip, dtype=dt)
            self.indices = np.ascontiguousarray(ix, dtype=dt)
            self.product_arrays_changed = True

    def values(self, values_op):
        v = view(values_op)
        if self.gather is not None:
            np.take(v.reshape(-1), self.gather, out=self.buffer)
            v = self.buffer
        elif self.buffer is not None and not self.conj_values:
            np.copyto(self.buffer, v.reshape(-1))
            v = self.buffer
        if self.conj_values:
            np.conjugate(v, out=self.buffer)
            v = self.buffer
        return v


def _contiguous(x) -> bool:
    return x.ndim == 1 and (x.strides[0] == x.itemsize or x.size <= 1) or x.flags.c_contiguous


def _slice(op, index):
    """The index-th (flat) entry of the leading batch axes of a host Operand, as an Operand."""
    from ..._core.frameworks.numpy import wrap

    arr = view(op)
    batch = arr.shape[:-1]
    return wrap(arr.reshape(-1, arr.shape[-1])[index] if batch else arr)


class HostExecutor:
    """The CPU engine on the caller's host arrays (see the module's docstring)."""

    kind = "host"

    def __init__(self, geom, ops, engine, options, log, stream=None):
        self.geom, self.engine, self.log = geom, engine, log
        sm = ops["a"]
        self.layout = self._choose_layout(ops)
        na = max(1, int(np.prod(sm.batch_shape, dtype=np.int64)))
        self.stored = [_Stored(sm, i, geom, stream) for i in range(na)]
        self.products = []
        try:
            for st in self.stored:
                self.products.append(engine.product((st.indptr, st.indices), st.shape, st.op, geom.dtype, geom.n,
                                                    self.layout, options.expected_calls, log))
        except BaseException:
            self.free()
            raise
        self.nbytes = sum(st.indptr.nbytes + st.indices.nbytes + (0 if st.buffer is None else st.buffer.nbytes)
                          for st in self.stored if st.gather is not None or st.buffer is not None)
        if log.isEnabledFor(logging.INFO):
            conv = "" if sm.format in ("csr", "csc") else f"; {sm.format.upper()} read as CSR through a gather of " \
                                                          f"its values ({format_bytes(self.nbytes)} held)"
            log.info("sparse matmul on the CPU with %s: %d product(s) op(a)=%s, dense operands %s-major%s",
                     engine.description, geom.count, self.stored[0].op, self.layout, conv)

    def _choose_layout(self, ops) -> str:
        c = ops.get("c")
        if c is not None and c.ndim >= 2:
            lay = _layout(view(c).reshape((-1,) + tuple(c.shape[-2:]))[0] if c.ndim > 2 else view(c), c.shape[-2:])
            if lay is not None:
                return lay
        return "row"

    def _dense_b(self, b_arr, idx):
        g = self.geom
        x = b_arr if b_arr.ndim <= 2 else b_arr.reshape((-1,) + b_arr.shape[-2:])[idx] if b_arr.flags.c_contiguous \
            else b_arr[np.unravel_index(idx, b_arr.shape[:-2])]
        if g.transpose_b:
            x = x.T
        if g.conjugate_b:
            x = np.conjugate(x)
        if self.engine.name == "mkl":
            shape = (g.k,) if g.n is None else (g.k, g.n)
            if _layout(x, shape) != (self.layout if g.n is not None else "row"):
                x = np.array(x, order="C" if self.layout == "row" or g.n is None else "F")
        return x

    def execute(self, ops, alpha, beta, result):
        """Compute into ``result`` (a host array of the result's shape: c itself, or a new array)."""
        g = self.geom
        a, b_arr = ops["a"], view(ops["b"])
        d_all = view(result)
        batched_a = bool(a.batch_shape)
        vals_all = a.values
        for i in range(g.count):
            ai, bi = g.a_batches[i], g.b_batches[i]
            st, prod = self.stored[ai], self.products[ai]
            v_op = _slice(vals_all, ai) if batched_a else vals_all
            if st.gather is None and not batched_a:  # the caller's CSR/CSC index arrays: they may be new ones
                st.use_index(a)
            vals = st.values(v_op)
            b = self._dense_b(b_arr, bi)
            d = d_all if not g.batch_shape else d_all[np.unravel_index(i, g.batch_shape)]
            target = d
            if self.engine.name == "mkl" and _layout(d, d.shape) != (self.layout if g.n is not None else "row"):
                target = np.array(d, order="C" if self.layout == "row" or g.n is None else "F")
            if st.product_arrays_changed:
                prod.set_index(st.indptr, st.indices)
                st.product_arrays_changed = False
            prod.run(vals, b, target, alpha, beta)
            if target is not d:
                np.copyto(d, target)
        return result

    def free(self) -> None:
        prods, self.products = self.products, []
        for p in prods:
            p.free()


def new_result(ops, geom, package):
    """A new result array of the operands' package (C order) as the Operand the executor writes."""
    pkg = adapter(package)
    arr = pkg.empty(geom.result_shape, geom.dtype, None, None)
    return arr, pkg.wrap(arr)
