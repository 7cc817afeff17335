"""cumath._bindings.mathdx: tables against the headers' facts, wrapper behaviour, and (with libmathdx) real calls."""

import ctypes

import pytest

from cumath._bindings import mathdx as m
from cumath.errors import LibraryError, MathDxError


def test_enum_values_from_the_headers():
    # spot checks of values read from the 0.4.2 headers, including explicit and implicit numbering
    assert m.COMMONDX_C_64UI == 31 and m.COMMONDX_FILE_ERROR == 5 and m.COMMONDX_OPTION_TARGET_CODE == 5
    assert m.CUFFTDX_DEVICE_FUNCTION_EXECUTE == 1 and m.CUFFTDX_DEVICE_FUNCTION_FFT_ID == 2
    assert m.CUFFTDX_DEVICE_FUNCTION_IS_THREAD_ACTIVE == 8 and m.CUFFTDX_OPERATOR_DEVICE_FUNCTION == 16
    assert m.CUFFTDX_TRAIT_SYMBOL_IS_THREAD_ACTIVE_NAME == 19
    assert m.CUBLASDX_TENSOR_TRAIT_OPAQUE_NAME == 4 and m.CUBLASDX_TENSOR_TRAIT_MEMORY_SPACE == 6
    assert m.CUBLASDX_DEVICE_FUNCTION_TRAIT_SYMBOL == 1 and m.CUBLASDX_OPERATOR_DIAG == 17
    assert m.CUSOLVERDX_TRAIT_SYMBOL_NAME == 2 and m.CUSOLVERDX_TRAIT_WORKSPACE_SIZE == 12
    assert m.CUSOLVERDX_FUNCTION_HEGV == 24 and m.CUSOLVERDX_OPERATOR_EIG_TYPE == 17
    assert m.CURANDDX_DEVICE_FUNCTION_GENERATE == 2 and m.CURANDDX_DEVICE_FUNCTION_SKIP_SEQUENCE == 64
    assert m.LIBMATHDX_RUNTIME == -(2 ** 63) == m.LIBMATHDX_NONE
    assert isinstance(m.cufftdxTraitType.CUFFTDX_TRAIT_STRIDE, int)
    assert m.cufftdxTraitType(6).name == "CUFFTDX_TRAIT_STRIDE"


def test_every_enum_is_an_intenum_with_unique_members():
    names = set()
    for e in m.ENUMS:
        assert issubclass(e, int)
        for name in e.__members__:
            assert name not in names, name
            names.add(name)
    assert len(m.ENUMS) == len(m.ENUM_TABLE) == 64


def test_table_prototypes_follow_the_signature_codes():
    assert m.TABLE["cufftdxGetTraitInt64s"][1] == [ctypes.c_longlong, ctypes.c_int, ctypes.c_size_t,
                                                   ctypes.POINTER(ctypes.c_longlong)]
    assert m.TABLE["cublasdxCreateTensorStrided"][1][3:6] == [ctypes.c_longlong, ctypes.POINTER(ctypes.c_longlong),
                                                              ctypes.POINTER(ctypes.c_longlong)]
    assert m.TABLE["commondxStatusToStr"] == (ctypes.c_char_p, [ctypes.c_int])
    for prefix in ("cufftdx", "cublasdx", "cusolverdx", "curanddx"):
        for suffix in ("CreateDescriptor", "DestroyDescriptor", "SetOperatorInt64", "GetTraitStr", "FinalizeCodes"):
            assert prefix + suffix in m.TABLE
    assert "curanddxGetLTOIR" not in m.TABLE  # cuRANDDx code only comes through a code handle
    assert len(m.TABLE) > 150


def test_wrapper_argument_count_is_checked():
    with pytest.raises(TypeError, match=r"cufftdxSetOperatorInt64\(\) takes 3 arguments"):
        m.cufftdxSetOperatorInt64(1, 2)


def test_error_class():
    err = MathDxError(1, "COMMONDX_INVALID_VALUE", "cufftdxSetOperatorInt64")
    assert isinstance(err, LibraryError)
    assert str(err) == "libmathdx failed with COMMONDX_INVALID_VALUE (1): cufftdxSetOperatorInt64"
    with pytest.raises(MathDxError, match="COMMONDX_INTERNAL_ERROR"):
        m.check(2)
    assert m.check(0) is None


