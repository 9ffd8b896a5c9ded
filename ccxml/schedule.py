"""A loaded MSCCL XML file: the ``<algo>/<gpu>/<tb>/<step>`` tree as the runtime reads it.

This is what :func:`ccxml.load` returns and what the loader checks, the interpreter and the
simulator consume. It mirrors the wire format one to one and knows nothing of how a schedule was
made. Integers hold the values the runtime's ``strtol(..., 0)`` reads; lexical problems found
while tokenizing (tabs, leading zeros, declarations, ...) are kept in ``Schedule.lexical``.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ScheduleStep:
    s: int
    type: str            # wire string, e.g. "rrcs"; may be unknown in a hostile file
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int
    hasdep: int
    line: int = 0        # 1-based line in the file (0 when built in memory)


@dataclass(slots=True)
class ScheduleTB:
    id: int
    send: int
    recv: int
    chan: int
    steps: list[ScheduleStep] = field(default_factory=list)
    line: int = 0


@dataclass(slots=True)
class ScheduleGPU:
    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: list[ScheduleTB] = field(default_factory=list)
    line: int = 0


@dataclass(slots=True)
class LexicalIssue:
    line: int
    message: str


@dataclass
class Schedule:
    """One ``<algo>``. ``attrs`` holds the raw attribute strings of the ``<algo>`` element."""

    attrs: dict[str, str]
    gpus: list[ScheduleGPU] = field(default_factory=list)
    lexical: list[LexicalIssue] = field(default_factory=list)
    path: str = ""
    # per-element attributes the runtime does not read but that ccxml writes (e.g. topology)
    extra: dict[str, str] = field(default_factory=dict)

    def _int(self, key: str, default: int | None = None) -> int | None:
        raw = self.attrs.get(key)
        if raw is None:
            return default
        try:
            return int(raw, 0) if not raw.lstrip("-").startswith("0") or raw in ("0", "-0") else int(raw, 10)
        except ValueError:
            return default

    @property
    def name(self) -> str:
        return self.attrs.get("name", "")

    @property
    def proto(self) -> str:
        return self.attrs.get("proto", "")

    @property
    def coll(self) -> str:
        return self.attrs.get("coll", "")

    @property
    def ngpus(self) -> int:
        return self._int("ngpus", 0)

    @property
    def nchannels(self) -> int:
        return self._int("nchannels", 0)

    @property
    def nchunksperloop(self) -> int:
        return self._int("nchunksperloop", 0)

    @property
    def inplace(self) -> int:
        return self._int("inplace", 0)

    @property
    def outofplace(self) -> int:
        return self._int("outofplace", 0)

    @property
    def min_bytes(self) -> int:
        return self._int("minBytes", 0)

    @property
    def max_bytes(self) -> int:
        return self._int("maxBytes", 0)

    @property
    def root(self) -> int | None:
        return self._int("root", None)

    @property
    def nsteps(self) -> int:
        return sum(len(tb.steps) for g in self.gpus for tb in g.tbs)
