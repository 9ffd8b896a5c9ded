"""A cluster as a graph: the devices of one server, their links, and the fabric that joins servers.

A :class:`NetworkSpec` (pydantic; the ``[network]`` table of a topology file, or a preset) describes
**one server** — its GPUs (``gpu0`` … ``gpu{gpus-1}``, implicit), its switches (NVSwitch, PCIe
switches, CPU sockets) and NICs, and the links between them — plus the **fabric** that joins
``nodes`` copies of it. :class:`Network` is the graph built from it, the plain data the simulator
runs on:

* **Vertices** are GPUs (the ranks: rank r is GPU ``r % gpus`` of node ``r // gpus``), switches,
  NICs and the fabric's switches. **Links** are directed; every link of the file is full duplex, so
  it becomes two, each with the file's ``bandwidth`` (bytes/s *per direction*) and ``latency`` (s).
  A GPU's ports (NVLink, xGMI, HCCS, PCIe) are links like any other: its traffic to several peers
  shares them. A switch has no capacity of its own (non-blocking).
* **NICs** are devices with a network port: ``bandwidth``, ``latency`` and ``overhead`` (s per
  message, see :class:`Route`) describe the link from the NIC to the fabric and back. How the
  per-message work of the GPU's network proxy is read (``proxy``, docs/nic-model.md): ``"nic"``
  (default; NCCL's own tuning model, ``src/graph/tuning.cc``) — a network step's latency is
  latency, overlapping across messages in flight, and the port is busy ``overhead`` (the NIC's
  message gap, nanoseconds) per message; ``"serial"`` — ``proxy_overhead`` seconds of it are work
  of a proxy that handles one message at a time: they leave the route's latency (half from each
  of the two ports a network route crosses) and are added to the port's per-message
  ``overhead``, serialised. :meth:`NetworkSpec.with_proxy` switches a spec's reading.
* **Fabric** (``kind``): ``rail`` — one leaf switch per NIC index ("rail"), NIC k of every node on
  leaf k, the leaves joined by a spine layer with ``1 / oversubscription`` of the leaves' downlink
  bandwidth (1 = non-blocking); ``switch`` — every NIC on one ideal non-blocking switch; ``none``
  — a single server. A rail fabric's ``spine`` says how cross-rail traffic uses the spine:
  ``adaptive`` (default; adaptive routing, as InfiniBand fabrics do) spreads it perfectly, so the
  spine is one aggregate switch; ``ecmp`` (static hashing, as plain Ethernet/RoCE switches do)
  gives each leaf ``nodes`` uplinks of one NIC's bandwidth to ``nodes`` spine switches and sends
  each (source, destination) pair through the one its hash picks (:func:`ecmp`), so transfers may
  collide on one uplink while another idles.
* **Routes** are deterministic. Inside a server: the path with the fewest links, among those the
  widest (largest smallest bandwidth) — NCCL's choice — ties broken towards lower-numbered
  devices; GPUs and NICs never forward. Between servers (the *rail rule*): a
  GPU's traffic leaves through its rail NIC — the NIC nearest to it (the one under the same PCIe
  switch), NICs shared out evenly in device order — crosses the fabric and enters through the
  receiver's rail NIC. On a rail fabric, traffic between NICs of the same rail stays on their leaf;
  between rails it goes up to the spine and down to the receiver's leaf.

Templates: a device or link name may contain ``{g}`` (one per GPU), ``{g/K}`` (GPU index divided by
K, rounded down) and, in a link, ``{h}`` with ``{g}`` (one link per pair of GPUs g < h: a full
mesh). File format (TOML; JSON keys are the same)::

    [network]
    name = "my-server"
    gpus = 8
    gamma = 9e-13                  # s per byte reduced on a GPU
    [[network.devices]]
    name = "nvswitch"
    kind = "nvswitch"
    [[network.devices]]
    name = "nic{g}"
    kind = "nic"
    bandwidth = 50e9               # B/s per direction, to the fabric
    latency = 7e-6                 # per port: a network route crosses two
    overhead = 4.65e-9             # s per message, serialised in the port
    proxy = "nic"                  # or "serial": proxy_overhead per message, one at a time
    proxy_overhead = 11.3e-6
    [[network.links]]
    a = "gpu{g}"
    b = "nvswitch"
    bandwidth = 450e9
    latency = 1.7e-6
    kind = "nvlink"
    [network.fabric]
    kind = "rail"

Every error is a :class:`~ccxml.vocab.errors.TopologyError` with one line.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, field_validator, model_validator

from ccxml.vocab import limits
from ccxml.vocab.errors import TopologyError

DEVICE_KINDS = ("nvswitch", "pcie-switch", "cpu", "nic", "switch")
PROXY_READINGS = ("nic", "serial")
FABRIC_KINDS = ("rail", "switch", "none")
#: the kinds of device that never forward traffic inside a server
_ENDPOINTS = ("gpu", "nic")

_TEMPLATE = re.compile(r"\{([gh])(?:/(\d+))?\}")


def _seconds(v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"must be a finite number >= 0, got {v!r}")
    return float(v)


def _rate(v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"must be a finite number > 0, got {v!r}")
    return float(v)


#: a time in s, or a cost in s per byte (finite, >= 0)
Seconds = Annotated[float, BeforeValidator(_seconds)]
#: a bandwidth in bytes/s that may be left out (finite, >= 0; 0: none given)
OptionalRate = Annotated[float, BeforeValidator(_seconds)]
#: a bandwidth in bytes/s per direction (finite, > 0)
Rate = Annotated[float, BeforeValidator(_rate)]


class DeviceSpec(BaseModel):
    """A switch, CPU socket or NIC of one server. A NIC's ``bandwidth`` (B/s per direction),
    ``latency`` (s) and ``overhead`` (s per message) describe its port to the fabric; ``proxy``
    and ``proxy_overhead`` how the GPU's network proxy is read (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["nvswitch", "pcie-switch", "cpu", "nic", "switch"]
    bandwidth: Rate | None = None
    latency: Seconds = 0.0
    overhead: Seconds = 0.0
    proxy: Literal["nic", "serial"] = "nic"
    proxy_overhead: Seconds = 0.0

    def port(self) -> tuple[float, float]:
        """(latency, overhead) of the NIC's port under its ``proxy`` reading."""
        if self.proxy == "serial" and self.proxy_overhead:
            return self.latency - self.proxy_overhead / 2, self.overhead + self.proxy_overhead
        return self.latency, self.overhead


