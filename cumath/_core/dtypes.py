"""Dtype names and their relations. cumath names dtypes by NumPy-style strings ("float32", "complex64", ...);
"complex32" is the half-precision complex type (PyTorch's chalf), which NumPy lacks."""

from __future__ import annotations

__all__ = ["ARRAY_DTYPES", "ITEMSIZE", "REAL_OF", "COMPLEX_OF", "is_complex", "is_real", "dtype_name"]

ITEMSIZE = {
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
    "complex32": 4, "complex64": 8, "complex128": 16,
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "bool": 1,
    "float8_e4m3fn": 1, "float8_e5m2": 1,  # narrow precision (PyTorch tensors)
}
# dtypes that NumPy and CuPy arrays may have as operands
ARRAY_DTYPES = ("float16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32", "int64",
                "uint8", "bool")
COMPLEX_OF = {"float16": "complex32", "float32": "complex64", "float64": "complex128"}
REAL_OF = {v: k for k, v in COMPLEX_OF.items()}

_TORCH_NAMES = {"half": "float16", "float": "float32", "double": "float64", "chalf": "complex32",
                "cfloat": "complex64", "cdouble": "complex128", "complex32": "complex32"}


def is_complex(name: str) -> bool:
    return name.startswith("complex")


def is_real(name: str) -> bool:
    return name in COMPLEX_OF


def dtype_name(dtype) -> str:
    """Name of a NumPy, CuPy or PyTorch dtype (or a string) as cumath spells it."""
    if isinstance(dtype, str):
        name = dtype
    else:
        name = getattr(dtype, "name", None) or str(dtype)
    if name.startswith("torch."):
        name = name[6:]
    return _TORCH_NAMES.get(name, name)
