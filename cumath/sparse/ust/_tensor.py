"""The Universal Sparse Tensor: a tensor format bound to extents, a value dtype, an index type and the arrays of
a package (NumPy/SciPy, CuPy, PyTorch; CPU or GPU) that hold its positions, coordinates and values.

``from_package`` views a package's dense or sparse array without copying (CSR, CSC, COO, BSR/BSC, dense
row- or column-major); ``to_package`` gives the package's own object back for those formats; ``convert``
builds any format from any other (on the host, through the coordinates of the stored elements: GPU tensors
are copied to the host and back, logged). ``from_file`` reads Matrix Market (``.mtx``) and FROSTT (``.tns``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import importlib
import logging

import numpy as np

from ..._core.operand import wrap_operand
from .._operand import host_arrays
from ._dsl import TensorFormat
from ._named import NamedFormats as NF
from ._storage import build, level_sizes, read

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal
    from ..._core.typing import AnyTensor, DTypeLike

__all__ = ["Tensor"]

logger = logging.getLogger("cumath.sparse.ust")

_DTYPES = ("float16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32", "int64", "bool")


def _name(x) -> str:
    return str(x).replace("torch.", "") if "torch" in str(type(x)) or str(x).startswith("torch.") else \
        np.dtype(x).name


def _package_of(x) -> str:
    top = type(x).__module__.partition(".")[0]
    return {"scipy": "numpy", "cupyx": "cupy", "cupy": "cupy", "torch": "torch", "numpy": "numpy"}.get(top, top)


def _host(a) -> np.ndarray:
    """A NumPy view (host arrays) or copy (GPU arrays, logged) of a package array."""
    return np.asarray(host_arrays(wrap_operand(a, "tensor component")))


def _to_package(x: np.ndarray, package: str, device_id):
    if package == "numpy":
        return x
    if package == "torch":
        import torch

        t = torch.from_numpy(np.ascontiguousarray(x))
        return t if device_id is None else t.to(f"cuda:{device_id}")
    import cupy

    with cupy.cuda.Device(device_id or 0):
        return cupy.asarray(x)


class Tensor:
    """A universal sparse tensor (see the module's docstring). Create one with :meth:`from_package`,
    :meth:`from_file` or :meth:`convert`; the constructor is internal."""

    def __init__(self, extents: Sequence[int], *, tensor_format: TensorFormat, index_type: str = "int32",
                 dtype: DTypeLike = "float32", package: str = "numpy", device_id: int | None = None, pos: Any = None,
                 crd: Any = None, val: Any = None, base: Any = None) -> None:
        self._extents = tuple(int(e) for e in extents)
        if not isinstance(tensor_format, TensorFormat):
            raise TypeError(f"tensor_format must be a TensorFormat, not {type(tensor_format).__name__}")
        if tensor_format.num_dimensions != len(self._extents):
            raise ValueError(f"{tensor_format.name} has {tensor_format.num_dimensions} dimensions, but the extents "
                             f"{self._extents} have {len(self._extents)}")
        self._format = tensor_format
        self._index_type, self._dtype = _name(index_type), _name(dtype)
        if self._index_type not in ("int32", "int64"):
            raise ValueError(f"index_type={index_type!r} is not supported; use 'int32' or 'int64'")
        self._package, self._device_id = package, device_id
        n = tensor_format.num_levels
        self._pos = list(pos) if pos is not None else [None] * n
        self._crd = list(crd) if crd is not None else [None] * n
        self._val, self._base = val, base
        self._kernel = None

    # ------------------------------------------------------------------------------------------ creation
    @classmethod
    def from_package(cls, tensor: AnyTensor) -> "Tensor":
        """A zero-copy UST view of a NumPy/CuPy/PyTorch dense array, a SciPy/cupyx sparse matrix (csr, csc, coo,
        bsr; dia is converted) or a PyTorch sparse tensor (COO, CSR, CSC, BSR, BSC)."""
        if isinstance(tensor, Tensor):
            return tensor
        module = type(tensor).__module__
        pkg = _package_of(tensor)
        if module.startswith(("scipy.sparse", "cupyx.scipy.sparse")):
            return cls._from_scipy(tensor, pkg)
        if module.startswith("torch") and str(getattr(tensor, "layout", "")).startswith("torch.sparse"):
            return cls._from_torch(tensor)
        if pkg in ("numpy", "cupy", "torch"):
            return cls._from_dense(tensor, pkg)
        raise TypeError(f"Tensor.from_package takes a NumPy, CuPy or PyTorch array or a SciPy, cupyx or PyTorch "
                        f"sparse matrix; got {module}.{type(tensor).__name__}")

    @classmethod
    def _from_dense(cls, x, pkg):
        op = wrap_operand(x, "tensor")
        shape = tuple(op.shape)
        nd = len(shape)
        if nd == 2 and op.is_dense_in((1, 0)) and not op.is_dense_in((0, 1)):
            fmt, val = NF.DenseMatrixLeft, (x.T if pkg != "torch" else x.t()).reshape(-1)
        else:
            if not op.is_dense_in(tuple(range(nd))):
                x = x.copy() if pkg != "torch" else x.contiguous()
                logger.info("a dense tensor of shape %s that is not contiguous was copied", list(shape))
            fmt = {0: NF.Scalar, 1: NF.DenseVector, 2: NF.DenseMatrixRight}.get(nd) or NF.DenseTensor(nd)
            val = x.reshape(-1)
        return cls(shape, tensor_format=fmt, index_type="int32", dtype=op.dtype, package=pkg, device_id=op.device_id,
                   val=val, base=x)

    @classmethod
    def _from_scipy(cls, x, pkg):
        fmt = x.format
        dev = None if pkg == "numpy" else x.data.device.id
        it = _name(getattr(x, "indices", getattr(x, "row", None)).dtype) if fmt != "dia" else "int32"
        common = dict(index_type=it, dtype=_name(x.dtype), package=pkg, device_id=dev, base=x)
        if fmt in ("csr", "csc"):
            return cls(x.shape, tensor_format=NF.CSR if fmt == "csr" else NF.CSC, pos=[None, x.indptr],
                       crd=[None, x.indices], val=x.data, **common)
        if fmt == "coo":
            row, col = (x.coords if hasattr(x, "coords") else (x.row, x.col))
            it = _name(row.dtype)
            common["index_type"] = it
            p0 = _to_package(np.array([0, row.shape[0]], dtype=it), pkg, dev)
            return cls(x.shape, tensor_format=NF.COO, pos=[p0, None], crd=[row, col], val=x.data, **common)
        if fmt == "bsr":
            r, c = x.blocksize
            return cls(x.shape, tensor_format=NF.BSRRight(r, c), pos=[None, x.indptr, None, None],
                       crd=[None, x.indices, None, None], val=x.data.reshape(-1), **common)
        if fmt == "dia":
            logger.info("a DIA matrix is converted (copied) to the DIAJ format")
            return cls.from_package(x.tocoo()).convert(tensor_format=NF.DIAJ)
        raise TypeError(f"Tensor.from_package does not read {fmt!r} matrices; convert with .tocsr() first")

    @classmethod
    def _from_torch(cls, x):
        layout = str(x.layout)
        dev = x.device.index if x.is_cuda else None
        if x.ndim != 2 and layout != "torch.sparse_csr":
            raise TypeError(f"only 2-D (or batched CSR) PyTorch sparse tensors are read; got {layout} of shape "
                            f"{tuple(x.shape)}")
        common = dict(dtype=_name(x.dtype), package="torch", device_id=dev, base=x)
        if layout == "torch.sparse_coo":
            idx = x._indices()
            p0 = _to_package(np.array([0, idx.shape[1]], np.int64), "torch", dev)
            return cls(x.shape, tensor_format=NF.COO, index_type="int64", pos=[p0, None], crd=[idx[0], idx[1]],
                       val=x._values(), **common)
        if layout in ("torch.sparse_csr", "torch.sparse_bsr"):
            ptr, ind = x.crow_indices(), x.col_indices()
        else:
            ptr, ind = x.ccol_indices(), x.row_indices()
        it = _name(ind.dtype)
        if layout == "torch.sparse_csr":
            if x.ndim == 3:
                raise TypeError("batched PyTorch CSR tensors are not read into a UST in this version; pass the "
                                "matrices one at a time")
            return cls(x.shape, tensor_format=NF.CSR, index_type=it, pos=[None, ptr], crd=[None, ind], val=x.values(),
                       **common)
        if layout == "torch.sparse_csc":
            return cls(x.shape, tensor_format=NF.CSC, index_type=it, pos=[None, ptr], crd=[None, ind], val=x.values(),
                       **common)
        r, c = x.values().shape[-2:]
        fmt = NF.BSRRight(r, c) if layout == "torch.sparse_bsr" else NF.BSCRight(r, c)
        return cls(x.shape, tensor_format=fmt, index_type=it, pos=[None, ptr, None, None], crd=[None, ind, None, None],
                   val=x.values().reshape(-1), **common)

    @classmethod
    def from_file(cls, filename: str, *, package: str | None = None, index_type: str = "int32",
                  dtype: DTypeLike = None) -> "Tensor":
        """Read a Matrix Market (``.mtx``: a COO matrix; symmetric files expanded) or FROSTT (``.tns``: one
        line per element, 1-based coordinates then the value) file into a COO tensor on the host."""
        name = str(filename)
        if name.endswith(".mtx"):
            import scipy.io

            m = scipy.io.mmread(name)
            if not hasattr(m, "format"):
                import scipy.sparse as sp

                m = sp.coo_array(m)
            m = m.tocoo()
            coords = np.stack([np.asarray(m.row), np.asarray(m.col)], axis=1)
            values, extents = np.asarray(m.data), m.shape
        elif name.endswith(".tns"):
            rows = [line.split() for line in open(name) if line.strip() and not line.lstrip().startswith("#")]
            if not rows:
                raise ValueError(f"{name} holds no element")
            order = len(rows[0]) - 1
            if any(len(r) != order + 1 for r in rows):
                raise ValueError(f"{name} is not a FROSTT file: every line must hold {order} coordinates and a value")
            arr = np.array(rows)
            coords = arr[:, :order].astype(np.int64) - 1
            if coords.min() < 0:
                raise ValueError(f"{name}: FROSTT coordinates are 1-based; found a coordinate below 1")
            values = arr[:, order].astype(np.float64)
            extents = tuple(int(x) + 1 for x in coords.max(axis=0))
        else:
            raise ValueError(f"from_file reads Matrix Market (.mtx) and FROSTT (.tns) files; got {name!r}")
        dt = dtype or values.dtype.name
        fmt = NF.COO if len(extents) == 2 else NF.COOd(len(extents))
        pos, crd, val = build(fmt, extents, coords, values, dt, index_type)
        t = cls(extents, tensor_format=fmt, index_type=index_type, dtype=dt, pos=pos, crd=crd, val=val)
        return t if package in (None, "numpy", np) else t.to(0) if package in ("cupy",) else t

    # ------------------------------------------------------------------------------------------ storage
    def _host_storage(self):
        pos = [None if p is None else _host(p) for p in self._pos]
        crd = [None if c is None else _host(c) for c in self._crd]
        return pos, crd, _host(self._val)

    def _coordinates(self):
        pos, crd, val = self._host_storage()
        return read(self._format, self._extents, pos, crd, val)

    def convert(self, *, tensor_format: Any = None, index_type: str | None = None, dtype: DTypeLike = None) -> "Tensor":
        """A new tensor holding the same elements in ``tensor_format`` (default: this one's), with ``index_type``
        and ``dtype`` (defaults: this tensor's), in this tensor's package and device."""
        fmt = tensor_format or self._format
        it, dt = _name(index_type or self._index_type), _name(dtype or self._dtype)
        if fmt.num_dimensions != len(self._extents):
            raise ValueError(f"{fmt.name} has {fmt.num_dimensions} dimensions; this tensor has {len(self._extents)}")
        coords, values = self._coordinates()
        keep = values != 0 if fmt != self._format else np.ones(values.size, bool)
        pos, crd, val = build(fmt, self._extents, coords[keep], values[keep], dt, it)
        if self._device_id is not None:
            logger.info("UST conversion of a GPU tensor ran on the host (%d stored elements copied each way)",
                        int(keep.sum()))
        up = lambda a: None if a is None else _to_package(a, self._package, self._device_id)  # noqa: E731
        return Tensor(self._extents, tensor_format=fmt, index_type=it, dtype=dt, package=self._package,
                      device_id=self._device_id, pos=[up(p) for p in pos], crd=[up(c) for c in crd], val=up(val))

    def to_package(self) -> Any:
        """The package's own object: a dense array, a SciPy/cupyx sparse matrix (CSR, CSC, COO, BSR) or a PyTorch
        sparse tensor (COO, CSR, CSC, BSR, BSC). Other formats: convert() to one of those first."""
        name, pkg = self._format.name, self._package
        e = self._extents
        if name in ("DenseVector", "DenseMatrixRight", "Scalar") or name.startswith("Dense") and name.endswith("d"):
            return self._val.reshape(e)
        if name == "DenseMatrixLeft":
            v = self._val.reshape(e[::-1])
            return v.T if pkg != "torch" else v.t()
        if pkg == "torch":
            return self._to_torch()
        mod = importlib.import_module("scipy.sparse" if pkg == "numpy" else "cupyx.scipy.sparse")
        arr = (lambda n: getattr(mod, f"{n}_array")) if pkg == "numpy" else (lambda n: getattr(mod, f"{n}_matrix"))
        if name in ("CSR", "CSC"):
            return arr(name.lower())((self._val, self._crd[1], self._pos[1]), shape=e)
        if name == "COO":
            return arr("coo")((self._val, (self._crd[0], self._crd[1])), shape=e)
        if name.startswith("BSRRight") and pkg == "numpy":
            r, c = self._format.level_exprs[2].divisor, self._format.level_exprs[3].divisor
            return mod.bsr_array((self._val.reshape(-1, r, c), self._crd[1], self._pos[1]), shape=e)
        raise TypeError(f"a {name} tensor has no {pkg} counterpart; convert it first, e.g. "
                        f"t.convert(tensor_format=NamedFormats.CSR).to_package()")

    def _to_torch(self):
        import torch

        name, e = self._format.name, self._extents
        if name == "CSR":
            return torch.sparse_csr_tensor(self._pos[1], self._crd[1], self._val, size=e, check_invariants=False)
        if name == "CSC":
            return torch.sparse_csc_tensor(self._pos[1], self._crd[1], self._val, size=e, check_invariants=False)
        if name == "COO":
            return torch.sparse_coo_tensor(torch.stack([self._crd[0], self._crd[1]]), self._val, size=e, check_invariants=False)
        if name.startswith(("BSRRight", "BSCRight")):
            r, c = self._format.level_exprs[2].divisor, self._format.level_exprs[3].divisor
            make = torch.sparse_bsr_tensor if name.startswith("BSR") else torch.sparse_bsc_tensor
            return make(self._pos[1], self._crd[1], self._val.reshape(-1, r, c), size=e, check_invariants=False)
        raise TypeError(f"a {name} tensor has no PyTorch counterpart; convert it first, e.g. "
                        f"t.convert(tensor_format=NamedFormats.CSR).to_package()")

    def to(self, device: Any) -> "Tensor":
        """This tensor on ``device`` ('cpu' or a GPU ordinal): NumPy <-> CuPy, PyTorch stays PyTorch."""
        dev = None if device in ("cpu", None) else int(device)
        if dev == self._device_id:
            return self
        pkg = self._package if self._package == "torch" else ("numpy" if dev is None else "cupy")
        mv = lambda a: None if a is None else _to_package(_host(a), pkg, dev)  # noqa: E731
        return Tensor(self._extents, tensor_format=self._format, index_type=self._index_type, dtype=self._dtype,
                      package=pkg, device_id=dev, pos=[mv(p) for p in self._pos], crd=[mv(c) for c in self._crd],
                      val=mv(self._val))

    def clone(self) -> "Tensor":
        cp = lambda a: None if a is None else (a.clone() if self._package == "torch" else a.copy())  # noqa: E731
        return Tensor(self._extents, tensor_format=self._format, index_type=self._index_type, dtype=self._dtype,
                      package=self._package, device_id=self._device_id, pos=[cp(p) for p in self._pos],
                      crd=[cp(c) for c in self._crd], val=cp(self._val))

    def copy_(self, src: "Tensor") -> "Tensor":
        """Copy ``src``'s values into this tensor (same format, extents and number of stored values)."""
        if not isinstance(src, Tensor) or src._format != self._format or src._extents != self._extents or \
                src.nse != self.nse:
            raise ValueError("copy_ needs a Tensor of the same format, extents and stored elements")
        if self._package == "torch":
            self._val.copy_(_to_package(_host(src._val), "torch", self._device_id))
        elif self._package == "cupy":
            self._val[...] = _to_package(_host(src._val), "cupy", self._device_id)
        else:
            self._val[...] = _host(src._val)
        return self

    def get_value(self, indices: Any) -> Any:
        """The value at dimension ``indices`` (zero where nothing is stored)."""
        idx = tuple(int(i) for i in indices)
        if len(idx) != len(self._extents) or any(not 0 <= i < e for i, e in zip(idx, self._extents)):
            raise IndexError(f"indices {idx} are outside the extents {self._extents}")
        coords, values = self._coordinates()
        hit = np.all(coords == np.array(idx, np.int64), axis=1) if coords.size else np.zeros(0, bool)
        return values[hit].sum() if hit.any() else np.zeros((), self._dtype)[()]

    def set_kernel(self, kernel: Any) -> Any:
        """Set the element-wise map ``kernel(value) -> value`` that :meth:`run_kernel` applies to every stored
        value. It is applied to the whole values array of the tensor's package at once (NumPy, CuPy, PyTorch:
        arithmetic and the package's ufuncs vectorise), so it runs where the tensor is."""
        if not callable(kernel):
            raise TypeError(f"kernel must be a callable value -> value, not {type(kernel).__name__}")
        self._kernel = kernel
        return self

    def run_kernel(self) -> Any:
        """Apply the kernel of :meth:`set_kernel` to the stored values, in place; returns this tensor."""
        if self._kernel is None:
            raise RuntimeError("no kernel is set: call set_kernel(fn) first")
        out = self._kernel(self._val)
        if tuple(getattr(out, "shape", ())) != tuple(self._val.shape):
            raise ValueError(f"the kernel must return one value per stored value (shape {tuple(self._val.shape)}); "
                             f"it returned shape {tuple(getattr(out, 'shape', ()))}")
        if self._package == "torch":
            self._val.copy_(out)
        else:
            self._val[...] = out
        return self

    def draw(self, filename: str | None = None, *, max_side: int = 1024) -> Any:
        """A picture of the sparsity (a uint8 grey-scale array: black where elements are stored; large tensors
        binned to at most ``max_side`` pixels a side), written as PNG to ``filename`` when given."""
        from ._draw import sparsity_image, write_png

        coords, values = self._coordinates()
        img = sparsity_image(coords[values != 0] if self._format.level_formats else coords, self._extents,
                             max_side)
        if filename is not None:
            write_png(filename, img)
        return img

    def draw_storage(self, filename: str | None = None, *, width: int = 64) -> Any:
        """A picture of the storage: a band per positions / coordinates array of each level, then the values
        (grey by magnitude), ``width`` cells a line; written as PNG to ``filename`` when given."""
        from ._draw import storage_image, write_png

        pos, crd, val = self._host_storage()
        arrays = [a for lvl in range(self.num_levels) for a in (pos[lvl], crd[lvl]) if a is not None] + [val]
        img = storage_image(arrays, width=width)
        if filename is not None:
            write_png(filename, img)
        return img

    # ------------------------------------------------------------------------------------------ properties
    @property
    def extents(self) -> tuple[int, ...]:
        """The extents (shape)."""
        return self._extents

    @property
    def tensor_format(self) -> TensorFormat:
        """The :class:`TensorFormat` that maps the dimensions to storage levels."""
        return self._format

    @property
    def index_type(self) -> str:
        """The type of the positions and coordinates arrays, ``'int32'`` or ``'int64'``."""
        return self._index_type

    @property
    def dtype(self) -> str:
        """The name of the values' dtype (``'float32'``, ``'complex128'``, ...)."""
        return self._dtype

    @property
    def device(self) -> Literal["cpu", "cuda"]:
        """Where the arrays live, ``'cpu'`` or ``'cuda'``."""
        return "cpu" if self._device_id is None else "cuda"

    @property
    def device_id(self) -> int | Literal["cpu"]:
        """The CUDA device ordinal of the arrays, or ``'cpu'``."""
        return "cpu" if self._device_id is None else self._device_id

    @property
    def base(self) -> Any:
        """The package's object this tensor views (from :meth:`from_package`), else None."""
        return self._base

    @property
    def val(self) -> AnyTensor | None:
        """The values array (of the tensor's package)."""
        return self._val

    @property
    def num_dimensions(self) -> int:
        """How many dimensions the tensor has."""
        return len(self._extents)

    @property
    def num_levels(self) -> int:
        """How many storage levels the tensor's format has."""
        return self._format.num_levels

    @property
    def levels(self) -> tuple[int, ...]:
        """The extent of each level."""
        return tuple(level_sizes(self._format, self._extents))

    @property
    def nse(self) -> int:
        """The number of stored elements (entries of dense levels included)."""
        v = self._val
        return int(np.prod(v.shape)) if v is not None else 0

    def pos(self, level: int) -> Any:
        """The positions array of ``level`` (None for levels without one)."""
        return self._pos[level]

    def crd(self, level: int) -> Any:
        """The coordinates array of ``level`` (None for levels without one)."""
        return self._crd[level]

    def __repr__(self):
        return (f"Tensor({self._format.name}, extents={list(self._extents)}, nse={self.nse}, dtype={self._dtype}, "
                f"index_type={self._index_type}, {self._package} on {self.device})")

    # ------------------------------------------------------------------------------------------ matmul
    def _as_sparse_matrix(self, name: str, convert: bool = True):
        """The matmul's view of this tensor (a format the engines read in place, else a CSR conversion); with
        ``convert=False``, a view of the values only (format ``ust:<name>``), for a generated kernel that reads
        the levels themselves."""
        from .._formats import SparseMatrix, wrap_sparse_matrix

        if not convert:
            if len(self._extents) != 2:
                raise TypeError(f"{name} must be a matrix; this UST has extents {self._extents}")
            values = wrap_operand(self._val, f"{name}.val")
            index = {f"{kind}{level}": wrap_operand(arr, f"{name}.{kind}({level})")
                     for level in range(self.num_levels)
                     for kind, arr in (("pos", self._pos[level]), ("crd", self._crd[level])) if arr is not None}
            return SparseMatrix(self, f"ust:{self._format.name}", index or {"val": values}, values, self._extents)

        fmt = self._format.name
        if fmt in ("CSR", "CSC", "COO") or (fmt.startswith("BSRRight") and self._package != "torch"):
            return wrap_sparse_matrix(self.to_package(), name)
        if fmt.startswith(("BSRRight", "BSCRight")) and self._package == "torch":
            return wrap_sparse_matrix(self.to_package(), name)
        if len(self._extents) != 2:
            raise TypeError(f"{name} must be a matrix; this UST has extents {self._extents}")
        logger.info("the %s operand %s is converted to CSR for the product", fmt, name)
        return wrap_sparse_matrix(self.convert(tensor_format=NF.CSR).to_package(), name)
