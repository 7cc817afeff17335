"""Every name that the README's compatibility table marks "yes" or "differs" imports from cumath under
nvmath-python's module path (``import cumath as nvmath``)."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
ROW = re.compile(r"^\| `(nvmath(?:\.[A-Za-z_][A-Za-z0-9_]*)*)` \| (yes|no|differs) \|")


def table():
    rows = [ROW.match(line) for line in README.read_text().splitlines()]
    return [(m.group(1), m.group(2)) for m in rows if m]


ROWS = table()
PRESENT = [name for name, status in ROWS if status != "no"]


def test_table_is_there():
    assert len(ROWS) > 200 and len(PRESENT) > 100
    for must in ("nvmath.fft.InvalidFFTState", "nvmath.fft.estimate_workspace_size", "nvmath.CudaDataType",
                 "nvmath.linalg.ComputeType", "nvmath.linalg.generic.matmul",
                 "nvmath.linalg.advanced.helpers.matmul.get_block_scale_offset"):
        assert must in PRESENT, must


@pytest.mark.parametrize("name", PRESENT)
def test_name_imports(name):
    module, attr = name.rsplit(".", 1)
    mod = importlib.import_module("cumath" + module[len("nvmath"):])
    assert getattr(mod, attr) is not None


def test_from_imports_as_nvmath_code_writes_them():
    ns: dict = {}
    exec("import cumath as nvmath\n"
         "from cumath.linalg.generic import matmul, MatmulOptions, Matmul\n"
         "from cumath.linalg.advanced.helpers.matmul import BlockScalingFormat\n"
         "from cumath.linalg import ComputeType\n"
         "from cumath import CudaDataType, ComputeType as CT, LibraryPropertyType\n", ns)
    assert ns["nvmath"].linalg.generic.matmul is ns["matmul"] is ns["nvmath"].linalg.matmul
    assert ns["CudaDataType"].CUDA_R_32F == 0 and ns["CudaDataType"].CUDA_C_64F == 5
    assert ns["CudaDataType"].CUDA_R_8F_E4M3 == 28 and ns["CudaDataType"].CUDA_R_4F_E2M1 == 33
    assert ns["LibraryPropertyType"].PATCH_LEVEL == 2
    assert ns["CT"].COMPUTE_32F == 4 and ns["CT"].COMPUTE_TF32 == 4096
    assert ns["ComputeType"].COMPUTE_32F_FAST_16F == 74 and ns["ComputeType"].COMPUTE_64F == 70


def test_import_cumath_loads_no_framework():
    import subprocess
    import sys

    code = ("import sys, cumath; cumath.CudaDataType; cumath.ComputeType; "
            "bad = [m for m in ('numpy', 'cupy', 'torch', 'jax') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
