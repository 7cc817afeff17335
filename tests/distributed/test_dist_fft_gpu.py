"""The GPU engine of the distributed FFT (cuFFTMp over NVSHMEM): one rank on one GPU in its own process, and the
pure parts (layouts, bindings' structures, library lookup) that run anywhere."""

import ctypes
import importlib.util
import os
import subprocess
import sys

import pytest

from mpi_helpers import clean_env, under_launcher

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

_NEEDS_MPI4PY = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                                   reason="mpi4py not installed (the distributed extra brings it)")


@pytest.mark.gpu
@pytest.mark.skipif(under_launcher(), reason="the one-GPU run is its own process, not a rank of an mpirun")
def test_cufftmp_one_rank_end_to_end():
    env = clean_env(PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, os.path.join(HERE, "scripts", "gpu_fft.py")], capture_output=True,
                         text=True, timeout=600, env=env, cwd=ROOT)
    text = out.stdout + out.stderr
    if out.returncode == 0 and out.stdout.startswith("SKIP"):
        pytest.skip(out.stdout.strip()[5:])
    assert out.returncode == 0, text[-6000:]
    assert "FAIL" not in out.stdout and out.stdout.count("OK ") >= 100, text[-6000:]


@pytest.mark.skipif(under_launcher(), reason="a process of its own, not a rank of an mpirun")
@_NEEDS_MPI4PY
def test_gpu_engine_code_on_host_stand_ins():
    """The GPU engine's code end to end with CuPy, NVSHMEM and cuFFTMp replaced by host stand-ins (see the
    script): bring-up inside initialize(), staging, padded R2C/C2R rows, per-direction plans, in-place
    symmetric operands, reset_operand, free and the leak report at finalize."""
    env = clean_env(PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning",
                          os.path.join(HERE, "scripts", "fake_gpu_fft.py")], capture_output=True, text=True,
                         timeout=300, env=env, cwd=ROOT)
    assert out.returncode == 0, (out.stdout + out.stderr)[-6000:]
    assert "FAIL" not in out.stdout and out.stdout.count("OK ") >= 40, out.stdout


def test_stored_shapes_pad_the_real_side():
    from cumath.distributed.fft._cufftmp import stored_shapes

    assert stored_shapes("R2C", True, (8, 6, 9), (8, 6, 9), (8, 6, 5)) == ((8, 6, 10), (8, 6, 5))
    assert stored_shapes("R2C", True, (8, 6, 10), (8, 6, 10), (8, 6, 6)) == ((8, 6, 12), (8, 6, 6))
    assert stored_shapes("C2R", True, (8, 6, 5), (8, 6, 5), (8, 6, 9)) == ((8, 6, 5), (8, 6, 10))
    assert stored_shapes("C2C", True, (4, 4), (4, 4), (4, 4)) == ((4, 4), (4, 4))
    assert stored_shapes("R2C", False, (8, 6, 9), (4, 6, 9), (8, 3, 5)) == ((4, 6, 9), (8, 3, 5))  # boxes


def test_native_slabs_or_boxes():
    from cumath.distributed.fft._cufftmp import native_slabs

    assert native_slabs(1, "R2C", None, False, True)  # one rank: always native
    assert native_slabs(4, "C2C", 0, True, False) and native_slabs(4, "C2C", 1, True, False)
    assert not native_slabs(4, "C2C", 0, True, True)  # result kept in the input's slab: boxes
    assert not native_slabs(4, "C2C", 0, False, False)  # uneven pieces: boxes
    assert not native_slabs(4, "R2C", 0, True, False)
    assert not native_slabs(4, "C2C", None, True, False)  # Box pairs


def test_nvshmem_structures_match_the_headers():
    from cumath._bindings import nvshmem as nv

    assert ctypes.sizeof(nv.UniqueId) == 128 and ctypes.sizeof(nv.InitAttr) == 144
    assert nv.InitAttr.mpi_comm.offset == 8 and nv.InitAttr.args.offset == 16
    args = nv.InitAttr._fields_[2][1]
    assert args.uid_args.offset == 8 and ctypes.sizeof(args) == 128
    uid_args = args._fields_[1][1]
    assert [getattr(uid_args, f).offset for f in ("version", "id", "myrank", "nranks")] == [0, 8, 16, 20]
    assert nv.INIT_WITH_UNIQUEID == 8
    with pytest.raises(ValueError, match="an NVSHMEM unique id is 128 bytes"):
        nv.init_with_uniqueid(b"short", 0, 1)


def test_missing_gpu_libraries_say_what_to_install():
    code = ("from cumath._bindings import cufftmp, nvshmem; from cumath._bindings._loader import load_library\n"
            "print(cufftmp.available(), nvshmem.available())\n"
            "try:\n    load_library('cufftMp')\nexcept OSError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=clean_env(PYTHONPATH=ROOT), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    if first.startswith("True"):
        pytest.skip("cuFFTMp is installed here")
    assert first.split()[0] == "False"
    assert "cu13-distributed" in out.stdout and "libcufftMp.so.12" in out.stdout, out.stdout


def test_gpu_symmetric_memory_errors_before_any_gpu_call():
    from cumath.distributed import _symmetric

    class Ctx:  # the checks come before NVSHMEM is touched
        device_id = 0

    with pytest.raises(ValueError, match="package must be cupy or torch on GPU runs, got 'numpy'"):
        _symmetric._allocate_gpu(Ctx(), (4,), "numpy", None, "C", False)
    with pytest.raises(ValueError, match="axis_order='K'"):
        _symmetric._allocate_gpu(Ctx(), (4,), "cupy", None, "K", False)
    with pytest.raises(ValueError, match="expected a CuPy array or a PyTorch CUDA tensor"):
        _symmetric._device_pointer(object())


def test_device_operand_info_and_stream_pointer():
    import numpy as np

    from cumath.distributed.fft._cufftmp import _stream_pointer, device_operand_info

    assert device_operand_info(np.ones((2, 3), np.complex64)) == ((2, 3), np.dtype(np.complex64), "numpy", False)
    with pytest.raises(TypeError, match="CuPy array, a PyTorch tensor or a NumPy array"):
        device_operand_info([1, 2])
    assert _stream_pointer(None) == 0 and _stream_pointer(1234) == 1234

    class S:
        ptr = 99

    assert _stream_pointer(S()) == 99
    with pytest.raises(TypeError, match="stream must be"):
        _stream_pointer("stream")


@pytest.mark.skipif(under_launcher(), reason="a process of its own, not a rank of an mpirun")
@_NEEDS_MPI4PY
def test_gpu_initialize_errors_name_the_fix():
    code = """
import cumath.distributed as d
from cumath._core import cuda
from cumath.errors import CUDAUnavailableError
if cuda.device_count() == 0:
    try:
        d.initialize(0)
    except CUDAUnavailableError as e:
        assert "device_id=None" in str(e) and "initialize(device_id=0)" in str(e), str(e)
    else:
        raise SystemExit("no error without a GPU")
else:
    from cumath._bindings import nvshmem
    if not nvshmem.available():
        try:
            d.initialize(0, backends=("nvshmem",))
        except RuntimeError as e:
            assert "libnvshmem_host.so.3" in str(e) and "cu13-distributed" in str(e), str(e)
        else:
            raise SystemExit("no error without NVSHMEM")
assert d.get_context() is None
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=clean_env(PYTHONPATH=ROOT), cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr
