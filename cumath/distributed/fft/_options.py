"""Options of the distributed FFT (the shape of nvmath-python 1.0's ``nvmath.distributed.fft.FFTOptions``)."""

from __future__ import annotations

import dataclasses
import logging

from ...fft._options import FFTDirection

__all__ = ["FFTOptions", "FFTDirection", "check_options"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class FFTOptions:
    """Options of :class:`cumath.distributed.fft.FFT` and of ``fft``, ``ifft``, ``rfft``, ``irfft``.

    Attributes:
        fft_type: 'C2C', 'R2C' or 'C2R'; by default C2C for complex and R2C for real operands.
        redistribute: with a Slab distribution, give the result in the input's slab (True, the default) or in
            the other slab (False: Slab.X in, Slab.Y out, one transpose less).
        last_axis_parity: 'even' or 'odd': size 2*(m-1) or 2*(m-1)+1 of a C2R result's last axis.
        decomposition: 'auto', 'slab' or 'pencil': how the ranks split the array between local transforms
            ('auto': slabs while every rank gets a slice of the two first axes, pencils beyond). A cumath addition.
        engine: 'auto', 'mkl' or 'transposes': the CPU engine. 'mkl' is oneMKL's Cluster DFT (C2C, complex64 /
            complex128, an MPI communicator, at least as many rows as ranks on the first two axes); 'transposes'
            is per-rank FFT plans with all-to-all transposes (every case); 'auto' takes the Cluster DFT where
            it measured faster (Slab.X in and out) and the transposes otherwise. A cumath addition.
        planning_effort: FFTW's planning effort of the per-rank FFTs ('estimate', 'measure', 'patient',
            'exhaustive'; None: single-process cumath's default). A cumath addition.
        blocking: True or 'auto' (host operands always block).
        logger: a ``logging.Logger`` (not part of equality).
    """

    fft_type: str | None = None
    redistribute: bool = True
    last_axis_parity: str = "even"
    decomposition: str = "auto"
    engine: str = "auto"
    planning_effort: str | None = None
    blocking: object = "auto"
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)


def check_options(options) -> FFTOptions:
    if options is None:
        return FFTOptions()
    if isinstance(options, dict):
        try:
            options = FFTOptions(**options)
        except TypeError as exc:
            names = [f.name for f in dataclasses.fields(FFTOptions)]
            raise TypeError(f"invalid FFTOptions {sorted(options)}: {exc}; the fields are {names}") from None
    if not isinstance(options, FFTOptions):
        raise TypeError(f"options must be a cumath.distributed.fft.FFTOptions, a dict or None, "
                        f"not {type(options).__name__}")
    fft_type = options.fft_type.upper() if isinstance(options.fft_type, str) else options.fft_type
    decomposition = str(options.decomposition).lower()
    if decomposition not in ("auto", "slab", "pencil"):
        raise ValueError(f"decomposition={options.decomposition!r}; the allowed values are ['auto', 'slab', 'pencil']")
    engine = str(options.engine).lower()
    if engine not in ("auto", "mkl", "transposes"):
        raise ValueError(f"engine={options.engine!r}; the allowed values are ['auto', 'mkl', 'transposes']")
    if options.blocking not in (True, "auto"):
        raise ValueError(f"blocking={options.blocking!r}; the allowed values are [True, 'auto']")
    return dataclasses.replace(options, fft_type=fft_type, decomposition=decomposition, engine=engine,
                               last_axis_parity=str(options.last_axis_parity).lower())
