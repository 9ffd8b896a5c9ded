"""What the simulator answers: :class:`SimResult` (makespan, bandwidths, critical path, per-rank
and per-link busy time) and its parts, and :class:`Timeline` (``record=True``). Both engines
(:mod:`ccxml.simulator.engine`, :mod:`ccxml.simulator.classes`) build these.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ccxml.vocab.sizes import busbw_factor

_INF = float("inf")


@dataclass(frozen=True, slots=True)
class PathStep:
    """One step on the critical path; ``released_by`` says what it waited for last."""
    gpu: int
    tb: int
    step: int            # position in the TB (= the XML ``s`` in well-formed files)
    type: str
    peer: int | None     # send peer for sending steps, else recv peer, else None
    start: float
    end: float
    released_by: str     # "start", "program", "dependency", "data", "link"

    def to_dict(self) -> dict:
        return {"gpu": self.gpu, "tb": self.tb, "step": self.step, "type": self.type,
                "peer": self.peer, "start_s": self.start, "end_s": self.end,
                "released_by": self.released_by}


@dataclass(frozen=True, slots=True)
class LinkStats:
    src: int
    dst: int
    level: str
    transfers: int
    bytes: float
    busy_s: float

    def to_dict(self, makespan: float) -> dict:
        return {"src": self.src, "dst": self.dst, "level": self.level, "transfers": self.transfers,
                "bytes": self.bytes, "busy_s": self.busy_s,
                "utilization": self.busy_s / makespan if makespan > 0 else 0.0}


@dataclass(frozen=True, slots=True)
class NetLinkStats:
    """One directed link of the network (shared model: a link of the graph; dedicated model: the
    link of one pair of ranks). ``capacity`` in bytes/s (inf: unconstrained); ``busy_s``: time with
    at least one transfer on it; utilisation = bytes / (capacity × makespan)."""
    name: str
    kind: str
    capacity: float
    transfers: int
    bytes: float
    busy_s: float

    def utilization(self, makespan: float) -> float:
        if makespan <= 0 or self.capacity in (0.0, _INF):
            return 0.0
        return self.bytes / (self.capacity * makespan)

    def to_dict(self, makespan: float) -> dict:
        return {"link": self.name, "kind": self.kind,
                "capacity_GBps": None if self.capacity == _INF else self.capacity / 1e9,
                "transfers": self.transfers, "bytes": self.bytes, "busy_s": self.busy_s,
                "utilization": self.utilization(makespan)}


@dataclass(frozen=True, slots=True)
class StepSpan:
    """When one real step of one TB ran (``step``: its position in the TB).

    ``deps``: the steps whose completion released its dependencies (``depid/deps``, including those
    carried by the nops before it), in that order, as (gpu, tb, step); ``sender``: for a receiving
    step, the sending step whose data it took (the k-th send of a connection feeds its k-th
    receive), else None."""
    gpu: int
    tb: int
    step: int
    type: str
    start: float
    end: float
    deps: tuple[tuple[int, int, int], ...] = ()
    sender: tuple[int, int, int] | None = None

    def to_dict(self) -> dict:
        return {"gpu": self.gpu, "tb": self.tb, "step": self.step, "type": self.type,
                "start_s": self.start, "end_s": self.end, "deps": [list(d) for d in self.deps],
                "sender": None if self.sender is None else list(self.sender)}


@dataclass
class Timeline:
    """What a timeline view needs, recorded only when asked (``record=True``).

    ``spans``: every real step (nops are not steps), by (gpu, tb, step), with what released its
    dependencies and, for a receive, the send it took data from; ``critical``: the critical
    path as (gpu, tb, step) references into ``spans``, first to last; ``links``: for each link that
    carried data, its utilisation over time as change points ``[(t, u), ...]`` — u (0..1, the sum of
    its transfers' rates over its capacity; dedicated links: 1 while a transfer occupies it) holds
    from t until the next point, and the last point is 0 (idle) at the link's last transfer's end.
    """
    spans: list[StepSpan]
    critical: list[tuple[int, int, int]]
    links: dict[str, list[tuple[float, float]]]

    def to_dict(self) -> dict:
        return {"spans": [s.to_dict() for s in self.spans],
                "critical": [list(c) for c in self.critical],
                "links": {k: [list(p) for p in v] for k, v in self.links.items()}}


@dataclass(frozen=True, slots=True)
class RankStats:
    rank: int
    finish_s: float      # when the rank's last step ends
    busy_s: float        # time any of its links (either direction) or reductions is active
    send_s: float        # sum of its outgoing transfer times
    recv_s: float        # sum of its incoming transfer times
    reduce_s: float      # sum of its reduction times

    def to_dict(self) -> dict:
        return {"rank": self.rank, "finish_s": self.finish_s, "busy_s": self.busy_s,
                "send_s": self.send_s, "recv_s": self.recv_s, "reduce_s": self.reduce_s}


@dataclass
class SimResult:
    """Outcome of one simulation at one message size."""
    coll: str
    nranks: int
    nbytes: float
    chunk_bytes: float
    time_s: float
    steps: int
    transfers: int
    critical_path: list[PathStep]
    ranks: list[RankStats]
    links: list[LinkStats]
    warnings: list[str] = field(default_factory=list)
    #: "dedicated" (α-β-γ levels) or "shared" (a network: links shared max-min fairly)
    model: str = "dedicated"
    #: every link that carried data, per direction (see :class:`NetLinkStats`)
    net_links: list[NetLinkStats] = field(default_factory=list)
    #: only with ``record=True``
    timeline: Timeline | None = None

    @property
    def busiest_link(self) -> NetLinkStats | None:
        """The link with the highest utilisation (ties: the first by name)."""
        if not self.net_links:
            return None
        return max(self.net_links, key=lambda ln: (ln.utilization(self.time_s), ln.busy_s,
                                                   [-ord(c) for c in ln.name]))

    @property
    def algbw(self) -> float:
        """Bytes per second, n / t (nccl-tests ``algbw``)."""
        return self.nbytes / self.time_s if self.time_s > 0 else float("inf")

    @property
    def busbw(self) -> float:
        return self.algbw * busbw_factor(self.coll, self.nranks)

    def to_dict(self) -> dict:
        return {"coll": self.coll, "nranks": self.nranks, "bytes": self.nbytes,
                "chunk_bytes": self.chunk_bytes, "time_s": self.time_s,
                "algbw_GBps": self.algbw / 1e9, "busbw_GBps": self.busbw / 1e9,
                "steps": self.steps, "transfers": self.transfers,
                "critical_path": [s.to_dict() for s in self.critical_path],
                "ranks": [r.to_dict() for r in self.ranks],
                "link_busy": [ln.to_dict(self.time_s) for ln in self.links],
                "model": self.model,
                "net_links": [ln.to_dict(self.time_s) for ln in self.net_links],
                "warnings": list(self.warnings)}


def _union(intervals: list[tuple[float, float]]) -> float:
    total, cur_s = 0.0, 0.0
    cur_e: float | None = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


__all__ = ["LinkStats", "NetLinkStats", "PathStep", "RankStats", "SimResult", "StepSpan", "Timeline"]
