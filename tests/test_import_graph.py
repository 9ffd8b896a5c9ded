"""The import graph of ``ccxml/`` has no circles (issue 26, "Must hold").

import-linter's layer contracts (pyproject.toml) keep the packages in order but see neither the
imports written inside functions nor circles between two modules of one package. This test
reads every ``.py`` file under ``ccxml/`` with :mod:`ast` and takes every ``import`` and
``from ... import`` wherever it is written — at module level, in a function body, under ``try``
or ``if`` — except under ``if TYPE_CHECKING:`` (never run). An edge goes to the module named;
``from package import name`` goes to ``package.name`` when that is a module, else to
``package``. Then no two modules may reach each other (no strongly connected component of more
than one module, and no module importing itself).
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ccxml"


def _modules(package: pathlib.Path) -> dict[str, pathlib.Path]:
    """dotted name -> file, for every ``.py`` under ``package`` (a package is its ``__init__``)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Every Import / ImportFrom node, at any depth, outside ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _known(name: str, modules) -> str | None:
    """``name`` or its longest prefix that is a module of ours (None: not ours)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(package: pathlib.Path = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {imported module of ours: line of the first such import}."""
    modules = _modules(package)
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for module, path in modules.items():
        is_pkg = path.name == "__init__.py"
        here = module if is_pkg else module.rpartition(".")[0]
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [_known(a.name, modules) for a in node.names]
            else:
                if node.level:
                    base = here.split(".")
                    base = base[:len(base) - node.level + 1]
                    base_name = ".".join(base + ([node.module] if node.module else []))
                else:
                    base_name = node.module or ""
                for a in node.names:
                    full = f"{base_name}.{a.name}"
                    targets.append(full if full in modules else _known(base_name, modules))
            for t in targets:
                if t is not None:
                    graph[module].setdefault(t, node.lineno)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module, and self-imports (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in graph[v]:
                    out.append(sorted(comp))
    return sorted(out)


def _describe(graph, comp: list[str]) -> str:
    edges = [f"{a} -> {b} (line {graph[a][b]})" for a in comp for b in sorted(graph[a]) if b in comp]
    return "; ".join(edges)


def test_the_import_graph_of_ccxml_has_no_circles():
    graph = import_graph()
    found = circles(graph)
    assert not found, "import circles (function-local imports included):\n" + "\n".join(
        _describe(graph, c) for c in found)


def test_the_graph_sees_function_local_imports_and_circles(tmp_path):
    """The reader is not blind: a circle written only through function-local and relative
    imports is found, a TYPE_CHECKING-only import is not an edge, and ``from pkg import mod``
    names the module."""
    pkg = tmp_path / "ccxml"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from ccxml.sub import a\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from . import b\n    return b\n")
    (pkg / "sub" / "b.py").write_text("import os\n\n\ndef g():\n    try:\n        from .a import f\n"
                                      "    except ImportError:\n        f = None\n    return f\n")
    (pkg / "sub" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from ccxml.sub.d import X\n")
    (pkg / "sub" / "d.py").write_text("from ..sub import c\n")
    graph = import_graph(pkg)
    assert graph["ccxml.sub"] == {"ccxml.sub.a": 1}
    assert graph["ccxml.sub.a"] == {"ccxml.sub.b": 2}
    assert graph["ccxml.sub.b"] == {"ccxml.sub.a": 6}
    assert graph["ccxml.sub.c"] == {}
    assert graph["ccxml.sub.d"] == {"ccxml.sub.c": 1}
    assert circles(graph) == [["ccxml.sub.a", "ccxml.sub.b"]]


@pytest.mark.parametrize("edges, want", [
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}, [["a", "b", "c"]]),
    ({"a": {"b": 1}, "b": {}, "c": {"c": 1}}, [["c"]]),
    ({"a": {"b": 1, "c": 1}, "b": {"d": 1}, "c": {"d": 1}, "d": {}}, []),
])
def test_circles_are_the_strongly_connected_components(edges, want):
    assert circles(edges) == want
