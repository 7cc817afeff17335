"""Pure plan arithmetic of cumath.linalg.advanced (no GPU): shapes, promotion, batching, layouts -> cuBLASLt
formulations, auxiliary layouts, dtype combinations, epilog inputs, options. Runs in CI."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from cumath.linalg.advanced import MatmulComputeType as CT
from cumath.linalg.advanced import MatmulEpilog as E
from cumath.linalg.advanced import _epilogs, _traits
from cumath.linalg.advanced._traits import OP_C, OP_N, OP_T, ORDER_COL, ORDER_ROW
from helpers.matmul_reference import relu_mask, unpack_relu_mask


def strides(x):
    return tuple(s // x.itemsize for s in x.strides)


def geom(a, b, c=None, inplace=False):
    return _traits.matmul_geometry(a.shape, strides(a), b.shape, strides(b), None if c is None else c.shape,
                                   None if c is None else strides(c), inplace=inplace)


def arr(shape, order="C"):
    return np.empty(shape, np.float32, order=order)


# ------------------------------------------------------------------------------------------------ shapes
@pytest.mark.parametrize("ashape,bshape,result", [
    ((7, 5), (5, 3), (7, 3)), ((5,), (5, 3), (3,)), ((7, 5), (5,), (7,)), ((5,), (5,), ()),
    ((4, 7, 5), (5, 3), (4, 7, 3)), ((7, 5), (2, 5, 3), (2, 7, 3)), ((2, 1, 7, 5), (3, 5, 3), (2, 3, 7, 3)),
    ((6, 5), (2, 3, 5, 4), (2, 3, 6, 4)), ((3, 5), (2, 5), None),
])
def test_result_shapes_follow_numpy_matmul(ashape, bshape, result):
    a, b = arr(ashape), arr(bshape)
    if result is None:
        with pytest.raises(ValueError, match=r"columns of a \(K=5\) must equal the number of rows of b \(K=2\)"):
            geom(a, b)
        return
    g = geom(a, b)
    assert g.result_shape == np.matmul(np.ones(ashape), np.ones(bshape)).shape == result


def test_batch_mismatch_names_the_dimension():
    with pytest.raises(ValueError, match="batch dimension 0 is 3 in a and 4 in b"):
        geom(arr((3, 7, 5)), arr((4, 5, 2)))


def test_batch_strides_and_broadcast():
    g = geom(arr((4, 7, 5)), arr((5, 3)))
    assert g.batch == 4 and g.a.batch_stride == 35 and g.b.batch_stride == 0 and not g.a.copy
    # two batch dimensions that collapse into one stride
    g = geom(arr((2, 3, 7, 5)), arr((2, 3, 5, 4)))
    assert g.batch == 6 and g.a.batch_stride == 35 and g.b.batch_stride == 20
    # broadcast over one of two batch dimensions: not one stride -> a dense copy
    g = geom(arr((2, 1, 7, 5)), arr((3, 5, 4)))
    assert g.a.copy and g.a.batch_stride == 35 and g.b.copy and g.b.batch_stride == 20
    g = geom(arr((2, 1, 7, 5)), arr((5, 4)))  # one b for all: stride 0
    assert not g.a.copy and g.a.batch_stride == 35 and not g.b.copy and g.b.batch_stride == 0
    # transposed views keep their strides
    a = arr((4, 5, 7)).transpose(0, 2, 1)
    g = geom(a, arr((5, 3)))
    assert (g.a.rs, g.a.cs, g.a.batch_stride, g.a.copy) == (1, 7, 35, False)


def test_non_unit_strides_and_negative_strides_are_copied():
    base = arr((14, 10))
    g = geom(base[::2, ::2], arr((5, 3)))
    assert g.a.copy and (g.a.rs, g.a.cs) == (5, 1)
    g = geom(base[::-1, :5][:7], arr((5, 3)))
    assert g.a.copy
    g = geom(base[:7, :5], arr((5, 3)))  # a sub-matrix: ld 10, no copy
    assert not g.a.copy and (g.a.rs, g.a.cs) == (10, 1)


def test_c_shapes():
    a, b = arr((7, 5)), arr((5, 3))
    g = geom(a, b, arr((7, 3)))
    assert not g.c_copy
    g = geom(a, b, arr((7, 1)))
    assert g.c_copy and g.c.cs == 0
    g = geom(arr((4, 7, 5)), b, arr((7, 3)))  # one c for the whole batch: copied into the result
    assert g.c_copy
    g = geom(arr((4, 7, 5)), b, arr((4, 7, 3)))
    assert not g.c_copy and g.c.batch_stride == 21
    with pytest.raises(ValueError, match=r"c of shape \[7, 4\] does not broadcast to the result's shape \[7, 3\]"):
        geom(a, b, arr((7, 4)))
    with pytest.raises(ValueError, match="inplace=True writes the result into c, so c must have the result's shape"):
        geom(a, b, arr((7, 1)), inplace=True)
    with pytest.raises(ValueError, match="inplace=True writes the result into c: pass c"):
        geom(a, b, inplace=True)


def test_empty_and_scalar_operands_are_rejected():
    with pytest.raises(ValueError, match="at least one dimension"):
        _traits.matmul_geometry((), (), (3,), (1,))
    with pytest.raises(ValueError, match="empty matrices"):
        geom(arr((0, 5)), arr((5, 3)))


# ------------------------------------------------------------------------------------------ formulations
def test_row_major_inputs_give_a_row_major_result_by_the_transposed_product():
    g = geom(arr((7, 5)), arr((5, 3)))
    assert _traits.target_order(g, None) == "row"
    f = _traits.formulations(g, target="row")[0]
    assert f.kind == "T" and f.d_order == "row" and f.d_strides == (3, 1) and f.d_perm == (0, 1)
    # cuBLASLt's A is b^T (3 x 5) column-major, its B is a^T (5 x 7): no transposes
    assert (f.a.rows, f.a.cols, f.a.ld, f.a.op) == (3, 5, 3, OP_N)
    assert (f.b.rows, f.b.cols, f.b.ld, f.b.op) == (5, 7, 5, OP_N)
    assert (f.d.rows, f.d.cols, f.d.ld) == (3, 7, 3)


def test_column_major_inputs_give_a_column_major_result():
    g = geom(arr((7, 5), "F"), arr((5, 3), "F"))
    assert _traits.target_order(g, None) == "col"
    f = _traits.formulations(g, target="col")[0]
    assert f.kind == "N" and f.d_strides == (1, 7) and f.d_perm == (1, 0)
    assert (f.a.op, f.a.ld, f.b.op, f.b.ld, f.d.ld) == (OP_N, 7, OP_N, 5, 7)


def test_mixed_layouts_use_transposes():
    g = geom(arr((7, 5)), arr((5, 3), "F"))
    f = _traits.formulations(g, target="col")[0]
    assert f.kind == "N" and (f.a.op, f.a.rows, f.a.cols, f.a.ld) == (OP_T, 5, 7, 5) and f.b.op == OP_N


def test_bias_epilogs_never_use_the_transposed_product():
    g = geom(arr((7, 5)), arr((5, 3)))
    kinds = [f.kind for f in _traits.formulations(g, target="row", epilog_rows_bound=True)]
    assert kinds == ["R", "Q", "N"]
    f = _traits.formulations(g, target="row", epilog_rows_bound=True)[0]
    assert f.d.order == ORDER_ROW and f.d_order == "row" and f.a.order == ORDER_ROW and f.a.op == OP_N
    f = _traits.formulations(g, target="row", epilog_rows_bound=True)[1]
    assert f.d.order == ORDER_ROW and f.a.order == ORDER_COL and f.a.op == OP_T
    kinds = [f.kind for f in _traits.formulations(g, target="row", epilog_rows_bound=True, row_order_epilog=False)]
    assert kinds == ["N"]


def test_aux_inputs_fix_the_formulation():
    g = geom(arr((7, 5)), arr((5, 3)))
    assert [f.kind for f in _traits.formulations(g, target="row", aux_kind="N")] == ["N"]
    assert [f.kind for f in _traits.formulations(g, target="col", aux_kind="T")] == ["T"]
    assert _traits.formulations(g, target="row", aux_kind="T", epilog_rows_bound=True) == []


def test_conjugation_needs_the_transposed_read():
    a = np.empty((7, 5), np.complex64)
    b = np.empty((5, 3), np.complex64)
    g = geom(a, b)
    # row-major a is read transposed in the direct product (op C there); in 'T' a^T is read as is
    fs = _traits.formulations(g, target="row", conj=(True, False))
    assert [f.kind for f in fs] == ["N"] and fs[0].a.op == OP_C
    fs = _traits.formulations(geom(np.asfortranarray(a), b), target="row", conj=(True, False))
    assert fs[0].kind == "T" and fs[0].b.op == OP_C


def test_fp8_needs_a_transposed_and_b_not():
    g = geom(arr((64, 32)), arr((32, 16), "F"))  # K contiguous in both
    fs = _traits.formulations(g, target="row", narrow_tn=True)
    assert fs and all(f.a.op == OP_T and f.b.op == OP_N for f in fs)
    assert _traits.formulations(geom(arr((64, 32)), arr((32, 16))), target="row", narrow_tn=True) == []


def test_c_layout_decides_the_result_layout_and_copies_otherwise():
    a, b = arr((7, 5)), arr((5, 3))
    g = geom(a, b, arr((7, 3), "F"))
    assert _traits.target_order(g, None) == "col"
    f = _traits.formulations(g, target="col")[0]
    assert f.kind == "N" and not f.c_in_d and f.c.ld == 7
    f = _traits.formulations(g, target="row")[0]  # a 'T' product cannot read a column-major c: copied
    assert f.kind == "T" and f.c_in_d
    g = geom(a, b, arr((7, 3), "F"), inplace=True)
    assert [f.kind for f in _traits.formulations(g, target="row", inplace=True)] == ["N"]


def test_vectors_and_batches():
    g = geom(arr((5,)), arr((4, 5, 3)))
    f = _traits.formulations(g, target=_traits.target_order(g, None))[0]
    assert g.result_shape == (4, 3) and f.d_strides == (3, 1) and f.d.batch_stride == 3
    g = geom(arr((4, 7, 5)), arr((5,)))
    f = _traits.formulations(g, target="row")[0]
    assert g.result_shape == (4, 7) and f.d_strides == (7, 1)


# ------------------------------------------------------------------------------------------------ aux
@pytest.mark.parametrize("kind", ["N", "T"])
def test_aux_layouts_and_orientation(kind):
    g = geom(arr((3, 130, 5)), arr((5, 9)))
    shape, st, ld, bstride = _traits.aux_layout(kind, g, "relu", "uint8")
    if kind == "N":
        assert shape == (3, 32, 9) and st == (288, 1, 32) and ld == 256 and bstride == 256 * 9
    else:
        assert shape == (3, 130, 16) and st == (2080, 16, 1) and ld == 128 and bstride == 128 * 130
    assert _traits.orientation_of(shape, st, g, "relu", "uint8") == kind
    shape, st, ld, _ = _traits.aux_layout(kind, g, "gelu", "float32")
    assert ld == (136 if kind == "N" else 16)
    assert _traits.orientation_of(shape, st, g, "gelu", "float32") == kind
    assert _traits.orientation_of((3, 7, 7), (49, 7, 1), g, "gelu", "float32") is None


@pytest.mark.parametrize("kind", ["N", "T"])
def test_reference_bit_mask_round_trip(kind):
    rng = np.random.default_rng(5)
    mask = rng.standard_normal((2, 130, 9)) > 0
    packed = relu_mask(mask, kind)
    g = geom(arr((2, 130, 5)), arr((5, 9)))
    assert packed.shape == _traits.aux_layout(kind, g, "relu", "uint8")[0]
    assert np.array_equal(unpack_relu_mask(packed, 130, 9, kind), mask)


# ---------------------------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("ab,c,result_type,expected", [
    ("float32", None, None, ("float32", CT.COMPUTE_32F, "float32")),
    ("float16", None, None, ("float16", CT.COMPUTE_32F, "float32")),
    ("float16", "float32", None, ("float32", CT.COMPUTE_32F, "float32")),
    ("bfloat16", None, "float32", ("float32", CT.COMPUTE_32F, "float32")),
    ("float64", None, None, ("float64", CT.COMPUTE_64F, "float64")),
    ("complex64", None, None, ("complex64", CT.COMPUTE_32F, "complex64")),
    ("complex128", "complex128", None, ("complex128", CT.COMPUTE_64F, "complex128")),
])
def test_dtype_defaults(ab, c, result_type, expected):
    p = _traits.dtype_plan(ab, ab, c, result_type=result_type)
    assert (p.d, p.compute, p.scale) == expected


def test_dtype_errors_list_the_supported_combinations():
    with pytest.raises(TypeError, match="must have one dtype; supported: float16 x float16"):
        _traits.dtype_plan("float32", "float64", None)
    with pytest.raises(TypeError, match="dtype int32 is not supported by cuBLASLt matmul"):
        _traits.dtype_plan("int32", "int32", None)
    with pytest.raises(TypeError, match="c float64 with float32 operands is not supported"):
        _traits.dtype_plan("float32", "float32", "float64")
    with pytest.raises(ValueError, match="compute_type COMPUTE_64F is not supported for float32 operands"):
        _traits.dtype_plan("float32", "float32", None, compute_type=CT.COMPUTE_64F)
    with pytest.raises(ValueError, match="scale_type float64 does not match"):
        _traits.dtype_plan("float32", "float32", None, scale_type="float64")
    with pytest.raises(TypeError, match="no float8_e5m2 x float8_e5m2 product"):
        _traits.dtype_plan("float8_e5m2", "float8_e5m2", None)
    with pytest.raises(TypeError, match="FP8 products need both operands in FP8"):
        _traits.dtype_plan("float8_e4m3fn", "float16", None)
    with pytest.raises(TypeError, match=r"the \(c, result\) pairs are"):
        _traits.dtype_plan("float8_e4m3fn", "float8_e4m3fn", "float32", result_type="float8_e4m3fn")


def test_fp8_defaults():
    p = _traits.dtype_plan("float8_e4m3fn", "float8_e4m3fn", None)
    assert (p.c, p.d, p.narrow, p.compute) == ("bfloat16", "float8_e4m3fn", True, CT.COMPUTE_32F)
    p = _traits.dtype_plan("float8_e4m3fn", "float8_e5m2", "float16")
    assert (p.c, p.d) == ("float16", "float16")
    p = _traits.dtype_plan("float8_e4m3fn", "float8_e4m3fn", None, result_type="float32")
    assert (p.c, p.d) == ("float32", "float32")


# ---------------------------------------------------------------------------------------------- epilogs
def op(shape, dtype="float32", st=None):
    st = st or tuple(np.empty(shape, np.uint8).strides)  # dense C order (uint8: byte strides = elements)
    return SimpleNamespace(shape=tuple(shape), strides=tuple(st), dtype=dtype)


def test_epilog_specs():
    assert [e.name for e in E] == ["DEFAULT", "RELU", "RELU_AUX", "BIAS", "RELU_BIAS", "RELU_AUX_BIAS", "DRELU",
                                   "DRELU_BGRAD", "GELU", "GELU_AUX", "GELU_BIAS", "GELU_AUX_BIAS", "DGELU",
                                   "DGELU_BGRAD", "BGRADA", "BGRADB"]
    assert _epilogs.epilog_spec(E.RELU_AUX_BIAS).inputs == ("bias",)
    assert _epilogs.epilog_spec(E.RELU_AUX_BIAS).outputs == ("relu_aux",)
    assert _epilogs.epilog_spec(E.DGELU_BGRAD).inputs == ("gelu_aux",)
    assert _epilogs.epilog_spec(E.DGELU_BGRAD).outputs == ("dgelu_bgrad",)
    assert _epilogs.epilog_spec("gelu_bias").epilog == E.GELU_BIAS
    assert _epilogs.lt_epilog(_epilogs.epilog_spec(E.BGRADA), True) == E.BGRADB
    assert _epilogs.lt_epilog(_epilogs.epilog_spec(E.BGRADB), False) == E.BGRADB
    with pytest.raises(ValueError, match="epilog=7 is not supported; the allowed values are"):
        _epilogs.epilog_spec(7)


def test_epilog_input_errors():
    g = geom(arr((2, 7, 5)), arr((5, 3)))
    spec = _epilogs.epilog_spec(E.RELU_BIAS)
    with pytest.raises(ValueError, match=r"epilog RELU_BIAS needs the epilog input\(s\) \['bias'\]"):
        _epilogs.check_epilog_inputs(spec, {}, g, "float32", "float32")
    with pytest.raises(ValueError, match=r"takes the epilog inputs \['bias'\], not \['gelu_aux'\]"):
        _epilogs.check_epilog_inputs(spec, {"bias": op((7,)), "gelu_aux": op((1,))}, g, "float32", "float32")
    with pytest.raises(ValueError, match=r"'bias' of shape \[5\] fits neither the result's 7 rows nor its 3 columns"):
        _epilogs.check_epilog_inputs(spec, {"bias": op((5,))}, g, "float32", "float32")
    with pytest.raises(TypeError, match="'bias' must be float32 for this product, not float64"):
        _epilogs.check_epilog_inputs(spec, {"bias": op((7,), "float64")}, g, "float32", "float32")
    with pytest.raises(ValueError, match="must be contiguous along its 7 elements"):
        _epilogs.check_epilog_inputs(spec, {"bias": op((7,), st=(2,))}, g, "float32", "float32")
    assert _epilogs.check_epilog_inputs(spec, {"bias": op((7,))}, g, "float32", "float32") == (0, None, False)
    assert _epilogs.check_epilog_inputs(spec, {"bias": op((2, 7, 1), st=(7, 1, 1))}, g, "float32",
                                        "float32") == (7, None, False)
    spec = _epilogs.epilog_spec(E.DRELU)
    shape, st, _, _ = _traits.aux_layout("T", g, "relu", "uint8")
    assert _epilogs.check_epilog_inputs(spec, {"relu_aux": op(shape, "uint8", st)}, g, "float32", None) == (None, "T", False)
    with pytest.raises(ValueError, match="does not come from a forward pass of this problem"):
        _epilogs.check_epilog_inputs(spec, {"relu_aux": op((2, 16, 4), "uint8")}, g, "float32", None)
    with pytest.raises(TypeError, match="'relu_aux' must be uint8"):
        _epilogs.check_epilog_inputs(spec, {"relu_aux": op(shape, "float32", st)}, g, "float32", None)


def test_aux_outputs():
    g = geom(arr((2, 7, 5)), arr((5, 3)))
    out = _epilogs.aux_outputs(_epilogs.epilog_spec(E.DRELU_BGRAD), "N", g, "float16")
    assert out == {"drelu_bgrad": ((2, 7, 1), (7, 1, 7), "float16", 0, 7)}
    out = _epilogs.aux_outputs(_epilogs.epilog_spec(E.BGRADB), "T", g, "float32")
    assert out["bgradb"][0] == (2, 3, 1)
    out = _epilogs.aux_outputs(_epilogs.epilog_spec(E.BGRADA), "N", geom(arr((7, 5)), arr((5, 3))), "float32")
    assert out == {"bgrada": ((7,), (1,), "float32", 0, 0)}
    out = _epilogs.aux_outputs(_epilogs.epilog_spec(E.GELU_AUX_BIAS), "N", g, "float32")
    assert out["gelu_aux"][:3] == ((2, 8, 3), (24, 1, 8), "float32")
