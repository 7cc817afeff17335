"""Result recycling on Matmul.execute's hot path (the variant's ``_core.recycle.Recycler``), on the CPU stand-in of
cuBLASLt: a result is reused only once nobody but the plan refers to it (nor to a view of it), only on the stream
that produced it, at most two are kept, large results never. The packages' reference rules
(``_core/frameworks/*.recycle_snapshot``) are checked on CPU tensors here and on the GPU in test_matmul_gpu.py."""

from __future__ import annotations

import gc
import platform
import warnings

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath._core import recycle
from cumath._core.frameworks.numpy import aligned_empty
from cumath._core.operand import adapter
from helpers.matmul_reference import rel_error

import fake_cublaslt as fake
from fake_cublaslt import fake_library  # noqa: F401 (an autouse fixture)

RNG = np.random.default_rng(11)


pytestmark = pytest.mark.usefixtures("recycling_on")  # recycling is opt-in

def r(shape):
    x = aligned_empty(shape, np.float64, 256)  # one alignment: one planned variant
    x[...] = RNG.standard_normal(shape)
    return x


def dev(x):
    return fake.device_operand(x)


def ptr(x):
    return x.__array_interface__["data"][0]


def test_dropped_result_is_reused():
    a, b = r((7, 5)), r((5, 3))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        p = ptr(mm.execute())  # dropped at once
        d = mm.execute()
        assert ptr(d) == p
        assert rel_error(d, a @ b) < 1e-12
        assert mm.nbytes >= 7 * 3 * 8  # the recycled result is counted


def test_kept_results_stay_intact():
    a, b = r((6, 6)), r((6, 6))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        kept, refs = [], []
        for i in range(5):
            a2 = r((6, 6))
            mm.reset_operands(a=dev(a2))
            kept.append(mm.execute())
            refs.append(a2 @ b)
        assert len({ptr(d) for d in kept}) == 5
        for d, ref in zip(kept, refs):
            assert rel_error(d, ref) < 1e-12


def test_loop_that_keeps_the_previous_result():
    """``d = mm.execute()`` keeps the previous result alive during the call: two buffers alternate."""
    a, b = r((6, 6)), r((6, 6)) / 3
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        x, d, seen = a, None, []
        for _ in range(6):
            d = mm.execute()
            assert rel_error(d, x @ b) < 1e-12
            x = x @ b
            seen.append(ptr(d))
            mm.reset_operands_unchecked(a=dev(d))  # the operand holds d: it is never the next result
        # results may change the operand's alignment (another planned variant) at first; then two alternate
        assert len(set(seen[-4:])) == 2


def test_views_and_exports_block_reuse():
    a, b = r((7, 5)), r((5, 3))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        d = mm.execute()
        p, want = ptr(d), d.copy()
        view = d[1:]
        del d
        gc.collect()
        for _ in range(3):  # neither of the kept results may be overwritten while the view lives
            assert ptr(mm.execute()) != p
        assert np.array_equal(view, want[1:])
        m = memoryview(mm.execute())  # a buffer export of a dropped result
        p2 = ptr(np.asarray(m))
        assert ptr(mm.execute()) != p2


def test_only_on_the_producing_stream():
    a, b = r((7, 5)), r((5, 3))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        v = mm._v
        d0 = mm.execute()
        p0 = ptr(d0)
        del d0  # free, but made on stream 0
        v.stream = 12345  # as if the plan ran on another stream now
        d = mm.execute()
        p1 = ptr(d)
        assert p1 != p0 and rel_error(d, a @ b) < 1e-12
        del d
        assert ptr(mm.execute()) == p1  # the stream-12345 result is reused, the stream-0 one never
        v.stream = 0
        assert ptr(mm.execute()) == p0


def test_explicit_streams_allocate_on_the_plans_stream(monkeypatch):
    """The hot path (whose new results come from the package's current stream) runs only when the plan's
    stream is that stream; otherwise the general path allocates inside the plan's stream."""
    import contextlib

    import cumath._core.frameworks.numpy as numpy_adapter
    import cumath.linalg.advanced._planner as planner

    monkeypatch.setattr(numpy_adapter, "stream_context", lambda device, s: contextlib.nullcontext(), raising=False)
    a, b = r((7, 5)), r((5, 3))
    with la.Matmul(dev(a), dev(b), stream=777) as mm:
        mm.plan()
        d = mm.execute()
        assert rel_error(d, a @ b) < 1e-12 and mm._v.results.entries == ()  # stream 777 is not numpy's current one
        monkeypatch.setattr(planner, "default_stream", lambda package, device: 777)
        mm.execute()
        assert len(mm._v.results.entries) == 1


def test_at_most_two_kept_and_freed_with_the_plan():
    a, b = r((7, 5)), r((5, 3))
    mm = la.Matmul(dev(a), dev(b))
    mm.plan()
    kept = [mm.execute() for _ in range(4)]
    results = mm._v.results
    assert len(results.entries) == 2 and kept[-1] is results.entries[-1][0]
    mm.free()
    assert results.entries == () and mm._executor is None


