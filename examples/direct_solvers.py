"""Direct solvers: a batch of dense systems with cumath.linalg (the factorization reused for new right-hand sides,
and a system with a NaN reported as such), and a sparse 2-D Poisson system with cumath.sparse.advanced (new values
of the same pattern refactorized without a new plan, and where the plan's time went). NumPy and SciPy operands on
the CPU; the same code runs on the GPU with CuPy or PyTorch CUDA operands (cuSOLVER, cuBLAS, cuDSS), where
DirectSolverOptions(cudss_config=...) passes cuDSS's own planning settings (host threads, reordering, ...)."""

import warnings

import numpy as np
import scipy.sparse as sp

import cumath

rng = np.random.default_rng(0)

# dense: a batch of 100 systems of order 20, factorized once, solved for two sets of right-hand sides
a = rng.standard_normal((100, 20, 20)) + 20 * np.eye(20)
with cumath.linalg.DirectSolver(a, rng.standard_normal((100, 20, 3))) as solver:
    solver.plan()
    solver.factorize()
    for _ in range(2):
        b = rng.standard_normal((100, 20, 3))
        solver.reset_operands(b=b)
        assert np.allclose(a @ solver.solve(), b)

# a NaN anywhere in a system (here below the diagonal, where pivoting may keep it out of U) is reported for it
bad = a[:4].copy()
bad[2, 19, 0] = np.nan
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    x = cumath.linalg.direct_solver(bad, np.ones((4, 20)))
assert any(str(w.message).startswith("a[2] has non-finite pivots") for w in seen)
assert np.allclose(bad[0] @ x[0], 1.0)

# sparse: the 5-point Laplacian of a 60 x 60 grid
m = 60
t = sp.diags_array([-np.ones(m - 1), 4.0 * np.ones(m), -np.ones(m - 1)], offsets=[-1, 0, 1])
s = sp.diags_array([-np.ones(m - 1), -np.ones(m - 1)], offsets=[-1, 1])
lap = sp.csr_array(sp.kron(sp.eye_array(m), t) + sp.kron(s, sp.eye_array(m)))
rhs = rng.standard_normal(m * m)
with cumath.sparse.advanced.DirectSolver(lap, rhs) as solver:
    solver.plan()
    solver.factorize()
    assert np.allclose(lap @ solver.solve(), rhs)
    lap.data *= 2.0  # new values, the same pattern: factorize again, no new plan
    solver.factorize()
    assert np.allclose(lap @ solver.solve(), rhs)
    steps, engine = solver.timings, solver.engine
print(f"sparse solver on {engine}: plan {steps['plan']['total']:.1f} ms "
      f"({', '.join(f'{k} {v:.1f}' for k, v in steps['plan'].items() if k != 'total')}), "
      f"factorize {steps['factorize']['total']:.1f} ms")
print("direct solvers: ok")
