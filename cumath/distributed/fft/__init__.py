"""Distributed FFTs (the shape of nvmath-python's ``nvmath.distributed.fft``): 2-D and 3-D, C2C/R2C/C2R, Slab
and Box (pencil) distributions, per-rank FFT plans and all-to-all transposes on CPU-only runs."""

from .._distributions import Box, Slab
from ._functions import allocate_operand, fft, ifft, irfft, rfft
from ._options import FFTDirection, FFTOptions
from ._planner import FFT

__all__ = ["FFT", "FFTOptions", "FFTDirection", "fft", "ifft", "rfft", "irfft", "allocate_operand", "Slab", "Box"]
