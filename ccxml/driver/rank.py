"""``select``'s ranking and the bounds ``simulate`` prints beside its figures.

:func:`rank_algorithms` builds every registry entry that supports a collective (each for a window
ending at the size), proves it and times it, candidates in worker processes
(:mod:`ccxml.driver.pool`); :func:`bounds` and :func:`exact_bound_lines` are the topology's
limits a schedule is measured against.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Hashable

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


#: relative cost of a candidate (CPU seconds of its build, proof and simulations for
#: ``select --preset dgx-h100 --nodes 16 --coll allreduce --bytes 1G``, benchmarks/profile_select.py):
#: with ``-j N`` the longest candidates start first (LPT), so that the last worker to finish
#: does not start the longest one last. Only the order work starts in depends on it, never a
#: result; an algorithm not listed (a plugin) counts as _COST_UNKNOWN.
_COST = {"forest": 40.0, "2d-mesh": 19.0, "mesh": 11.0, "ahc": 9.5, "2d-ring": 9.0, "mesh:one-shot": 8.3,
         "nb": 5.0, "2d-torus": 3.9, "bidir-ring": 3.3, "pipeline": 3.2, "ring": 2.0, "nhr": 2.0,
         "double-tree": 1.5, "rhd": 1.4, "tree": 0.9, "hierarchical": 0.8, "nhr:single-tree": 0.2}
_COST_UNKNOWN = 5.0


def candidate_cost(name: str) -> float:
    """:data:`_COST` of candidate ``name`` (a scheduling estimate, never a result)."""
    return _COST.get(name, _COST_UNKNOWN)


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _build(name: str, coll: str, ranks: int, nbytes: int, topology: Topology, root: int | None
           ) -> tuple[str | None, str, str | None, str | None]:
    """``name`` built for a window ending at ``nbytes``: (text, profile, limit, None) — ``limit``
    the runtime limit that made it be written for the unbounded profile, else None — or (None,
    "", None, reason) when it cannot build this shape."""
    from ccxml.driver.spec import AlgorithmSpec, schedule_text
    limits: list[str] = []
    try:
        spec = AlgorithmSpec(name, coll, ranks, options={"max_bytes": int(nbytes)}, topology=topology, root=root)
        text, profile = schedule_text(spec, on_limit=limits.append)
    except ValueError as e:
        return None, "", None, _first_line(e)
    return text, profile, (limits[0] if limits else None), None


def _build_list(*args: Any) -> list[Any]:
    """:func:`_build` as a list, whose text :func:`_staged` drops once its tasks hold it."""
    return list(_build(*args))


def _proved(sched: Schedule, profile: str, ranks: int) -> str | None:
    """Why ``sched`` cannot be ranked ("fails verification: ..."), or None; not proved past
    MAX_PROVED_BUILT_RANKS (docs/limits.md)."""
    from ccxml.driver.source import verification_failure
    from ccxml.vocab.limits import MAX_PROVED_BUILT_RANKS
    why = verification_failure(sched, profile) if ranks <= MAX_PROVED_BUILT_RANKS else None
    return f"fails verification: {why}" if why else None


def _prove_text(text: str, profile: str, ranks: int) -> tuple[bool, str | None]:
    """A worker's proof of a built text: (True, None) proved, (False, reason) not rankable."""
    from ccxml.loader.reader import loads
    try:
        why = _proved(loads(text), profile, ranks)
    except ValueError as e:
        return False, _first_line(e)
    return why is None, why


def _time_text(text: str, nbytes: int, topology: Topology) -> tuple[SimResult | None, str | None]:
    """A worker's simulation of a built text: (SimResult, None) or (None, reason)."""
    from ccxml.loader.reader import loads
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError
    try:
        return simulate_schedule(loads(text), nbytes, topology), None
    except (ValueError, SimulationError) as e:
        return None, _first_line(e)


def _rank_one(name: str, coll: str, ranks: int, nbytes: int, topology: Topology, root: int | None,
              others: tuple[Topology, ...] = ()) -> Candidate:
    """One candidate of :func:`rank_algorithms`, in this process: ``(name, SimResult, None,
    limit, other results)`` — ``limit`` the runtime limit it breaks when it was built and timed
    without the limits, else None; ``other results`` its times on ``others`` (topologies of the
    same shape) — or ``(name, None, reason, None, ())`` when it cannot build this shape or fails
    verification. :func:`_combine` of the stages run as separate tasks gives the same."""
    from ccxml.loader.reader import loads
    from ccxml.simulator import simulate_schedule
    from ccxml.vocab.errors import SimulationError
    text, profile, limit, why = _build(name, coll, ranks, nbytes, topology, root)
    if text is None:
        return name, None, why, None, ()
    try:
        sched = loads(text)
        del text
        why = _proved(sched, profile, ranks)
        if why:
            return name, None, why, None, ()
        return (name, simulate_schedule(sched, nbytes, topology), None, limit,
                tuple(simulate_schedule(sched, nbytes, t) for t in others))
    except (ValueError, SimulationError) as e:
        return name, None, _first_line(e), None, ()


