"""Output backends: the formats ``ccxml export FORMAT SOURCE -o OUT`` writes.

A backend is one module and one entry of :data:`BACKENDS` (as xDSL's ``xdsl-opt`` targets are a
table of name -> printer, ``xdsl/tools/command_line_tool.py``). Its module defines::

    def export(source, out: str, *, nbytes: int, **options) -> list[tuple[str, str | bytes | Iterable[str]]]

returning the files to write, as (path, content) — text, bytes, or text in parts — and writes
nothing itself: ``ccxml export`` writes them, each whole or not at all. ``source`` is what the
entry's ``takes`` asks for:

* ``"schedule"``: a loaded :class:`~ccxml.loader.model.Schedule` — SOURCE is an MSCCL XML file,
  or an algorithm built in memory as ``ccxml simulate`` builds it; such backends sit beside
  ``ccxml.show`` and read the loader's model only (the layer contracts in pyproject.toml);
* ``"program"``: the algorithm compiled for the entry's runtime ``profile`` (SOURCE must be an
  algorithm name); such backends are writers of the compiler (``ccxml.writer``).

``options`` holds the entry's ``profile`` and, for ``"schedule"`` backends, ``source_text`` (the
file's XML text, "" for an algorithm). docs/export.md shows how to add one.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    """One output format: its name on the command line, the module that writes it (imported
    when it runs), what it takes, what ``-o`` names, a runtime profile for ``"program"``
    backends."""

    name: str
    module: str
    summary: str
    takes: str = "schedule"
    output: str = "OUT"
    profile: str | None = None

    def load(self):
        """The backend's module."""
        return importlib.import_module(self.module)


BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("msccl-exec", "ccxml.writer.backend", "MSCCL XML for msccl-executor-nccl (NVIDIA)", "program",
            "OUT.xml", profile="exec"),
    Backend("msccl-rccl", "ccxml.writer.backend", "MSCCL XML for RCCL's MSCCL (AMD)", "program", "OUT.xml",
            profile="rccl"),
    Backend("msccl-legacy", "ccxml.writer.backend", "MSCCL XML for the microsoft/msccl 0.1 runtime",
            "program", "OUT.xml", profile="legacy"),
    Backend("chakra", "ccxml.export.chakra", "Chakra execution traces for ASTRA-sim's custom collectives",
            "schedule", "PREFIX (writes PREFIX.<rank>.et)"),
)}
