"""Cluster topology: how ranks are grouped into servers, and what each kind of link costs.

A :class:`Topology` names the grouping of ranks and the α-β-γ (Hockney) parameters of each link
level, for the hierarchical generators and the cost simulator:

* **grouping** — uniform (``servers × ranks_per_server``) or asymmetric ``groups``
  (``[2, 3]`` = ranks {0, 1} and {2, 3, 4}; groups are contiguous rank ranges in order). With no
  grouping the topology is *flat*: one server holding however many ranks the schedule has.
* **levels** — ``intra`` (both ends in the same group) and ``inter`` (different groups), each a
  :class:`LinkLevel` with ``alpha`` (s per transfer), ``beta`` (s per byte) and ``gamma`` (s per byte
  reduced). ``inter`` defaults to ``intra``.

Sources: the Python API (:meth:`Topology.flat`, :meth:`Topology.uniform`, :meth:`Topology.from_groups`,
:meth:`Topology.from_dict`), a JSON or TOML file (:func:`ccxml.topology.files.load_topology`), and the extra ``<algo>``
attributes a generated file carries (:meth:`Topology.to_attrs` / :meth:`Topology.from_attrs`; the
runtimes skip unknown attributes, msccl-runtime.md §2.13). File format (JSON keys are the same)::

    servers = 2                # or: groups = [2, 3]   or: groups = "4x8"
    ranks_per_server = 8
    [intra]                    # alpha in s, beta and gamma in s/byte
    alpha = 1e-6
    beta = 5e-12
    gamma = 1e-12
    [inter]
    alpha = 5e-6
    beta = 4e-11

Top-level ``alpha``/``beta``/``gamma`` are shorthand for an ``intra`` level. An optional ``ranks``
must equal the sum of the group sizes. Every error is a :class:`TopologyError` with one line.

**Dedicated links.** A topology given by levels, as above, is the *dedicated-link* model: every pair
of ranks has its own full-duplex link (``intra`` inside a group, ``inter`` between groups) and no
port, NIC or switch is shared. The ``inter`` level is the cost of each such pair link, not of a NIC:
:meth:`Topology.notes` says so for a multi-group topology.

**Networks.** A ``[network]`` table (:class:`~ccxml.topology.network.NetworkSpec`) describes the
cluster as a graph instead — devices, links with bandwidths and latencies, NICs and a fabric — and
the simulator then shares every link among the transfers crossing it. ``preset = "dgx-h100"`` (and
``nodes = 4``) names one of the packaged presets (:func:`load_preset`). A network topology's groups
are its nodes; it takes no levels.
"""
from __future__ import annotations

import functools
import math
import pathlib
import tomllib
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ccxml.topology.network import Network, NetworkSpec
from ccxml.vocab import limits
from ccxml.vocab.errors import TopologyError

INTRA = "intra"
INTER = "inter"
LEVELS = (INTRA, INTER)

#: names of the ``<algo>`` attributes :meth:`Topology.to_attrs` writes
ATTR_GROUPS = "topology"
ATTR_LINKS = "topology_links"


class LinkLevel(BaseModel):
    """α-β-γ parameters of one link level: a transfer of b bytes costs ``alpha + b·beta``, a
    reduction of b bytes costs ``b·gamma``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = 0.0
    beta: float = 0.0
    gamma: float = 0.0

    @field_validator("alpha", "beta", "gamma")
    @classmethod
    def _non_negative(cls, v: float, info) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"must be a finite number >= 0, got {v!r}")
        return float(v)

    def transfer(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` over one link of this level."""
        return self.alpha + nbytes * self.beta

    def reduce(self, nbytes: float) -> float:
        """Seconds to reduce ``nbytes`` (one operand folded into another)."""
        return nbytes * self.gamma

    def encode(self) -> str:
        return ",".join(repr(x) for x in (self.alpha, self.beta, self.gamma))


