"""TorchUST: a torch.Tensor backed by a UST whose mm/addmm/matmul/mv/linear/bmm/t/dot run on the sparse matmul;
the prune and reformat helpers of a model's linear layers."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from cumath.sparse.ust import NamedFormats as N  # noqa: E402
from cumath.sparse.ust.interfaces.torch_interface import TorchUST, prune_model, reformat_model  # noqa: E402

F = torch.nn.functional


def sparse_weight(m=9, n=7, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(m, n, dtype=dtype, generator=g)
    w[w.abs() < 0.7] = 0
    return w


@pytest.mark.parametrize("fmt", [N.CSR, N.CSC, N.COO, N.DIAI, N.DCSR], ids=lambda f: f.name)
def test_ops(fmt):
    w = sparse_weight()
    s = TorchUST.from_torch(w, fmt)
    x = torch.randn(7, 3, dtype=torch.float64)
    v = torch.randn(7, dtype=torch.float64)
    y = torch.randn(4, 9, dtype=torch.float64)
    bias = torch.randn(9, dtype=torch.float64)
    close = lambda a, b: (a - b).abs().max().item() < 1e-12  # noqa: E731
    assert close(torch.mm(s, x), w @ x) and close(s @ x, w @ x) and close(torch.matmul(s, x), w @ x)
    assert close(torch.mv(s, v), w @ v) and close(s @ v, w @ v)
    assert close(y @ s, y @ w) and close(s.t() @ y.t(), w.t() @ y.t())
    assert close(torch.addmm(bias[:, None].expand(9, 3), s, x, beta=0.5, alpha=2), 0.5 * bias[:, None] + 2 * w @ x)
    xx = torch.randn(2, 5, 7, dtype=torch.float64)
    assert close(F.linear(xx, s, bias), F.linear(xx, w, bias))
    bb = torch.randn(3, 7, 2, dtype=torch.float64)
    assert close(torch.matmul(s, bb), w @ bb) and close(s @ bb, w @ bb)
    assert close(s.to_dense(), w) and s.shape == (9, 7) and s.t().shape == (7, 9)
    vec = TorchUST.from_torch(v)
    assert abs(torch.dot(vec, v).item() - v.dot(v).item()) < 1e-12


def test_unsupported_and_errors():
    s = TorchUST.from_torch(sparse_weight())
    with pytest.raises(RuntimeError, match="can't perform"):
        s + 1
    with pytest.raises(RuntimeError, match="two sparse"):
        torch.mm(s, s.t())
    with pytest.raises(TypeError, match="dtype"):
        torch.mm(s, torch.randn(7, 2))
    with pytest.raises(ValueError, match="amount"):
        prune_model(torch.nn.Linear(3, 3), amount=1.5)


def test_prune_and_reformat_model():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    prune_model(model, amount=0.75)
    assert (model[0].weight == 0).float().mean().item() >= 0.75
    x = torch.randn(5, 32)
    ref = model(x)
    reformat_model(model, min_sparsity=0.5)
    assert isinstance(model[0].weight, TorchUST) and isinstance(model[2].weight, TorchUST)
    assert (model(x) - ref).abs().max().item() < 1e-5
    with torch.no_grad():
        assert model(x).shape == (5, 4)
