"""What a timeline picture shows, built from a loaded schedule and its recorded simulation.

:func:`build_view` joins the :class:`~ccxml.simulator.Timeline` of ``simulate(..., record=True)``
(when each step ran, what released it, whose data it took, the critical path, each link's
utilisation over time) with the schedule's own steps (buffers, offsets, cnt, depid/deps/hasdep) into a
:class:`View`: one row per (rank, thread block), the steps of each row in order, the links'
utilisation averaged over :data:`LINK_BINS` equal slices of the run. The HTML page and the SVG
picture (:mod:`ccxml.show.html`, :mod:`ccxml.show.svg`) draw a View and nothing else.

Times are integers of ``tick`` seconds, a power of ten chosen so that the whole run is 10^8..10^9
ticks: exact to 8 digits, and short in the page's data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ccxml.loader.model import ScheduleStep
from ccxml.vocab.files import file_text, shown_path
from ccxml.vocab.wire import StepType

#: the five kinds of step in the legend: name, the wire step types it covers, its colour
CATEGORIES = (
    ("send", (StepType.SEND.value,), "#4e79a7"),
    ("receive", (StepType.RECV.value,), "#59a14f"),
    ("fused", tuple(t.value for t in StepType if t.receives and (t.sends or t.reduces)), "#f28e2b"),
    ("copy", (StepType.COPY.value,), "#9c755f"),
    ("reduce", (StepType.REDUCE.value,), "#b07aa1"),
)
_CATEGORY_OF = {t: i for i, (_, types, _) in enumerate(CATEGORIES) for t in types}

#: equal slices of the run over which each link's utilisation is averaged
LINK_BINS = 400


def category(step_type: str) -> int:
    """Index into :data:`CATEGORIES` of a real wire step type (nops are not steps; the simulator
    rejects unknown types before a view is built)."""
    return _CATEGORY_OF[step_type]


@dataclass(frozen=True)
class Row:
    """One thread block: its rank, id, peers and channel, and its steps ``first..end-1``."""
    gpu: int
    tb: int
    send: int
    recv: int
    chan: int
    first: int
    end: int

    @property
    def label(self) -> str:
        return f"r{self.gpu} tb{self.tb}"


@dataclass(frozen=True, slots=True)
class Step:
    """One real step (nops are not steps) with its simulated span in ticks."""
    row: int
    index: int           # position in its thread block
    start: int
    end: int
    xml: ScheduleStep    # the file's <step>: type, buffers, offsets, cnt, depid/deps/hasdep

    @property
    def type(self) -> str:
        return self.xml.type


@dataclass(frozen=True)
class Link:
    """One directed link that carried data. ``load``: the share of its bandwidth in use, averaged
    over the run (what the slices show: data and, on a network, the ports' per-message work; a
    dedicated link is in use for the whole α + b·β of each transfer); ``utilization``: bytes /
    (bandwidth × run), the figure ``ccxml simulate`` prints; ``bins``: ``load`` per slice of the
    run, in integer percent (:data:`LINK_BINS` slices)."""
    name: str
    kind: str
    capacity_GBps: float | None
    load: float
    utilization: float
    transfers: int
    bins: tuple[int, ...]


@dataclass
class View:
    title: str                   # the schedule's name (from the file: any text)
    label: str                   # what the user asked for (file name or "ALGO COLL")
    facts: list[tuple[str, str]]  # (what, value) lines of the header
    tick: float                  # seconds per time unit
    makespan: int                # ticks
    rows: list[Row]
    steps: list[Step]
    deps: list[tuple[int, int]]  # (step, the step that released one of its dependencies)
    sender: list[int]            # per step: the send whose data it took, or -1
    receiver: list[int]          # per step: the receive that took its data, or -1
    critical: list[int]          # steps of the critical path, first to last
    links: list[Link]            # busiest first
    notes: list[str] = field(default_factory=list)


def time_tick(makespan_s: float) -> float:
    """The power of ten (seconds) that makes the run 10^8..10^9 ticks long (1 ps for an empty one)."""
    if not makespan_s > 0 or not math.isfinite(makespan_s):
        return 1e-12
    return 10.0 ** (math.floor(math.log10(makespan_s)) - 8)


def bin_utilization(points: list[tuple[float, float]], makespan: float, nbins: int) -> list[float]:
    """Average utilisation in each of ``nbins`` equal slices of 0..makespan, from change points
    ``[(t, u), ...]`` (u holds from t to the next point; 0 before the first and after the last).

    The integral of u is piecewise linear between change points, so reading it at the slice
    edges by linear interpolation is exact; a slice's average is its integral over its width."""
    if makespan <= 0 or not points:
        return [0.0] * nbins
    t = np.array([p[0] for p in points], dtype=np.float64)
    u = np.array([p[1] for p in points], dtype=np.float64)
    area = np.concatenate(([0.0], np.cumsum(u[:-1] * np.diff(t))))
    edges = np.linspace(0.0, makespan, nbins + 1)
    return (np.diff(np.interp(edges, t, area)) / (makespan / nbins)).tolist()


