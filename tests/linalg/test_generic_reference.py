"""NumPy float64 references of cumath.linalg.matmul (structured operands through qualifiers), shared by the
generic matmul tests, and checks of the references themselves."""

from __future__ import annotations

import numpy as np

from cumath.linalg import (DiagonalMatrixQualifier, DiagType, FillMode, GeneralMatrixQualifier,
                           HermitianMatrixQualifier, SymmetricMatrixQualifier, TriangularMatrixQualifier,
                           matrix_qualifiers_dtype)
from helpers.matrix import random_array, to_numpy
from helpers.reference import rel_error

WIDE = {"float32": np.float64, "float64": np.float64, "complex64": np.complex128, "complex128": np.complex128}
EPS = {"float32": 3e-6, "complex64": 3e-6, "float64": 1e-14, "complex128": 1e-14}


def qualifier(kind: str, conjugate=False, uplo="L", diag="N", incx=1):
    """One qualifier record: kind in ge, sy, he, tr, dg."""
    fill = FillMode.LOWER if uplo == "L" else FillMode.UPPER
    if kind == "ge":
        return GeneralMatrixQualifier.create(conjugate=conjugate)
    if kind == "sy":
        return SymmetricMatrixQualifier.create(conjugate=conjugate, uplo=fill)
    if kind == "he":
        return HermitianMatrixQualifier.create(conjugate=conjugate, uplo=fill)
    if kind == "tr":
        return TriangularMatrixQualifier.create(conjugate=conjugate, uplo=fill,
                                                diag=DiagType.UNIT if diag == "U" else DiagType.NON_UNIT)
    if kind == "dg":
        return DiagonalMatrixQualifier.create(conjugate=conjugate, incx=incx)
    raise ValueError(kind)


def qualifiers(qa=None, qb=None, qc=None, n=None):
    """An array of qualifiers for a, b (and c when ``n`` is 3 or qc is given)."""
    recs = [qa if qa is not None else qualifier("ge"), qb if qb is not None else qualifier("ge")]
    if qc is not None or n == 3:
        recs.append(qc if qc is not None else qualifier("ge"))
    out = np.empty(len(recs), dtype=matrix_qualifiers_dtype)
    for i, r in enumerate(recs):
        out[i] = r
    return out


def full_matrix(x, q):
    """The dense matrix (stack) an operand with qualifier record ``q`` stands for, in float64/complex128."""
    x = to_numpy(x)
    x = x.astype(WIDE[x.dtype.name])
    abbr, conj, uplo, diag, incx = (str(q["abbreviation"]), bool(q["conjugate"]), int(q["uplo"]), int(q["diag"]),
                                    int(q["incx"]))
    lower = uplo == int(FillMode.LOWER)
    if abbr == "ge":
        m = x
    elif abbr == "dg":
        v = x[..., ::-1] if incx == -1 else x
        m = v[..., :, None] * np.eye(v.shape[-1])
    else:
        tri = np.tril(x) if lower else np.triu(x)
        strict = np.tril(x, -1) if lower else np.triu(x, 1)
        d = np.diagonal(x, axis1=-2, axis2=-1)
        eye = np.eye(x.shape[-1])
        if abbr == "sy":
            m = strict + np.swapaxes(strict, -1, -2) + d[..., :, None] * eye
        elif abbr == "he":
            m = strict + np.conj(np.swapaxes(strict, -1, -2)) + d.real[..., :, None] * eye
        else:  # tr
            m = tri if diag == int(DiagType.NON_UNIT) else strict + eye
    return np.conj(m) if conj else m


def matmul_ref(a, b, c=None, alpha=1.0, beta=0.0, quals=None):
    """alpha * op(a) @ op(b) + beta * c in float64/complex128 (numpy.matmul semantics)."""
    q = quals if quals is not None else qualifiers()
    A, B = full_matrix(a, q[0]), full_matrix(b, q[1])
    out = alpha * np.matmul(A, B)
    if c is not None:
        out = out + beta * to_numpy(c).astype(out.dtype if np.iscomplexobj(out) else WIDE[to_numpy(c).dtype.name])
    return out


