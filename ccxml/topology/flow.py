"""The exact AllGather / ReduceScatter throughput bound of a network, by max-flow, with its cut.

**The route rule.** Data moves only along rank-to-rank hops, and a hop from rank a to rank b takes
the route the runtime (and :class:`~ccxml.topology.network.Network`) gives that pair: inside a
server the fewest-links-then-widest path (NVLink, xGMI, PCIe peer-to-peer), between servers the
rail rule (a's rail NIC, the fabric, b's rail NIC). Ranks may forward (receive a block, send it on
along another hop); switches and NICs only carry the routes through them. So a same-node pair never
loops through the fabric, and a PCIe switch shared by two GPUs and their NICs does not become a
GPU-to-GPU path unless the runtime routes that pair through it.

**The route graph** (:class:`RouteGraph`) is a directed graph whose paths are exactly the chains of
runtime routes, with the links' capacities:

* one vertex per rank;
* each directed link some route uses becomes two vertices joined by an edge of the link's capacity
  (the line graph: a vertex per link end), and a *turn* edge joins link e to link f only where
  some route takes f right after e. A path can then only turn where a route turns, which is what
  keeps, say, GPU0 → PCIe switch → GPU1 out when that pair's route is NVLink;
* the fabric: a NIC's port out and its port in are separate links (vertices). When the fabric is
  non-blocking (``switch``, or ``rail`` with an adaptive, non-oversubscribed spine) the only
  capacities on a cross-node route are the two NIC ports, so the fabric is replaced by 2·⌈log2 N⌉
  hub vertices: hub (i, c) takes the ports out of the nodes whose node number has bit i = c and
  feeds the ports in of the nodes with bit i ≠ c. Two different nodes differ in some bit, so every
  NIC-out reaches every NIC-in of every *other* node, and no path leads from a node's NIC back into
  the same node. (An oversubscribed or ECMP spine shares its capacity between all node pairs; the
  hub trick cannot express that, so such a fabric is modelled as leaf and spine vertices with the
  spine's aggregate capacity, which lets a path leave a node and come back: the bound is then an
  upper bound, and :attr:`ExactBound.exact` says so.)

:meth:`RouteGraph.check_exact` enumerates the turn paths of one server and confirms that each one
between ranks (or between a rank and a NIC port) is the runtime's route for that pair.

**The bound.** Each rank holds n/p bytes that every other rank needs (AllGather). For any vertex
set T of the route graph that holds a rank but not all of them, the blocks of the ranks outside T
must all enter T, so ``T_AG ≥ (n/p)·|ranks ∉ T| / cap_in(T)``. Edmonds' branching theorem (with
ForestColl's edge splitting for the switch vertices, arXiv 2402.06787 §4) makes the largest of these
tight: the rate x* per root of a packing of spanning out-trees is ``min_T cap_in(T) / |ranks ∉ T|``.
It is found exactly with max-flows: add a source s with an edge of capacity x to every rank; x is
feasible iff every rank v has ``maxflow(s, v) ≥ p·x``. Starting from the cut around one rank,
each violated v gives a cut with a smaller ratio (Dinkelbach's method: x_{i+1} =
cap_in(T)/|ranks ∉ T| of the minimum cut T found at x_i); it stops at x* after a few rounds, and
the last cut is the binding one. ReduceScatter is AllGather on the reversed graph (in-trees).
Bus bandwidth (nccl-tests' busbw): ``(p − 1)·x*``; AllReduce = ReduceScatter then AllGather at
their bounds, so its time bound is the sum of the two and its busbw the smaller ratio of the two.

Capacities enter the max-flows as integers (MB/s, divided by their common divisor): the fast path is
``scipy.sparse.csgraph.maximum_flow`` (int32), the exact twin networkx's max-flow on Python ints
(used when the numbers would not fit, and by the tests to check the fast path). Both are imported
lazily: ``pip install 'ccxml[synth]'``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import reduce
from typing import TYPE_CHECKING

from ccxml.vocab.errors import TopologyError

if TYPE_CHECKING:                       # (the network module loads pydantic)
    from ccxml.topology.network import Network

#: what the bound counts, printed beside it
RULE = ("route rule: rank-to-rank hops on the runtime's routes (same node: NVLink/xGMI/PCIe path; "
        "other nodes: rail NIC, fabric, rail NIC), ranks may forward")

_INT32 = 2**31 - 1


def need_synth():
    """networkx and scipy, or one clear error (``pip install 'ccxml[synth]'``)."""
    try:
        import networkx  # noqa: F401
        import scipy.sparse.csgraph  # noqa: F401
    except ImportError as e:
        raise TopologyError(f"the exact bound and forest synthesis need networkx and scipy ({e.name} is "
                            f"missing): pip install 'ccxml[synth]'") from None


@dataclass
class RouteGraph:
    """The route graph of a :class:`~ccxml.topology.network.Network` (see the module docstring).

    ``rank_vertex[r]``: rank r's vertex; ``edges``: (u, v, capacity B/s, physical link or -1);
    ``names``: a name per vertex; ``exact``: False when the fabric had to be modelled with loops.
    """
    net: Network
    names: list[str] = field(default_factory=list)
    edges: list[tuple[int, int, float, int]] = field(default_factory=list)
    rank_vertex: list[int] = field(default_factory=list)
    exact: bool = True
    why_not_exact: str = ""

    @classmethod
    def build(cls, net) -> "RouteGraph":
        g = cls(net)
        g._build()
        return g

    def _vertex(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def _build(self) -> None:
        net = self.net
        G, E, N = net.gpus, net._E, net.nodes
        # the template server's routes: GPU -> GPU, GPU -> its rail NIC, its rail NIC -> GPU
        rail_nic = [net.nics[net.rail_of[g]] for g in range(G)] if net.nics and N > 1 else []
        self.g2g = {(a, b): net._tlinks(a, b) for a in range(G) for b in range(G) if a != b}
        self.g2n = {a: net._tlinks(a, rail_nic[a]) for a in range(G)} if rail_nic else {}
        self.n2g = {b: net._tlinks(rail_nic[b], b) for b in range(G)} if rail_nic else {}
        used = sorted({e for p in (*self.g2g.values(), *self.g2n.values(), *self.n2g.values()) for e in p})
        self.rank_vertex = [0] * (G * N)
        lin: dict[tuple[int, int], int] = {}
        lout: dict[tuple[int, int], int] = {}
        caps = net.link_cap
        for n in range(N):
            for g in range(G):
                self.rank_vertex[n * G + g] = self._vertex(f"rank{n * G + g}")
            for e in used:
                link = n * E + e
                lin[n, e] = self._vertex(net.link_name(link) + ":in")
                lout[n, e] = self._vertex(net.link_name(link) + ":out")
                self.edges.append((lin[n, e], lout[n, e], caps[link], link))
        up_in: dict[tuple[int, int], int] = {}       # (node, nic index) -> port-out link's vertices
        up_out: dict[tuple[int, int], int] = {}
        dn_in: dict[tuple[int, int], int] = {}
        dn_out: dict[tuple[int, int], int] = {}
        if N > 1:
            for n in range(N):
                for k in sorted(set(net.rail_of)):
                    for store_in, store_out, link in ((up_in, up_out, net._nic_up[n, k]),
                                                      (dn_in, dn_out, net._nic_down[n, k])):
                        store_in[n, k] = self._vertex(net.link_name(link) + ":in")
                        store_out[n, k] = self._vertex(net.link_name(link) + ":out")
                        self.edges.append((store_in[n, k], store_out[n, k], caps[link], link))
        turns = set()              # (u, v, capacity, the physical link it belongs to)

        def chain(n, path, start, end):
            """Edges along ``path`` (template links of node n) from vertex start to vertex end."""
            prev = start
            for e in path:
                turns.add((prev, lin[n, e], caps[n * E + e], n * E + e))
                prev = lout[n, e]
            turns.add((prev, end, caps[n * E + path[-1]], n * E + path[-1]))

        for n in range(N):
            rv = [self.rank_vertex[n * G + g] for g in range(G)]
            for (a, b), path in self.g2g.items():
                chain(n, path, rv[a], rv[b])
            for a, path in self.g2n.items():
                chain(n, path, rv[a], up_in[n, net.rail_of[a]])
            for b, path in self.n2g.items():
                k = net.rail_of[b]
                chain(n, path, dn_out[n, k], rv[b])
        self.edges.extend(sorted(turns))
        if N > 1:
            self._fabric(up_out, dn_in)

    def _fabric(self, up_out, dn_in) -> None:
        net, N = self.net, self.net.nodes
        f = net.spec.fabric
        rails = sorted(set(net.rail_of))
        port = {k: net.link_cap[net._nic_up[0, k]] for k in rails}
        nonblocking = (net.fabric == "switch" or len(net.nics) == 1
                       or (f.spine == "adaptive" and f.oversubscription == 1))
        if nonblocking:
            for i in range(max(1, (N - 1).bit_length())):
                for c in (0, 1):
                    hub = self._vertex(f"fabric-hub{i}.{c}")
                    for n in range(N):
                        for k in rails:
                            if (n >> i) & 1 == c:
                                self.edges.append((up_out[n, k], hub, port[k], net._nic_up[n, k]))
                            else:
                                self.edges.append((hub, dn_in[n, k], port[k], net._nic_down[n, k]))
            return
        self.exact = False
        self.why_not_exact = (f"the {f.spine} spine (oversubscription {f.oversubscription:g}) is shared by "
                              f"all node pairs: modelled as leaves and spine, a path may leave a node and "
                              f"come back, so the bound may be above the true one")
        leaves = {k: self._vertex(f"rail{k}") for k in rails}
        spine = self._vertex("spine")
        for k in rails:
            for n in range(N):
                self.edges.append((up_out[n, k], leaves[k], port[k], net._nic_up[n, k]))
                self.edges.append((leaves[k], dn_in[n, k], port[k], net._nic_down[n, k]))
            if len(rails) > 1:
                cap = sum(net.link_cap[x] for x in net._up[k])
                self.edges.append((leaves[k], spine, cap, -1))
                self.edges.append((spine, leaves[k], cap, -1))

    def check_exact(self, limit: int = 200_000) -> bool:
        """True when every turn path of one server from a rank (or a NIC port in) to a rank (or a
        NIC port out) is the runtime's route for that pair (enumerated; False past ``limit``)."""
        net = self.net
        routes: dict[tuple, dict[tuple, tuple[int, ...]]] = {}
        for (a, b), p in self.g2g.items():
            routes.setdefault(("gpu", a), {})[("gpu", b)] = tuple(p)
        for a, p in self.g2n.items():
            routes.setdefault(("gpu", a), {})[("nic", net.rail_of[a])] = tuple(p)
        for b, p in self.n2g.items():
            routes.setdefault(("nic", net.rail_of[b]), {})[("gpu", b)] = tuple(p)
        succ: dict[int, set[int]] = {}
        ends: dict[int, set[tuple]] = {}
        for paths in routes.values():
            for end, path in paths.items():
                ends.setdefault(path[-1], set()).add(end)
                for e, f in zip(path, path[1:]):
                    succ.setdefault(e, set()).add(f)
        count = 0
        for start, paths in routes.items():
            stack: list[tuple[int, ...]] = [(e,) for e in sorted({p[0] for p in paths.values()})]
            while stack:
                path = stack.pop()
                count += 1
                if count > limit:
                    return False
                for end in ends.get(path[-1], ()):
                    if end != start and paths.get(end) != path:
                        return False
                stack.extend(path + (f,) for f in sorted(succ.get(path[-1], ())) if f not in path)
        return True


