"""FFT engines: cuFFT on the GPU; FFTW (or MKL's FFTW interface) and SciPy's pocketfft on the CPU.

Each engine exposes ``make_plan(...)`` returning a plan object with ``execute(in_ptr, out_ptr, sign, stream)``,
``workspace_size``, ``release_workspace(stream)`` and ``free()``.
"""
