"""The one parser of the topology options every command shares.

``--topology FILE`` (JSON, TOML or NCCL topology XML), ``--preset NAME``, ``--nodes N``, ``--gpu
CLASS``, the flat model's ``--alpha/--beta/--gamma`` (simulate, select, show, tune) and the
shapes ``generate`` takes (``--groups``, ``--servers``/``--ranks-per-server``) become a
:class:`~ccxml.topology.model.Topology` here, once: :func:`resolve_topology`. A bad combination is
an :class:`OptionError` (one line in the options' own words; the command line prints it and exits
2), a file or preset that cannot be read a :class:`~ccxml.vocab.errors.TopologyError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ccxml.loader.model import Schedule
    from ccxml.topology.model import Topology


class OptionError(ValueError):
    """Options that do not go together, or do not fit the schedule: one line in the words of the
    command line (``ccxml`` prints it and exits 2)."""


@dataclass(frozen=True)
class TopologyOptions:
    """The topology options as given (None: not given)."""
    topology_file: str | None = None
    preset: str | None = None
    nodes: int | None = None
    gpu: str | None = None
    alpha: float | None = None
    beta: float | None = None
    gamma: float | None = None
    groups: str | None = None
    servers: int | None = None
    ranks_per_server: int | None = None

    @property
    def flat(self) -> bool:
        return any(x is not None for x in (self.alpha, self.beta, self.gamma))

    def given(self) -> list[str]:
        """The options that each give a topology, as the user spells them (at most one may be)."""
        return [name for name, v in (("--servers/--ranks-per-server", self.servers or self.ranks_per_server),
                                     ("--groups", self.groups), ("--topology", self.topology_file),
                                     ("--preset", self.preset), ("--alpha/--beta/--gamma", self.flat)) if v]

    def words(self) -> str:
        """The options that gave the topology, as the user typed them."""
        if self.preset is not None:
            return f"--preset {self.preset}" + (f" --nodes {self.nodes}" if self.nodes is not None else "")
        if self.topology_file is not None:
            return f"--topology {self.topology_file}" + (f" --nodes {self.nodes}" if self.nodes is not None else "")
        if self.groups or self.servers or self.ranks_per_server:
            return " ".join(f"{name} {value}" for name, value in (
                ("--groups", self.groups), ("--servers", self.servers),
                ("--ranks-per-server", self.ranks_per_server)) if value is not None)
        return "the topology the file records"


def resolve_topology(options: TopologyOptions, *, ranks: int | None = None, schedule: Schedule | None = None,
                     default: Topology | None = None) -> tuple[Topology, list[str]]:
    """(Topology, notes for the user) from ``options``.

    A shape (``groups``, ``servers``/``ranks_per_server``; ``ranks`` completes a half-given one)
    gives a topology of that shape; a preset or file gives its model; the flat options the flat
    dedicated-link model; none of them the topology ``schedule`` records, else ``default`` (the
    simulator's flat model when None). Raises OptionError or TopologyError."""
    from ccxml.simulator import resolve_topology as simulator_topology
    from ccxml.topology.files import load_topology
    from ccxml.topology.model import Topology, load_preset
    o = options
    given = o.given()
    if len(given) == 2:
        raise OptionError(f"give either {given[0]} or {given[1]}, not both")
    if len(given) > 2:
        raise OptionError(f"give only one of {', '.join(given)}")
    if o.nodes is not None and not (o.topology_file or o.preset):
        raise OptionError("--nodes needs --preset or --topology")
    if o.gpu is not None and not (o.topology_file and o.topology_file.lower().endswith(".xml")):
        raise OptionError("--gpu goes with --topology FILE.xml (an NCCL topology file)")
    notes: list[str] = []
    if o.preset is not None:
        topo = load_preset(o.preset, 1 if o.nodes is None else o.nodes)
    elif o.topology_file is not None and o.topology_file.lower().endswith(".xml"):
        from ccxml.topology.ncclxml import load_nccl_topology
        read = load_nccl_topology(o.topology_file, gpu=o.gpu, nodes=1 if o.nodes is None else o.nodes)
        topo, notes = read.topology, list(read.notes)
    elif o.topology_file is not None:
        topo = load_topology(o.topology_file, nodes=o.nodes)
    elif o.groups:
        topo = Topology.from_groups(o.groups)
    elif o.servers or o.ranks_per_server:
        topo = Topology.uniform(*_shape(o, ranks))
    elif not o.flat and schedule is None and default is not None:
        topo = default
    else:
        topo = simulator_topology(schedule, None, o.alpha, o.beta, o.gamma)
    return topo, notes + topo.notes()


def _shape(o: TopologyOptions, ranks: int | None) -> tuple[int, int]:
    """(servers, ranks per server) from --servers/--ranks-per-server, one of them completed by
    ``ranks``."""
    if o.servers and o.ranks_per_server:
        return o.servers, o.ranks_per_server
    if o.servers:
        known, name = o.servers, "--servers"
    elif o.ranks_per_server:
        known, name = o.ranks_per_server, "--ranks-per-server"
    else:                       # resolve_topology calls this only when one of them is given
        raise OptionError("give both --servers and --ranks-per-server (or --ranks)")
    if ranks is None:
        raise OptionError("give both --servers and --ranks-per-server (or --ranks)")
    if known < 1 or ranks % known:
        raise OptionError(f"--ranks {ranks} is not divisible by {name} {known}")
    return (known, ranks // known) if o.servers else (ranks // known, known)


def ranks_of(topo: Topology, ranks: int | None) -> int:
    """``ranks``, or the topology's rank count (a mismatch is :func:`check_fit`'s to report)."""
    if ranks is None:
        if topo.nranks is None:
            raise OptionError("--ranks is required (or give --preset/--nodes or a topology with "
                              "a rank count)")
        return topo.nranks
    return ranks


def check_fit(topo: Topology, ranks: int, options: TopologyOptions, *, schedule: str | None = None,
              given: str | None = None) -> None:
    """An OptionError in the options' words when the topology's groups do not add up to the rank
    count: which options disagree and how to make them agree. ``schedule``: the file whose
    ``ngpus`` gave the ranks (else they came from ``--ranks``); ``given``: the options that gave
    the topology (default :meth:`TopologyOptions.words`)."""
    groups = topo.groups
    if groups is None or sum(groups) == ranks:
        return
    total = sum(groups)
    given = given or options.words()
    unit = "node" if options.preset is not None or options.topology_file is not None else "group"
    if len(set(groups)) == 1:
        shape = f"{len(groups)} {unit}{'s' if len(groups) > 1 else ''} of {groups[0]} ranks ({total} in all)"
    else:
        shape = f"{unit}s of {'+'.join(map(str, groups))} ranks ({total} in all)"
    per = groups[0] if len(set(groups)) == 1 else None
    by_nodes = (f"--nodes {ranks // per}" if per and ranks % per == 0 and unit == "node" else None)
    if schedule is not None:
        fix = f"give {by_nodes}" if by_nodes else "give a topology of that many ranks"
        raise OptionError(f"the schedule {schedule} has {ranks} ranks, but {given} gives {shape}; {fix}")
    fix = f"give {by_nodes}, or --ranks {total}" if by_nodes else f"give --ranks {total} (or leave --ranks out)"
    raise OptionError(f"--ranks {ranks} disagrees with {given}: {shape}; {fix}")


def free_model_problem(topo: Topology) -> str | None:
    """Why a dedicated-link model in which transfers cost nothing (alpha = beta = 0 on every level)
    cannot be used (it would time every schedule at 0 s, and bandwidths and ratios would divide by
    zero), or None."""
    if topo.is_network:
        return None
    levels = [topo.intra] + ([topo.inter] if topo.inter is not None else [])
    if all(lv.alpha == 0 and lv.beta == 0 for lv in levels):
        return ("a cost model with alpha = beta = 0 makes every transfer free and every time 0 s: "
                "give --alpha or --beta > 0 (or a --preset)")
    return None


def fit_ranks(topo: Topology | None, ranks: int | None, options: TopologyOptions) -> int | None:
    """``generate``'s rank count: ``ranks``, else the topology's; an OptionError when both are
    given and disagree."""
    if topo is None or topo.nranks is None:
        return ranks
    if ranks is None:
        return topo.nranks
    if ranks != topo.nranks:
        check_fit(topo, ranks, options)
        raise OptionError(f"--ranks {ranks} disagrees with {options.words()} ({topo.nranks} ranks)")
    return ranks
