"""The exceptions cumath raises: one base class, typed library errors, state and layout errors."""

from __future__ import annotations

__all__ = [
    "CumathError",
    "LibraryError",
    "LibraryNotFoundError",
    "InvalidStateError",
    "UnsupportedLayoutError",
    "CUFFTError",
    "CUDARuntimeError",
    "FFTWError",
    "CUBLASError",
    "CUBLASLtError",
    "BLASError",
    "NVRTCError",
    "NVJitLinkError",
    "CUDADriverError",
    "MathDxError",
    "CURANDError",
    "CUDSSError",
    "PARDISOError",
    "SingularMatrixError",
    "CUSOLVERError",
    "LAPACKError",
    "ScaLAPACKError",
    "CollectiveError",
]


class CumathError(Exception):
    """Base class of every error raised by cumath itself."""


class LibraryError(CumathError, RuntimeError):
    """A native library returned a failure status.

    Attributes: ``library`` (e.g. ``"cufft"``), ``status`` (the integer code) and ``name`` (the C enum name).
    """

    library = "native library"

    def __init__(self, status: int, name: str | None = None, detail: str | None = None):
        self.status = int(status)
        self.name = name or f"status {self.status}"
        msg = f"{self.library} failed with {self.name} ({self.status})"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)


class CUFFTError(LibraryError):
    library = "cuFFT"


class CUDARuntimeError(LibraryError):
    library = "CUDA runtime"


class FFTWError(LibraryError):
    library = "FFTW"


class CUBLASError(LibraryError):
    library = "cuBLAS"


class CUBLASLtError(LibraryError):
    library = "cuBLASLt"


class BLASError(LibraryError):
    library = "BLAS"


class NVRTCError(LibraryError):
    library = "NVRTC"


class NVJitLinkError(LibraryError):
    library = "nvJitLink"


class CUDADriverError(LibraryError):
    library = "CUDA driver"


class MathDxError(LibraryError):
    """libmathdx (cuFFTDx/cuBLASDx/cuSOLVERDx code generation) failed; ``detail`` carries its last error text."""

    library = "libmathdx"


class CURANDError(LibraryError):
    library = "cuRAND"


class CUSOLVERError(LibraryError):
    library = "cuSOLVER"


class LAPACKError(LibraryError):
    """A LAPACK routine refused an argument (``info < 0``: ``status`` is minus the argument's position)."""

    library = "LAPACK"


class CUDSSError(LibraryError):
    library = "cuDSS"


class PARDISOError(LibraryError):
    """oneMKL PARDISO returned a negative ``error``; ``name`` says what it means (see
    ``cumath._bindings.mkl_pardiso.PardisoStatus``)."""

    library = "MKL PARDISO"


class SingularMatrixError(CumathError, ValueError):
    """A matrix could not be factorized, or the solution computed from its factors is not trustworthy: it is
    singular or numerically singular (zero or perturbed pivots leave a large residual), or it is not positive
    definite although a positive definite type was asked for. The message says which, and what to try."""


class LibraryNotFoundError(CumathError, OSError):
    """A native library could not be located; the message names the pip extra that brings it."""


class InvalidStateError(CumathError, RuntimeError):
    """An object was used in a state that does not allow the call (after free(), before plan(), ...)."""


class UnsupportedLayoutError(CumathError, ValueError):
    """The operand's memory layout cannot be handled as requested; the message says what to change."""


class ScaLAPACKError(LibraryError):
    """A ScaLAPACK or PBLAS routine refused an argument (``status`` is the negative ``info``)."""

    library = "ScaLAPACK"


class CollectiveError(CumathError, RuntimeError):
    """Ranks of a distributed operation disagree (different calls, shapes or distributions), or a rank did not
    reach a collective call within the timeout; the message says which ranks and what they called."""
