"""ccxml: collective-communication algorithms compiled to MSCCL XML, proven by an interpreter.

Public entry points are imported lazily so that ``import ccxml`` stays cheap:

* ``ccxml.Program`` / ``ccxml.Chunk`` — the Chunk API (ccxml.frontend.chunk)
* ``ccxml.load(path)`` — parse an MSCCL XML file safely into a :class:`ccxml.loader.model.Schedule`
* ``ccxml.verify(path_or_schedule, ...)`` — loader checks + reference interpreter
"""
from __future__ import annotations

import importlib
import importlib.abc
import sys

__version__ = "0.1.0"

# compiled modules load only when they were built from the source that is here (ccxml._native)
from ccxml import _native  # noqa: E402

_native.install()

#: modules that moved when the packages were cut by stage: importing the old name says where to
_MOVED = {
    "ccxml.wire": "ccxml.vocab.wire",
    "ccxml.collectives": "ccxml.vocab.collectives",
    "ccxml.findings": "ccxml.vocab.findings",
    "ccxml.simulator.sizes": "ccxml.vocab.sizes",
    "ccxml.chunk": "ccxml.frontend.chunk",
    "ccxml.algorithm": "ccxml.frontend.algorithm",
    "ccxml.export": "ccxml.writer.msccl",
    "ccxml.xmlload": "ccxml.loader",
    "ccxml.schedule": "ccxml.loader.model",
    "ccxml.loadcheck": "ccxml.loader.rules",
    "ccxml.progress": "ccxml.cli.progress",
    "ccxml.commands_generate": "ccxml.cli.generate",
    "ccxml.commands_simulate": "ccxml.cli.simulate",
    "ccxml.commands_tune": "ccxml.cli.tune",
    "ccxml.commands_verify": "ccxml.cli.verify",
}


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Fail the import of a moved module with one line naming its new place."""

    def find_spec(self, fullname, path=None, target=None):
        new = _MOVED.get(fullname)
        if new is not None:
            raise ModuleNotFoundError(f"{fullname} moved to {new}: import it from there", name=fullname)
        return None


sys.meta_path.append(_MovedFinder())

_LAZY = {
    "Program": ("ccxml.frontend.chunk", "Program"),
    "Chunk": ("ccxml.frontend.chunk", "Chunk"),
    "Coll": ("ccxml.vocab.wire", "Coll"),
    "load": ("ccxml.loader", "load"),
    "loads": ("ccxml.loader", "loads"),
    "verify": ("ccxml.interpreter", "verify"),
    "simulate": ("ccxml.simulator", "simulate"),
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'ccxml' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