@dataclass(frozen=True)
class ExactBound:
    """The AllGather or ReduceScatter bound of a network: ``rate`` = x*, the bytes/s per root that
    a packing of trees reaches; ``busbw`` = (p − 1)·x* (nccl-tests' bus bandwidth);
    ``cut_ranks``: the ranks inside the binding cut T (the side that must receive, for AllGather);
    ``cut_links``: (physical link name, B/s) of the links crossing it; ``outside``: ranks outside."""
    coll: str
    p: int
    rate: float
    busbw: float
    cut_ranks: tuple[int, ...]
    cut_links: tuple[tuple[str, float], ...]
    outside: int
    exact: bool
    note: str = ""
    cut_coll: str = ""          # AllReduce: the collective whose cut binds

    def time_s(self, n: float) -> float:
        """The least time of this collective on n bytes (nccl-tests' size); AllReduce: the
        ReduceScatter and the AllGather of n bytes, one after the other."""
        return (2 if self.coll == "allreduce" else 1) * (n / self.p) / self.rate

    def describe_cut(self) -> str:
        """The binding cut, for people: which ranks, which links (by kind), and the ratio."""
        ranks = self.cut_ranks
        who = (f"rank {ranks[0]}" if len(ranks) == 1 else
               f"ranks {ranks[0]}..{ranks[-1]}" if list(ranks) == list(range(ranks[0], ranks[-1] + 1))
               else f"{len(ranks)} ranks")
        by_bw: dict[float, int] = {}
        for _, bw in self.cut_links:
            by_bw[bw] = by_bw.get(bw, 0) + 1
        total = sum(bw for _, bw in self.cut_links)
        links = " + ".join(f"{c}x{bw / 1e9:g}" for bw, c in sorted(by_bw.items(), reverse=True))
        if len(self.cut_links) <= 3:
            links = " + ".join(f"{name} {bw / 1e9:g}" for name, bw in self.cut_links)
        way = "into" if (self.cut_coll or self.coll) == "allgather" else "out of"
        return (f"{who} (with the switch/NIC ports on their side): links {way} it {links} = "
                f"{total / 1e9:g} GB/s for the blocks of {self.outside} rank{'s' if self.outside > 1 else ''}")