class Topology(BaseModel):
    """Rank grouping plus per-level link costs. Immutable; build with the class methods."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    groups: tuple[int, ...] | None = None
    intra: LinkLevel = LinkLevel()
    inter: LinkLevel | None = None
    network: NetworkSpec | None = None

    # ---- validation of the raw input ----------------------------------------------------
    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        d = dict(data)
        preset = d.pop("preset", None)
        nodes = d.pop("nodes", None)
        if preset is not None:
            given = [k for k in ("network", "intra", "inter", "alpha", "beta", "gamma", "servers",
                                 "ranks_per_server", "groups") if k in d]
            if given:
                raise ValueError(f"a preset gives the whole topology; remove {', '.join(given)}")
            d.update(preset_data(preset, 1 if nodes is None else nodes))
        elif nodes is not None:
            if d.get("network") is None:
                raise ValueError("nodes needs a preset or a [network] table")
            net = d["network"]
            d["network"] = (net.with_nodes(nodes) if isinstance(net, NetworkSpec)
                            else {**net, "nodes": nodes})
        if d.get("network") is not None:
            net = d["network"]
            if not isinstance(net, NetworkSpec):
                try:
                    net = d["network"] = NetworkSpec.model_validate(net)
                except ValidationError as e:
                    raise ValueError(f"network.{_one_line(e)}") from None
            given = [k for k in ("intra", "inter", "alpha", "beta", "gamma", "servers",
                                 "ranks_per_server") if k in d]
            if given:
                raise ValueError(f"a [network] topology takes its costs and shape from its devices and "
                                 f"links; remove {', '.join(given)}")
            shape = (net.gpus,) * net.nodes
            if d.get("groups") is not None:
                g = parse_groups(d["groups"]) if isinstance(d["groups"], str) else tuple(d["groups"])
                if g != shape:
                    raise ValueError(f"groups {_fmt_sizes(g)} do not match the network's "
                                     f"{net.nodes} node(s) of {net.gpus} GPUs")
            d["groups"] = shape
        servers = d.pop("servers", None)
        rps = d.pop("ranks_per_server", None)
        ranks = d.pop("ranks", None)
        if servers is not None or rps is not None:
            if d.get("groups") is not None:
                raise ValueError("give either groups or servers/ranks_per_server, not both")
            if servers is None or rps is None:
                raise ValueError("servers and ranks_per_server must be given together")
            s, m = _positive_int(servers, "servers"), _positive_int(rps, "ranks_per_server")
            _check_shape([m], s)
            d["groups"] = (m,) * s
        elif isinstance(d.get("groups"), str):
            d["groups"] = parse_groups(d["groups"])
        flat = {k: d.pop(k) for k in ("alpha", "beta", "gamma") if k in d}
        if flat:
            if "intra" in d:
                raise ValueError("give link parameters either at top level or under [intra], not both")
            d["intra"] = flat
        if ranks is not None:
            total = sum(d["groups"]) if d.get("groups") is not None else None
            p = _positive_int(ranks, "ranks")
            if total is not None and total != p:
                raise ValueError(f"group sizes {_fmt_sizes(d['groups'])} add up to {total}, not ranks={p}")
        return d

    @field_validator("groups", mode="before")
    @classmethod
    def _check_groups(cls, v: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise ValueError(f"must be a list of sizes, got {v!r}")
        sizes = list(v)
        if not sizes:
            raise ValueError("must name at least one group")
        _check_shape(sizes)
        out = []
        for i, m in enumerate(sizes):
            if isinstance(m, bool) or not isinstance(m, int):
                raise ValueError(f"group {i} size must be an integer, got {m!r}")
            if m < 1:
                raise ValueError(f"group {i} has size {m}; every group needs at least one rank")
            out.append(m)
        return tuple(out)

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def flat(cls, alpha: float = 0.0, beta: float = 0.0, gamma: float = 0.0) -> "Topology":
        """One level for every link, any number of ranks."""
        return cls.from_dict({"alpha": alpha, "beta": beta, "gamma": gamma})

    @classmethod
    def uniform(cls, servers: int, ranks_per_server: int, intra: LinkLevel | dict | None = None,
                inter: LinkLevel | dict | None = None) -> "Topology":
        """``servers`` groups of ``ranks_per_server`` consecutive ranks."""
        return cls.from_dict(_drop_none({"servers": servers, "ranks_per_server": ranks_per_server,
                                         "intra": intra, "inter": inter}))

    @classmethod
    def from_groups(cls, sizes: Iterable[int] | str, intra: LinkLevel | dict | None = None,
                    inter: LinkLevel | dict | None = None) -> "Topology":
        """Groups of the given sizes, in rank order (``[2, 3]`` = {0, 1} and {2, 3, 4})."""
        return cls.from_dict(_drop_none({"groups": sizes, "intra": intra, "inter": inter}))

    @classmethod
    def from_dict(cls, data: dict) -> "Topology":
        """Build from a dict (the file format); raise :class:`TopologyError` with one line."""
        if not isinstance(data, dict):
            raise TopologyError(f"a topology must be a table/object, got {type(data).__name__}")
        data = {k: (v.model_dump() if isinstance(v, LinkLevel) else v) for k, v in data.items()}
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise TopologyError(_one_line(e)) from None

    # ---- queries ------------------------------------------------------------------------
    @property
    def is_flat(self) -> bool:
        return self.groups is None

    @property
    def nranks(self) -> int | None:
        """Total ranks, or None for a flat topology (fits any rank count)."""
        return None if self.groups is None else sum(self.groups)

    @property
    def is_uniform(self) -> bool:
        return self.groups is None or len(set(self.groups)) == 1

    @property
    def servers(self) -> int:
        return 1 if self.groups is None else len(self.groups)

    @property
    def ranks_per_server(self) -> int | None:
        """Ranks per server for a uniform grouping, None for unequal groups or a flat topology."""
        if self.groups is None or len(set(self.groups)) != 1:
            return None
        return self.groups[0]

    @property
    def is_network(self) -> bool:
        """True for a graph topology (shared links), False for dedicated links."""
        return self.network is not None

    def graph(self) -> Network:
        """The built :class:`~ccxml.topology.network.Network` of a network topology (memoised)."""
        if self.network is None:
            raise TopologyError("a dedicated-link topology has no network graph")
        return build_network(self.network)

    def notes(self) -> list[str]:
        """What a user should know about how this topology is simulated (one line each)."""
        if self.network is None and self.groups is not None and len(self.groups) > 1:
            return ["dedicated-link model: every pair of ranks has its own full-duplex link, the "
                    "'inter' level is each cross-server pair's link (not a NIC), and no port, NIC or "
                    "switch is shared; use --preset or a [network] topology for shared links"]
        return []

    @property
    def inter_level(self) -> LinkLevel:
        return self.inter if self.inter is not None else self.intra

    def check_ranks(self, p: int) -> None:
        """Raise :class:`TopologyError` unless the topology fits ``p`` ranks."""
        if self.groups is not None and sum(self.groups) != p:
            raise TopologyError(f"topology groups {_fmt_sizes(self.groups)} add up to "
                                f"{sum(self.groups)} ranks, but the schedule has {p}")

    def group_starts(self) -> list[int]:
        starts, acc = [], 0
        for m in self.groups or ():
            starts.append(acc)
            acc += m
        return starts

    def group_ranks(self, p: int | None = None) -> list[list[int]]:
        """The ranks of each group (a flat topology needs ``p``: one group of all ranks)."""
        if self.groups is None:
            if p is None:
                raise TopologyError("a flat topology needs the rank count")
            return [list(range(p))]
        return [list(range(s, s + m)) for s, m in zip(self.group_starts(), self.groups)]

    def group_of(self, rank: int) -> int:
        """Index of the group holding ``rank`` (0 for a flat topology)."""
        if self.groups is None:
            return 0
        acc = 0
        for i, m in enumerate(self.groups):
            acc += m
            if rank < acc:
                return i
        raise TopologyError(f"rank {rank} is outside the topology's {acc} ranks")

    def level(self, a: int, b: int) -> str:
        """``"intra"`` if ranks a and b are in the same group, else ``"inter"``."""
        return INTRA if self.group_of(a) == self.group_of(b) else INTER

    def link(self, a: int, b: int) -> LinkLevel:
        """Parameters of the directed link a → b."""
        return self.intra if self.level(a, b) == INTRA else self.inter_level

    def params(self, level: str) -> LinkLevel:
        if level == INTRA:
            return self.intra
        if level == INTER:
            return self.inter_level
        raise TopologyError(f"unknown link level {level!r}; use {' or '.join(LEVELS)}")

    def describe(self) -> str:
        """One line for people, e.g. ``2x8 (intra a=1e-06 b=5e-12 g=0, inter ...)``."""
        if self.network is not None:
            n = self.network
            return (f"{n.name}: {n.nodes} node{'s' if n.nodes > 1 else ''} x {n.gpus} GPUs"
                    + (f", {n.fabric.kind} fabric" if n.nodes > 1 else "") + " (shared links)")
        shape = "flat" if self.groups is None else encode_groups(self.groups)
        lv = [f"intra a={self.intra.alpha:g} b={self.intra.beta:g} g={self.intra.gamma:g}"]
        if self.inter is not None:
            i = self.inter
            lv.append(f"inter a={i.alpha:g} b={i.beta:g} g={i.gamma:g}")
        return f"{shape} ({', '.join(lv)})"

    def to_dict(self) -> dict:
        """The file format (JSON-serialisable); ``from_dict(to_dict())`` gives an equal topology."""
        d: dict[str, Any] = {}
        if self.groups is not None:
            d["groups"] = list(self.groups)
        if self.network is not None:
            d["network"] = self.network.to_dict()
            return d
        d["intra"] = self.intra.model_dump()
        if self.inter is not None:
            d["inter"] = self.inter.model_dump()
        return d

    # ---- XML attributes -----------------------------------------------------------------
    def to_attrs(self) -> dict[str, str]:
        """Extra ``<algo>`` attributes recording this topology (two, to respect the 16-slot limit).

        ``topology="2x8"`` (or ``"2,3"``, ``"3x8,4"``, ``"flat"``) and
        ``topology_links="intra:α,β,γ;inter:α,β,γ"`` (floats in shortest round-trip form); a network
        topology records ``topology_links="network:NAME"``, which :meth:`from_attrs` rebuilds when
        NAME is a preset.
        """
        if self.network is not None:
            return {ATTR_GROUPS: encode_groups(self.groups or ()), ATTR_LINKS: f"network:{self.network.name}"}
        links = f"{INTRA}:{self.intra.encode()}"
        if self.inter is not None:
            links += f";{INTER}:{self.inter.encode()}"
        return {ATTR_GROUPS: "flat" if self.groups is None else encode_groups(self.groups),
                ATTR_LINKS: links}

    @classmethod
    def from_attrs(cls, attrs: dict[str, str]) -> "Topology | None":
        """Inverse of :meth:`to_attrs`: None when ``attrs`` records no topology."""
        shape = attrs.get(ATTR_GROUPS)
        links = attrs.get(ATTR_LINKS)
        if shape is None and links is None:
            return None
        data: dict[str, Any] = {}
        if shape is not None and shape.strip() != "flat":
            data["groups"] = parse_groups(shape)
        if links is not None and links.strip().startswith("network:"):
            name = links.strip()[len("network:"):]
            sizes = data.get("groups")
            if name in preset_names() and sizes and len(set(sizes)) == 1:
                rebuilt = preset_data(name, len(sizes))
                spec = rebuilt.get("network")
                if spec is not None and spec.gpus == sizes[0]:
                    return cls.from_dict(rebuilt)
            return cls.from_dict(data)          # a network we cannot rebuild: the shape only
        for part in (links or "").split(";"):
            if not part.strip():
                continue
            name, sep, values = part.partition(":")
            name = name.strip()
            if not sep or name not in LEVELS:
                raise TopologyError(f"{ATTR_LINKS}: expected 'intra:a,b,g;inter:a,b,g', got {links!r}")
            nums = values.split(",")
            if len(nums) != 3:
                raise TopologyError(f"{ATTR_LINKS}: level {name} needs alpha,beta,gamma, got {values!r}")
            try:
                data[name] = dict(zip(("alpha", "beta", "gamma"), (float(x) for x in nums)))
            except ValueError:
                raise TopologyError(f"{ATTR_LINKS}: level {name} has a non-number in {values!r}") from None
        return cls.from_dict(data)


# ---- helpers ------------------------------------------------------------------------------

def parse_groups(text: str) -> tuple[int, ...]:
    """Parse ``"2,3"``, ``"4x8"`` (4 groups of 8) or mixed ``"3x8,4"`` into group sizes."""
    sizes: list[int] = []
    items = [x.strip() for x in str(text).split(",")]
    if not items or any(not x for x in items):
        raise TopologyError(f"groups {text!r}: expected sizes like '2,3' or '4x8'")
    for item in items:
        count, sep, size = item.lower().partition("x")
        try:
            k, m = (int(count), int(size)) if sep else (1, int(item))
        except ValueError:
            raise TopologyError(f"groups {text!r}: {item!r} is not a size or 'COUNTxSIZE'") from None
        if k < 1:
            raise TopologyError(f"groups {text!r}: repeat count {k} must be >= 1")
        try:
            _check_shape([*sizes, m], k)
        except ValueError as e:
            raise TopologyError(f"groups {text!r}: {e}") from None
        sizes.extend([m] * k)
    for i, m in enumerate(sizes):
        if m < 1:
            raise TopologyError(f"groups {text!r}: group {i} has size {m}; every group needs "
                                f"at least one rank")
    return tuple(sizes)


def encode_groups(sizes: Iterable[int]) -> str:
    """Compact run-length form: ``(8, 8)`` → ``"2x8"``, ``(2, 3)`` → ``"2,3"``."""
    runs: list[list[int]] = []
    for m in sizes:
        if runs and runs[-1][1] == m:
            runs[-1][0] += 1
        else:
            runs.append([1, m])
    return ",".join(f"{k}x{m}" if k > 1 else f"{m}" for k, m in runs)


# ---- presets --------------------------------------------------------------------------------------

PRESET_DIR = pathlib.Path(__file__).resolve().parent / "presets"


def preset_names() -> list[str]:
    """The packaged presets (``ccxml/topology/presets/NAME.toml``)."""
    try:
        return sorted(f.stem for f in PRESET_DIR.glob("*.toml"))
    except OSError:
        return []


@functools.lru_cache(maxsize=None)
def _preset(name: str) -> NetworkSpec | tuple:
    """A preset's network, or its dedicated-link keys as sorted (key, value) pairs."""
    if name not in preset_names():
        raise TopologyError(f"unknown preset {name!r}; known: {', '.join(preset_names())}")
    with open(PRESET_DIR / f"{name}.toml", "rb") as f:
        data = tomllib.load(f)
    if "network" in data:
        try:
            return NetworkSpec.model_validate(data["network"])
        except ValidationError as e:
            raise TopologyError(f"preset {name}: network.{_one_line(e)}") from None
    return tuple(sorted(data.items()))


