"""Run an unmodified msccl-tools script with ccxml serving its ``msccl`` imports.

:func:`msccl_served` installs an import hook for the length of a ``with`` block: ``msccl``,
``msccl.language`` (and its ``ir``, ``chunk``, ``buffer``, ``types`` parts),
``msccl.language.collectives`` and ``msccl.topologies`` (with ``generic``, ``distributed``,
``nvidia``, ``amd``, ``transformers``, ``topology``) resolve to fresh modules holding
:mod:`ccxml.mscclang`'s classes; ``msccl.collectives`` (SCCL's synthesis collectives, which
``simple/allreduce_ring.py`` star-imports without using) is empty; any other ``msccl.*`` fails to
import with a message saying what is served. On exit every ``msccl*`` module of the run is
dropped and whatever was imported before — a real msccl-tools — is put back, so the hook never
shadows an install outside the block.

:func:`run_script` runs a script as ``python SCRIPT ARGS`` would (``__main__``, ``sys.argv``,
its folder first on ``sys.path``) inside that block and a :class:`~ccxml.mscclang.program.Session`.
An exception in the script becomes one :class:`MSCCLangError` line naming the script's line.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import traceback
import types
from contextlib import contextmanager

from ccxml.vocab.errors import CcxmlError, MSCCLangError

_PACKAGES = ("msccl", "msccl.language", "msccl.topologies")
_LANGUAGE_PARTS = ("msccl.language.ir", "msccl.language.chunk", "msccl.language.buffer",
                   "msccl.language.types", "msccl.language.rank_dag",
                   "msccl.language.instruction_dag")
_TOPOLOGY_PARTS = ("msccl.topologies.generic", "msccl.topologies.distributed",
                   "msccl.topologies.nvidia", "msccl.topologies.amd",
                   "msccl.topologies.transformers", "msccl.topologies.topology")
SERVED = ("msccl.language", "msccl.language.collectives", "msccl.topologies")


def _namespaces() -> dict[str, dict]:
    """module name -> the names it holds."""
    from ccxml import mscclang
    from ccxml.mscclang import collectives, topologies
    lang = {name: getattr(mscclang, name) for name in mscclang.LANGUAGE}
    colls = {name: getattr(collectives, name) for name in collectives.__all__ if name != "CCXML_COLLS"}
    topos = {name: getattr(topologies, name) for name in topologies.__all__}
    out = {"msccl": {}, "msccl.language": lang, "msccl.language.collectives": {**lang, **colls},
           "msccl.topologies": topos, "msccl.collectives": {}}
    out.update({name: lang for name in _LANGUAGE_PARTS})
    out.update({name: topos for name in _TOPOLOGY_PARTS})
    return out


def _is_msccl(name: str) -> bool:
    return name == "msccl" or name.startswith("msccl.")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds every ``msccl*`` module first; makes the served ones, refuses the others."""

    def __init__(self):
        self.namespaces = _namespaces()

    def find_spec(self, fullname, path=None, target=None):
        if not _is_msccl(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname in _PACKAGES)

    def create_module(self, spec):
        names = self.namespaces.get(spec.name)
        if names is None:
            raise ModuleNotFoundError(
                f"{spec.name} is not served by ccxml mscclang (it serves "
                f"{', '.join(SERVED)}; msccl-tools' synthesis, CLI and MSCCL++ parts are not "
                f"MSCCLang)", name=spec.name)
        module = types.ModuleType(spec.name, f"ccxml's MSCCLang front end as {spec.name}")
        module.__dict__.update(names)
        module.__all__ = sorted(names)
        return module

    def exec_module(self, module):
        return None


@contextmanager
def msccl_served():
    """``msccl*`` imports resolve to ccxml's MSCCLang inside the block, and only there."""
    saved = {name: mod for name, mod in sys.modules.items() if _is_msccl(name)}
    for name in saved:
        del sys.modules[name]
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)
        for name in [name for name in sys.modules if _is_msccl(name)]:
            del sys.modules[name]
        sys.modules.update(saved)


def run_script(path: str, args, sess) -> int:
    """Run the script at ``path`` with ``args`` in session ``sess``; return its exit status
    (0 when it runs to its end). Raises MSCCLangError for an exception the script raised."""
    from ccxml.mscclang.program import session
    from ccxml.vocab.files import input_problem
    problem = input_problem(path)
    if problem:
        raise MSCCLangError(problem.replace("no such file", "no such script"))
    path = os.path.abspath(path)
    argv, syspath0 = sys.argv, list(sys.path)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(path))
    try:
        with msccl_served(), session(sess):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        raise
    except Exception as e:
        raise MSCCLangError(_one_line(path, e)) from None
    finally:
        sys.argv = argv
        sys.path[:] = syspath0
    return 0


def _one_line(path: str, e: BaseException) -> str:
    """``script.py:LINE: what`` for an exception raised while the script ran."""
    where = os.path.basename(path)
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if os.path.abspath(frame.filename) == path:
            where = f"{where}:{frame.lineno}"
            break
    if isinstance(e, SyntaxError) and e.lineno:
        where = f"{os.path.basename(path)}:{e.lineno}"
    message = str(e).splitlines()[0] if str(e) else ""
    if isinstance(e, CcxmlError):
        return f"{where}: {message}"
    return f"{where}: {type(e).__name__}" + (f": {message}" if message else "")


__all__ = ["SERVED", "msccl_served", "run_script"]