def _units(caps: list[float]) -> tuple[list[int], int]:
    """Capacities in MB/s, divided by their greatest common divisor."""
    ints = [max(1, round(c / 1e6)) for c in caps]
    g = reduce(math.gcd, ints, 0) or 1
    return [c // g for c in ints], g


class _Flows:
    """Max-flows on one graph with a super-source, at a rate num/den per rank."""

    def __init__(self, nv: int, edges: list[tuple[int, int, int]], ranks: list[int], exact: bool):
        self.nv, self.edges, self.ranks, self.use_nx = nv, edges, ranks, exact

    def min_cut(self, num: int, den: int, sink: int) -> tuple[int, set[int]]:
        """(flow value, sink side T) with rank edges num, the others scaled by den."""
        s = self.nv
        edges = [(u, v, c * den) for u, v, c in self.edges] + [(s, r, num) for r in self.ranks]
        big = max((c for _, _, c in edges), default=0) * max(1, len(self.ranks))
        if self.use_nx or big > _INT32 or num * len(self.ranks) > _INT32:
            return _nx_cut(self.nv + 1, edges, s, sink)
        return _scipy_cut(self.nv + 1, edges, s, sink)


def _scipy_cut(nv, edges, s, t):
    import numpy as np
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_flow
    agg: dict[tuple[int, int], int] = {}
    for u, v, c in edges:
        if u != v:
            agg[u, v] = agg.get((u, v), 0) + c
    keys = sorted(agg)
    rows = np.fromiter((k[0] for k in keys), dtype=np.int32, count=len(keys))
    cols = np.fromiter((k[1] for k in keys), dtype=np.int32, count=len(keys))
    data = np.fromiter((agg[k] for k in keys), dtype=np.int32, count=len(keys))
    m = csr_array((data, (rows, cols)), shape=(nv, nv))
    res = maximum_flow(m, s, t, method="dinic")
    flow = res.flow
    # residual reachability from s
    fl = {}
    coo = flow.tocoo()
    for u, v, x in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()):
        fl[u, v] = fl.get((u, v), 0) + x
    adj: dict[int, list[int]] = {}
    for (u, v), c in agg.items():
        if c - fl.get((u, v), 0) > 0:
            adj.setdefault(u, []).append(v)
        if fl.get((u, v), 0) > 0:
            adj.setdefault(v, []).append(u)
    seen = {s}
    stack = [s]
    while stack:
        x = stack.pop()
        for y in adj.get(x, ()):
            if y not in seen:
                seen.add(y)
                stack.append(y)
    return int(res.flow_value), set(range(nv)) - seen


