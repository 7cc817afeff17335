"""``load(array, index)`` and ``store(array, index, value)``: one vector memory access per element, inside
numba-cuda kernels.

numba lays a complex number out as a structure of two floats aligned to one float, so ``x[i]`` on a complex64
array becomes two 4-byte loads (complex128: two 8-byte loads), and a signed index costs a wrap-around test per
access. ``load``/``store`` issue one ``ld.global.v2.f32`` / ``v2.f64`` (or the scalar ``b32``/``b64`` of a real
array) with no wrap-around: the block FFT's rows of benchmarks/device.py move 3% faster (benchmarks/NOTES.md).
``index`` is an integer or a tuple with one integer per dimension, non-negative and in bounds (not checked,
like numba's own indexing). Global memory only (device arrays passed to the kernel). Nothing here imports numba.
"""

from __future__ import annotations

from ._common import KernelOnlyFunction

__all__ = ["load", "store"]


class _Access(KernelOnlyFunction):
    def _typing(self):
        from ._numba_access import access_type

        return access_type(self)


load = _Access("load", "load(array, index): the element at index of a global-memory array, read in one vector "
                       "access (complex64: one 8-byte load).")
store = _Access("store", "store(array, index, value): write value at index of a global-memory array in one "
                         "vector access.")
