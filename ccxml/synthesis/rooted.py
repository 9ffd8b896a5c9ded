"""Broadcast and Reduce from one root: the max-flow bound and a packing of spanning trees at it.

**The bound.** A Broadcast from root r moves the whole buffer (n bytes) to every other rank, along
rank-to-rank hops on the runtime's routes (the route rule of :mod:`ccxml.topology.flow`; ranks may
forward). Every rank v must receive n bytes across every cut that separates it from r, so
``T ≥ n / min_v maxflow(r, v)`` in the route graph; Edmonds' branching theorem (one root: k
arborescences rooted at r, edge-disjoint in the capacitated sense, exist with total rate
``min_v maxflow(r, v)``; ForestColl's switch splitting, arXiv 2402.06787 §4, for the switch and
NIC vertices) makes it tight. A Reduce to r is the same on the reversed graph (in-trees: partial
sums flow child → parent on route(child, parent)). nccl-tests' busbw of both is the algbw, n / T,
so the bound's busbw is the max-flow itself. :func:`rooted_bound` computes it with one max-flow per
rank (scipy's Dinic on integer MB/s, networkx's the exact twin) and reports the binding rank and
the links of its minimum cut.

**The packing** (:func:`synthesize_rooted`): the column generation of
:func:`ccxml.synthesis.forest.synthesize` with r the only root and no node-shift symmetry (the
root breaks it): multiplicative-weight rounds of minimum-cost arborescences, then the rate LP and
its duals' pricing until no cheaper tree appears, the shallowest packing at the best rate, and k
= the fewest trees (heaviest first) whose rate is within ``tol`` of the unrestricted one and whose
layout fits the runtime (:mod:`ccxml.synthesis.fit`). Written from the paper and the theorem; no
code of ForestColl is used.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ccxml.synthesis.forest import Tree, _lp, _Problem, _shallow, min_arborescence
from ccxml.topology.flow import _INT32, RouteGraph, _nx_cut, _scipy_cut, _units, need_synth
from ccxml.vocab.errors import TopologyError

ROOTED = ("broadcast", "reduce")
#: multiplicative-weight rounds (one tree each) before the column generation: many diverse trees
#: give the k-limited packing better columns (dgx-h100 x 4 Broadcast, k <= 16 trees: 8 rounds gave
#: 325 of 400 GB/s, 32 and 64 rounds 400; x 2: 8 rounds 380.4 at k = 11, 64 rounds 400 at k = 9)
ROUNDS = 64


@dataclass(frozen=True)
class RootedBound:
    """The Broadcast / Reduce bound of a network from ``root``: ``rate`` = min over ranks v of
    maxflow(root, v) (B/s; Reduce: on the reversed graph); ``busbw`` = rate (nccl-tests: busbw =
    algbw for both); ``worst``: the rank whose max-flow binds; ``cut_links``: (link, B/s) of its
    minimum cut; ``cut_ranks``: the ranks on the far side of that cut (the root's side for
    Reduce)."""
    coll: str
    p: int
    root: int
    rate: float
    worst: int
    cut_ranks: tuple[int, ...]
    cut_links: tuple[tuple[str, float], ...]
    exact: bool
    note: str = ""

    @property
    def busbw(self) -> float:
        return self.rate

    def time_s(self, n: float) -> float:
        """The least time of this collective on n bytes (the buffer)."""
        return n / self.rate

    def describe_cut(self) -> str:
        """The binding cut for people: which rank, which links, and the max-flow."""
        by_bw: dict[float, int] = {}
        for _, bw in self.cut_links:
            by_bw[bw] = by_bw.get(bw, 0) + 1
        total = sum(bw for _, bw in self.cut_links)
        links = " + ".join(f"{c}x{bw / 1e9:g}" for bw, c in sorted(by_bw.items(), reverse=True))
        if len(self.cut_links) <= 3:
            links = " + ".join(f"{name} {bw / 1e9:g}" for name, bw in self.cut_links)
        way = f"from root {self.root} to rank {self.worst}" if self.coll == "broadcast" else \
            f"from rank {self.worst} to root {self.root}"
        return f"max-flow {way}: {links} = {total / 1e9:g} GB/s"


def rooted_bound(net, coll: str, root: int, *, use_networkx: bool = False,
                 graph: RouteGraph | None = None) -> RootedBound:
    """The Broadcast / Reduce bound of ``net`` from ``root`` under the route rule (module
    docstring), with the binding rank and its minimum cut."""
    need_synth()
    if coll not in ROOTED:
        raise TopologyError(f"the rooted bound is for broadcast and reduce, not {coll}")
    rg = graph or RouteGraph.build(net)
    p = len(rg.rank_vertex)
    if p < 2:
        raise TopologyError("a bound needs at least 2 ranks")
    if not 0 <= root < p:
        raise TopologyError(f"root {root} is out of range for {p} ranks")
    raw = [c for _, _, c, _ in rg.edges if c != math.inf]
    ints, unit = _units(raw)
    biggest = max(ints) * len(rg.edges) + 1
    edges, it = [], iter(ints)
    for u, v, c, _ in rg.edges:
        cap = next(it) if c != math.inf else biggest
        edges.append((v, u, cap) if coll == "reduce" else (u, v, cap))
    big = sum(c for _, _, c in edges)
    cut = _nx_cut if use_networkx or big > _INT32 else _scipy_cut
    nv = len(rg.names)
    s = rg.rank_vertex[root]
    best = None
    for v in range(p):
        if v == root:
            continue
        value, T = cut(nv, edges, s, rg.rank_vertex[v])
        if best is None or value < best[0]:
            best = (value, v, T)
    value, worst, T = best
    crossing: dict[int, float] = {}
    other: list[tuple[str, float]] = []
    for (_, v, c, link), (a, b, _) in zip(rg.edges, edges):
        if b in T and a not in T and c != math.inf:
            if link >= 0:
                crossing[link] = c
            else:
                other.append((rg.names[v], c))
    cut_links = tuple(sorted((net.link_name(x), bw) for x, bw in crossing.items())) + tuple(other)
    rank_of = {x: r for r, x in enumerate(rg.rank_vertex)}
    return RootedBound(coll, p, root, value * unit * 1e6, worst,
                       tuple(sorted(rank_of[x] for x in T if x in rank_of)), cut_links, rg.exact,
                       rg.why_not_exact)


@dataclass(frozen=True)
class RootedForest:
    """Trees of the one root at total rate ``rate`` (B/s of the buffer); ``bound``: the max-flow
    bound; ``k``: trees; ``unrestricted``: the LP rate with every tree found; ``fit``: what the
    runtime's limits did to k (:class:`ccxml.synthesis.fit.Fit`, or None)."""
    p: int
    root: int
    coll: str
    trees: tuple[Tree, ...]
    rate: float
    bound: RootedBound
    k: int
    unrestricted: float
    seconds: float
    headroom: float = 0.0
    fit: object = None

    def of_root(self, r: int) -> list[Tree]:
        return [t for t in self.trees if t.root == r]

    @property
    def busbw(self) -> float:
        return self.rate


