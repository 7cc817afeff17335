"""The planner end to end on a CPU stand-in of cuBLASLt (tests/linalg/advanced/fake_cublaslt.py): layouts,
transposes, leading dimensions, batch strides, c broadcasting, epilog pointers, aux layouts, host staging, the
feed-back loop. Checks cumath's arithmetic in CI; the GPU tests check it against the real library."""

from __future__ import annotations

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath.linalg.advanced import MatmulEpilog as E
from helpers.matmul_reference import epilog_ref, gelu_aux_values, rel_error, unpack_relu_mask

import fake_cublaslt as fake
from fake_cublaslt import fake_library  # noqa: F401 (an autouse fixture)

RNG = np.random.default_rng(3)


def r(shape, order="C", dtype=np.float64):
    x = RNG.standard_normal(shape).astype(dtype)
    if dtype in (np.complex64, np.complex128):
        x = x + 1j * RNG.standard_normal(shape)
    if order == "F" and x.ndim >= 2:  # each matrix column-major, batch outermost
        return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)
    return x


def dev(x):
    return fake.device_operand(x)


def ok(result, ref, tol=1e-12):
    assert result.shape == ref.shape
    assert rel_error(result, ref) < tol


LAYOUTS = {
    "rr": lambda: (r((7, 5)), r((5, 3))), "cc": lambda: (r((7, 5), "F"), r((5, 3), "F")),
    "rc": lambda: (r((7, 5)), r((5, 3), "F")), "views": lambda: (r((5, 7)).T, r((3, 5)).T),
    "sub": lambda: (r((7, 9))[:, :5], r((5, 3))), "strided": lambda: (r((14, 5))[::2], r((5, 3))),
    "batched": lambda: (r((4, 7, 5)), r((5, 3))), "bcast": lambda: (r((2, 1, 7, 5)), r((3, 5, 3), "F")),
    "vec-a": lambda: (r((5,)), r((4, 5, 3))), "vec-b": lambda: (r((4, 7, 5)), r((5,))),
    "vec-vec": lambda: (r((5,)), r((5,))),
}


@pytest.mark.parametrize("case", list(LAYOUTS))
@pytest.mark.parametrize("where", ["device", "host"])
def test_layouts(case, where):
    a, b = LAYOUTS[case]()
    A, B = (dev(a), dev(b)) if where == "device" else (a, b)
    ok(la.matmul(A, B, alpha=1.5), 1.5 * np.matmul(a, b))


@pytest.mark.parametrize("cshape,corder", [((7, 3), "C"), ((7, 3), "F"), ((7, 1), "C"), ((4, 7, 3), "C"),
                                           ((3,), "C")])
@pytest.mark.parametrize("where", ["device", "host"])
def test_c(cshape, corder, where):
    a, b, c = r((4, 7, 5)), r((5, 3)), r(cshape, corder)
    args = (dev(a), dev(b), dev(c)) if where == "device" else (a, b, c)
    ok(la.matmul(*args, alpha=0.5, beta=2.0), 0.5 * np.matmul(a, b) + 2.0 * c)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("name", ["RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_AUX", "RELU_AUX", "RELU_AUX_BIAS",
                                  "GELU_AUX_BIAS", "BGRADA", "BGRADB"])
