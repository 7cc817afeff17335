"""PyTorch integration of the Universal Sparse Tensor: :class:`TorchUST`, a ``torch.Tensor`` backed by a UST whose
linear-algebra operations (``mm``, ``addmm``, ``matmul``, ``mv``, ``linear``, ``t``, ``dot``) run on
``cumath.sparse.matmul``, and helpers that prune and reformat the weights of a model's linear layers.

Importing this module imports PyTorch. A ``TorchUST`` holds no dense storage; an operation it does not support
raises ``RuntimeError`` naming it (convert with ``to_dense()`` for those).

Example::

    import torch, cumath
    from cumath.sparse.ust.interfaces.torch_interface import TorchUST, prune_model, reformat_model
    model = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    prune_model(model, amount=0.9)          # keep the 10% largest weights of each linear layer
    reformat_model(model)                   # their weights become TorchUST (CSR): forward runs sparse products
    y = model(torch.randn(32, 512))
"""

from __future__ import annotations

import numpy as np
import torch

from .._named import NamedFormats
from .._tensor import Tensor

__all__ = ["TorchUST", "prune_model", "reformat_model"]

aten = torch.ops.aten


def _spmm(ust: Tensor, transposed: bool, b: torch.Tensor):
    """op(ust) @ b for a dense ``b`` (vector or matrix)."""
    from ... import matmul, matmul_matrix_qualifiers_dtype

    q = np.zeros(2, matmul_matrix_qualifiers_dtype)
    q[0]["is_transpose"] = int(transposed)
    if b.dtype != _torch_dtype(ust.dtype):
        raise TypeError(f"the dense operand has dtype {b.dtype}, the sparse one {ust.dtype}; convert one of them")
    return matmul(ust, b, qualifiers=q)


def _torch_dtype(name: str):
    return getattr(torch, name)


class TorchUST(torch.Tensor):
    """A torch.Tensor backed by a UST (``ust``), possibly transposed (``transposed``)."""

    @staticmethod
    def __new__(cls, shape, device, dtype, layout, requires_grad, ust, transposed):
        return torch.Tensor._make_wrapper_subclass(cls, shape, device=device, dtype=dtype, layout=layout,
                                                   requires_grad=requires_grad)

    def __init__(self, shape, device, dtype, layout, requires_grad, ust, transposed):
        self.ust, self.transposed = ust, transposed

    def __repr__(self):
        return f"TorchUST({self.ust!r}, transposed={self.transposed})"

    @classmethod
    def from_ust(cls, ust: Tensor, transposed: bool = False) -> "TorchUST":
        if len(ust.extents) not in (1, 2):
            raise TypeError(f"a TorchUST holds a vector or a matrix; this UST has extents {ust.extents}")
        shape = ust.extents[::-1] if transposed else ust.extents
        device = torch.device("cpu") if ust.device == "cpu" else torch.device("cuda", ust.device_id)
        return cls(torch.Size(shape), device, _torch_dtype(ust.dtype), torch.strided, False, ust, transposed)

    @classmethod
    def from_torch(cls, original_tensor: torch.Tensor, tensor_format=None) -> "TorchUST":
        """A TorchUST of ``original_tensor`` (dense or sparse), in ``tensor_format`` (default: CSR for matrices,
        a sparse vector for vectors; a dense one stays as it is when ``tensor_format`` says so)."""
        ust = Tensor.from_package(original_tensor.detach())
        if tensor_format is None:
            tensor_format = NamedFormats.CSR if ust.num_dimensions == 2 else NamedFormats.SparseVector
        if ust.tensor_format != tensor_format:
            ust = ust.convert(tensor_format=tensor_format)
        return cls.from_ust(ust)

    def to_dense(self, *args, **kwargs):
        t = self.ust.convert(tensor_format=NamedFormats.DenseMatrixRight if self.ust.num_dimensions == 2 else
                             NamedFormats.DenseVector).to_package()
        return t.t() if self.transposed else t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # matmul and linear are decomposed before dispatch (into expand/view of the sparse operand): take them here
        handler = _FUNCTIONS.get(func)
        if handler is not None:
            return handler(*args, **(kwargs or {}))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = _HANDLERS.get(func)
        if handler is None:
            raise RuntimeError(f"TorchUST can't perform {func}: only {', '.join(sorted(str(f) for f in _HANDLERS))} "
                               f"run on the sparse tensor; use .to_dense() for other operations")
        return handler(*args, **kwargs)


