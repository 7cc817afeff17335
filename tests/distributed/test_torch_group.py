"""TorchProcessGroup: the same operations over a torch.distributed (gloo) group of one process."""

import subprocess
import sys

import pytest

from mpi_helpers import clean_env

CODE = """
import numpy as np, torch, torch.distributed as td, socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
td.init_process_group("gloo", rank=0, world_size=1, init_method=f"tcp://127.0.0.1:{port}")
import cumath.distributed as d
from cumath.distributed.distribution import Slab
d.initialize(None, d.TorchProcessGroup())
x = np.random.default_rng(0).standard_normal((6, 5, 4)) + 1j
y = d.fft.fft(torch.from_numpy(x), distribution=Slab.X)
assert isinstance(y, torch.Tensor) and np.allclose(y.numpy(), np.fft.fftn(x))
assert np.array_equal(d.redistribute(x, Slab.X, Slab.Y), x)
d.finalize(); td.destroy_process_group(); print("ok")
"""


def test_torch_process_group():
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, env=clean_env())
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr[-3000:]


def test_torch_process_group_needs_init():
    pytest.importorskip("torch")
    from cumath.distributed import TorchProcessGroup

    with pytest.raises(ValueError, match="init_process_group"):
        TorchProcessGroup()
