"""The one sparse-operand adapter of cumath: CSR matrices of SciPy, CuPy and PyTorch as three dense Operands.

A :class:`CSR` is what the internals see of a sparse matrix: the row offsets (``indptr``), column indices
(``indices``) and values (``values``) as :class:`~cumath._core.operand.Operand` views of the package's own
arrays (zero-copy), the shape, the number of stored entries, the dtypes, and the package of the dense arrays
that go with it (``numpy`` for SciPy, ``cupy`` for CuPy, ``torch`` for PyTorch). Read from:

- ``scipy.sparse.csr_matrix`` / ``csr_array`` (``indptr``, ``indices``, ``data``);
- ``cupyx.scipy.sparse.csr_matrix`` (the same attributes, CuPy arrays);
- ``torch.sparse_csr_tensor`` (``crow_indices()``, ``col_indices()``, ``values()``), CPU or CUDA, batched
  too: a ``(*batch, n, m)`` tensor is a batch of matrices with the same number of stored entries each.

int32 and int64 indices are read as they are. The package is recognised from ``type(x).__module__``; no
framework is imported here (the component arrays are wrapped by ``_core.operand.wrap_operand``, which imports
an adapter only for a package whose array it is given). The sparse matmul reads its operands through this
module too.
"""

from __future__ import annotations

import logging
import zlib

from .._core.operand import Operand, wrap_operand

__all__ = ["SparseOperand", "CSR", "wrap_sparse", "wrap_sparse_operands", "is_sparse", "pattern_fingerprint", "host_arrays",
           "SPARSE_PACKAGES", "INDEX_DTYPES"]

logger = logging.getLogger(__name__)

#: the sparse package of a dense package, for messages
SPARSE_PACKAGES = {"numpy": "scipy", "cupy": "cupyx", "torch": "torch"}
INDEX_DTYPES = ("int32", "int64")

_ALLOWED = ("a scipy.sparse.csr_matrix or csr_array, a cupyx.scipy.sparse.csr_matrix or a torch sparse CSR "
            "tensor (torch.sparse_csr_tensor)")


class SparseOperand:
    """What every sparse operand answers like a dense :class:`~cumath._core.operand.Operand` does (its
    subclasses set ``shape`` and ``device_id``)."""

    __slots__ = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def on_gpu(self) -> bool:
        return self.device_id is not None

    @property
    def readonly(self) -> bool:
        return False


class CSR(SparseOperand):
    """A sparse matrix (or a batch of them) in compressed sparse row format, read from a package's arrays.

    ``shape`` is ``(*batch_shape, n, m)``; ``indptr``, ``indices`` and ``values`` are Operands of shape
    ``(*batch_shape, n + 1)``, ``(*batch_shape, nnz)`` and ``(*batch_shape, nnz)``. ``package`` is the package of
    the component (dense) arrays; ``device_id`` None for host memory. ``canonical`` is True when the package
    already knows the column indices are sorted within rows and free of duplicates, None when it does not say.
    """

    __slots__ = ("obj", "package", "device_id", "shape", "batch_shape", "nnz", "indptr", "indices", "values",
                 "dtype", "index_dtype", "canonical", "strides")

    def __init__(self, obj, indptr: Operand, indices: Operand, values: Operand, shape, nnz: int, canonical=None):
        self.obj = obj
        self.indptr, self.indices, self.values = indptr, indices, values
        self.package = values.package
        self.device_id = values.device_id
        self.shape = tuple(int(s) for s in shape)
        self.batch_shape = self.shape[:-2]
        self.nnz = int(nnz)
        self.dtype = values.dtype
        self.index_dtype = indices.dtype
        self.canonical = canonical
        # what a plan's quick reset check compares, as for a dense operand
        self.strides = (indptr.strides, indices.strides, values.strides)

    @property
    def n(self) -> int:
        return self.shape[-2]

    @property
    def signature(self) -> tuple:
        """What a plan depends on (the sparsity pattern itself aside: see :func:`pattern_fingerprint`)."""
        return (self.package, self.device_id, self.shape, self.nnz, self.dtype, self.index_dtype,
                self.indptr.dtype, self.strides)

    def __repr__(self):
        where = "host" if self.device_id is None else f"cuda:{self.device_id}"
        return (f"CSR({SPARSE_PACKAGES.get(self.package, self.package)} {self.dtype}{list(self.shape)} "
                f"nnz={self.nnz} {self.index_dtype} indices on {where})")


def is_sparse(x) -> bool:
    """Whether ``x`` is a sparse matrix of a package this module reads (any format)."""
    if isinstance(x, CSR):
        return True
    module = type(x).__module__
    if module.startswith(("scipy.sparse", "cupyx.scipy.sparse")):
        return True
    if module.startswith("torch"):
        layout = getattr(x, "layout", None)
        return layout is not None and str(layout).startswith("torch.sparse")
    return False