def build_view(schedule, result, *, label: str, topology: str = "", notes: list[str] | None = None) -> View:
    """The View of ``schedule`` as ``result`` (a :class:`~ccxml.simulator.SimResult` simulated with
    ``record=True``) ran it; ``topology`` describes where, ``notes`` are shown under the header."""
    tl = result.timeline
    if tl is None:
        raise ValueError("build_view needs a result simulated with record=True")
    tick = time_tick(result.time_s)

    def ticks(t: float) -> int:
        return round(t / tick)

    spans = {(sp.gpu, sp.tb, sp.step): sp for sp in tl.spans}
    rows: list[Row] = []
    steps: list[Step] = []
    ref_id: dict[tuple[int, int, int], int] = {}
    for g in sorted(schedule.gpus, key=lambda g: g.id):
        for tb in sorted(g.tbs, key=lambda tb: tb.id):
            first = len(steps)
            for index, xml in enumerate(tb.read_steps()):
                sp = spans.get((g.id, tb.id, index))
                if sp is None:          # a nop: not a step
                    continue
                ref_id[(g.id, tb.id, index)] = len(steps)
                steps.append(Step(len(rows), index, ticks(sp.start), ticks(sp.end), xml))
            rows.append(Row(g.id, tb.id, tb.send, tb.recv, tb.chan, first, len(steps)))
    dep_pairs: list[tuple[int, int]] = []
    sender = [-1] * len(steps)
    receiver = [-1] * len(steps)
    for key, i in ref_id.items():
        sp = spans[key]
        for d in sp.deps:
            dep_pairs.append((i, ref_id[d]))
        if sp.sender is not None:
            j = ref_id[sp.sender]
            sender[i] = j
            receiver[j] = i
    dep_pairs.sort()
    links = []
    for ln in result.net_links:
        pts = tl.links.get(ln.name, [])
        bins = bin_utilization(pts, result.time_s, LINK_BINS)
        cap = None if ln.capacity == math.inf else ln.capacity / 1e9
        links.append(Link(ln.name, ln.kind, cap, sum(bins) / LINK_BINS, ln.utilization(result.time_s),
                          ln.transfers, tuple(min(100, round(b * 100)) for b in bins)))
    links.sort(key=lambda ln: (-ln.load, ln.name))
    from ccxml.vocab.sizes import format_size
    facts = [("collective", schedule.coll), ("ranks", str(result.nranks)),
             ("thread blocks", str(len(rows))), ("steps", str(len(steps))),
             ("message", f"{format_size(result.nbytes)} ({int(result.nbytes)} B)"),
             ("time", f"{result.time_s * 1e6:.2f} us"),
             ("busbw", f"{result.busbw / 1e9:.2f} GB/s"),
             ("critical path", f"{len(tl.critical)} steps"),
             ("topology", topology or "-"),
             ("model", f"{result.model} links")]
    # the loader holds a file's bytes one character each: the name as its UTF-8 spells it
    return View(file_text(schedule.name), shown_path(label), facts, tick, ticks(result.time_s), rows, steps,
                dep_pairs, sender, receiver, [ref_id[c] for c in tl.critical], links,
                list(notes or []) + list(result.warnings))
