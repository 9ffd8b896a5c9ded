"""Stale names in a Cython ``.pxd``: declarations whose name its ``.py`` no longer has.

A ``.pxd`` beside a ``.py`` types the plain Python module when it is compiled. When the ``.py``
renames or drops a function, a class field or a local variable, the stale declaration may
still compile (a declared local that is never used, a function declared but not defined is a
warning at most) and silently stops typing anything. :func:`stale_names` reads both files —
the ``.py`` with :mod:`ast`, the ``.pxd`` line by line — and lists what the ``.pxd`` declares
that the ``.py`` does not define:

* module variables (``cdef int _SENDS, _RECEIVES``): assigned at module level;
* functions (``cdef``/``cpdef ... name(...)``): defined at module level;
* classes (``cdef class Name``), their fields (``cdef public T name``: in ``__slots__``, a class
  attribute or assigned to ``self.name``) and methods;
* ``@cython.locals(name=...)`` of a function or method: a parameter or a name used in its body.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

_IDENT_CALL = re.compile(r"([A-Za-z_]\w*)\(")
_LOCAL = re.compile(r"([A-Za-z_]\w*)\s*=")
_STRING = re.compile(r"\"[^\"]*\"|'[^']*'")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(indent, line) with comments dropped and bracketed continuations joined."""
    out: list[tuple[int, str]] = []
    buf = ""
    indent = 0
    depth = 0
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not buf:
            indent = len(line) - len(line.lstrip())
        buf += " " + line.strip() if buf else line.strip()
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if depth <= 0:
            out.append((indent, buf))
            buf, depth = "", 0
    return out


class _Defs:
    """What a ``.py`` defines: module names, functions (name -> names inside), classes."""

    def __init__(self, source: str):
        tree = ast.parse(source)
        self.module: set[str] = set()
        self.functions: dict[str, set[str]] = {}
        self.classes: dict[str, tuple[set[str], dict[str, set[str]]]] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = _names_in(node)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = _class_members(node)
            else:
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                        self.module.add(sub.id)
                    elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                        self.module.update((a.asname or a.name).split(".")[0] for a in sub.names)


def _names_in(fn: ast.AST) -> set[str]:
    """Parameters and every name a function uses or binds."""
    names = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
    names.update(n.id for n in ast.walk(fn) if isinstance(n, ast.Name))
    return names


def _class_members(cls: ast.ClassDef) -> tuple[set[str], dict[str, set[str]]]:
    fields: set[str] = set()
    methods: dict[str, set[str]] = {}
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods[node.name] = _names_in(node)
            for sub in ast.walk(node):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)
                        and isinstance(sub.value, ast.Name) and sub.value.id == "self"):
                    fields.add(sub.attr)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    fields.add(t.id)
                    if t.id == "__slots__" and isinstance(node.value, (ast.Tuple, ast.List)):
                        fields.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
    return fields, methods


def stale_names(pxd: Path) -> list[str]:
    """``"<file>: <kind> <name> ..."`` for every name ``pxd`` declares that the ``.py`` beside it
    does not define (empty when all are there)."""
    defs = _Defs(pxd.with_suffix(".py").read_text(encoding="utf-8"))
    out: list[str] = []
    pending_locals: list[str] = []
    cls: str | None = None
    for indent, line in _logical_lines(pxd.read_text(encoding="utf-8")):
        if indent == 0:
            cls = None
        if line.startswith("@cython.locals("):
            inner = _STRING.sub("", line[len("@cython.locals("):-1])
            depth, names = 0, []
            for part in re.split(r"([()\[\],])", inner):      # keyword names at depth 0 only
                if part in "([":
                    depth += 1
                elif part in ")]":
                    depth -= 1
                elif depth == 0:
                    names += _LOCAL.findall(part)
            pending_locals += names
            continue
        if line.startswith("@") or line.startswith(("cimport ", "from ")):
            continue
        m = re.match(r"cdef class (\w+)", line)
        if m:
            cls = m.group(1)
            if cls not in defs.classes:
                out.append(f"{pxd.name}: class {cls} is not defined in {pxd.stem}.py")
            continue
        if not line.startswith(("cdef ", "cpdef ")):
            continue
        call = _IDENT_CALL.search(line)
        if call:                                        # a function or method
            name = call.group(1)
            if cls is not None and indent > 0:
                scope = defs.classes.get(cls, (set(), {}))[1].get(name)
                what = f"method {cls}.{name}"
            else:
                scope = defs.functions.get(name)
                what = f"function {name}"
            if scope is None:
                out.append(f"{pxd.name}: {what} is not defined in {pxd.stem}.py")
            else:
                out += [f"{pxd.name}: local {n} of {what} is not used in {pxd.stem}.py"
                        for n in pending_locals if n not in scope]
        else:                                           # variables or fields
            for part in line.split(","):
                name = part.split()[-1]
                if name in ("__dict__", "__weakref__"):   # Cython's own slots
                    continue
                if cls is not None and indent > 0:
                    if name not in defs.classes.get(cls, (set(), {}))[0]:
                        out.append(f"{pxd.name}: field {cls}.{name} is not defined in {pxd.stem}.py")
                elif name not in defs.module:
                    out.append(f"{pxd.name}: module variable {name} is not defined in {pxd.stem}.py")
        pending_locals = []
    return out