def _combine(name: str, built: tuple[Any, ...], proof: tuple[Any, ...] | None,
             times: list[tuple[Any, ...]]) -> Candidate:
    """:func:`_rank_one`'s answer from its stages run apart: the build, the proof (None: not
    proved) and the simulations on the topology and on each other one, reasons in the order
    _rank_one meets them."""
    text, _, limit, why = built
    if text is None:
        return name, None, why, None, ()
    if proof is not None and not proof[0]:
        return name, None, proof[1], None, ()
    for r, why in times:
        if r is None:
            return name, None, why, None, ()
    return name, times[0][0], None, limit, tuple(r for r, _ in times[1:])


def _staged(names: list[str], coll: str, ranks: int, nbytes: int, topology: Topology, root: int | None,
            others: tuple[Topology, ...], jobs: int) -> list[Candidate]:
    """:func:`_rank_one` of every name on ``jobs`` worker processes, each candidate's work in
    stages (build; then its proof and each simulation, on any free worker), the longest
    candidates first (:data:`_COST`): [candidate] in the order of ``names``."""
    from ccxml.driver.pool import run_ordered
    from ccxml.vocab.limits import MAX_PROVED_BUILT_RANKS
    topos = (topology, *others)
    prove = ranks <= MAX_PROVED_BUILT_RANKS

    def cost(i: int) -> float:
        return -candidate_cost(names[i])

    def then(key: Hashable, got: Any) -> Any:
        i, stage = key[0], key[1]  # type: ignore[index]  # run_ordered's keys: (candidate, stage, ...)
        if stage != "build" or got[0] is None:
            return []
        text, profile = got[0], got[1]
        got[0] = ""                     # built: the tasks hold the text, the results need not
        tasks = [((cost(i), 1, i), (i, "prove"), _prove_text, (text, profile, ranks))] if prove else []
        return tasks + [((cost(i), 2 + k, i), (i, "time", k), _time_text, (text, nbytes, t))
                        for k, t in enumerate(topos)]
    first = [((cost(i), 0, i), (i, "build"), _build_list, (name, coll, ranks, nbytes, topology, root))
             for i, name in enumerate(names)]
    got = run_ordered(first, then, jobs)
    return [_combine(name, got[(i, "build")], got.get((i, "prove")),
                     [got[(i, "time", k)] for k in range(len(topos))] if got[(i, "build")][0] is not None
                     else [])
            for i, name in enumerate(names)]


def by_time(ranked: Ranked) -> Ranked:
    """Fastest first, ties by name; a schedule timed at 0 s (or not a finite time) moves nothing
    the model can see: never first."""
    return sorted(ranked, key=lambda x: (not 0 < x[1].time_s < float("inf"), x[1].time_s, x[0]))


def rank_algorithms(coll: str, ranks: int, nbytes: int, topology: Topology, root: int | None = None,
                    jobs: int = 1, others: tuple[Topology, ...] = ()
                    ) -> tuple[Ranked, list[tuple[str, str | None]], dict[str, str], list[Ranked]]:
    """Simulate every available algorithm supporting ``coll`` and each of its variants
    (``NAME:VARIANT``, :meth:`Registry.entries`), each built for a window ending at ``nbytes``
    (its messages as large as the runtime moves at that size) and verified. ``jobs`` > 1: on
    that many worker processes, a candidate's build, proof and simulations as separate tasks,
    the longest candidates first (:func:`_staged`, :func:`ccxml.driver.pool.run_ordered`); the
    same result with any ``jobs``.

    Returns (ranked, unavailable, unbounded, other rankings): ranked = [(name, SimResult)]
    fastest first (ties by name); unavailable = [(name, reason)] for algorithms that cannot
    build this shape or fail verification; unbounded = {name: limit} for those a runtime limit
    stops, timed without the limits; other rankings = one ranked list per topology of
    ``others`` (the same schedules on the same shape, e.g. another reading of its NICs).
    """
    from ccxml.algorithms import registry
    ranked: Ranked = []
    skipped: list[tuple[str, str | None]] = []
    unbounded: dict[str, str] = {}
    alt: list[Ranked] = [[] for _ in others]
    names = registry.entries(coll)
    if jobs <= 1 or len(names) <= 1:
        from ccxml.driver.pool import paused_gc
        got = [paused_gc(_rank_one, name, coll, ranks, nbytes, topology, root, tuple(others))
               for name in names]
    else:
        got = _staged(names, coll, ranks, nbytes, topology, root, tuple(others), jobs)
    for name, result, why, limit, more in got:
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
