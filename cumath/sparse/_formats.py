"""Sparse matrices of every format cumath reads, as component Operands, and their CSR pattern.

:class:`SparseMatrix` generalises the CSR view of ``_operand.py`` to the formats of SciPy (csr, csc, coo, bsr,
dia; matrices and arrays), ``cupyx.scipy.sparse`` (csr, csc, coo) and PyTorch's sparse layouts (COO, CSR,
CSC, BSR, BSC; batched CSR too): zero-copy Operand views of the package's own component arrays, the format
name, the shape, the number of stored entries, the block size and the dtypes.

:func:`csr_gather` is the pure arithmetic that lets any format run on a CSR engine: from the index arrays
(on the host) it gives the CSR row offsets and column indices of the same matrix and the positions in the
format's value array of each CSR value (``csr_values = values.ravel()[gather]``), so new values of the same
pattern cost one gather, never a new plan. Entries stored twice (COO) are kept twice (a product sums them).
"""

from __future__ import annotations

import numpy as np

from .._core.operand import Operand, wrap_operand
from ._operand import CSR, INDEX_DTYPES, SparseOperand, host_arrays

__all__ = ["SparseMatrix", "wrap_sparse_matrix", "csr_gather", "FORMATS"]

FORMATS = ("csr", "csc", "coo", "bsr", "bsc", "dia")
_COMPONENTS = {"csr": ("indptr", "indices"), "csc": ("indptr", "indices"), "bsr": ("indptr", "indices"),
               "bsc": ("indptr", "indices"), "coo": ("row", "col"), "dia": ("offsets",)}
_ALLOWED = ("a sparse matrix: scipy.sparse (csr, csc, coo, bsr, dia matrices or arrays), cupyx.scipy.sparse "
            "(csr, csc, coo), a torch sparse tensor (COO, CSR, CSC, BSR, BSC layouts) or a cumath.sparse.ust.Tensor")
_TORCH_LAYOUTS = {"torch.sparse_coo": "coo", "torch.sparse_csr": "csr", "torch.sparse_csc": "csc",
                  "torch.sparse_bsr": "bsr", "torch.sparse_bsc": "bsc"}


class SparseMatrix(SparseOperand):
    """A sparse matrix in one of :data:`FORMATS`, read from a package's arrays (no copy).

    ``index`` maps component names to Operands (``indptr``/``indices`` for the compressed formats, ``row``/
    ``col`` for COO, ``offsets`` for DIA); ``values`` holds the stored values (blocks ``(nnzb, r, c)`` for
    BSR/BSC, diagonals ``(ndiag, ncols)`` for DIA). ``shape`` is ``(*batch, m, n)`` (a batch only for PyTorch's
    batched CSR). ``nnz`` counts stored values (entries of blocks and diagonals included).
    """

    __slots__ = ("obj", "format", "package", "device_id", "shape", "batch_shape", "nnz", "index", "values",
                 "blocksize", "dtype", "index_dtype", "strides")

    def __init__(self, obj, fmt: str, index: dict, values: Operand, shape, blocksize=None):
        self.obj, self.format, self.index, self.values = obj, fmt, index, values
        self.package, self.device_id = values.package, values.device_id
        self.shape = tuple(int(s) for s in shape)
        self.batch_shape = self.shape[:-2]
        self.nnz = values.size // max(1, int(np.prod(self.batch_shape, dtype=np.int64)))
        self.blocksize = None if blocksize is None else tuple(int(b) for b in blocksize)
        self.dtype = values.dtype
        self.index_dtype = next(iter(index.values())).dtype
        self.strides = tuple(o.strides for o in index.values()) + (values.strides,)

    @property
    def signature(self) -> tuple:
        """What a plan depends on (besides the pattern): package, device, format, shape, stored entries,
        block size, dtypes and the component layouts."""
        return (self.package, self.device_id, self.format, self.shape, self.nnz, self.blocksize, self.dtype,
                tuple(o.dtype for o in self.index.values()), self.strides)

    def pointers(self) -> tuple:
        return tuple(o.ptr for o in self.index.values()) + (self.values.ptr,)

    def __repr__(self):
        where = "host" if self.device_id is None else f"cuda:{self.device_id}"
        return (f"SparseMatrix({self.package} {self.format} {self.dtype}{list(self.shape)} nnz={self.nnz} "
                f"{self.index_dtype} indices on {where})")


