"""Fixtures of the device-API tests: what each needs (libmathdx, numba-cuda, NVRTC and cuRAND's headers), skipping
cleanly where it is missing, and a way to take a kernel down to a linked sm_90 cubin on a machine without a GPU."""

import pytest


@pytest.fixture(scope="session")
def mathdx():
    """libmathdx (and NVRTC), loaded, else skip."""
    from cumath.errors import LibraryNotFoundError

    try:
        from cumath._bindings import mathdx as m
        from cumath._core import jit

        m.load()
        jit.nvrtc_version()  # NVRTC through cuda-bindings: its version keys the generated code
    except (LibraryNotFoundError, OSError) as exc:
        pytest.skip(f"libmathdx or NVRTC is not available: {exc}")
    return m


@pytest.fixture(scope="session")
def numba_cuda():
    """numba.cuda (through cumath's compatibility step), else skip; also needs NVVM to compile."""
    from cumath._core.numba_compat import import_numba_cuda

    try:
        cuda = import_numba_cuda(feature="the device API tests")
    except ImportError as exc:
        pytest.skip(str(exc))
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
    except Exception as exc:
        pytest.skip(f"NVVM is not available to numba-cuda: {exc}")
    return cuda


@pytest.fixture(scope="session")
def curand_headers():
    """The include folders the cuRAND shim compiles with (and NVRTC), else skip."""
    from cumath.errors import LibraryNotFoundError

    try:
        from cumath._core import jit
        from cumath.device.random import _shim

        jit.nvrtc_version()
        return _shim.include_dirs()
    except (FileNotFoundError, LibraryNotFoundError, OSError) as exc:
        pytest.skip(f"the cuRAND shim cannot be compiled here: {exc}")


@pytest.fixture(scope="session")
def link_cubin(numba_cuda):
    """``link_cubin(pyfunc, argtypes, cc=(9, 0)) -> bytes``: compile a kernel with numba-cuda and link it (LTO,
    nvJitLink) with every file it calls into, to a cubin, with no GPU. Uses numba-cuda internals (0.30)."""
    try:
        from numba.cuda.compiler import _compile_pyfunc_with_fixup
    except ImportError as exc:
        pytest.skip(f"this numba-cuda has no _compile_pyfunc_with_fixup: {exc}")

    def link(pyfunc, argtypes, cc=(9, 0)):
        lib, _ = _compile_pyfunc_with_fixup(pyfunc, tuple(argtypes), device=False, cc=cc, abi="numba", lto=True)
        lib._lto = True
        try:
            cubin = lib.get_cubin(cc=cc)
        except Exception as exc:
            if "nvJitLink" in str(exc) and "not found" in str(exc).lower():
                pytest.skip(f"nvJitLink is not available: {exc}")
            raise
        return bytes(getattr(cubin, "code", cubin))

    return link
