"""Fast Fourier transforms on the CPU (FFTW, MKL, SciPy) and the GPU (cuFFT), one API for NumPy, CuPy and
PyTorch, with Python callbacks fused into cuFFT. The shape of nvmath-python's ``nvmath.fft``."""

from ..errors import InvalidStateError, UnsupportedLayoutError
from .._core.execution import ExecutionCPU, ExecutionCUDA
from ._callbacks import DeviceCallable
from ._compile import compile_epilog, compile_prolog
from ._functions import fft, ifft, irfft, rfft
from ._options import FFTDirection, FFTOptions
from ._planner import FFT
from ._workspace import estimate_workspace_size

#: Raised when an FFT is used after free(), executed before plan() or after release_operand() (nvmath-python's
#: name; cumath's InvalidStateError, a RuntimeError and a ValueError).
InvalidFFTState = InvalidStateError

__all__ = ["fft", "ifft", "rfft", "irfft", "FFT", "FFTOptions", "FFTDirection", "UnsupportedLayoutError",
           "ExecutionCPU", "ExecutionCUDA", "DeviceCallable", "compile_prolog", "compile_epilog", "InvalidFFTState", "estimate_workspace_size"]
