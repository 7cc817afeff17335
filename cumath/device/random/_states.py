"""Arrays of cuRAND generator states in GPU memory, one state per thread (``StatesPhilox4_32_10(n)``...).

Each is a one-dimensional array of records whose size and alignment are those of the C state type (read from
``curand_kernel.h``); ``states[i]`` inside a kernel is the i-th state, by reference, to pass to ``random.init``,
``random.normal``... The memory comes from numba-cuda (``cuda.device_array``), the caller's numba context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._shim import state_layouts

if TYPE_CHECKING:
    from typing import Any

__all__ = ["States", "StatesXORWOW", "StatesPhilox4_32_10", "StatesMRG32k3a", "StatesSobol32", "StatesSobol64",
           "StatesScrambledSobol32", "StatesScrambledSobol64", "state_dtype", "FIELD_PREFIX"]

FIELD_PREFIX = "cumath_curand_"


def state_dtype(generator: Any) -> Any:
    """The NumPy record dtype of one state (one opaque field; its name identifies the generator).

    ``generator``: a States class or array (``random.StatesPhilox4_32_10``) or a generator name ("philox"). Inside
    a kernel, ``cuda.local.array(1, dtype=state_dtype(...))`` holds a private copy of a thread's state: copied in
    once (``st[0] = states[i]``), drawn from (``random.normal4(st[0])``) and stored back (``states[i] = st[0]``),
    it stays in registers instead of going through global memory on every draw."""
    import numpy as np

    if isinstance(generator, States) or (isinstance(generator, type) and issubclass(generator, States)):
        generator = generator.generator
    layouts = state_layouts()
    if generator not in layouts:
        raise ValueError(f"unknown generator {generator!r}; expected a States class or one of {sorted(layouts)}")
    size, align = layouts[generator]
    word = {16: "<u8", 8: "<u8", 4: "<u4"}.get(align, "u1")
    n = size // np.dtype(word).itemsize
    return np.dtype([(FIELD_PREFIX + generator, word, (n,))])


class States:
    """An array of ``size`` states of one generator in GPU memory (see the subclasses)."""

    generator: str = ""

    def __init__(self, size: Any) -> None:
        from ..._core.numba_compat import import_numba_cuda
        from .._common import positive_int

        self._size = positive_int(size, "size")
        cuda = import_numba_cuda(feature="cumath.device.random")
        self.dtype = state_dtype(self.generator)
        self.array = cuda.device_array(self._size, dtype=self.dtype)

    def __len__(self) -> int:
        return self._size

    @property
    def size(self) -> int:
        """How many states the array holds."""
        return self._size

    @property
    def shape(self) -> tuple[int]:
        """``(size,)``."""
        return (self._size,)

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.array.__cuda_array_interface__

    @property
    def _numba_type_(self):
        from numba.cuda.typing.typeof import typeof

        return typeof(self.array)

    def copy_to_host(self) -> Any:
        return self.array.copy_to_host()

    def __repr__(self):
        return f"{type(self).__name__}({self._size})"


def _states_class(name: str, generator: str, doc: str):
    return type(name, (States,), {"generator": generator, "__doc__": doc, "__module__": __name__})


StatesXORWOW = _states_class("StatesXORWOW", "xorwow", "XORWOW states (curandStateXORWOW_t).")
StatesPhilox4_32_10 = _states_class("StatesPhilox4_32_10", "philox",
                                    "Philox4x32-10 states (curandStatePhilox4_32_10_t).")
StatesMRG32k3a = _states_class("StatesMRG32k3a", "mrg", "MRG32k3a states (curandStateMRG32k3a_t).")
StatesSobol32 = _states_class("StatesSobol32", "sobol32", "Sobol 32-bit quasi-random states.")
StatesSobol64 = _states_class("StatesSobol64", "sobol64", "Sobol 64-bit quasi-random states.")
StatesScrambledSobol32 = _states_class("StatesScrambledSobol32", "scrambled_sobol32",
                                       "Scrambled Sobol 32-bit quasi-random states.")
StatesScrambledSobol64 = _states_class("StatesScrambledSobol64", "scrambled_sobol64",
                                       "Scrambled Sobol 64-bit quasi-random states.")