def _is(x):
    return isinstance(x, TorchUST)


def _mm(a, b):
    if _is(a) and not _is(b):
        return _spmm(a.ust, a.transposed, b)
    if _is(b) and not _is(a):  # x @ S = (op(S)^T @ x^T)^T
        return _spmm(b.ust, not b.transposed, a.t().contiguous()).t()
    raise RuntimeError("TorchUST can't multiply two sparse tensors; make one of them dense")


def _addmm(bias, a, b, *, beta=1, alpha=1):
    prod = _mm(a, b)
    if alpha != 1:
        prod = prod * alpha
    return prod + (bias if beta == 1 else beta * bias)


def _mv(a, x):
    if not _is(a):
        raise RuntimeError("TorchUST supports mv with the sparse tensor as the matrix")
    return _spmm(a.ust, a.transposed, x)


def _t(a):
    return TorchUST.from_ust(a.ust, not a.transposed)


def _dot(a, b):
    if _is(b) and not _is(a):
        a, b = b, a
    return torch.dot(a.to_dense(), b)


def _matmul(a, b):
    if b.dim() == 1:
        return _mv(a, b) if _is(a) else _mm(a.unsqueeze(0), b.unsqueeze(1)).reshape(-1)
    if _is(a) and b.dim() > 2:  # a 2-D sparse times a batch of matrices
        return _spmm(a.ust, a.transposed, b)
    if _is(b) and a.dim() > 2:
        lead = a.shape[:-1]
        return _mm(a.reshape(-1, a.shape[-1]), b).reshape(*lead, -1)
    return _mm(a, b)


def _linear(x, w, bias=None):
    lead = x.shape[:-1]
    y = _mm(x.reshape(-1, x.shape[-1]), _t(w) if _is(w) else w.t())
    y = y.reshape(*lead, y.shape[-1])
    return y if bias is None else y + bias


def _detach(a):
    return TorchUST.from_ust(a.ust, a.transposed)


def _bmm(a, b):
    if _is(a) and a.dim() == 2:
        return _spmm(a.ust, a.transposed, b)
    raise RuntimeError("TorchUST's bmm needs a 2-D sparse first operand (broadcast over b's batch)")


_FUNCTIONS = {
    torch.matmul: _matmul, torch.Tensor.matmul: _matmul, torch.Tensor.__matmul__: _matmul,
    torch.Tensor.__rmatmul__: lambda a, b: _matmul(b, a), torch.nn.functional.linear: _linear,
}

_HANDLERS = {
    aten.mm.default: _mm, aten.addmm.default: _addmm, aten.mv.default: _mv, aten.t.default: _t,
    aten.dot.default: _dot, aten.matmul.default: _matmul, aten.linear.default: _linear,
    aten.detach.default: _detach, aten.bmm.default: _bmm,
}


def prune_model(model: torch.nn.Module, *, amount: float = 0.5) -> torch.nn.Module:
    """Zero the ``amount`` fraction of smallest-magnitude weights of every ``torch.nn.Linear`` (in place)."""
    if not 0 <= amount < 1:
        raise ValueError(f"amount={amount!r} must be in [0, 1): the fraction of each layer's weights set to zero")
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and not _is(m.weight):
                w = m.weight
                k = int(amount * w.numel())
                if k:
                    cut = w.abs().flatten().kthvalue(k).values
                    w[w.abs() <= cut] = 0
    return model


def reformat_model(model: torch.nn.Module, tensor_format=None, *, min_sparsity: float = 0.0) -> torch.nn.Module:
    """Replace the weight of every ``torch.nn.Linear`` whose fraction of zeros is at least ``min_sparsity`` by a
    :class:`TorchUST` in ``tensor_format`` (default CSR), so that ``forward`` runs sparse products. The weights
    become frozen (no gradient)."""
    fmt = tensor_format or NamedFormats.CSR
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and not _is(m.weight):
            w = m.weight.detach()
            if (w == 0).float().mean().item() < min_sparsity:
                continue
            m.weight = torch.nn.Parameter(TorchUST.from_torch(w, fmt), requires_grad=False)
    return model
