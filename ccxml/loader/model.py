"""A loaded MSCCL XML file: the ``<algo>/<gpu>/<tb>/<step>`` tree as the runtime reads it.

This is what :func:`ccxml.load` returns and what the loader checks, the interpreter and the
simulator consume. It mirrors the wire format one to one and knows nothing of how a schedule was
made. Integers hold the values the runtime's ``strtol(..., 0)`` reads; lexical problems found
while tokenizing (tabs, leading zeros, declarations, ...) are kept in ``Schedule.lexical``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

#: a number written the only way every reader agrees on: decimal, no sign but ``-``, no leading zero
PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_STRTOL = re.compile(r"[ \t\n\v\f\r]*([+-]?)(?:(0[xX])([0-9a-fA-F]+)|(0)([0-7]*)|([1-9][0-9]*))?")


def strtol0(raw: str) -> int:
    """The value C's ``strtol(raw, NULL, 0)`` returns, without its clamping to ``long``.

    Leading whitespace and a sign are skipped, ``0x`` means hex, a leading ``0`` means octal (so
    ``"08"`` reads as 0 and ``"010"`` as 8), trailing junk is ignored and a non-number reads as 0.
    Callers that must mimic the C int range check the magnitude themselves.
    """
    m = _STRTOL.match(raw)
    sign, hx, hexdigits, zero, octdigits, dec = m.groups()
    if hx:
        value = int(hexdigits, 16)
    elif zero:
        value = int(octdigits, 8) if octdigits else 0
    elif dec:
        value = int(dec)
    else:
        return 0
    return -value if sign == "-" else value


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


#: the step attributes in column order, then the line: what :meth:`ScheduleTB.columns` returns
STEP_COLUMNS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep",
                "line")


class StepTable:
    """The steps of a whole file as numpy columns in document order (built by the loader).

    ``type``, ``srcbuf`` and ``dstbuf`` are codes into :data:`TYPES` and :data:`BUFS`; the
    other columns hold the integers of :data:`STEP_COLUMNS` (``line`` 1-based). A TB loaded
    from the table holds the row range of its steps (see :meth:`ScheduleTB.table_rows`).
    """

    TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
    BUFS = ("i", "o", "s")
    __slots__ = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
                 "hasdep", "line")

    def __init__(self, **cols):
        for k in self.__slots__:
            setattr(self, k, cols[k])

    def __len__(self) -> int:
        return len(self.s)

    def rows(self, a: int, b: int) -> tuple:
        """Rows a..b-1 as the 11 lists of :data:`STEP_COLUMNS`."""
        T, B = self.TYPES, self.BUFS
        return (self.s[a:b].tolist(), list(map(T.__getitem__, self.type[a:b].tolist())),
                list(map(B.__getitem__, self.srcbuf[a:b].tolist())), self.srcoff[a:b].tolist(),
                list(map(B.__getitem__, self.dstbuf[a:b].tolist())), self.dstoff[a:b].tolist(),
                self.cnt[a:b].tolist(), self.depid[a:b].tolist(), self.deps[a:b].tolist(),
                self.hasdep[a:b].tolist(), self.line[a:b].tolist())


class ScheduleTB:
    """One ``<tb>``: its attributes and its steps.

    ``steps`` is a list of :class:`ScheduleStep`. The loader may instead hand over the steps as
    columns (one sequence per attribute, see :data:`STEP_COLUMNS`) or as a row range of a
    :class:`StepTable`, which is what the interpreter and the loader checks read; the
    ``ScheduleStep`` objects are then built the first time ``steps`` is read, and from then on
    the list is the truth (it may be edited in place).
    """

    __slots__ = ("id", "send", "recv", "chan", "line", "_steps", "_cols", "_tab")

    def __init__(self, id: int, send: int, recv: int, chan: int, steps: list | None = None,
                 line: int = 0, columns: tuple | None = None):
        self.id = id
        self.send = send
        self.recv = recv
        self.chan = chan
        self.line = line
        self._tab = None
        if columns is not None and steps is None:
            self._steps = None
            self._cols = columns
        else:
            self._steps = [] if steps is None else steps
            self._cols = None

    @property
    def steps(self) -> list[ScheduleStep]:
        if self._steps is None:
            self._steps = list(map(ScheduleStep, *self.columns()))
            self._cols = None
            self._tab = None
        return self._steps

    def read_steps(self) -> list[ScheduleStep]:
        """The steps as objects for reading only: the loader's columns or table rows stay the
        truth (``steps`` instead makes the objects the truth, which drops the table)."""
        if self._steps is not None:
            return self._steps
        return list(map(ScheduleStep, *self.columns()))

    @steps.setter
    def steps(self, value: list[ScheduleStep]) -> None:
        self._steps = value
        self._cols = None
        self._tab = None

    def set_columns(self, columns: tuple) -> None:
        """Replace the steps by columns (:data:`STEP_COLUMNS`, equal lengths)."""
        self._steps = None
        self._cols = columns
        self._tab = None

    def set_table_rows(self, table: StepTable, a: int, b: int) -> None:
        """Replace the steps by rows a..b-1 of ``table``."""
        self._steps = None
        self._cols = None
        self._tab = (table, a, b)

    def table_rows(self):
        """(table, first row, end row) while the steps are the loader's table rows, else None."""
        return self._tab

    @property
    def nsteps(self) -> int:
        """Number of ``<step>`` elements, without building step objects."""
        if self._tab is not None:
            return self._tab[2] - self._tab[1]
        return len(self._steps) if self._steps is not None else len(self._cols[0])

    def columns(self) -> tuple:
        """The steps as 11 parallel sequences (:data:`STEP_COLUMNS`); do not modify them.

        Built afresh from ``steps`` when the step objects exist (they may have been edited).
        """
        if self._steps is None:
            if self._cols is None:
                t, a, b = self._tab
                self._cols = t.rows(a, b)
            return self._cols
        if not self._steps:
            return ((),) * len(STEP_COLUMNS)
        return tuple(map(list, zip(*[(x.s, x.type, x.srcbuf, x.srcoff, x.dstbuf, x.dstoff, x.cnt,
                                      x.depid, x.deps, x.hasdep, x.line) for x in self._steps])))

    def __repr__(self) -> str:
        return (f"ScheduleTB(id={self.id}, send={self.send}, recv={self.recv}, chan={self.chan}, "
                f"steps=<{self.nsteps}>, line={self.line})")

    def __eq__(self, other) -> bool:
        if not isinstance(other, ScheduleTB):
            return NotImplemented
        return ((self.id, self.send, self.recv, self.chan, self.line) ==
                (other.id, other.send, other.recv, other.chan, other.line)
                and [tuple(c) for c in self.columns()] == [tuple(c) for c in other.columns()])

    __hash__ = None

    def __deepcopy__(self, memo):
        import copy
        return ScheduleTB(self.id, self.send, self.recv, self.chan,
                          copy.deepcopy(self.steps, memo), self.line)


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
    """Something the runtime's hand-written tokenizer reads differently from an XML parser.

    ``fatal`` issues make every rank's load fail (tab between elements, XML declaration, ...);
    the others are noted but the runtime accepts the file (e.g. an ignored unknown element).
    """
    line: int
    message: str
    fatal: bool = True
    code: str = "lexical"


