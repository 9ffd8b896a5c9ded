"""Build hook: compile the hot modules with Cython where a C compiler is at hand.

The package metadata is in pyproject.toml; this file only adds the optional native build.
Each compiled module is the same ``.py`` file, typed by the ``.pxd`` beside it (Cython's
"augmenting" declarations), so the pure-Python module stays the reference and the fallback:
with no compiler, with ``CCXML_PURE=1`` at build time, or when a build fails, ccxml installs and
runs as plain Python, only slower. ``ccxml/_native.py`` decides at import time which compiled
modules may load (their source must hash as it did when they were built).
"""
from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ccxml._native import MANIFEST, NATIVE_MODULES, source_digest  # noqa: E402


def extensions():
    if os.environ.get("CCXML_PURE"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("ccxml: Cython not available, installing the pure-Python modules only", file=sys.stderr)
        return []
    paths = [name.replace(".", "/") + ".py" for name in NATIVE_MODULES]
    return cythonize(paths, quiet=True, compiler_directives={
        "language_level": 3,
        "annotation_typing": False,   # types come from the .pxd files only
        "boundscheck": False,
        "wraparound": True,
        "initializedcheck": False,
        "cdivision": False,           # Python's // and % on negative numbers
        "embedsignature": True,
    })


class OptionalBuildExt(build_ext):
    """Build what compiles; record the source digests of what was built (ccxml/_native.py reads
    them); never fail the install because of the native part."""

    def initialize_options(self):
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def run(self):
        self._built = []
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers...: the pure modules still install
            print(f"ccxml: native build skipped ({exc}); installing pure Python", file=sys.stderr)
        root = "." if self.inplace else self.build_lib
        lines = []
        for name in sorted(self._built):
            lines.append(f"{name} {source_digest(os.path.join(os.path.dirname(__file__) or '.', *name.split('.')))}")
        path = os.path.join(root, *MANIFEST.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            f.write("".join(line + "\n" for line in lines))
        os.replace(path + ".tmp", path)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"ccxml: {ext.name} not compiled ({exc}); it runs as pure Python", file=sys.stderr)
        else:
            self._built.append(ext.name)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