def test_large_results_and_the_switch(monkeypatch):
    a, b = r((7, 5)), r((5, 3))
    monkeypatch.setattr(recycle, "MAX_DEVICE_BYTES", 7 * 3 * 8 - 1)
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        mm.execute()
        assert mm._v.results.entries == () and mm._v.results.snapshot is None
    monkeypatch.setattr(recycle, "MAX_DEVICE_BYTES", 1 << 20)
    monkeypatch.setattr(recycle, "RECYCLE", False)
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        mm.execute()
        assert mm._v.results.entries == ()


def test_general_path_results_are_not_recycled():
    """Epilogs with auxiliary outputs (and other general-path cases) allocate every result."""
    a, b = r((8, 5)), r((5, 6))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan(epilog=la.MatmulEpilog.RELU_AUX)
        p = ptr(mm.execute()[0])
        assert mm._v.results.entries == ()
        d, _aux = mm.execute()
        assert rel_error(d, np.maximum(a @ b, 0)) < 1e-12
        del p


def test_stateless_calls_recycle():
    a, b = r((7, 5)), r((5, 3))
    p = ptr(la.matmul(dev(a), dev(b)))
    a2 = r((7, 5))
    d = la.matmul(dev(a2), dev(b))
    assert ptr(d) == p and rel_error(d, a2 @ b) < 1e-12


def test_stateless_feed_back():
    """``d = matmul(d, w)``: d is an input of the call, so the result is never d's buffer."""
    x, w = r((6, 6)), r((6, 6)) / 3
    d = la.matmul(dev(x), dev(w))
    for _ in range(5):
        x = x @ w
        assert rel_error(d, x) < 1e-12
        new = la.matmul(dev(d), dev(w))
        assert ptr(new) != ptr(d)
        d = new


# ------------------------------------------------------------------------------ the packages' rules on the CPU
def _entry(rule, x):
    e = [x, 0, 0, None]
    del x
    e[3] = rule[0](e)
    return e


def recycling_rule(package):
    """(snapshot, unchanged) of the package's rule, as the Recycler applies it; None where there is none."""
    snapshot = getattr(adapter(package), "recycle_snapshot", None)
    if snapshot is None or platform.python_implementation() != "CPython":
        return None
    return snapshot, lambda e: snapshot(e) == e[3]


def _torch_rule():
    rule = recycling_rule("torch")
    if rule is None:
        pytest.skip("this PyTorch has no TensorImpl/storage use counts")
    return rule


def test_torch_rule_sees_every_reference():
    torch = pytest.importorskip("torch")
    rule = _torch_rule()
    e = _entry(rule, torch.empty(6, 5))
    assert rule[1](e)
    holders = {
        "name": lambda t: t,
        "view": lambda t: t[1:],
        "transpose": lambda t: t.T,
        "detach": lambda t: t.detach(),
        "storage": lambda t: t.untyped_storage(),
        "numpy": lambda t: t.numpy(),
        "dlpack": lambda t: torch.utils.dlpack.to_dlpack(t),
        "autograd": lambda t: t * torch.ones(6, 5, requires_grad=True),
        "as_strided": lambda t: t.as_strided((2, 2), (1, 1)),
        "set_": lambda t: torch.empty(0).set_(t.untyped_storage()),
    }
    for name, make in holders.items():
        h = make(e[0])
        assert not rule[1](e), name
        del h
        gc.collect()
        assert rule[1](e), name


def test_torch_rule_sees_metadata_changed_in_place():
    """A dropped result whose shape, strides or storage the caller changed in place is not handed out again."""
    torch = pytest.importorskip("torch")
    rule = _torch_rule()
    for name, change in (("t_", lambda t: t.t_()), ("resize_ smaller", lambda t: t.resize_(3, 5)),
                         ("resize_ larger", lambda t: t.resize_(60, 50)), ("unsqueeze_", lambda t: t.unsqueeze_(0)),
                         ("set_", lambda t: t.set_(torch.empty(6, 5).untyped_storage(), 0, (6, 5), (5, 1))),
                         ("as_strided_", lambda t: t.as_strided_((5, 5), (5, 1), 1)),
                         ("requires_grad_", lambda t: t.requires_grad_())):
        e = _entry(rule, torch.empty(6, 5))
        change(e[0])
        gc.collect()
        assert not rule[1](e), name


def test_torch_rule_for_permuted_results():
    torch = pytest.importorskip("torch")
    rule = _torch_rule()
    e = _entry(rule, torch.empty(5, 6).permute(1, 0))  # a column-major result is a view of its allocation
    v = e[0][:, 1]
    assert not rule[1](e)
    del v
    assert rule[1](e)


def test_numpy_rule():
    rule = recycling_rule("numpy")
    e = _entry(rule, np.empty((4, 4)))
    v = e[0].T
    assert not rule[1](e)
    del v
    assert rule[1](e)
    with warnings.catch_warnings():  # NumPy 2.5 deprecates assigning a shape (what this rule guards against)
        warnings.simplefilter("ignore", DeprecationWarning)
        e[0].shape = (2, 8)
    assert not rule[1](e)
    e = _entry(rule, np.empty((5, 6)).T)  # a column-major result: a view of its allocation
    v = e[0][1:]  # whose views refer to the allocation, not to the result
    assert not rule[1](e)
    del v
    assert rule[1](e)
