"""The import graph of the package: no circles, and ``cumath._core`` imports nothing of the layers above it.

Every module's ``import`` and ``from ... import`` statements count, function-local ones included: an import put
inside a function to dodge a circle is still a circle (the shared piece belongs a layer down). Run as a script
(``python tests/core/test_import_graph.py``) it prints the circles and the upward imports it finds.
"""

from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "cumath")
CORE_MAY_IMPORT = ("cumath._core", "cumath._bindings", "cumath.errors")


def modules(package_dir: str = PACKAGE) -> dict[str, tuple[str, bool]]:
    """Dotted module name -> (file, is a package's __init__) of every module under ``package_dir``."""
    top = os.path.dirname(package_dir)
    out = {}
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, top)[:-3].replace(os.sep, ".")
                is_init = dotted.endswith(".__init__")
                out[dotted[: -len(".__init__")] if is_init else dotted] = (path, is_init)
    return out


def _known(name: str, mods) -> str | None:
    """``name`` or its closest enclosing module that is part of the package (None for outside modules)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(mods=None) -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its body). ``from pkg import name`` points at
    ``pkg.name`` when that is a module, else at ``pkg``; the implicit import of parent packages is left out."""
    mods = modules() if mods is None else mods
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, (path, is_init) in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [_known(a.name, mods) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = mod.split(".")[: len(mod.split(".")) - (node.level - (1 if is_init else 0))]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [_known(f"{base}.{a.name}", mods) for a in node.names]
            else:
                continue
            graph[mod].update(t for t in targets if t is not None and t != mod)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(core module, what it imports) for every import from ``cumath._core`` out of the layers it may use."""
    return sorted((m, t) for m, ts in graph.items() if m.startswith("cumath._core") for t in ts
                  if not t.startswith(CORE_MAY_IMPORT))


def _describe(graph, component) -> str:
    inside = set(component)
    return "\n".join(f"  {m} -> {', '.join(sorted(graph[m] & inside))}" for m in component)


# ---------------------------------------------------------------------------------------------- tests

def test_the_package_has_no_import_circle():
    graph = import_graph()
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(_describe(graph, c) for c in found)


def test_core_imports_only_core_bindings_and_errors():
    found = upward_imports(import_graph())
    assert not found, "cumath._core imports upwards: " + ", ".join(f"{m} -> {t}" for m, t in found)


def test_the_graph_sees_local_and_relative_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("from .c import x\n")
    (pkg / "sub" / "c.py").write_text("import pkg.a\nx = 1\n")
    (pkg / "d.py").write_text("import os, numpy\nfrom .sub.c import x\n")
    graph = import_graph(modules(str(pkg)))
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.sub.c"}
    assert graph["pkg.sub"] == {"pkg.sub.c"} and graph["pkg.d"] == {"pkg.sub.c"}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"]]


if __name__ == "__main__":
    g = import_graph()
    for c in circles(g):
        print("circle:\n" + _describe(g, c))
    for m, t in upward_imports(g):
        print(f"upward: {m} -> {t}")
    sys.exit(1 if circles(g) or upward_imports(g) else 0)