@dataclass(slots=True)
class MissingAttribute:
    """A required-by-some-runtime attribute the runtime cannot see on an element.

    Absent, or dropped because it came after the 16 attribute slots (§2.5). The element's field
    in the model then holds 0 (or "" for strings). ``gpu``/``tb``/``step`` locate it (the step is
    its position in the TB); ``element`` is "algo", "gpu", "tb" or "step".
    """
    element: str
    attr: str
    line: int
    gpu: int | None = None
    tb: int | None = None
    step: int | None = None
    dropped: bool = False   # present but beyond the 16 attribute slots


@dataclass
class Schedule:
    """One ``<algo>``. ``attrs`` holds the raw attribute strings of the ``<algo>`` element."""

    attrs: dict[str, str]
    gpus: list[ScheduleGPU] = field(default_factory=list)
    lexical: list[LexicalIssue] = field(default_factory=list)
    path: str = ""
    line: int = 0        # line of the <algo> element (0 when built in memory)
    #: attributes some element lacks (exec/rccl/legacy each decide which of them are required)
    missing: list[MissingAttribute] = field(default_factory=list)
    #: names of elements the runtime skips (e.g. TACCL's <copy>), with how often they occur
    other_elements: dict[str, int] = field(default_factory=dict)
    # per-element attributes the runtime does not read but that ccxml writes (e.g. topology)
    extra: dict[str, str] = field(default_factory=dict)

    def _int(self, key: str, default: int | None = None) -> int | None:
        """The attribute as the runtime reads it (``strtol(..., 0)``); ``default`` when absent."""
        raw = self.attrs.get(key)
        if raw is None:
            return default
        return strtol0(raw)

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

    def gpu_by_id(self) -> dict[int, ScheduleGPU]:
        """``<gpu>`` elements by id; with duplicate ids the first one wins."""
        out: dict[int, ScheduleGPU] = {}
        for g in self.gpus:
            out.setdefault(g.id, g)
        return out

    @property
    def nsteps(self) -> int:
        return sum(tb.nsteps for g in self.gpus for tb in g.tbs)

    def step_table(self):
        """(table, [first row of each TB in document order] + [end]) when every TB's steps are
        still the loader's table rows, one TB after the other; else None."""
        table = None
        bounds = [0]
        for g in self.gpus:
            for tb in g.tbs:
                r = tb._tab
                if r is None:
                    return None
                if table is None:
                    table = r[0]
                    bounds[0] = r[1]
                if r[0] is not table or r[1] != bounds[-1]:
                    return None
                bounds.append(r[2])
        if table is None:
            return None
        return table, bounds
