"""What an MSCCLang program records and what lowering it gives back: the operation kinds, the
:class:`Session` of a run, one ``XML()`` call's :class:`Output`, and :class:`Recorded`, the face a
recorded program (:class:`ccxml.mscclang.program.MSCCLProgram`) shows to the lowering
(:mod:`ccxml.mscclang.lower`).

These live below both modules so that the lowering does not import the program API that calls it
(no import circle inside the package).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

#: operation kinds of the recorded program
COPY, REDUCE = "copy", "reduce"


@dataclass
class Output:
    """One ``XML()`` call's result."""

    name: str
    ngpus: int
    coll: str
    text: str
    tbs: int
    steps: int
    nchannels: int


@dataclass
class Session:
    """What ``XML()`` and ``Check()`` are asked for during one run, and what they produced.

    ``target``/``min_bytes``/``max_bytes`` are the ``ccxml generate`` options; ``outputs`` the
    XML texts in call order; ``failures`` (program, reason) for each failed ``Check()``; a note
    (an override of a program's hint) is printed to stderr once per run."""

    target: str = "exec"
    min_bytes: int = 0
    max_bytes: int = 0
    print_xml: bool = False
    outputs: list[Output] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)

    def note(self, key: str, message: str) -> None:
        if key not in self.notes:
            self.notes[key] = message
            print(f"ccxml: {message}", file=sys.stderr)


class Recorded(Protocol):
    """A recorded MSCCLang program as the lowering reads it (an ``MSCCLProgram``)."""

    name: str
    num_ranks: int
    collective: Any
    instances: int
    protocol: str
    threadblock_policy: Any
    interleaved_replication: bool
    instr_fusion: bool
    buffers: list[dict]
    ops: list[tuple]                     # (kind, src Ref, dst Ref, sendtb, recvtb, ch)
    _session: Session

    def lower(self, target: str | None = None) -> Any: ...


__all__ = ["COPY", "REDUCE", "Output", "Recorded", "Session"]