class _OneRoot(_Problem):
    """The routes of :class:`~ccxml.synthesis.forest._Problem` with one root and no node shifts."""

    def __init__(self, net, reverse: bool, root: int, headroom: float = 0.0):
        super().__init__(net, reverse, headroom)
        self.root = root

    def shifts(self) -> int:
        return 1

    def roots(self) -> list[int]:
        return [self.root]


def _elimination(prob, cands, loads, weights, keep_max: int = 64) -> list[int]:
    """Candidate indices, last dropped first: from the trees the LP uses (at most ``keep_max``,
    heaviest), drop the lightest and solve the rate LP again, until one is left. Its top k are the
    k trees that survived, a better set for small k than the k heaviest of the full LP."""
    alive = sorted(range(len(cands)), key=lambda i: (-weights[i], i))
    rest = alive[keep_max:] + [i for i in alive[:keep_max] if weights[i] <= 0]
    alive = [i for i in alive[:keep_max] if weights[i] > 0]
    dropped = list(reversed(rest))
    while len(alive) > 1:
        _, w, _ = _lp(prob, [cands[i] for i in alive], [loads[i] for i in alive])
        j = min(range(len(alive)), key=lambda j: (w[j], -alive[j]))
        dropped.append(alive.pop(j))
    return alive + list(reversed(dropped))


