"""Physical lower bounds: how fast a collective could possibly run on a topology.

A **cut** is a set S of ranks; every byte a collective must move from S to the other ranks crosses
the links leaving S, so it takes at least ``bytes out of S / bandwidth out of S`` (and the same
inward). :func:`lower_bound` takes the largest such time over the cuts that matter:

* **each rank alone** — its injection bandwidth (the sum of its ports that carry traffic to
  other ranks, e.g. NVLink + PCIe-to-NIC on a DGX) and its ejection bandwidth;
* **each node** (a multi-node network, or a grouped dedicated-link topology) — the bytes that must
  leave or enter a node over its NICs;
* for AllReduce, the **sum over a partition** into G parts (the ranks; the nodes): each byte
  position needs at least 2(G − 1) part-to-part messages to reach every part (a reduce to one
  part and a broadcast back, or any other pattern), so the parts together send ≥ 2(G − 1)·n bytes
  through their combined bandwidth — the bound nccl-tests' busbw is scaled to.

Bytes a cut of k ranks out of p must pass, with n as nccl-tests counts it (allreduce: the buffer;
allgather: the output; reducescatter: the input; alltoall: one rank's whole send buffer;
gather/scatter: the root's whole buffer; broadcast/reduce: the buffer):

=============  ====================================  ====================================
collective     out of S                              into S
=============  ====================================  ====================================
allreduce      n (the others need S's part of each   n
               position)
allgather      k/p·n (S's blocks, once)              (p−k)/p·n
reducescatter  (p−k)/p·n                             k/p·n
alltoall       k(p−k)/p·n                            k(p−k)/p·n
broadcast      n if the root is in S                 n if it is not
reduce         n if the root is not in S             n if it is
gather         k/p·n if the root is not in S         (p−k)/p·n if it is
scatter        (p−k)/p·n if the root is in S         k/p·n if it is not
=============  ====================================  ====================================

The bounds ignore latency and hold for every schedule that moves data without coding it across
positions (every MSCCL schedule ccxml writes). The capacity of a cut counts only links some route
between the ranks uses.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ccxml.vocab.errors import TopologyError

INF = math.inf


@dataclass(frozen=True)
class Bound:
    """``time_s``: no schedule is faster; ``cut``: which cut gives it (for people)."""
    time_s: float
    cut: str


def cut_bytes(coll: str, p: int, n: float, k: int, root_inside: bool) -> tuple[float, float]:
    """(bytes out of, bytes into) a cut holding ``k`` of ``p`` ranks (see the module table)."""
    if not 0 < k < p:
        return 0.0, 0.0
    if coll == "allreduce":
        return n, n
    if coll == "allgather":
        return k / p * n, (p - k) / p * n
    if coll == "reducescatter":
        return (p - k) / p * n, k / p * n
    if coll in ("alltoall", "alltoallv"):
        x = k * (p - k) / p * n
        return x, x
    if coll == "broadcast":
        return (n, 0.0) if root_inside else (0.0, n)
    if coll == "reduce":
        return (0.0, n) if root_inside else (n, 0.0)
    if coll == "gather":
        return (0.0, (p - k) / p * n) if root_inside else (k / p * n, 0.0)
    if coll == "scatter":
        return ((p - k) / p * n, 0.0) if root_inside else (0.0, k / p * n)
    return 0.0, 0.0


def _time(nbytes: float, cap: float) -> float:
    if nbytes <= 0 or cap == INF:
        return 0.0
    return nbytes / cap if cap > 0 else INF


class _Cuts:
    """The bandwidth out of and into each single rank and each node, from the links routes use."""

    def __init__(self, topology, p: int):
        topology.check_ranks(p)
        self.p = p
        if topology.network is not None:
            self._from_network(topology.graph())
        else:
            self._from_levels(topology, p)

    def _from_network(self, net) -> None:
        p, G = self.p, net.gpus
        src, dst, cap = net.link_src, net.link_dst, net.link_cap
        rank_out, rank_in = [], []
        for g in range(G):             # every node is a copy of node 0
            first = {net.route(g, x).links[0] for x in range(p) if x != g}
            last = {net.route(x, g).links[-1] for x in range(p) if x != g}
            rank_out.append(sum(cap[ln] for ln in first))
            rank_in.append(sum(cap[ln] for ln in last))
        self.rank_out = [rank_out[r % G] for r in range(p)]
        self.rank_in = [rank_in[r % G] for r in range(p)]
        self.node_of = [r // G for r in range(p)]
        self.nodes = net.nodes
        if net.nodes > 1:
            v_node = net.node_of_vertex
            out_links, in_links = set(), set()
            for a in range(G):
                for b in range(G, p):
                    for ln in net.route(a, b).links:
                        if v_node(src[ln]) == 0 and v_node(dst[ln]) != 0:
                            out_links.add(ln)
                    for ln in net.route(b, a).links:
                        if v_node(src[ln]) != 0 and v_node(dst[ln]) == 0:
                            in_links.add(ln)
            self.node_out = sum(cap[ln] for ln in out_links)
            self.node_in = sum(cap[ln] for ln in in_links)

    def _from_levels(self, topo, p: int) -> None:
        def bw(level) -> float:
            return 1 / level.beta if level.beta > 0 else INF

        groups = topo.group_ranks(p)
        self.node_of = [0] * p
        for i, members in enumerate(groups):
            for r in members:
                self.node_of[r] = i
        self.nodes = len(groups)
        intra, inter = bw(topo.intra), bw(topo.inter_level)
        self.rank_out = [(len(groups[self.node_of[r]]) - 1) * intra + (p - len(groups[self.node_of[r]])) * inter
                         for r in range(p)]
        self.rank_in = list(self.rank_out)
        if self.nodes > 1:
            if len(set(len(g) for g in groups)) != 1:
                self.nodes = 1             # unequal groups: only the rank cuts
                return
            m = len(groups[0])
            self.node_out = self.node_in = m * (p - m) * inter


@functools.lru_cache(maxsize=4)
def _cuts(topology, p: int) -> _Cuts:
    """The cuts of ``topology`` on ``p`` ranks, computed once for every collective and size
    (for the largest topology, 1024 nodes of 8 GPUs, they take seconds)."""
    return _Cuts(topology, p)


def lower_bound(topology, coll: str, p: int, n: float, root: int = 0) -> Bound:
    """The largest cut bound (see the module docstring) for ``coll`` on ``p`` ranks moving ``n``
    bytes (nccl-tests sizes); ``root`` for the rooted collectives."""
    if p < 2:
        raise TopologyError(f"a bound needs at least 2 ranks, got {p}")
    c = _cuts(topology, p)
    best = Bound(0.0, "none")

    def consider(t: float, what: str):
        nonlocal best
        if t > best.time_s:
            best = Bound(t, what)

    for r in range(p):
        out, inn = cut_bytes(coll, p, n, 1, r == root)
        consider(_time(out, c.rank_out[r]), f"rank {r}'s ports out")
        consider(_time(inn, c.rank_in[r]), f"rank {r}'s ports in")
    if c.nodes > 1:
        m = p // c.nodes
        for node in range(c.nodes):
            out, inn = cut_bytes(coll, p, n, m, c.node_of[root] == node)
            consider(_time(out, c.node_out), f"node {node}'s links out (NICs)")
            consider(_time(inn, c.node_in), f"node {node}'s links in (NICs)")
    if coll == "allreduce":
        total = 2 * (p - 1) * n
        consider(_time(total, sum(c.rank_out)), "every rank's ports out, all-reduce total")
        consider(_time(total, sum(c.rank_in)), "every rank's ports in, all-reduce total")
        if c.nodes > 1:
            total = 2 * (c.nodes - 1) * n
            consider(_time(total, c.nodes * c.node_out), "every node's links out, all-reduce total")
            consider(_time(total, c.nodes * c.node_in), "every node's links in, all-reduce total")
    return best


__all__ = ["Bound", "cut_bytes", "lower_bound"]