class LinkSpec(BaseModel):
    """A full-duplex link between two devices of a server (``gpuN`` names GPU N)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    a: str
    b: str
    bandwidth: Rate              # B/s per direction
    latency: Seconds = 0.0
    kind: str = "link"           # a label: nvlink, xgmi, hccs, pcie, sys, ...


class FabricSpec(BaseModel):
    """How the servers' NICs are joined (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["rail", "switch", "none"] = "switch"
    latency: Seconds = 0.0            # per switch crossed
    oversubscription: Rate = 1.0      # rail: leaf downlink / uplink bandwidth (1 = non-blocking)
    spine: Literal["adaptive", "ecmp"] = "adaptive"   # rail: how cross-rail traffic picks a spine

    @field_validator("oversubscription")
    @classmethod
    def _over(cls, v):
        if v < 1:
            raise ValueError(f"must be >= 1 (1 = non-blocking), got {v}")
        return v


class NetworkSpec(BaseModel):
    """One server (devices and links, with templates) and the fabric joining ``nodes`` of them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "custom"
    description: str = ""
    gpus: int
    nodes: int = 1
    gamma: Seconds = 0.0                 # s per byte reduced on a GPU
    memory_bandwidth: OptionalRate = 0.0  # a GPU's memory, bytes/s: local copies (0: free)
    devices: tuple[DeviceSpec, ...] = ()
    links: tuple[LinkSpec, ...] = ()
    fabric: FabricSpec = FabricSpec()

    @field_validator("gpus", "nodes")
    @classmethod
    def _count(cls, v, info):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"must be an integer >= 1, got {v!r}")
        top = limits.MAX_NODE_GPUS if info.field_name == "gpus" else limits.MAX_TOPOLOGY_NODES
        if v > top:
            raise ValueError(f"{v} is over the limit of {top}")
        return v

    @model_validator(mode="after")
    def _total(self):
        if self.gpus * self.nodes > limits.MAX_TOPOLOGY_GPUS:
            raise ValueError(f"{self.nodes} nodes x {self.gpus} GPUs is over the limit of "
                             f"{limits.MAX_TOPOLOGY_GPUS} GPUs")
        if self.gpus * self.gpus * self.nodes > limits.MAX_ROUTE_PAIRS:
            raise ValueError(f"{self.nodes} nodes x {self.gpus} GPUs is over the limit of "
                             f"{limits.MAX_ROUTE_PAIRS} (GPUs per node x GPUs in all)")
        return self


    def with_nodes(self, nodes: int) -> "NetworkSpec":
        """The same server joined ``nodes`` times."""
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise TopologyError(f"--nodes must be an integer >= 1, got {nodes!r}")
        if (nodes > limits.MAX_TOPOLOGY_NODES or nodes * self.gpus > limits.MAX_TOPOLOGY_GPUS
                or nodes * self.gpus * self.gpus > limits.MAX_ROUTE_PAIRS):
            raise TopologyError(f"{nodes} nodes x {self.gpus} GPUs is over the limits "
                                f"({limits.MAX_TOPOLOGY_NODES} nodes, {limits.MAX_TOPOLOGY_GPUS} "
                                f"GPUs, {limits.MAX_ROUTE_PAIRS} GPUs per node x GPUs in all)")
        return self.model_copy(update={"nodes": nodes})

    def to_dict(self) -> dict:
        """The file form (``[network]`` table), JSON-serialisable; defaults left out."""
        return self.model_dump(exclude_defaults=True)

    @property
    def proxy(self) -> str | None:
        """The proxy reading of the NICs that give a ``proxy_overhead`` (None: no NIC gives one,
        so both readings are the same network)."""
        modes = {d.proxy for d in self.devices if d.kind == "nic" and d.proxy_overhead}
        return None if not modes else modes.pop() if len(modes) == 1 else "mixed"

    def with_proxy(self, mode: str) -> "NetworkSpec":
        """The same network with every NIC's proxy read as ``mode`` ("nic" or "serial")."""
        if mode not in PROXY_READINGS:
            raise TopologyError(f"proxy must be one of {', '.join(PROXY_READINGS)}, got {mode!r}")
        devices = tuple(d.model_copy(update={"proxy": mode}) if d.kind == "nic" else d
                        for d in self.devices)
        return self.model_copy(update={"devices": devices})


