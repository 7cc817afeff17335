"""Contractions on the CPU against numpy.einsum in float64."""

import numpy as np
import pytest

import cumath
from cumath import tensor
from cumath.errors import InvalidStateError
from cumath.tensor import Operator

TOL = {"float16": 2e-2, "bfloat16": 5e-2, "float32": 2e-5, "float64": 1e-12, "complex64": 2e-5,
       "complex128": 1e-12}


def rand(rng, shape, dtype="float64"):
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def ref(expr, *ops):
    return np.einsum(expr, *[o.astype(np.complex128 if np.iscomplexobj(o) else np.float64) for o in ops])


def relerr(x, y):
    x = np.asarray(x, dtype=np.complex128)
    y = np.asarray(y, dtype=np.complex128)
    return np.linalg.norm((x - y).ravel()) / max(np.linalg.norm(y.ravel()), 1e-300)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("expr, shapes", [
    ("ij,jk->ik", [(7, 11), (11, 5)]),
    ("abcd,cdef->abef", [(3, 5, 7, 2), (7, 2, 3, 5)]),
    ("bij,bjk->bik", [(13, 3, 7), (13, 7, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("i,j->ij", [(5,), (7,)]),
    ("ij,ij->", [(5, 3), (5, 3)]),
    ("ijk,kj->ik", [(3, 4, 5), (5, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 2)]),
    ("ii,ij->j", [(5, 5), (5, 3)]),
    ("ijk,j->k", [(3, 4, 5), (4,)]),
    ("pijkl,pjiab->lakbp", [(3, 2, 5, 2, 3), (3, 5, 2, 3, 2)]),
])
def test_binary(rng, dtype, expr, shapes):
    a, b = (rand(rng, s, dtype) for s in shapes)
    r = tensor.binary_contraction(expr, a, b)
    assert isinstance(r, np.ndarray) and r.dtype == a.dtype
    assert relerr(r, ref(expr, a, b)) < TOL[dtype]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("expr, shapes", [
    ("ij,jk,kl->il", [(7, 11), (11, 5), (5, 13)]),
    ("ij,jk,kl->il", [(3, 40), (40, 2), (2, 50)]),
    ("abc,cd,de->abe", [(3, 4, 5), (5, 6), (6, 2)]),
    ("ij,j,jk->ik", [(4, 5), (5,), (5, 3)]),
    ("bij,bjk,bkl->bil", [(5, 3, 4), (5, 4, 2), (5, 2, 3)]),
])
def test_ternary(rng, dtype, expr, shapes):
    a, b, c = (rand(rng, s, dtype) for s in shapes)
    r = tensor.ternary_contraction(expr, a, b, c)
    assert relerr(r, ref(expr, a, b, c)) < TOL[dtype]


def test_alpha_beta_c(rng):
    a, b, c = rand(rng, (5, 7)), rand(rng, (7, 3)), rand(rng, (5, 3))
    r = tensor.binary_contraction("ij,jk->ik", a, b, c=c, alpha=0.5, beta=-2.0)
    assert relerr(r, 0.5 * a @ b - 2 * c) < 1e-12
    c2 = c.copy()
    r = tensor.binary_contraction("ij,jk->ik", a, b, c=c2, alpha=2.0, beta=1.5, out=c2)
    assert r is c2 and relerr(r, 2 * a @ b + 1.5 * c) < 1e-12
    d = rand(rng, (5, 2))
    x = rand(rng, (3, 2))
    r = tensor.ternary_contraction("ij,jk,kl->il", a, b, x, d=d, alpha=3.0, beta=0.25)
    assert relerr(r, 3 * a @ b @ x + 0.25 * d) < 1e-12


def test_complex_scalars(rng):
    a, b, c = rand(rng, (4, 6), "complex128"), rand(rng, (6, 3), "complex128"), rand(rng, (4, 3), "complex128")
    r = tensor.binary_contraction("ij,jk->ik", a, b, c=c, alpha=1 - 2j, beta=0.5j)
    assert relerr(r, (1 - 2j) * a @ b + 0.5j * c) < 1e-12


def test_out_any_layout(rng):
    a, b = rand(rng, (6, 4, 5)), rand(rng, (5, 4, 3))
    out = np.empty((3, 6), order="F")
    r = tensor.binary_contraction("ijk,kjl->li", a, b, out=out)
    assert r is out and relerr(out, ref("ijk,kjl->li", a, b)) < 1e-12
    big = np.zeros((7, 13))
    view = big[::2, 1::2][:3, :6]
    tensor.binary_contraction("ijk,kjl->li", a, b, out=view)
    assert relerr(view, ref("ijk,kjl->li", a, b)) < 1e-12
    assert np.count_nonzero(big) == 18  # nothing written outside out


def test_strided_operands(rng):
    base = rand(rng, (15, 17, 9))
    a = base[::2, 1:14:3, ::-1]          # non-contiguous, negative stride
    b = rand(rng, (20, 9, 4))[::-4]      # batch of 5 with stride
    b = np.ascontiguousarray(np.swapaxes(rand(rng, (4, 9, 5)), 0, 2))  # F-like
    r = tensor.binary_contraction("ijk,lkm->ijlm", a, b)
    assert relerr(r, ref("ijk,lkm->ijlm", a, b)) < 1e-12
    a2 = np.asfortranarray(rand(rng, (33, 17)))
    b2 = rand(rng, (31, 17)).T
    assert relerr(tensor.binary_contraction("ij,jk->ik", a2, b2), a2 @ b2) < 1e-12


def test_unaligned(rng):
    raw = rand(rng, (1 + 6 * 7,))
    a = raw[1:].reshape(6, 7)
    b = rand(rng, (7, 5))
    assert relerr(tensor.binary_contraction("ij,jk->ik", a, b), a @ b) < 1e-12


def test_result_layouts(rng):
    a, b = rand(rng, (4, 5)), rand(rng, (5, 6))
    rc = tensor.binary_contraction("ij,jk->ki", a, b, options={"result_layout": "C"})
    rf = tensor.binary_contraction("ij,jk->ki", a, b, options={"result_layout": "F"})
    assert rc.flags.c_contiguous and rf.flags.f_contiguous
    assert relerr(rc, (a @ b).T) < 1e-12 and relerr(rf, (a @ b).T) < 1e-12


def test_auto_layout_follows_the_inputs(rng):
    """'auto' (the default): C inputs give a C result, F inputs an F one, where the GEMM writes it directly;
    mixed inputs, or a layout the GEMM cannot write, give 'optimized'."""
    a, b = rand(rng, (5, 7)), rand(rng, (7, 3))
    fa, fb = np.asfortranarray(a), np.asfortranarray(b)
    for expr, want in (("ij,jk->ik", a @ b), ("ij,jk->ki", (a @ b).T)):
        assert tensor.binary_contraction(expr, a, b).flags.c_contiguous
        assert tensor.binary_contraction(expr, fa, fb).flags.f_contiguous
        for x, y in ((a, b), (fa, fb), (a, fb), (fa, b)):
            r = tensor.binary_contraction(expr, x, y)
            opt = tensor.binary_contraction(expr, x, y, options={"result_layout": "optimized"})
            assert relerr(r, want) < 1e-12
            if (x is a) != (y is b):  # mixed orders: the optimized layout
                assert r.strides == opt.strides
    x, y = rand(rng, (4, 5, 6)), rand(rng, (4, 6, 3))
    r = tensor.binary_contraction("bij,bjk->kib", x, y)  # batch innermost: no batched GEMM writes C order
    opt = tensor.binary_contraction("bij,bjk->kib", x, y, options={"result_layout": "optimized"})
    assert r.strides == opt.strides and not r.flags.c_contiguous
    assert relerr(r, np.einsum("bij,bjk->kib", x, y)) < 1e-12
    v = rand(rng, (7,))  # a 1-D input agrees with either order
    assert tensor.binary_contraction("ij,j->i", fa, v).flags.f_contiguous
    r = tensor.ternary_contraction("ij,jk,kl->li", a, b, rand(rng, (3, 4)))
    assert r.flags.c_contiguous


@pytest.mark.parametrize("op, fn", [
    (Operator.OP_RELU, lambda x: np.maximum(x, 0)), (Operator.OP_TANH, np.tanh), (Operator.OP_NEG, np.negative),
    (Operator.OP_ABS, np.abs), (Operator.OP_SIN, np.sin), (Operator.OP_EXP, np.exp),
    (Operator.OP_SIGMOID, lambda x: 1 / (1 + np.exp(-x))), (Operator.OP_IDENTITY, lambda x: x),
])
def test_operators_real(rng, op, fn):
    a, b = rand(rng, (5, 6)), rand(rng, (6, 4))
    q = np.empty(2, dtype=tensor.tensor_qualifiers_dtype)
    q["operator"] = [op, Operator.OP_IDENTITY]
    r = tensor.binary_contraction("ij,jk->ik", a, b, qualifiers=q)
    assert relerr(r, fn(a) @ b) < 1e-12
    r = tensor.binary_contraction("ij,jk->ik", a, b, qualifiers=[Operator.OP_IDENTITY, op])
    assert relerr(r, a @ fn(b)) < 1e-12


def test_conjugate(rng):
    a, b = rand(rng, (5, 6), "complex128"), rand(rng, (6, 4), "complex128")
    r = tensor.binary_contraction("ij,jk->ik", a, b, qualifiers=[Operator.OP_CONJ, Operator.OP_CONJ])
    assert relerr(r, a.conj() @ b.conj()) < 1e-12
    at = np.asfortranarray(a)
    r = tensor.binary_contraction("ij,jk->ik", at, b, qualifiers=[Operator.OP_CONJ, Operator.OP_IDENTITY])
    assert relerr(r, a.conj() @ b) < 1e-12
    x = rand(rng, (4, 2), "complex128")
    r = tensor.ternary_contraction("ij,jk,kl->il", a, b, x, qualifiers=[1, 9, 9])
    assert relerr(r, a @ b.conj() @ x.conj()) < 1e-12


def test_bfloat16_torch(rng):
    torch = pytest.importorskip("torch")
    a = torch.randn(6, 9, dtype=torch.bfloat16)
    b = torch.randn(9, 5, dtype=torch.bfloat16)
    r = tensor.binary_contraction("ij,jk->ik", a, b)
    assert isinstance(r, torch.Tensor) and r.dtype == torch.bfloat16
    expect = a.double().numpy() @ b.double().numpy()
    assert relerr(r.double().numpy(), expect) < TOL["bfloat16"]
    c = torch.randn(6, 5, dtype=torch.bfloat16)
    r = tensor.binary_contraction("ij,jk->ik", a, b, c=c, beta=2.0)
    assert relerr(r.double().numpy(), expect + 2 * c.double().numpy()) < TOL["bfloat16"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_torch_cpu(rng, dtype):
    torch = pytest.importorskip("torch")
    a = torch.from_numpy(rand(rng, (4, 6, 5), dtype)).permute(2, 0, 1)
    b = torch.from_numpy(rand(rng, (6, 3), dtype))
    r = tensor.binary_contraction("kij,jl->kil", a, b)
    assert isinstance(r, torch.Tensor)
    assert relerr(r.numpy(), ref("kij,jl->kil", a.numpy(), b.numpy())) < TOL[dtype]


def test_stateful_lifecycle(rng):
    a, b = rand(rng, (6, 7)), rand(rng, (7, 8))
    with tensor.BinaryContraction("ij,jk->ik", a, b) as ctr:
        with pytest.raises(InvalidStateError, match="plan"):
            ctr.execute()
        ctr.plan()
        assert relerr(ctr.execute(), a @ b) < 1e-12
        a2 = rand(rng, (6, 7))
        ctr.reset_operands(a=a2)
        assert relerr(ctr.execute(alpha=2.0), 2 * a2 @ b) < 1e-12
        ctr.release_operands()
        with pytest.raises(InvalidStateError, match="released"):
            ctr.execute()
        ctr.reset_operands(a=a, b=b)
        assert relerr(ctr.execute(), a @ b) < 1e-12
        with pytest.raises(ValueError, match="shape"):
            ctr.reset_operands(a=rand(rng, (5, 7)))
        ctr.reset_operands_unchecked(b=b * 2)
        assert relerr(ctr.execute(), 2 * a @ b) < 1e-12
        pref = ctr.plan_preference
        pref.kernel_rank = 1
        pref.algo = tensor.ContractionAlgo.GETT
        ctr.plan()
        assert relerr(ctr.execute(), 2 * a @ b) < 1e-12
    ctr.free()
    with pytest.raises(InvalidStateError, match="after free"):
        ctr.execute()


def test_ternary_autotune(rng):
    a, b, c = rand(rng, (20, 30)), rand(rng, (30, 10)), rand(rng, (10, 25))
    with tensor.TernaryContraction("ij,jk,kl->il", a, b, c) as t:
        t.plan()
        t.autotune(iterations=2)
        assert relerr(t.execute(), a @ b @ c) < 1e-12
        assert len(t.steps) == 2


def test_result_is_fresh(rng):
    a, b = rand(rng, (4, 5)), rand(rng, (5, 3))
    r1 = tensor.binary_contraction("ij,jk->ik", a, b)
    r2 = tensor.binary_contraction("ij,jk->ik", a, b)
    assert r1 is not r2 and not np.shares_memory(r1, r2)


def test_import_as_nvmath():
    import cumath as nvmath

    assert nvmath.tensor.binary_contraction is tensor.binary_contraction
    assert nvmath.tensor.ContractionJitMode.DEFAULT == 1
    assert nvmath.tensor.ContractionCacheMode.PEDANTIC == 1
    assert cumath.tensor.ComputeDesc.COMPUTE_32F.library_name == "32F"


def test_numpy_scalars_and_zero_dim_in_subprocess():
    """NumPy scalars are no arrays: read as 0-d arrays (a crash-class case, so it runs in its own process)."""
    import subprocess
    import sys

    code = ("import numpy as np; from cumath import tensor; "
            "r = tensor.binary_contraction(',->', np.float64(2.0), np.array(3.0)); "
            "s = tensor.ternary_contraction('i,,i->', np.ones(3), np.float64(2.0), np.arange(3.0)); "
            "assert float(r) == 6.0 and float(s) == 6.0, (r, s); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_zero_extents(rng):
    a, b = np.ones((3, 0)), np.ones((0, 4))
    r = tensor.binary_contraction("ij,jk->ik", a, b)
    assert r.shape == (3, 4) and not r.any()
    c = rand(rng, (3, 4))
    r = tensor.binary_contraction("ij,jk->ik", a, b, c=c, beta=2.0)
    assert np.allclose(r, 2 * c)
    r = tensor.binary_contraction("ij,jk->ik", np.ones((0, 2)), np.ones((2, 4)))
    assert r.shape == (0, 4)


def test_bfloat16_ternary_torch(rng):
    torch = pytest.importorskip("torch")
    a, b, c = (torch.randn(*s, dtype=torch.bfloat16) for s in [(5, 7), (7, 3), (3, 4)])
    r = tensor.ternary_contraction("ij,jk,kl->il", a, b, c)
    expect = a.double().numpy() @ b.double().numpy() @ c.double().numpy()
    assert r.dtype == torch.bfloat16 and relerr(r.double().numpy(), expect) < TOL["bfloat16"]


def test_threads_and_logging(rng, caplog):
    import logging

    a, b = rand(rng, (40, 50)), rand(rng, (50, 30))
    log = logging.getLogger("cumath.tensor.test")
    with caplog.at_level(logging.INFO, logger="cumath.tensor.test"):
        r = tensor.binary_contraction("ij,jk->ik", a, b, execution=cumath.ExecutionCPU(num_threads=1),
                                      options={"logger": log})
    assert relerr(r, a @ b) < 1e-12
    text = caplog.text
    assert "CPU contraction: 1 GEMM step(s)" in text and "1 thread(s)" in text


def test_equal_options_share_a_cached_plan(rng):
    """ContractionOptions hash once, by the fields that compare; equal options find the same plan."""
    import logging

    from cumath import config

    a, b = rand(rng, (3, 4)), rand(rng, (4, 5))
    o1 = tensor.ContractionOptions(compute_type="COMPUTE_64F")
    o2 = tensor.ContractionOptions(compute_type=tensor.ComputeDesc.COMPUTE_64F, logger=logging.getLogger("x"))
    assert o1 == o2 and hash(o1) == hash(o2) and hash(o1) == hash(o1)
    assert hash(tensor.ContractionOptions(result_layout="C")) != hash(tensor.ContractionOptions())
    config.plan_cache.clear()
    config.plan_cache.reset_stats()
    for o in (o1, o2, o1):
        assert relerr(tensor.binary_contraction("ij,jk->ik", a, b, options=o), a @ b) < 1e-12
    stats = config.plan_cache.stats()
    assert stats["misses"] == 1 and stats["hits"] == 2


@pytest.mark.parametrize("execution, split", [(None, False), ({"name": "cpu", "num_threads": 2}, True)])
def test_stacks_split_over_named_threads(rng, monkeypatch, execution, split):
    """A stack of small products of 2^20 multiply-adds is split over the threads when the caller named them."""
    from cumath.tensor._backends import blas as engine

    used = []
    pool = engine._pool

    def counting(n):
        used.append(n)
        return pool(n)

    monkeypatch.setattr(engine, "_pool", counting)
    a, b = rand(rng, (256, 16, 16)), rand(rng, (256, 16, 16))[:, ::-1]
    with tensor.BinaryContraction("bij,bjk->bik", a, b, execution=execution) as ctr:
        ctr.plan()
        if ctr._executor.num_threads < 2:
            pytest.skip("one core")
        r = ctr.execute(alpha=0.5)
    assert relerr(r, 0.5 * np.einsum("bij,bjk->bik", a, b)) < 1e-12
    assert bool(used) == split
