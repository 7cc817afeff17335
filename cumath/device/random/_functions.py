"""The device functions of ``cumath.device.random`` as Python objects: typed by numba when a kernel uses them
(``_numba_type_`` imports the numba layer), an error when called on the host."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._common import KernelOnlyFunction
from ._shim import FUNCTIONS

if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["DeviceStub", "DEVICE_FUNCTIONS"]

_SIGNATURES = {
    "init": "init(seed, subsequence, offset, state) for XORWOW/Philox4_32_10/MRG32k3a; "
            "init(direction_vectors, offset, state) for Sobol32/64; "
            "init(direction_vectors, scramble_c, offset, state) for ScrambledSobol32/64",
    "skipahead": "skipahead(n, state)", "skipahead_sequence": "skipahead_sequence(n, state)",
    "skipahead_subsequence": "skipahead_subsequence(n, state)",
}


class DeviceStub(KernelOnlyFunction):
    """A cuRAND device function usable inside numba-cuda kernels."""

    def __init__(self, name: str, generators: tuple, doc: str) -> None:
        super().__init__(name, doc)
        self.generators = generators
        self.__module__ = "cumath.device.random"  # where pickle finds it by name

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(f"cumath.device.random.{self.__name__} is a device function: call it inside a numba-cuda "
                        f"kernel compiled with link=Compile().files")

    def __repr__(self):
        return f"<cumath.device.random.{self.__name__}>"

    def _typing(self):
        from ._numba_random import function_type

        return function_type(self)


def _make() -> dict:
    generators: dict[str, list] = {}
    for f in FUNCTIONS:
        generators.setdefault(f.name, []).extend(f.generators)
    out = {}
    for name, gens in generators.items():
        sig = _SIGNATURES.get(name)
        if sig is None:
            f = next(f for f in FUNCTIONS if f.name == name)
            args = ", ".join(["state"] + [n for n, _ in f.inputs])
            sig = f"{name}({args})"
        out[name] = DeviceStub(name, tuple(gens), f"{sig}: cuRAND's device function for states of "
                                                  f"{', '.join(gens)}.")
    return out


DEVICE_FUNCTIONS = _make()
