"""Packing spanning out-trees at the AllGather bound of a network (ForestColl, arXiv 2402.06787).

Every rank r roots trees that carry its block to every other rank; tree edges are rank-to-rank hops,
each on the route the runtime gives that pair (:mod:`ccxml.topology.flow`, the route rule), so a
tree edge loads every link of its route. A packing gives each tree a rate; the rates of r's trees
add up to x per root and the load of every link stays within its capacity. Edmonds' branching
theorem (with switch vertices split off, ForestColl §4) says the best x equals the max-flow bound x*
of :func:`ccxml.topology.flow.exact_bound`; this module finds a packing close to it, and reports how
close:

1. **Columns by multiplicative weights** — each link e has a length, ``1/cap_e`` scaled up
   exponentially with the load put on it so far; each round, every root takes its minimum-length
   spanning arborescence (Edmonds/Chu–Liu, :func:`min_arborescence`) in the complete digraph of
   ranks whose edge (a, b) costs the length of route(a, b). (The usual fractional packing scheme:
   Garg–Könemann with arborescences as the oracle.)
2. **Rates by a linear program** — over the trees found, maximise x subject to the link capacities
   (scipy's HiGHS): the packing is optimal over those columns.
3. **Fit the runtime** — keep the k heaviest trees of each root, for the smallest k whose LP rate is
   within ``tol`` of the unrestricted one.

Symmetry: when the fabric treats nodes alike (non-blocking), shifting every rank by one node maps
the network onto itself, so only node 0's roots are searched and each tree stands for its N shifts.

ReduceScatter uses the same trees reversed (in-trees: each edge carries partial sums child →
parent, on route(child, parent)); AllReduce is that ReduceScatter followed by the AllGather.
Written from the paper and the theorem; no code of ForestColl is used.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ccxml.topology.flow import ExactBound, exact_bound, need_synth
from ccxml.vocab.errors import TopologyError

#: NIC headrooms tried, most first, by ``headroom=-1`` (automatic)
AUTO_HEADROOM = (0.3, 0.15, 0.05, 0.0)


@dataclass(frozen=True)
class Tree:
    """A spanning out-tree of root ``root``: ``parent[v]`` (−1 at the root), and its ``rate``
    (bytes/s of the root's block it carries)."""
    root: int
    parent: tuple[int, ...]
    rate: float

    def edges_down(self) -> list[tuple[int, int]]:
        """(parent, child) in breadth-first order from the root, children in rank order."""
        kids: dict[int, list[int]] = {}
        for v, u in enumerate(self.parent):
            if u >= 0:
                kids.setdefault(u, []).append(v)
        out, layer = [], [self.root]
        while layer:
            nxt = []
            for u in layer:
                for v in kids.get(u, ()):
                    out.append((u, v))
                    nxt.append(v)
            layer = nxt
        return out

    def depth(self) -> int:
        d = [0] * len(self.parent)
        for u, v in self.edges_down():
            d[v] = d[u] + 1
        return max(d)


@dataclass(frozen=True)
class Forest:
    """Trees of every root at a common rate ``rate`` (B/s per root); ``bound``: the exact bound;
    ``k``: trees per root; ``unrestricted``: the LP rate with every tree found; ``seconds``: time
    the synthesis took."""
    p: int
    trees: tuple[Tree, ...]
    rate: float
    bound: ExactBound
    k: int
    unrestricted: float
    seconds: float
    headroom: float = 0.0
    fit: object = None                  # synthesis/fit.py's Fit: the runtime's limits, or None

    def of_root(self, r: int) -> list[Tree]:
        return [t for t in self.trees if t.root == r]

    @property
    def busbw(self) -> float:
        return (self.p - 1) * self.rate


def min_arborescence(W, root: int, fast: bool = True):
    """Parents of a minimum-cost spanning arborescence of root ``root`` in the dense cost matrix
    ``W`` (W[i, j]: edge i → j; math.inf: none) — Chu–Liu/Edmonds: every vertex takes its cheapest
    in-edge, every cycle is contracted with its in-edges' costs reduced, and the recursion's choice
    is expanded back. ``fast``: the expansion in whole-array steps (:func:`_expand`); False: one
    component at a time (:func:`_expand_loop`), its exact twin (tests/synthesis)."""
    import numpy as np
    n = W.shape[0]
    W = np.array(W, dtype=float)
    np.fill_diagonal(W, np.inf)
    W[:, root] = np.inf
    par = np.argmin(W, axis=0)
    par[root] = -1
    if np.isinf(W[par[np.arange(n) != root], np.arange(n)[np.arange(n) != root]]).any():
        raise TopologyError("a rank cannot be reached: no spanning tree")
    comp = np.full(n, -1)
    in_cycle = np.zeros(n, dtype=bool)
    ncomp = 0
    state = np.zeros(n, dtype=int)        # 0 new, 1 on the current walk, 2 done
    for s in range(n):
        walk = []
        v = s
        while v != -1 and state[v] == 0:
            state[v] = 1
            walk.append(v)
            v = par[v]
        if v != -1 and state[v] == 1:      # a new cycle through v
            c = v
            while True:
                comp[c] = ncomp
                in_cycle[c] = True
                c = par[c]
                if c == v:
                    break
            ncomp += 1
        for x in walk:
            state[x] = 2
    if not in_cycle.any():
        return par
    for v in range(n):
        if comp[v] < 0:
            comp[v] = ncomp
            ncomp += 1
    adj = W - np.where(in_cycle, W[np.maximum(par, 0), np.arange(n)], 0.0)[None, :]
    adj[:, root] = np.inf
    order = np.argsort(comp, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(comp[order]) != 0])
    A = adj[order][:, order]
    R = np.minimum.reduceat(np.minimum.reduceat(A, starts, axis=0), starts, axis=1)
    np.fill_diagonal(R, np.inf)
    sub = min_arborescence(R, int(comp[root]), fast)
    out = par.copy()
    (_expand if fast else _expand_loop)(adj, comp, sub, order, starts, out)
    out[root] = -1
    return out