def _nx_cut(nv, edges, s, t):
    import networkx as nx
    g = nx.DiGraph()
    g.add_nodes_from(range(nv))
    for u, v, c in edges:
        if u == v:
            continue
        if g.has_edge(u, v):
            g[u][v]["capacity"] += c
        else:
            g.add_edge(u, v, capacity=c)
    value, (_, sink_side) = nx.minimum_cut(g, s, t)
    return int(value), set(sink_side)


def exact_bound(net, coll: str = "allgather", *, use_networkx: bool = False,
                graph: RouteGraph | None = None) -> ExactBound:
    """The exact AllGather / ReduceScatter / AllReduce bound of ``net`` (a Network) under the route
    rule, with its binding cut (module docstring). AllReduce: the ReduceScatter and AllGather
    bounds, added (its busbw is the smaller of the two). Memoised on ``net`` (as its routes are)
    for the default method: simulate, select, show and topology show ask for it more than once."""
    need_synth()
    cache = getattr(net, "exact_bounds", None) if not use_networkx and graph is None else None
    if cache is not None and coll in cache:
        return cache[coll]
    b = _exact_bound(net, coll, use_networkx, graph)
    if cache is not None:
        cache[coll] = b
    return b


def _exact_bound(net, coll: str, use_networkx: bool, graph: RouteGraph | None) -> ExactBound:
    if coll == "allreduce":
        ag = exact_bound(net, "allgather", use_networkx=use_networkx, graph=graph)
        rs = exact_bound(net, "reducescatter", use_networkx=use_networkx, graph=graph)
        worse = ag if ag.rate <= rs.rate else rs
        rate = 2 / (1 / ag.rate + 1 / rs.rate)          # time = n/p/x_ag + n/p/x_rs = 2(n/p)/rate
        return ExactBound("allreduce", ag.p, rate, (ag.p - 1) * rate, worse.cut_ranks, worse.cut_links,
                          worse.outside, ag.exact, "ReduceScatter + AllGather at their bounds; "
                          f"binding: the {worse.coll} cut", worse.coll)
    if coll not in ("allgather", "reducescatter"):
        raise TopologyError(f"the exact bound is for allgather, reducescatter and allreduce, not {coll}")
    rg = graph or RouteGraph.build(net)
    p = len(rg.rank_vertex)
    if p < 2:
        raise TopologyError("a bound needs at least 2 ranks")
    raw = [c for _, _, c, _ in rg.edges if c != math.inf]
    ints, unit = _units(raw)
    biggest = max(ints) * len(rg.edges) + 1
    edges, it = [], iter(ints)
    for u, v, c, _ in rg.edges:
        cap = next(it) if c != math.inf else biggest
        edges.append((v, u, cap) if coll == "reducescatter" else (u, v, cap))
    flows = _Flows(len(rg.names), edges, rg.rank_vertex, use_networkx)
    ranks = set(rg.rank_vertex)
    rank_of = {v: r for r, v in enumerate(rg.rank_vertex)}

    def ratio(T: set[int]) -> tuple[int, int]:
        cap = sum(c for u, v, c in edges if v in T and u not in T)
        return cap, p - len(T & ranks)

    # by symmetry (every node is a copy, the fabric treats nodes alike) node 0's ranks suffice
    sinks = rg.rank_vertex[:net.gpus]
    best_T = {sinks[0]}
    num, den = ratio(best_T)
    for v in sinks[1:]:
        c, m = ratio({v})
        if Fraction(c, m) < Fraction(num, den):
            best_T, num, den = {v}, c, m
    changed = True
    while changed:
        changed = False
        for v in sinks:
            value, T = flows.min_cut(num, den, v)
            if value < num * p:               # some cut has a smaller ratio
                c, m = ratio(T)
                if m == 0 or Fraction(c, m) >= Fraction(num, den):
                    raise TopologyError("internal: the max-flow found no smaller cut")
                best_T, num, den = T, c, m
                changed = True
                break
    rate = num * unit * 1e6 / den
    crossing: dict[int, float] = {}
    other: list[tuple[str, float]] = []
    for (u, v, c, link), (a, b, _) in zip(rg.edges, edges):
        if b in best_T and a not in best_T and c != math.inf:
            if link >= 0:
                crossing[link] = c
            else:
                other.append((rg.names[v if coll == "allgather" else u], c))
    cut_links = tuple(sorted(((net.link_name(x), bw) for x, bw in crossing.items()))) + tuple(other)
    return ExactBound(coll, p, rate, (p - 1) * rate, tuple(sorted(rank_of[v] for v in best_T & ranks)),
                      cut_links, den, rg.exact, rg.why_not_exact)


def bound_lines(net, coll: str) -> list[str]:
    """The lines ``simulate``, ``select``, ``show`` and ``topology show`` print: the exact bound,
    its cut and the rule; one line naming the missing package instead when scipy/networkx lack."""
    if coll not in ("allgather", "reducescatter", "allreduce"):
        return []
    try:
        b = exact_bound(net, coll)
    except TopologyError as e:
        return [f"exact {coll} bound: unavailable ({e})"]
    what = "upper bound" if not b.exact else "exact bound"
    extra = " (AllReduce = ReduceScatter + AllGather at their bounds)" if coll == "allreduce" else ""
    lines = [f"{what} ({coll}, max-flow): busbw {b.busbw / 1e9:.1f} GB/s{extra}",
             f"  binding cut: {b.describe_cut()}",
             f"  {RULE}"]
    if b.note and not b.exact:
        lines.append(f"  note: {b.note}")
    return lines


__all__ = ["RULE", "ExactBound", "RouteGraph", "bound_lines", "exact_bound", "need_synth"]
