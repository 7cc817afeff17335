"""Checked by mypy (tests/packaging/test_types.py, .ci/run): the lazily loaded domains are visible to type
checkers and the public calls keep their signatures."""

import numpy as np

import cumath
import cumath.linalg.advanced

x = np.ones(8, dtype=np.complex128)
y = cumath.fft.fft(x, axes=[0], options={"result_layout": "natural"})
m = cumath.linalg.matmul(np.ones((2, 2)), np.ones((2, 2)), alpha=2.0)
with cumath.fft.FFT(x) as f:
    f.plan()
    z = f.execute()
solver = cumath.linalg.direct_solver
mm = cumath.linalg.advanced.matmul
options = cumath.fft.FFTOptions(inplace=False)
