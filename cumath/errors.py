"""The exceptions cumath raises: one base class, typed library errors, state and layout errors."""

from __future__ import annotations

__all__ = [
    "CumathError",
    "LibraryError",
    "LibraryNotFoundError",
    "InvalidStateError",
    "CUDAUnavailableError",
    "UnsupportedLayoutError",
    "UnsupportedDtypeError",
    "OperandMismatchError",
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
    "CUTENSORError",
    "PARDISOError",
    "SingularMatrixError",
    "CUSOLVERError",
    "LAPACKError",
    "CUSPARSEError",
    "MKLSparseError",
    "DFTIError",
    "ScaLAPACKError",
    "CollectiveError",
    "NCCLError",
    "CUBLASMpError",
    "CUSOLVERMpError",
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


class CUTENSORError(LibraryError):
    library = "cuTENSOR"


class PARDISOError(LibraryError):
    """oneMKL PARDISO returned a negative ``error``; ``name`` says what it means (see
    ``cumath._bindings.mkl_pardiso.PardisoStatus``)."""

    library = "MKL PARDISO"


class CUSPARSEError(LibraryError):
    library = "cuSPARSE"


class MKLSparseError(LibraryError):
    """oneMKL's sparse BLAS (inspector-executor) returned a failure ``sparse_status_t``."""

    library = "MKL sparse BLAS"


class DFTIError(LibraryError):
    """oneMKL's DFTI returned a non-zero status; ``name`` is its error class (see
    ``cumath._bindings.mkl_dfti.ErrorClass``) and the message MKL's own."""

    library = "MKL DFTI"


class SingularMatrixError(CumathError, ValueError):
    """A matrix could not be factorized, or the solution computed from its factors is not trustworthy: it is
    singular or numerically singular (zero or perturbed pivots leave a large residual), or it is not positive
    definite although a positive definite type was asked for. The message says which, and what to try."""


class LibraryNotFoundError(CumathError, OSError):
    """A native library could not be located; the message names the pip extra that brings it."""


class InvalidStateError(CumathError, RuntimeError, ValueError):
    """An object was used in a state that does not allow the call (after free(), before plan(), after
    release_operands(), ...). A RuntimeError, and a ValueError as nvmath-python raises for some of these calls,
    so that either kind of ``except`` catches it."""


class CUDAUnavailableError(CumathError, RuntimeError, ValueError):
    """CUDA execution was asked for but no usable GPU is there (no driver, no device, or not that device).
    A RuntimeError as nvmath-python raises it (code falls back to the CPU on it), and a ValueError."""


class OperandMismatchError(CumathError, TypeError, ValueError):
    """An operand given to a planned operation is of another package or on another device than the plan's. A
    TypeError as nvmath-python raises it, and a ValueError."""


class UnsupportedDtypeError(CumathError, TypeError, ValueError):
    """An operand's dtype (or a combination of dtypes) is not supported; the message lists what is. A TypeError,
    and a ValueError as nvmath-python raises it."""


class UnsupportedLayoutError(CumathError, ValueError):
    """The operand's memory layout cannot be handled as requested; the message says what to change."""


class ScaLAPACKError(LibraryError):
    """A ScaLAPACK or PBLAS routine refused an argument (``status`` is the negative ``info``)."""

    library = "ScaLAPACK"


class CollectiveError(CumathError, RuntimeError):
    """Ranks of a distributed operation disagree (different calls, shapes or distributions), or a rank did not
    reach a collective call within the timeout; the message says which ranks and what they called."""


class NCCLError(LibraryError):
    library = "NCCL"


class CUBLASMpError(LibraryError):
    library = "cuBLASMp"


class CUSOLVERMpError(LibraryError):
    library = "cuSOLVERMp"