def test_forward_epilogs(name, order):
    a, b, bias = r((3, 9, 5), order), r((5, 6), order), r((9,))
    inputs = {"bias": dev(bias)} if "BIAS" in name else None
    d, aux = (lambda o: o if isinstance(o, tuple) else (o, {}))(
        la.matmul(dev(a), dev(b), epilog=E[name], epilog_inputs=inputs))
    ref, extras = epilog_ref(name, a, b, bias=bias if inputs else None)
    ok(d, ref)
    kind = "T" if d.strides[-1] == d.itemsize else "N"
    for key, want in extras.items():
        if key == "relu_aux":
            assert np.array_equal(unpack_relu_mask(aux[key], 9, 6, kind), want)
        elif key == "gelu_aux":
            ok(gelu_aux_values(aux[key], 9, 6, kind), want)
        else:  # bias gradients: (M,) or (N,); (*batch, M, 1) for a batched product
            ok(aux[key], want[..., None] if want.ndim > 1 else want)
    if "BIAS" not in name and "GRAD" not in name:
        assert (kind == "T") == (order == "C")


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("act", ["RELU", "GELU"])
def test_round_trip(act, order):
    x, w, bias = r((9, 5), order), r((5, 6), order), r((9,))
    for fwd, bwd in ((f"{act}_AUX", f"D{act}"), (f"{act}_AUX_BIAS", f"D{act}_BGRAD")):
        inputs = {"bias": dev(bias)} if "BIAS" in fwd else None
        _h, aux = la.matmul(dev(x), dev(w), epilog=E[fwd], epilog_inputs=inputs)
        key = f"{act.lower()}_aux"
        g, w2 = r((9, 4), order), r((4, 6), order)
        out = la.matmul(dev(g), dev(w2), epilog=E[bwd], epilog_inputs={key: dev(aux[key])})
        d, extras = out if isinstance(out, tuple) else (out, {})
        pre = epilog_ref(fwd, x, w, bias=bias if inputs else None)[1][key]
        ref, ref_extras = epilog_ref(bwd, g, w2, aux=pre)
        ok(d, ref)
        for k2, want in ref_extras.items():
            ok(extras[k2], want)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("name", ["DEFAULT", "RELU_BIAS", "GELU_AUX", "BGRADA"])
def test_feed_back_loop(name, order):
    n = 8
    a, w, bias = r((n, n), order), r((n, n), order) / 4, r((n,))
    inputs = {"bias": dev(bias)} if "BIAS" in name else None
    x = a
    with la.Matmul(dev(a), dev(w)) as mm:
        mm.plan(epilog=E[name], epilog_inputs=inputs)
        for _ in range(4):
            out = mm.execute()
            d = out[0] if isinstance(out, tuple) else out
            ref = epilog_ref(name, x, w, bias=bias if inputs else None)[0]
            ok(d, ref)
            x = ref
            mm.reset_operands_unchecked(a=dev(d))


def test_complex_and_conjugation():
    a, b = r((6, 4), dtype=np.complex128), r((4, 5), dtype=np.complex128)
    q = np.zeros(3, dtype=la.matrix_qualifiers_dtype)
    q["is_conjugate"][0] = 1
    ok(la.matmul(dev(a), dev(b), qualifiers=q), np.matmul(a.conj(), b))
    q["is_conjugate"][:2] = (0, 1)
    bf = np.asfortranarray(b)
    ok(la.matmul(dev(a), dev(bf), qualifiers=q), np.matmul(a, b.conj()))


def test_inplace_and_host_inplace():
    a, b, c = r((7, 5)), r((5, 3)), r((7, 3), "F")
    want = np.matmul(a, b) + 0.5 * c
    d = la.matmul(dev(a), dev(b), dev(c), beta=0.5, options={"inplace": True})
    assert d is c
    ok(c, want)
    c2 = r((7, 3))
    want = np.matmul(a, b) + 0.5 * c2
    d = la.matmul(a, b, c2, beta=0.5, options={"inplace": True})
    assert d is c2
    ok(c2, want)


def test_stateless_cache_rebinds_pointers_and_scalars():
    from cumath.config import plan_cache

    a, b = r((7, 5)), r((5, 3))
    for alpha in (1.0, 2.0, 3.0):
        a2, b2 = r((7, 5)), r((5, 3))
        ok(la.matmul(dev(a2), dev(b2), alpha=alpha), alpha * np.matmul(a2, b2))
    assert plan_cache.stats()["hits"] == 2
    ok(la.matmul(dev(np.asfortranarray(a)), dev(b)), np.matmul(a, b))


def test_reset_switches_variants():
    a, b = r((6, 6)), r((6, 6))
    with la.Matmul(dev(a), dev(b)) as mm:
        mm.plan()
        ok(mm.execute(), a @ b)
        af = np.asfortranarray(r((6, 6)))
        mm.reset_operands(a=dev(af))
        ok(mm.execute(), af @ b)
        mm.reset_operands_unchecked(a=dev(a))
        ok(mm.execute(), a @ b)
        assert len(mm._executor.variants) == 2
