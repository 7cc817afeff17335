"""The test tree's modules keep unique basenames: pytest imports them by basename (rootdir mode, no packages),
and two files of one name stop the whole collection."""
from collections import Counter
from pathlib import Path


def test_test_module_names_are_unique():
    root = Path(__file__).resolve().parents[1]
    names = Counter(p.name for p in root.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
