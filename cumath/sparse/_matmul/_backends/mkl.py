"""The MKL CPU engine: oneMKL's inspector-executor sparse BLAS (``mkl_sparse_?_mm`` / ``_mv``) on CSR arrays.

A product owns one ``sparse_matrix_t`` over CSR arrays (the caller's own when they are CSR, else the plan's),
analysed once with ``mkl_sparse_set_mm_hint``/``_mv_hint`` and ``mkl_sparse_optimize``. MKL's optimised handle
keeps its own copy of the values, so every run hands it the current values (``mkl_sparse_?_update_values``,
a copy of ``nnz`` values) before multiplying: values changed in place are seen. Index arrays of another
address (a reset with new arrays of the same pattern) make a new handle.
"""

from __future__ import annotations

import logging
from ctypes import c_int, c_int64, c_void_p

import numpy as np

from ....errors import LibraryNotFoundError

__all__ = ["MKLEngine"]

_OPS = {"N": 10, "T": 11, "H": 12}
_LAYOUT = {"row": 101, "col": 102}


class _Product:
    def __init__(self, M, update, csr, shape, op, dtype, bits, ncols, layout, expected_calls, log):
        self.M, self.update = M, update
        self.indptr, self.indices = csr
        self.shape, self.op, self.dtype, self.bits = shape, _OPS[op], dtype, bits
        self.ncols, self.layout, self.expected = ncols, _LAYOUT[layout], expected_calls
        self.descr = M.MatrixDescr(M.MatrixType.GENERAL, M.FillMode.FULL, M.DiagType.NON_UNIT)
        self.handle, self.values_ptr, self.optimized = None, None, False
        self.log = log
        self.mm = M.mm_function(dtype, bits) if ncols is not None else M.mv_function(dtype, bits)

    def _make(self, values) -> None:
        M = self.M
        self._destroy()
        p, w = self.indptr.ctypes.data, self.indptr.itemsize
        self.handle = M.create_csr(self.dtype, self.bits, 0, self.shape[0], self.shape[1], p, p + w,
                                   self.indices.ctypes.data, values.ctypes.data)
        self.values_ptr = values.ctypes.data
        self.optimized = False
        if self.expected:
            if self.ncols is None:
                M.set_mv_hint(self.bits, self.handle, self.op, self.descr, self.expected)
            else:
                M.set_mm_hint(self.bits, self.handle, self.op, self.descr, self.layout, self.ncols, self.expected)
            M.optimize(self.bits, self.handle)
            self.optimized = True

    def run(self, values, b, d, alpha, beta) -> None:
        M = self.M
        if self.indices.size == 0:  # no stored entry (MKL's inspector refuses an empty matrix): d = beta d
            if beta == 0:
                d[...] = 0
            else:
                d *= beta
            return
        if self.handle is None or values.ctypes.data != self.values_ptr:
            self._make(values)
        elif self.optimized:
            M.check(self.update(self.handle, 0, None, None, values.ctypes.data), "mkl_sparse_?_update_values")
        a, bt = M.scalar(self.dtype, alpha), M.scalar(self.dtype, beta)
        if self.ncols is None:
            status = self.mm(self.op, a, self.handle, self.descr, b.ctypes.data, bt, d.ctypes.data)
        else:
            item = d.itemsize
            if self.layout == 101:
                ldb, ldd = b.strides[0] // item, d.strides[0] // item
            else:
                ldb, ldd = b.strides[1] // item, d.strides[1] // item
            status = self.mm(self.op, a, self.handle, self.descr, self.layout, b.ctypes.data, self.ncols,
                             max(ldb, 1), bt, d.ctypes.data, max(ldd, 1))
        M.check(status, "mkl_sparse_?_mm" if self.ncols is not None else "mkl_sparse_?_mv")

    def set_index(self, indptr, indices) -> None:
        """New CSR index arrays of the planned pattern: a new handle at the next run."""
        if self.bits == 64 and indices.dtype != np.int64:
            indptr, indices = indptr.astype(np.int64), indices.astype(np.int64)
        self.indptr, self.indices = indptr, indices
        self._destroy()

    def _destroy(self) -> None:
        h, self.handle = self.handle, None
        if h is not None:
            self.M.destroy(self.bits, h)

    def free(self) -> None:
        self._destroy()
        self.indptr = self.indices = None


class MKLEngine:
    """oneMKL sparse BLAS from the ``mkl`` wheel (libmkl_rt), int32 (LP64) and int64 (``_64`` routines) indices."""

    name = "mkl"
    description = "oneMKL inspector-executor sparse BLAS"
    conj_op = True

    def __init__(self):
        self._M = None

    def load(self) -> None:
        if self._M is not None:
            return
        from ...._bindings import mkl_sparse as M
        from ...._bindings.mkl_pardiso import mkl_int_bits

        try:
            ok = M.available()
        except (OSError, LibraryNotFoundError) as exc:
            raise LibraryNotFoundError(f"oneMKL's sparse BLAS is not available ({exc}); install it with "
                                       f"pip install cumath[mkl]") from None
        if not ok:
            raise LibraryNotFoundError("the loaded libmkl_rt has no 64-bit sparse BLAS routines (oneMKL 2024 or "
                                       "newer has them); install a newer one with pip install -U cumath[mkl]")
        self._bits32 = mkl_int_bits() == 32
        from ...._bindings._loader import load_library

        lib = load_library("mkl_rt")
        self._update = {}
        for x in "sdcz":
            for sfx, I in (("", c_int), ("_64", c_int64)):
                fn = getattr(lib, f"mkl_sparse_{x}_update_values{sfx}")
                fn.restype, fn.argtypes = c_int, [c_void_p, I, c_void_p, c_void_p, c_void_p]
                self._update[x, sfx] = fn
        self._M = M

    def supports(self, dtype: str) -> bool:
        return dtype in self._M.PREFIX

    def product(self, csr, shape, op: str, dtype: str, ncols, layout: str, expected_calls: int, log):
        indptr, indices = csr
        bits = 64 if indices.dtype == np.int64 else 32
        if bits == 32 and not self._bits32:  # ILP64 chosen earlier in this process: plain names take 64-bit ints
            indptr, indices, bits = indptr.astype(np.int64), indices.astype(np.int64), 64
            if log.isEnabledFor(logging.INFO):
                log.info("int32 indices copied to int64 for MKL's ILP64 interface (%d bytes)", indices.nbytes * 2)
        update = self._update[self._M.PREFIX[dtype], "_64" if bits == 64 else ""]
        return _Product(self._M, update, (indptr, indices), shape, op, dtype, bits, ncols, layout, expected_calls,
                        log)
