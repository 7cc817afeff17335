"""Float64 NumPy references of ``epilog(alpha * a @ b + beta * c)`` for every cuBLASLt epilog, and the layouts of
the auxiliary outputs cuBLASLt writes.

Definitions (cuBLASLt, cublasLt.h): the bias (length M) is added to every column before the activation;
GELU is the tanh form ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``; RELU_AUX writes a bit-mask of
``x > 0`` over the rows of cuBLASLt's D (bit r % 8 of byte r // 8 of each column, little-endian bits), with a
leading dimension of M rounded up to 128 bits; GELU_AUX writes the activation's input ``x`` with a leading
dimension of M rounded up to 8. DRELU / DGELU multiply the product by the activation's derivative at the aux
input; the _BGRAD forms also return the sum of the result over its columns (length M); BGRADA returns the sum
of a over K (length M), BGRADB the sum of b over K (length N).

Auxiliary arrays, as cumath returns them: a column-major result (formulation 'N') gives
``(*batch, ld, N)`` column-major matrices (ld: bytes of the mask, or rows of the GELU input); a row-major
result (formulation 'T', cuBLASLt computing D^T) gives ``(*batch, M, ld)`` row-major ones (bits over N).
"""

from __future__ import annotations

import math

import numpy as np

from .matrix import to_numpy

__all__ = ["_np", "gelu", "dgelu", "product_ref", "epilog_ref", "relu_mask", "unpack_relu_mask", "gelu_aux_values",
           "rel_error", "tolerance"]

_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_PI * (x + 0.044715 * x ** 3)))


def dgelu(x):
    """d/dx of the tanh-form GELU."""
    u = _SQRT_2_PI * (x + 0.044715 * x ** 3)
    t = np.tanh(u)
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_PI * (1.0 + 3 * 0.044715 * x * x)


def _np(x):
    """A NumPy copy of any array (PyTorch bfloat16/float8 widened to float32 first)."""
    if type(x).__module__.startswith("torch"):
        import torch

        if x.dtype in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
            x = x.to(torch.float32)
    return to_numpy(x)


