"""FFT options and enums (the shape of nvmath-python's, plus cumath's CPU engine and planning choices)."""

from __future__ import annotations

import dataclasses
import enum
import logging
from typing import Literal

from .._core.options import check_allocator, check_choice, set_choice

__all__ = ["FFTOptions", "FFTDirection", "CPU_ENGINES", "PLANNING_EFFORTS", "CALLBACK_FUSION"]

CPU_ENGINES = ("auto", "fftw", "mkl", "scipy", "dfti", "fftw+dfti", "nvpl")
PLANNING_EFFORTS = ("estimate", "measure", "patient", "exhaustive")
CALLBACK_FUSION = ("auto", "fused", "separate")


class FFTDirection(enum.IntEnum):
    """Direction of a C2C transform (values are cuFFT's and FFTW's signs)."""

    FORWARD = -1
    INVERSE = 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class FFTOptions:
    """Options of :class:`cumath.fft.FFT` and the functions ``fft``, ``ifft``, ``rfft`` and ``irfft``.

    Attributes:
        fft_type: 'C2C', 'R2C' or 'C2R'; by default C2C for complex and R2C for real operands.
        inplace: overwrite the operand with the result (C2C only).
        last_axis_parity: 'even' or 'odd': size 2*(m-1) or 2*(m-1)+1 of a C2R result's last axis.
        result_layout: 'natural' (the operand's memory order) or 'optimized' (batch axes outermost, the
            transformed axes innermost; what the libraries prefer).
        blocking: True waits for GPU work to finish; 'auto' returns at once for GPU operands (host
            operands always wait so the result can be read).
        allocator: device memory for workspaces and staging (see :mod:`cumath.memory`).
        logger: a ``logging.Logger``; by default the ``cumath.fft`` loggers.
        device_id: kept for nvmath-python compatibility; prefer ``execution=ExecutionCUDA(device_id=...)``.
        cpu_engine: (cumath) CPU FFT engine: 'auto' ('fftw+dfti' when FFTW and MKL are both installed: FFTW's
            plan where the process has wisdom for the problem; where it has none, FFTW_ESTIMATE for 1-D
            transforms of up to 4096 points (alone or in batches) and multi-dimensional ones under 2^15 points,
            MKL's DFTI for longer and larger ones, so a first call needs no measured planning and runs
            near a measured plan's speed; the choice and its reason are logged at DEBUG, and only the library
            chosen is loaded; then NVPL FFT on Arm, FFTW, MKL's FFTW interface, SciPy's pocketfft), 'fftw',
            'mkl' (MKL's FFTW3 interface), 'dfti' (MKL's DFTI), 'fftw+dfti', 'nvpl' (NVIDIA NVPL FFT, Arm only:
            the ``nvpl-fft`` wheel that the cpu extra brings on aarch64; untested on Arm hardware) or 'scipy'.
            The environment variable
            CUMATH_FFT_CPU_ENGINE sets the default. With CUMATH_FFT_BACKGROUND_PLANNING=measure (opt-in: it
            uses the caller's cores), 'fftw+dfti' measures FFTW plans of the problems DFTI serves in a
            background thread and switches to them when they are ready.
        planning_effort: (cumath) how hard FFTW searches for a fast plan: 'estimate' (heuristic, milliseconds),
            'measure', 'patient', 'exhaustive' (times candidate algorithms; seconds to minutes). None,
            the default, plans with 'estimate' unless saved wisdom of a measured plan exists for the problem,
            in which case that plan is used at no cost. What measured planning learns is saved on disk
            (see :func:`cumath.config.cache_dir`).
        overwrite_input: (cumath) allow a C2R FFT of a GPU operand to overwrite the operand: cuFFT's C2R
            destroys its input, so by default it works on a copy (one more pass over the operand); with
            True and an operand dense in the canonical layout (batch axes outermost, e.g. C order) cuFFT
            reads it directly. Like SciPy's ``overwrite_x``: a permission, ignored elsewhere.
        callback_fusion: (cumath, an addition to nvmath-python's options) how GPU plans run ``prolog``/
            ``epilog`` callbacks: 'fused' links them into cuFFT's kernels; 'separate' runs each as an
            elementwise pass of its own (the same compiled callback, offsets and user data) before (prolog)
            or after (epilog) a plain cuFFT; 'auto' (the default) chooses per plan from measurements:
            cuFFT 12's callback kernels cost 1.2-2.9x its plain ones except for long 1-D transforms, while a
            pass costs one read and one write of the array (see ``cumath.fft._separate``). The choice is
            logged at INFO.
    """

    fft_type: Literal["C2C", "R2C", "C2R"] | None = None
    inplace: bool = False
    last_axis_parity: Literal["even", "odd"] = "even"
    result_layout: Literal["natural", "optimized"] = "optimized"
    device_id: int | None = None
    logger: logging.Logger | None = dataclasses.field(default=None, compare=False)
    blocking: Literal[True, "auto"] = "auto"
    allocator: object | None = dataclasses.field(default=None, compare=False)
    cpu_engine: Literal["auto", "fftw", "mkl", "scipy", "dfti", "fftw+dfti", "nvpl"] = "auto"
    planning_effort: Literal["estimate", "measure", "patient", "exhaustive"] | None = None
    overwrite_input: bool = False
    callback_fusion: Literal["auto", "fused", "separate"] = "auto"

    def __post_init__(self):
        if self.fft_type is not None:
            set_choice(self, "fft_type", ("C2C", "R2C", "C2R"))
        check_choice("inplace", self.inplace, (True, False))
        check_choice("overwrite_input", self.overwrite_input, (True, False))
        set_choice(self, "last_axis_parity", ("even", "odd"))
        set_choice(self, "result_layout", ("natural", "optimized"))
        if self.blocking is not True and self.blocking != "auto":
            raise ValueError(f"blocking={self.blocking!r} is not supported; the allowed values are [True, 'auto']")
        set_choice(self, "cpu_engine", CPU_ENGINES)
        set_choice(self, "callback_fusion", CALLBACK_FUSION)
        if self.planning_effort is not None:
            set_choice(self, "planning_effort", PLANNING_EFFORTS)
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise TypeError(f"logger must be a logging.Logger, not {type(self.logger).__name__}")
        check_allocator(self.allocator)

    # Options are part of plan-cache keys, hashed at every stateless call: the hash of the fields that take
    # part in equality is computed once (and not pickled: string hashes differ between processes).
    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self) if f.compare))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state
