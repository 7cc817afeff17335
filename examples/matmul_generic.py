"""The generic matmul: numpy.matmul semantics with alpha, beta and c, in place, structured operands through
qualifiers, explicit batches, and the stateful object. Runs on the CPU (BLAS); with a GPU, the same calls on
CuPy arrays run on cuBLAS."""
from typing import Any

import numpy as np

import cumath
from cumath.linalg import (DiagonalMatrixQualifier, DiagType, FillMode, GeneralMatrixQualifier,
                           TriangularMatrixQualifier, matrix_qualifiers_dtype)


def check(name: str, result: Any, expected: Any, tol: float = 1e-12) -> None:
    err = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    print(f"{name:44s} relative error {err:.1e}")
    assert err < tol, name


rng = np.random.default_rng(1)
a, b = rng.standard_normal((500, 64)), rng.standard_normal((64, 32))
c = rng.standard_normal((500, 32))

# d = alpha * a @ b + beta * c (c is not touched)
check("alpha * a @ b + beta * c", cumath.linalg.matmul(a, b, c, alpha=2.0, beta=0.5), 2 * a @ b + 0.5 * c)

# the same written into c: no result array, one pass over c
expected = 2 * a @ b + 0.5 * c
out = cumath.linalg.matmul(a, b, c, alpha=2.0, beta=0.5, options={"inplace": True})
assert out is c
check("in place (into c)", c, expected)

# batches broadcast as in numpy.matmul; 1-D operands are promoted
stack = rng.standard_normal((8, 100, 64))
check("batched (8, 100, 64) @ (64, 32)", cumath.linalg.matmul(stack, b), stack @ b)
check("vector @ matrix", cumath.linalg.matmul(a[0], b), a[0] @ b)

# structured operands: a triangular a (upper triangle, unit diagonal) and a diagonal b given by its vector
t = rng.standard_normal((64, 64))
q = np.full(2, GeneralMatrixQualifier.create(), dtype=matrix_qualifiers_dtype)
q[0] = TriangularMatrixQualifier.create(uplo=FillMode.UPPER, diag=DiagType.UNIT)
tri = np.triu(t, 1) + np.eye(64)
check("triangular a (trmm)", cumath.linalg.matmul(t, b, qualifiers=q), tri @ b)
x = rng.standard_normal(32)
q = np.full(2, GeneralMatrixQualifier.create(), dtype=matrix_qualifiers_dtype)
q[1] = DiagonalMatrixQualifier.create()
check("diagonal b (a scaling of columns)", cumath.linalg.matmul(b, x, qualifiers=q), b * x)

# explicit batching: a list of problems of different shapes
outs = cumath.linalg.matmul([a, t], [b, t])
check("explicit batch, problem 0", outs[0], a @ b)
check("explicit batch, problem 1", outs[1], t @ t)

# the stateful object: plan once, feed each result back in as the next operand
m = rng.standard_normal((64, 64)) / 8
with cumath.linalg.Matmul(m, m) as mm:
    mm.plan()
    ref = m
    for step in range(3):
        d = mm.execute()
        ref = ref @ m
        check(f"stateful power, step {step}", d, ref)
        mm.reset_operands_unchecked(a=d)
