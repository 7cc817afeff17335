"""Test systems of the sparse direct solver and their NumPy float64 (complex128) references."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

DTYPES = ("float32", "float64", "complex64", "complex128")
TYPES_VIEWS = [("general", "full"), ("symmetric", "full"), ("symmetric", "upper"), ("symmetric", "lower"),
               ("hermitian", "full"), ("hermitian", "upper"), ("hermitian", "lower"), ("spd", "full"),
               ("spd", "lower"), ("hpd", "upper"), ("hpd", "full")]
_TOL = {"float32": 2e-3, "complex64": 2e-3, "float64": 1e-9, "complex128": 1e-9}


def rng(seed=None):
    return np.random.default_rng(seed)


def random_sparse(n, dtype, density=0.1, seed=0, diag=0.0):
    """A random sparse CSR array (fresh values, never all zeros), plus ``diag`` times the identity."""
    r = rng(seed)
    m = sp.random_array((n, n), density=density, format="csr", rng=r, dtype=np.float64)
    if np.dtype(dtype).kind == "c":
        m = m + 1j * sp.random_array((n, n), density=density, format="csr", rng=r, dtype=np.float64)
    m = m - 0.5 * (m != 0)  # values on both sides of zero
    if diag:
        m = m + diag * sp.eye_array(n)
    return sp.csr_array(m).astype(dtype)


def system(n, dtype, mtype="general", seed=0, density=0.15):
    """A well-conditioned matrix of type ``mtype`` (full storage)."""
    m = random_sparse(n, dtype, density, seed)
    eye = sp.eye_array(n, dtype=dtype)
    if mtype == "general":
        full = m + 2.0 * eye
    elif mtype == "symmetric":
        full = m + m.T + 2.0 * eye
    elif mtype == "hermitian":
        full = m + m.conj().T + 2.0 * eye
    else:  # spd, hpd
        full = m @ m.conj().T + n * eye
    return sp.csr_array(full).astype(dtype)


def view_of(full, view):
    if view == "upper":
        return sp.csr_array(sp.triu(full, format="csr"))
    if view == "lower":
        return sp.csr_array(sp.tril(full, format="csr"))
    return full


def reference(full, b):
    """The float64/complex128 solution of ``full @ x = b`` by a dense NumPy solve."""
    return np.linalg.solve(full.toarray().astype(np.complex128), np.asarray(b).astype(np.complex128))


def assert_solution(x, full, b, dtype):
    x = np.asarray(x)
    assert x.dtype == np.dtype(dtype), (x.dtype, dtype)
    assert x.shape == np.shape(b)
    ref = reference(full, b)
    err = np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300)
    assert err < _TOL[dtype], f"relative error {err:.3g} for {dtype}"
    assert not np.all(x == 0)
