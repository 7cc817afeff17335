"""Tensor contractions with cumath.tensor: a binary contraction with alpha, beta and c, a ternary chain whose
pairing is chosen by cost, and a stateful contraction reused on new operands (NumPy operands on the CPU; the same
code runs on the GPU with CuPy or PyTorch CUDA operands, through cuTENSOR)."""

import numpy as np

import cumath

rng = np.random.default_rng(0)

# alpha * einsum + beta * c
a = rng.standard_normal((8, 9, 10, 11))
b = rng.standard_normal((10, 11, 6, 7))
c = rng.standard_normal((8, 9, 6, 7))
r = cumath.tensor.binary_contraction("abcd,cdef->abef", a, b, c=c, alpha=0.5, beta=2.0)
assert np.allclose(r, 0.5 * np.einsum("abcd,cdef->abef", a, b) + 2.0 * c)

# a ternary chain: (x @ y) first is far cheaper than (y @ z) first, and the planner sees it
x, y, z = rng.standard_normal((10, 500)), rng.standard_normal((500, 10)), rng.standard_normal((10, 500))
r = cumath.tensor.ternary_contraction("ij,jk,kl->il", x, y, z)
assert np.allclose(r, x @ y @ z)

# stateful: plan once, execute on new operands of the same layout; a unary operator applied as a is read
q = [cumath.tensor.Operator.OP_RELU, cumath.tensor.Operator.OP_IDENTITY]
with cumath.tensor.BinaryContraction("bij,bjk->bik", rng.standard_normal((16, 5, 6)),
                                     rng.standard_normal((16, 6, 3)), qualifiers=q) as ctr:
    ctr.plan()
    for _ in range(3):
        a2, b2 = rng.standard_normal((16, 5, 6)), rng.standard_normal((16, 6, 3))
        ctr.reset_operands(a=a2, b=b2)
        assert np.allclose(ctr.execute(alpha=3.0), 3.0 * np.maximum(a2, 0) @ b2)
print("tensor contractions: ok")
