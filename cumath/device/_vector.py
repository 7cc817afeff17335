"""Half-precision vector types of the device APIs: :data:`float16x2` and :data:`float16x4`.

cuFFTDx computes half-precision FFTs two at a time ("implicit type batching"): a complex value holds the real
parts of two FFTs in one ``half2`` and their imaginary parts in another, so ``FFT.value_type`` is
:data:`float16x4` (``x, y``: real parts of FFTs 0 and 1; ``z, w``: imaginary parts) and a real value of an
r2c/c2r FFT is :data:`float16x2` (``x``: FFT 0, ``y``: FFT 1).

Inside a numba-cuda kernel the objects are dtypes (``cuda.local.array(n, dtype=float16x4)``) and constructors
(``float16x4(r0, r1, i0, i1)``, arguments cast to float16), with ``.x .y .z .w`` on their values. On the host
they are plain objects; numba's typing is attached on first use (``_numba_type_``), so importing this module
imports neither numba nor NumPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, NoReturn

    import numpy as np

__all__ = ["HalfVector", "float16x2", "float16x4", "VECTORS"]

_ATTRS = ("x", "y", "z", "w")


class HalfVector:
    """A vector of ``count`` float16 values, usable as a dtype and a constructor inside kernels."""

    def __init__(self, name: str, count: int):
        self.name = name
        self.count = count
        self.attributes = _ATTRS[:count]

    @property
    def itemsize(self) -> int:
        return 2 * self.count

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        """A NumPy structured dtype with the same layout (fields x, y[, z, w] of float16), for host arrays."""
        import numpy as np

        return np.dtype([(a, np.float16) for a in self.attributes])

    def __call__(self, *args: Any) -> NoReturn:
        raise TypeError(f"{self.name} is constructed inside numba-cuda kernels only; on the host, use "
                        f"{self.name}.numpy_dtype for arrays of it")

    def __repr__(self):
        return f"cumath.device.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module-level singleton

    @property
    def _numba_type_(self):
        try:
            from ._numba_vectors import vector_class_type

            return vector_class_type(self.name)
        except AttributeError as exc:  # numba would take it for "no such attribute" and hide it
            raise RuntimeError(f"could not make the numba type of {self.name}: {exc}") from exc


float16x2 = HalfVector("float16x2", 2)
float16x4 = HalfVector("float16x4", 4)
VECTORS = {v.name: v for v in (float16x2, float16x4)}