def _expand_loop(adj, comp, sub, order, starts, out) -> None:
    """Expand the contracted choice ``sub`` (parent component of each component): component cv
    enters at the cheapest edge from a member of sub[cv] into one of its own, the first in (tail,
    head) order among equal costs; that head's parent becomes the tail."""
    import numpy as np
    n, ncomp = len(comp), len(starts)
    members = [order[starts[i]:(starts[i + 1] if i + 1 < len(starts) else n)] for i in range(ncomp)]
    for cv in range(ncomp):
        cu = sub[cv]
        if cu < 0:
            continue
        block = adj[np.ix_(members[cu], members[cv])]
        i, j = np.unravel_index(np.argmin(block), block.shape)
        out[members[cv][j]] = members[cu][i]


def _expand(adj, comp, sub, order, starts, out) -> None:
    """:func:`_expand_loop` in whole-array steps (256 ranks: 107,000 np.ix_ calls were 7 of the
    synthesis' 60 s): every head j's cheapest tail in its component's parent component (the
    lowest tail among equal costs), then per component the head whose (cost, tail, head) is least
    — the same edge as the loop's first minimum in (tail, head) order."""
    import numpy as np
    want = sub[comp]                                    # the parent component of each head's
    masked = np.where(comp[:, None] == want[None, :], adj, np.inf)
    tail = np.argmin(masked, axis=0)                    # lowest row among equal costs
    cost = masked[tail, np.arange(len(comp))]
    heads = np.flatnonzero(want >= 0)
    pick = heads[np.lexsort((heads, tail[heads], cost[heads], comp[heads]))]
    first = np.r_[True, np.diff(comp[pick]) != 0]
    chosen = pick[first]
    out[chosen] = tail[chosen]


def _shallow(cost, r: int):
    """``cost`` with the root's own edges made a hair cheaper: among trees of equal cost the one
    with more hops straight from the root (shallower: a shorter pipeline) wins."""
    import numpy as np
    finite = cost[np.isfinite(cost)]
    eps = 1e-6 * (float(finite[finite > 0].mean()) if (finite > 0).any() else 1.0)
    out = cost.copy()
    out[r, :] -= eps
    return out


