"""The cuTENSOR engine's plumbing on the CPU: a NumPy emulation of the cuTENSOR calls it makes (descriptors,
operators, plans, scalars, contractions and permutations on host addresses) checks descriptors, mode codes, the
pairing through the intermediate, the fused form, scalars, the addend and the operand operators against
numpy.einsum. Like cuTENSOR, the emulated contractions refuse operand operators other than OP_IDENTITY (and
OP_CONJ of complex data) with NOT_SUPPORTED; only its permutations apply the others."""

import ctypes
import itertools
import types

import numpy as np
import pytest

from cumath._bindings import cutensor as real
from cumath._core.frameworks.numpy import from_pointer
from cumath.errors import CUTENSORError
from cumath.tensor import ContractionOptions, Operator
from cumath.tensor._backends import cutensor as engine_mod
from cumath.tensor._backends.blas import _UNARY
from cumath.tensor._planner import ContractionPlanPreference
from cumath.tensor._traits import make_problem, pairwise_steps, parse_expression

_NP = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128", 2: "float16"}
_OPS = {1: lambda x: x, **{int(k): v for k, v in _UNARY.items()}}
_COMPLEX_TYPES = (4, 5, 6, 15)


def _not_supported(what):
    raise CUTENSORError(15, "NOT_SUPPORTED", what)


