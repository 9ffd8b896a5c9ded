"""docs/findings.md documents every finding code once, and only codes ccxml can emit.

The codes ccxml can emit are read from the source: every ``Finding(code, ...)`` whose code is a
string literal, and, when the code is a parameter of the enclosing function (e.g.
``deadlock_findings(prog, res, code, note)``), the literals its callers pass for it. The loader's
catalogue must list exactly the loader's codes, and each code has one layer in the table.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from ccxml.loader.catalogue import RULES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "findings.md"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \| (.+?) \| (loader|interpreter|executor) \| (.+?) \|$")


def _is_finding(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "Finding") or (isinstance(f, ast.Attribute) and f.attr == "Finding")


def _code_arg(call: ast.Call):
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "code"), None)


@functools.cache
def emitted_codes() -> dict[str, set[str]]:
    """code -> the modules (paths under ccxml/) that can emit it."""
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted((REPO / "ccxml").rglob("*.py"))}
    found: dict[str, set[str]] = {}
    wanted: list[tuple[str, int, str]] = []     # (function, parameter position, module) to resolve
    for path, tree in trees.items():
        rel = str(path.relative_to(REPO))
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            params = [a.arg for a in fn.args.args]
            for call in [n for n in ast.walk(fn) if isinstance(n, ast.Call) and _is_finding(n)]:
                arg = _code_arg(call)
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.setdefault(arg.value, set()).add(rel)
                elif isinstance(arg, ast.Name) and arg.id in params:
                    wanted.append((fn.name, params.index(arg.id), rel))
                else:   # a finding copied from another one (f.code): nothing new
                    assert isinstance(arg, ast.Attribute) and arg.attr == "code", f"{rel}:{call.lineno}"
    for name, pos, rel in wanted:
        passed = 0
        for path, tree in trees.items():
            for call in [n for n in ast.walk(tree) if isinstance(n, ast.Call)]:
                f = call.func
                if (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) != name:
                    continue
                if len(call.args) > pos and isinstance(call.args[pos], ast.Constant):
                    # the caller that passes the literal emits the code
                    found.setdefault(call.args[pos].value, set()).add(str(path.relative_to(REPO)))
                    passed += 1
        assert passed, f"no literal code passed to {name}() ({rel})"
    return found


def documented() -> dict[str, tuple[str, str, str]]:
    """code -> (meaning, layer, example) from the table of docs/findings.md; each code once."""
    rows: dict[str, tuple[str, str, str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is documented twice"
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return rows


def test_every_code_ccxml_emits_is_documented_once_and_only_those():
    emitted, doc = emitted_codes(), documented()
    assert len(emitted) > 50             # the scan sees the loader's and the interpreter's codes
    assert sorted(set(emitted) - set(doc)) == [], "codes missing from docs/findings.md"
    assert sorted(set(doc) - set(emitted)) == [], "docs/findings.md documents codes nothing emits"


def test_each_code_has_the_layer_that_emits_it():
    emitted, doc = emitted_codes(), documented()
    for code, (_, layer, example) in doc.items():
        assert any(m.startswith(f"ccxml/{layer}/") for m in emitted[code]), (code, layer, emitted[code])
        assert example.strip(), code


def test_the_loader_catalogue_and_the_table_agree():
    doc = documented()
    loader = {c for c, (_, layer, _) in doc.items() if layer == "loader"}
    assert loader == {r.code for r in RULES}
    for r in RULES:          # the table quotes the catalogue's own text and reference
        assert doc[r.code][0].startswith(r.what) and r.ref in doc[r.code][0], r.code