def _from_csr(c: CSR) -> SparseMatrix:
    return SparseMatrix(c.obj, "csr", {"indptr": c.indptr, "indices": c.indices}, c.values, c.shape)


def _scipy(x, name: str, module: str) -> SparseMatrix:
    fmt = getattr(x, "format", None)
    cupyx = module.startswith("cupyx")
    allowed = ("csr", "csc", "coo") if cupyx else ("csr", "csc", "coo", "bsr", "dia")
    if fmt not in allowed:
        raise TypeError(f"{name} is a {type(x).__name__} in {fmt!r} format, which cumath does not read from "
                        f"{'cupyx' if cupyx else 'scipy'}; use one of {', '.join(allowed)} (e.g. {name}.tocsr())")
    shape = tuple(x.shape)
    if len(shape) != 2:
        raise TypeError(f"{name} must be a matrix (2-D); got shape {shape}")
    w = lambda v, attr: wrap_operand(v, f"{name}.{attr}")  # noqa: E731
    if fmt in ("csr", "csc", "bsr"):
        index = {"indptr": w(x.indptr, "indptr"), "indices": w(x.indices, "indices")}
        return SparseMatrix(x, fmt, index, w(x.data, "data"), shape, getattr(x, "blocksize", None)
                            if fmt == "bsr" else None)
    if fmt == "coo":
        row, col = (x.coords if hasattr(x, "coords") and not cupyx else (x.row, x.col))
        return SparseMatrix(x, "coo", {"row": w(row, "row"), "col": w(col, "col")}, w(x.data, "data"), shape)
    return SparseMatrix(x, "dia", {"offsets": w(x.offsets, "offsets")}, w(x.data, "data"), shape)


def _torch(x, name: str) -> SparseMatrix:
    layout = str(x.layout)
    fmt = _TORCH_LAYOUTS.get(layout)
    if fmt is None:
        raise TypeError(f"{name} must be a sparse tensor; got a tensor with layout {layout}: convert it with "
                        f"{name}.to_sparse_csr()")
    if x.dense_dim():
        raise TypeError(f"{name} is a hybrid sparse tensor with {x.dense_dim()} dense dimension(s); only scalar "
                        f"values (or blocks) per stored entry are supported")
    w = lambda v, what: wrap_operand(v, f"{name}.{what}")  # noqa: E731
    shape = tuple(x.shape)
    if fmt == "coo":
        if len(shape) != 2:
            raise TypeError(f"{name} must be a sparse matrix (2-D); got shape {shape}")
        idx = x._indices()  # uncoalesced entries are summed by a product, as PyTorch does
        return SparseMatrix(x, "coo", {"row": w(idx[0], "row"), "col": w(idx[1], "col")}, w(x._values(), "values"),
                            shape)
    if fmt in ("csr", "bsr"):
        ptr, ind = x.crow_indices(), x.col_indices()
    else:
        ptr, ind = x.ccol_indices(), x.row_indices()
    vals = x.values()
    if fmt != "csr" and len(shape) != 2:
        raise TypeError(f"{name}: only CSR tensors may be batched; got a {fmt.upper()} tensor of shape {shape}")
    blocksize = tuple(vals.shape[-2:]) if fmt in ("bsr", "bsc") else None
    return SparseMatrix(x, fmt, {"indptr": w(ptr, "indptr"), "indices": w(ind, "indices")}, w(vals, "values"),
                        shape, blocksize)