class FakeCutensor(types.SimpleNamespace):
    """The functions of cumath._bindings.cutensor the engine calls, on host memory."""

    def __init__(self):
        super().__init__(**{k: getattr(real, k) for k in ("DataType", "OperationDescriptorAttribute",
                                                          "PlanPreferenceAttribute", "WorksizePreference",
                                                          "PlanAttribute", "Operator")})
        self.ids = itertools.count(1000)
        self.objects = {}
        self.calls = []
        self.destroyed = []

    def _new(self, value):
        i = next(self.ids)
        self.objects[i] = value
        return i

    check = staticmethod(real.check)

    def raw_function(self, name):
        fn = getattr(self, name)

        def raw(*args):  # the status, as the C function returns it
            fn(*args)
            return 0

        return raw

    def cutensorCreate(self):
        return self._new("handle")

    def cutensorHandleResizePlanCache(self, h, n):
        pass

    def cutensorHandleReadPlanCacheFromFile(self, h, f):
        return 0

    def cutensorReadKernelCacheFromFile(self, h, f):
        pass

    def cutensorGetVersion(self):
        return 20800

    def compute_descriptor(self, name):
        return self._new(("compute", name))

    def cutensorCreateTensorDescriptor(self, h, extents, strides, dt, align):
        assert align in (1, 2, 4, 8, 16, 32, 64, 128, 256)
        return self._new(("tensor", tuple(extents), tuple(strides), int(dt)))

    def cutensorDestroyTensorDescriptor(self, d):
        self.destroyed.append(d)

    def _contraction_ops(self, args, n):
        """cuTENSOR's contractions apply OP_IDENTITY, and OP_CONJ to complex data, nothing else."""
        for i in range(n):
            d, _modes, op = args[3 * i: 3 * i + 3]
            dt = self.objects[d][3]
            if int(op) != 1 and not (int(op) == 9 and dt in _COMPLEX_TYPES):
                _not_supported(f"operator {int(op)} of contraction operand {i}")

    def cutensorCreateContraction(self, h, *args):
        self._contraction_ops(args, 3)
        return self._new(("contraction", args))

    def cutensorCreateContractionTrinary(self, h, *args):
        self._contraction_ops(args, 4)
        return self._new(("trinary", args))

    def cutensorCreatePermutation(self, h, da, ma, op, db, mb, compute):
        assert sorted(ma) == sorted(mb) and self.objects[compute][0] == "compute"
        if int(op) not in _OPS or (int(op) not in (1, 9) and self.objects[da][3] in _COMPLEX_TYPES):
            _not_supported(f"operator {int(op)} of a permutation")
        return self._new(("permutation", (da, ma, op, db, mb, compute)))

    def cutensorDestroyOperationDescriptor(self, d):
        self.destroyed.append(d)

    def cutensorOperationDescriptorGetAttribute(self, h, desc, attr, ctype=ctypes.c_int32):
        args = self.objects[desc][1]
        return self.objects[args[0]][3]  # the scalar type: the data type here (compute in the operands' type)

    def cutensorCreatePlanPreference(self, h, algo, jit):
        return self._new(("pref", algo, jit))

    def cutensorDestroyPlanPreference(self, p):
        self.destroyed.append(p)

    def cutensorPlanPreferenceSetAttribute(self, h, p, attr, value):
        pass

    def cutensorEstimateWorkspaceSize(self, h, desc, pref, wpref):
        return 1024

    def cutensorCreatePlan(self, h, desc, pref, limit):
        return self._new(("plan", desc))

    def cutensorDestroyPlan(self, p):
        self.destroyed.append(p)

    def cutensorPlanGetAttribute(self, h, plan, attr):
        return 512

    def _view(self, desc, ptr):
        _, ext, strides, dt = self.objects[desc]
        return from_pointer(ptr, ext, strides, _NP[dt])

    def _scalar(self, ptr, dt):
        if dt in (4, 5):
            t = ctypes.c_float if dt == 4 else ctypes.c_double
            v = (t * 2).from_address(ptr)
            return complex(v[0], v[1])
        return (ctypes.c_float if dt in (0, 2) else ctypes.c_double).from_address(ptr).value

    def _contract(self, desc, inputs, alpha_ptr, beta_ptr, c_ptr, d_ptr):
        kind, args = self.objects[desc]
        n = 3 if kind == "contraction" else 4  # (desc, modes, op) triples, then D/E (desc, modes)
        triples = [args[3 * i: 3 * i + 3] for i in range(n)]
        out_desc, out_modes = args[3 * n], args[3 * n + 1]
        letters = {}

        def sub(modes):
            return "".join(letters.setdefault(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[len(letters)])
                           for m in modes)

        views = [_OPS[int(op)](self._view(d, p)) for (d, m, op), p in zip(triples[:-1], inputs)]
        expr = ",".join(sub(m) for _d, m, _op in triples[:-1]) + "->" + sub(out_modes)
        dt = self.objects[out_desc][3]
        alpha, beta = self._scalar(alpha_ptr, dt), self._scalar(beta_ptr, dt)
        value = alpha * np.einsum(expr, *[v.astype(np.complex128) for v in views])
        c = self._view(triples[-1][0], c_ptr)
        if beta:
            value = value + beta * c
        d = self._view(out_desc, d_ptr)
        d[...] = value if d.dtype.kind == "c" else value.real
        self.calls.append((kind, expr))

    def cutensorContract(self, h, plan, alpha, a, b, beta, c, d, ws, size, stream):
        assert ws and size == 512
        self._contract(self.objects[plan][1], (a, b), alpha, beta, c, d)

    def cutensorContractTrinary(self, h, plan, alpha, a, b, c, beta, d, e, ws, size, stream):
        self._contract(self.objects[plan][1], (a, b, c), alpha, beta, d, e)

    def cutensorPermute(self, h, plan, alpha, a, b, stream):
        kind, (da, ma, op, db, mb, _compute) = self.objects[self.objects[plan][1]]
        assert kind == "permutation" and a != b
        dt = self.objects[da][3]
        x = self._view(da, a)
        y = self._view(db, b)
        value = self._scalar(alpha, dt) * _OPS[int(op)](x.astype(np.float64 if x.dtype.kind == "f" else x.dtype))
        y[...] = np.transpose(value, [list(ma).index(m) for m in mb])
        self.calls.append(("permutation", int(op)))


class HostBuffer:
    def __init__(self, size):
        self.array = np.empty(size, np.uint8)
        self.device_ptr = self.array.ctypes.data
        self.freed = False

    def free(self):
        self.freed = True


class HostAllocator:
    def __init__(self):
        self.buffers = []

    def memalloc(self, size):
        b = HostBuffer(size)
        self.buffers.append(b)
        return b


@pytest.fixture
def fake(monkeypatch):
    ct = FakeCutensor()
    monkeypatch.setattr(engine_mod, "ct", ct)
    monkeypatch.setattr(engine_mod, "set_device", lambda d: None)
    monkeypatch.setattr(engine_mod, "_handles", {})
    monkeypatch.setattr(engine_mod.atexit, "register", lambda *a: None)
    import cumath._bindings.cudart as cudart

    monkeypatch.setattr(cudart, "cudaMemGetInfo", lambda: (1 << 34, 1 << 34), raising=False)
    return ct