def preset_data(name: str, nodes: int = 1) -> dict:
    """The topology of preset ``name`` with ``nodes`` nodes, in the form :meth:`Topology.from_dict`
    takes."""
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise TopologyError(f"--nodes must be an integer >= 1, got {nodes!r}")
    p = _preset(name)
    if isinstance(p, NetworkSpec):
        return {"network": p.with_nodes(nodes)}
    d = dict(p)
    rps = d.pop("ranks_per_server", None)
    if nodes > 1:
        if rps is None:
            raise TopologyError(f"preset {name} does not say how many ranks a node has")
        d["servers"], d["ranks_per_server"] = nodes, rps
    return d


def load_preset(name: str, nodes: int = 1) -> Topology:
    """Preset ``name`` (``dgx-h100``, ``flat``, ...) joined ``nodes`` times."""
    return Topology.from_dict(preset_data(name, nodes))


@functools.lru_cache(maxsize=16)
def build_network(spec: NetworkSpec) -> Network:
    """The graph of ``spec`` (built once per spec: a Network memoises its routes)."""
    return Network(spec)


def _check_shape(sizes: list, repeat: int = 1) -> None:
    """ValueError when ``sizes`` (the last one repeated ``repeat`` times) are more groups than
    MAX_TOPOLOGY_NODES or more ranks than MAX_TOPOLOGY_GPUS: checked before a tuple is built."""
    count = len(sizes) - 1 + repeat
    if count > limits.MAX_TOPOLOGY_NODES:
        raise ValueError(f"{count} groups is over the limit of {limits.MAX_TOPOLOGY_NODES} nodes")
    total = sum(m for m in sizes[:-1] if isinstance(m, int)) + (
        sizes[-1] * repeat if isinstance(sizes[-1], int) else 0)
    if total > limits.MAX_TOPOLOGY_GPUS:
        raise ValueError(f"{total} ranks is over the limit of {limits.MAX_TOPOLOGY_GPUS} GPUs")


def _positive_int(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    return v


def _fmt_sizes(sizes) -> str:
    return "[" + ", ".join(str(m) for m in sizes) + "]"


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _one_line(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()) if x != "__root__")
    msg = str(err.get("msg", "invalid topology"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    if err.get("type") == "extra_forbidden":
        msg = "unknown key"
    return f"{loc}: {msg}" if loc else msg