class _Problem:
    """Routes as a sparse (pair × link) incidence matrix, capacities, and the node shift."""

    def __init__(self, net, reverse: bool, headroom: float = 0.0):
        import numpy as np
        from scipy.sparse import csr_array
        self.net, self.p, self.G, self.N = net, net.nranks, net.gpus, net.nodes
        self.reverse = reverse
        p = self.p
        links: dict[int, int] = {}
        rows, cols = [], []
        for a in range(p):
            for b in range(p):
                if a == b:
                    continue
                route = net.route(b, a) if reverse else net.route(a, b)
                for x in route.resources:
                    rows.append(a * p + b)
                    cols.append(links.setdefault(x, len(links)))
        self.links = sorted(links, key=links.get)
        #: capacities the trees are packed into: a NIC port (kind "net") spends part of its time
        #: on per-message work, so it is given ``1 - headroom`` of its bandwidth
        self.cap = np.array([net.link_cap[x] * (1 - headroom if net.link_kind[x] == "net" else 1.0)
                             for x in self.links])
        self.M = csr_array((np.ones(len(rows)), (rows, cols)), shape=(p * p, len(links)))
        f = net.spec.fabric
        self.symmetric = net.nodes == 1 or net.fabric == "switch" or len(net.nics) == 1 or (
            f.spine == "adaptive" and f.oversubscription == 1)

    def shifts(self) -> int:
        return self.N if self.symmetric and self.N > 1 else 1

    def shift(self, r: int, m: int) -> int:
        return (r + m * self.G) % self.p

    def tree_load(self, parent):
        """Link loads of the tree and its node shifts, per unit rate."""
        import numpy as np
        p = self.p
        rows = []
        for m in range(self.shifts()):
            for v, u in enumerate(parent):
                if u >= 0:
                    rows.append(self.shift(u, m) * p + self.shift(v, m))
        return np.asarray(self.M[rows].sum(axis=0)).ravel()

    def symmetrize(self, cost):
        """The cost of an edge and its node shifts together (a tree stands for its shifts)."""
        import numpy as np
        out = np.zeros_like(cost)
        for m in range(self.shifts()):
            perm = np.array([self.shift(r, m) for r in range(self.p)])
            out += cost[np.ix_(perm, perm)]
        return out

    def roots(self) -> list[int]:
        return list(range(self.G)) if self.shifts() > 1 else list(range(self.p))


def two_level(prob: "_Problem", r: int) -> tuple[int, ...] | None:
    """The hierarchical tree of root r (None on one node): r sends its block to every rank of its
    own node and to one *gateway* rank in every other node, which passes it on inside its node.
    The gateway is the rank whose route from r is the widest, then the shortest, then the one
    with r's local index (the rail rule's partner), then the lowest. A column the packing may
    use: on a rail-optimised cluster it is within a fraction of a percent of the bound at depth 2
    (dgx-h100 x 4: 498 of 500 GB/s), where the cheapest-arborescence columns reach the bound
    with deeper trees that pipeline worse."""
    G, N, net = prob.G, prob.N, prob.net
    if N < 2:
        return None
    parent = [-1] * prob.p
    home = r // G
    for n in range(N):
        if n == home:
            for w in range(n * G, n * G + G):
                if w != r:
                    parent[w] = r
            continue

        def pick(w, n=n):
            route = net.route(w, r) if prob.reverse else net.route(r, w)
            return (-route.bottleneck, len(route.links), w - n * G != r % G, w)
        gate = min(range(n * G, n * G + G), key=pick)
        for w in range(n * G, n * G + G):
            parent[w] = r if w == gate else gate
    return tuple(parent)


def _depth(parent, spread: bool = False) -> float:
    """The tree's depth; ``spread``: plus a thousandth of its members' mean depth, so that among
    trees of one depth the one reaching more ranks in fewer hops wins the shallow LP's ties
    (dgx-h100 x 8: the root's own node at once by NVLink rather than through one relay there)."""
    d, best = {}, 0
    for v in range(len(parent)):
        chain, x = [], v
        while x >= 0 and x not in d:
            chain.append(x)
            x = parent[x]
        base = d.get(x, -1) if x >= 0 else -1
        for y in reversed(chain):
            base += 1
            d[y] = base
        best = max(best, d[v])
    return best + 1e-3 * sum(d.values()) / max(1, len(parent) - 1) if spread else best


def _lp(prob: _Problem, cands: list[tuple[int, tuple[int, ...]]], loads, at_least: float | None = None,
        spread: bool = False):
    """(x, rates, link duals). max x: Σ rates of each searched root's trees = x, link loads ≤
    capacities. With ``at_least``: among the packings with x ≥ at_least, the one whose trees are
    shallowest (least Σ rate × depth; ``spread``: :func:`_depth`'s tie-break) — a shorter
    pipeline at the same rate."""
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import csr_array, hstack
    roots = prob.roots()
    nt = len(cands)
    scale = prob.cap.max()
    A_ub = hstack([csr_array(np.column_stack(loads)), csr_array((len(prob.cap), 1))])
    b_ub = prob.cap / scale
    eq = np.zeros((len(roots), nt + 1))
    for i, (r, _) in enumerate(cands):
        eq[roots.index(r), i] = 1
    eq[:, nt] = -1
    c = np.zeros(nt + 1)
    bounds = [(0, None)] * (nt + 1)
    if at_least is None:
        c[nt] = -1
    else:
        c[:nt] = [_depth(parent, spread) for _, parent in cands]
        bounds[nt] = (at_least / scale, None)
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=eq, b_eq=np.zeros(len(roots)), bounds=bounds,
                  method="highs")
    if res.status != 0:
        raise TopologyError(f"forest: the rate LP failed ({res.message})")
    return (float(res.x[nt] * scale), [float(w * scale) for w in res.x[:nt]],
            -np.asarray(res.ineqlin.marginals))


