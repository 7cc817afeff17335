"""MatmulOptions, MatmulPlanPreferences, memory limits, enums and CPU-detectable argument errors of
cumath.linalg.advanced (no GPU needed)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import cumath.linalg.advanced as la
from cumath.linalg.advanced import MatmulComputeType as CT
from cumath.linalg.advanced._options import data_type_name, parse_memory_limit


def test_public_names_match_nvmath_python():
    for name in ("matmul", "Matmul", "Algorithm", "MatmulOptions", "MatmulPlanPreferences", "MatmulEpilog",
                 "MatmulComputeType", "MatmulQuantizationScales", "MatmulNumericalImplFlags", "MatmulReductionScheme",
                 "MatmulInnerShape", "MatmulEpilogPreferences", "matrix_qualifiers_dtype"):
        assert hasattr(la, name), name
    assert la.MatmulComputeType.COMPUTE_32F_FAST_TF32 == 77 and la.MatmulEpilog.GELU_AUX_BIAS == 164
    q = np.zeros(3, dtype=la.matrix_qualifiers_dtype)
    assert q["is_conjugate"].dtype == np.int16


@pytest.mark.parametrize("value,expected", [
    (1024, 1024), (1.5e9, 1_500_000_000), ("8 GiB", 8 << 30), ("8GiB", 8 << 30), ("512 MB", 512_000_000),
    ("512mib", 512 << 20), ("1.5 GB", 1_500_000_000), ("50%", 500), ("100 %", 1000), ("0", 0), ("2k", 2000),
])
def test_memory_limit(value, expected):
    assert parse_memory_limit(value, total_bytes=1000) == expected


@pytest.mark.parametrize("value,exc,match", [
    ("lots", ValueError, "is not understood"), ("5 parsecs", ValueError, "unknown unit 'parsecs'"),
    ("150%", ValueError, "within 0% and 100%"), (-1, ValueError, "non-negative"), (True, TypeError, "not a bool"),
    ([1], TypeError, "not list"),
])
def test_memory_limit_errors(value, exc, match):
    with pytest.raises(exc, match=match):
        parse_memory_limit(value, 1000)
    with pytest.raises(exc):
        la.MatmulOptions(memory_limit=value)


def test_options():
    o = la.MatmulOptions(compute_type=77, memory_limit="1 GiB", logger=logging.getLogger("x"))
    assert o.compute_type is CT.COMPUTE_32F_FAST_TF32
    assert o == la.MatmulOptions(compute_type=CT.COMPUTE_32F_FAST_TF32, memory_limit="1 GiB")  # logger not compared
    assert hash(o) == hash(la.MatmulOptions(compute_type=77, memory_limit="1 GiB"))
    with pytest.raises(ValueError, match="compute_type=12 is not supported; the allowed values are"):
        la.MatmulOptions(compute_type=12)
    with pytest.raises(ValueError, match="blocking='no' is not supported"):
        la.MatmulOptions(blocking="no")
    with pytest.raises(ValueError, match="sm_count_target=-1"):
        la.MatmulOptions(sm_count_target=-1)
    with pytest.raises(ValueError, match="result_type='int4' is not supported"):
        la.MatmulOptions(result_type="int4")
    with pytest.raises(TypeError, match="logger must be a logging.Logger"):
        la.MatmulOptions(logger="log")
    with pytest.raises(ValueError, match=r"inplace=1 is not supported; the allowed values are \[True, False\]"):
        la.MatmulOptions(inplace=1)
    assert data_type_name(0, "t") == "float32" and data_type_name("torch.bfloat16", "t") == "bfloat16"
    assert data_type_name(28, "t") == "float8_e4m3fn"


def test_preferences():
    p = la.MatmulPlanPreferences(limit=4, epilog={"aux_type": "float8_e4m3fn"})
    assert isinstance(p.epilog, la.MatmulEpilogPreferences) and hash(p)
    with pytest.raises(ValueError, match="limit=0 must be an int within 1 and 1024"):
        la.MatmulPlanPreferences(limit=0)
    with pytest.raises(ValueError, match="reduction_scheme_mask=8"):
        la.MatmulPlanPreferences(reduction_scheme_mask=8)
    with pytest.raises(TypeError, match="epilog preferences must be a MatmulEpilogPreferences"):
        la.MatmulPlanPreferences(epilog=3)


# --------------------------------------------------------------- argument errors found before the GPU is used
def test_shape_mismatch_names_the_dimensions():
    with pytest.raises(ValueError, match=r"a is 4 x 5 .* b is 6 x 3 .* \(K=5\) must equal the number of rows of b \(K=6\)"):
        la.Matmul(np.ones((4, 5)), np.ones((6, 3)))
    with pytest.raises(ValueError, match="batch dimension 0 is 2 in a and 3 in b"):
        la.matmul(np.ones((2, 4, 5)), np.ones((3, 5, 3)))


def test_dtype_errors_before_the_gpu():
    with pytest.raises(TypeError, match="the operands must have one dtype; supported"):
        la.Matmul(np.ones((4, 5), np.float32), np.ones((5, 3)))
    with pytest.raises(TypeError, match="is not supported by cuBLASLt matmul"):
        la.Matmul(np.ones((4, 5), np.int32), np.ones((5, 3), np.int32))
    with pytest.raises(ValueError, match="compute_type COMPUTE_32F_FAST_TF32 is not supported for float64"):
        la.Matmul(np.ones((4, 5)), np.ones((5, 3)), options={"compute_type": CT.COMPUTE_32F_FAST_TF32})


def test_fp8_without_scales():
    torch = pytest.importorskip("torch")
    a = torch.ones(16, 16).to(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match=r"FP8 matmul needs quantization_scales for \['a', 'b', 'd'\]"):
        la.Matmul(a, a)
    with pytest.raises(ValueError, match="quantization_scales apply to narrow-precision"):
        la.Matmul(np.ones((4, 5)), np.ones((5, 3)), quantization_scales={"a": 1.0})


def test_other_argument_errors():
    with pytest.raises(TypeError, match="unknown matmul options"):
        la.Matmul(np.ones((4, 5)), np.ones((5, 3)), options={"colour": 1})
    with pytest.raises(TypeError, match="a numpy array is a numpy array|is a torch array while a is a numpy"):
        torch = pytest.importorskip("torch")
        la.Matmul(np.ones((4, 5)), torch.ones(5, 3, dtype=torch.float64))
    with pytest.raises(TypeError, match="alpha must be a number"):
        la.Matmul(np.ones((4, 5)), np.ones((5, 3)), alpha="2")
    with pytest.raises(ValueError, match="conjugating c is not supported"):
        q = np.zeros(3, dtype=la.matrix_qualifiers_dtype)
        q["is_conjugate"][2] = 1
        la.Matmul(np.ones((4, 5), np.complex64), np.ones((5, 3), np.complex64), np.ones((4, 3), np.complex64),
                  qualifiers=q)
