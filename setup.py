"""Build hook: compile the hot modules with Cython where a C compiler is at hand.

The package metadata is in pyproject.toml; this file only adds the optional native build.
Each compiled module is the same ``.py`` file, typed by the ``.pxd`` beside it (Cython's
"augmenting" declarations), so the pure-Python module stays the reference and the fallback:
with no compiler, with ``CCXML_PURE=1`` at build time, or when a build fails, ccxml installs and
runs as plain Python, only slower. ``ccxml/_native.py`` decides at import time which compiled
modules may load (their source must hash as it did when they were built).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import threading
import time

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ccxml._native import MANIFEST, NATIVE_MODULES, source_digest  # noqa: E402

#: Cython's options for every compiled module (part of the build cache's key)
DIRECTIVES = {
    "language_level": 3,
    "annotation_typing": False,   # types come from the .pxd files only
    "boundscheck": False,
    "wraparound": True,
    "initializedcheck": False,
    "cdivision": False,           # Python's // and % on negative numbers
    "embedsignature": True,
}

HERE = os.path.dirname(os.path.abspath(__file__))


def say(message: str) -> None:
    """One line of progress on stderr (pip shows it with ``pip install -v``)."""
    print(f"ccxml: {message}", file=sys.stderr, flush=True)


def extensions():
    if os.environ.get("CCXML_PURE"):
        return []
    try:
        import Cython  # noqa: F401
    except ImportError:
        say("Cython not available, installing the pure-Python modules only")
        return []
    from setuptools import Extension
    # .py sources: build_ext cythonizes the modules the build cache does not hold, then compiles them
    return [Extension(name, [name.replace(".", "/") + ".py"]) for name in NATIVE_MODULES]


def cache_root() -> str | None:
    """Where compiled modules are kept between builds: ``$CCXML_BUILD_CACHE`` (``off`` or ``0``: no
    cache), else ``$XDG_CACHE_HOME/ccxml-build``, else ``~/.cache/ccxml-build``."""
    chosen = os.environ.get("CCXML_BUILD_CACHE")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "0", "off", "no", "false") else chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ccxml-build")


def cache_key(name: str) -> str:
    """What a compiled module depends on: its source and ``.pxd`` (their digest, as
    ccxml/_native.py records it), every ``.pxd`` it may cimport, Cython's version and options, the
    interpreter's ABI and platform, and the compiler's environment."""
    import sysconfig
    try:
        from Cython import __version__ as cython
    except ImportError:             # (no build then; the tests of the cache run without Cython)
        cython = "none"
    h = hashlib.sha256()
    h.update(source_digest(os.path.join(HERE, *name.split("."))).encode())
    for other in sorted(NATIVE_MODULES):
        pxd = os.path.join(HERE, *other.split(".")) + ".pxd"
        if os.path.exists(pxd):
            with open(pxd, "rb") as f:
                h.update(other.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    parts = [cython, repr(sorted(DIRECTIVES.items())), sys.implementation.cache_tag,
             str(sysconfig.get_config_var("EXT_SUFFIX")), sysconfig.get_platform(), sys.version]
    parts += [f"{var}={os.environ.get(var, '')}" for var in ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED")]
    h.update("\0".join(parts).encode())
    return h.hexdigest()[:32]


class OptionalBuildExt(build_ext):
    """Build what compiles; record the source digests of what was built (ccxml/_native.py reads
    them); never fail the install because of the native part.

    A build cache keyed by the sources' digest (:func:`cache_key`) keeps every compiled module, so
    the second install of a checkout (``pip install .`` then ``pip install -e '.[test]'``, or
    ``.ci/run`` again) copies them instead of compiling again; one progress line per module."""

    def initialize_options(self):
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        root = cache_root()
        self._cached = {}
        for ext in self.extensions:
            if root is None:
                break
            path = os.path.join(root, cache_key(ext.name), os.path.basename(self.get_ext_filename(ext.name)))
            if os.path.exists(path):
                self._cached[ext.name] = path
        todo = [ext for ext in self.extensions if ext.name not in self._cached]
        self._total, self._done = len(self.extensions), len(self._cached)
        if self._cached:
            say(f"{len(self._cached)} of {self._total} native modules from the build cache {root}")
        if todo:
            from Cython.Build import cythonize
            say(f"translating {len(todo)} modules to C with Cython, then compiling them "
                f"({self.parallel} at a time)")
            made = {ext.name: ext for ext in cythonize(todo, quiet=True, compiler_directives=DIRECTIVES)}
            for ext in todo:
                ext.sources = made[ext.name].sources
        super().build_extensions()

    def run(self):
        self._built = []
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers...: the pure modules still install
            say(f"native build skipped ({exc}); installing pure Python")
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
        target = self.get_ext_fullpath(ext.name)
        cached = getattr(self, "_cached", {}).get(ext.name)
        if cached is not None:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(cached, target + ".tmp")
            os.replace(target + ".tmp", target)
            self._built.append(ext.name)
            return
        say(f"compiling {ext.name}")
        started = time.monotonic()
        try:
            super().build_extension(ext)
        except Exception as exc:
            say(f"{ext.name} not compiled ({exc}); it runs as pure Python")
            return
        self._built.append(ext.name)
        self._done = getattr(self, "_done", 0) + 1
        say(f"compiled {ext.name} in {time.monotonic() - started:.0f} s "
            f"({self._done} of {getattr(self, '_total', '?')} native modules ready)")
        self._store(ext.name, target)

    def _store(self, name: str, built: str) -> None:
        """Keep a compiled module in the cache (never fail the build over it)."""
        root = cache_root()
        if root is None or not os.path.exists(built):
            return
        folder = os.path.join(root, cache_key(name))
        try:
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, os.path.basename(built))
            shutil.copyfile(built, f"{path}.{os.getpid()}.{threading.get_ident()}.tmp")
            os.replace(f"{path}.{os.getpid()}.{threading.get_ident()}.tmp", path)
        except OSError as exc:
            say(f"build cache not written ({exc})")


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
