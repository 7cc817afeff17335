"""The CPU engine that is always there: SciPy's sparse ``@`` on a CSR view of the caller's arrays."""

from __future__ import annotations

import numpy as np

__all__ = ["SciPyEngine"]


class _Product:
    def __init__(self, csr, op: str, shape):
        self.indptr, self.indices = csr
        self.op, self.shape = op, shape

    def run(self, values, b, d, alpha, beta) -> None:
        import scipy.sparse as sp

        a = sp.csr_array((values, self.indices, self.indptr), shape=self.shape)
        if self.op == "T":
            a = a.T
        elif self.op == "H":
            a = a.T.conj()
        prod = a @ b
        if beta == 0:
            np.multiply(prod, alpha, out=d) if alpha != 1 else np.copyto(d, prod)
        else:
            if beta != 1:
                np.multiply(d, beta, out=d)
            d += prod if alpha == 1 else alpha * prod

    def set_index(self, indptr, indices) -> None:
        self.indptr, self.indices = indptr, indices

    def free(self) -> None:
        self.indptr = self.indices = None


class SciPyEngine:
    name = "scipy"
    description = "SciPy sparse"
    conj_op = True  # takes 'H' itself

    def load(self) -> None:
        import scipy.sparse  # noqa: F401  (a dependency of cumath)

    def product(self, csr, shape, op: str, dtype: str, ncols, layout: str, expected_calls: int, log):
        return _Product(csr, op, shape)
