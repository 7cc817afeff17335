"""benchmarks/solvers_sparse.py's planning-settings table run end to end on the cuDSS emulation (a 36-unknown
Poisson system, NumPy standing in for CuPy): every variant gets its row (plan, factorize, solve, fill, residual,
the analysis split in two), the comparison with cuDSS's defaults, and the verdict on cumath's defaults."""

from __future__ import annotations

import os
import sys
import types

import numpy as np
import pytest

from fake_cudss import HostAllocator, device, device_csr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "benchmarks"))

pytestmark = pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")


class _Case:
    def __init__(self):
        self.rows, self.notes = [], []

    def value(self, name, value, unit="", **extra):
        self.rows.append({"contender": name, "value": value, "unit": unit, **extra})

    def note(self, text):
        self.notes.append(text)


def test_the_plan_settings_table_on_the_emulation(emulated, monkeypatch):
    import solvers_sparse as bench

    from cumath.sparse.advanced import _executors

    cp = types.SimpleNamespace(asarray=lambda x: device(np.asarray(x)))
    csp = types.SimpleNamespace(csr_matrix=device_csr)
    monkeypatch.setattr(bench, "need", lambda name: {"cupy": cp, "cupyx.scipy.sparse": csp}.get(name) or
                        __import__(name, fromlist=["_"]))
    monkeypatch.setattr(bench, "device_sync", lambda: (lambda: None))
    monkeypatch.setattr(_executors, "default_allocator", lambda package, device_id: HostAllocator(emulated))
    from cumath.sparse.advanced._backends import cudss as backend

    saved = backend.PLAN_DEFAULTS
    case = _Case()
    bench._plan_table(case, 6, skip={"reordering NONE (natural order)"})
    rows = {r["contender"]: r for r in case.rows}
    for label in bench.PLAN_VARIANTS:
        if label == "reordering NONE (natural order)":
            assert f"{label}: plan" not in rows
            continue
        row = rows[f"{label}: plan"]
        assert row["unit"] == "ms" and row["value"] > 0 and row["lu_nnz"] > 0 and row["residual"] < 1e-8, label
        assert row["reordering_ms"] is not None and row["symbolic_ms"] is not None, label  # the split analysis
        if label != "cuDSS's own defaults":
            assert f"{label}: plan / factorize / solve vs cuDSS's defaults" in rows
    assert any("not run at this size" in n for n in case.notes)
    verdict = [n for n in case.notes if n.startswith("order 36:")]
    assert len(verdict) == 1 and ("keep PLAN_DEFAULTS" in verdict[0] or "qualifying settings" in verdict[0])
    if "qualifying settings" in verdict[0]:
        assert any("PLAN_DEFAULTS = ((<lowest order>, " in n for n in case.notes)
    from cumath.sparse.advanced._backends import cudss as backend
    from cumath._bindings import cudss

    assert backend.PLAN_DEFAULTS == saved and backend.ANALYSIS_PHASES == (cudss.Phase.ANALYSIS,)  # put back
