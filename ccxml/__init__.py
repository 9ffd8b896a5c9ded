"""ccxml: collective-communication algorithms compiled to MSCCL XML, proven by an interpreter.

Public entry points are imported lazily so that ``import ccxml`` stays cheap:

* ``ccxml.Program`` / ``ccxml.Chunk`` — the Chunk API (ccxml.chunk)
* ``ccxml.load(path)`` — parse an MSCCL XML file safely into a :class:`ccxml.schedule.Schedule`
* ``ccxml.verify(path_or_schedule, ...)`` — loader checks + reference interpreter
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

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
