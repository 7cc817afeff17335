"""cuRAND's device API inside numba-cuda kernels (the shape of ``nvmath.device.random``).

    compiled = random.Compile(cc=None)                   # the shim's LTO-IR for the GPU (cached on disk)

    @cuda.jit(link=compiled.files, extensions=compiled.extension)
    def init_kernel(states, seed):
        i = cuda.grid(1)
        random.init(seed, i, 0, states[i])               # seed, subsequence, offset, state

    @cuda.jit(link=compiled.files, extensions=compiled.extension)
    def kernel(states, out):
        i = cuda.grid(1)
        v = random.normal4(states[i])                    # float32x4: v.x, v.y, v.z, v.w

    states = random.StatesPhilox4_32_10(n)               # one state per thread, in GPU memory

A thread that draws many times is faster from a private copy of its state, which stays in registers (drawing
from ``states[i]`` reads and writes the state in global memory on every call; 1.3x slower over 252 draws):

    STATE = random.state_dtype(random.StatesPhilox4_32_10)
    ...
        st = cuda.local.array(1, dtype=STATE)
        st[0] = states[i]                                # copied in once
        v = random.normal4(st[0])                        # ... drawn from, as often as needed
        states[i] = st[0]                                # stored back: a next kernel continues the sequence

Generators: ``StatesXORWOW``, ``StatesPhilox4_32_10``, ``StatesMRG32k3a`` (pseudo-random: ``init(seed,
subsequence, offset, state)``), ``StatesSobol32``/``StatesSobol64`` (``init(direction_vectors, offset, state)``)
and ``StatesScrambledSobol32``/``StatesScrambledSobol64`` (``init(direction_vectors, scramble_c, offset, state)``),
with direction vectors and scramble constants from :mod:`cumath.device.random.random_helpers`.

Distributions: ``rand``, ``rand4``, ``uniform``, ``uniform_double``, ``uniform2_double``, ``uniform4``,
``uniform4_double``, ``normal``, ``normal_double``, ``normal2``, ``normal2_double``, ``normal4``,
``normal4_double``, ``log_normal*`` (``(state, mean, stddev)``), ``poisson``, ``poisson4`` (``(state, Lambda)``);
skip-ahead: ``skipahead(n, state)``, ``skipahead_sequence(n, state)``, ``skipahead_subsequence(n, state)``.
Vector results are numba-cuda vector types (``float32x4``...) with ``.x .y .z .w``.

Nothing here imports numba or loads a library until it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._core.lazy import lazy_getattr

from ._functions import DEVICE_FUNCTIONS

if TYPE_CHECKING:  # the device functions (set from DEVICE_FUNCTIONS below) and what __getattr__ loads
    from . import random_helpers
    from ._compile import Compile
    from ._functions import DeviceStub
    from ._states import (StatesMRG32k3a, StatesPhilox4_32_10, StatesScrambledSobol32, StatesScrambledSobol64,
                          StatesSobol32, StatesSobol64, StatesXORWOW, state_dtype)

    init: DeviceStub
    rand: DeviceStub
    rand4: DeviceStub
    uniform: DeviceStub
    uniform_double: DeviceStub
    uniform2_double: DeviceStub
    uniform4: DeviceStub
    uniform4_double: DeviceStub
    normal: DeviceStub
    normal_double: DeviceStub
    normal2: DeviceStub
    normal2_double: DeviceStub
    normal4: DeviceStub
    normal4_double: DeviceStub
    log_normal: DeviceStub
    log_normal_double: DeviceStub
    log_normal2: DeviceStub
    log_normal2_double: DeviceStub
    log_normal4: DeviceStub
    log_normal4_double: DeviceStub
    poisson: DeviceStub
    poisson4: DeviceStub
    skipahead: DeviceStub
    skipahead_sequence: DeviceStub
    skipahead_subsequence: DeviceStub

__all__ = ["Compile", "StatesXORWOW", "StatesPhilox4_32_10", "StatesMRG32k3a", "StatesSobol32", "StatesSobol64",
           "StatesScrambledSobol32", "StatesScrambledSobol64", "state_dtype", "random_helpers", *DEVICE_FUNCTIONS]

globals().update(DEVICE_FUNCTIONS)

_LAZY = {"Compile": "._compile", "StatesXORWOW": "._states", "StatesPhilox4_32_10": "._states",
         "StatesMRG32k3a": "._states", "StatesSobol32": "._states", "StatesSobol64": "._states",
         "StatesScrambledSobol32": "._states", "StatesScrambledSobol64": "._states", "state_dtype": "._states"}


__getattr__ = lazy_getattr(__name__, globals(), _LAZY, ("random_helpers",))