# ---- template expansion ------------------------------------------------------------------------

def _fill(text: str, g: int, h: int | None = None) -> str:
    def sub(m):
        v = g if m.group(1) == "g" else h
        return str(v // int(m.group(2)) if m.group(2) else v)
    return _TEMPLATE.sub(sub, text)


def _expand_names(text: str, gpus: int) -> list[str]:
    """The names ``text`` stands for: one per distinct value of its ``{g}`` / ``{g/K}`` fields."""
    keys = {m.group(1) for m in _TEMPLATE.finditer(text)}
    if "h" in keys:
        raise TopologyError(f"device {text!r}: {{h}} is only for links (pairs of GPUs)")
    if not keys:
        return [text]
    return list(dict.fromkeys(_fill(text, g) for g in range(gpus)))


def _expand_link(spec: LinkSpec, gpus: int) -> list[tuple[str, str]]:
    keys = {m.group(1) for m in _TEMPLATE.finditer(spec.a + " " + spec.b)}
    if "h" in keys:
        if "g" not in keys:
            raise TopologyError(f"link {spec.a}-{spec.b}: {{h}} needs {{g}} (one link per pair g < h)")
        return [(_fill(spec.a, g, h), _fill(spec.b, g, h)) for g in range(gpus) for h in range(g + 1, gpus)]
    if "g" in keys:
        return list(dict.fromkeys((_fill(spec.a, g), _fill(spec.b, g)) for g in range(gpus)))
    return [(spec.a, spec.b)]


# ---- the built graph -----------------------------------------------------------------------------

def ecmp(src_node: int, src_rail: int, dst_node: int, dst_rail: int, spines: int) -> int:
    """The spine switch a cross-rail transfer takes: a fixed mix (splitmix64) of its source and
    destination, modulo the spine count — deterministic, and spread like a switch's ECMP hash."""
    x = ((src_node * 1_000_003 + src_rail) * 1_000_033 + dst_node) * 1_000_037 + dst_rail
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (x ^ (x >> 31)) % spines


INF = math.inf


@dataclass(frozen=True, slots=True)
class Route:
    """How a transfer from one rank to another crosses the network.

    ``links``: every directed link on the way; ``resources``: those with a finite bandwidth (the
    ones transfers share); ``latency``: the sum of the links' latencies; ``overhead``: seconds of
    per-message work in the ports on the way (a NIC's), time the port spends on the message
    instead of moving data; ``setup``: the links with that overhead; ``bottleneck``: the smallest
    bandwidth. A transfer alone on its route takes ``overhead + latency + bytes / bottleneck``.
    """
    links: tuple[int, ...]
    resources: tuple[int, ...]
    latency: float
    overhead: float
    bottleneck: float
    setup: tuple[int, ...] = ()

    @property
    def alpha(self) -> float:
        """The time a transfer of no bytes takes alone on this route."""
        return self.latency + self.overhead


class Network:
    """The graph of ``spec.nodes`` servers joined by the fabric (see the module docstring)."""

    def __init__(self, spec: NetworkSpec):
        self.spec = spec
        self.name = spec.name
        self.gpus = spec.gpus
        self.nodes = spec.nodes
        self.gamma = spec.gamma
        self.memory_bandwidth = spec.memory_bandwidth
        self.nranks = spec.gpus * spec.nodes
        # -- one server: template vertices (GPUs first) and undirected links
        names = [f"gpu{g}" for g in range(spec.gpus)]
        kinds = ["gpu"] * spec.gpus
        nic_port: dict[int, DeviceSpec] = {}
        for d in spec.devices:
            for name in _expand_names(d.name, spec.gpus):
                if name in names:
                    raise TopologyError(f"device {name!r} is named twice (gpu0..gpu{spec.gpus - 1} "
                                        f"are the GPUs)")
                if d.kind == "nic":
                    if d.bandwidth is None:
                        raise TopologyError(f"nic {name!r} needs a bandwidth (B/s per direction)")
                    nic_port[len(names)] = d
                    if d.port()[0] < 0:
                        raise TopologyError(f"nic {name!r}: proxy_overhead {d.proxy_overhead:g} s is "
                                            f"more than the two ports' latency (2 x {d.latency:g} s) "
                                            f"it is taken from with proxy = \"serial\"")
                elif d.bandwidth is not None or d.overhead or d.proxy_overhead:
                    raise TopologyError(f"device {name!r} ({d.kind}): only a nic has a bandwidth "
                                        f"or overhead; give link bandwidths on its links")
                names.append(name)
                kinds.append(d.kind)
        index = {n: i for i, n in enumerate(names)}
        #: the devices of one server (GPUs first) and their kinds
        self.device_names, self._tkinds = names, kinds
        tlinks: list[tuple[int, int, LinkSpec]] = []
        seen = set()
        for ls in spec.links:
            for a, b in _expand_link(ls, spec.gpus):
                for end in (a, b):
                    if end not in index:
                        raise TopologyError(f"link {a}-{b}: no device named {end!r}")
                if a == b:
                    raise TopologyError(f"link {a}-{b} joins a device to itself")
                key = (min(index[a], index[b]), max(index[a], index[b]))
                if key in seen:
                    raise TopologyError(f"link {a}-{b} is given twice (one full-duplex link per pair; "
                                        f"add the bandwidths)")
                seen.add(key)
                tlinks.append((index[a], index[b], ls))
        self.nics = sorted(nic_port)                     # template vertex ids of the NICs
        # directed template links: 2i = a->b, 2i+1 = b->a
        V, E2 = len(names), 2 * len(tlinks)
        self._V, self._E = V, E2
        #: vertices of one server: node k holds vertices k·V .. (k+1)·V − 1, the fabric's come after
        self.server_vertices = V
        t_src, t_dst, t_cap, t_lat, t_kind = [], [], [], [], []
        adj: list[list[tuple[int, int]]] = [[] for _ in range(V)]
        for i, (u, w, ls) in enumerate(tlinks):
            for x, y in ((u, w), (w, u)):
                t_src.append(x)
                t_dst.append(y)
                t_cap.append(ls.bandwidth)
                t_lat.append(ls.latency)
                t_kind.append(ls.kind)
            adj[u].append((w, 2 * i))
            adj[w].append((u, 2 * i + 1))
        for nbrs in adj:
            nbrs.sort()
        self._adj = adj
        self._tcap = t_cap
        self._parents: dict[int, list] = {}
        for g in range(spec.gpus):
            if not adj[g]:
                raise TopologyError(f"gpu{g} has no link")
            for h in range(spec.gpus):
                if h != g and self._tpath(g, h) is None:
                    raise TopologyError(f"gpu{g} cannot reach gpu{h} inside a server (GPUs and NICs "
                                        f"do not forward)")
        # -- the whole cluster
        self.vertex_names = [f"n{n}.{x}" for n in range(spec.nodes) for x in names]
        self.link_src = [n * V + s for n in range(spec.nodes) for s in t_src]
        self.link_dst = [n * V + d for n in range(spec.nodes) for d in t_dst]
        self.link_cap = t_cap * spec.nodes
        self.link_lat = t_lat * spec.nodes
        self.link_ovh = [0.0] * (E2 * spec.nodes)
        self.link_kind = t_kind * spec.nodes
        self.rail_of = self._rail_pairs()                # GPU index -> its NIC's index in self.nics
        fabric = spec.fabric.kind if spec.nodes > 1 else "none"
        if spec.nodes > 1 and fabric == "none":
            raise TopologyError(f"{spec.nodes} nodes need a fabric: set [network.fabric] kind to "
                                f"'rail' or 'switch'")
        if spec.nodes > 1 and not self.nics:
            raise TopologyError(f"{spec.nodes} nodes need NICs: the server has none")
        self.fabric = fabric
        self._nic_up: dict[tuple[int, int], int] = {}    # (node, nic index) -> link to the fabric
        self._nic_down: dict[tuple[int, int], int] = {}
        self._up: list[list[int]] = []                   # [leaf][spine] -> uplink
        self._down: list[list[int]] = []                 # [leaf][spine] -> downlink
        if fabric != "none":
            self._build_fabric(nic_port)
        self._routes: dict[tuple[int, int], Route] = {}
        #: the exact max-flow bounds, per collective (ccxml.topology.flow.exact_bound): once
        self.exact_bounds: dict = {}

    # -- construction helpers ----------------------------------------------------------------
    def _add_vertex(self, name: str) -> int:
        self.vertex_names.append(name)
        return len(self.vertex_names) - 1

    def _add_link(self, s: int, d: int, cap: float, lat: float, kind: str, ovh: float = 0.0) -> int:
        self.link_src.append(s)
        self.link_dst.append(d)
        self.link_cap.append(cap)
        self.link_lat.append(lat)
        self.link_ovh.append(ovh)
        self.link_kind.append(kind)
        return len(self.link_src) - 1

    def _build_fabric(self, nic_port: dict[int, DeviceSpec]) -> None:
        f, V, N = self.spec.fabric, self._V, self.nodes
        if self.fabric == "switch":
            leaves = [self._add_vertex("fabric")] * len(self.nics)
        else:
            leaves = [self._add_vertex(f"rail{k}") for k in range(len(self.nics))]
        for n in range(N):
            for k, v in enumerate(self.nics):
                port = nic_port[v]
                lat, ovh = port.port()
                bw = port.bandwidth                         # (a nic has one: checked)
                self._nic_up[(n, k)] = self._add_link(n * V + v, leaves[k], bw, lat,  # type: ignore[arg-type]
                                                      "net", ovh)
                self._nic_down[(n, k)] = self._add_link(leaves[k], n * V + v, bw,  # type: ignore[arg-type]
                                                        lat + f.latency, "net")
        if self.fabric == "rail" and len(self.nics) > 1:
            if f.spine == "ecmp":
                # one spine switch per node-port of a leaf, every leaf linked to every spine switch
                spines = [self._add_vertex(f"spine{j}") for j in range(N)]
            else:
                spines = [self._add_vertex("spine")]
            width = N if f.spine == "adaptive" else 1      # node-ports one uplink stands for
            for k, leaf in enumerate(leaves):
                bw = nic_port[self.nics[k]].bandwidth * width / f.oversubscription  # type: ignore[operator]
                if f.spine == "adaptive" and f.oversubscription == 1:
                    bw = INF                               # non-blocking: never the bottleneck
                self._up.append([self._add_link(leaf, sp, bw, f.latency, "spine") for sp in spines])
                self._down.append([self._add_link(sp, leaf, bw, 0.0, "spine") for sp in spines])

    def _tlinks(self, u: int, v: int) -> list[int]:
        """:meth:`_tpath` between devices that reach each other (checked when the network is built)."""
        p = self._tpath(u, v)
        if p is None:
            raise TopologyError(f"internal: no route from {self.device_names[u]} to {self.device_names[v]}")
        return p

    def _tpath(self, u: int, v: int) -> list[int] | None:
        """Template links of the route u -> v inside a server: the fewest links, among those the
        widest (largest smallest bandwidth), ties towards lower-numbered devices — NCCL's choice
        (a breadth-first search over links sorted by bandwidth). GPUs and NICs do not forward."""
        par = self._parents.get(u)
        if par is None:
            par = self._parents[u] = self._search(u)
        if par[v] is None:
            return None
        out = []
        while v != u:
            x, e = par[v]
            out.append(e)
            v = x
        out.reverse()
        return out

    def _search(self, u: int) -> list:
        """Breadth-first layers from u; each vertex keeps the parent giving the widest path."""
        V, cap, kinds, adj = self._V, self._tcap, self._tkinds, self._adj
        par: list = [None] * V
        width = [0.0] * V
        par[u], width[u] = (-1, -1), INF
        layer = [u]
        while layer:
            nxt: dict[int, None] = {}
            for x in layer:                  # in vertex order: ties go to the lower parent
                if x != u and kinds[x] in _ENDPOINTS:
                    continue
                for y, e in adj[x]:
                    if y == u or (par[y] is not None and y not in nxt):
                        continue             # reached in an earlier layer
                    w = min(width[x], cap[e])
                    if par[y] is None or w > width[y]:
                        par[y], width[y] = (x, e), w
                        nxt[y] = None
            layer = sorted(nxt)
        return par

    def _rail_pairs(self) -> list[int]:
        """Each GPU's NIC (index into self.nics): the nearest, NICs shared out evenly in order."""
        if not self.nics:
            return []
        load = [0] * len(self.nics)
        out = []
        for g in range(self.gpus):
            best = None
            for k, v in enumerate(self.nics):
                p = self._tpath(g, v)
                if p is None:
                    continue
                key = (len(p), load[k], k)
                if best is None or key < best:
                    best = key
            if best is None:
                raise TopologyError(f"gpu{g} cannot reach any NIC inside its server")
            out.append(best[2])
            load[best[2]] += 1
        return out

    # -- queries -------------------------------------------------------------------------------
    def node_of(self, rank: int) -> int:
        return rank // self.gpus

    def node_of_vertex(self, v: int) -> int:
        """The node holding vertex ``v``; -1 for the fabric's switches."""
        return v // self._V if v < self._V * self.nodes else -1

    def link_name(self, link: int) -> str:
        return f"{self.vertex_names[self.link_src[link]]}->{self.vertex_names[self.link_dst[link]]}"

    def route(self, a: int, b: int) -> Route:
        """The route of a transfer from rank ``a`` to rank ``b`` (memoised)."""
        key = (a, b)
        r = self._routes.get(key)
        if r is None:
            r = self._routes[key] = self._make_route(a, b)
        return r

    def _make_route(self, a: int, b: int) -> Route:
        if not (0 <= a < self.nranks and 0 <= b < self.nranks) or a == b:
            raise TopologyError(f"no route from rank {a} to rank {b} on {self.nranks} ranks")
        G, E = self.gpus, self._E
        na, ga, nb, gb = a // G, a % G, b // G, b % G
        if na == nb:
            links = [na * E + e for e in self._tlinks(ga, gb)]
        else:
            ka, kb = self.rail_of[ga], self.rail_of[gb]
            links = [na * E + e for e in self._tlinks(ga, self.nics[ka])]
            links.append(self._nic_up[(na, ka)])
            if self.fabric == "rail" and ka != kb:
                j = ecmp(na, ka, nb, kb, self.nodes) if self.spec.fabric.spine == "ecmp" else 0
                links.extend((self._up[ka][j], self._down[kb][j]))
            links.append(self._nic_down[(nb, kb)])
            links.extend(nb * E + e for e in self._tlinks(self.nics[kb], gb))
        cap, ovh = self.link_cap, self.link_ovh
        res = tuple(x for x in links if cap[x] != INF)
        return Route(tuple(links), res, sum(self.link_lat[x] for x in links),
                     sum(ovh[x] for x in links), min((cap[x] for x in res), default=INF),
                     tuple(x for x in res if ovh[x] > 0))

    def describe(self) -> str:
        shape = f"{self.nodes} node{'s' if self.nodes > 1 else ''} x {self.gpus} GPUs"
        return f"{self.name}, {shape}" + (f", {self.fabric} fabric" if self.nodes > 1 else "")


__all__ = ["DEVICE_KINDS", "FABRIC_KINDS", "PROXY_READINGS", "DeviceSpec", "FabricSpec", "LinkSpec", "Network",
           "NetworkSpec", "Route", "ecmp"]