def _engine(expr, arrays, out, addend=None, ops=None, memory_limit="80%"):
    e = parse_expression(expr, [a.ndim for a in arrays])
    pb = make_problem(e, [a.shape for a in arrays], [tuple(s // a.itemsize for s in a.strides) for a in arrays])
    steps = pairwise_steps(pb)
    ops = ops or (Operator.OP_IDENTITY,) * len(arrays)
    alloc = HostAllocator()
    opts = ContractionOptions(allocator=alloc, memory_limit=memory_limit)
    strides = tuple(s // out.itemsize for s in out.strides)
    add_strides = None if addend is None else tuple(s // addend.itemsize for s in addend.strides)
    eng = engine_mod.ContractionCUTENSOR(pb, steps, ops, out.dtype.name, strides, add_strides, opts, 0, 0, "numpy",
                                         ContractionPlanPreference(), [a.ctypes.data for a in arrays] + [
                                             out.ctypes.data])
    return eng, alloc, steps


def test_binary_through_engine(fake):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5, 6))[:, ::-1]
    b = rng.standard_normal((6, 5, 3)).transpose(1, 0, 2)
    out = np.empty((3, 4)).T
    eng, alloc, _ = _engine("ijk,jkl->il", [a, b], out)
    eng.run([a.ctypes.data, b.ctypes.data], None, out.ctypes.data, out, 2.0, 0.0, 0, False)
    assert np.allclose(out, 2 * np.einsum("ijk,jkl->il", a, b))
    assert fake.calls[-1][0] == "contraction"
    eng.free()
    assert all(b.freed for b in alloc.buffers)


def test_ternary_pairwise_and_fused(fake):
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((5, 30)), rng.standard_normal((30, 4)), rng.standard_normal((4, 7))
    d = rng.standard_normal((5, 7))
    out = d.copy()
    eng, _, steps = _engine("ij,jk,kl->il", [a, b, c], out, addend=out)
    assert eng.mode == "pairwise" and (steps[0].x, steps[0].y) == (0, 1)
    eng.run([a.ctypes.data, b.ctypes.data, c.ctypes.data], types.SimpleNamespace(
        ptr=out.ctypes.data, strides=(7, 1), obj=out), out.ctypes.data, out, 1.5, 0.5, 0, True)
    assert np.allclose(out, 1.5 * a @ b @ c + 0.5 * d)
    assert eng.workspace is None  # released
    out2 = np.empty((5, 7))
    eng, _, _ = _engine("ij,jk,kl->il", [a, b, c], out2, memory_limit=8)  # no room for the intermediate
    assert eng.mode == "fused"
    eng.run([a.ctypes.data, b.ctypes.data, c.ctypes.data], None, out2.ctypes.data, out2, 1.0, 0.0, 0, False)
    assert np.allclose(out2, a @ b @ c) and fake.calls[-1][0] == "trinary"


def test_addend_with_other_strides_is_copied(fake):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((6, 3))
    c = np.asfortranarray(rng.standard_normal((4, 3)))
    out = np.empty((4, 3))
    eng, _, _ = _engine("ij,jk->ik", [a, b], out, addend=c)
    C = types.SimpleNamespace(ptr=c.ctypes.data, strides=(1, 4), obj=c)
    eng.run([a.ctypes.data, b.ctypes.data], C, out.ctypes.data, out, 1.0, -1.0, 0, False)
    assert np.allclose(out, a @ b - c)


def test_complex_scalars_and_conj(fake):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    out = np.empty((3, 2), complex)
    eng, _, _ = _engine("ij,jk->ik", [a, b], out, ops=(Operator.OP_CONJ, Operator.OP_IDENTITY))
    eng.run([a.ctypes.data, b.ctypes.data], None, out.ctypes.data, out, 1 - 1j, 0.0, 0, False)
    assert np.allclose(out, (1 - 1j) * a.conj() @ b)
    assert not eng.applied and [c[0] for c in fake.calls] == ["contraction"]  # conj stays in the contraction


def test_emulated_contraction_refuses_other_operators(fake):
    """The emulation is as strict as cuTENSOR: an operator other than identity/conj fails the descriptor."""
    h = fake.cutensorCreate()
    real_d = fake.cutensorCreateTensorDescriptor(h, [3, 3], [3, 1], 0, 256)
    cplx_d = fake.cutensorCreateTensorDescriptor(h, [3, 3], [3, 1], 4, 256)
    for d, op in ((real_d, Operator.OP_RELU), (real_d, Operator.OP_CONJ), (cplx_d, Operator.OP_TANH)):
        with pytest.raises(CUTENSORError, match="NOT_SUPPORTED"):
            fake.cutensorCreateContraction(h, d, [97, 98], op, d, [98, 99], 1, d, [97, 99], 1, d, [97, 99], 0)
    fake.cutensorCreateContraction(h, cplx_d, [97, 98], Operator.OP_CONJ, cplx_d, [98, 99], 1, cplx_d, [97, 99], 1,
                                   cplx_d, [97, 99], 0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_operators_applied_by_permutation(fake, dtype, caplog):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((7, 10)).astype(dtype)[:, ::-2]  # negative stride, not contiguous
    b = np.asfortranarray(rng.standard_normal((5, 3)).astype(dtype))
    a0, b0 = a.copy(), b.copy()
    out = np.empty((7, 3), dtype)
    ops = (Operator.OP_RELU, Operator.OP_TANH)
    with caplog.at_level("INFO", logger=engine_mod.logger.name):
        eng, alloc, _ = _engine("ij,jk->ik", [a, b], out, ops=ops)
    logged = [r.getMessage() for r in caplog.records if "permutation" in r.getMessage()]
    assert len(logged) == 2 and "OP_RELU of operand a" in logged[0] and "OP_TANH of operand b" in logged[1]
    assert len(eng.applied) == 2 and eng.nbytes == (7 * 5 + 5 * 3) * a.itemsize
    made = len(alloc.buffers)
    expect = np.maximum(a.astype(np.float64), 0) @ np.tanh(b.astype(np.float64))
    tol = 2e-2 if dtype == "float16" else 1e-5
    for alpha in (1.0, -2.0):  # the buffers are reused: nothing is allocated at execution
        fake.calls.clear()
        eng.run([a.ctypes.data, b.ctypes.data], None, out.ctypes.data, out, alpha, 0.0, 0, False)
        assert np.allclose(out.astype(np.float64), alpha * expect, rtol=tol, atol=tol * 5)
        assert [c[0] for c in fake.calls] == ["permutation", "permutation", "contraction"]
    assert len(alloc.buffers) == made
    assert np.array_equal(a, a0) and np.array_equal(b, b0)  # the operands themselves are untouched
    eng.free()
    assert all(buf.freed for buf in alloc.buffers)


def test_conj_of_real_operands_is_identity(fake):
    rng = np.random.default_rng(12)
    x, y = rng.standard_normal((4, 6)), rng.standard_normal((6, 5))
    out = np.empty((4, 5))
    eng, _, _ = _engine("ij,jk->ik", [x, y], out, ops=(Operator.OP_CONJ, Operator.OP_IDENTITY))
    eng.run([x.ctypes.data, y.ctypes.data], None, out.ctypes.data, out, 1.0, 0.0, 0, False)
    assert np.allclose(out, x @ y) and not eng.applied and [c[0] for c in fake.calls] == ["contraction"]


@pytest.mark.parametrize("memory_limit", ["80%", 8])
def test_ternary_operators_on_each_operand(fake, memory_limit):
    rng = np.random.default_rng(13)
    a, b, c = rng.standard_normal((5, 30)), rng.standard_normal((30, 4)).T.copy().T, rng.standard_normal((4, 7))
    d = rng.standard_normal((5, 7))
    out = d.copy()
    ops = (Operator.OP_NEG, Operator.OP_SIGMOID, Operator.OP_ABS)
    eng, alloc, _ = _engine("ij,jk,kl->il", [a, b, c], out, addend=out, ops=ops, memory_limit=memory_limit)
    assert eng.mode == ("pairwise" if memory_limit == "80%" else "fused") and len(eng.applied) == 3
    eng.run([a.ctypes.data, b.ctypes.data, c.ctypes.data], types.SimpleNamespace(
        ptr=out.ctypes.data, strides=(7, 1), obj=out), out.ctypes.data, out, 1.5, 0.5, 0, False)
    expect = 1.5 * (-a) @ (1 / (1 + np.exp(-b))) @ np.abs(c) + 0.5 * d
    assert np.allclose(out, expect)
    assert [k for k, _ in fake.calls].count("permutation") == 3
    eng.free()
    assert all(buf.freed for buf in alloc.buffers)


def test_failed_permutation_releases_what_it_made(fake, monkeypatch):
    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 6))
    monkeypatch.setattr(fake, "cutensorCreatePermutation", lambda *args: _not_supported("permutation"))
    with pytest.raises(CUTENSORError, match="NOT_SUPPORTED"):
        _engine("ij,jk->ik", [a, b], np.empty((4, 6)), ops=(Operator.OP_IDENTITY, Operator.OP_EXP))
    made = [k for k, v in fake.objects.items() if isinstance(v, tuple) and v[0] == "tensor"]
    assert made and set(made) <= set(fake.destroyed)
    assert not any(isinstance(v, tuple) and v[0] == "contraction" for v in fake.objects.values())


def test_misaligned_operand_refused(fake):
    a, b = np.ones((4, 4)), np.ones((4, 4))
    out = np.empty((4, 4))
    eng, _, _ = _engine("ij,jk->ik", [a, b], out)
    with pytest.raises(ValueError, match="less aligned"):
        eng.run([a.ctypes.data + 8 if a.ctypes.data % 16 == 0 else a.ctypes.data + 4, b.ctypes.data], None,
                out.ctypes.data, out, 1.0, 0.0, 0, False)


def test_mode_codes():
    assert engine_mod.mode_code("a") == 97 and engine_mod.mode_code("...3") == 259
    assert engine_mod.alignment(0) == 256 and engine_mod.alignment(1024 + 8) == 8


@pytest.fixture
def emulated(fake, monkeypatch):
    """The fake cuTENSOR plus CUDA copies as host memmoves and no device checks: whole operations run."""
    from cumath._core import cuda

    copies = []

    def copy(dst, src, n, kind, stream, what=""):
        copies.append((what, n))
        ctypes.memmove(dst, src, n)

    monkeypatch.setattr(cuda, "copy", copy)
    monkeypatch.setattr(cuda, "synchronize", lambda stream: None)
    monkeypatch.setattr(cuda, "require_device", lambda device_id: None)
    fake.copies = copies
    return fake


def _device(x):
    """A NumPy array presented as an operand in GPU 0's memory."""
    from cumath._core.operand import Operand

    item = x.dtype.itemsize
    return Operand(x, x.ctypes.data, x.shape, tuple(s // item for s in x.strides), x.dtype.name, 0, "numpy")


def test_host_operands_staged_to_the_gpu(emulated):
    from cumath import tensor

    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 8, 5))[:, ::2]
    b = np.asfortranarray(rng.standard_normal((5, 4, 7)))
    c = rng.standard_normal((6, 7))
    opts = {"allocator": HostAllocator()}
    r = tensor.binary_contraction("ijk,kjl->il", a, b, c=c, alpha=2.0, beta=-0.5, execution="cuda", options=opts)
    assert isinstance(r, np.ndarray)
    assert np.allclose(r, 2 * np.einsum("ijk,kjl->il", a, b) - 0.5 * c)
    names = [w for w, _ in emulated.copies]
    assert "a" in names and "b" in names and "result" in names  # every crossing logged
    out = np.empty((7, 6)).T
    with tensor.TernaryContraction("ij,jk,kl->il", a[:, 0, :], rng.standard_normal((5, 9)),
                                   rng.standard_normal((9, 7)), out=out, execution="cuda", options=opts) as t:
        t.plan()
        r = t.execute()
        assert r is out
        ops = [t._ops[n].obj for n in ("a", "b", "c")]
        assert np.allclose(out, ops[0] @ ops[1] @ ops[2])


def test_device_operands_whole_operation(emulated, monkeypatch):
    from cumath import tensor

    monkeypatch.setattr(engine_mod, "alignment", lambda ptr: 16)  # results here are NumPy's, 16-byte aligned

    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((5, 6)), rng.standard_normal((6, 3))
    opts = {"allocator": HostAllocator()}
    with tensor.BinaryContraction("ij,jk->ik", _device(a), _device(b), options=opts) as ctr:
        ctr.plan()
        assert ctr._executor.space == "cuda"
        r = ctr.execute(alpha=3.0)
        assert np.allclose(r, 3 * a @ b)
        ctr.plan_preference.kernel_rank = 2
        ctr.autotune(iterations=2)
        assert np.allclose(ctr.execute(), a @ b)


def test_operators_whole_operation(emulated, monkeypatch):
    from cumath import tensor

    monkeypatch.setattr(engine_mod, "alignment", lambda ptr: 16)
    rng = np.random.default_rng(15)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    b = rng.standard_normal((8, 4)).astype(np.float32)
    opts = {"allocator": HostAllocator()}
    for op, fn in ((Operator.OP_RELU, lambda x: np.maximum(x, 0)), (Operator.OP_TANH, np.tanh),
                   (Operator.OP_NEG, np.negative)):
        r = tensor.binary_contraction("ij,jk->ik", _device(a), _device(b), qualifiers=[op, Operator.OP_IDENTITY],
                                      options=opts)
        assert np.allclose(r, fn(a.astype(np.float64)) @ b, rtol=1e-5, atol=1e-5)
    c = rng.standard_normal((6, 9))  # host operands staged to the GPU: the operator applies to the mirror
    x, y = rng.standard_normal((9, 3)), rng.standard_normal((3, 5))
    r = tensor.ternary_contraction("ij,jk,kl->il", c, x, y, qualifiers=[Operator.OP_IDENTITY, Operator.OP_EXP,
                                                                          Operator.OP_SIN], execution="cuda",
                                   options=opts)
    assert np.allclose(r, c @ np.exp(x) @ np.sin(y))


def test_failed_plan_releases_what_it_made(fake, monkeypatch):
    rng = np.random.default_rng(8)
    a, b, c = rng.standard_normal((4, 5)), rng.standard_normal((5, 6)), rng.standard_normal((6, 3))
    calls = {"n": 0}
    create = fake.cutensorCreatePlan

    def second_plan_fails(*args):
        calls["n"] += 1
        if calls["n"] == 2:
            raise CUTENSORError(15, "NOT_SUPPORTED")
        return create(*args)

    monkeypatch.setattr(fake, "cutensorCreatePlan", second_plan_fails)
    out = np.empty((4, 3))
    with pytest.raises(CUTENSORError, match="cuTENSOR failed with NOT_SUPPORTED"):
        _engine("ij,jk,kl->il", [a, b, c], out)
    made = [k for k, v in fake.objects.items() if isinstance(v, tuple) and v[0] in ("tensor", "contraction",
                                                                                   "pref", "plan")]
    assert made and set(made) <= set(fake.destroyed)  # every descriptor, preference and plan destroyed


def test_stateless_device_calls_are_cached_per_alignment(emulated, monkeypatch):
    from cumath import config, tensor

    rng = np.random.default_rng(10)
    opts = {"allocator": HostAllocator()}
    monkeypatch.setattr(engine_mod, "alignment", lambda ptr: 16 if ptr == 0 else min(16, ptr & -ptr))
    raw = rng.standard_normal(1 + 6 * 4)
    a1, a2, b = rng.standard_normal((6, 4)), raw[1:].reshape(6, 4), rng.standard_normal((4, 5))
    config.plan_cache.clear()
    before = config.plan_cache.stats()["misses"]
    for a in (a1, a1, a2):
        r = tensor.binary_contraction("ij,jk->ik", _device(a), _device(b), options=opts)
        assert np.allclose(r, a @ b)
    stats = config.plan_cache.stats()
    assert stats["misses"] - before == 2 and stats["hits"] >= 1  # the 8-byte aligned view has its own plan


def test_cached_binary_call_is_one_native_call(emulated, monkeypatch):
    """A cached binary call on GPU operands runs the plan's argument words through the raw caller (one call), with
    the scalars rewritten only when alpha changes, and the workspace kept (or allocated again after release)."""
    from cumath import config, tensor

    rng = np.random.default_rng(21)
    monkeypatch.setattr(engine_mod, "alignment", lambda ptr: 16 if ptr == 0 else min(16, ptr & -ptr))
    raw_calls = []
    make_raw = emulated.raw_function

    def counting(name):
        fn = make_raw(name)

        def raw(*args):
            raw_calls.append((name, len(args)))
            return fn(*args)

        return raw

    monkeypatch.setattr(emulated, "raw_function", counting)
    a = rng.standard_normal((3, 5, 7)).astype(np.float32)
    b = rng.standard_normal((3, 7, 4)).astype(np.float32)[:, ::-1]  # negative stride
    alloc = HostAllocator()
    opts = {"allocator": alloc}
    config.plan_cache.clear()
    expect = np.einsum("bij,bjk->bik", a.astype(np.float64), b.astype(np.float64))
    for alpha in (1.0, 1.0, 2.5, 2.5, 1.0, -3):
        r = tensor.binary_contraction("bij,bjk->bik", _device(a), _device(b), alpha=alpha, options=opts)
        assert np.allclose(r, alpha * expect, rtol=1e-5, atol=1e-5)
    assert raw_calls == [("cutensorContract", 11)] * 6
    plans = [v for v in emulated.objects.values() if isinstance(v, tuple) and v[0] == "plan"]
    assert len(plans) == 1  # planned once
    kept = [b for b in alloc.buffers if not b.freed]
    r = tensor.binary_contraction("bij,bjk->bik", _device(a), _device(b), options=opts)
    assert [b for b in alloc.buffers if not b.freed] == kept  # no workspace allocated per call
    with tensor.BinaryContraction("bij,bjk->bik", _device(a), _device(b), options=opts) as ctr:
        ctr.plan()
        assert ctr._executor.simple
        for _ in range(2):  # released after each call, allocated again for the next
            r = ctr.execute(alpha=0.5, release_workspace=True)
            assert np.allclose(r, 0.5 * expect, rtol=1e-5, atol=1e-5) and ctr._executor.workspace is None
        c = rng.standard_normal((3, 5, 4)).astype(np.float32)
        ctr.reset_operands(a=_device(a))
        with pytest.raises(ValueError, match="beta must be given together with c"):
            tensor.binary_contraction("bij,bjk->bik", _device(a), _device(b), c=_device(c), options=opts)
    r = tensor.binary_contraction("bij,bjk->bik", _device(a), _device(b), c=_device(c), beta=2.0, options=opts)
    assert np.allclose(r, expect + 2 * c, rtol=1e-5, atol=1e-5)  # the general path (addend copied first)


def _at(shape, offset: int, fill=None):
    """A float64 array starting ``offset`` bytes past a 16-byte boundary (filled from ``fill`` when given)."""
    from cumath._core.frameworks.numpy import aligned_empty

    n = int(np.prod(shape))
    base = aligned_empty((n + 2,), np.float64, 16)
    x = base[offset // 8:offset // 8 + n].reshape(shape)
    if fill is not None:
        x[...] = fill
    return x


def test_cached_call_refuses_a_less_aligned_operand(emulated, monkeypatch):
    from cumath import tensor

    rng = np.random.default_rng(22)
    monkeypatch.setattr(engine_mod, "alignment", lambda ptr: 16 if ptr == 0 else min(16, ptr & -ptr))
    a, b = _at((4, 6), 0, rng.standard_normal((4, 6))), _at((6, 3), 0, rng.standard_normal((6, 3)))
    good, off = _at((4, 3), 0), _at((4, 3), 8)
    with tensor.BinaryContraction("ij,jk->ik", _device(a), _device(b), out=_device(good),
                                  options={"allocator": HostAllocator()}) as ctr:
        ctr.plan()
        ctr.execute()
        assert np.allclose(good, a @ b)
        ctr.reset_operands(out=_device(off))
        with pytest.raises(ValueError, match="out at address .* is less aligned than the planned one"):
            ctr.execute()
        ctr.reset_operands(b=_device(_at((6, 3), 8, b)), out=_device(good))
        with pytest.raises(ValueError, match="an operand at address .* is less aligned than the planned one"):
            ctr.execute()
        ctr.reset_operands(b=_device(b))
        ctr.execute(alpha=2.0)
        assert np.allclose(good, 2 * a @ b)
    # the stateless call plans again for the less aligned operand instead
    r = tensor.binary_contraction("ij,jk->ik", _device(a), _device(_at((6, 3), 8, b)),
                                  options={"allocator": HostAllocator()})
    assert np.allclose(r, a @ b)


def test_auto_layout_on_the_gpu(emulated, monkeypatch):
    """cuTENSOR writes any strides: 'auto' gives C for C inputs even where the CPU's GEMM could not."""
    from cumath import tensor

    monkeypatch.setattr(engine_mod, "alignment", lambda ptr: 16 if ptr == 0 else min(16, ptr & -ptr))
    rng = np.random.default_rng(23)
    x, y = rng.standard_normal((4, 5, 6)), rng.standard_normal((4, 6, 3))
    r = tensor.binary_contraction("bij,bjk->kib", _device(x), _device(y), options={"allocator": HostAllocator()})
    assert r.flags.c_contiguous and np.allclose(r, np.einsum("bij,bjk->kib", x, y))
    fx, fy = np.asfortranarray(x), np.asfortranarray(y)
    r = tensor.binary_contraction("bij,bjk->kib", _device(fx), _device(fy), options={"allocator": HostAllocator()})
    assert r.flags.f_contiguous and np.allclose(r, np.einsum("bij,bjk->kib", x, y))


@pytest.fixture
def jit_timed(emulated, monkeypatch):
    """autotune() on the emulation, with execute() "measured" by the jit mode of the current plan: the times
    given per mode (the emulated plans record the preference they were made with)."""
    from cumath.tensor import _planner

    monkeypatch.setattr(engine_mod, "alignment", lambda ptr: 16)
    monkeypatch.setattr(_planner, "JIT_MIN_MULTIPLY_ADDS", 64)
    times = {}
    timed = []

    def fake_time(self, n, alpha, beta, stream):
        self.execute(alpha=alpha, beta=beta, stream=stream)
        jit = int(self.plan_preference.jit)
        timed.append(jit)
        return times[jit]

    monkeypatch.setattr(_planner._Contraction, "_time_executes", fake_time)
    emulated.times, emulated.timed = times, timed
    return emulated


def _last_pref_jit(fake):
    prefs = [v for v in fake.objects.values() if isinstance(v, tuple) and v[0] == "pref"]
    return prefs[-1][2]


@pytest.mark.parametrize("jit_time, kept", [(1.0, 1), (3.0, 0)])
def test_autotune_keeps_the_faster_of_jit_and_precompiled(jit_timed, jit_time, kept):
    from cumath import tensor

    jit_timed.times.update({0: 2.0, 1: jit_time})
    rng = np.random.default_rng(24)
    a, b = rng.standard_normal((6, 7)).astype(np.float32), rng.standard_normal((7, 5)).astype(np.float32)
    with tensor.BinaryContraction("ij,jk->ik", _device(a), _device(b), options={"allocator": HostAllocator()}) as c:
        c.plan()
        c.autotune(iterations=2)
        assert jit_timed.timed == [0, 1]
        assert int(c.plan_preference.jit) == kept and _last_pref_jit(jit_timed) == kept  # the kept plan's
        assert np.allclose(c.execute(), a @ b, rtol=1e-5)
        c.plan()  # nothing changed: no replanning
        assert _last_pref_jit(jit_timed) == kept


@pytest.mark.parametrize("case", ["float64", "small", "explicit-none", "explicit-default"])
def test_autotune_leaves_jit_alone(jit_timed, monkeypatch, case):
    from cumath import tensor
    from cumath.tensor import _planner

    jit_timed.times.update({0: 2.0, 1: 1.0})
    rng = np.random.default_rng(25)
    dtype = np.float64 if case == "float64" else np.float32
    a, b = rng.standard_normal((6, 7)).astype(dtype), rng.standard_normal((7, 5)).astype(dtype)
    if case == "small":
        monkeypatch.setattr(_planner, "JIT_MIN_MULTIPLY_ADDS", 6 * 7 * 5 + 1)
    with tensor.BinaryContraction("ij,jk->ik", _device(a), _device(b), options={"allocator": HostAllocator()}) as c:
        want = 0
        if case.startswith("explicit"):
            want = int(case == "explicit-default")
            c.plan_preference.jit = want
        c.plan()
        c.autotune(iterations=2)
        assert jit_timed.timed == [] and int(c.plan_preference.jit) == want == _last_pref_jit(jit_timed)
        assert np.allclose(c.execute(), a @ b, rtol=1e-5)


def test_autotune_without_jit_support(jit_timed, monkeypatch):
    """A JIT plan the library refuses (NOT_SUPPORTED) leaves the precompiled kernel in place."""
    from cumath import tensor

    jit_timed.times.update({0: 2.0, 1: 1.0})
    create = jit_timed.cutensorCreatePlan

    def refuse_jit(h, desc, pref, limit):
        if jit_timed.objects[pref][2] == 1:
            raise CUTENSORError(15, "NOT_SUPPORTED")
        return create(h, desc, pref, limit)

    monkeypatch.setattr(jit_timed, "cutensorCreatePlan", refuse_jit)
    rng = np.random.default_rng(26)
    a, b = rng.standard_normal((6, 7)).astype(np.float32), rng.standard_normal((7, 5)).astype(np.float32)
    with tensor.BinaryContraction("ij,jk->ik", _device(a), _device(b), options={"allocator": HostAllocator()}) as c:
        c.plan()
        c.autotune(iterations=1)
        assert int(c.plan_preference.jit) == 0 and jit_timed.timed == [0]
        assert np.allclose(c.execute(), a @ b, rtol=1e-5)


def test_plan_preference_jit_flag_is_private():
    pref = ContractionPlanPreference()
    assert "_jit_set" not in repr(pref) and pref.key()[-1] == 0
    with pytest.raises(AttributeError, match=r"the attributes are \['algo', 'autotune_mode', 'cache_mode', "
                                             r"'incremental_count', 'jit', 'kernel_rank'\]"):
        pref.jitt = 1
