"""Which of ccxml's modules run compiled.

The modules in :data:`NATIVE_MODULES` are plain Python files that ``setup.py`` may also compile
with Cython (typed by the ``.pxd`` beside each). The compiled form of a module loads only when the
build recorded it in :data:`MANIFEST` with the digest of the source it was built from and the
source still has that digest; otherwise — an edited checkout with an old build, a failed or skipped
build, or ``CCXML_PURE=1`` in the environment — the ``.py`` file runs. Both forms give the same
output (tests/test_native.py compares them byte for byte); the compiled one is faster.

:func:`install` puts the import hook in place (``ccxml/__init__.py`` calls it): a few ``stat``
calls and one small file read per process.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys

#: modules setup.py compiles (the IR, the Chunk API and its executor, the planner of the tables,
#: the passes and the writer)
NATIVE_MODULES = (
    "ccxml.ir.nodes",
    "ccxml.frontend.chunk",
    "ccxml.frontend.executor",
    "ccxml.tables.plan",
    "ccxml.passes.threadblocks",
    "ccxml.passes.ordering",
    "ccxml.passes.fusion",
    "ccxml.passes.splitting",
    "ccxml.passes.dependencies",
    "ccxml.passes.numbering",
    "ccxml.passes.checks",
    "ccxml.writer.msccl",
)

#: the build's record, "module digest" per line, relative to the directory holding ``ccxml/``
MANIFEST = "ccxml/_native_build.txt"

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def source_digest(base: str) -> str:
    """SHA-256 of ``base + ".py"`` followed by ``base + ".pxd"`` (when there is one)."""
    h = hashlib.sha256()
    with open(base + ".py", "rb") as f:
        h.update(f.read())
    if os.path.exists(base + ".pxd"):
        h.update(b"\0pxd\0")
        with open(base + ".pxd", "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def recorded_digests(root: str = _ROOT) -> dict[str, str]:
    """module -> digest of the source each compiled module was built from (empty: no build)."""
    try:
        with open(os.path.join(root, *MANIFEST.split("/"))) as f:
            return dict(line.split() for line in f if line.strip())
    except (OSError, ValueError):
        return {}


class _SourceFirst:
    """Meta-path finder: load the ``.py`` of a native module whose compiled form may not run."""

    def __init__(self, pure: bool, digests: dict[str, str], root: str = _ROOT):
        self.pure = pure
        self.digests = digests
        self.root = root
        self._verdicts: dict[str, bool] = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in NATIVE_MODULES:
            return None
        base = os.path.join(self.root, *fullname.split("."))
        if not os.path.exists(base + ".py"):
            return None
        if self.may_run_compiled(fullname):
            return None                          # the ordinary finders pick the extension
        loader = importlib.machinery.SourceFileLoader(fullname, base + ".py")
        return importlib.util.spec_from_file_location(fullname, base + ".py", loader=loader)

    def may_run_compiled(self, fullname: str) -> bool:
        """Whether ``fullname``'s extension was built from the source that is here, and so were
        the native modules its ``.pxd`` cimports: a compiled pass built against a compiled IR must
        not meet the IR's pure-Python classes (Cython refuses them: "TB size changed")."""
        known = self._verdicts.get(fullname)
        if known is None:
            self._verdicts[fullname] = False     # a cimport cycle never makes itself compiled
            base = os.path.join(self.root, *fullname.split("."))
            recorded = self.digests.get(fullname)
            known = (not self.pure and recorded is not None and _has_extension(base)
                     and recorded == source_digest(base)
                     and all(self.may_run_compiled(dep) for dep in cimported(base)))
            self._verdicts[fullname] = known
        return known


def cimported(base: str) -> list[str]:
    """The native modules that ``base + ".pxd"`` cimports (``from ccxml.x cimport ...``)."""
    try:
        with open(base + ".pxd") as f:
            text = f.read()
    except OSError:
        return []
    return [m for m in re.findall(r"^\s*from\s+(ccxml[\w.]*)\s+cimport\b", text, re.M) if m in NATIVE_MODULES]


def is_compiled(module_file: str) -> bool:
    """Whether the module whose ``__file__`` this is runs compiled (an extension module file).
    Modules with a compiled-only fast path (C arrays, a C heap) test it once at import."""
    return module_file.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def _has_extension(base: str) -> bool:
    return any(os.path.exists(base + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES)


_finder: _SourceFirst | None = None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process)."""
    global _finder
    if _finder is None:
        _finder = _SourceFirst(bool(os.environ.get("CCXML_PURE")), recorded_digests())
        sys.meta_path.insert(0, _finder)


def status() -> dict[str, bool]:
    """module -> whether it runs compiled, for every native module (imports them)."""
    import importlib
    out = {}
    for name in NATIVE_MODULES:
        mod = importlib.import_module(name)
        out[name] = is_compiled(getattr(mod, "__file__", "") or "")
    return out


def summary() -> str:
    """One line for ``ccxml --version``: how many of the native modules run compiled."""
    st = status()
    n = sum(st.values())
    if n == len(st):
        return f"compiled passes: all {n} modules"
    if os.environ.get("CCXML_PURE"):
        return "pure Python: CCXML_PURE is set"
    if n == 0:
        return "pure Python: no compiled build of this source"
    return f"compiled passes: {n} of {len(st)} modules, the rest pure Python"
