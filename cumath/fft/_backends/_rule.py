"""Which engine 'fftw+dfti' (what 'auto' takes with FFTW and MKL installed) gives a CPU problem for which the
process has no FFTW wisdom: FFTW's heuristic plan (FFTW_ESTIMATE) or oneMKL's DFTI. Pure: shapes in, a name and
the reason out (the reason goes into the DEBUG log line of the choice).

The thresholds come from ``benchmarks/fft.py --case nowisdom`` (FFTW_ESTIMATE and DFTI against FFTW_MEASURE, in
the same rounds, per rank, size, batch and dtype; benchmarks/NOTES.md, "First calls at tuned speed, third
round"). Wherever the process has wisdom for a problem, FFTW's measured plan runs whatever this rule says.
"""

from __future__ import annotations

__all__ = ["no_wisdom_engine", "problem", "FFTW_MAX_LENGTH", "MULTI_DIM_DFTI_POINTS"]

#: 1-D transforms up to this length, alone or in batches: FFTW_ESTIMATE's plans run within ~1.2x of measured ones
#: (2048, 4096, batches of 1024-4096 along either axis), DFTI's 1.05-2x and ~1.5 us more per call. Longer ones
#: (2^13-2^20, alone or in batches): FFTW_ESTIMATE 1.2-3x, DFTI 0.7-1.5x.
FFTW_MAX_LENGTH = 4096
#: Multi-dimensional transforms of at least this many points each: FFTW_ESTIMATE 1.5-12x, DFTI 0.9-1.7x; smaller
#: ones (128 x 128): FFTW_ESTIMATE ~1.1x, DFTI ~1.4x.
MULTI_DIM_DFTI_POINTS = 1 << 15


def problem(geom) -> str:
    """A short description of ``geom`` for log lines: 'C2C complex128 1048576' or 'R2C float32 1024 x 1024,
    batch 8'."""
    sizes = " x ".join(map(str, geom.sizes))
    batch = geom.batch_size
    return f"{geom.fft_type} {geom.in_dtype} {sizes}" + (f", batch {batch}" if batch > 1 else "")


def no_wisdom_engine(geom, in_strides=None, out_strides=None) -> tuple[str, str]:
    """('fftw' or 'dfti', why) for a problem without wisdom: FFTW_ESTIMATE for 1-D transforms of up to
    :data:`FFTW_MAX_LENGTH` points (alone or in batches) and multi-dimensional ones under
    :data:`MULTI_DIM_DFTI_POINTS`; DFTI for longer and larger ones, where FFTW_ESTIMATE's plans run 1.2-12x
    slower than measured ones and DFTI's near them (its descriptor commits in 0.2-35 ms). The ratios are
    single-threaded CPU times against FFTW_MEASURE (benchmarks/fft.py --case nowisdom)."""
    sizes = geom.sizes
    batch = geom.batch_size
    alone = "one" if batch == 1 else f"a batch of {batch}"
    if len(sizes) == 1:
        n = sizes[0]
        if n <= FFTW_MAX_LENGTH:
            return "fftw", (f"{alone} 1-D transform(s) of length {n} <= {FFTW_MAX_LENGTH}: FFTW_ESTIMATE's plan "
                            f"runs near a measured one")
        return "dfti", (f"{alone} 1-D transform(s) of length {n} > {FFTW_MAX_LENGTH}: FFTW_ESTIMATE's plans run "
                        f"1.2-3x slower than measured ones, DFTI's near them")
    points = 1
    for n in sizes:
        points *= n
    if points < MULTI_DIM_DFTI_POINTS:
        return "fftw", (f"{alone} {len(sizes)}-D transform(s) of {points} points < {MULTI_DIM_DFTI_POINTS}: "
                        f"FFTW_ESTIMATE's plan runs near a measured one")
    return "dfti", (f"{alone} {len(sizes)}-D transform(s) of {points} points: FFTW_ESTIMATE's multi-dimensional "
                    f"plans run up to 12x slower than measured ones, DFTI's near them")
