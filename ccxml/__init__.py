"""ccxml: collective-communication algorithms compiled to MSCCL XML, proven by an interpreter.

Public entry points are imported lazily so that ``import ccxml`` stays cheap:

* ``ccxml.Program`` / ``ccxml.Chunk`` — the Chunk API (ccxml.chunk)
* ``ccxml.load(path)`` — parse an MSCCL XML file safely into a :class:`ccxml.schedule.Schedule`
* ``ccxml.verify(path_or_schedule, ...)`` — loader checks + reference interpreter
"""
from __future__ import annotations

import importlib
import os

__version__ = "0.1.0"

# In a source checkout the algorithm scripts live in <repo>/algorithms; an installed ccxml has
# them as ccxml/algorithms. Let the package find them in both cases.
_here = os.path.dirname(os.path.abspath(__file__))
_repo = os.path.dirname(_here)
if (not os.path.isdir(os.path.join(_here, "algorithms"))
        and os.path.isfile(os.path.join(_repo, "algorithms", "__init__.py"))):
    __path__.append(_repo)  # noqa: F821 - the package's own __path__

# compiled modules load only when they were built from the source that is here (ccxml._native)
from ccxml import _native  # noqa: E402

_native.install()

_LAZY = {
    "Program": ("ccxml.chunk", "Program"),
    "Chunk": ("ccxml.chunk", "Chunk"),
    "load": ("ccxml.xmlload", "load"),
    "loads": ("ccxml.xmlload", "loads"),
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
