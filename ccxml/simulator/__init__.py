"""Cost simulator: how long a loaded MSCCL schedule takes under the α-β-γ model.

Public API:

* :func:`simulate` — one schedule (a :class:`~ccxml.loader.model.Schedule`, a file path, or XML text)
  at one message size on a :class:`~ccxml.topology.model.Topology` → :class:`SimResult`
  (time, algbw, busbw, critical path, per-rank and per-link busy time).
* :func:`sweep` — the same over several sizes (an nccl-tests style table).
* :func:`busbw_bound` — the fastest any schedule could be on a topology (its cut bounds,
  :mod:`ccxml.topology.bounds`), as a time and a busbw.
* :func:`parse_size`, :func:`size_range`, :func:`busbw_factor`, :data:`DEFAULT_TOPOLOGY`.

The model and its exact semantics are documented in :mod:`ccxml.simulator.engine`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from ccxml.loader.model import Schedule
from ccxml.simulator.results import (
    LinkStats,
    NetLinkStats,
    PathStep,
    RankStats,
    SimResult,
    StepSpan,
    Timeline,
)
from ccxml.simulator.run import simulate_schedule
from ccxml.topology.model import Topology, TopologyError
from ccxml.vocab.errors import SimulationError
from ccxml.vocab.sizes import BUSBW_FACTORS, busbw_factor, chunk_bytes, format_size, parse_size, size_range

#: used when neither a topology nor α/β/γ is given and the file records none:
#: 1 µs per transfer, 100 GB/s links, reductions at 1 TB/s
DEFAULT_TOPOLOGY = Topology.flat(alpha=1e-6, beta=1e-11, gamma=1e-12)


def resolve_topology(schedule: Schedule | None = None, topology: Topology | str | os.PathLike | dict | None = None,
                     alpha: float | None = None, beta: float | None = None,
                     gamma: float | None = None) -> Topology:
    """The topology to simulate on.

    An explicit ``topology`` (object, dict, or JSON/TOML path) wins; else flat ``alpha/beta/gamma``
    (missing ones taken from :data:`DEFAULT_TOPOLOGY`); else the topology the schedule's ``<algo>``
    records (:meth:`Topology.from_attrs`); else :data:`DEFAULT_TOPOLOGY`.
    """
    flat_given = any(x is not None for x in (alpha, beta, gamma))
    if topology is not None and flat_given:
        raise TopologyError("give either a topology or alpha/beta/gamma, not both")
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, dict):
        return Topology.from_dict(topology)
    if topology is not None:
        from ccxml.topology.files import load_topology
        return load_topology(topology)
    if flat_given:
        d = DEFAULT_TOPOLOGY.intra
        return Topology.flat(d.alpha if alpha is None else alpha, d.beta if beta is None else beta,
                             d.gamma if gamma is None else gamma)
    if schedule is not None:
        recorded = recorded_topology(schedule)
        if recorded is not None:
            if recorded.is_network or any(x for lv in (recorded.intra, recorded.inter_level)
                                          for x in (lv.alpha, lv.beta, lv.gamma)):
                return recorded
            # --servers/--groups give a shape and no costs: the shape with the default links
            if recorded.groups is not None:
                return Topology.from_groups(recorded.groups, intra=DEFAULT_TOPOLOGY.intra)
    return DEFAULT_TOPOLOGY


def recorded_topology(schedule: Schedule) -> Topology | None:
    """The topology written on the schedule's ``<algo>`` (see :meth:`Topology.to_attrs`), if any."""
    attrs = dict(getattr(schedule, "extra", {}) or {})
    attrs.update(schedule.attrs)
    return Topology.from_attrs(attrs)


@dataclass(frozen=True)
class BusbwBound:
    """No schedule of ``coll`` moves ``nbytes`` faster than ``time_s`` on the topology, i.e. with a
    busbw above ``busbw`` (B/s); ``cut`` says which cut of the network gives the bound."""
    time_s: float
    busbw: float
    cut: str


def busbw_bound(topology: Topology, coll: str, nranks: int, nbytes: float, root: int = 0) -> BusbwBound:
    """The topology's cut bound (:func:`ccxml.topology.bounds.lower_bound`) for ``coll``."""
    from ccxml.topology.bounds import lower_bound
    b = lower_bound(topology, coll, nranks, nbytes, root)
    busbw = busbw_factor(coll, nranks) * nbytes / b.time_s if b.time_s > 0 else float("inf")
    return BusbwBound(b.time_s, busbw, b.cut)


def as_schedule(source: Schedule | str | os.PathLike) -> Schedule:
    """A Schedule from a Schedule, an XML file path, or XML text (starting with ``<``)."""
    if isinstance(source, Schedule):
        return source
    if isinstance(source, str) and source.lstrip().startswith("<"):
        from ccxml.loader.reader import loads
        return loads(source)
    from ccxml.loader.reader import load
    return load(os.fspath(source))


def simulate(schedule: Schedule | str | os.PathLike, nbytes: float,
             topology: Topology | str | os.PathLike | dict | None = None, *,
             alpha: float | None = None, beta: float | None = None,
             gamma: float | None = None, record: bool = False) -> SimResult:
    """Simulate ``schedule`` moving ``nbytes`` bytes (nccl-tests' size of the collective);
    ``record=True`` adds the result's :class:`Timeline`.

    Raises :class:`SimulationError` for schedules that cannot run (deadlock, unmatched receive,
    malformed steps) and :class:`~ccxml.topology.model.TopologyError` for a topology that does not fit.
    """
    sched = as_schedule(schedule)
    topo = resolve_topology(sched, topology, alpha, beta, gamma)
    return simulate_schedule(sched, nbytes, topo, record=record)


def sweep(schedule: Schedule | str | os.PathLike, sizes: Iterable[float],
          topology: Topology | str | os.PathLike | dict | None = None, **flat) -> list[SimResult]:
    """:func:`simulate` at every size in ``sizes`` (the schedule is loaded once)."""
    sched = as_schedule(schedule)
    topo = resolve_topology(sched, topology, flat.get("alpha"), flat.get("beta"), flat.get("gamma"))
    return [simulate_schedule(sched, n, topo) for n in sizes]


__all__ = ["simulate", "sweep", "simulate_schedule", "SimResult", "SimulationError", "PathStep", "LinkStats",
           "NetLinkStats", "StepSpan", "Timeline", "BusbwBound", "busbw_bound", "RankStats", "busbw_factor",
           "chunk_bytes", "parse_size", "size_range", "format_size", "resolve_topology", "recorded_topology",
           "as_schedule", "DEFAULT_TOPOLOGY", "BUSBW_FACTORS"]
