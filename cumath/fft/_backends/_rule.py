"""Which engine 'fftw+dfti' (what 'auto' takes with FFTW and MKL installed) gives a CPU problem for which the
process has no FFTW wisdom: FFTW's heuristic plan (FFTW_ESTIMATE) or oneMKL's DFTI. Pure: shapes in, a name and
the reason out (the reason goes into the DEBUG log line of the choice).

The thresholds come from ``benchmarks/fft.py --case nowisdom`` (FFTW_ESTIMATE and DFTI against FFTW_MEASURE, in
the same rounds, per rank, size, batch and dtype; benchmarks/NOTES.md, "First calls at tuned speed, third
round"). Wherever the process has wisdom for a problem, FFTW's measured plan runs whatever this rule says.
"""

from __future__ import annotations

__all__ = ["no_wisdom_engine", "problem", "SMALL_POINTS", "BATCHED_FFTW_MAX_LENGTH"]

#: Below this many points per plan FFTW's heuristic plan runs as fast as its measured one, plans in well under a
#: millisecond and starts ~1.5 us sooner per call than DFTI (a 2048-point complex128 FFT: 4 against 6 us).
SMALL_POINTS = 1 << 15
#: Batches of 1-D transforms up to this length: FFTW_ESTIMATE's plans run within ~1.1x of measured ones (4096 x
#: 1024 complex64, 256 x 4096 complex128, 1024 x 256 along axis 0), DFTI's batch loop 1.1-1.5x.
BATCHED_FFTW_MAX_LENGTH = 1 << 14


def problem(geom) -> str:
    """A short description of ``geom`` for log lines: 'C2C complex128 1048576' or 'R2C float32 1024 x 1024,
    batch 8'."""
    sizes = " x ".join(map(str, geom.sizes))
    batch = geom.batch_size
    return f"{geom.fft_type} {geom.in_dtype} {sizes}" + (f", batch {batch}" if batch > 1 else "")


def no_wisdom_engine(geom, in_strides=None, out_strides=None) -> tuple[str, str]:
    """('fftw' or 'dfti', why) for a problem without wisdom: FFTW_ESTIMATE for small problems and for batches of
    1-D transforms of moderate length; DFTI for multi-dimensional transforms and single long 1-D ones, where
    FFTW_ESTIMATE's plans run 1.4-7x slower than measured ones and DFTI's within ~1.3x (its descriptor commits in
    0.4-35 ms)."""
    batch = geom.batch_size
    points = batch
    for n in geom.sizes:
        points *= n
    if points < SMALL_POINTS:
        return "fftw", f"{points} points < {SMALL_POINTS}: FFTW_ESTIMATE's plan is as fast as a measured one"
    if len(geom.sizes) > 1:
        return "dfti", (f"a {len(geom.sizes)}-D transform: FFTW_ESTIMATE's multi-dimensional plans run up to 7x "
                        f"slower than measured ones, DFTI's near them")
    n = geom.sizes[0]
    if batch > 1 and n <= BATCHED_FFTW_MAX_LENGTH:
        return "fftw", (f"a batch of {batch} 1-D transforms of length {n} <= {BATCHED_FFTW_MAX_LENGTH}: "
                        f"FFTW_ESTIMATE's plan runs near a measured one, DFTI's batch loop slower")
    return "dfti", (f"{'a batch of long 1-D transforms' if batch > 1 else 'one long 1-D transform'} ({n} points): "
                    f"FFTW_ESTIMATE's plans run 1.4-2x slower than measured ones, DFTI's near them")