def test_versions_and_strings(mathdx):
    assert mathdx.mathdxGetVersion() >= 402
    major, minor, patch = mathdx.mathdxGetVersionEx()
    assert 1000 * major + 100 * minor + patch == mathdx.mathdxGetVersion()
    assert len(mathdx.mathdxGetCommit()) == 40
    assert mathdx.cufftdxGetVersion()[0] >= 1
    assert "invalid" in mathdx.commondxStatusToStr(m.COMMONDX_INVALID_VALUE)  # a description, not the name
    assert mathdx.cufftdxTraitTypeToStr(m.CUFFTDX_TRAIT_STRIDE) == "CUFFTDX_TRAIT_STRIDE"


def test_every_table_function_is_exported(mathdx):
    missing = [name for name in m.TABLE if not m._L.has(name)]
    assert missing == []


def _fft_descriptor():
    h = m.cufftdxCreateDescriptor()
    m.cufftdxSetOptionStr(h, m.COMMONDX_OPTION_SYMBOL_NAME, "my_fft")  # accepted before the operators only
    for op, value in ((m.CUFFTDX_OPERATOR_SIZE, 64), (m.CUFFTDX_OPERATOR_DIRECTION, m.CUFFTDX_DIRECTION_FORWARD),
                      (m.CUFFTDX_OPERATOR_TYPE, m.CUFFTDX_TYPE_C2C),
                      (m.CUFFTDX_OPERATOR_PRECISION, m.COMMONDX_PRECISION_F64), (m.CUFFTDX_OPERATOR_SM, 900),
                      (m.CUFFTDX_OPERATOR_EXECUTION, m.COMMONDX_EXECUTION_BLOCK),
                      (m.CUFFTDX_OPERATOR_API, m.CUFFTDX_API_LMEM), (m.CUFFTDX_OPERATOR_ELEMENTS_PER_THREAD, 4)):
        m.cufftdxSetOperatorInt64(h, op, value)
    return h


def test_descriptor_traits(mathdx):
    h = _fft_descriptor()
    try:
        assert m.cufftdxIsSupported(h) == 1
        assert m.cufftdxGetTraitInt64(h, m.CUFFTDX_TRAIT_ELEMENTS_PER_THREAD) == 4
        assert m.cufftdxGetTraitInt64(h, m.CUFFTDX_TRAIT_STRIDE) == 16
        assert m.cufftdxGetTraitInt64s(h, m.CUFFTDX_TRAIT_BLOCK_DIM, 3) == [16, 1, 1]
        vt = m.cufftdxGetTraitCommondxDataType(h, m.CUFFTDX_TRAIT_VALUE_TYPE)
        assert m.commondxValueType(vt) is m.commondxValueType.COMMONDX_C_64F
        assert m.cufftdxGetTraitStr(h, m.CUFFTDX_TRAIT_SYMBOL_NAME) == "my_fft"
        n = m.cufftdxGetKnobInt64Size(h, [m.CUFFTDX_KNOB_ELEMENTS_PER_THREAD])
        assert n >= 1 and len(m.cufftdxGetKnobInt64s(h, [m.CUFFTDX_KNOB_ELEMENTS_PER_THREAD], n)) == n
    finally:
        m.cufftdxDestroyDescriptor(h)


def test_failure_status_raises_with_the_function_name(mathdx):
    h = m.cufftdxCreateDescriptor()
    try:
        with pytest.raises(MathDxError, match=r"COMMONDX_INVALID_VALUE \(1\): cufftdxSetOperatorInt64: .*invalid"):
            m.cufftdxSetOperatorInt64(h, m.CUFFTDX_OPERATOR_SIZE, -5)
    finally:
        m.cufftdxDestroyDescriptor(h)


def test_code_handle_generates_ltoir(mathdx):
    h = _fft_descriptor()
    code = m.commondxCreateCode()
    try:
        m.commondxSetCodeOptionInt64(code, m.COMMONDX_OPTION_TARGET_SM, 900)
        m.cufftdxFinalizeCode(code, h)
        assert m.commondxGetCodeNumLTOIRs(code) == 1
        blobs = m.commondxGetCodeLTOIRs(code)
        assert len(blobs) == 1 and blobs[0][:4] == b"\xed\x43\x4e\x7f"  # LTO-IR magic 0x7F4E43ED
        assert m.commondxGetCodeLTOIR(code) == blobs[0]
    finally:
        m.commondxDestroyCode(code)
        m.cufftdxDestroyDescriptor(h)