def _wide(x):
    x = _np(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x.astype(np.float64)


def product_ref(a, b, c=None, alpha=1.0, beta=None, conj=(False, False)):
    """alpha * a @ b + beta * c in float64 / complex128 (numpy.matmul semantics; c broadcasts)."""
    a, b = _wide(a), _wide(b)
    if conj[0]:
        a = a.conj()
    if conj[1]:
        b = b.conj()
    x = alpha * np.matmul(a, b)
    if c is not None:
        x = x + (1.0 if beta is None else beta) * _wide(c)
    return x


def _as_matrices(x, a_vec, b_vec):
    """A numpy.matmul-shaped result as (*batch, M, N)."""
    if a_vec:
        x = x[..., None, :] if not b_vec else x[..., None, None]
    elif b_vec:
        x = x[..., :, None]
    return x


def epilog_ref(name, a, b, c=None, alpha=1.0, beta=None, bias=None, aux=None, a_vec=False, b_vec=False):
    """(result, {aux name: reference}) of an epilog, all float64. ``aux`` for the backward epilogs is the
    boolean mask (DRELU*) or the GELU input (DGELU*), as (*batch, M, N) arrays."""
    x = product_ref(a, b, c, alpha, beta)
    xm = _as_matrices(x, a_vec, b_vec)
    extras = {}
    if "BIAS" in name and "BGRAD" not in name:
        bvec = _wide(bias)
        if bvec.ndim and bvec.shape[-1] == 1 and bvec.ndim >= 2:
            bvec = bvec[..., 0]
        xm = xm + bvec[..., :, None]
    if name in ("RELU", "RELU_BIAS", "RELU_AUX", "RELU_AUX_BIAS"):
        if "AUX" in name:
            extras["relu_aux"] = xm > 0
        d = np.maximum(xm, 0)
    elif name in ("GELU", "GELU_BIAS", "GELU_AUX", "GELU_AUX_BIAS"):
        if "AUX" in name:
            extras["gelu_aux"] = xm.copy()
        d = gelu(xm)
    elif name in ("DRELU", "DRELU_BGRAD"):
        d = xm * aux
        if name == "DRELU_BGRAD":
            extras["drelu_bgrad"] = d.sum(axis=-1)
    elif name in ("DGELU", "DGELU_BGRAD"):
        d = xm * dgelu(aux)
        if name == "DGELU_BGRAD":
            extras["dgelu_bgrad"] = d.sum(axis=-1)
    elif name == "BGRADA":
        d = xm
        extras["bgrada"] = np.broadcast_to(_as_mat_a(_wide(a), a_vec).sum(axis=-1), xm.shape[:-1])
    elif name == "BGRADB":
        d = xm
        extras["bgradb"] = np.broadcast_to(_as_mat_b(_wide(b), b_vec).sum(axis=-2),
                                           xm.shape[:-2] + (xm.shape[-1],))
    else:
        d = xm
    if a_vec and b_vec:
        d = d[..., 0, 0]
    elif a_vec:
        d = d[..., 0, :]
    elif b_vec:
        d = d[..., 0]
    return d, extras


def _as_mat_a(a, a_vec):
    return a[None, :] if a_vec else a


def _as_mat_b(b, b_vec):
    return b[:, None] if b_vec else b


def relu_mask(mask, kind):
    """The bit-mask array cuBLASLt writes for a boolean (*batch, M, N) mask, in cumath's aux layout."""
    mask = np.asarray(mask, dtype=bool)
    m, n = mask.shape[-2:]
    if kind == "T":  # bits over N for each of the M rows of the row-major result
        ld = -(-n // 128) * 128
        padded = np.zeros(mask.shape[:-1] + (ld,), dtype=bool)
        padded[..., :n] = mask
        return np.packbits(padded, axis=-1, bitorder="little")
    ld = -(-m // 128) * 128
    padded = np.zeros(mask.shape[:-2] + (ld, n), dtype=bool)
    padded[..., :m, :] = mask
    return np.packbits(padded, axis=-2, bitorder="little")


def unpack_relu_mask(aux, m, n, kind):
    """The boolean (*batch, M, N) mask held by a RELU_AUX output."""
    aux = _np(aux)
    if kind == "T":
        return np.unpackbits(aux, axis=-1, bitorder="little")[..., :n].astype(bool)
    return np.unpackbits(aux, axis=-2, bitorder="little")[..., :m, :].astype(bool)


def gelu_aux_values(aux, m, n, kind):
    """The (*batch, M, N) GELU inputs held by a GELU_AUX output (padding dropped)."""
    aux = _np(aux).astype(np.float64)
    return aux[..., :n] if kind == "T" else aux[..., :m, :]


_EPS = {"float16": 5e-3, "bfloat16": 3e-2, "float32": 1e-5, "float64": 1e-13, "complex64": 1e-5,
        "complex128": 1e-13, "float8_e4m3fn": 1.5e-1, "float8_e5m2": 3e-1, "tf32": 3e-3}


def tolerance(dtype: str, k: int) -> float:
    """Relative-error bound of a matmul with inner size k in ``dtype`` (grows mildly with k)."""
    return _EPS[dtype] * max(1.0, math.sqrt(k) / 4)


GELU_FLOAT64_FLOOR = 1e-9  # cuBLASLt's double GELU evaluates tanh to about 1e-10 relative, not to float64 eps


def epilog_tolerance(dtype: str, k: int, factor: float = 1.0, gelu: bool = False) -> float:
    """:func:`tolerance` of a matmul whose epilog may apply cuBLASLt's GELU (float64 GELU has a floor)."""
    tol = tolerance(dtype, k) * factor
    return max(tol, GELU_FLOAT64_FLOOR) if gelu and dtype == "float64" else tol


def rel_error(result, ref) -> float:
    r = _np(result).astype(np.complex128 if np.iscomplexobj(ref) else np.float64)
    denom = np.linalg.norm(ref.ravel())
    return float(np.linalg.norm((r - ref).ravel()) / (denom if denom else 1.0))
