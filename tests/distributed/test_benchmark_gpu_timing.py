"""benchmarks/distributed.py's GPU timing: contenders in turns (A B, then B A), and the targets it reports."""

import importlib.util
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_distributed", os.path.join(ROOT, "benchmarks",
                                                                                 "distributed.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_contenders_run_in_turns_and_are_synchronized(monkeypatch):
    events = []
    device = types.SimpleNamespace(synchronize=lambda: events.append("sync"))
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda: device)))
    bench = _bench()
    rows = bench._interleaved_gpu({"A": lambda: events.append("A"), "B": lambda: events.append("B")}, 4, 2)
    assert events[:3] == ["A", "B", "sync"], "every contender warmed up, then the device synchronized"
    timed = [e for e in events[3:] if e != "sync"]
    assert timed == ["A"] * 2 + ["B"] * 2 + ["B"] * 2 + ["A"] * 2 + ["A"] * 2 + ["B"] * 2 + ["B"] * 2 + ["A"] * 2
    assert events[3:].count("sync") == 8, "one synchronization per sample"
    assert {k: len(v) for k, v in rows.items()} == {"A": 4, "B": 4}


def test_report_states_the_ratio_and_which_is_faster(capsys):
    bench = _bench()
    out = bench.report({"case": "gpu/x", "ranks": 1, "rows": {"dist": [1.2, 1.2, 1.2], "single": [1.0, 1.0, 1.0]},
                        "targets": [("dist", "single", 1.15)], "notes": ["NCCL 2.29.7 from /x/libnccl.so.2"]})
    text = capsys.readouterr().out
    assert "ratio: dist / single = 1.200x  single faster by 1.20x" in text
    assert "too noisy" not in text and "target" not in text and "met" not in text
    assert "NCCL 2.29.7 from /x/libnccl.so.2" in text
    assert out[-1] == {"case": "gpu/x", "ratio": ["dist", "single"], "value": 1.2, "target": 1.15}


def test_report_flags_a_ratio_of_noisy_rows(capsys):
    bench = _bench()
    bench.report({"case": "cpu/x", "ranks": 2, "rows": {"dist": [0.8, 1.0, 1.3, 0.9, 1.1],
                                                         "single": [1.0, 1.0, 1.0, 1.0, 1.0]},
                  "targets": [("dist", "single", 1.3)]})
    text = capsys.readouterr().out
    assert "ratio: dist / single = 1.000x  about the same (within 2%)  ! too noisy to trust" in text