def assert_matmul_close(result, ref, dtype, k):
    """Shape and relative error within a tolerance that grows with the contracted size k."""
    assert tuple(result.shape) == ref.shape, f"shape {tuple(result.shape)} != reference {ref.shape}"
    tol = EPS[str(dtype)] * max(4.0, np.sqrt(max(k, 1)))
    err = rel_error(result, ref) if np.linalg.norm(ref.ravel()) else float(np.abs(to_numpy(result)).max())
    assert err <= tol, f"relative error {err:.3e} > {tol:.1e} ({dtype}, k={k})"


# ------------------------------------------------------------------------------------ explicit batches

BATCH_SHAPES = [(3, 5, 7), (7, 3, 5), (1, 11, 2), (13, 2, 1), (5, 5, 5), (2, 7, 3)]  # (m, k, n)
BATCH_LAYOUTS = ("C", "F", "permuted", "step")


def explicit_problems(n, dtype, c_mode, same=False):
    """n problems for an explicit batch: mixed shapes (odd and prime sizes, every 7th with an implicit batch of
    2), memory layouts, conjugations (complex), alphas and betas; or n alike problems (``same``). Each is a
    dict of NumPy originals a, b, c (None without c), alpha, beta, q (qualifiers) and layouts (of a, b, c)."""
    probs = []
    cplx = str(dtype).startswith("complex")
    for i in range(n):
        m, k, nn = BATCH_SHAPES[0 if same else i % len(BATCH_SHAPES)]
        batch = (2,) if (not same and i % 7 == 5) else ()
        probs.append(dict(
            a=random_array(batch + (m, k), dtype), b=random_array((k, nn), dtype),
            c=random_array(batch + (m, nn), dtype) if c_mode != "none" else None,
            alpha=(1.5 - 0.25j * i) if cplx else 1.5 - 0.25 * i,
            beta=(0.5 + 0.5j) if cplx else (-0.75 if i % 2 else 0.5),
            q=qualifiers(qualifier("ge", conjugate=cplx and not same and i % 3 == 1),
                         qualifier("ge", conjugate=cplx and not same and i % 5 == 2)),
            layouts=(("C", "F", "C") if same else
                     (BATCH_LAYOUTS[i % 4], BATCH_LAYOUTS[(i // 2) % 4], BATCH_LAYOUTS[(i + 1) % 4]))))
    return probs


def check_explicit(out, probs, dtype, inplace=False, c_objs=None):
    """Each result against its float64 reference; in place, the result is c itself, and the reference
    becomes the next c (a next execution accumulates onto it)."""
    assert isinstance(out, list) and len(out) == len(probs)
    for i, (p, r) in enumerate(zip(probs, out)):
        ref = matmul_ref(p["a"], p["b"], p["c"], p["alpha"], p["beta"], p["q"])
        assert_matmul_close(r, ref, dtype, p["a"].shape[-1])
        if inplace:
            assert r is c_objs[i]
            p["c"] = ref.astype(dtype)


# ------------------------------------------------------------------------------------- reference checks

def test_full_matrix_structures():
    x = random_array((4, 4), "complex128")
    np.testing.assert_allclose(full_matrix(x, qualifier("sy")), full_matrix(x, qualifier("sy")).T)
    h = full_matrix(x, qualifier("he", uplo="U"))
    np.testing.assert_allclose(h, h.conj().T)
    t = full_matrix(x, qualifier("tr", uplo="U", diag="U"))
    assert np.allclose(np.tril(t, -1), 0) and np.allclose(np.diag(t), 1)
    v = random_array((3,), "float64")
    np.testing.assert_allclose(full_matrix(v, qualifier("dg", incx=-1)), np.diag(v[::-1]))


def test_reference_matches_numpy_for_general_operands():
    a, b, c = random_array((3, 5), "float64"), random_array((5, 2), "float64"), random_array((3, 2), "float64")
    np.testing.assert_allclose(matmul_ref(a, b, c, 2.0, 0.5), 2 * a @ b + 0.5 * c)
