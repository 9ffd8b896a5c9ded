"""``select``'s ranking and the bounds ``simulate`` prints beside its figures.

:func:`rank_algorithms` builds every registry entry that supports a collective (each for a window
ending at the size), proves it and times it, candidates in worker processes
(:mod:`ccxml.driver.pool`); :func:`bounds` and :func:`exact_bound_lines` are the topology's
limits a schedule is measured against.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ccxml.vocab.wire import UNBOUNDED

if TYPE_CHECKING:
    from typing import TypeAlias

    from ccxml.loader.model import Schedule
    from ccxml.simulator import BusbwBound
    from ccxml.simulator.results import SimResult
    from ccxml.topology.flow import ExactBound
    from ccxml.topology.model import Topology
    from ccxml.vocab.wire import Coll

    #: (name, result) of the candidates timed, fastest first
    Ranked: TypeAlias = list[tuple[str, SimResult]]
    #: what :func:`_rank_one` returns: (name, result, reason, limit, results on the others)
    Candidate: TypeAlias = tuple[str, SimResult | None, str | None, str | None, tuple[SimResult, ...]]


def _rank_one(name: str, coll: str, ranks: int, nbytes: int, topology: Topology, root: int | None,
              others: tuple[Topology, ...] = ()) -> Candidate:
    """One candidate of :func:`rank_algorithms` (a worker of the process pool): ``(name,
    SimResult, None, limit, other results)`` — ``limit`` the runtime limit it breaks when it was
    built and timed without the limits, else None; ``other results`` its times on ``others``
    (topologies of the same shape) — or ``(name, None, reason, None, ())`` when it cannot build
    this shape or fails verification."""
    from ccxml.driver.source import verification_failure
    from ccxml.driver.spec import AlgorithmSpec, schedule
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError
    limits: list[str] = []
    try:
        spec = AlgorithmSpec(name, coll, ranks, options={"max_bytes": int(nbytes)}, topology=topology, root=root)
        sched = schedule(spec, on_limit=limits.append)
        limit = limits[0] if limits else None
        from ccxml.vocab.limits import MAX_PROVED_BUILT_RANKS
        why = (verification_failure(sched, UNBOUNDED.name if limit else "exec")
               if ranks <= MAX_PROVED_BUILT_RANKS else None)   # past it: unproved (docs/limits.md)
        if why:
            return name, None, f"fails verification: {why}", None, ()
        return (name, simulate_schedule(sched, nbytes, topology), None, limit,
                tuple(simulate_schedule(sched, nbytes, t) for t in others))
    except (ValueError, SimulationError) as e:
        return name, None, str(e).splitlines()[0] if str(e) else type(e).__name__, None, ()


def by_time(ranked: Ranked) -> Ranked:
    """Fastest first, ties by name; a schedule timed at 0 s (or not a finite time) moves nothing
    the model can see: never first."""
    return sorted(ranked, key=lambda x: (not 0 < x[1].time_s < float("inf"), x[1].time_s, x[0]))


def rank_algorithms(coll: str, ranks: int, nbytes: int, topology: Topology, root: int | None = None,
                    jobs: int = 1, others: tuple[Topology, ...] = ()
                    ) -> tuple[Ranked, list[tuple[str, str | None]], dict[str, str], list[Ranked]]:
    """Simulate every available algorithm supporting ``coll`` and each of its variants
    (``NAME:VARIANT``, :meth:`Registry.entries`), each built for a window ending at ``nbytes``
    (its messages as large as the runtime moves at that size) and verified, ``jobs`` candidates
    at a time in worker processes (:func:`ccxml.driver.pool.run_all`: the same result with any
    ``jobs``).

    Returns (ranked, unavailable, unbounded, other rankings): ranked = [(name, SimResult)]
    fastest first (ties by name); unavailable = [(name, reason)] for algorithms that cannot
    build this shape or fail verification; unbounded = {name: limit} for those a runtime limit
    stops, timed without the limits; other rankings = one ranked list per topology of
    ``others`` (the same schedules on the same shape, e.g. another reading of its NICs).
    """
    from ccxml.algorithms import registry
    from ccxml.driver.pool import run_all
    ranked: Ranked = []
    skipped: list[tuple[str, str | None]] = []
    unbounded: dict[str, str] = {}
    alt: list[Ranked] = [[] for _ in others]
    work = [(name, coll, ranks, nbytes, topology, root, tuple(others)) for name in registry.entries(coll)]
    for name, result, why, limit, more in run_all(_rank_one, work, jobs):
        if result is None:
            skipped.append((name, why))
            continue
        ranked.append((name, result))
        if limit is not None:
            unbounded[name] = limit
        for lst, r in zip(alt, more):
            lst.append((name, r))
    return by_time(ranked), skipped, unbounded, [by_time(lst) for lst in alt]


def other_reading(topo: Topology) -> tuple[str, Topology] | None:
    """(name, topology) of the other reading of the NICs' per-message cost (docs/nic-model.md):
    NCCL's (``proxy = "nic"``: a network step's latency is latency) or a serial proxy's
    (``proxy = "serial"``); None when the topology has no such choice."""
    spec = topo.network if topo.is_network else None
    if spec is None or spec.proxy not in ("nic", "serial"):
        return None
    from ccxml.topology import Topology
    other = "serial" if spec.proxy == "nic" else "nic"
    return other, Topology.from_dict({"network": spec.with_proxy(other)})


#: the ``cut`` of a :func:`bound_at` that the max-flow bound gives (its cut is in exact_bound_lines)
EXACT_CUT = "the exact max-flow bound"


def exact_bound_of(topo: Topology, coll: Coll | str) -> ExactBound | None:
    """The exact max-flow bound of ``coll`` on ``topo`` (ccxml.topology.flow) where it applies:
    AllGather, ReduceScatter and AllReduce on a network topology, with networkx and scipy
    installed; else None."""
    from ccxml.vocab.errors import TopologyError
    coll = getattr(coll, "value", coll)
    if getattr(topo, "network", None) is None or coll not in ("allgather", "reducescatter", "allreduce"):
        return None
    from ccxml.topology.flow import exact_bound
    try:
        return exact_bound(topo.graph(), coll)
    except TopologyError:
        return None


def bound_at(topo: Topology, coll: Coll | str, p: int, n: float, root: int = 0,
             exact: ExactBound | None = None) -> BusbwBound:
    """The tighter of the topology's two bounds at ``n`` bytes: the port and NIC cuts
    (:func:`ccxml.simulator.busbw_bound`, any collective) and ``exact``, the max-flow bound under
    the runtime's route rule (:func:`exact_bound_of`), which every schedule the runtime can run
    obeys too. On dgx-h100 x 4 the cuts give 513 GB/s (NVLink + PCIe into a GPU), the max-flow
    bound 500 GB/s (off-node data all comes through the 50 GB/s NIC)."""
    from ccxml.simulator import BusbwBound, busbw_bound
    coll = getattr(coll, "value", coll)
    cuts = busbw_bound(topo, coll, p, n, root)
    if exact is None or exact.p != p:
        return cuts
    t = exact.time_s(n)
    if t <= cuts.time_s:
        return cuts
    return BusbwBound(t, exact.busbw, EXACT_CUT)


def bounds(topo: Topology, schedule: Schedule, sizes: list[int], root: int | None = None
           ) -> list[BusbwBound | None]:
    """The topology's busbw bound (:func:`bound_at`) for ``schedule``'s collective at each size
    (None each when it has fewer than 2 ranks); ``root`` defaults to the one the file records."""
    p = schedule.ngpus or len(schedule.gpus)
    the_root = root if root is not None else (int(schedule.attrs.get("root", 0) or 0))
    exact = exact_bound_of(topo, schedule.coll) if p >= 2 else None
    return [bound_at(topo, schedule.coll, p, n, the_root, exact) if p >= 2 else None for n in sizes]


def exact_bound_lines(topo: Topology, coll: Coll | str, busbw: float | None = None) -> list[str]:
    """``# ``-lines of the exact max-flow bound (AllGather, ReduceScatter, AllReduce on a network
    topology; ccxml.topology.flow), with its cut and the route rule, and the share ``busbw`` reaches."""
    net = getattr(topo, "network", None)
    coll = getattr(coll, "value", coll)
    if net is None or coll not in ("allgather", "reducescatter", "allreduce"):
        return []
    from ccxml.topology.flow import bound_lines, exact_bound
    lines = bound_lines(topo.graph(), coll)
    if busbw is not None and lines and "unavailable" not in lines[0]:
        share = busbw / exact_bound(topo.graph(), coll).busbw * 100
        lines[0] += f"; this schedule reaches {share:.1f}% of it"
    return [f"# {ln}" for ln in lines]