def synthesize(net, *, coll: str = "allgather", rounds: int = 0, tol: float = 0.02,
               max_k: int = 8, headroom: float = 0.0, fits=None) -> Forest:
    """A forest for ``net`` (see the module docstring): AllGather out-trees, or for
    ``reducescatter`` the trees whose reversed edges (on route(child, parent)) carry the sums.
    ``rounds``: multiplicative-weight rounds (0: automatic); ``tol``: the smallest k whose rate
    is within ``tol`` of the rate with every tree found; ``max_k``: at most that many per root;
    ``fits(trees) -> Fit``: the runtime's limits counted before the layout (synthesis/fit.py): k
    is the smallest within ``tol`` whose trees fit, TopologyError naming the limit if none does."""
    need_synth()
    if headroom < 0:                    # automatic: the most NIC headroom that costs <= 4%
        t0 = time.perf_counter()
        for h in AUTO_HEADROOM:
            f = synthesize(net, coll=coll, rounds=rounds, tol=tol, max_k=max_k, headroom=h, fits=fits)
            if h == 0 or f.rate >= 0.96 * f.bound.rate:
                return Forest(f.p, f.trees, f.rate, f.bound, f.k, f.unrestricted,
                              time.perf_counter() - t0, h, f.fit)
    import numpy as np
    t0 = time.perf_counter()
    reverse = coll == "reducescatter"
    bound = exact_bound(net, "reducescatter" if reverse else "allgather")
    prob = _Problem(net, reverse, headroom)
    p = prob.p
    roots = prob.roots()
    rounds = rounds or 8
    cong = np.zeros(len(prob.cap))
    cands: list[tuple[int, tuple[int, ...]]] = []
    loads = []
    seen = set()
    for r in roots:
        parent = two_level(prob, r)
        if parent is not None:
            seen.add((r, parent))
            cands.append((r, parent))
            loads.append(prob.tree_load(parent))
    for it in range(rounds):
        top = cong.max() if it else 1.0
        length = np.exp(8.0 * cong / top) / prob.cap
        cost = (prob.M @ length).reshape(p, p)
        np.fill_diagonal(cost, np.inf)
        for r in roots:
            parent = tuple(int(x) for x in min_arborescence(_shallow(cost, r), r))
            ld = prob.tree_load(parent)
            cong += ld / prob.cap
            if (r, parent) not in seen:
                seen.add((r, parent))
                cands.append((r, parent))
                loads.append(ld)
    best, weights, duals = _lp(prob, cands, loads)
    # column generation: price the links by the LP's duals; a root's cheapest arborescence under
    # those prices that costs less than the root's share is a tree that raises the rate
    for _ in range(60):
        y = np.maximum(duals, 0) + 1e-12 / prob.cap
        cost = prob.symmetrize((prob.M @ y).reshape(p, p))
        np.fill_diagonal(cost, np.inf)
        added = 0
        for r in roots:
            parent = tuple(int(x) for x in min_arborescence(_shallow(cost, r), r))
            if (r, parent) not in seen:
                seen.add((r, parent))
                cands.append((r, parent))
                loads.append(prob.tree_load(parent))
                added += 1
        if not added:
            break
        x, weights, duals = _lp(prob, cands, loads)
        best = x
    # the shallowest packing within tol/2 of the best rate ranks the trees
    _, weights, _ = _lp(prob, cands, loads, at_least=best * (1 - tol / 2), spread=True)
    orders = [sorted((i for i, (q, _) in enumerate(cands) if q == r), key=lambda i: (-weights[i], i))
              for r in roots]
    from ccxml.synthesis.fit import choose_k
    k_use, rate, chosen, fit = choose_k(prob, cands, loads, [orders], best, tol, max_k, fits,
                                        lambda sel: _shifted(prob, sel), _lp)
    trees = _shifted(prob, chosen)
    trees.sort(key=lambda t: (t.root, -t.rate, t.parent))
    return Forest(p, tuple(trees), rate, bound, k_use, best, time.perf_counter() - t0, headroom, fit)


def _shifted(prob: _Problem, chosen) -> list[Tree]:
    """The trees of ``chosen`` ((root, parent), rate) with their node shifts: what the layout gets."""
    out = []
    for (r, parent), w in chosen:
        for m in range(prob.shifts()):
            pm = [-1] * prob.p
            for v, u in enumerate(parent):
                if u >= 0:
                    pm[prob.shift(v, m)] = prob.shift(u, m)
            out.append(Tree(prob.shift(r, m), tuple(pm), w))
    return out


__all__ = ["Forest", "Tree", "min_arborescence", "synthesize"]