def wrap_sparse(x, name: str = "a") -> CSR:
    """The :class:`CSR` view of ``x`` (see the module's docstring); TypeError naming what is accepted."""
    if isinstance(x, CSR):
        return x
    module = type(x).__module__
    if module.startswith(("scipy.sparse", "cupyx.scipy.sparse")):
        fmt = getattr(x, "format", None)
        if fmt != "csr":
            raise TypeError(f"{name} must be in CSR format; got a {type(x).__name__} in {fmt!r} format: convert it "
                            f"with {name}.tocsr()")
        shape = tuple(x.shape)
        if len(shape) != 2:
            raise TypeError(f"{name} must be a matrix (2-D); got shape {shape}")
        indptr, indices, values = (wrap_operand(v, f"{name}.{attr}") for v, attr in
                                   ((x.indptr, "indptr"), (x.indices, "indices"), (x.data, "data")))
        nnz = indices.shape[0]
        canonical = getattr(x, "has_canonical_format", None) if module.startswith("scipy") else None
        csr = CSR(x, indptr, indices, values, shape, nnz, canonical)
    elif module.startswith("torch") and hasattr(x, "layout"):
        layout = str(x.layout)
        if layout != "torch.sparse_csr":
            raise TypeError(f"{name} must be a sparse CSR tensor; got a tensor with layout {layout}: convert it with "
                            f"{name}.to_sparse_csr()")
        if x.dense_dim():
            raise TypeError(f"{name} is a hybrid CSR tensor with {x.dense_dim()} dense dimension(s); only scalar "
                            f"values per stored entry are supported")
        indptr = wrap_operand(x.crow_indices(), f"{name}.crow_indices()")
        indices = wrap_operand(x.col_indices(), f"{name}.col_indices()")
        values = wrap_operand(x.values(), f"{name}.values()")
        csr = CSR(x, indptr, indices, values, tuple(x.shape), indices.shape[-1])
    else:
        raise TypeError(f"{name} must be {_ALLOWED}; got {type(x).__module__}.{type(x).__name__}")
    _check_components(csr, name)
    return csr


def _check_components(csr: CSR, name: str) -> None:
    if csr.index_dtype not in INDEX_DTYPES or csr.indptr.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name}'s indices must be int32 or int64; got {csr.indptr.dtype} row offsets and "
                        f"{csr.index_dtype} column indices")
    b = len(csr.batch_shape)
    if csr.indptr.shape[b:] != (csr.n + 1,) or csr.values.shape[b:] != (csr.nnz,):
        raise ValueError(f"{name} is not a consistent CSR matrix: {csr.indptr.shape} row offsets and "
                         f"{csr.values.shape} values for shape {csr.shape} and {csr.nnz} stored entries")


def wrap_sparse_operands(a, name: str = "a"):
    """``a`` as a CSR, or a tuple of CSRs when ``a`` is a list or tuple (an explicit batch), checked to come
    from one package and device with one dtype and index dtype."""
    if isinstance(a, (list, tuple)):
        if not a:
            raise ValueError(f"{name} is an empty sequence; pass at least one matrix")
        items = tuple(wrap_sparse(x, f"{name}[{i}]") for i, x in enumerate(a))
        first = items[0]
        for i, x in enumerate(items[1:], 1):
            for what, u, v in (("package", x.package, first.package), ("device", x.device_id, first.device_id),
                               ("dtype", x.dtype, first.dtype), ("index dtype", x.index_dtype, first.index_dtype)):
                if u != v:
                    raise TypeError(f"{name}[{i}] has {what} {u} while {name}[0] has {v}; every matrix of a batch "
                                    f"must have the same {what}")
            if x.ndim != 2:
                raise TypeError(f"every matrix of an explicitly batched {name} must be 2-D; {name}[{i}] has shape "
                                f"{x.shape}")
        if first.ndim != 2:
            raise TypeError(f"every matrix of an explicitly batched {name} must be 2-D; {name}[0] has shape "
                            f"{first.shape}")
        return items
    return wrap_sparse(a, name)


# ------------------------------------------------------------------------------------ pattern and arrays


def host_arrays(op: Operand, stream=None):
    """A NumPy view of a host Operand, or a NumPy copy of a GPU one (the copy is logged)."""
    import numpy as np

    from .._core.frameworks.numpy import view

    if op.device_id is None:
        return view(op)
    from .._core import cuda
    from .._core.streams import default_stream

    if not op.is_dense_in(tuple(range(op.ndim))):
        raise ValueError(f"{op} is not dense; cumath reads sparse index arrays that are dense only")
    out = np.empty(op.shape, dtype=op.dtype)
    s = default_stream(op.package, op.device_id) if stream is None else stream
    if out.nbytes:
        cuda.copy(out.ctypes.data, op.ptr, out.nbytes, cuda.D2H, s, "sparse index array")
        cuda.synchronize(s)
    return out


def _crc(arr) -> int:
    if not arr.flags.c_contiguous:
        import numpy as np

        arr = np.ascontiguousarray(arr)
    return zlib.crc32(arr)


def pattern_fingerprint(csr: CSR, stream=None, hosts: list | None = None) -> tuple:
    """A fingerprint of the sparsity pattern: the shape, nnz, index dtypes and CRC-32s of the row offsets and
    column indices (64 bits of checksum in all). Plans are cached by it; GPU index arrays are copied to the host
    to be read (logged). ``hosts``, a list, receives the host ``(indptr, indices)`` arrays that were read (so that
    a caller that needs them too does not copy them again)."""
    indptr, indices = host_arrays(csr.indptr, stream), host_arrays(csr.indices, stream)
    if hosts is not None:
        hosts.append((indptr, indices))
    return (csr.shape, csr.nnz, csr.indptr.dtype, csr.index_dtype, _crc(indptr), _crc(indices))