def wrap_sparse_matrix(x, name: str = "a") -> SparseMatrix:
    """The :class:`SparseMatrix` view of ``x``; TypeError naming what is accepted."""
    if isinstance(x, SparseMatrix):
        return x
    if isinstance(x, CSR):
        return _from_csr(x)
    module = type(x).__module__
    if module.startswith(("scipy.sparse", "cupyx.scipy.sparse")):
        sm = _scipy(x, name, module)
    elif module.startswith("torch") and hasattr(x, "layout") and str(x.layout).startswith("torch.sparse"):
        sm = _torch(x, name)
    elif hasattr(x, "_as_sparse_matrix"):  # a Universal Sparse Tensor
        sm = x._as_sparse_matrix(name)
    else:
        raise TypeError(f"{name} must be {_ALLOWED}; got {module}.{type(x).__name__}")
    bad = [o.dtype for o in sm.index.values() if o.dtype not in INDEX_DTYPES]
    if bad and sm.format != "dia":
        raise TypeError(f"{name}'s indices must be int32 or int64; got {bad[0]}")
    if sm.dtype not in ("float32", "float64", "complex64", "complex128", "float16"):
        raise TypeError(f"{name} has values of dtype {sm.dtype}; use float16, float32, float64, complex64 or "
                        f"complex128")
    return sm


# ------------------------------------------------------------------------------- CSR pattern of any format


def csr_gather(sm: SparseMatrix, stream=None):
    """(indptr, indices, gather) of the 2-D matrix ``sm`` in CSR (int64 NumPy arrays, host): ``indices`` sorted
    within rows stably, ``gather`` the flat positions of each CSR value in ``sm.values`` (None for CSR itself)."""
    m, n = sm.shape[-2:]
    ix = {k: host_arrays(v, stream).astype(np.int64, copy=False) for k, v in sm.index.items()}
    fmt = sm.format
    if fmt == "csr":
        return ix["indptr"], ix["indices"], None
    if fmt == "coo":
        rows, cols = ix["row"], ix["col"]
        pos = np.arange(rows.size, dtype=np.int64)
    elif fmt == "csc":
        cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(ix["indptr"]))
        rows, pos = ix["indices"], np.arange(cols.size, dtype=np.int64)
    elif fmt in ("bsr", "bsc"):
        r, c = sm.blocksize
        nblocks = ix["indices"].size
        outer = np.repeat(np.arange(ix["indptr"].size - 1, dtype=np.int64), np.diff(ix["indptr"]))
        brow, bcol = (outer, ix["indices"]) if fmt == "bsr" else (ix["indices"], outer)
        ii, jj = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
        rows = (brow[:, None] * r + ii.ravel()[None, :]).ravel()
        cols = (bcol[:, None] * c + jj.ravel()[None, :]).ravel()
        pos = np.arange(nblocks * r * c, dtype=np.int64)
    elif fmt == "dia":
        offsets = ix["offsets"]
        width = sm.values.shape[-1]
        k = np.arange(width, dtype=np.int64)
        rows_l, cols_l, pos_l = [], [], []
        for d, off in enumerate(offsets):
            j = k[(k - off >= 0) & (k - off < m) & (k < n)]
            rows_l.append(j - off)
            cols_l.append(j)
            pos_l.append(d * width + j)
        rows = np.concatenate(rows_l) if rows_l else np.zeros(0, np.int64)
        cols = np.concatenate(cols_l) if cols_l else np.zeros(0, np.int64)
        pos = np.concatenate(pos_l) if pos_l else np.zeros(0, np.int64)
    else:  # pragma: no cover - wrap_sparse_matrix admits only FORMATS
        raise ValueError(f"unknown sparse format {fmt!r}")
    if rows.size and (rows.min() < 0 or rows.max() >= m or cols.min() < 0 or cols.max() >= n):
        raise ValueError(f"a's {fmt.upper()} indices fall outside its shape {sm.shape[-2:]}")
    order = np.lexsort((cols, rows))
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
    return indptr, cols[order], pos[order]