def synthesize_rooted(net, coll: str, root: int, *, rounds: int = 0, tol: float = 0.05, max_k: int = 16,
                      headroom: float = 0.0, fits=None, iterations: int = 400) -> RootedForest:
    """Spanning out-trees of ``root`` (Broadcast; Reduce: the trees whose reversed edges, on
    route(child, parent), carry the sums) packed at the max-flow bound (module docstring).
    ``rounds``: multiplicative-weight rounds (0: :data:`ROUNDS`); ``iterations``: at most that
    many pricing rounds (one tree each).
    ``fits(trees) -> Fit``: the runtime check of :mod:`ccxml.synthesis.fit` for a candidate set of
    trees (None: no limits); k is the smallest whose rate is within ``tol`` of the unrestricted
    one among those that fit."""
    need_synth()
    import numpy as np
    t0 = time.perf_counter()
    bound = rooted_bound(net, coll, root)
    prob = _OneRoot(net, coll == "reduce", root, headroom)
    p = prob.p
    cong = np.zeros(len(prob.cap))
    cands: list[tuple[int, tuple[int, ...]]] = []
    loads = []
    seen = set()
    for it in range(rounds or ROUNDS):
        top = cong.max() if it else 1.0
        length = np.exp(8.0 * cong / top) / prob.cap
        cost = (prob.M @ length).reshape(p, p)
        np.fill_diagonal(cost, np.inf)
        parent = tuple(int(x) for x in min_arborescence(_shallow(cost, root), root))
        ld = prob.tree_load(parent)
        cong += ld / prob.cap
        if parent not in seen:
            seen.add(parent)
            cands.append((root, parent))
            loads.append(ld)
    best, weights, duals = _lp(prob, cands, loads)
    for _ in range(iterations):          # column generation on the LP's link prices
        y = np.maximum(duals, 0) + 1e-12 / prob.cap
        cost = (prob.M @ y).reshape(p, p)
        np.fill_diagonal(cost, np.inf)
        parent = tuple(int(x) for x in min_arborescence(_shallow(cost, root), root))
        if parent in seen:              # the cheapest tree is in the LP already: optimal
            break
        seen.add(parent)
        cands.append((root, parent))
        loads.append(prob.tree_load(parent))
        best, weights, duals = _lp(prob, cands, loads)
    # three rankings of the trees, heaviest first: the rate LP's own (a vertex of the polytope, few
    # trees), the shallowest packing at the best rate (shorter pipelines), and the order in which
    # dropping the lightest tree and solving again leaves them; per k the best wins
    _, shallow, _ = _lp(prob, cands, loads, at_least=best * (1 - 1e-6))
    rankings = [[sorted(range(len(cands)), key=lambda i: (-w[i], i))] for w in (weights, shallow)]
    rankings.append([_elimination(prob, cands, loads, shallow)])
    from ccxml.synthesis.fit import choose_k
    k, rate, chosen, fit = choose_k(prob, cands, loads, rankings, best, tol, max_k, fits,
                                    lambda sel: [Tree(r, par, w) for (r, par), w in sel], _lp)
    trees = tuple(sorted((Tree(r, par, w) for (r, par), w in chosen), key=lambda t: (-t.rate, t.parent)))
    return RootedForest(p, root, coll, trees, rate, bound, k, best, time.perf_counter() - t0, headroom, fit)


__all__ = ["ROOTED", "RootedBound", "RootedForest", "rooted_bound", "synthesize_rooted"]
