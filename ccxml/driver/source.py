"""SOURCE: what ``simulate``, ``show`` and ``export`` take — an MSCCL XML file, or an algorithm
built in memory for every size (:func:`ccxml.driver.spec.schedules`) — with its topology, proved
before it is used.

:func:`load_source` raises :class:`~ccxml.driver.topology.OptionError` (options that do not go
together), :class:`SourceError` (a file that cannot be read, an algorithm that cannot be built)
and :class:`Unverified` (a schedule ``ccxml verify`` rejects); the command line prints each as one
line (exit 2, 2 and 1).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from ccxml.driver.topology import OptionError, TopologyOptions, check_fit, ranks_of, resolve_topology
from ccxml.vocab.errors import CcxmlError
from ccxml.vocab.wire import UNBOUNDED

if TYPE_CHECKING:
    from ccxml.loader.model import Schedule
    from ccxml.topology.model import Topology


class SourceError(CcxmlError):
    """A SOURCE that cannot be used: a file that cannot be read, an algorithm that cannot be built."""


class Unverified(CcxmlError):
    """A schedule that fails verification, used without ``--unverified`` (exit 1, as verify)."""


UNVERIFIED_NOTE = "not verified (--unverified): the figures are those of a schedule that may be wrong"


@dataclass
class Source:
    """What ``ccxml simulate SOURCE`` (or ``show``) runs: one schedule per size, on a topology."""
    schedules: list[Schedule]
    label: str
    topology: Topology
    notes: list[str]
    is_file: bool

    @property
    def schedule(self) -> Schedule:
        """The schedule of the largest size (the only one for a file)."""
        return self.schedules[-1]


def names_file(source: str) -> bool:
    """True when SOURCE names a file (it exists, or ends in .xml), not an algorithm."""
    return os.path.lexists(source) or source.lower().endswith(".xml")


def verification_failure(schedule: Schedule, profile: str = "exec") -> str | None:
    """The first reason ``ccxml verify`` (``profile``, every call form the file declares) fails
    ``schedule``, or None when it passes (warnings pass, as in ``verify`` without --strict)."""
    from ccxml.interpreter import verify
    try:
        rep = verify(schedule, target=profile)
    except ValueError as e:               # NotExecutable and friends: it cannot be run at all
        return str(e).splitlines()[0]
    fails = rep.failures(False)
    return str(fails[0]) if fails else None


def check_verified(schedules: Iterable[Schedule], label: str, unverified: bool, command: str,
                   profile: str = "exec") -> list[str]:
    """Raise :class:`Unverified` for a schedule that fails verification for ``profile``, unless
    ``unverified``: then the notes say it was not verified. Returns the notes to print."""
    if unverified:
        return [UNVERIFIED_NOTE]
    seen: set[int] = set()
    for sch in schedules:
        if id(sch) in seen:
            continue
        seen.add(id(sch))
        why = verification_failure(sch, profile)
        if why:
            raise Unverified(f"{label} fails verification: {why} (ccxml verify says why; "
                             f"{command} --unverified uses it anyway)")
    return []


def load_source(source: str, sizes: list[int], *, ranks: int | None = None, coll: str | None = None,
                root: int | None = None,
                topology: TopologyOptions = TopologyOptions(), command: str = "simulate",
                opts: dict[str, str] | None = None, unverified: bool = False) -> Source:
    """SOURCE (an MSCCL XML file, or an algorithm name built in memory for every size, §6, with
    its own options ``opts``) and the topology the options give."""
    from ccxml.driver.spec import AlgorithmSpec, limit_note, schedules
    from ccxml.vocab.errors import TopologyError
    is_file = names_file(source)
    if is_file and opts:
        raise OptionError("--opt goes with an algorithm name, not a file")
    if is_file:
        from ccxml.vocab.files import input_problem
        problem = input_problem(source)     # a directory, device, FIFO, loop: said, never read
        if problem:
            raise SourceError(problem)
        from ccxml.loader.reader import load
        try:
            schedule = load(source)
        except (OSError, ValueError) as e:
            raise SourceError(str(e)) from None
        if ranks is not None and ranks != schedule.ngpus:
            raise OptionError(f"--ranks {ranks} does not match the file's ngpus={schedule.ngpus}")
        if coll is not None and coll != schedule.coll:
            raise OptionError(f"--coll {coll} does not match the file's coll={schedule.coll}")
        try:
            topo, notes = resolve_topology(topology, schedule=schedule)
        except TopologyError as e:
            raise SourceError(str(e)) from None
        check_fit(topo, schedule.ngpus or len(schedule.gpus), topology, schedule=os.path.basename(source))
        label = os.path.basename(source)
        notes = check_verified([schedule], label, unverified, command) + notes
        return Source([schedule] * len(sizes), label, topo, notes, True)
    try:
        topo, notes = resolve_topology(topology)
    except TopologyError as e:
        raise SourceError(str(e)) from None
    if coll is None or (ranks is None and topo.nranks is None):
        raise OptionError(f"{source!r} is not a file; to {command} an algorithm give "
                          f"--ranks and --coll (e.g. ccxml {command} ring --ranks 8 --coll "
                          f"allreduce; --preset/--nodes give the ranks too)")
    ranks = ranks_of(topo, ranks)
    check_fit(topo, ranks, topology)
    limits: list[str] = []
    spec = AlgorithmSpec(source, coll, ranks, topology=topo, root=root, opts=opts or {})
    try:
        built = schedules(spec, sizes, on_limit=limits.append)
    except ValueError as e:
        raise SourceError(str(e)) from None
    label = f"{source} {coll}"
    from ccxml.vocab.limits import MAX_PROVED_BUILT_RANKS
    if ranks > MAX_PROVED_BUILT_RANKS and not unverified:
        notes = [f"{label}: built for {ranks} ranks and not proved here (simulate proves a built "
                 f"algorithm up to {MAX_PROVED_BUILT_RANKS} ranks: proving takes memory that grows "
                 f"as ranks³; docs/limits.md)"] + notes
    else:
        notes = check_verified(built, label, unverified, command,
                               profile=UNBOUNDED.name if limits else "exec") + notes
    notes = notes + [limit_note(source, why) for why in dict.fromkeys(limits)]
    return Source(built, label, topo, notes, False)


def window_warning(schedule: Schedule, sizes: Sequence[int]) -> str | None:
    """What to say when some of ``sizes`` fall outside the file's minBytes..maxBytes window (the
    runtime would not pick the file for them), or None."""
    lo, hi = schedule.min_bytes or 0, schedule.max_bytes or 0
    outside = [n for n in sizes if n < lo or (hi and n > hi)]
    if not outside:
        return None
    return (f"{len(outside)} of {len(sizes)} sizes are outside the file's minBytes..maxBytes "
            f"window {lo}..{hi or 'unlimited'}; the runtime would not use this file for them")
